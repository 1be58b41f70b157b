/* SPDX-License-Identifier: MIT */
/*
 * The profile writers (profile/): folded stacks checked against this
 * test's own re-aggregation of what it added; atomic writes; bad
 * arguments; 0 samples, very deep stacks, names with ';', newlines, quotes,
 * HTML specials, unicode and invalid UTF-8.
 *
 * `t_profile DIR` also leaves fixtures in DIR for tests/t_profile_view.sh,
 * which checks them with independent readers: X.pb.gz decoded by the npm
 * pprof-format package must print X.expect-pprof (written here from the
 * samples as added, not from the library), X.svg parsed by python's XML
 * parser, view.html rendered by headless Chromium showing view.names.
 */
#include "harness.h"
#include "profile.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[4096];
static int keep;

/* A frame as added, and what each output must call it. */
struct tf {
	struct pframe f;
	const char *folded; /* name in folded stacks / flame graphs */
	const char *pname;  /* function name in pprof */
};

#define LUAJIT "/usr/bin/luajit", "0123abcd", 0x400000, 0x500000, 0
#define LIBLJ                                                       \
	"/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2", "feedface", \
	    0x7f0000000000, 0x7f0000080000, 0x1000
#define JIT "[jit]", NULL, 0x7f1000000000, 0x7f1000010000, 0

static char long_name[1024], long_folded[1024];

static struct tf pool[] = {
    {{"_start", NULL, 0, 0x401000, LUAJIT, PF_ELF}, "_start", "_start"},
    {{"main", "luajit.c", 550, 0x402010, LUAJIT, PF_ELF}, "main", "main"},
    {{"lua_pcall", "lj_api.c", 1100, 0x7f0000001234, LIBLJ, PF_ELF},
     "lua_pcall",
     "lua_pcall"},
    {{"TRACE_1::bench.lua:10", "bench.lua", 10, 0x7f1000000100, JIT, PF_JIT},
     "TRACE_1::bench.lua:10_[j]",
     "TRACE_1::bench.lua:10"},
    {{"TRACE_2::bench.lua:20", "bench.lua", 20, 0x7f1000000200, JIT, PF_JIT},
     "TRACE_2::bench.lua:20_[j]",
     "TRACE_2::bench.lua:20"},
    /* same trace, another pc: one folded frame, two pprof locations */
    {{"TRACE_2::bench.lua:20", "bench.lua", 21, 0x7f1000000280, JIT, PF_JIT},
     "TRACE_2::bench.lua:20_[j]",
     "TRACE_2::bench.lua:20"},
    {{"a;b\nc", NULL, 0, 0x7f0000002000, LIBLJ, PF_ELF}, "a_b_c", "a;b\nc"},
    {{"q\"'<b>&amp;</script>", "x<y>.c", 7, 0x7f0000003000, LIBLJ, PF_ELF},
     "q\"'<b>&amp_</script>",
     "q\"'<b>&amp;</script>"},
    {{"λ_функция_🔥", "ünï.lua", 3, 0x7f1000000300, JIT, PF_JIT},
     "λ_функция_🔥_[j]",
     "λ_функция_🔥"},
    {{"bad\xff\xfe"
      "end",
      NULL, 0, 0x7f0000004000, LIBLJ, PF_ELF},
     "bad\xef\xbf\xbd\xef\xbf\xbd"
     "end",
     "bad\xef\xbf\xbd\xef\xbf\xbd"
     "end"},
    {{NULL, NULL, 0, 0xdeadbeef, NULL, NULL, 0, 0, 0, PF_UNKNOWN},
     "[0xdeadbeef]",
     "[0xdeadbeef]"},
    {{NULL, NULL, 0, 0x7f1000000abc, JIT, PF_JIT},
     "[0x7f1000000abc]_[j]",
     "[0x7f1000000abc]"},
    {{long_name, NULL, 0, 0x7f0000005000, LIBLJ, PF_ELF},
     long_folded,
     long_name},
    /* a trace frame without file and line: pprof takes them from the name
     * (see derived[]) */
    {{"TRACE_9::@chunk:x.lua:42", NULL, 0, 0x7f1000000400, JIT, PF_JIT},
     "TRACE_9::@chunk:x.lua:42_[j]",
     "TRACE_9::@chunk:x.lua:42"},
    {{"", NULL, 0, 0, NULL, NULL, 0, 0, 0, PF_UNKNOWN}, "[0x0]", "[0x0]"},
};
enum { NPOOL = sizeof(pool) / sizeof(pool[0]) };

/* pprof's file and line of the trace frames added without them */
static const struct {
	const char *pname, *file;
	uint32_t line;
} derived[] = {{"TRACE_9::@chunk:x.lua:42", "@chunk:x.lua", 42}};

static const char *comms[][3] = {
    /* as added, folded, pprof label */
    {"luajit", "luajit", "luajit"},
    {"w;ork\xc3\xa9r", "w_ork\xc3\xa9r", "w;ork\xc3\xa9r"},
    {NULL, "[unknown]", "[unknown]"},
};

/* ------------------------------------------ what the test itself added */

struct added {
	uint32_t n;
	const struct tf **fr; /* leaf first */
	uint64_t count;
	int comm;
};

struct log {
	struct added *a;
	size_t n, cap;
	uint64_t period;
};

static int add(struct prof *p, struct log *l, const struct tf **fr, uint32_t n,
	       uint64_t count, int comm)
{
	struct pframe *f = calloc(n + 1, sizeof(*f));
	for (uint32_t i = 0; i < n; i++)
		f[i] = fr[i]->f;
	int err = prof_add(p, f, n, count, comms[comm][0]);
	free(f);
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->a = realloc(l->a, l->cap * sizeof(*l->a));
	}
	struct added *a = &l->a[l->n++];
	a->n = n;
	a->fr = malloc((n + 1) * sizeof(*a->fr));
	memcpy(a->fr, fr, n * sizeof(*fr));
	a->count = count;
	a->comm = comm;
	return err;
}

static void log_free(struct log *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->a[i].fr);
	free(l->a);
}

/* "line count" pairs, sorted and merged by line: a plain sort and merge,
 * not the library's hash tables */
struct kv {
	char *k;
	uint64_t v;
};
static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const struct kv *)a)->k, ((const struct kv *)b)->k);
}
static size_t kv_merge(struct kv *t, size_t n)
{
	qsort(t, n, sizeof(*t), kv_cmp);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (o && !strcmp(t[o - 1].k, t[i].k)) {
			t[o - 1].v += t[i].v;
			free(t[i].k);
		} else
			t[o++] = t[i];
	}
	return o;
}

/* The folded lines the log must produce. */
static size_t expect_folded(const struct log *l, struct kv **out)
{
	struct kv *t = calloc(l->n + 1, sizeof(*t));
	for (size_t i = 0; i < l->n; i++) {
		const struct added *a = &l->a[i];
		size_t len = strlen(comms[a->comm][1]) + 1;
		for (uint32_t j = 0; j < a->n; j++)
			len += strlen(a->fr[j]->folded) + 1;
		char *s = malloc(len);
		strcpy(s, comms[a->comm][1]);
		for (uint32_t j = a->n; j-- > 0;) {
			strcat(s, ";");
			strcat(s, a->fr[j]->folded);
		}
		t[i] = (struct kv){s, a->count};
	}
	*out = t;
	return kv_merge(t, l->n);
}

static size_t read_folded(const char *path, struct kv **out)
{
	FILE *f = fopen(path, "r");
	size_t n = 0, cap = 16;
	struct kv *t = malloc(cap * sizeof(*t));
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	while (f && (len = getline(&line, &lcap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = 0;
		char *sp = strrchr(line, ' ');
		if (!sp)
			continue;
		*sp = 0;
		if (n == cap)
			t = realloc(t, (cap *= 2) * sizeof(*t));
		t[n++] = (struct kv){strdup(line), strtoull(sp + 1, NULL, 10)};
	}
	free(line);
	if (f)
		fclose(f);
	*out = t;
	return n;
}

static void kv_free(struct kv *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(t[i].k);
	free(t);
}

/* ------------------------------------------- the expected pprof, as text */

static void hex(FILE *o, const char *s)
{
	for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c;
	     c++)
		fprintf(o, "%02x", *c);
}

/* One line per distinct (comm, frames), the same form as
 * tests/pprof_dump.mjs prints: "S comm count cpu_ns | frame ..." with
 * frames leaf first as name,file,line,addr,mapping,build_id,start,limit,
 * offset (strings hex-encoded, numbers hex; a frame without mapping has
 * "-" for all mapping fields). */
static void expect_pprof(const struct log *l, const char *path)
{
	struct kv *t = calloc(l->n + 1, sizeof(*t));
	for (size_t i = 0; i < l->n; i++) {
		const struct added *a = &l->a[i];
		char *buf = NULL;
		size_t sz = 0;
		FILE *m = open_memstream(&buf, &sz);
		fputs("S ", m);
		hex(m, comms[a->comm][2]);
		fputs(" |", m);
		for (uint32_t j = 0; j < a->n; j++) {
			const struct tf *f = a->fr[j];
			fputc(' ', m);
			hex(m, f->pname);
			fputc(',', m);
			const char *file = f->f.file;
			uint32_t line = f->f.line;
			for (size_t d = 0;
			     d < sizeof(derived) / sizeof(*derived); d++)
				if (!strcmp(f->pname, derived[d].pname)) {
					file = derived[d].file;
					line = derived[d].line;
				}
			hex(m, file);
			fprintf(m, ",%x,%llx,", line,
				(unsigned long long)f->f.addr);
			if (f->f.mapping || f->f.map_end) {
				hex(m, f->f.mapping);
				fputc(',', m);
				hex(m, f->f.build_id);
				fprintf(m, ",%llx,%llx,%llx",
					(unsigned long long)f->f.map_start,
					(unsigned long long)f->f.map_end,
					(unsigned long long)f->f.map_pgoff);
			} else
				fputs("-,-,-,-,-", m);
		}
		fclose(m);
		t[i] = (struct kv){buf, a->count};
	}
	size_t n = kv_merge(t, l->n);
	FILE *o = fopen(path, "w");
	fprintf(o,
		"T samples count\nT cpu nanoseconds\nP cpu nanoseconds %llu\n",
		(unsigned long long)l->period);
	for (size_t i = 0; i < n; i++) {
		/* the values go after the comm, as pprof_dump prints them */
		char *bar = strstr(t[i].k, " |");
		fprintf(o, "%.*s %llu %llu%s\n", (int)(bar - t[i].k), t[i].k,
			(unsigned long long)t[i].v,
			(unsigned long long)(t[i].v * l->period), bar);
	}
	fclose(o);
	kv_free(t, n);
}

/* ------------------------------------------------------------ helpers */

static char *path_of(const char *name)
{
	static char buf[8][4200];
	static int k;
	char *b = buf[k++ & 7];
	snprintf(b, sizeof(buf[0]), "%s/%s", dir, name);
	return b;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	size_t got = fread(b, 1, (size_t)n, f);
	b[got] = 0;
	fclose(f);
	if (len)
		*len = got;
	return b;
}

/* Files in dir whose name contains ".tmp" (left-over temp files). */
static int temp_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += strstr(e->d_name, ".tmp") != NULL;
	if (d)
		closedir(d);
	return n;
}

static int write_all(const struct prof *p, const char *base, const char *title)
{
	char f[256], s[256], h[256], g[256];
	snprintf(f, sizeof(f), "%s.folded", base);
	snprintf(s, sizeof(s), "%s.svg", base);
	snprintf(h, sizeof(h), "%s.html", base);
	snprintf(g, sizeof(g), "%s.pb.gz", base);
	int e1 = prof_write_folded(p, path_of(f));
	int e2 = prof_write_svg(p, path_of(s), title);
	int e3 = prof_write_html(p, path_of(h), title);
	int e4 = prof_write_pprof(p, path_of(g));
	CHECK(!e1 && !e2 && !e3 && !e4, "%s: folded %d svg %d html %d pprof %d",
	      base, e1, e2, e3, e4);
	return e1 || e2 || e3 || e4;
}

static void check_folded(const struct log *l, const char *name)
{
	struct kv *want, *got;
	size_t nw = expect_folded(l, &want);
	size_t ng = read_folded(path_of(name), &got);
	CHECK_EQ(ng, nw);
	/* the file is sorted; compare as sets anyway */
	qsort(got, ng, sizeof(*got), kv_cmp);
	size_t bad = 0;
	uint64_t tw = 0, tg = 0;
	for (size_t i = 0; i < nw && i < ng; i++) {
		if (strcmp(want[i].k, got[i].k) || want[i].v != got[i].v) {
			if (bad++ < 3)
				CHECK(0,
				      "line %zu: want '%.200s %llu', got "
				      "'%.200s %llu'",
				      i, want[i].k,
				      (unsigned long long)want[i].v, got[i].k,
				      (unsigned long long)got[i].v);
		}
	}
	for (size_t i = 0; i < nw; i++)
		tw += want[i].v;
	for (size_t i = 0; i < ng; i++)
		tg += got[i].v;
	CHECK_EQ(tg, tw);
	printf("# %s: %zu distinct folded stacks, %llu samples, %zu differ\n",
	       name, ng, (unsigned long long)tg, bad);
	kv_free(want, nw);
	kv_free(got, ng);
}

static void rm_rf(const char *d)
{
	DIR *dd = opendir(d);
	struct dirent *e;
	while (dd && (e = readdir(dd))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char p[4400];
		snprintf(p, sizeof(p), "%s/%s", d, e->d_name);
		struct stat st;
		if (!lstat(p, &st) && S_ISDIR(st.st_mode))
			rm_rf(p);
		else
			unlink(p);
	}
	if (dd)
		closedir(dd);
	rmdir(d);
}

/* One thread's share of the writers (cli_write_profiles runs
 * profile.pb.gz in a thread of its own beside the other three). */
struct wjob {
	const struct prof *p;
	char pb[600], folded[600], svg[600], html[600];
	int which, err;
};
static void *wjob_run(void *arg)
{
	struct wjob *j = arg;
	int e2 = 0;
	if (j->which == 0)
		j->err = prof_write_pprof(j->p, j->pb);
	else
		j->err =
		    prof_write_folded_svg(j->p, j->folded, j->svg, "t", &e2) |
		    e2 | prof_write_html(j->p, j->html, "t");
	return NULL;
}

int main(int argc, char **argv)
{
	h_seed();
	if (argc > 1) {
		snprintf(dir, sizeof(dir), "%s", argv[1]);
		mkdir(dir, 0700);
		keep = 1;
	} else {
		snprintf(dir, sizeof(dir), "/tmp/jsf-t_profile-XXXXXX");
		if (!mkdtemp(dir))
			return 2;
	}
	if (!getenv("JITSFRAME_VIEWER"))
		setenv("JITSFRAME_VIEWER", "build/viewer", 1);
	/* 300 two-byte characters, then one that must not be cut */
	for (int i = 0; i < 300; i++)
		memcpy(long_name + 2 * i, "\xc3\xa9", 2);
	strcpy(long_name + 600, "_long");
	strcpy(long_folded, long_name);

	CASE("folded stacks equal the test's own re-aggregation of 400 "
	     "random samples")
	{
		struct log l = {.period = 1001001};
		struct prof *p = prof_new(l.period);
		int err = 0;
		for (int i = 0; i < 400; i++) {
			const struct tf *fr[16];
			uint32_t n = h_below(4);
			for (uint32_t j = 0; j < n; j++)
				fr[j] = &pool[2 + h_below(NPOOL - 2)];
			fr[n++] = &pool[1];
			fr[n++] = &pool[0];
			if (h_below(10) == 0) /* now and then a bare sample */
				n = h_below(2);
			err |=
			    add(p, &l, fr, n, 1 + h_below(4), (int)h_below(3));
		}
		CHECK_EQ(err, 0);
		if (!write_all(p, "main", "t_profile: \"main\" <&> λ")) {
			check_folded(&l, "main.folded");
			expect_pprof(&l, path_of("main.expect-pprof"));
		}
		CHECK_EQ(temp_files(), 0);
		prof_free(p);
		log_free(&l);
	}

	CASE("names: ';' and newlines replaced, unnamed frames [0xADDR], "
	     "trace frames _[j], invalid UTF-8 replaced")
	{
		/* one sample per pool frame: each line shows one name */
		struct log l = {.period = 1000000};
		struct prof *p = prof_new(l.period);
		for (int i = 0; i < NPOOL; i++) {
			const struct tf *fr[1] = {&pool[i]};
			CHECK_EQ(add(p, &l, fr, 1, 1, 0), 0);
		}
		prof_write_folded(p, path_of("names.folded"));
		char *s = slurp(path_of("names.folded"), NULL);
		if (!s)
			s = strdup("");
		CHECK(strstr(s, "luajit;a_b_c 1\n"), "%.300s", s);
		CHECK(strstr(s, "luajit;[0xdeadbeef] 1\n"), "%.300s", s);
		CHECK(strstr(s, "luajit;[0x7f1000000abc]_[j] 1\n"), "%.300s",
		      s);
		CHECK(strstr(s, "luajit;TRACE_2::bench.lua:20_[j] 2\n"),
		      "two pcs of one trace fold into one line: %.300s", s);
		CHECK(strstr(s, "luajit;bad\xef\xbf\xbd\xef\xbf\xbd"
				"end 1\n"),
		      "%.300s", s);
		/* every line: comm;frame count, nothing else */
		int lines = 0;
		for (char *c = s; *c; c++)
			lines += *c == '\n';
		CHECK_EQ(lines, NPOOL - 1);
		free(s);
		check_folded(&l, "names.folded");
		prof_free(p);
		log_free(&l);
	}

	CASE("0 samples: every writer succeeds; folded is empty")
	{
		struct log l = {.period = 1000000};
		struct prof *p = prof_new(l.period);
		/* count 0 adds nothing */
		const struct tf *fr[1] = {&pool[1]};
		CHECK_EQ(prof_add(p, &fr[0]->f, 1, 0, "x"), 0);
		if (!write_all(p, "empty", "empty")) {
			size_t n = 99;
			char *s = slurp(path_of("empty.folded"), &n);
			CHECK_EQ(n, 0);
			free(s);
			expect_pprof(&l, path_of("empty.expect-pprof"));
			s = slurp(path_of("empty.html"), NULL);
			CHECK(s && strstr(s, "{\"name\":\"all\",\"value\":0}"),
			      "the HTML's data is an empty root");
			free(s);
		}
		prof_free(p);
		log_free(&l);
	}

	CASE("deep stacks: 5000 frames, folded and pprof keep them all")
	{
		enum { DEEP = 5000 };
		struct log l = {.period = 250000};
		struct prof *p = prof_new(l.period);
		static struct tf deep[DEEP];
		static char names[DEEP][16];
		const struct tf **fr = calloc(DEEP + 2, sizeof(*fr));
		for (int i = 0; i < DEEP; i++) {
			snprintf(names[i], sizeof(names[i]), "rec_%d", i);
			deep[i] =
			    (struct tf){{names[i], "rec.lua", (uint32_t)i + 1,
					 0x7f1000001000 + 16 * (uint64_t)i, JIT,
					 i % 2 ? PF_JIT : PF_ELF},
					names[i],
					names[i]};
			if (i % 2) { /* a trace: _[j] */
				char *fo = malloc(24);
				snprintf(fo, 24, "%s_[j]", names[i]);
				deep[i].folded = fo;
			}
			fr[i] = &deep[i];
		}
		fr[DEEP] = &pool[1];
		fr[DEEP + 1] = &pool[0];
		CHECK_EQ(add(p, &l, fr, DEEP + 2, 3, 0), 0);
		CHECK_EQ(add(p, &l, fr + 1, DEEP + 1, 2, 0), 0);
		CHECK_EQ(add(p, &l, fr, DEEP + 2, 4, 0), 0); /* merges */
		if (!write_all(p, "huge", "deep")) {
			check_folded(&l, "huge.folded");
			expect_pprof(&l, path_of("huge.expect-pprof"));
		}
		for (int i = 1; i < DEEP; i += 2)
			free((char *)deep[i].folded);
		free(fr);
		prof_free(p);
		log_free(&l);
	}

	CASE("the viewer fixture: every frame wide enough to be drawn")
	{
		struct log l = {.period = 1000000};
		struct prof *p = prof_new(l.period);
		FILE *nm = fopen(path_of("view.names"), "w");
		fprintf(nm, "all\nluajit\n_start\nmain\n");
		for (int i = 2; i < NPOOL; i++) {
			const struct tf *fr[3] = {&pool[i], &pool[1], &pool[0]};
			CHECK_EQ(add(p, &l, fr, 3, 10 + (uint64_t)i, 0), 0);
			if (i != 5) /* 5 is 4's name */
				fprintf(nm, "%s\n", pool[i].folded);
		}
		fclose(nm);
		write_all(p, "view", "jitsframe t_profile <view> & \"λ\"");
		check_folded(&l, "view.folded");
		expect_pprof(&l, path_of("view.expect-pprof"));
		/* the data is inlined as JSON that cannot end its <script> */
		char *s = slurp(path_of("view.html"), NULL);
		char *d = s ? strstr(s, "id=\"profile-data\"") : NULL;
		char *e = d ? strstr(d, "</script>") : NULL;
		CHECK(d && e, "profile data script present");
		if (d && e) {
			d = strchr(d, '>') + 1;
			size_t lt = 0;
			for (char *c = d; c < e; c++)
				lt += *c == '<';
			CHECK_EQ(lt, 0);
			CHECK(memmem(d, (size_t)(e - d),
				     "\\u003c/script\\u003e", 19) != NULL,
			      "the </script> in a name is escaped");
		}
		CHECK(s && strstr(s, "<title>jitsframe t_profile &lt;view&gt; "
				     "&amp; &quot;λ&quot;</title>"),
		      "title escaped");
		CHECK(s && !strstr(s, "src=\"http") &&
			  !strstr(s, "href=\"http"),
		      "nothing loaded from the network");
		free(s);
		prof_free(p);
		log_free(&l);
	}

	CASE("atomic: an existing file is replaced by rename, never "
	     "rewritten in place; no temp file left")
	{
		struct prof *p = prof_new(1000);
		const struct tf *fr[2] = {&pool[1], &pool[0]};
		struct pframe f[2] = {fr[0]->f, fr[1]->f};
		prof_add(p, f, 2, 5, "luajit");
		const char *names[] = {"a.folded", "a.svg", "a.html",
				       "a.pb.gz"};
		for (int i = 0; i < 4; i++) {
			char lk[4200];
			snprintf(lk, sizeof(lk), "%s.old", path_of(names[i]));
			FILE *o = fopen(path_of(names[i]), "w");
			fputs("old", o);
			fclose(o);
			unlink(lk);
			CHECK_EQ(link(path_of(names[i]), lk), 0);
			int err =
			    i == 0   ? prof_write_folded(p, path_of(names[i]))
			    : i == 1 ? prof_write_svg(p, path_of(names[i]), "t")
			    : i == 2
				? prof_write_html(p, path_of(names[i]), "t")
				: prof_write_pprof(p, path_of(names[i]));
			CHECK_EQ(err, 0);
			size_t n;
			char *old = slurp(lk, &n);
			CHECK(old && n == 3 && !memcmp(old, "old", 3),
			      "%s: the old inode was modified", names[i]);
			free(old);
			char *now = slurp(path_of(names[i]), &n);
			CHECK(now && n > 3, "%s: new content", names[i]);
			free(now);
			unlink(lk);
			unlink(path_of(names[i]));
		}
		CHECK_EQ(temp_files(), 0);
		prof_free(p);
	}

	CASE("write errors: a missing directory, a directory in the way; "
	     "nothing left behind")
	{
		struct prof *p = prof_new(1000);
		struct pframe f = pool[1].f;
		prof_add(p, &f, 1, 1, "luajit");
		CHECK_EQ(prof_write_folded(p, path_of("no/such/x")), -ENOENT);
		CHECK_EQ(prof_write_pprof(p, path_of("no/such/x")), -ENOENT);
		mkdir(path_of("adir"), 0700);
		int e = prof_write_svg(p, path_of("adir"), "t");
		CHECK(e == -EISDIR || e == -ENOTEMPTY || e == -EEXIST,
		      "rename over a directory: %d", e);
		struct stat st;
		CHECK(!stat(path_of("adir"), &st) && S_ISDIR(st.st_mode),
		      "the directory is untouched");
		rmdir(path_of("adir"));
		CHECK_EQ(temp_files(), 0);
		CHECK_EQ(prof_write_folded(p, ""), -EINVAL);
		CHECK_EQ(prof_write_folded(NULL, "x"), -EINVAL);
		prof_free(p);
	}

	CASE("HTML: a viewer asset containing </script> cannot end its "
	     "<script> element")
	{
		const char *sub[] = {"fv",
				     "fv/node_modules",
				     "fv/node_modules/d3",
				     "fv/node_modules/d3/dist",
				     "fv/node_modules/d3-flame-graph",
				     "fv/node_modules/d3-flame-graph/dist"};
		for (size_t i = 0; i < sizeof(sub) / sizeof(*sub); i++)
			mkdir(path_of(sub[i]), 0700);
		const char *files[][2] = {
		    {"fv/node_modules/d3/dist/d3.min.js",
		     "var a = \"</script><b>\", b = \"</SCRIPT \";"},
		    {"fv/node_modules/d3-flame-graph/dist/"
		     "d3-flamegraph.umd.min.js",
		     "var c = \"</scrip\" + \"<\" + \"</ScRiPt>\";<"},
		    {"fv/node_modules/d3-flame-graph/dist/d3-flamegraph.css",
		     ".x{}"}};
		for (int i = 0; i < 3; i++) {
			FILE *o = fopen(path_of(files[i][0]), "w");
			fputs(files[i][1], o);
			fclose(o);
		}
		char *saved = strdup(getenv("JITSFRAME_VIEWER"));
		setenv("JITSFRAME_VIEWER", path_of("fv"), 1);
		struct prof *p = prof_new(1000);
		CHECK_EQ(prof_write_html(p, path_of("fv.html"), "t"), 0);
		setenv("JITSFRAME_VIEWER", saved, 1);
		free(saved);
		char *h = slurp(path_of("fv.html"), NULL);
		CHECK(h && strstr(h, "var a = \"<\\/script><b>\", b = "
				     "\"<\\/SCRIPT \";"),
		      "d3's </script> escaped");
		CHECK(h && strstr(h, "var c = \"</scrip\" + \"<\" + "
				     "\"<\\/ScRiPt>\";<"),
		      "the flame graph's </ScRiPt> escaped, the rest as is");
		int ends = 0;
		for (char *c = h; c && (c = strcasestr(c, "</script")); c++)
			ends++;
		CHECK_EQ(ends, 4); /* d3, flame graph, data, page script */
		free(h);
		prof_free(p);
	}

	CASE("HTML without the viewer: a clear error, no file")
	{
		struct prof *p = prof_new(1000);
		char *saved = strdup(getenv("JITSFRAME_VIEWER"));
		setenv("JITSFRAME_VIEWER", "/nonexistent/jsf-viewer", 1);
		printf("# (the message below is expected)\n");
		fflush(stdout);
		CHECK_EQ(prof_write_html(p, path_of("nov.html"), "t"), -ENOENT);
		CHECK(access(path_of("nov.html"), F_OK) != 0, "no file");
		setenv("JITSFRAME_VIEWER", saved, 1);
		free(saved);
		prof_free(p);
	}

	CASE("HTML without the viewer (an empty JITSFRAME_VIEWER): the page "
	     "written instead says the viewer is unavailable and how to get "
	     "it, with no viewer script")
	{
		struct prof *p = prof_new(1000);
		struct pframe f[2] = {pool[1].f, pool[0].f};
		CHECK_EQ(prof_add(p, f, 2, 7, "luajit"), 0);
		mkdir(path_of("emptyviewer"), 0700);
		char *saved = strdup(getenv("JITSFRAME_VIEWER"));
		setenv("JITSFRAME_VIEWER", path_of("emptyviewer"), 1);
		char where[8192];
		CHECK_EQ(prof_viewer_where(where, sizeof(where)), -ENOENT);
		CHECK(strstr(where, path_of("emptyviewer")) != NULL,
		      "where names the directory: %s", where);
		CHECK_EQ(prof_write_html(p, path_of("una.html"), "t<1>"),
			 -ENOENT);
		CHECK(access(path_of("una.html"), F_OK) != 0, "no file yet");
		CHECK_EQ(
		    prof_write_html_unavailable(p, path_of("una.html"), "t<1>"),
		    0);
		setenv("JITSFRAME_VIEWER", saved, 1);
		free(saved);
		CHECK_EQ(temp_files(), 0);
		char *h = slurp(path_of("una.html"), NULL);
		CHECK(h != NULL, "the page is written");
		CHECK(h && !strncmp(h, "<!DOCTYPE html>", 15) &&
			  strstr(h, "</html>\n"),
		      "a whole page");
		CHECK(h && strstr(h, "viewer is unavailable"),
		      "it says the viewer is unavailable");
		CHECK(h && strstr(h, "npm") && strstr(h, "make") &&
			  strstr(h, "JITSFRAME_VIEWER"),
		      "it says how to get it");
		CHECK(h && strstr(h, "emptyviewer"), "and where it looked");
		CHECK(h && strstr(h, "<h1>t&lt;1&gt;</h1>"),
		      "the title, escaped");
		CHECK(h && strstr(h, "has 7 samples"), "the sample count");
		CHECK(h && !strcasestr(h, "<script") && !strstr(h, "zoom") &&
			  !strstr(h, "\"chart\""),
		      "no viewer, no chart: it does not claim to work");
		free(h);
		prof_free(p);
	}

	CASE("bad arguments: -EINVAL, nothing added")
	{
		struct prof *p = prof_new(1000);
		struct pframe f = pool[1].f;
		f.kind = (enum pframe_kind)7;
		CHECK_EQ(prof_add(p, &f, 1, 1, "x"), -EINVAL);
		CHECK_EQ(prof_add(p, NULL, 3, 1, "x"), -EINVAL);
		CHECK_EQ(prof_add(NULL, &pool[1].f, 1, 1, "x"), -EINVAL);
		prof_write_folded(p, path_of("bad.folded"));
		size_t n = 99;
		char *s = slurp(path_of("bad.folded"), &n);
		CHECK_EQ(n, 0);
		free(s);
		prof_free(p);
		prof_free(NULL);
	}

	CASE("the writers in two threads at once (as cli_write_profiles "
	     "runs them): the bytes one thread writes alone")
	{
		struct log l = {.period = 1001001};
		struct prof *p = prof_new(l.period);
		for (int i = 0; i < 300; i++) {
			const struct tf *fr[16];
			uint32_t n = h_below(6);
			for (uint32_t j = 0; j < n; j++)
				fr[j] = &pool[2 + h_below(NPOOL - 2)];
			fr[n++] = &pool[1];
			fr[n++] = &pool[0];
			add(p, &l, fr, n, 1 + h_below(4), (int)h_below(3));
		}
		static const char *const name[4] = {"pb", "folded", "svg",
						    "html"};
		struct wjob ref = {.p = p}, par[2] = {{.p = p}, {.p = p}};
		snprintf(ref.pb, sizeof(ref.pb), "%s", path_of("ref.pb.gz"));
		snprintf(ref.folded, sizeof(ref.folded), "%s",
			 path_of("ref.folded"));
		snprintf(ref.svg, sizeof(ref.svg), "%s", path_of("ref.svg"));
		snprintf(ref.html, sizeof(ref.html), "%s", path_of("ref.html"));
		ref.which = 0;
		wjob_run(&ref);
		ref.which = 1;
		wjob_run(&ref);
		CHECK_EQ(ref.err, 0);
		int bad = 0;
		for (int round = 0; round < 3; round++) {
			for (int k = 0; k < 2; k++) {
				struct wjob *j = &par[k];
				j->which = k;
				snprintf(j->pb, sizeof(j->pb), "%s",
					 path_of("par.pb.gz"));
				snprintf(j->folded, sizeof(j->folded), "%s",
					 path_of("par.folded"));
				snprintf(j->svg, sizeof(j->svg), "%s",
					 path_of("par.svg"));
				snprintf(j->html, sizeof(j->html), "%s",
					 path_of("par.html"));
			}
			pthread_t th;
			int made =
			    !pthread_create(&th, NULL, wjob_run, &par[0]);
			wjob_run(&par[1]);
			if (made)
				pthread_join(th, NULL);
			CHECK(made, "no thread");
			CHECK_EQ(par[0].err | par[1].err, 0);
			const char *a[4] = {ref.pb, ref.folded, ref.svg,
					    ref.html},
				   *b[4] = {par[0].pb, par[1].folded,
					    par[1].svg, par[1].html};
			for (int f = 0; f < 4; f++) {
				size_t na = 0, nb = 0;
				char *x = slurp(a[f], &na),
				     *y = slurp(b[f], &nb);
				if (!x || !y || na != nb || memcmp(x, y, na)) {
					bad++;
					printf(
					    "# %s differs (%zu vs %zu bytes)\n",
					    name[f], na, nb);
				}
				free(x);
				free(y);
			}
		}
		CHECK_EQ(bad, 0);
		prof_free(p);
		log_free(&l);
	}

	CASE("intern: one copy per byte string (NULs inside included), "
	     "stable across growth, checked against the strings themselves")
	{
		/* ground truth: the strings themselves, compared here with
		 * memcmp; 20,000 of them over 5,000 distinct values */
		enum { N = 20000, D = 5000 };
		struct prof_intern *t = prof_intern_new();
		static const char *first[D];
		static char key[D][24];
		static size_t klen[D];
		for (int i = 0; i < D; i++) {
			int w = snprintf(key[i], sizeof(key[i]), "f%d.lua:%d",
					 i, i % 7);
			key[i][w] = 0; /* the label, its NUL, then the chunk */
			klen[i] = (size_t)w + 1 +
				  (size_t)snprintf(
				      key[i] + w + 1,
				      sizeof(key[i]) - (size_t)w - 1, "f%d", i);
		}
		int bad = 0;
		for (int k = 0; k < N; k++) {
			int i = (int)h_below(D);
			const char *got = prof_intern(t, key[i], klen[i]);
			if (!got || memcmp(got, key[i], klen[i]) ||
			    got[klen[i]])
				bad++;
			else if (!first[i])
				first[i] = got;
			else if (got != first[i])
				bad++;
		}
		/* the same label with another chunk is another string */
		const char *a = prof_intern(t, "x:1\0a", 5);
		const char *b = prof_intern(t, "x:1\0b", 5);
		CHECK(a && b && a != b && !strcmp(a + 4, "a") &&
			  !strcmp(b + 4, "b"),
		      "an embedded NUL ends the key too early");
		CHECK_EQ(bad, 0);
		for (int i = 0; i < D; i++)
			if (first[i] &&
			    prof_intern(t, key[i], klen[i]) != first[i])
				bad++;
		CHECK_EQ(bad, 0);
		prof_intern_free(t);
		prof_intern_free(NULL);
	}

	if (!keep)
		rm_rf(dir);
	return h_exit();
}
