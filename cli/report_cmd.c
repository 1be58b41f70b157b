/* SPDX-License-Identifier: MIT */
/*
 * `jitsframe report DIR`: unwind the raw perf.data of a `jitsframe record`
 * directory ourselves (perfdata.c, unwind.c), trace code through the
 * region at each sample's time, and write the profiles (profile.h).
 */
#include "auditlog.h"
#include "cli.h"
#include "jitsframe.h"
#include "jsfenv.h"
#include "profile.h"
#include "unwind.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "Usage: jitsframe report [options] DIR\n"
    "\n"
    "Unwind the samples of a `jitsframe record` directory with jitsframe's\n"
    "own unwinder: trace code through the region (the function that covered\n"
    "the pc at the sample's time), ELF code through its CFI (libdw). Reads\n"
    "DIR/perf.data.raw (else DIR/perf.data), DIR/region and DIR/region-PID\n"
    "(forked children), DIR/jit-*.dump; writes DIR/stacks.folded,\n"
    "flamegraph.svg, flamegraph.html and profile.pb.gz, and prints one\n"
    "summary line. A region serves the samples of its own process only.\n"
    "A process with samples in JIT code but no region there (a recording\n"
    "made with plain `perf record`) gets the region the discovery\n"
    "convention finds for it (docs/ABI.md 8: its mappings, if still\n"
    "running, else BASE/jitsframe-UID/PID.region created before its\n"
    "samples, BASE $TMPDIR when set, else /dev/shm and /tmp); the summary\n"
    "says so.\n"
    "\n"
    "  -i, --input FILE   perf.data to read (default as above)\n"
    "  --region FILE      a region (default DIR/region, DIR/region-PID);\n"
    "                     repeat it for several processes\n"
    "  --dump FILE        write every sample's frames as text (for tests)\n"
    "  --no-write         unwind and summarise only\n"
    "  --frames MODE      the profiles' stacks: mixed (default: every frame,\n"
    "                     each trace frame with the Lua frames it stands\n"
    "                     for above it, `chunk:line_[l]`, line the\n"
    "                     function's first), lua (Lua frames alone, a trace\n"
    "                     frame only where its code has none; no native or\n"
    "                     kernel frames), native (no Lua frames)\n"
    "  --auditlog FILE    RaptorJIT's own log (raptorjit -a FILE; Snabb keeps\n"
    "                     one) of the recording's process that runs "
    "RaptorJIT:\n"
    "                     its traces are unwound from it, through\n"
    "                     DIR/region-PID made from it (docs/RAPTORJIT.md).\n"
    "                     perf.data must be timed by CLOCK_MONOTONIC\n"
    "                     (perf record -k 1)\n"
    "  --pid PID          with --auditlog: the log's process, when several\n"
    "                     processes of the recording run RaptorJIT\n"
    "\n"
    "Exit status: 0 done; 1 a profile could not be written; 2 usage;\n"
    "3 the input cannot be read (a truncated or corrupt perf.data), or the\n"
    "auditlog cannot be used (unreadable, not RaptorJIT's, refused: one\n"
    "message).\n";

#define KMAX 256 /* kernel frames kept per sample */
/* a sample's key (sample_key): at most this many words; keys kept */
enum { KEYMAX = 8192, SMEMO_MAX = 1 << 16, SKW_MAX = 1 << 22 };
struct smemo {
	uint64_t h;
	uint32_t off, len; /* its words in skw; len 0: an empty slot */
	uint32_t stack;	   /* prof_add_stable_at's (0: none added) */
};

struct rep {
	struct uwstate *u;
	struct perfdata *pd; /* for pd_prefetch_stack */
	struct prof *prof;
	FILE *dump;
	uint64_t samples, with_user, through, through_main, complete, unpub;
	uint64_t why[STOP__N], why_through[STOP__N];
	/* processes with samples in JIT code but no region */
	struct {
		uint32_t pid;
		uint64_t n, t; /* t: its first such sample's time */
		char comm[32];
	} noreg[8];
	size_t nnoreg, noreg_more;
	struct cli_exes exes; /* profile.pb.gz's main binary */
	int frames;	      /* enum cli_frames */
	struct uframe fr[UW_MAX];
	struct pframe pf[2 * UW_MAX];	      /* with Lua frames */
	uint8_t pfst[2 * UW_MAX];	      /* their PF_STABLE_* bits */
	struct pframe all[KMAX + 2 * UW_MAX]; /* kernel frames, then pf */
	uint8_t stable[KMAX + 2 * UW_MAX];    /* their PF_STABLE_* bits */
	int err;
	/* the stacks added before, by an exact key of all their frames are
	 * made of (sample_key): a sample whose key was seen counts for that
	 * stack again, without its frames made and matched again */
	struct smemo *sm;
	size_t sm_n, sm_cap;
	uint64_t *skw; /* the keys' words */
	size_t skw_n, skw_cap;
	uint64_t key[KEYMAX];
	uint64_t kip[KMAX]; /* the sample's kernel pcs */
	/* what rep_begin starts from */
	struct traces *t;
	struct uw_opts uo;
	const char *dir;
	bool write;
};

static void use_recorded_kallsyms(struct uwstate *u, const char *dir);

/* (Again) as before any event: a new unwinder and profile, the counts
 * zero, the dump empty. 0, -ENOMEM, or the dump's truncation's -errno. */
static int rep_begin(struct rep *r)
{
	FILE *dump = r->dump;
	struct perfdata *pd = r->pd;
	struct traces *t = r->t;
	struct uw_opts uo = r->uo;
	const char *dir = r->dir;
	bool write = r->write;
	int frames = r->frames, rc = 0;
	uw_free(r->u);
	if (r->prof)
		prof_free(r->prof);
	cli_exes_free(&r->exes);
	free(r->sm);
	free(r->skw);
	memset(r, 0, sizeof(*r));
	r->dump = dump;
	r->pd = pd;
	r->t = t;
	r->uo = uo;
	r->dir = dir;
	r->write = write;
	r->frames = frames;
	if (dump) {
		fflush(dump);
		rewind(dump);
		if (ftruncate(fileno(dump), 0))
			rc = -errno;
	}
	if (!(r->u = uw_new(t, &uo)))
		return -ENOMEM;
	if (write)
		r->prof = prof_new(pd_sample_period_ns(pd));
	use_recorded_kallsyms(r->u, dir);
	return rc;
}

/* pd_each_restart's reset */
static void rep_reset(void *ctx)
{
	rep_begin(ctx);
}

/* The reset for pd_each_restart, or NULL (pd_each's two passes): a dump
 * that is not a regular file (a pipe, a terminal) cannot be rewound and
 * truncated, and would keep what an abandoned pass wrote */
static void (*rep_resetter(const struct rep *r))(void *)
{
	struct stat st;
	if (r->dump &&
	    (fstat(fileno(r->dump), &st) < 0 || !S_ISREG(st.st_mode)))
		return NULL;
	return rep_reset;
}

/* s appended to key k (its length, then its bytes); false: no room */
static bool key_str(uint64_t *k, uint32_t *len, const char *s)
{
	size_t l = s ? strlen(s) : 0, w = (l + 7) / 8;
	if (*len + 1 + w > KEYMAX)
		return false;
	k[(*len)++] = l;
	if (w) {
		k[*len + w - 1] = 0;
		memcpy(k + *len, s, l);
		*len += (uint32_t)w;
	}
	return true;
}

/* The key of the profile stack of a sample of pid at ts (comm, its n
 * user frames r->fr, its nk kernel pcs r->kip) into r->key: everything
 * on_event makes the stack's frames of, so that equal keys give equal
 * frames. Pointers stand for strings that stay put as long as r->u (the
 * stable ones: see on_event); an anonymous mapping's name, which may not,
 * and the comm go in as their bytes; a trace frame's Lua frames as
 * uw_lua_key's key. Its length, or 0: no exact key (a live region, or
 * too long). Its hash into *hash: of the words that mostly differ (the
 * pcs, the Lua frames' keys), a short chain per word; the table compares
 * the whole key. */
static uint32_t sample_key(struct rep *r, uint32_t pid, uint64_t ts,
			   const char *comm, int n, uint32_t nk, uint64_t *hash)
{
	uint64_t *k = r->key;
	uint32_t len = 0;
	uint64_t h = k[len++] = (uint64_t)(uint32_t)n << 32 | nk;
	if (!key_str(k, &len, comm) || len + nk > KEYMAX)
		return 0;
	for (uint32_t i = 0; i < nk; i++)
		h = (h << 5 | h >> 59) ^ (k[len++] = r->kip[i]);
	for (int i = 0; i < n; i++) {
		const struct uframe *f = &r->fr[i];
		const void *lk = NULL;
		if (len + 10 > KEYMAX)
			return 0;
		if (f->is_trace && r->frames != CLI_FRAMES_NATIVE &&
		    !(lk = uw_lua_key(r->u, pid, ts, f)))
			return 0;
		/* what cli_pframe reads (an ELF frame's object stands for
		 * its path and build-id), and a trace frame's Lua frames */
		k[len++] = f->pc;
		k[len++] = (uint64_t)(uintptr_t)f->name;
		k[len++] = (uint64_t)(uintptr_t)f->elf | f->is_trace;
		k[len++] = f->map_start;
		k[len++] = f->map_end;
		k[len++] = f->map_pgoff;
		h = (h << 5 | h >> 59) ^ f->pc;
		if (f->is_trace) {
			k[len++] = (uint64_t)(uintptr_t)f->map_name;
			k[len++] = (uint64_t)(uintptr_t)lk;
			h ^= (uint64_t)(uintptr_t)lk;
		} else if (!f->elf && !key_str(k, &len, f->map_name)) {
			return 0;
		}
	}
	h *= 0x9e3779b97f4a7c15ull;
	*hash = (h ^ h >> 32) | 1;
	return len;
}

/* The memo's slot for key r->key (len words, hash h): its entry, or the
 * empty slot where it would go; NULL: no table */
static struct smemo *smemo_slot(struct rep *r, uint64_t h, uint32_t len)
{
	if (!r->sm_cap)
		return NULL;
	size_t i = (size_t)(h >> 7) & (r->sm_cap - 1);
	for (;; i = (i + 1) & (r->sm_cap - 1)) {
		struct smemo *m = &r->sm[i];
		if (!m->len || (m->h == h && m->len == len &&
				!memcmp(r->skw + m->off, r->key,
					(size_t)len * sizeof(*r->key))))
			return m;
	}
}

/* key r->key (len words, hash h) kept for stack (no harm where there is
 * no room) */
static void smemo_put(struct rep *r, uint64_t h, uint32_t len, uint32_t stack)
{
	if (r->sm_n >= SMEMO_MAX || r->skw_n + len > SKW_MAX)
		return;
	if (2 * (r->sm_n + 1) > r->sm_cap) {
		size_t nc = r->sm_cap ? 2 * r->sm_cap : 1024;
		struct smemo *t = calloc(nc, sizeof(*t));
		if (!t)
			return;
		for (size_t i = 0; i < r->sm_cap; i++) {
			if (!r->sm[i].len)
				continue;
			size_t j = (size_t)(r->sm[i].h >> 7) & (nc - 1);
			while (t[j].len)
				j = (j + 1) & (nc - 1);
			t[j] = r->sm[i];
		}
		free(r->sm);
		r->sm = t;
		r->sm_cap = nc;
	}
	if (r->skw_n + len > r->skw_cap) {
		size_t nc = r->skw_cap ? 2 * r->skw_cap : 65536;
		while (nc < r->skw_n + len)
			nc *= 2;
		uint64_t *w = realloc(r->skw, nc * sizeof(*w));
		if (!w)
			return;
		r->skw = w;
		r->skw_cap = nc;
	}
	struct smemo *m = smemo_slot(r, h, len);
	if (!m || m->len)
		return;
	memcpy(r->skw + r->skw_n, r->key, (size_t)len * sizeof(*r->key));
	*m = (struct smemo){h, (uint32_t)r->skw_n, len, stack};
	r->skw_n += len;
	r->sm_n++;
}

static int on_event(const struct pd_event *e, void *ctx)
{
	struct rep *r = ctx;
	enum stop_reason why = STOP_OUTERMOST;
	const char *comm = NULL;
	if (!r->u) /* rep_reset ran out of memory */
		return -ENOMEM;
	int n = uw_event(r->u, e, r->fr, &why, &comm);
	if (n < 0)
		return 0;
	uint32_t lines[PD_PREFETCH];
	pd_prefetch_stack(r->pd, lines,
			  uw_stack_lines(r->u, lines, PD_PREFETCH));
	r->samples++;
	bool trace = false, main_ = false, anon = false;
	for (int i = 0; i < n; i++) {
		struct uframe *f = &r->fr[i];
		trace |= f->is_trace;
		anon |= f->jit_area && !f->is_trace;
		if (!f->is_trace && f->name && f->name[0] == 'm' &&
		    !strcmp(f->name, "main"))
			main_ = true;
	}
	if (n > 0) {
		r->with_user++;
		cli_exes_add(&r->exes, uw_exe(r->u, e->u.s.pid));
	}
	r->why[why]++;
	if (why == STOP_NO_REGION) {
		size_t k = 0;
		while (k < r->nnoreg && r->noreg[k].pid != e->u.s.pid)
			k++;
		if (k == r->nnoreg &&
		    k < sizeof(r->noreg) / sizeof(r->noreg[0])) {
			r->noreg[k].pid = e->u.s.pid;
			r->noreg[k].t = e->time;
			snprintf(r->noreg[k].comm, sizeof(r->noreg[k].comm),
				 "%s", comm ? comm : "?");
			r->nnoreg++;
		}
		if (k < r->nnoreg)
			r->noreg[k].n++;
		else
			r->noreg_more++;
	}
	if (why == STOP_OUTERMOST)
		r->complete++;
	if (anon && !trace)
		r->unpub++;
	if (trace) {
		r->through++;
		if (main_)
			r->through_main++;
		else
			r->why_through[why]++;
	}
	if (r->prof) {
		/* the kernel part of perf's callchain (leaf first), above the
		 * user frames: entries after PERF_CONTEXT_KERNEL until another
		 * context marker */
		const struct pd_sample *sm = &e->u.s;
		uint32_t nk = 0;
		bool kern = false;
		for (uint64_t i = 0; i < sm->nr_callchain && nk < KMAX; i++) {
			uint64_t ip;
			memcpy(&ip,
			       (const unsigned char *)sm->callchain + 8 * i, 8);
			if (ip >= (uint64_t)-4095) { /* PERF_CONTEXT_* */
				kern = ip == (uint64_t)-128;
				continue;
			}
			if (kern)
				r->kip[nk++] = ip;
		}
		/* a stack made before: counted again */
		uint64_t kh = 0;
		uint32_t klen =
		    sample_key(r, sm->pid, e->time, comm, n, nk, &kh);
		struct smemo *hit = klen ? smemo_slot(r, kh, klen) : NULL;
		if (hit && hit->len) {
			if (hit->stack &&
			    prof_add_again(r->prof, hit->stack, 1) && !r->err)
				r->err = -ENOMEM;
			goto dump;
		}
		uint32_t np = cli_user_frames_st(
		    r->u, e->u.s.pid, e->time, r->frames, r->fr, n, NULL, 0,
		    r->pf, r->pfst, sizeof(r->pf) / sizeof(r->pf[0]));
		for (uint32_t i = 0; i < nk; i++) {
			cli_kframe(r->u, r->kip[i], (int)i, &r->all[i]);
			/* kallsyms' names stay put as long as r->u */
			r->stable[i] = PF_STABLE_ALL;
		}
		const struct pframe *fs = r->pf;
		/* --frames lua: no kernel frames; a sample without Lua
		 * frames counts for its comm alone */
		bool any = nk + np > 0 || n > 0;
		if (r->frames == CLI_FRAMES_LUA)
			nk = 0;
		if (nk) {
			memcpy(r->all + nk, r->pf, (size_t)np * sizeof(*r->pf));
			fs = r->all;
		}
		/* uw_event's frames: names, ELF objects (paths, build-ids)
		 * and "[jit]" stay put as long as r->u, which the profile
		 * does not outlive (rep_begin makes both anew); an anonymous
		 * mapping's name may go with its process, Lua frames' names
		 * with the next sample */
		for (uint32_t i = 0; i < np; i++)
			r->stable[nk + i] =
			    fs[nk + i].kind == PF_LUA ? r->pfst[i]
			    : fs[nk + i].kind == PF_UNKNOWN
				? PF_STABLE_ALL & ~PF_STABLE_MAPPING
				: PF_STABLE_ALL;
		uint32_t stack = 0;
		if (any && prof_add_stable_at(r->prof, fs, r->stable, nk + np,
					      1, comm, &stack)) {
			if (!r->err)
				r->err = -ENOMEM;
		} else if (klen) {
			smemo_put(r, kh, klen, stack);
		}
	}
dump:
	if (r->dump) {
		fprintf(r->dump, "S %llu %u %u %d %d %s\n",
			(unsigned long long)e->time, e->u.s.pid, e->u.s.tid,
			(int)why, n, main_ ? "main" : "-");
		for (int i = 0; i < n; i++) {
			const struct uframe *f = &r->fr[i];
			fprintf(r->dump, "F %llx %llx %c %s %s\n",
				(unsigned long long)f->pc,
				(unsigned long long)(f->elf ? f->vaddr : f->pc),
				f->is_trace ? 'j'
				: f->elf    ? 'e'
					    : 'u',
				f->name ? f->name : "-",
				f->map_name ? f->map_name : "-");
		}
	}
	return 0;
}

static void path_in(char *out, size_t n, const char *dir, const char *f)
{
	snprintf(out, n, "%s/%s", dir, f);
}

/* The perf.data to read: input, else DIR/perf.data.raw, else
 * DIR/perf.data. */
static void input_path(char *in, size_t n, const char *dir, const char *input)
{
	struct stat sb;
	if (input) {
		snprintf(in, n, "%s", input);
	} else {
		path_in(in, n, dir, "perf.data.raw");
		if (stat(in, &sb))
			path_in(in, n, dir, "perf.data");
	}
}

/* perf record keeps the recorded kernel's kallsyms in the record
 * directory's build-id cache (DIR/.debug/[kernel.kallsyms]/BUILDID/
 * kallsyms): the right symbols for that kernel, and a plain file, which
 * reads far faster than /proc/kallsyms. Used when there is exactly one. */
static void use_recorded_kallsyms(struct uwstate *u, const char *dir)
{
	char kd[PATH_MAX], found[PATH_MAX + 300] = "";
	snprintf(kd, sizeof(kd), "%s/.debug/[kernel.kallsyms]", dir);
	DIR *d = opendir(kd);
	if (!d)
		return;
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[PATH_MAX + 300];
		struct stat sb;
		snprintf(p, sizeof(p), "%s/%s/kallsyms", kd, de->d_name);
		if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) {
			n++;
			snprintf(found, sizeof(found), "%s", p);
		}
	}
	closedir(d);
	if (n == 1)
		uw_use_kallsyms(u, found);
}

/* The regions to read: those named, else DIR/region and DIR/region-PID
 * (a forked child's), the ones there. 0, or -errno with a message. */
static int add_regions(struct traces *t, const struct report_opts *o, char *err,
		       size_t errlen)
{
	int rc;
	for (size_t i = 0; i < o->nextra; i++)
		if ((rc = traces_add_region(t, o->extra_regions[i], err,
					    errlen)))
			return rc;
	if (o->region || o->nregions) {
		if (o->region &&
		    (rc = traces_add_region(t, o->region, err, errlen)))
			return rc;
		for (size_t i = 0; i < o->nregions; i++)
			if ((rc = traces_add_region(t, o->regions[i], err,
						    errlen)))
				return rc;
		return 0;
	}
	char p[PATH_MAX];
	struct stat sb;
	path_in(p, sizeof(p), o->dir, "region");
	if (stat(p, &sb) == 0 && (rc = traces_add_region(t, p, err, errlen)))
		return rc;
	DIR *d = opendir(o->dir);
	struct dirent *de;
	rc = 0;
	while (!rc && d && (de = readdir(d))) {
		const char *n = de->d_name;
		if (strncmp(n, "region-", 7) || !n[7] ||
		    strspn(n + 7, "0123456789") != strlen(n + 7))
			continue;
		path_in(p, sizeof(p), o->dir, n);
		rc = traces_add_region(t, p, err, errlen);
	}
	if (d)
		closedir(d);
	return rc;
}

/* Regions found by the discovery convention (jsf_region_find) for the
 * processes that had JIT samples but no region: added to *t (made if
 * NULL); their paths into found[]. How many. */
struct found_reg {
	uint32_t pid;
	char path[PATH_MAX];
};
/* Was the region at path created before born (non-zero: when the
 * recording saw its process start)? Then it is a reused pid's. */
static bool made_before(const char *path, uint64_t born)
{
	struct jsf_view *v;
	if (!born || jsf_view_open(&v, path))
		return false;
	struct jsf_view_info vi = {.sz = sizeof(vi)};
	bool before = jsf_view_info(v, &vi) == 0 && vi.create_ns < born;
	jsf_view_close(v);
	return before;
}

static size_t find_missing(struct traces **t, const struct rep *r,
			   const char *dir, struct found_reg *found, size_t max)
{
	size_t n = 0;
	for (size_t k = 0; k < r->nnoreg && n < max; k++) {
		char path[PATH_MAX], err[512];
		if (jsf_region_find((int)r->noreg[k].pid, r->noreg[k].t, path,
				    sizeof(path)) ||
		    made_before(path, uw_born(r->u, r->noreg[k].pid)))
			continue;
		bool fresh = !*t;
		if (fresh && !(*t = traces_new()))
			break;
		if (traces_add_region(*t, path, err, sizeof(err)))
			continue;
		if (fresh)
			traces_add_jitdumps(*t, dir);
		/* its jitdump, if written beside it */
		char jd[PATH_MAX], *slash;
		snprintf(jd, sizeof(jd), "%s", path);
		if (strncmp(jd, "/proc/", 6) && (slash = strrchr(jd, '/'))) {
			*slash = 0;
			char a[PATH_MAX], b[PATH_MAX];
			if (!realpath(jd, a) || !realpath(dir, b) ||
			    strcmp(a, b))
				traces_add_jitdumps(*t, jd);
		}
		found[n].pid = r->noreg[k].pid;
		snprintf(found[n].path, sizeof(found[n].path), "%s", path);
		n++;
	}
	return n;
}

int report_run(const struct report_opts *opts)
{
	struct report_opts o = {0};
	/* an older, smaller opts: the fields it lacks are zero */
	if (opts)
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	if (!o.dir)
		return EX_USAGE;
	const char *dir = o.dir, *input = o.input, *dumpp = o.dump;
	bool write = !o.no_write;
	char in[PATH_MAX];
	input_path(in, sizeof(in), dir, input);
	char err[512] = "";
	struct perfdata *pd;
	int rc = pd_open(&pd, in, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "jitsframe report: %s\n", err);
		return EX_INPUT;
	}
	struct traces *t = traces_new();
	if (!t || add_regions(t, &o, err, sizeof(err))) {
		fprintf(stderr, "jitsframe report: %s\n",
			t ? err : "out of memory");
		traces_free(t);
		pd_close(pd);
		return EX_INPUT;
	}
	if (traces_regions(t) == 0) { /* no region: ELF frames only */
		traces_free(t);
		t = NULL;
	} else {
		traces_add_jitdumps(t, dir);
		if (o.jitdump_dir)
			traces_add_jitdumps(t, o.jitdump_dir);
	}
	struct rep *r = calloc(1, sizeof(*r));
	/* JITSFRAME_NO_SFRAME=1: ignore .sframe sections (tests compare) */
	const char *nosf = getenv(JSF_ENV_NO_SFRAME);
	struct uw_opts uo = {.no_sframe = nosf && *nosf && strcmp(nosf, "0")};
	if (r) {
		r->pd = pd;
		r->frames = o.frames;
		r->t = t;
		r->uo = uo;
		r->dir = dir;
		r->write = write;
	}
	if (!r || rep_begin(r)) { /* (no dump yet: only memory can fail) */
		fprintf(stderr, "jitsframe report: out of memory\n");
		if (r) {
			uw_free(r->u);
			if (r->prof)
				prof_free(r->prof);
		}
		free(r);
		traces_free(t);
		pd_close(pd);
		return EX_INPUT;
	}
	if (dumpp && !(r->dump = fopen(dumpp, "w"))) {
		fprintf(stderr, "jitsframe report: %s: %s\n", dumpp,
			strerror(errno));
		rc = EX_INPUT;
		goto out;
	}
	rc =
	    pd_each_restart(pd, on_event, rep_resetter(r), r, err, sizeof(err));
	struct found_reg found[8];
	size_t nfound = 0;
	if (!rc && !o.region && !o.nregions && r->nnoreg &&
	    (nfound = find_missing(&t, r, dir, found, 8))) {
		/* again, now with those regions */
		r->t = t;
		rc = rep_begin(r);
		if (rc == -ENOMEM) {
			fprintf(stderr, "jitsframe report: out of memory\n");
			rc = EX_INPUT;
			goto out;
		}
		if (!rc)
			rc = pd_each_restart(pd, on_event, rep_resetter(r), r,
					     err, sizeof(err));
	}
	if (rc) {
		fprintf(stderr, "jitsframe report: %s: %s\n", in,
			err[0] ? err : strerror(-rc));
		rc = EX_INPUT;
		goto out;
	}
	rc = EX_OK;
	if (r->dump) {
		struct uw_stats st;
		uw_stats(r->u, &st);
		fprintf(r->dump, "# rows from .sframe %llu, from CFI %llu\n",
			(unsigned long long)st.rows_sframe,
			(unsigned long long)st.rows_cfi);
	}
	char wrote[1024] = "";
	if (r->prof && r->exes.n &&
	    prof_set_main(r->prof, cli_exes_top(&r->exes)) && !r->err)
		r->err = -ENOMEM;
	if (r->prof && cli_write_profiles(r->prof, dir, "jitsframe report",
					  wrote, sizeof(wrote)))
		rc = EX_FAIL;
	printf("jitsframe report: %llu samples, %llu through trace code, %llu "
	       "of them (%.2f%%) unwound from main",
	       (unsigned long long)r->samples, (unsigned long long)r->through,
	       (unsigned long long)r->through_main,
	       r->through ? 100.0 * (double)r->through_main / (double)r->through
			  : 0.0);
	/* the stack copy perf was asked for (perf.data's attr) */
	uint32_t copy = pd_sample_stack_user(pd);
	char fix[160] = "";
	if (copy >= 65528)
		snprintf(fix, sizeof(fix),
			 " (the copy, %u bytes, is perf's maximum: these "
			 "stacks are deeper than perf can copy)",
			 copy);
	else if (copy)
		snprintf(fix, sizeof(fix),
			 " (record with --stack BYTES, now %u)", copy);
	else
		snprintf(fix, sizeof(fix), " (record with --stack BYTES)");
	const char *sep = "; the rest stopped: ";
	for (int k = 0; k < STOP__N; k++)
		if (r->why_through[k]) {
			printf("%s%s %llu%s", sep,
			       stop_name((enum stop_reason)k),
			       (unsigned long long)r->why_through[k],
			       k == STOP_STACK_SHORT ? fix : "");
			sep = ", ";
		}
	if (r->unpub)
		printf(
		    "; %llu more in JIT code that no published trace covered",
		    (unsigned long long)r->unpub);
	for (size_t k = 0; k < r->nnoreg; k++)
		printf("; pid %u (%s): %llu samples in JIT code but no region "
		       "for that process (start jitsframe in it: `jitsframe "
		       "run`, or require(\"jitsframe\").start() where the host "
		       "runs Lua)",
		       r->noreg[k].pid, r->noreg[k].comm,
		       (unsigned long long)r->noreg[k].n);
	if (r->noreg_more)
		printf("; %llu more such samples of other processes",
		       (unsigned long long)r->noreg_more);
	if (o.noreg_n) {
		*o.noreg_n = 0;
		for (size_t k = 0; k < r->nnoreg && k < o.noreg_max; k++) {
			o.noreg[k].pid = r->noreg[k].pid;
			snprintf(o.noreg[k].comm, sizeof(o.noreg[k].comm), "%s",
				 r->noreg[k].comm);
			*o.noreg_n = k + 1;
		}
	}
	for (size_t k = 0; k < nfound; k++) {
		/* said only where it served (not closed before the samples) */
		size_t q = 0;
		while (q < r->nnoreg && r->noreg[q].pid != found[k].pid)
			q++;
		if (q == r->nnoreg)
			printf("; region of pid %u found at %s", found[k].pid,
			       found[k].path);
	}
	printf("; all samples: %llu complete to the outermost frame",
	       (unsigned long long)r->complete);
	if (r->why[STOP_STACK_SHORT])
		printf(", %llu stopped as %s%s",
		       (unsigned long long)r->why[STOP_STACK_SHORT],
		       stop_name(STOP_STACK_SHORT),
		       r->why_through[STOP_STACK_SHORT] ? "" : fix);
	struct uw_stats st;
	uw_stats(r->u, &st);
	if (copy || st.stack_copy_max)
		printf("; stack: the deepest complete walk read %llu bytes of "
		       "the %llu copied per sample",
		       (unsigned long long)st.stack_need_max,
		       (unsigned long long)(copy ? copy : st.stack_copy_max));
	if (wrote[0])
		printf("; wrote%s in %s", wrote, dir);
	printf("\n");
	/* (record) every kernel frame of the recording is named by now */
	if (o.trim_kallsyms && rc == EX_OK && write && !r->err)
		uw_trim_kallsyms(r->u);
out:
	if (r->dump)
		fclose(r->dump);
	if (r->prof)
		prof_free(r->prof);
	uw_free(r->u);
	cli_exes_free(&r->exes);
	free(r->sm);
	free(r->skw);
	free(r);
	traces_free(t);
	pd_close(pd);
	return rc;
}

/* `report --auditlog LOG DIR`: the region of the recording's RaptorJIT
 * process from its log (docs/RAPTORJIT.md): the process is the one of the
 * perf.data that mapped a RaptorJIT program (cli_rj_kind), the only one,
 * else the one --pid names; the log's frame size checked against that
 * program; written as DIR/region-PID (with --no-write: in memory), then
 * the report as usual. */
static int report_auditlog(struct report_opts *o, const char *alog,
			   uint32_t pid)
{
	const char *who = "jitsframe report";
	struct rj_log *log;
	int rc = cli_rj_open(who, alog, &log);
	if (rc)
		return rc;
	char in[PATH_MAX], err[512] = "", out[PATH_MAX + 32];
	input_path(in, sizeof(in), o->dir, o->input);
	enum { MAXP = 16 };
	struct cli_rj_proc *p = calloc(MAXP, sizeof(*p));
	int clk = -1,
	    n = p ? cli_rj_procs(in, NULL, p, MAXP, &clk, err, sizeof(err))
		  : -1;
	int k = -1;
	rc = EX_INPUT;
	if (n < 0) {
		fprintf(stderr, "%s: %s\n", who, p ? err : "out of memory");
		goto out;
	}
	if (clk != 1) {
		fprintf(stderr,
			"%s: %s: its samples are not timed by CLOCK_MONOTONIC, "
			"the auditlog's clock (record with perf record -k 1): "
			"they cannot be matched with the log's traces\n",
			who, in);
		goto out;
	}
	for (int i = 0; i < n; i++)
		if (!pid || p[i].pid == pid)
			k = k < 0 ? i : -2;
	char pids[256] = "";
	for (int i = 0, l = 0; i < n && l < (int)sizeof(pids) - 12; i++)
		l += snprintf(pids + l, sizeof(pids) - (size_t)l, "%s%u",
			      i ? ", " : "", p[i].pid);
	if (k < 0) {
		if (pid)
			fprintf(stderr,
				"%s: %s: pid %u runs no RaptorJIT program "
				"there (those that do: %s)\n",
				who, in, pid, n ? pids : "none");
		else if (!n)
			fprintf(stderr,
				"%s: %s: no process runs a RaptorJIT program "
				"(one defining lj_auditlog_open), so none is "
				"the log's\n",
				who, in);
		else
			fprintf(stderr,
				"%s: %s: %d processes run RaptorJIT (%s): "
				"name the log's with --pid\n",
				who, in, n, pids);
		goto out;
	}
	snprintf(out, sizeof(out), "%s/region-%u", o->dir, p[k].pid);
	/* the traces' names go to DIR/jit-PID.dump; with --no-write to a
	 * private directory, removed after the report */
	char tmpd[PATH_MAX] = "", jdp[PATH_MAX + 32] = "";
	if (o->no_write) {
		const char *td = getenv("TMPDIR");
		snprintf(tmpd, sizeof(tmpd), "%s/jitsframe-report-XXXXXX",
			 td && *td ? td : "/tmp");
		if (!mkdtemp(tmpd))
			tmpd[0] = 0;
	}
	struct cli_rj_args a = {.who = who,
				.log = alog,
				.binary = p[k].exe,
				.out = o->no_write ? NULL : out,
				.jdir = o->no_write ? (tmpd[0] ? tmpd : NULL)
						    : o->dir,
				.pid = p[k].pid};
	if (!o->no_write) { /* a jitdump of an earlier report goes */
		snprintf(jdp, sizeof(jdp), "%s/jit-%u.dump", o->dir, p[k].pid);
		unlink(jdp);
	}
	struct jsf_region *keep = NULL;
	rc = cli_rj_region(&a, log, o->no_write ? &keep : NULL);
	rj_log_close(log);
	log = NULL;
	if (rc)
		goto out;
	if (tmpd[0])
		o->jitdump_dir = tmpd;
	/* the region: DIR's own scan finds DIR/region-PID; named regions
	 * or a region in memory are added */
	const char *extra[1] = {keep ? jsf_region_path(keep) : out};
	if (keep || o->region || o->nregions) {
		o->extra_regions = extra;
		o->nextra = 1;
	}
	rc = report_run(o);
	if (keep)
		jsf_region_destroy(keep);
	if (tmpd[0]) {
		snprintf(jdp, sizeof(jdp), "%s/jit-%u.dump", tmpd, p[k].pid);
		unlink(jdp);
		rmdir(tmpd);
	}
out:
	rj_log_close(log);
	free(p);
	return rc;
}

int cmd_report(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"input", required_argument, 0, 'i'},
	    {"region", required_argument, 0, 'r'},
	    {"dump", required_argument, 0, 'd'},
	    {"no-write", no_argument, 0, 'n'},
	    {"auditlog", required_argument, 0, 'a'},
	    {"pid", required_argument, 0, 'p'},
	    {"frames", required_argument, 0, 'f'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	struct report_opts o = {.sz = sizeof(o)};
	const char *regs[64], *alog = NULL;
	uint64_t pid = 0;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+i:h", lo, NULL)) != -1) {
		switch (c) {
		case 'i':
			o.input = optarg;
			break;
		case 'r':
			if (o.nregions == sizeof(regs) / sizeof(regs[0])) {
				fprintf(stderr, "jitsframe report: at most 64 "
						"--region\n");
				return EX_USAGE;
			}
			regs[o.nregions++] = optarg;
			o.regions = regs;
			break;
		case 'd':
			o.dump = optarg;
			break;
		case 'n':
			o.no_write = true;
			break;
		case 'a':
			alog = optarg;
			break;
		case 'p':
			if (!cli_u64(optarg, &pid) || !pid || pid > INT32_MAX) {
				fprintf(stderr,
					"jitsframe report: --pid wants a "
					"process id, not '%s'\n",
					optarg);
				return EX_USAGE;
			}
			break;
		case 'f':
			if ((o.frames = cli_frames_arg(optarg)) < 0) {
				fprintf(stderr,
					"jitsframe report: --frames wants "
					"mixed, lua or native, not '%s'\n",
					optarg);
				return EX_USAGE;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return EX_OK;
		default:
			fprintf(
			    stderr,
			    "jitsframe report: unknown or incomplete option "
			    "'%s'\nTry 'jitsframe report --help'.\n",
			    argv[optind - 1]);
			return EX_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "jitsframe report: give one directory (made by "
				"`jitsframe record`)\nTry 'jitsframe report "
				"--help'.\n");
		return EX_USAGE;
	}
	if (pid && !alog) {
		fprintf(stderr, "jitsframe report: --pid goes with "
				"--auditlog\nTry 'jitsframe report --help'.\n");
		return EX_USAGE;
	}
	o.dir = argv[optind];
	return alog ? report_auditlog(&o, alog, (uint32_t)pid) : report_run(&o);
}
