/* SPDX-License-Identifier: MIT */
/*
 * The reader of RaptorJIT's own auditlog (audit/rjlog.c, audit/rjdwarf.c)
 * on the fixture logs RaptorJIT wrote (../shared/raptorjit/, found at run
 * time, never copied into the repository). Ground truth, independent of
 * the code under test:
 *  - WORKLOAD.traces.tsv: every trace_stop and trace_flushall, decoded by
 *    a different decoder (Python, pyelftools); lifetimes computed here from
 *    the TSV's own flush rows;
 *  - the README's fact sheet (record counts, GCtrace offsets from readelf,
 *    the cut log's last complete record);
 *  - logs made untrustworthy here, from a copy in memory (a DWARF member
 *    renamed, a GCtrace record of the wrong size, the DWARF removed), and
 *    garbage.
 * Without the fixtures the fixture cases are skipped visibly.
 */
#include "harness.h"
#include "rjlog.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[4096];

static int is_dir(const char *d)
{
	char p[4200];
	struct stat st;
	snprintf(p, sizeof(p), "%s/numeric.auditlog", d);
	return stat(p, &st) == 0;
}

static int find_fixtures(const char *argv0)
{
	const char *env = getenv("JITSFRAME_RAPTORJIT_DATA");
	if (env && *env) {
		snprintf(g_dir, sizeof(g_dir), "%s", env);
		return is_dir(g_dir);
	}
	/* <repo>/../shared/raptorjit: the repo is the working directory when
	 * run by scripts/run-tests, or three levels above build/F/tests/x */
	snprintf(g_dir, sizeof(g_dir), "../shared/raptorjit");
	if (is_dir(g_dir))
		return 1;
	const char *s = strstr(argv0, "build/");
	if (s) {
		snprintf(g_dir, sizeof(g_dir), "%.*s../shared/raptorjit",
			 (int)(s - argv0), argv0);
		if (is_dir(g_dir))
			return 1;
	}
	snprintf(g_dir, sizeof(g_dir), "/work/shared/raptorjit");
	return is_dir(g_dir);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* --- the TSV (ground truth) --- */
struct row {
	int flush;
	uint64_t event_index, nanotime, jit_state, traceno, mcode, szmcode,
	    mcloop, spadjust, parent, exitno, root, link, linktype, gctrace,
	    record_offset;
	uint64_t dead; /* computed here */
};

static size_t read_tsv(const char *path, struct row **out)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[1024];
	size_t n = 0, cap = 0;
	struct row *rows = NULL;
	if (!fgets(line, sizeof(line), f)) { /* header */
		fclose(f);
		return 0;
	}
	while (fgets(line, sizeof(line), f)) {
		char *col[16];
		int nc = 0;
		for (char *s = strtok(line, "\t\n"); s && nc < 16;
		     s = strtok(NULL, "\t\n"))
			col[nc++] = s;
		if (nc != 16)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			rows = realloc(rows, cap * sizeof(*rows));
		}
		struct row *r = &rows[n++];
		memset(r, 0, sizeof(*r));
		r->flush = !strcmp(col[1], "trace_flushall");
		r->event_index = strtoull(col[0], NULL, 10);
		r->nanotime = strtoull(col[2], NULL, 10);
		r->jit_state = strtoull(col[3], NULL, 16);
		r->record_offset = strtoull(col[15], NULL, 10);
		if (!r->flush) {
			r->traceno = strtoull(col[4], NULL, 10);
			r->mcode = strtoull(col[5], NULL, 16);
			r->szmcode = strtoull(col[6], NULL, 10);
			r->mcloop = strtoull(col[7], NULL, 10);
			r->spadjust = strtoull(col[8], NULL, 10);
			r->parent = strtoull(col[9], NULL, 10);
			r->exitno = strtoull(col[10], NULL, 10);
			r->root = strtoull(col[11], NULL, 10);
			r->link = strtoull(col[12], NULL, 10);
			r->linktype = strtoull(col[13], NULL, 10);
			r->gctrace = strtoull(col[14], NULL, 16);
		}
	}
	fclose(f);
	for (size_t i = 0; i < n; i++) {
		rows[i].dead = RJ_NEVER;
		for (size_t j = i + 1; j < n && !rows[i].flush; j++)
			if (rows[j].flush &&
			    rows[j].jit_state == rows[i].jit_state) {
				rows[i].dead = rows[j].nanotime;
				break;
			}
	}
	*out = rows;
	return n;
}

/* --- a tiny walker of the four msgpack forms, the test's own --- */
static size_t tw_end(const uint8_t *b, size_t len, size_t at)
{
	size_t p = at + 1;
	int n = b[at] & 15;
	for (int i = 0; i < 2 * n; i++) {
		uint8_t t = b[p];
		if (t == 0xda)
			p += 3 + ((size_t)b[p + 1] << 8 | b[p + 2]);
		else if (t == 0xcf)
			p += 9;
		else if (t == 0xc6)
			p += 5 + ((size_t)b[p + 1] << 24 |
				  (size_t)b[p + 2] << 16 |
				  (size_t)b[p + 3] << 8 | b[p + 4]);
		else
			return 0;
		if (p > len)
			return 0;
	}
	return p;
}

static int count_rec(const struct rj_record *r, void *arg)
{
	size_t *c = arg;
	c[0]++;
	if (!strcmp(r->kind, "event"))
		c[1]++;
	return 0;
}

struct fixture {
	const char *name;
	size_t records; /* README: complete records */
};

static void check_log(const struct fixture *fx)
{
	char path[4200], msg[256];
	snprintf(path, sizeof(path), "%s/%s.auditlog", g_dir, fx->name);
	struct rj_log *log = NULL;
	int rc = rj_log_open(&log, path, msg, sizeof(msg));
	CHECK(rc == 0 && log, "%s: %d %s", fx->name, rc, msg);
	if (!log)
		return;
	struct row *rows = NULL;
	snprintf(path, sizeof(path), "%s/%s.traces.tsv", g_dir, fx->name);
	size_t nrows = read_tsv(path, &rows);
	CHECK(nrows > 0, "%s: no rows", path);
	size_t ti = 0, fi = 0, mism = 0;
	for (size_t i = 0; i < nrows; i++) {
		const struct row *w = &rows[i];
		if (w->flush) {
			const struct rj_flush *f = rj_log_flush(log, fi++);
			CHECK(f, "flush %zu missing", fi - 1);
			if (!f)
				break;
			CHECK_EQ(f->event_index, w->event_index);
			CHECK_EQ(f->record_offset, w->record_offset);
			CHECK_EQ(f->nanotime, w->nanotime);
			CHECK_EQ(f->jit_state, w->jit_state);
			continue;
		}
		const struct rj_trace *t = rj_log_trace(log, ti++);
		CHECK(t, "trace %zu missing", ti - 1);
		if (!t)
			break;
		int bad =
		    t->event_index != w->event_index ||
		    t->born_ns != w->nanotime || t->jit_state != w->jit_state ||
		    t->traceno != w->traceno || t->mcode != w->mcode ||
		    t->szmcode != w->szmcode || t->mcloop != w->mcloop ||
		    t->spadjust != w->spadjust || t->parent != w->parent ||
		    t->exitno != w->exitno || t->root != w->root ||
		    t->link != w->link || t->linktype != w->linktype ||
		    t->gctrace != w->gctrace ||
		    t->record_offset != w->record_offset ||
		    t->dead_ns != w->dead;
		if (bad && mism++ < 3) {
			CHECK_EQ(t->event_index, w->event_index);
			CHECK_EQ(t->born_ns, w->nanotime);
			CHECK_EQ(t->jit_state, w->jit_state);
			CHECK_EQ(t->traceno, w->traceno);
			CHECK_EQ(t->mcode, w->mcode);
			CHECK_EQ(t->szmcode, w->szmcode);
			CHECK_EQ(t->mcloop, w->mcloop);
			CHECK_EQ(t->spadjust, w->spadjust);
			CHECK_EQ(t->parent, w->parent);
			CHECK_EQ(t->exitno, w->exitno);
			CHECK_EQ(t->root, w->root);
			CHECK_EQ(t->link, w->link);
			CHECK_EQ(t->linktype, w->linktype);
			CHECK_EQ(t->gctrace, w->gctrace);
			CHECK_EQ(t->record_offset, w->record_offset);
			CHECK_EQ(t->dead_ns, w->dead);
		}
		CHECK(t->mc != NULL, "trace %u: no machine code", t->traceno);
		CHECK(t->raw != NULL, "trace %u: no raw GCtrace", t->traceno);
		if (t->mc) { /* all szmcode bytes readable (ASan) */
			unsigned sum = 0;
			for (uint32_t k = 0; k < t->szmcode; k++)
				sum += t->mc[k];
			(void)sum;
		}
		/* the raw GCtrace is the latest GCtrace record before it */
		CHECK(rj_log_memory(log, t->gctrace, 136, "GCtrace",
				    t->record_offset) == t->raw,
		      "trace %u raw", t->traceno);
		CHECK(rj_log_memory(log, t->gctrace, 137, "GCtrace",
				    t->record_offset) == NULL,
		      "a GCtrace record covers more than 136 bytes");
		uint64_t v = 0;
		CHECK(rj_log_event_u64(log, t->record_offset, "GCtrace", &v) ==
			      0 &&
			  v == w->gctrace,
		      "event GCtrace");
		/* alive at birth, not at death */
		CHECK(rj_log_trace_at(log, t->jit_state, t->traceno,
				      t->born_ns) == t,
		      "trace_at(%u, born)", t->traceno);
		if (t->dead_ns != RJ_NEVER)
			CHECK(rj_log_trace_at(log, t->jit_state, t->traceno,
					      t->dead_ns) != t,
			      "trace_at(%u, dead)", t->traceno);
	}
	CHECK(mism == 0, "%s: %zu traces disagree with the TSV", fx->name,
	      mism);
	CHECK_EQ(rj_log_ntraces(log), ti);
	CHECK_EQ(rj_log_nflushes(log), fi);
	size_t c[2] = {0, 0};
	rj_log_foreach(log, count_rec, c);
	CHECK_EQ(c[0], fx->records);
	if (strcmp(fx->name, "cut")) {
		CHECK(rj_log_damage(log) == NULL, "%s: %s", fx->name,
		      rj_log_damage(log));
	} else {
		const char *d = rj_log_damage(log);
		CHECK(d && strstr(d, "damaged at byte 808971: ") &&
			  strstr(d, "; 1407 records decoded"),
		      "cut: %s", d ? d : "(no damage)");
		CHECK_EQ(rj_log_ntraces(log), 96);
	}
	/* the first traces' machine code is bytes of the file (the file's
	 * MCode[] records, found here by search) */
	size_t flen;
	snprintf(path, sizeof(path), "%s/%s.auditlog", g_dir, fx->name);
	uint8_t *file = slurp(path, &flen);
	for (size_t i = 0; file && i < 3 && i < rj_log_ntraces(log); i++) {
		const struct rj_trace *t = rj_log_trace(log, i);
		CHECK(t->mc && memmem(file, flen, t->mc, t->szmcode),
		      "trace %u mc not in file", t->traceno);
	}
	free(file);
	free(rows);
	rj_log_close(log);
}

static void check_dwarf(struct rj_log *log)
{
	static const struct {
		const char *type, *member;
		uint32_t off, size;
	} f[] = {
	    {"GCtrace", "szmcode", 84, 4},
	    {"GCtrace", "mcode", 88, 8},
	    {"GCtrace", "mcloop", 96, 4},
	    {"GCtrace", "nszirmcode", 100, 4},
	    {"GCtrace", "szirmcode", 104, 8},
	    {"GCtrace", "spadjust", 114, 2},
	    {"GCtrace", "traceno", 116, 2},
	    {"GCtrace", "link", 118, 2},
	    {"GCtrace", "root", 120, 2},
	    {"GCtrace", "nextroot", 122, 2},
	    {"GCtrace", "nextside", 124, 2},
	    {"GCtrace", "parent", 126, 2},
	    {"GCtrace", "exitno", 128, 4},
	    {"GCtrace", "linktype", 134, 1},
	    {"lua_State", "glref", 16, 8},
	    {"lua_State", "cframe", 80, 8},
	    {"global_State", "vmstate", 136, 4},
	    {"global_State", "cur_L", 360, 8},
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		uint32_t off = 0, size = 0;
		int rc = rj_log_field(log, f[i].type, f[i].member, &off, &size);
		CHECK(rc == 0 && off == f[i].off, "%s.%s: rc %d off %u",
		      f[i].type, f[i].member, rc, off);
		/* README gives the sizes of these, where it does */
		if (!strcmp(f[i].member, "szirmcode") ||
		    !strcmp(f[i].member, "nszirmcode"))
			continue;
		CHECK(size == f[i].size, "%s.%s size %u", f[i].type,
		      f[i].member, size);
	}
	uint32_t off, size;
	CHECK_EQ(rj_log_field(log, "GCtrace", "nosuchfield", &off, &size),
		 -ENOENT);
	CHECK_EQ(rj_log_field(log, "NoSuchType", "mcode", &off, &size),
		 -ENOENT);
	CHECK_EQ(rj_log_type_size(log, "GCtrace"), 136);
	CHECK_EQ(rj_log_type_size(log, "jit_State"), 3120);
	CHECK_EQ(rj_log_type_size(log, "NoSuchType"), 0);
	const char *m = rj_log_macro(log, "CFRAME_SIZE");
	CHECK(m && !strcmp(m, "(12*8)"), "CFRAME_SIZE = %s", m ? m : "NULL");
	m = rj_log_macro(log, "CFRAME_SIZE_JIT");
	CHECK(m && !strcmp(m, "(CFRAME_SIZE + 16)"), "CFRAME_SIZE_JIT = %s",
	      m ? m : "NULL");
	m = rj_log_macro(log, "IRDEF");
	CHECK(m && !strncmp(m, "_(LT,", 5), "IRDEF = %.40s", m ? m : "NULL");
	int64_t v = 0;
	CHECK(rj_log_macro_int(log, "CFRAME_SIZE_JIT", &v) == 0 && v == 112,
	      "CFRAME_SIZE_JIT -> %lld", (long long)v);
	CHECK(rj_log_macro_int(log, "CFRAME_SIZE", &v) == 0 && v == 96,
	      "CFRAME_SIZE -> %lld", (long long)v);
	CHECK_EQ(rj_log_macro_int(log, "IRDEF", &v), -EINVAL);
	CHECK_EQ(rj_log_macro_int(log, "NO_SUCH_MACRO", &v), -ENOENT);
	const struct rj_trace *t = rj_log_trace(log, 0);
	uint64_t u = 0;
	CHECK(
	    t && rj_log_get(log, "GCtrace", "spadjust", t->raw, 136, &u) == 0 &&
		u == t->spadjust,
	    "get spadjust");
	CHECK(t && rj_log_get(log, "GCtrace", "exitno", t->raw, 130, &u) ==
		       -ERANGE,
	      "get past rawlen");
}

/* Find `pat` in [from, to) of b; the offset or SIZE_MAX. */
static size_t find(const uint8_t *b, size_t from, size_t to, const void *pat,
		   size_t n)
{
	const uint8_t *p = memmem(b + from, to - from, pat, n);
	return p ? (size_t)(p - b) : SIZE_MAX;
}

static void check_untrusted(const uint8_t *file, size_t len)
{
	char msg[256];
	struct rj_log *log = (struct rj_log *)1;
	/* record 0 is lj_ir_mode, record 1 the DWARF blob */
	size_t r1 = tw_end(file, len, 0), r2 = tw_end(file, len, r1);
	CHECK(r1 && r2 > r1, "records %zu %zu", r1, r2);
	if (!r1 || r2 <= r1)
		return;
	uint8_t *b = malloc(len);

	CASE("refused: a needed GCtrace member renamed in the DWARF")
	{
		memcpy(b, file, len);
		int n = 0;
		for (size_t at = r1; at < r2;) {
			size_t k = find(b, at, r2, "\0spadjust\0", 10);
			if (k == SIZE_MAX)
				break;
			b[k + 8] = 'X'; /* "spadjusX" */
			n++;
			at = k + 9;
		}
		CHECK(n >= 1, "no spadjust string in the blob");
		log = (struct rj_log *)1;
		int rc = rj_log_open_mem(&log, b, len, msg, sizeof(msg));
		CHECK(rc == -EINVAL && log == NULL, "rc %d", rc);
		CHECK(strstr(msg, "spadjust") && !strchr(msg, '\n'), "msg: %s",
		      msg);
	}
	CASE("refused: a GCtrace record 8 bytes shorter than the DWARF's "
	     "struct")
	{
		static const char pat[] = "\xda\x00\x04hint\xda\x00\x07GCtrace"
					  "\xda\x00\x07"
					  "address\xcf";
		size_t k = find(file, 0, len, pat, sizeof(pat) - 1);
		CHECK(k != SIZE_MAX, "no GCtrace record");
		if (k == SIZE_MAX)
			break;
		size_t d = k + sizeof(pat) - 1 + 8; /* after the address */
		CHECK(!memcmp(file + d,
			      "\xda\x00\x04"
			      "data\xc6\x00\x00\x00\x88",
			      12),
		      "GCtrace data is not bin32 of 136");
		/* new: ... c6 00 00 00 80, data[0:128], rest after data */
		size_t dat = d + 12, cut = dat + 128;
		memcpy(b, file, dat);
		b[dat - 1] = 0x80;
		memcpy(b + cut, file + dat + 136, len - dat - 136);
		memcpy(b + dat, file + dat, 128);
		log = (struct rj_log *)1;
		int rc = rj_log_open_mem(&log, b, len - 8, msg, sizeof(msg));
		CHECK(rc == -EINVAL && log == NULL, "rc %d", rc);
		CHECK(strstr(msg, "GCtrace") && strstr(msg, "136") &&
			  strstr(msg, "128"),
		      "msg: %s", msg);
	}
	CASE("refused: a log with traces but no DWARF blob")
	{
		memcpy(b, file, r1);
		memcpy(b + r1, file + r2, len - r2);
		log = (struct rj_log *)1;
		int rc =
		    rj_log_open_mem(&log, b, len - (r2 - r1), msg, sizeof(msg));
		CHECK(rc == -EINVAL && log == NULL, "rc %d %s", rc, msg);
	}
	CASE("a log of its two first records: no traces, no damage; cut in "
	     "the DWARF: damage at byte r1")
	{
		log = NULL;
		int rc = rj_log_open_mem(&log, file, r2, msg, sizeof(msg));
		CHECK(rc == 0 && log, "rc %d %s", rc, msg);
		CHECK_EQ(rj_log_ntraces(log), 0);
		CHECK(rj_log_damage(log) == NULL, "damage");
		CHECK_EQ(rj_log_type_size(log, "GCtrace"), 136);
		rj_log_close(log);
		log = NULL;
		rc = rj_log_open_mem(&log, file, r2 - 1, msg, sizeof(msg));
		CHECK(rc == 0 && log, "rc %d %s", rc, msg);
		char want[64];
		snprintf(want, sizeof(want), "damaged at byte %zu: ", r1);
		const char *dm = rj_log_damage(log);
		CHECK(dm && strstr(dm, want) &&
			  strstr(dm, "; 1 records decoded"),
		      "%s", dm ? dm : "(none)");
		rj_log_close(log);
	}
	free(b);
}

static void check_garbage(void)
{
	char msg[256];
	struct rj_log *log = (struct rj_log *)1;
	CASE("garbage, empty and our own auditlog are refused; sniff")
	{
		CHECK_EQ(rj_log_open_mem(&log, "", 0, msg, sizeof(msg)),
			 -EINVAL);
		CHECK(log == NULL, "out not NULL");
		CHECK_EQ(
		    rj_log_open_mem(&log, "hello, world", 12, msg, sizeof(msg)),
		    -EINVAL);
		static const uint8_t ours[16] = "JSFAUDIT\1";
		CHECK_EQ(rj_log_open_mem(&log, ours, 16, msg, sizeof(msg)),
			 -EINVAL);
		CHECK(strstr(msg, "damaged at byte 0: "), "msg %s", msg);
		CHECK_EQ(rj_log_sniff(ours, 16), 0);
		static const uint8_t theirs[] = "\x84\xda\x00\x04type\xda";
		CHECK_EQ(rj_log_sniff(theirs, sizeof(theirs) - 1), 1);
		CHECK_EQ(rj_log_sniff(theirs, 4), 0);
		CHECK_EQ(rj_log_open(&log, "/nonexistent/x.auditlog", msg,
				     sizeof(msg)),
			 -ENOENT);
		/* a lone fixmap of an unknown type: not RaptorJIT's */
		static const uint8_t unk[] =
		    "\x81\xda\x00\x04type\xda\x00\x01x";
		CHECK_EQ(rj_log_open_mem(&log, unk, sizeof(unk) - 1, msg,
					 sizeof(msg)),
			 -EINVAL);
		/* an event, then a fixstr (not written by RaptorJIT) */
		static const uint8_t ev[] =
		    "\x83\xda\x00\x04type\xda\x00\x05"
		    "event\xda\x00\x05"
		    "event\xda\x00\x01x\xda\x00\x08nanotime"
		    "\xcf\0\0\0\0\0\0\0\x07"
		    "\x81\xa4type";
		log = NULL;
		CHECK_EQ(
		    rj_log_open_mem(&log, ev, sizeof(ev) - 1, msg, sizeof(msg)),
		    0);
		const char *d = rj_log_damage(log);
		char want[64];
		snprintf(want, sizeof(want),
			 "damaged at byte %zu: ", sizeof(ev) - 1 - 6);
		CHECK(d && strstr(d, want) && strstr(d, "; 1 records decoded"),
		      "%s", d ? d : "(none)");
		rj_log_close(log);
	}
}

int main(int argc, char **argv)
{
	(void)argc;
	check_garbage();
	if (!find_fixtures(argv[0])) {
		printf("# SKIP RaptorJIT fixtures not found (set "
		       "JITSFRAME_RAPTORJIT_DATA)\n");
		return h_exit();
	}
	printf("# fixtures: %s\n", g_dir);
	static const struct fixture fx[] = {
	    {"numeric", 305}, {"sidetraces", 8604}, {"flushstorm", 14088},
	    {"nested", 712},  {"openresty", 3125},  {"rowprobe", 170},
	    {"cut", 1407},
	};
	for (size_t i = 0; i < sizeof(fx) / sizeof(fx[0]); i++) {
		char name[80];
		snprintf(name, sizeof(name),
			 "%s.auditlog: every trace_stop and trace_flushall "
			 "equals its TSV row",
			 fx[i].name);
		CASE(name) check_log(&fx[i]);
	}
	char path[4200], msg[256];
	snprintf(path, sizeof(path), "%s/numeric.auditlog", g_dir);
	struct rj_log *log = NULL;
	CASE("the embedded DWARF: fields, sizes, macros (README, readelf)")
	{
		int rc = rj_log_open(&log, path, msg, sizeof(msg));
		CHECK(rc == 0, "%s", msg);
		if (rc)
			break;
		check_dwarf(log);
	}
	size_t len = 0;
	uint8_t *file = slurp(path, &len);
	CASE("sniff: a fixture is RaptorJIT's")
	{
		CHECK(file && rj_log_sniff(file, len), "sniff");
	}
	if (file)
		check_untrusted(file, len);
	free(file);
	rj_log_close(log);
	return h_exit();
}
