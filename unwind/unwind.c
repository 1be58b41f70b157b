/* SPDX-License-Identifier: MIT */
/*
 * The unwinder: processes and their mappings from perf's MMAP/MMAP2, COMM,
 * FORK records; per sample, a walk from the user registers (ip, sp, bp)
 * over the copied user stack. Trace code (pc in no file-backed mapping)
 * answers from the region: the function that covered pc at the sample's
 * time, with its row there. ELF code answers from the object's rows
 * (elfcfi.c: .sframe, .eh_frame, .debug_frame, PLT expressions). Whatever
 * the source, the row comes converted to one form (struct uw_row), and
 * the walk is one loop: row for pc -> CFA -> RA and FP -> next frame.
 * Every walk ends with a reason (enum stop_reason), each set in one place.
 * All state is in the context (struct uwstate).
 */
#include "elfobj.h"
#include "jitdump.h"
#include "jitsframe.h"
#include "ksyms.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---------------------------------------------------------------- traces */

struct tload {
	uint64_t lo, hi, ts;
	uint32_t pid;
	char *name;
};

/* One producer's region: used for the samples of its own process alone
 * (its pid, within its lifetime), never for another's. */
struct treg {
	struct jsf_view *v; /* kept open: lookups by pc and time */
	uint32_t pid;
	uint64_t create_ns, close_ns; /* close_ns 0: not closed */
	char *path;
	struct uw_runtime rt; /* names from its runtime area */
	unsigned rt_gen;      /* bumped at each read of it */
};

/* The region's runtime area (its header page) read again. */
static void read_runtime(struct treg *g)
{
	struct uw_runtime rt;
	if (g->path && uw_runtime_read(g->path, &rt) == 0) {
		uw_runtime_free(&g->rt);
		g->rt = rt;
		g->rt_gen++;
	}
}

struct traces {
	struct treg *r;
	size_t nr;
	struct tload *l;
	size_t nl, capl;
	uint32_t maxload;
	/* names read from regions (jsf_view_name), interned: a frame's name
	 * lives as long as the traces (open addressing, a power of 2) */
	char **names;
	size_t nnames, capnames;
};

static void take_load(const struct jd_load *l, void *ctx)
{
	struct traces *t = ctx;
	if (t->nl == t->capl) {
		size_t nc = t->capl ? 2 * t->capl : 256;
		struct tload *n = realloc(t->l, nc * sizeof(*n));
		if (!n)
			return;
		t->l = n;
		t->capl = nc;
	}
	char *nm = strdup(l->name ? l->name : "TRACE");
	if (!nm)
		return;
	uint64_t lo = l->lo, hi = l->hi > l->lo ? l->hi : l->lo + 1;
	t->l[t->nl++] = (struct tload){
	    .lo = lo, .hi = hi, .ts = l->ts, .pid = l->pid, .name = nm};
	if (hi - lo > t->maxload)
		t->maxload = (uint32_t)(hi - lo);
}

static int tl_cmp(const void *a, const void *b)
{
	const struct tload *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

struct traces *traces_new(void)
{
	return calloc(1, sizeof(struct traces));
}

int traces_add_region(struct traces *t, const char *path, char *err,
		      size_t errlen)
{
	struct treg *n = realloc(t->r, (t->nr + 1) * sizeof(*n));
	if (!n) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	t->r = n;
	struct treg *g = &t->r[t->nr];
	memset(g, 0, sizeof(*g));
	int r = jsf_view_open(&g->v, path);
	if (r) {
		snprintf(err, errlen, "%s: %s", path, jsf_strerror(r));
		return r;
	}
	struct jsf_view_info in = {.sz = sizeof(in)};
	if ((r = jsf_view_info(g->v, &in))) {
		snprintf(err, errlen, "%s: %s", path, jsf_strerror(r));
		jsf_view_close(g->v);
		return r;
	}
	g->pid = in.producer_pid;
	g->create_ns = in.create_ns;
	g->close_ns = in.close_ns;
	g->path = strdup(path);
	read_runtime(g);
	t->nr++;
	return 0;
}

void traces_refresh_runtime(struct traces *t)
{
	for (size_t i = 0; t && i < t->nr; i++)
		read_runtime(&t->r[i]);
}

void traces_add_jitdumps(struct traces *t, const char *jdir)
{
	DIR *d = jdir ? opendir(jdir) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (strncmp(de->d_name, "jit-", 4) || l < 9 ||
		    strcmp(de->d_name + l - 5, ".dump"))
			continue;
		char p[4096];
		snprintf(p, sizeof(p), "%s/%s", jdir, de->d_name);
		jd_loads(p, take_load, t);
	}
	if (d)
		closedir(d);
	if (t->nl)
		qsort(t->l, t->nl, sizeof(*t->l), tl_cmp);
}

void traces_add_jitdump_of(struct traces *t, const char *jdir, uint32_t pid)
{
	char p[4096];
	if (!jdir || snprintf(p, sizeof(p), "%s/jit-%u.dump", jdir, pid) >=
			 (int)sizeof(p))
		return;
	size_t before = t->nl;
	jd_loads(p, take_load, t);
	if (t->nl != before)
		qsort(t->l, t->nl, sizeof(*t->l), tl_cmp);
}

struct traces *traces_load(const char *region, const char *jdir, char *err,
			   size_t errlen)
{
	struct traces *t = traces_new();
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (region && traces_add_region(t, region, err, errlen)) {
		traces_free(t);
		return NULL;
	}
	traces_add_jitdumps(t, jdir);
	return t;
}

size_t traces_regions(const struct traces *t)
{
	return t ? t->nr : 0;
}

void traces_free(struct traces *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr; i++) {
		jsf_view_close(t->r[i].v);
		free(t->r[i].path);
		uw_runtime_free(&t->r[i].rt);
	}
	free(t->r);
	for (size_t i = 0; i < t->nl; i++)
		free(t->l[i].name);
	free(t->l);
	for (size_t i = 0; i < t->capnames; i++)
		free(t->names[i]);
	free(t->names);
	free(t);
}

/* The region of process pid at time ts (the one whose producer is pid and
 * whose lifetime holds ts: a pid may be reused), or NULL. */
static const struct treg *treg_of(const struct traces *t, uint32_t pid,
				  uint64_t ts)
{
	const struct treg *best = NULL;
	for (size_t i = 0; t && i < t->nr; i++) {
		const struct treg *g = &t->r[i];
		if (g->pid != pid || (ts && ts < g->create_ns) ||
		    (ts && g->close_ns && ts > g->close_ns))
			continue;
		if (!best || g->create_ns > best->create_ns)
			best = g;
	}
	return best;
}

static const struct jsf_view *region_of(const struct traces *t, uint32_t pid,
					uint64_t ts)
{
	const struct treg *g = treg_of(t, pid, ts);
	return g ? g->v : NULL;
}

static size_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return (size_t)h;
}

/* One stored copy of the string s (NULL: out of memory). */
static const char *intern(struct traces *t, const char *s)
{
	if (2 * (t->nnames + 1) > t->capnames) {
		size_t nc = t->capnames ? 2 * t->capnames : 256;
		char **n = calloc(nc, sizeof(*n));
		if (!n)
			return NULL;
		for (size_t i = 0; i < t->capnames; i++) {
			if (!t->names[i])
				continue;
			size_t h = str_hash(t->names[i]) & (nc - 1);
			while (n[h])
				h = (h + 1) & (nc - 1);
			n[h] = t->names[i];
		}
		free(t->names);
		t->names = n;
		t->capnames = nc;
	}
	size_t h = str_hash(s) & (t->capnames - 1);
	while (t->names[h]) {
		if (!strcmp(t->names[h], s))
			return t->names[h];
		h = (h + 1) & (t->capnames - 1);
	}
	if (!(t->names[h] = strdup(s)))
		return NULL;
	t->nnames++;
	return t->names[h];
}

/* The name the producer published in its region for the function that
 * covered pc at ts (docs/ABI.md 1.4), or NULL (a producer before library
 * 1.1, or one that adds without names: then a jitdump's load names it). */
static const char *region_name(struct traces *t, const struct jsf_view *v,
			       uint64_t pc, uint64_t ts)
{
	char buf[1100];
	if (jsf_view_name(v, pc, ts, buf, sizeof(buf)) <= 0)
		return NULL;
	return intern(t, buf);
}

/* The jitdump name of the code at pc at time ts: the latest load at or
 * before ts whose code covers pc. */
static const char *load_name(struct traces *t, uint32_t pid, uint64_t pc,
			     uint64_t ts)
{
	size_t lo = 0, hi = t->nl;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (t->l[m].lo <= pc)
			lo = m + 1;
		else
			hi = m;
	}
	const struct tload *best = NULL;
	for (size_t k = lo; k > 0; k--) {
		const struct tload *l = &t->l[k - 1];
		if (pc - l->lo >= t->maxload)
			break;
		if (pc < l->hi && l->ts <= ts && l->pid == pid &&
		    (!best || l->ts > best->ts))
			best = l;
	}
	return best ? best->name : NULL;
}

/* ------------------------------------------------------- processes, maps */

struct map {
	uint64_t start, end, pgoff;
	char *name;
	struct elfobj *elf;
	bool file, tried;
};

struct proc {
	uint32_t pid;
	bool used;
	struct map *m;
	size_t n, cap;
	char comm[32];
	char *exe;	/* the executable's path, NULL unknown (uw_exe) */
	bool exec_seen; /* an exec: its first code mapping is the program */
	uint64_t born;	/* its fork or exec in the recording (0: before) */
};

enum { UW_LINES = 16 };

/* frame_at's answers for ELF code, by (object, file offset): the vaddr, the
 * symbol and the row, each a function of the two alone (the object's symbols
 * are read once, its rows are cached and never change once made), for the same
 * few hundred pcs that sample after sample walks through */
enum { UW_MEMO = 1024 };
struct fmemo {
	const struct elfobj *o; /* NULL: empty */
	uint64_t off;		/* the file offset looked up, */
	uint64_t va;		/* its vaddr */
	const char *name;
	uint64_t symoff;
	struct uw_row row;
	/* rt_name's answer for the region rt_g at its rt_gen (NULL: none) */
	const void *rt_g;
	unsigned rt_gen;
	const char *rt_name;
	uint64_t rt_symoff;
};

/* uw_lua_frames' memo, for the views no producer writes any more (a
 * recording's regions): each view's functions as its snapshot logs them
 * (jsf_view_foreach: the log's order, starts, sizes and times), so that
 * the function that covered a pc at a time is found as the view's own
 * lookup finds it (the last in the log starting at or below pc that
 * covers it and was alive then), its source map read once, and the
 * frames at each offset decoded once. Nothing of it is freed before u:
 * the strings stay put. */
struct lfn {
	uint64_t start, add, remove;
	uint32_t size;
	int maplen; /* 0: not read yet; -1: none */
	unsigned char *map;
};
struct lview {
	const struct jsf_view *v;
	struct lfn *f;
	size_t n, cap;
	uint64_t maxsize;
	bool ok; /* indexed: a view nobody writes */
};
struct lmemo {
	uint32_t lv, fi, off;
	int n;
	struct uw_luaframe *fr;
};

struct uwstate {
	struct traces *t;
	struct proc *p; /* open addressing on pid */
	size_t np, capp;
	struct elfcache elfs; /* the ELF objects, their rows and symbols */
	struct ksyms *ksyms;  /* kernel symbols, read on first use */
	char *kpath;	      /* their file (NULL: /proc/kallsyms) */
	uint64_t need_max, need_last, copy_max; /* struct uw_stats */
	uint32_t line[UW_LINES]; /* uw_stack_lines, of the last walk */
	size_t nline;
	void *srcmap; /* uw_lua_frames: the last map read */
	size_t srcmap_cap;
	struct fmemo *memo; /* UW_MEMO of them, made on first use */
	struct lview *lv;   /* uw_lua_frames' memo: the views */
	size_t nlv;
	struct lmemo *lm; /* and the frames, by (view, function, offset) */
	size_t lm_n, lm_cap;
};

struct uwstate *uw_new(struct traces *t, const struct uw_opts *o)
{
	struct uwstate *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->t = t;
	u->capp = 64;
	u->p = calloc(u->capp, sizeof(*u->p));
	if (o)
		u->elfs.no_sframe = o->no_sframe;
	if (!u->p || (o && o->kallsyms && uw_use_kallsyms(u, o->kallsyms))) {
		uw_free(u);
		return NULL;
	}
	return u;
}

int uw_use_kallsyms(struct uwstate *u, const char *path)
{
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	free(u->kpath);
	u->kpath = p;
	return 0;
}

int uw_trim_kallsyms(struct uwstate *u)
{
	return u->ksyms && u->kpath ? ksyms_trim(u->ksyms, u->kpath) : -ENOTSUP;
}

size_t uw_stack_lines(const struct uwstate *u, uint32_t *off, size_t max)
{
	size_t n = u->nline < max ? u->nline : max;
	memcpy(off, u->line, n * sizeof(*off));
	return n;
}

const char *uw_ksym_name(struct uwstate *u, uint64_t addr)
{
	if (!u->ksyms)
		u->ksyms = ksyms_new(u->kpath);
	return ksym_name(u->ksyms, addr);
}

void uw_stats(const struct uwstate *u, struct uw_stats *st)
{
	st->rows_sframe = u->elfs.rows_sframe;
	st->rows_cfi = u->elfs.rows_cfi;
	st->stack_need_max = u->need_max;
	st->stack_need_last = u->need_last;
	st->stack_copy_max = u->copy_max;
}

static void proc_clear(struct proc *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->m[i].name);
	p->n = 0;
	free(p->exe);
	p->exe = NULL;
	p->exec_seen = false;
}

/* An ELF a process runs as its program: ET_EXEC, or ET_DYN with an
 * interpreter (a PIE; ld.so has none). */
static bool elf_is_program(struct elfobj *o)
{
	GElf_Ehdr eh;
	size_t nph;
	if (!o || !o->elf || !gelf_getehdr(o->elf, &eh))
		return false;
	if (eh.e_type == ET_EXEC)
		return true;
	if (eh.e_type != ET_DYN || elf_getphdrnum(o->elf, &nph))
		return false;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(o->elf, (int)i, &ph) && ph.p_type == PT_INTERP)
			return true;
	}
	return false;
}

/* A code mapping of p: is it the program? After an exec, the first one is
 * (the kernel maps the program before its interpreter); for a process
 * seen without its exec (perf's mappings of a running process, in address
 * order) the first that is a program's ELF. */
static void note_exe(struct uwstate *u, struct proc *p, const char *name)
{
	if (p->exe || name[0] != '/')
		return;
	if (!p->exec_seen && !elf_is_program(elfobj_get(&u->elfs, name)))
		return;
	p->exe = strdup(name);
}

void uw_free(struct uwstate *u)
{
	if (!u)
		return;
	for (size_t i = 0; u->p && i < u->capp; i++) {
		proc_clear(&u->p[i]);
		free(u->p[i].m);
	}
	free(u->p);
	elfcache_free(&u->elfs);
	ksyms_free(u->ksyms);
	free(u->kpath);
	free(u->srcmap);
	free(u->memo);
	for (size_t i = 0; i < u->nlv; i++) {
		for (size_t k = 0; k < u->lv[i].n; k++)
			free(u->lv[i].f[k].map);
		free(u->lv[i].f);
	}
	free(u->lv);
	for (size_t i = 0; i < u->lm_cap; i++)
		free(u->lm[i].fr);
	free(u->lm);
	free(u);
}

static struct proc *proc_get(struct uwstate *u, uint32_t pid, bool create)
{
	size_t mask = u->capp - 1, i = (pid * 2654435761u) & mask;
	while (u->p[i].used) {
		if (u->p[i].pid == pid)
			return &u->p[i];
		i = (i + 1) & mask;
	}
	if (!create)
		return NULL;
	if (2 * (u->np + 1) > u->capp) {
		/* grow and rehash */
		struct proc *old = u->p;
		size_t oc = u->capp;
		struct proc *np = calloc(oc * 2, sizeof(*np));
		if (!np)
			return NULL;
		u->p = np;
		u->capp = oc * 2;
		for (size_t k = 0; k < oc; k++) {
			if (!old[k].used)
				continue;
			size_t m2 = u->capp - 1,
			       j = (old[k].pid * 2654435761u) & m2;
			while (u->p[j].used)
				j = (j + 1) & m2;
			u->p[j] = old[k];
		}
		free(old);
		return proc_get(u, pid, true);
	}
	u->p[i].used = true;
	u->p[i].pid = pid;
	u->np++;
	return &u->p[i];
}

const char *uw_exe(struct uwstate *u, uint32_t pid)
{
	struct proc *p = proc_get(u, pid, false);
	return p ? p->exe : NULL;
}

uint64_t uw_born(struct uwstate *u, uint32_t pid)
{
	struct proc *p = proc_get(u, pid, false);
	return p ? p->born : 0;
}

static int map_reserve(struct proc *p, size_t extra)
{
	if (p->n + extra <= p->cap)
		return 0;
	size_t nc = (p->cap ? p->cap * 2 : 32) + extra;
	struct map *nm = realloc(p->m, nc * sizeof(*nm));
	if (!nm)
		return -ENOMEM;
	p->m = nm;
	p->cap = nc;
	return 0;
}

/* Insert a mapping, cutting what it overlaps (the newer mapping wins). */
static int map_add(struct proc *p, uint64_t start, uint64_t end, uint64_t pgoff,
		   const char *name, bool file)
{
	if (end <= start || map_reserve(p, 2))
		return -ENOMEM;
	for (size_t i = 0; i < p->n;) {
		struct map *m = &p->m[i];
		if (m->end <= start || m->start >= end) {
			i++;
			continue;
		}
		if (m->start < start && m->end > end) { /* split */
			struct map tail = *m;
			tail.pgoff += end - m->start;
			tail.start = end;
			tail.name = strdup(m->name);
			m->end = start;
			if (!tail.name)
				return -ENOMEM;
			memmove(p->m + i + 2, p->m + i + 1,
				(p->n - i - 1) * sizeof(*p->m));
			p->m[i + 1] = tail;
			p->n++;
			i += 2;
		} else if (m->start < start) {
			m->end = start;
			i++;
		} else if (m->end > end) {
			m->pgoff += end - m->start;
			m->start = end;
			i++;
		} else {
			free(m->name);
			memmove(p->m + i, p->m + i + 1,
				(p->n - i - 1) * sizeof(*p->m));
			p->n--;
		}
	}
	size_t i = 0;
	while (i < p->n && p->m[i].start < start)
		i++;
	char *nm = strdup(name);
	if (!nm)
		return -ENOMEM;
	memmove(p->m + i + 1, p->m + i, (p->n - i) * sizeof(*p->m));
	p->m[i] = (struct map){start, end, pgoff, nm, NULL, file, false};
	p->n++;
	return 0;
}

static struct map *map_find(struct proc *p, uint64_t pc)
{
	size_t lo = 0, hi = p->n;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (p->m[m].start <= pc)
			lo = m + 1;
		else
			hi = m;
	}
	if (lo > 0 && pc < p->m[lo - 1].end)
		return &p->m[lo - 1];
	return NULL;
}

const char *stop_name(enum stop_reason r)
{
	static const char *const n[STOP__N] = {
	    [STOP_OUTERMOST] = "outermost",
	    [STOP_NO_MAPPING] = "pc in no mapping",
	    [STOP_NO_ELF] = "mapping's file unreadable",
	    [STOP_NO_ROW] = "no CFI row",
	    [STOP_UNSUP_RULE] = "CFI rule outside the row form",
	    [STOP_STACK_SHORT] = "stack copy too short",
	    [STOP_NO_BP] = "rbp needed but unknown",
	    [STOP_LOOP] = "loop (sp did not grow)",
	    [STOP_DEPTH] = "too deep",
	    [STOP_NO_REGS] = "no user registers",
	    [STOP_KERNEL_ONLY] = "kernel only",
	    [STOP_NULL_RA] = "return address 0",
	    [STOP_NO_TRACE] = "pc in anonymous code but in no trace",
	    [STOP_NO_REGION] = "anonymous code, no region for its process",
	};
	return (unsigned)r < STOP__N ? n[r] : "?";
}

static bool file_backed(const char *n)
{
	if (!strcmp(n, "[vdso]"))
		return true;
	/* perf inject's synthetic jitted-PID-N.so: trace code, which the
	 * region describes (an injected perf.data reads like a raw one) */
	const char *b = strrchr(n, '/');
	if (b && !strncmp(b + 1, "jitted-", 7))
		return false;
	return n[0] == '/' && strncmp(n, "/memfd:", 7) &&
	       strncmp(n, "//anon", 6) && strncmp(n, "/dev/zero", 9) &&
	       strncmp(n, "/SYSV", 5);
}

/* Read the 8 bytes at a from the stack copy (which starts at sp0); *need
 * grows to the end of every slot asked for above sp0, read or not. */
static bool rd(const struct pd_sample *s, uint64_t sp0, uint64_t a, uint64_t *v,
	       uint64_t *need)
{
	if (a >= sp0 && a - sp0 <= UINT64_MAX - 8 && a - sp0 + 8 > *need)
		*need = a - sp0 + 8;
	if (a < sp0 || a - sp0 > s->stack_size || s->stack_size - (a - sp0) < 8)
		return false;
	if (s->stack_have && a - sp0 + 8 > *s->stack_have &&
	    pd_stack_need(s, a - sp0 + 8))
		return false;
	memcpy(v, s->stack + (a - sp0), 8);
	return true;
}

/* "Go on": no stop reason (yet). */
#define UW_GO STOP__N

/* A frame the binary's symbols leave unnamed ("[file+0x...]"): the name
 * its process's region gives the function (its FDE's start), if any. The
 * memo keeps the binary's own answer: the region's is per process. */
static void rt_name(struct uwstate *u, uint32_t pid, uint64_t ts,
		    struct elfobj *o, uint64_t va, uint64_t look,
		    struct uframe *f, struct fmemo *fm)
{
	const struct treg *g = treg_of(u->t, pid, ts);
	if (!g || (!g->rt.nn && !g->rt.vm_start))
		return;
	const char *n = NULL;
	uint64_t so = 0;
	if (fm && fm->rt_g == g && fm->rt_gen == g->rt_gen) {
		n = fm->rt_name; /* (the memo's entry is this pc's) */
		so = fm->rt_symoff;
	} else {
		uint64_t s = elfobj_fde_start(o, va);
		if (s != UINT64_MAX) {
			n = uw_runtime_name(&g->rt, look - (va - s));
			so = va - s;
		}
		if (fm) {
			fm->rt_g = g;
			fm->rt_gen = g->rt_gen;
			fm->rt_name = n;
			fm->rt_symoff = so;
		}
	}
	if (n) {
		f->name = n;
		f->symoff = so;
	}
}

/* The frame at pc (look: the address whose row applies, pc - 1 in
 * callers), and its row: from the region for trace code (pc in no
 * file-backed mapping), else from the mapping's ELF object. Returns
 * UW_GO, or why there is no row: STOP_NO_MAPPING (then f is not a
 * frame), STOP_NO_TRACE, STOP_NO_ELF. */
static enum stop_reason frame_at(struct uwstate *u, struct proc *p,
				 uint32_t pid, uint64_t pc, uint64_t look,
				 uint64_t ts, struct uframe *f,
				 struct uw_row *row)
{
	memset(f, 0, sizeof(*f));
	memset(row, 0, sizeof(*row)); /* no row */
	f->pc = pc;
	struct map *m = p ? map_find(p, look) : NULL;
	if (!m || !m->file) {
		/* the function that covered pc at the sample's time, and its
		 * row there (the region's reader) */
		uint64_t fstart = 0;
		uint32_t fsize = 0;
		struct jsf_row trow;
		const struct jsf_view *v = region_of(u->t, pid, ts);
		if (!v ||
		    jsf_view_lookup(v, look, ts, &fstart, &fsize, &trow)) {
			if (!m)
				return STOP_NO_MAPPING;
			/* anonymous code outside every trace */
			f->jit_area = true;
			f->map_start = m->start;
			f->map_end = m->end;
			f->map_name = m->name;
			return v ? STOP_NO_TRACE : STOP_NO_REGION;
		}
		f->is_trace = true;
		f->jit_area = true;
		/* the region's own name for its function first: a jitdump's
		 * load is matched by pid and time only, and a directory can
		 * hold an older process's jitdump under a reused pid */
		f->name = region_name(u->t, v, look, ts);
		if (!f->name)
			f->name = load_name(u->t, pid, look, ts);
		f->symoff = look - fstart;
		f->map_start = fstart;
		f->map_end = fstart + fsize;
		f->map_name = "[jit]";
		uw_row_from_jsf(&trow, row);
		return UW_GO;
	}
	f->map_start = m->start;
	f->map_end = m->end;
	f->map_pgoff = m->pgoff;
	f->map_name = m->name;
	if (!m->tried) {
		m->tried = true;
		m->elf = elfobj_get(&u->elfs, m->name);
	}
	f->elf = m->elf;
	if (!m->elf)
		return STOP_NO_ELF;
	/* the memo by file offset (which gives the vaddr: the object's
	 * load segments never change), so that a hit reads nothing of the
	 * object */
	uint64_t va, off = look - m->start + m->pgoff;
	if (!u->memo)
		u->memo = calloc(UW_MEMO, sizeof(*u->memo));
	uint64_t h = (off ^ (uintptr_t)m->elf) * 0x9e3779b97f4a7c15ull;
	struct fmemo *fm = u->memo ? &u->memo[h >> 54] : NULL;
	if (fm && fm->o == m->elf && fm->off == off) {
		f->vaddr = fm->va + (pc - look);
		f->name = fm->name;
		f->symoff = fm->symoff;
		*row = fm->row;
		if (!f->name || f->name[0] == '[')
			rt_name(u, pid, ts, m->elf, fm->va, look, f, fm);
		return UW_GO;
	}
	if (elfobj_off2vaddr(m->elf, off, &va)) {
		f->vaddr = va + (pc - look);
		f->name = elfobj_sym(m->elf, va, &f->symoff);
		if (!f->name)
			f->name = elfobj_fde_name(m->elf, va);
		const struct uw_row *er = elfobj_row(&u->elfs, m->elf, va);
		*row = *er;
		/* not kept: no name (which may be for want of memory), the
		 * object's scratch row (a row that could not be cached) */
		if (fm && f->name && er != &m->elf->tmp) {
			fm->o = m->elf;
			fm->off = off;
			fm->va = va;
			fm->name = f->name;
			fm->symoff = f->symoff;
			fm->row = *er;
			fm->rt_g = NULL;
		}
		if (!f->name || f->name[0] == '[')
			rt_name(u, pid, ts, m->elf, va, look, f,
				fm && fm->o == m->elf && fm->off == off ? fm
									: NULL);
	}
	return UW_GO;
}

static int unwind(struct uwstate *u, struct proc *p, const struct pd_sample *s,
		  uint64_t ts, struct uframe *fr, enum stop_reason *why,
		  bool popped)
{
	int okip, oksp, okbp;
	uint64_t pc = pd_reg(s, PD_REG_IP, &okip),
		 sp = pd_reg(s, PD_REG_SP, &oksp),
		 bp = pd_reg(s, PD_REG_BP, &okbp);
	if (!okip || !oksp) {
		*why = !s->regs_abi && s->ip >= 0xffff800000000000ull
			   ? STOP_KERNEL_ONLY
			   : STOP_NO_REGS;
		u->need_last = 0;
		return 0;
	}
	uint64_t sp0 = sp, need = 0;
	bool bp_known = okbp;
	u->nline = 0;
	int n = 0;
	enum stop_reason r;
	for (;;) {
		if (n == UW_MAX) {
			r = STOP_DEPTH;
			break;
		}
		/* the row for pc */
		struct uw_row row;
		r = frame_at(u, p, s->pid, pc, n ? pc - 1 : pc, ts, &fr[n],
			     &row);
		fr[n].sp = sp;
		if (r != STOP_NO_MAPPING)
			n++;
		if (r != UW_GO)
			break;
		if (row.ra_rule == UW_RA_UNDEF) {
			r = STOP_OUTERMOST;
			break;
		}
		if (row.cfa_rule == UW_CFA_NONE) {
			r = STOP_NO_ROW;
			break;
		}
		/* the CFA */
		uint64_t cfa;
		if (row.cfa_rule == UW_CFA_FP && !bp_known) {
			r = STOP_NO_BP;
			break;
		}
		if (row.cfa_rule == UW_CFA_SP || row.cfa_rule == UW_CFA_FP) {
			cfa = (row.cfa_rule == UW_CFA_SP ? sp : bp) +
			      (uint64_t)(int64_t)row.cfa_off;
		} else if (row.cfa_rule != UW_CFA_EXPR ||
			   !uw_expr_eval(&row, sp, bp, pc, &cfa)) {
			r = STOP_UNSUP_RULE;
			break;
		}
		/* the caller's RA and FP */
		uint64_t ra, nbp = bp;
		bool nbp_known = bp_known;
		if (!rd(s, sp0, cfa + (uint64_t)(int64_t)row.ra_off, &ra,
			&need)) {
			r = STOP_STACK_SHORT;
			break;
		}
		/* read: inside the copy, so above sp0 and below 2^32 */
		uint32_t ln =
		    (uint32_t)((cfa + (uint64_t)(int64_t)row.ra_off - sp0) &
			       ~(uint64_t)63);
		if (u->nline < UW_LINES &&
		    (!u->nline || u->line[u->nline - 1] != ln))
			u->line[u->nline++] = ln;
		if (popped && row.fp_rule == UW_FP_CFA &&
		    cfa + (uint64_t)(int64_t)row.fp_off < sp) {
			/* the slot is below the frame's sp: an epilogue has
			 * popped it already (GCC's CFI keeps the save rule
			 * until the return), so rbp holds what it held, and
			 * a copy that starts at sp lacks the slot (for
			 * uw_unwind_regs only: report's walks of perf.data
			 * stay as they were) */
		} else if (row.fp_rule == UW_FP_CFA) {
			nbp_known =
			    rd(s, sp0, cfa + (uint64_t)(int64_t)row.fp_off,
			       &nbp, &need);
		}
		if (cfa <= sp) {
			r = STOP_LOOP;
			break;
		}
		if (ra == 0) {
			r = STOP_NULL_RA;
			break;
		}
		/* the next frame */
		sp = cfa;
		pc = ra;
		bp = nbp;
		bp_known = nbp_known;
	}
	*why = r;
	u->need_last = need;
	if (r == STOP_OUTERMOST && need > u->need_max)
		u->need_max = need;
	if (s->stack_size > u->copy_max)
		u->copy_max = s->stack_size;
	return n;
}

int uw_event(struct uwstate *u, const struct pd_event *e, struct uframe *fr,
	     enum stop_reason *why, const char **comm)
{
	switch (e->kind) {
	case PD_MMAP: {
		const struct pd_mmap *m = &e->u.m;
		if (m->pid == UINT32_MAX) /* kernel maps */
			return -1;
		struct proc *p = proc_get(u, m->pid, true);
		if (!p)
			return -1;
		bool exec = (m->prot & PROT_EXEC) != 0;
		if (m->len && m->start + m->len > m->start)
			map_add(p, m->start, m->start + m->len, m->pgoff,
				m->filename, exec && file_backed(m->filename));
		if (exec && file_backed(m->filename))
			note_exe(u, p, m->filename);
		if (!exec) { /* data mappings only cut older code mappings */
			struct map *x = map_find(p, m->start);
			if (x && x->start == m->start &&
			    x->end == m->start + m->len) {
				size_t i = (size_t)(x - p->m);
				free(x->name);
				memmove(p->m + i, p->m + i + 1,
					(p->n - i - 1) * sizeof(*p->m));
				p->n--;
			}
		}
		return -1;
	}
	case PD_COMM: {
		struct proc *p = proc_get(u, e->u.comm.pid, true);
		if (p && e->u.comm.pid == e->u.comm.tid) {
			snprintf(p->comm, sizeof(p->comm), "%s",
				 e->u.comm.comm);
			if (e->u.comm.exec) {
				proc_clear(p);
				p->exec_seen = true;
				p->born = e->time;
			}
		}
		return -1;
	}
	case PD_FORK: {
		if (e->u.fork.pid == e->u.fork.ppid)
			return -1; /* a new thread */
		struct proc *c = proc_get(u, e->u.fork.pid, true);
		/* looked up after c: creating c may move the table */
		struct proc *pp = proc_get(u, e->u.fork.ppid, false);
		if (!c || !pp || c == pp)
			return -1;
		proc_clear(c);
		c->born = e->time;
		memcpy(c->comm, pp->comm, sizeof(c->comm));
		c->exe = pp->exe ? strdup(pp->exe) : NULL;
		if (map_reserve(c, pp->n))
			return -1;
		for (size_t i = 0; i < pp->n; i++) {
			c->m[i] = pp->m[i];
			c->m[i].name = strdup(pp->m[i].name);
			if (!c->m[i].name)
				c->m[i].name = strdup("");
			c->n++;
		}
		return -1;
	}
	case PD_EXIT:
		return -1;
	case PD_SAMPLE: {
		struct proc *p = proc_get(u, e->u.s.pid, false);
		*comm = p && p->comm[0] ? p->comm : "[unknown]";
		return unwind(u, p, &e->u.s, e->time, fr, why, false);
	}
	}
	return -1;
}

/* ------------------------------------------------------- live processes */

/* Does [lo, hi) meet any of the n mappings? */
static bool maps_overlap(const struct pd_mmap *ms, size_t n, uint64_t lo,
			 uint64_t hi)
{
	for (size_t i = 0; i < n; i++)
		if (ms[i].start < hi && lo < ms[i].start + ms[i].len)
			return true;
	return false;
}

int uw_proc_maps(struct uwstate *u, uint32_t pid, const char *maps)
{
	char path[64], line[4096 + 256];
	if (!maps) {
		snprintf(path, sizeof(path), "/proc/%u/maps", pid);
		maps = path;
	}
	FILE *f = fopen(maps, "re");
	if (!f)
		return -errno;
	struct proc *p = proc_get(u, pid, true);
	if (!p) {
		fclose(f);
		return -ENOMEM;
	}
	/* the whole file first: a process that is exiting (its mm gone)
	 * reads as no mapping at all, and must not wipe what was known */
	struct pd_mmap *ms = NULL;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int err = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8];
		int name_at = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi,
			   perms, &off, &name_at) < 4 ||
		    !name_at)
			continue;
		char *name = line + name_at;
		name[strcspn(name, "\n")] = 0;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct pd_mmap *nm = realloc(ms, nc * sizeof(*nm));
			char **nn =
			    nm ? realloc(names, nc * sizeof(*nn)) : NULL;
			if (nm)
				ms = nm;
			if (!nn) {
				err = -ENOMEM;
				break;
			}
			names = nn;
			cap = nc;
		}
		names[n] = strdup(name[0] ? name : "//anon");
		if (!names[n]) {
			err = -ENOMEM;
			break;
		}
		ms[n++] = (struct pd_mmap){
		    .pid = pid,
		    .tid = pid,
		    .start = lo,
		    .len = hi - lo,
		    .pgoff = off,
		    .prot = (perms[0] == 'r' ? PROT_READ : 0) |
			    (perms[1] == 'w' ? PROT_WRITE : 0) |
			    (perms[2] == 'x' ? PROT_EXEC : 0)};
	}
	if (!err && n) {
		/* Code mappings gone since the last read (a library dlclose'd:
		 * the VM module at lua_close, as the process exits) stay for
		 * the samples taken while they were mapped, which are
		 * symbolized later; not where a mapping read now overlaps them,
		 * nor when the program is another (an exec) */
		/* (their names and the old program's taken over: proc_clear
		 * frees what is left) */
		size_t ng = 0;
		struct map *gh = p->n ? malloc(p->n * sizeof(*gh)) : NULL;
		char *oexe = p->exe;
		p->exe = NULL;
		for (size_t i = 0; gh && i < p->n; i++) {
			struct map *o = &p->m[i];
			if (o->file && !maps_overlap(ms, n, o->start, o->end)) {
				gh[ng++] = *o;
				o->name = NULL;
			}
		}
		proc_clear(p);
		for (size_t i = 0; i < n; i++) {
			struct pd_event e = {.kind = PD_MMAP};
			e.u.m = ms[i];
			e.u.m.filename = names[i];
			uw_event(u, &e, NULL, NULL, NULL);
		}
		bool same = oexe && p->exe && !strcmp(oexe, p->exe);
		for (size_t i = 0; i < ng; i++) {
			if (same)
				map_add(p, gh[i].start, gh[i].end, gh[i].pgoff,
					gh[i].name, true);
			free(gh[i].name);
		}
		free(gh);
		free(oexe);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(ms);
	if (err) {
		fclose(f);
		return err;
	}
	fclose(f);
	if (maps == path) {
		snprintf(path, sizeof(path), "/proc/%u/comm", pid);
		FILE *c = fopen(path, "re");
		if (c && fgets(p->comm, sizeof(p->comm), c))
			p->comm[strcspn(p->comm, "\n")] = 0;
		if (c)
			fclose(c);
	}
	return 0;
}

bool uw_frame_at(struct uwstate *u, uint32_t pid, uint64_t pc, bool caller,
		 uint64_t ts, struct uframe *f, enum stop_reason *why)
{
	struct uw_row row;
	struct proc *p = proc_get(u, pid, false);
	enum stop_reason r =
	    frame_at(u, p, pid, pc, caller ? pc - 1 : pc, ts, f, &row);
	if (why)
		*why = r;
	return r == UW_GO;
}

int uw_unwind_regs(struct uwstate *u, uint32_t pid, uint32_t tid, uint64_t ts,
		   const struct uw_regs *r, const void *stack, size_t len,
		   struct uframe *fr, enum stop_reason *why)
{
	/* a perf sample's form: user registers bp, sp, ip (bit order) */
	uint64_t regs[3] = {r->bp, r->sp, r->ip};
	struct pd_sample s = {
	    .pid = pid,
	    .tid = tid,
	    .time = ts,
	    .ip = r->ip,
	    .regs_abi = 2, /* PERF_SAMPLE_REGS_ABI_64 */
	    .regs_mask =
		1ull << PD_REG_BP | 1ull << PD_REG_SP | 1ull << PD_REG_IP,
	    .regs = (const unsigned char *)regs,
	    .stack_size = len,
	    .stack = stack,
	};
	return unwind(u, proc_get(u, pid, false), &s, ts, fr, why, true);
}

/* The source map of trace frame f's function (its region's at ts) in
 * u->srcmap, grown to fit: its length, and in *off the offset in it of the
 * address the frame's lookup used (callers: pc - 1); 0 when there is none
 * or it is not the function the walk found. */
static int frame_srcmap(struct uwstate *u, uint32_t pid, uint64_t ts,
			const struct uframe *f, uint32_t *off)
{
	const struct jsf_view *v = region_of(u->t, pid, ts);
	if (!v)
		return 0;
	uint64_t look = f->map_start + f->symoff, fstart = 0;
	int len;
	for (;;) {
		len = jsf_view_srcmap(v, look, ts, u->srcmap, u->srcmap_cap,
				      &fstart);
		if (len <= 0)
			return 0;
		if ((size_t)len <= u->srcmap_cap)
			break;
		void *n = realloc(u->srcmap, (size_t)len);
		if (!n)
			return 0;
		u->srcmap = n;
		u->srcmap_cap = (size_t)len;
	}
	if (fstart != f->map_start || look - fstart > UINT32_MAX)
		return 0;
	*off = (uint32_t)(look - fstart);
	return len;
}

static int lview_add(const struct jsf_func *f, void *ctx)
{
	struct lview *l = ctx;
	if (l->n == l->cap) {
		size_t nc = l->cap ? 2 * l->cap : 256;
		struct lfn *n = realloc(l->f, nc * sizeof(*n));
		if (!n)
			return -ENOMEM;
		l->f = n;
		l->cap = nc;
	}
	l->f[l->n++] =
	    (struct lfn){f->start, f->add_ns, f->remove_ns, f->size, 0, NULL};
	if (f->size > l->maxsize)
		l->maxsize = f->size;
	return 0;
}

/* The memo's view v (indexed if nobody writes it), or NULL: no memory */
static struct lview *lview_get(struct uwstate *u, const struct jsf_view *v,
			       uint32_t *idx)
{
	for (size_t i = 0; i < u->nlv; i++)
		if (u->lv[i].v == v) {
			*idx = (uint32_t)i;
			return &u->lv[i];
		}
	struct lview *n = realloc(u->lv, (u->nlv + 1) * sizeof(*n));
	if (!n)
		return NULL;
	u->lv = n;
	struct lview *l = &u->lv[u->nlv];
	memset(l, 0, sizeof(*l));
	l->v = v;
	struct jsf_view_info in = {.sz = sizeof(in)};
	if (!jsf_view_info(v, &in) && !in.live) {
		if (jsf_view_foreach(v, JSF_ALL, lview_add, l)) {
			free(l->f);
			l->f = NULL;
			l->n = l->cap = 0;
		} else {
			l->ok = true;
		}
	}
	*idx = (uint32_t)u->nlv++;
	return l;
}

/* The view's lookup (sf_snap_find): the last function in the log that
 * starts at or below pc, covers it and was alive at t; -1 none */
static long lview_find(const struct lview *l, uint64_t pc, uint64_t t)
{
	size_t a = 0, b = l->n;
	while (a < b) {
		size_t m = a + (b - a) / 2;
		if (l->f[m].start <= pc)
			a = m + 1;
		else
			b = m;
	}
	while (a-- > 0) {
		const struct lfn *e = &l->f[a];
		if (pc - e->start >= l->maxsize)
			break;
		bool alive =
		    t == 0 ? e->remove == 0
			   : e->add <= t && (e->remove == 0 || t < e->remove);
		if (pc - e->start < e->size && alive)
			return (long)a;
	}
	return -1;
}

static size_t lm_slot(uint32_t lv, uint32_t fi, uint32_t off, size_t cap)
{
	uint64_t h = ((uint64_t)lv << 48 ^ (uint64_t)fi << 24 ^ off) *
		     0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 32) & (cap - 1);
}

size_t uw_lua_label(char *dst, const char *file, size_t fl, uint32_t first)
{
	char num[16];
	size_t nd = 0;
	do
		num[nd++] = (char)('0' + first % 10);
	while ((first /= 10));
	memcpy(dst, file, fl);
	dst[fl] = ':';
	for (size_t d = 0; d < nd; d++)
		dst[fl + 1 + d] = num[nd - 1 - d];
	dst[fl + 1 + nd] = 0;
	return fl + 1 + nd;
}

/* The decoded frames of function fi of view lv at offset off, made once
 * (with their "file:first"); NULL: no memory */
static struct lmemo *lm_get(struct uwstate *u, uint32_t lv, uint32_t fi,
			    uint32_t off, const struct lfn *e)
{
	if (u->lm_cap) {
		size_t h = lm_slot(lv, fi, off, u->lm_cap);
		while (u->lm[h].fr) {
			struct lmemo *m = &u->lm[h];
			if (m->lv == lv && m->fi == fi && m->off == off)
				return m;
			h = (h + 1) & (u->lm_cap - 1);
		}
	}
	if (2 * (u->lm_n + 1) > u->lm_cap) {
		size_t nc = u->lm_cap ? 2 * u->lm_cap : 1024;
		struct lmemo *t = calloc(nc, sizeof(*t));
		if (!t)
			return NULL;
		for (size_t i = 0; i < u->lm_cap; i++) {
			if (!u->lm[i].fr)
				continue;
			size_t h =
			    lm_slot(u->lm[i].lv, u->lm[i].fi, u->lm[i].off, nc);
			while (t[h].fr)
				h = (h + 1) & (nc - 1);
			t[h] = u->lm[i];
		}
		free(u->lm);
		u->lm = t;
		u->lm_cap = nc;
	}
	struct jsf_srcframe sf[64];
	uint32_t flags = 0;
	int n =
	    jsf_srcmap_frames(e->map, (size_t)e->maplen, off, sf, 64, &flags);
	if (n <= 0 || !(flags & JSF_SRCMAP_EXACT))
		n = 0;
	if (n > 64)
		n = 64;
	/* the frames, then their "file:first" strings */
	size_t need = (size_t)(n ? n : 1) * sizeof(struct uw_luaframe);
	for (int i = 0; i < n; i++)
		need += strlen(sf[i].file ? sf[i].file : "(null)") + 12;
	struct uw_luaframe *fr = malloc(need);
	if (!fr)
		return NULL;
	char *str = (char *)(fr + (n ? n : 1));
	for (int i = 0; i < n; i++) {
		const char *file = sf[i].file ? sf[i].file : "(null)";
		size_t fl = strlen(file);
		size_t w = uw_lua_label(str, file, fl, sf[i].first);
		fr[i] = (struct uw_luaframe){
		    sf[i].file, sf[i].name,  sf[i].line,  sf[i].first,
		    str,	(uint32_t)w, (uint32_t)fl};
		str += w + 1;
	}
	size_t h = lm_slot(lv, fi, off, u->lm_cap);
	while (u->lm[h].fr)
		h = (h + 1) & (u->lm_cap - 1);
	u->lm[h] = (struct lmemo){lv, fi, off, n, fr};
	u->lm_n++;
	return &u->lm[h];
}

/* no Lua frames (uw_lua_key's key for them) */
static const char lua_none;

/* uw_lua_frames' memo entry for f: its decoded frames; *none set (NULL
 * returned) where there are none, NULL with *none clear where the memo
 * cannot say (the view is written to, or no memory) */
static struct lmemo *lua_entry(struct uwstate *u, uint32_t pid, uint64_t ts,
			       const struct uframe *f, bool *none)
{
	*none = true;
	const struct jsf_view *v = region_of(u->t, pid, ts);
	if (!v)
		return NULL;
	uint32_t lvi;
	struct lview *l = lview_get(u, v, &lvi);
	*none = false;
	if (!l || !l->ok)
		return NULL;
	*none = true;
	uint64_t look = f->map_start + f->symoff;
	long fi = lview_find(l, look, ts);
	if (fi < 0)
		return NULL; /* no function there then */
	struct lfn *e = &l->f[fi];
	if (e->start != f->map_start || look - e->start > UINT32_MAX ||
	    fi > (long)UINT32_MAX)
		return NULL;
	if (!e->maplen) {
		uint64_t fs = 0;
		int len = jsf_view_srcmap(v, look, ts, NULL, 0, &fs);
		if (len <= 0) {
			e->maplen = -1;
		} else {
			*none = false;
			unsigned char *m = malloc((size_t)len);
			if (!m)
				return NULL;
			if (jsf_view_srcmap(v, look, ts, m, (size_t)len, &fs) !=
				len ||
			    fs != e->start) {
				free(m);
				return NULL;
			}
			e->map = m;
			e->maplen = len;
			*none = true;
		}
	}
	if (e->maplen < 0)
		return NULL;
	*none = false;
	return lm_get(u, lvi, (uint32_t)fi, (uint32_t)(look - e->start), e);
}

/* uw_lua_frames from the memo: the frames' count, or -2 (no memo for
 * this one: the view is written to, or no memory) */
static int lua_memo(struct uwstate *u, uint32_t pid, uint64_t ts,
		    const struct uframe *f, struct uw_luaframe *out, int max)
{
	bool none;
	struct lmemo *m = lua_entry(u, pid, ts, f, &none);
	if (!m)
		return none ? 0 : -2;
	int n = m->n < max ? m->n : max;
	memcpy(out, m->fr, (size_t)n * sizeof(*out));
	return n;
}

int uw_lua_frames(struct uwstate *u, uint32_t pid, uint64_t ts,
		  const struct uframe *f, struct uw_luaframe *out, int max)
{
	if (!f->is_trace || max <= 0)
		return 0;
	int mn = lua_memo(u, pid, ts, f, out, max);
	if (mn != -2)
		return mn;
	uint32_t off;
	int len = frame_srcmap(u, pid, ts, f, &off);
	if (len <= 0)
		return 0;
	struct jsf_srcframe sf[64];
	uint32_t flags = 0;
	int n = jsf_srcmap_frames(u->srcmap, (size_t)len, off, sf, 64, &flags);
	if (n <= 0 || !(flags & JSF_SRCMAP_EXACT))
		return 0;
	if (n > 64)
		n = 64;
	if (n > max)
		n = max;
	for (int i = 0; i < n; i++)
		out[i] = (struct uw_luaframe){
		    sf[i].file, sf[i].name, sf[i].line, sf[i].first,
		    NULL,	0,	    0};
	return n;
}

const void *uw_lua_key(struct uwstate *u, uint32_t pid, uint64_t ts,
		       const struct uframe *f)
{
	if (!f->is_trace)
		return &lua_none;
	bool none;
	const struct lmemo *m = lua_entry(u, pid, ts, f, &none);
	return m ? (const void *)m->fr : none ? &lua_none : NULL;
}

int uw_trace_loop(struct uwstate *u, uint32_t pid, uint64_t ts,
		  const struct uframe *f)
{
	if (!f->is_trace)
		return -1;
	uint32_t off;
	int len = frame_srcmap(u, pid, ts, f, &off);
	if (len <= 0)
		return -1;
	uint32_t flags = 0;
	if (jsf_srcmap_frames(u->srcmap, (size_t)len, off, NULL, 0, &flags) <
		0 ||
	    !(flags & JSF_SRCMAP_LOOPS))
		return -1;
	return (flags & JSF_SRCMAP_LOOP) != 0;
}

const char *uw_comm(struct uwstate *u, uint32_t pid)
{
	struct proc *p = proc_get(u, pid, false);
	return p && p->comm[0] ? p->comm : NULL;
}
