/* SPDX-License-Identifier: MIT */
/*
 * Hostile input: damaged, truncated, forged and foreign files given to the
 * reader (jsf_view_*) and the validators. Nothing may crash or hang; every
 * open fails with a negative errno and a message or succeeds, every lookup
 * answers 0 / -ENOENT (-EBADMSG / -EAGAIN live) with a sane row, and the
 * validators reject, naming the problem, every corruption that changes the
 * meaning of the file.
 *
 * A valid region is built with the producer API; its bytes are then
 * truncated, overwritten field by field (every region header, section block
 * and SFrame header field, FDEs, FREs, the function log) and bit-flipped,
 * post-mortem and under a live producer. Raw V3 sections exported from it
 * are broken once per rule the proposed kernel unwinder checks
 * (shared/reference/sframe.md).
 *
 * Six cases were first written as failing reproducers of library bugs
 * (stale error text, FIFO hang, unaligned FDE window, SIGBUS on a lying
 * live header, shared FRE records, FRE sub-section inside the FDEs); they
 * now guard the fixes.
 */
#include "harness.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[256];

static const char *tpath(const char *name)
{
	static char p[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", dir, name);
	return p[k];
}

static uint64_t get(const uint8_t *p, unsigned w)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < w; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void put(uint8_t *p, uint64_t v, unsigned w)
{
	for (unsigned i = 0; i < w; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void write_bytes(const char *path, const uint8_t *b, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t done = 0;
	while (fd >= 0 && done < len) {
		ssize_t w = write(fd, b + done, len - done);
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	if (fd < 0 || done != len) {
		printf("# cannot write %s\n", path);
		exit(2);
	}
	close(fd);
}

static void pwrite_all(int fd, const uint8_t *b, size_t len, off_t off)
{
	if (pwrite(fd, b, len, off) != (ssize_t)len) {
		printf("# pwrite failed\n");
		exit(2);
	}
}

/* ----------------------------------------------------- the valid region */

struct mf {
	uint64_t start, add, remove;
	uint32_t size, nrows;
	struct jsf_row rows[4];
};

#define B0 0x7f0000001000ull
static struct mf fn[] = {
    /* live at the end, in address order: A B C D */
    {.start = B0,
     .size = 1,
     .nrows = 1,
     .rows = {{0, JSF_SP, 8, false, 0, false}}},
    {.start = B0 + 0x10,
     .size = 200,
     .nrows = 4,
     .rows = {{0, JSF_SP, 8, false, 0, false},
	      {1, JSF_SP, 16, false, 0, false},
	      {4, JSF_FP, 16, true, -16, false},
	      {100, 0, 0, false, 0, true}}},
    {.start = B0 + 0x100,
     .size = 300,
     .nrows = 3,
     .rows = {{0, JSF_SP, 8, false, 0, false},
	      {260, JSF_SP, 0x1234, false, 0, false},
	      {299, JSF_FP, 16, true, -16, false}}},
    {.start = B0 + 0x1000,
     .size = 70000,
     .nrows = 2,
     .rows = {{0, JSF_SP, 8, false, 0, false},
	      {65541, JSF_SP, 1 << 20, true, -(1 << 20), false}}},
    /* history: H1 apart, H2 where B is now */
    {.start = B0 + 0x20000,
     .size = 64,
     .nrows = 1,
     .rows = {{0, JSF_SP, 8, false, 0, false}}},
    {.start = B0 + 0x10,
     .size = 100,
     .nrows = 2,
     .rows = {{0, JSF_SP, 8, false, 0, false},
	      {50, JSF_FP, 16, true, -16, false}}},
};
enum { FA, FB, FC, FD, FH1, FH2, NF };
static const char *fname[] = {"A", "B", "C", "D", "H1", "H2"};

static uint8_t *orig; /* the closed region's bytes */
static size_t orig_len;
static uint64_t last_time;

/* Where things are in orig (or any copy of it). */
static struct {
	uint64_t sec, total, sf, fde0, fre0, log0, base;
	uint32_t fde_cap, fre_cap, log_cap, log_n, log_off;
	uint32_t nf, nfres, fre_len, fdeoff, freoff;
	uint32_t le[NF]; /* log index of each function */
} L;

static void layout(const uint8_t *b)
{
	L.sec = get(b + RH_SEC_OFF, 8);
	L.base = get(b + RH_PRODUCER_BASE, 8);
	const uint8_t *blk = b + L.sec;
	L.total = get(blk + SB_TOTAL, 8);
	L.fde_cap = (uint32_t)get(blk + SB_FDE_CAP, 4);
	L.fre_cap = (uint32_t)get(blk + SB_FRE_CAP, 4);
	L.log_cap = (uint32_t)get(blk + SB_LOG_CAP, 4);
	L.log_n = (uint32_t)get(blk + SB_LOG_N, 4);
	L.log_off = (uint32_t)get(blk + SB_LOG_OFF, 4);
	L.sf = L.sec + SF_SHDR_SIZE;
	const uint8_t *sf = b + L.sf;
	L.nf = (uint32_t)get(sf + SH_NUM_FDES, 4);
	L.nfres = (uint32_t)get(sf + SH_NUM_FRES, 4);
	L.fre_len = (uint32_t)get(sf + SH_FRE_LEN, 4);
	L.fdeoff = (uint32_t)get(sf + SH_FDEOFF, 4);
	L.freoff = (uint32_t)get(sf + SH_FREOFF, 4);
	L.fde0 = L.sf + SFRAME_HDR_SIZE + L.fdeoff;
	L.fre0 = L.sf + SFRAME_HDR_SIZE + L.freoff;
	L.log0 = L.sec + L.log_off;
	for (int i = 0; i < NF; i++) {
		L.le[i] = UINT32_MAX;
		for (uint32_t k = 0; k < L.log_n; k++) {
			const uint8_t *e = b + L.log0 + (uint64_t)k * 32;
			if (get(e + LE_START, 8) == fn[i].start &&
			    get(e + LE_ADD, 8) == fn[i].add)
				L.le[i] = k;
		}
	}
}

/* Offset in the file of a function's log entry / attribute record. */
static uint64_t le_off(int f)
{
	return L.log0 + (uint64_t)L.le[f] * SF_LOG_ENTRY_SIZE;
}
static uint64_t attr_off(const uint8_t *b, int f)
{
	return L.fre0 + get(b + le_off(f) + LE_ATTR, 4);
}

/* Build the region; leaves it open (live) when keep is set. */
static struct jsf_region *build(const char *path, bool keep)
{
	struct jsf_region *r;
	struct jsf_region_opts o = {
	    .sz = sizeof(o), .max_size = 1 << 20, .flags = JSF_REGION_REPLACE};
	uint64_t t = 100;
	int rc = jsf_region_create(&r, path, &o);
	CHECK_EQ(rc, 0);
	if (rc)
		exit(2);
	/* not in address order: exercises the seqlock rewrite path */
	static const int order[] = {FD, FA, FC, FH2, -FH2, FB, FH1, -FH1};
	for (unsigned i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		t += 10;
		if (order[i] < 0) {
			fn[-order[i]].remove = t;
			CHECK_EQ(jsf_region_remove(r, fn[-order[i]].start, t),
				 0);
			continue;
		}
		struct mf *f = &fn[order[i]];
		f->add = t;
		f->remove = 0;
		CHECK_EQ(
		    jsf_region_add(r, f->start, f->size, f->rows, f->nrows, t),
		    0);
	}
	CHECK_EQ(jsf_region_compact(r), 0); /* leaves an old block behind */
	last_time = t;
	if (!keep) {
		jsf_region_destroy(r);
		r = NULL;
	}
	return r;
}

static uint8_t *read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		exit(2);
	uint8_t *b = malloc((size_t)st.st_size + 1);
	if (!b || pread(fd, b, (size_t)st.st_size, 0) != st.st_size)
		exit(2);
	close(fd);
	*len = (size_t)st.st_size;
	return b;
}

/* ------------------------------------------------------------ the probe */

static bool model_alive(const struct mf *f, uint64_t t)
{
	if (t == 0)
		return f->remove == 0;
	return f->add <= t && (f->remove == 0 || t < f->remove);
}

static bool row_eq(const struct jsf_row *a, const struct jsf_row *b)
{
	if (a->offset != b->offset || a->outermost != b->outermost)
		return false;
	if (a->outermost)
		return true;
	return a->cfa_base == b->cfa_base && a->cfa_offset == b->cfa_offset &&
	       a->has_fp == b->has_fp &&
	       (!a->has_fp || a->fp_offset == b->fp_offset);
}

#define MAXIT 64
struct it {
	uint32_t n, kept;
	struct jsf_func f[MAXIT];
	struct jsf_row rows[MAXIT][8];
	uint64_t prev, nrows_total;
	int bad;
};

static int it_cb(const struct jsf_func *f, void *ctx)
{
	struct it *w = ctx;
	bool ok = f->size && f->nrows && f->nrows <= f->size && f->rows &&
		  f->start + f->size > f->start &&
		  (!w->n || f->start >= w->prev) &&
		  (!f->remove_ns || f->remove_ns >= f->add_ns);
	for (uint32_t i = 0; ok && i < f->nrows; i++) {
		const struct jsf_row *r = &f->rows[i];
		ok = r->offset < f->size &&
		     (i ? r->offset > f->rows[i - 1].offset : r->offset == 0) &&
		     (r->outermost || r->cfa_base == JSF_SP ||
		      r->cfa_base == JSF_FP);
	}
	if (!ok)
		w->bad++;
	if (w->kept < MAXIT) {
		w->f[w->kept] = *f;
		uint32_t k = f->nrows < 8 ? f->nrows : 8;
		memcpy(w->rows[w->kept], f->rows, k * sizeof(*f->rows));
		w->f[w->kept].nrows = k;
		w->f[w->kept].rows = NULL;
		w->kept++;
	}
	w->prev = f->start;
	w->nrows_total += f->nrows;
	w->n++;
	return 0;
}

struct probe {
	int open_rc, val_rc;
	char open_msg[512], msg[512];
	bool gave_up;	 /* a live lookup answered -EAGAIN: the rest skipped */
	int lookups_bad; /* lookups that failed on a validated region */
	int ebadmsg;	 /* lookups that answered -EBADMSG */
};

/* One lookup with every sanity check; returns its rc. */
static int lookup(struct probe *p, const struct jsf_view *v, bool live,
		  uint64_t pc, uint64_t t, uint64_t *fs, uint32_t *fz,
		  struct jsf_row *row)
{
	*fs = 0;
	*fz = 0;
	memset(row, 0, sizeof(*row));
	if (p->gave_up)
		return -EAGAIN;
	int rc = jsf_view_lookup(v, pc, t, fs, fz, row);
	if (live)
		CHECK(rc == 0 || rc == -ENOENT || rc == -EBADMSG ||
			  rc == -EAGAIN,
		      "live lookup %#llx t %llu: rc %d", (unsigned long long)pc,
		      (unsigned long long)t, rc);
	else
		CHECK(rc == 0 || rc == -ENOENT,
		      "post-mortem lookup %#llx t %llu: rc %d",
		      (unsigned long long)pc, (unsigned long long)t, rc);
	if (rc == -EAGAIN)
		p->gave_up = true;
	if (rc == -EBADMSG)
		p->ebadmsg++;
	if (rc == 0) {
		CHECK(*fz && pc - *fs < *fz && row->offset < *fz &&
			  row->offset <= pc - *fs &&
			  (row->outermost || row->cfa_base == JSF_SP ||
			   row->cfa_base == JSF_FP),
		      "lookup %#llx: insane answer %#llx+%u row %u base %u",
		      (unsigned long long)pc, (unsigned long long)*fs, *fz,
		      row->offset, row->cfa_base);
	}
	return rc;
}

static void exercise(struct probe *p, const struct jsf_view *v, bool live,
		     bool pristine)
{
	struct jsf_view_info info = {.sz = sizeof(info)};
	int rc = jsf_view_info(v, &info);
	CHECK(rc == 0 || (live && (rc == -EBADMSG || rc == -EAGAIN)),
	      "view_info: %d", rc);
	if (rc == 0)
		CHECK(info.live == live && info.live_funcs <= info.logged_funcs,
		      "view_info: live %d (want %d), %u live of %u", info.live,
		      live, info.live_funcs, info.logged_funcs);
	static struct it all, now;
	memset(&all, 0, sizeof(all));
	memset(&now, 0, sizeof(now));
	int fa = jsf_view_foreach(v, JSF_ALL, it_cb, &all);
	int fl = jsf_view_foreach(v, 0, it_cb, &now);
	CHECK(fa == fl && (fa == 0 || live), "foreach: %d / %d", fa, fl);
	CHECK(!all.bad && !now.bad, "foreach: %d+%d malformed functions",
	      all.bad, now.bad);

	uint64_t fs;
	uint32_t fz;
	struct jsf_row row;
	uint64_t times[] = {0, 1, 115, 135, 145, 175, last_time, JSF_ALL};
	for (unsigned ti = 0; ti < sizeof(times) / sizeof(times[0]); ti++) {
		uint64_t t = times[ti];
		for (int i = 0; i < NF; i++) {
			const struct mf *f = &fn[i];
			uint64_t pcs[] = {f->start - 1, f->start,
					  f->start + f->size - 1,
					  f->start + f->size};
			for (unsigned k = 0; k < 4; k++) {
				rc = lookup(p, v, live, pcs[k], t, &fs, &fz,
					    &row);
				if (!pristine)
					continue;
				const struct mf *g = NULL;
				for (int j = 0; j < NF; j++)
					if (pcs[k] - fn[j].start < fn[j].size &&
					    model_alive(&fn[j], t))
						g = &fn[j];
				if (!g) {
					CHECK(rc == -ENOENT,
					      "pristine %#llx t %llu: rc %d",
					      (unsigned long long)pcs[k],
					      (unsigned long long)t, rc);
					continue;
				}
				struct jsf_row want = g->rows[0];
				for (uint32_t r = 0; r < g->nrows; r++)
					if (g->rows[r].offset <=
					    pcs[k] - g->start)
						want = g->rows[r];
				CHECK(rc == 0 && fs == g->start &&
					  fz == g->size && row_eq(&row, &want),
				      "pristine %#llx t %llu: rc %d %#llx+%u",
				      (unsigned long long)pcs[k],
				      (unsigned long long)t, rc,
				      (unsigned long long)fs, fz);
			}
		}
	}
	for (uint32_t i = 0; i < all.kept; i++) {
		lookup(p, v, live, all.f[i].start, 0, &fs, &fz, &row);
		lookup(p, v, live, all.f[i].start + all.f[i].size - 1,
		       all.f[i].add_ns, &fs, &fz, &row);
	}
	/* Every row of every live function answers with itself when the
	 * region validates: the live index and the log agree. */
	if (p->val_rc == 0 && fl == 0) {
		for (uint32_t i = 0; i < now.kept; i++) {
			for (uint32_t k = 0; k < now.f[i].nrows; k++) {
				const struct jsf_row *want = &now.rows[i][k];
				uint64_t pc = now.f[i].start + want->offset;
				rc = lookup(p, v, live, pc, 0, &fs, &fz, &row);
				if (rc == -EAGAIN)
					continue;
				if (rc || fs != now.f[i].start ||
				    !row_eq(&row, want))
					p->lookups_bad++;
			}
		}
	}
	/* Exports: whatever is exported must pass the validator. */
	for (unsigned ver = 1; ver <= 3; ver += 2) {
		struct jsf_export_opts o = {.sz = sizeof(o), .version = ver};
		void *buf = NULL;
		size_t len = 0;
		uint64_t base = 0;
		rc = jsf_view_export(v, &o, &buf, &len, &base);
		CHECK(rc == 0 || rc == -ENOENT || rc == -EBADMSG ||
			  rc == -ERANGE || (live && rc == -EAGAIN),
		      "export v%u: %d", ver, rc);
		if (rc == 0 && ver == 3) {
			char m[256];
			int vr = jsf_validate_sframe(buf, len, base, 0, 0, m,
						     sizeof(m));
			CHECK(vr == 0, "exported section invalid: %s", m);
		}
		if (rc == 0 && fl == 0)
			CHECK(len >= 28 && get((uint8_t *)buf + 8, 4) == now.n,
			      "export v%u: %llu FDEs for %u live functions",
			      ver,
			      (unsigned long long)get((uint8_t *)buf + 8, 4),
			      now.n);
		free(buf);
	}
}

/* Open, use, validate `path`; every answer checked for sanity. */
static void probe(struct probe *p, const char *path, bool live, bool pristine)
{
	memset(p, 0, sizeof(*p));
	p->val_rc = jsf_validate_region(path, p->msg, sizeof(p->msg));
	CHECK(p->val_rc == 0 || p->val_rc == -EBADMSG, "validate_region: rc %d",
	      p->val_rc);
	CHECK(p->msg[0] != 0, "validate_region: empty message (rc %d)",
	      p->val_rc);
	struct jsf_view *v = (struct jsf_view *)&v;
	p->open_rc = jsf_view_open(&v, path);
	snprintf(p->open_msg, sizeof(p->open_msg), "%s", jsf_view_error());
	if (p->open_rc) {
		CHECK(p->open_rc < 0 && v == NULL, "view_open: rc %d, view %p",
		      p->open_rc, (void *)v);
		CHECK(p->open_msg[0] != 0, "view_open: rc %d, empty message",
		      p->open_rc);
		CHECK(p->val_rc != 0, "validates, yet view_open fails: %s",
		      p->open_msg);
		return;
	}
	exercise(p, v, live, pristine);
	jsf_view_close(v);
	CHECK(p->val_rc != 0 || p->ebadmsg == 0,
	      "region validates (%s) but %d lookups answer -EBADMSG", p->msg,
	      p->ebadmsg);
	CHECK(p->lookups_bad == 0,
	      "region validates (%s) but %d lookups of its own rows fail",
	      p->msg, p->lookups_bad);
}

/* orig with one change, probed post-mortem. */
struct mut {
	const char *name;
	uint64_t off;
	unsigned w;
	uint64_t val;
	int expect;	/* 1: must be invalid; 0: no opinion */
	const char *kw; /* must appear in the validator's message */
};

static uint8_t *work;

static int probe_mut(const struct mut *m)
{
	const char *path = tpath("mut");
	memcpy(work, orig, orig_len);
	if (m->off + m->w <= orig_len)
		put(work + m->off, m->val, m->w);
	write_bytes(path, work, orig_len);
	struct probe p;
	probe(&p, path, false, false);
	if (m->expect) {
		CHECK(p.val_rc == -EBADMSG, "%s: accepted (%s)", m->name,
		      p.msg);
		if (m->kw && p.val_rc)
			CHECK(strstr(p.msg, m->kw) != NULL,
			      "%s: message '%s' lacks '%s'", m->name, p.msg,
			      m->kw);
	}
	return p.val_rc;
}

/* --------------------------------------------------------------- cases */

static void t_pristine(void)
{
	CASE("the valid region: validates and answers like the model")
	{
		struct probe p;
		probe(&p, tpath("orig"), false, true);
		CHECK(p.val_rc == 0, "%s", p.msg);
		CHECK_EQ(p.open_rc, 0);
		CHECK(L.nf == 4 && L.log_n == 6 && L.sec > SF_RHDR_SIZE,
		      "layout: %u FDEs, %u logged, section at %llu", L.nf,
		      L.log_n, (unsigned long long)L.sec);
		for (int i = 0; i < NF; i++)
			CHECK(L.le[i] != UINT32_MAX, "%s not in the log",
			      fname[i]);
	}
}

static void t_truncations(void)
{
	CASE("truncated files are rejected")
	{
		const char *path = tpath("trunc");
		uint64_t lens[] = {0,
				   1,
				   7,
				   8,
				   27,
				   28,
				   RH_SEC_OFF + 7,
				   4095,
				   4096,
				   4097,
				   L.sec - 1,
				   L.sec,
				   L.sec + SF_SHDR_SIZE - 1,
				   L.sec + SF_SHDR_SIZE,
				   L.fde0 + 8,
				   L.fre0 + L.fre_len / 2,
				   L.log0 + 16,
				   L.sec + L.total / 2,
				   orig_len - 4096,
				   orig_len - 8,
				   orig_len - 1};
		for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			write_bytes(path, orig, lens[i]);
			struct probe p;
			probe(&p, path, false, false);
			CHECK(p.val_rc == -EBADMSG && p.open_rc == -EBADMSG,
			      "truncated to %llu: validate %d, open %d",
			      (unsigned long long)lens[i], p.val_rc, p.open_rc);
		}
		/* growing the file is harmless: the header says how much
		 * of it is the region */
		memcpy(work, orig, orig_len);
		memset(work + orig_len, 0xa5, 8192);
		write_bytes(path, work, orig_len + 8192);
		struct probe p;
		probe(&p, path, false, false);
		CHECK(p.val_rc == 0, "grown: %s", p.msg);
	}
}

#define M(n, o, w, v, e, k) ((struct mut){n, o, w, v, e, k})

static void t_header_fields(void)
{
	CASE("region header fields")
	{
		struct mut ms[] = {
		    M("magic[0]", RH_MAGIC, 1, 'X', 1, "magic"),
		    M("magic NUL", RH_MAGIC + 7, 1, '!', 1, "magic"),
		    M("abi 0", RH_ABI, 4, 0, 1, "ABI"),
		    M("abi 2", RH_ABI, 4, 2, 1, "ABI"),
		    M("abi ~0", RH_ABI, 4, 0xffffffff, 1, "ABI"),
		    M("hdr_size 0", RH_HDR_SIZE, 4, 0, 1, "header size"),
		    M("hdr_size 4095", RH_HDR_SIZE, 4, 4095, 1, "header size"),
		    M("hdr_size 8192", RH_HDR_SIZE, 4, 8192, 1, "header size"),
		    M("arch 0", RH_ARCH, 4, 0, 1, "architecture"),
		    M("arch 62", RH_ARCH, 4, 62, 1, "architecture"),
		    M("state 0", RH_STATE, 4, 0, 1, "state"),
		    M("state 3", RH_STATE, 4, 3, 1, "state"),
		    M("state ~0", RH_STATE, 4, 0xffffffff, 1, "state"),
		    M("max_size 0", RH_MAX_SIZE, 8, 0, 1, "sizes"),
		    M("max_size < file", RH_MAX_SIZE, 8, orig_len - 1, 1,
		      "sizes"),
		    M("max_size 2^40+4096", RH_MAX_SIZE, 8, (1ull << 40) + 4096,
		      1, "sizes"),
		    M("max_size ~0", RH_MAX_SIZE, 8, UINT64_MAX, 1, "sizes"),
		    M("file_size +1", RH_FILE_SIZE, 8, orig_len + 1, 1,
		      "truncated"),
		    M("file_size ~0", RH_FILE_SIZE, 8, UINT64_MAX, 1, "sizes"),
		    M("file_size 0", RH_FILE_SIZE, 8, 0, 1, "section"),
		    M("file_size < block", RH_FILE_SIZE, 8, L.sec + 63, 1,
		      "section"),
		    M("file_size mid-block", RH_FILE_SIZE, 8,
		      L.sec + L.total - 8, 1, "section"),
		    M("producer_base +1", RH_PRODUCER_BASE, 8, L.base + 1, 1,
		      "producer base"),
		    M("producer_base +4096", RH_PRODUCER_BASE, 8, L.base + 4096,
		      1, "does not match"),
		    M("producer_base 0", RH_PRODUCER_BASE, 8, 0, 1,
		      "does not match"),
		    M("sec_off 0", RH_SEC_OFF, 8, 0, 1, "section"),
		    M("sec_off 4095", RH_SEC_OFF, 8, 4095, 1, "section"),
		    M("sec_off +8", RH_SEC_OFF, 8, L.sec + 8, 1, "section"),
		    M("sec_off +4096", RH_SEC_OFF, 8, L.sec + 4096, 1, NULL),
		    M("sec_off = len", RH_SEC_OFF, 8, orig_len, 1, "section"),
		    M("sec_off ~0-4095", RH_SEC_OFF, 8, UINT64_MAX - 4095, 1,
		      "section"),
		    /* informational only: no opinion, must not crash */
		    M("create_ns ~0", RH_CREATE_NS, 8, UINT64_MAX, 0, NULL),
		    M("create_real 0", RH_CREATE_REAL, 8, 0, 0, NULL),
		    M("pid 0", RH_PID, 4, 0, 0, NULL),
		    M("close_ns 1", RH_CLOSE_NS, 8, 1, 0, NULL),
		    M("seq ~0-1", RH_SEQ, 8, UINT64_MAX - 1, 0, NULL),
		    /* the old block (left by the compaction) is
		     * self-consistent: a stale but valid table */
		    M("sec_off old block", RH_SEC_OFF, 8, SF_RHDR_SIZE, 0,
		      NULL),
		};
		for (unsigned i = 0; i < sizeof(ms) / sizeof(ms[0]); i++)
			probe_mut(&ms[i]);
	}
	CASE("odd seq post-mortem: recovered from the log")
	{
		memcpy(work, orig, orig_len);
		put(work + RH_SEQ, get(orig + RH_SEQ, 8) | 1, 8);
		/* even a torn index is then ignored */
		put(work + L.fde0 + 8, 12345, 4);
		const char *path = tpath("mut");
		write_bytes(path, work, orig_len);
		struct probe p;
		probe(&p, path, false, true);
		CHECK(p.val_rc == 0 && strstr(p.msg, "recovered"), "%s", p.msg);
		struct jsf_view *v;
		CHECK_EQ(jsf_view_open(&v, path), 0);
		struct jsf_view_info info = {.sz = sizeof(info)};
		if (v) {
			CHECK_EQ(jsf_view_info(v, &info), 0);
			CHECK(info.recovered, "not flagged recovered");
			jsf_view_close(v);
		}
	}
}

static void t_block_fields(void)
{
	CASE("section block fields")
	{
		uint64_t s = L.sec;
		struct mut ms[] = {
		    M("magic", s + SB_MAGIC, 1, 'X', 1, "magic"),
		    M("magic NUL", s + SB_MAGIC + 7, 1, 1, 1, "magic"),
		    M("total +8", s + SB_TOTAL, 8, L.total + 8, 1, NULL),
		    /* shorter, but still holding everything: harmless */
		    M("total -8", s + SB_TOTAL, 8, L.total - 8, 0, NULL),
		    M("total cuts the log", s + SB_TOTAL, 8,
		      L.log_off + L.log_cap * 32ull - 8, 1, NULL),
		    M("total 0", s + SB_TOTAL, 8, 0, 1, NULL),
		    M("total ~0", s + SB_TOTAL, 8, UINT64_MAX, 1, NULL),
		    M("fde_cap +1", s + SB_FDE_CAP, 4, L.fde_cap + 1, 1,
		      "capacities"),
		    M("fde_cap 0", s + SB_FDE_CAP, 4, 0, 1, "capacities"),
		    M("fde_cap 2^28", s + SB_FDE_CAP, 4, 1u << 28, 1,
		      "capacities"),
		    M("fre_cap +1", s + SB_FRE_CAP, 4, L.fre_cap + 1, 1,
		      "capacities"),
		    M("fre_cap ~0", s + SB_FRE_CAP, 4, 0xffffffff, 1,
		      "capacities"),
		    M("log_cap < log_n", s + SB_LOG_CAP, 4, L.log_n - 1, 1,
		      "function log"),
		    M("log_cap ~0", s + SB_LOG_CAP, 4, 0xffffffff, 1,
		      "capacities"),
		    M("log_n > cap", s + SB_LOG_N, 4, L.log_cap + 1, 1,
		      "function log"),
		    M("log_n +1", s + SB_LOG_N, 4, L.log_n + 1, 1, "bad range"),
		    M("log_n 0", s + SB_LOG_N, 4, 0, 1, "index"),
		    M("log_off 0", s + SB_LOG_OFF, 4, 0, 1, "capacities"),
		    M("log_off +1", s + SB_LOG_OFF, 4, L.log_off + 1, 1, NULL),
		    M("log_off = total", s + SB_LOG_OFF, 4, L.total, 1,
		      "capacities"),
		    M("sec_len +1", s + SB_SEC_LEN, 4,
		      get(orig + s + SB_SEC_LEN, 4) + 1, 1, "capacities"),
		    M("sec_len 0", s + SB_SEC_LEN, 4, 0, 1, "capacities"),
		};
		for (unsigned i = 0; i < sizeof(ms) / sizeof(ms[0]); i++)
			probe_mut(&ms[i]);
	}
}

static void t_sframe_fields(void)
{
	CASE("SFrame header fields of the region")
	{
		uint64_t f = L.sf;
		struct mut ms[] = {
		    M("magic", f, 2, 0xdee3, 1, "magic"),
		    M("version 1", f + 2, 1, 1, 1, "version"),
		    M("version 2", f + 2, 1, 2, 1, "version"),
		    M("flags SORTED only", f + 3, 1, 1, 1, "PCREL"),
		    M("flags PCREL only", f + 3, 1, 4, 1, "SORTED"),
		    M("flags +FRAME_POINTER", f + 3, 1, 7, 1, "flags"),
		    M("flags 0x85", f + 3, 1, 0x85, 1, "flags"),
		    M("arch 0", f + 4, 1, 0, 1, "arch"),
		    M("fixed fp 1", f + 5, 1, 1, 1, "cfa_fixed_fp_offset"),
		    M("fixed ra 0", f + 6, 1, 0, 1, "cfa_fixed_ra_offset"),
		    M("auxhdr 1", f + 7, 1, 1, 1, "auxhdr"),
		    M("num_fdes +1", f + SH_NUM_FDES, 4, L.nf + 1, 1, NULL),
		    M("num_fdes 0", f + SH_NUM_FDES, 4, 0, 1, "missing"),
		    M("num_fdes > capacity", f + SH_NUM_FDES, 4, L.fde_cap + 1,
		      1, NULL),
		    M("num_fdes ~0", f + SH_NUM_FDES, 4, 0xffffffff, 1,
		      "FDE sub-section"),
		    M("num_fres 0", f + SH_NUM_FRES, 4, 0, 1, "num_fres"),
		    M("num_fres < used", f + SH_NUM_FRES, 4, 3, 1, "num_fres"),
		    M("fre_len -1", f + SH_FRE_LEN, 4, L.fre_len - 1, 1,
		      "malformed rows"),
		    M("fre_len 0", f + SH_FRE_LEN, 4, 0, 1, "malformed"),
		    M("fre_len > capacity", f + SH_FRE_LEN, 4, L.fre_cap + 1, 1,
		      "capacity"),
		    M("fdeoff +16", f + SH_FDEOFF, 4, L.fdeoff + 16, 1, NULL),
		    M("fdeoff -16", f + SH_FDEOFF, 4, L.fdeoff - 16, 1, NULL),
		    M("fdeoff past end", f + SH_FDEOFF, 4, 0xfffffff0, 1,
		      "FDE sub-section"),
		    M("freoff +1", f + SH_FREOFF, 4, L.freoff + 1, 1,
		      "capacity"),
		    M("freoff past end", f + SH_FREOFF, 4, 0xffffffff, 1,
		      "capacity"),
		    M("freoff 0", f + SH_FREOFF, 4, 0, 1, "capacity"),
		};
		for (unsigned i = 0; i < sizeof(ms) / sizeof(ms[0]); i++)
			probe_mut(&ms[i]);
	}
}

static void t_index_and_fres(void)
{
	CASE("FDEs and FREs of the region")
	{
		uint64_t d = L.fde0, a = attr_off(orig, FB);
		uint64_t start0 = get(orig + d, 8);
		/* B's first FRE (type 0: 1-byte start offset, then info) */
		uint64_t fre = a + SFRAME_V3_ATTR_SIZE;
		uint8_t info = orig[fre + 1];
		/* C's first FRE (type 1: 2-byte start offset) */
		uint64_t cfre = attr_off(orig, FC) + SFRAME_V3_ATTR_SIZE;
		struct mut ms[] = {
		    M("FDE0 start +1", d, 8, start0 + 1, 1, "does not match"),
		    M("FDE0 start -1", d, 8, start0 - 1, 1, "does not match"),
		    M("FDE0 size +1", d + 8, 4, fn[FA].size + 1, 1,
		      "does not match"),
		    M("FDE0 size 0", d + 8, 4, 0, 1, NULL),
		    M("FDE0 attr +1", d + 12, 4, get(orig + d + 12, 4) + 1, 1,
		      NULL),
		    M("FDE0 attr past end", d + 12, 4, L.fre_len, 1,
		      "attribute record"),
		    /* FDE1 made to start where FDE0 starts */
		    M("FDE1 start = FDE0", d + 16, 8, start0 - 16, 1,
		      "does not increase"),
		    M("num_fres 0", a, 2, 0, 1, "malformed rows"),
		    M("num_fres ~0", a, 2, 0xffff, 1, "malformed rows"),
		    M("num_fres +1", a, 2, fn[FB].nrows + 1, 1,
		      "malformed rows"),
		    M("FRE type 3", a + 2, 1, 3, 1, "malformed rows"),
		    M("PC mask", a + 2, 1, 0x10, 1, "malformed rows"),
		    M("AArch64 key", a + 2, 1, 0x20, 1, "malformed rows"),
		    M("FDE type 1", a + 3, 1, 1, 1, "malformed rows"),
		    M("first FRE at 1", cfre, 2, 1, 1, "offset 0"),
		    /* B's FRE 1 follows FRE 0 (offset, info, 1 word) */
		    M("FRE offset = size", fre + 3, 1, 200, 1,
		      "malformed rows"),
		    M("FRE offset not increasing", fre + 3, 1, 0, 1,
		      "malformed rows"),
		    M("3 data words", fre + 1, 1, (info & ~0x1eu) | 3u << 1, 1,
		      "malformed rows"),
		    M("word size 3", fre + 1, 1, info | 3u << 5, 1,
		      "malformed rows"),
		    M("mangled RA", fre + 1, 1, info | 0x80, 1,
		      "malformed rows"),
		};
		for (unsigned i = 0; i < sizeof(ms) / sizeof(ms[0]); i++)
			probe_mut(&ms[i]);
	}
}

static void t_log_fields(void)
{
	CASE("function log entries")
	{
		struct mut ms[] = {
		    M("D size 0", le_off(FD) + LE_SIZE, 4, 0, 1, "bad range"),
		    M("D wraps", le_off(FD) + LE_START, 8, UINT64_MAX - 9, 1,
		      "bad range"),
		    M("D attr past end", le_off(FD) + LE_ATTR, 4, L.fre_len, 1,
		      "malformed rows"),
		    M("D attr ~0", le_off(FD) + LE_ATTR, 4, 0xffffffff, 1,
		      "malformed rows"),
		    M("D size +1", le_off(FD) + LE_SIZE, 4, fn[FD].size + 1, 1,
		      "does not match"),
		    M("D size < rows", le_off(FD) + LE_SIZE, 4, 65541, 1,
		      "malformed rows"),
		    M("H1 removed before added", le_off(FH1) + LE_REMOVE, 8, 1,
		      1, "removed before"),
		    /* live again in the log, not in the index */
		    M("H1 resurrected", le_off(FH1) + LE_REMOVE, 8, 0, 1,
		      "missing from the index"),
		    /* live again where B lives: overlapping functions */
		    M("H2 resurrected over B", le_off(FH2) + LE_REMOVE, 8, 0, 1,
		      "overlap"),
		    M("C moved onto B", le_off(FC) + LE_START, 8,
		      fn[FB].start + 8, 1, "overlap"),
		    M("A removed in the log only", le_off(FA) + LE_REMOVE, 8,
		      last_time + 1, 1, NULL),
		    M("A start +1", le_off(FA) + LE_START, 8, fn[FA].start + 1,
		      1, "does not match"),
		    /* times carry no structural meaning */
		    M("B add ~0", le_off(FB) + LE_ADD, 8, UINT64_MAX, 0, NULL),
		};
		for (unsigned i = 0; i < sizeof(ms) / sizeof(ms[0]); i++)
			probe_mut(&ms[i]);
	}
}

/* Overwrite every field with 0, all-ones, large and off-by-one values. */
static void t_field_sweep(void)
{
	CASE("every field, hostile values: no crash, sane answers")
	{
		struct {
			uint64_t off;
			unsigned w;
		} fl[64];
		unsigned n = 0;
		static const unsigned rh[][2] = {
		    {RH_MAGIC, 8},     {RH_ABI, 4},
		    {RH_HDR_SIZE, 4},  {RH_ARCH, 4},
		    {RH_STATE, 4},     {RH_MAX_SIZE, 8},
		    {RH_FILE_SIZE, 8}, {RH_PRODUCER_BASE, 8},
		    {RH_CREATE_NS, 8}, {RH_CREATE_REAL, 8},
		    {RH_PID, 4},       {RH_SEQ, 8},
		    {RH_SEC_OFF, 8},   {RH_CLOSE_NS, 8}};
		static const unsigned sb[][2] = {
		    {SB_MAGIC, 8},   {SB_TOTAL, 8},   {SB_FDE_CAP, 4},
		    {SB_FRE_CAP, 4}, {SB_LOG_CAP, 4}, {SB_LOG_N, 4},
		    {SB_LOG_OFF, 4}, {SB_SEC_LEN, 4}};
		static const unsigned sh[][2] = {
		    {0, 2},	     {2, 1},	       {3, 1},
		    {4, 1},	     {5, 1},	       {6, 1},
		    {7, 1},	     {SH_NUM_FDES, 4}, {SH_NUM_FRES, 4},
		    {SH_FRE_LEN, 4}, {SH_FDEOFF, 4},   {SH_FREOFF, 4}};
		static const unsigned le[][2] = {{LE_START, 8},
						 {LE_ADD, 8},
						 {LE_REMOVE, 8},
						 {LE_SIZE, 4},
						 {LE_ATTR, 4}};
		for (unsigned i = 0; i < sizeof(rh) / sizeof(rh[0]); i++)
			fl[n].off = rh[i][0], fl[n++].w = rh[i][1];
		for (unsigned i = 0; i < sizeof(sb) / sizeof(sb[0]); i++)
			fl[n].off = L.sec + sb[i][0], fl[n++].w = sb[i][1];
		for (unsigned i = 0; i < sizeof(sh) / sizeof(sh[0]); i++)
			fl[n].off = L.sf + sh[i][0], fl[n++].w = sh[i][1];
		for (unsigned i = 0; i < 3; i++) { /* FDE 0 */
			static const unsigned fo[3][2] = {
			    {0, 8}, {8, 4}, {12, 4}};
			fl[n].off = L.fde0 + fo[i][0], fl[n++].w = fo[i][1];
		}
		for (unsigned i = 0; i < 5; i++) /* attribute record of A */
			fl[n].off = attr_off(orig, FA) + (i ? i + 1 : 0),
			fl[n++].w = i ? 1 : 2;
		for (unsigned e = 0; e < 2; e++) /* first and last entry */
			for (unsigned i = 0; i < sizeof(le) / sizeof(le[0]);
			     i++)
				fl[n].off = L.log0 + e * (L.log_n - 1) * 32ull +
					    le[i][0],
				fl[n++].w = le[i][1];
		for (unsigned i = 0; i < n; i++) {
			uint64_t o = get(orig + fl[i].off, fl[i].w);
			uint64_t ones = fl[i].w == 8
					    ? UINT64_MAX
					    : (1ull << (8 * fl[i].w)) - 1;
			uint64_t vals[] = {
			    0,		ones,	 ones >> 1, (ones >> 1) + 1,
			    o + 1,	o - 1,	 o ^ 0x80,  o << 1,
			    1ull << 40, orig_len};
			for (unsigned k = 0; k < sizeof(vals) / sizeof(vals[0]);
			     k++) {
				struct mut m = {"sweep", fl[i].off,
						fl[i].w, vals[k] & ones,
						0,	 NULL};
				probe_mut(&m);
			}
		}
	}
}

/* Flip every bit of every structural byte. */
static void t_bit_flips(void)
{
	CASE("every bit of every structural byte flipped")
	{
		struct {
			uint64_t at, len;
		} spans[] = {
		    {0, 96},
		    {L.sec, SF_SHDR_SIZE},
		    {L.sf, SFRAME_HDR_SIZE},
		    {L.fde0, (uint64_t)L.nf * 16},
		    {L.fre0, L.fre_len},
		    {L.log0, (uint64_t)L.log_n * 32},
		};
		int accepted_magic = 0;
		for (unsigned s = 0; s < sizeof(spans) / sizeof(spans[0]);
		     s++) {
			for (uint64_t o = spans[s].at;
			     o < spans[s].at + spans[s].len; o++) {
				for (unsigned bit = 0; bit < 8; bit++) {
					struct mut m = {
					    "flip",
					    o,
					    1,
					    (uint64_t)(orig[o] ^ (1u << bit)),
					    0,
					    NULL};
					int vr = probe_mut(&m);
					/* magics and versions: always fatal */
					if ((o < 8 ||
					     (o >= L.sec && o < L.sec + 8) ||
					     (o >= L.sf && o < L.sf + 3)) &&
					    vr == 0)
						accepted_magic++;
				}
			}
		}
		CHECK_EQ(accepted_magic, 0);
	}
}

static void t_garbage(void)
{
	CASE("random garbage files")
	{
		const char *path = tpath("garbage");
		uint8_t *b = malloc(3 * 4096 + 512);
		for (int i = 0; i < 300; i++) {
			size_t len = h_below(3 * 4096 + 512);
			for (size_t k = 0; k < len; k++)
				b[k] = (uint8_t)h_rand();
			if (i % 3 == 1 && len >= 8) /* a plausible header */
				memcpy(b, orig, len < 4096 ? len : 4096);
			write_bytes(path, b, len);
			struct probe p;
			probe(&p, path, false, false);
			CHECK(p.val_rc == -EBADMSG, "garbage %d accepted", i);
		}
		free(b);
		/* the valid region with random bytes overwritten */
		for (int i = 0; i < 300; i++) {
			memcpy(work, orig, orig_len);
			for (int k = 0; k < 1 + i % 8; k++) {
				uint64_t o =
				    i % 2 ? L.sec + h_below((uint32_t)L.total)
					  : h_below((uint32_t)orig_len);
				work[o] = (uint8_t)h_rand();
			}
			write_bytes(tpath("mut"), work, orig_len);
			struct probe p;
			probe(&p, tpath("mut"), false, false);
		}
	}
}

static void t_not_regions(void)
{
	CASE("paths that are not region files")
	{
		struct jsf_view *v = NULL;
		char msg[512];
		const char *d = tpath("adir");
		mkdir(d, 0700);
		int rc = jsf_view_open(&v, d);
		CHECK(rc < 0 && !v && jsf_view_error()[0], "dir: %d", rc);
		CHECK(jsf_validate_region(d, msg, sizeof(msg)) == -EBADMSG &&
			  msg[0],
		      "dir validates");
		rmdir(d);

		rc = jsf_view_open(&v, tpath("nonexistent"));
		CHECK(rc == -ENOENT && !v && jsf_view_error()[0],
		      "nonexistent: %d", rc);
		CHECK(jsf_validate_region(tpath("nonexistent"), msg,
					  sizeof(msg)) == -EBADMSG &&
			  msg[0],
		      "nonexistent validates");

		write_bytes(tpath("empty"), orig, 0);
		rc = jsf_view_open(&v, tpath("empty"));
		CHECK(rc == -EBADMSG && !v && jsf_view_error()[0], "empty: %d",
		      rc);

		rc = jsf_view_open(&v, "/dev/null");
		CHECK(rc < 0 && !v && jsf_view_error()[0], "/dev/null: %d", rc);
		rc = jsf_view_open(&v, "/dev/zero");
		CHECK(rc < 0 && !v && jsf_view_error()[0], "/dev/zero: %d", rc);
		rc = jsf_view_open(&v, "");
		CHECK(rc < 0 && !v && jsf_view_error()[0], "\"\": %d", rc);

		/* a symlink to a region reads the region */
		unlink(tpath("link"));
		CHECK_EQ(symlink(tpath("orig"), tpath("link")), 0);
		struct probe p;
		probe(&p, tpath("link"), false, true);
		CHECK(p.open_rc == 0 && p.val_rc == 0, "symlink: %d %s",
		      p.open_rc, p.msg);
		/* dangling and looping symlinks */
		unlink(tpath("dangling"));
		CHECK_EQ(symlink(tpath("nonexistent"), tpath("dangling")), 0);
		rc = jsf_view_open(&v, tpath("dangling"));
		CHECK(rc == -ENOENT && jsf_view_error()[0], "dangling: %d", rc);
		unlink(tpath("loop"));
		CHECK_EQ(symlink(tpath("loop"), tpath("loop")), 0);
		rc = jsf_view_open(&v, tpath("loop"));
		CHECK(rc == -ELOOP && jsf_view_error()[0], "loop: %d", rc);
		CHECK(jsf_validate_region(tpath("loop"), msg, sizeof(msg)) ==
			  -EBADMSG,
		      "loop validates");
		unlink(tpath("link"));
		unlink(tpath("dangling"));
		unlink(tpath("loop"));
		unlink(tpath("empty"));
	}
	CASE("NULL arguments get a fresh error message")
	{
		struct jsf_view *v = NULL;
		CHECK_EQ(jsf_view_open(NULL, tpath("orig")), -EINVAL);
		/* a failure first, so that a stale message would show */
		jsf_view_open(&v, tpath("nonexistent"));
		char before[512];
		snprintf(before, sizeof(before), "%s", jsf_view_error());
		int rc = jsf_view_open(&v, NULL);
		CHECK(rc == -EINVAL && !v, "NULL path: %d", rc);
		CHECK(jsf_view_error()[0] && strcmp(jsf_view_error(), before),
		      "NULL path: message is '%s', left from the previous call",
		      jsf_view_error());
	}
}

/* Run fn in a child; false if it did not finish within `secs`. */
static bool finishes(void (*f)(const char *), const char *arg, int secs,
		     int *status)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		f(arg);
		_exit(0);
	}
	if (pid < 0)
		return true;
	struct timespec ts = {0, 10 * 1000 * 1000};
	for (int i = 0; i < secs * 100; i++) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return true;
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return false;
}

static void open_it(const char *path)
{
	struct jsf_view *v;
	if (jsf_view_open(&v, path) == 0)
		jsf_view_close(v);
}

static void validate_it(const char *path)
{
	char msg[256];
	jsf_validate_region(path, msg, sizeof(msg));
}

static void t_fifo(void)
{
	CASE("a FIFO never makes jsf_view_open/jsf_validate_region hang")
	{
		const char *path = tpath("fifo");
		unlink(path);
		CHECK_EQ(mkfifo(path, 0600), 0);
		int st = 0;
		CHECK(finishes(open_it, path, 2, &st),
		      "jsf_view_open(FIFO) blocks in open(2) (no O_NONBLOCK)");
		CHECK(finishes(validate_it, path, 2, &st),
		      "jsf_validate_region(FIFO) blocks in open(2)");
		unlink(path);
	}
}

/* ---------------------------------------------------- under a producer */

static void t_live(void)
{
	const char *path = tpath("live");
	struct jsf_region *r = build(path, true);
	size_t len;
	uint8_t *good = read_file(path, &len);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	layout(good);
	CASE("live region: pristine, then every structural bit flipped")
	{
		struct probe p;
		probe(&p, path, true, true);
		CHECK(p.val_rc == 0 && p.open_rc == 0, "live pristine: %s",
		      p.msg);
		struct {
			uint64_t at, len;
		} spans[] = {
		    {0, 96},
		    {L.sec, SF_SHDR_SIZE},
		    {L.sf, SFRAME_HDR_SIZE},
		    {L.fde0, (uint64_t)L.nf * 16},
		    {L.fre0, 32},
		    {L.log0, (uint64_t)L.log_n * 32},
		};
		for (unsigned s = 0; s < sizeof(spans) / sizeof(spans[0]); s++)
			for (uint64_t o = spans[s].at;
			     o < spans[s].at + spans[s].len; o++)
				for (unsigned bit = 0; bit < 8; bit++) {
					uint8_t c =
					    good[o] ^ (uint8_t)(1u << bit);
					pwrite_all(fd, &c, 1, (off_t)o);
					probe(&p, path, true, false);
					pwrite_all(fd, good + o, 1, (off_t)o);
				}
	}
	CASE("a live region with an unaligned FDE window does not validate")
	{
		/* The same FDEs, one byte further, PC-relative values fixed:
		 * a consistent SFrame section (the kernel and
		 * jsf_validate_sframe accept it), but the live reader
		 * requires fdeoff % 8 == 4 and answers -EBADMSG. */
		uint8_t *b = malloc(len);
		memcpy(b, good, len);
		uint32_t nf = L.nf;
		uint64_t from = L.fde0, to = L.fde0 + 1;
		CHECK(L.fdeoff + 1 + nf * 16 <= L.freoff, "no room");
		memmove(b + to, good + from, nf * 16);
		for (uint32_t i = 0; i < nf; i++)
			put(b + to + i * 16, get(b + to + i * 16, 8) - 1, 8);
		put(b + L.sf + SH_FDEOFF, L.fdeoff + 1, 4);
		pwrite_all(fd, b + L.sf, (size_t)(L.fre0 - L.sf), (off_t)L.sf);
		char msg[512];
		int vr = jsf_validate_region(path, msg, sizeof(msg));
		struct jsf_view *v;
		CHECK_EQ(jsf_view_open(&v, path), 0);
		int bad = 0;
		for (int i = 0; v && i < NF; i++) {
			if (fn[i].remove)
				continue;
			int rc = jsf_view_lookup(v, fn[i].start, 0, NULL, NULL,
						 NULL);
			if (rc)
				bad++;
		}
		if (v)
			jsf_view_close(v);
		CHECK(vr != 0 || bad == 0,
		      "validate_region: '%s', yet %d of 4 live lookups fail",
		      msg, bad);
		pwrite_all(fd, good, len, 0);
		free(b);

		/* Smallest form (found by fuzz_view): an empty live region,
		 * fdeoff changed. Validates; every lookup says -EBADMSG
		 * instead of -ENOENT. */
		const char *epath = tpath("empty-live");
		struct jsf_region *er;
		struct jsf_region_opts eo = {.sz = sizeof(eo),
					     .flags = JSF_REGION_REPLACE};
		CHECK_EQ(jsf_region_create(&er, epath, &eo), 0);
		if (!er)
			break;
		size_t elen;
		uint8_t *eb = read_file(epath, &elen);
		uint64_t esf = get(eb + RH_SEC_OFF, 8) + SF_SHDR_SIZE;
		uint8_t c = eb[esf + SH_FDEOFF] ^ 2;
		int efd = open(epath, O_RDWR | O_CLOEXEC);
		pwrite_all(efd, &c, 1, (off_t)(esf + SH_FDEOFF));
		vr = jsf_validate_region(epath, msg, sizeof(msg));
		int rc = -1;
		if (jsf_view_open(&v, epath) == 0) {
			rc = jsf_view_lookup(v, 0x1000, 0, NULL, NULL, NULL);
			jsf_view_close(v);
		}
		CHECK(vr != 0 || rc == -ENOENT,
		      "empty live region, fdeoff %llu: validate_region: '%s', "
		      "yet lookup answers %d",
		      (unsigned long long)get(eb + esf + SH_FDEOFF, 4) ^ 2, msg,
		      rc);
		pwrite_all(efd, eb + esf + SH_FDEOFF, 1,
			   (off_t)(esf + SH_FDEOFF));
		close(efd);
		jsf_region_destroy(er);
		free(eb);
		unlink(epath);
	}
	CASE("a live header claiming more than the file never makes readers "
	     "fault")
	{
		/* A live view maps max_size bytes and trusts RH_FILE_SIZE /
		 * RH_SEC_OFF from the shared header after open: a damaged or
		 * hostile producer makes it read past the end of the file. */
		uint64_t max = get(good + RH_MAX_SIZE, 8);
		uint64_t far = (len + 8191) / 4096 * 4096;
		int st = 0;
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			struct jsf_view *v;
			if (jsf_view_open(&v, path))
				_exit(3);
			uint8_t h[16];
			put(h, max, 8);
			pwrite_all(fd, h, 8, RH_FILE_SIZE);
			put(h, far, 8);
			pwrite_all(fd, h, 8, RH_SEC_OFF);
			jsf_view_lookup(v, fn[FA].start, 0, NULL, NULL, NULL);
			struct jsf_view_info info = {.sz = sizeof(info)};
			jsf_view_info(v, &info);
			jsf_view_close(v);
			_exit(0);
		}
		waitpid(pid, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "reader %s %d",
		      WIFSIGNALED(st) ? "killed by signal" : "exit",
		      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		pwrite_all(fd, good, len, 0);
	}
	/* back to the original bytes and size before the producer writes its
	 * closing state */
	pwrite_all(fd, good, len, 0);
	if (ftruncate(fd, (off_t)len) < 0)
		exit(2);
	close(fd);
	jsf_region_destroy(r);
	free(good);
	unlink(path);
	layout(orig);
}

/* -------------------------------------------- resource amplification */

static void t_amplification(void)
{
	CASE("log entries sharing one FRE record are refused (no memory "
	     "amplification)")
	{
		/* One function with 65535 rows (~196 KB of FREs), then 64
		 * removed one-row functions whose log entries are rewritten to
		 * point at that record: every reader decodes and stores
		 * 64 x 65535 rows (100 MB) from a file of ~0.5 MB; with 1023
		 * entries it is 1.5 GB and seconds of CPU, and the region
		 * validates. The producer never shares records, so the rows
		 * a reader materialises should be bounded by the FRE bytes. */
		const char *path = tpath("amp");
		struct jsf_region *r;
		struct jsf_region_opts o = {.sz = sizeof(o),
					    .flags = JSF_REGION_REPLACE,
					    .initial_funcs = 80};
		CHECK_EQ(jsf_region_create(&r, path, &o), 0);
		if (!r)
			break;
		uint32_t n = 65535, size = 65536;
		struct jsf_row *rows = calloc(n, sizeof(*rows));
		for (uint32_t i = 0; i < n; i++)
			rows[i] =
			    (struct jsf_row){.offset = i, .outermost = true};
		CHECK_EQ(jsf_region_add(r, 0x100000, size, rows, n, 10), 0);
		struct jsf_row one = {.cfa_base = JSF_SP, .cfa_offset = 8};
		for (unsigned i = 0; i < 64; i++) {
			CHECK_EQ(jsf_region_add(r, 0x200000 + i * 16ull, 1,
						&one, 1, 11),
				 0);
			CHECK_EQ(jsf_region_remove(r, 0x200000 + i * 16ull, 12),
				 0);
		}
		jsf_region_destroy(r);
		free(rows);
		size_t len;
		uint8_t *b = read_file(path, &len);
		uint64_t sec = get(b + RH_SEC_OFF, 8);
		uint64_t log0 = sec + get(b + sec + SB_LOG_OFF, 4);
		uint32_t logn = (uint32_t)get(b + sec + SB_LOG_N, 4);
		uint32_t fre_len =
		    (uint32_t)get(b + sec + SF_SHDR_SIZE + SH_FRE_LEN, 4);
		uint32_t attr0 = (uint32_t)get(b + log0 + LE_ATTR, 4);
		for (uint32_t i = 1; i < logn; i++) {
			put(b + log0 + i * 32ull + LE_SIZE, size, 4);
			put(b + log0 + i * 32ull + LE_ATTR, attr0, 4);
		}
		write_bytes(path, b, len);
		free(b);
		struct jsf_view *v;
		uint64_t rows_total = 0;
		if (jsf_view_open(&v, path) == 0) {
			struct jsf_view_info info = {.sz = sizeof(info)};
			jsf_view_info(v, &info);
			static struct it all;
			memset(&all, 0, sizeof(all));
			jsf_view_foreach(v, JSF_ALL, it_cb, &all);
			rows_total = all.nrows_total;
			jsf_view_close(v);
		}
		char msg[512];
		int vr = jsf_validate_region(path, msg, sizeof(msg));
		CHECK(
		    rows_total <= fre_len / 2,
		    "a %zu-byte file with %u bytes of FREs made the reader "
		    "hold %llu rows (%llu MB); validate_region: %s",
		    len, fre_len, (unsigned long long)rows_total,
		    (unsigned long long)(rows_total * sizeof(struct jsf_row) >>
					 20),
		    vr ? msg : "valid");
		unlink(path);
	}
}

/* ------------------------------------------------------ raw V3 sections */

static uint8_t *sec0;
static size_t sec0_len;
static uint64_t sec_base = 0x7f0000000000ull;
static uint64_t text_lo, text_len;

static uint8_t *s_fde(uint8_t *b, uint32_t i)
{
	return b + SFRAME_HDR_SIZE + get(b + SH_FDEOFF, 4) + 16ull * i;
}
static uint8_t *s_attr(uint8_t *b, uint32_t i)
{
	return b + SFRAME_HDR_SIZE + get(b + SH_FREOFF, 4) +
	       get(s_fde(b, i) + 12, 4);
}
static uint8_t *s_fre(uint8_t *b, uint32_t i, uint32_t k)
{
	uint8_t *a = s_attr(b, i), *p = a + SFRAME_V3_ATTR_SIZE;
	unsigned aw = 1u << (a[2] & 0xf);
	for (uint32_t j = 0; j < k; j++) {
		unsigned info = p[aw];
		p += aw + 1 + ((info >> 1) & 0xf) * (1u << ((info >> 5) & 3));
	}
	return p;
}
static void s_set_start(uint8_t *b, uint32_t i, uint64_t start)
{
	uint8_t *f = s_fde(b, i);
	put(f, start - (sec_base + (uint64_t)(f - b)), 8);
}
static uint64_t s_start(uint8_t *b, uint32_t i)
{
	uint8_t *f = s_fde(b, i);
	return sec_base + (uint64_t)(f - b) + get(f, 8);
}

enum { SA, SB, SC, SD }; /* the exported functions, in address order */

static uint8_t *scopy(size_t *len)
{
	uint8_t *b = malloc(sec0_len + 64);
	memcpy(b, sec0, sec0_len);
	*len = sec0_len;
	return b;
}

static void expect_bad(const char *rule, uint8_t *b, size_t len, uint64_t ts,
		       uint64_t tz, const char *kw)
{
	char msg[512] = "";
	int rc =
	    jsf_validate_sframe(b, len, sec_base, ts, tz, msg, sizeof(msg));
	CHECK(rc == -EBADMSG, "%s: accepted (%s)", rule, msg);
	if (rc)
		CHECK(strstr(msg, kw) != NULL, "%s: message '%s' lacks '%s'",
		      rule, msg, kw);
	free(b);
}

/* Mutations of a copy, one per rule; each leaves everything else valid. */
#define RULE(name, kw, ...)                                      \
	do {                                                     \
		size_t len;                                      \
		uint8_t *b = scopy(&len);                        \
		__VA_ARGS__;                                     \
		expect_bad(name, b, len, text_lo, text_len, kw); \
	} while (0)

static void t_raw_sections(void)
{
	struct jsf_view *v;
	CHECK_EQ(jsf_view_open(&v, tpath("orig")), 0);
	if (!v)
		return;
	struct jsf_export_opts o = {
	    .sz = sizeof(o), .version = 3, .base = sec_base};
	void *out = NULL;
	uint64_t base = 0;
	CHECK_EQ(jsf_view_export(v, &o, &out, &sec0_len, &base), 0);
	jsf_view_close(v);
	sec0 = out;
	if (!sec0)
		return;
	text_lo = fn[FA].start;
	text_len = fn[FD].start + fn[FD].size - text_lo;
	char msg[512];
	CASE("exported V3 section validates")
	{
		CHECK_EQ(base, sec_base);
		CHECK_EQ(get(sec0 + SH_NUM_FDES, 4), 4);
		int rc = jsf_validate_sframe(sec0, sec0_len, sec_base, text_lo,
					     text_len, msg, sizeof(msg));
		CHECK(rc == 0, "%s", msg);
		rc = jsf_validate_sframe(sec0, sec0_len, sec_base, 0, 0, msg,
					 sizeof(msg));
		CHECK(rc == 0, "%s", msg);
		for (int i = 0; i < 4; i++)
			CHECK(s_start(sec0, (uint32_t)i) == fn[i].start,
			      "FDE %d start", i);
		/* structure the rules below rely on */
		CHECK(get(s_attr(sec0, SB), 2) == 4 &&
			  (s_attr(sec0, SB)[2] & 0xf) == 0 &&
			  (s_attr(sec0, SD)[2] & 0xf) == 2,
		      "unexpected encoding");
	}
	CASE("kernel rules: header")
	{
		RULE("short", "shorter", len = 27);
		RULE("magic", "magic", b[0] = 0);
		RULE("version 2", "version", b[2] = 2);
		RULE("version 1", "version", b[2] = 1);
		RULE("FDE_SORTED unset", "FDE_SORTED", b[3] &= (uint8_t)~1);
		RULE("FDE_FUNC_START_PCREL unset", "PCREL",
		     b[3] &= (uint8_t)~4);
		RULE("FRAME_POINTER flag (V1/V2 only)", "flags", b[3] |= 2);
		RULE("arch", "arch", b[4] = 2);
		RULE("cfa_fixed_fp_offset", "cfa_fixed_fp_offset", b[5] = 1);
		RULE("cfa_fixed_ra_offset", "cfa_fixed_ra_offset", b[6] = 0);
		RULE("auxhdr_len", "auxhdr", b[7] = 4);
		RULE("num_fdes 0", "num_fdes", put(b + SH_NUM_FDES, 0, 4));
		RULE("num_fres 0", "num_fres", put(b + SH_NUM_FRES, 0, 4));
		RULE("FDE sub-section past the end", "FDE sub-section",
		     put(b + SH_FDEOFF, len - 28 - 4 * 16 + 1, 4));
		RULE("num_fdes too large", "FDE sub-section",
		     put(b + SH_NUM_FDES, 0x10000000, 4));
		RULE("fre_len past the end", "FRE sub-section",
		     put(b + SH_FRE_LEN, get(b + SH_FRE_LEN, 4) + 1, 4));
		RULE("freoff past the end", "FRE sub-section",
		     put(b + SH_FREOFF, 0xffffff00u, 4));
		RULE("section cut short", "sub-section", len -= 1);
	}
	CASE("kernel rule: FRE sub-section starting inside the FDE "
	     "sub-section")
	{
		/* Header, FREs, then FDEs: every offset inside the section
		 * and every record well-formed, but the kernel's
		 * sframe_read_header() rejects fres_start < fdes_end
		 * ("inconsistent fde/fre offsets"). */
		size_t len;
		uint8_t *b = scopy(&len);
		uint32_t nf = 4, fl = (uint32_t)get(sec0 + SH_FRE_LEN, 4);
		uint32_t freoff = (uint32_t)get(sec0 + SH_FREOFF, 4);
		memcpy(b + 28, sec0 + 28 + freoff, fl);
		memcpy(b + 28 + fl, sec0 + 28, nf * 16);
		put(b + SH_FREOFF, 0, 4);
		put(b + SH_FDEOFF, fl, 4);
		for (uint32_t i = 0; i < nf; i++)
			s_set_start(b, i, fn[i].start);
		expect_bad("FRE sub-section before the FDEs", b, len, text_lo,
			   text_len, "sub-section");
		/* and overlapping: FDEs moved 16 bytes into the FREs */
		b = scopy(&len);
		put(b + SH_FREOFF, freoff - 16, 4);
		put(b + SH_FRE_LEN, fl + 16, 4);
		for (uint32_t i = 0; i < nf; i++)
			put(s_fde(b, i) + 12, get(s_fde(b, i) + 12, 4) + 16, 4);
		expect_bad("FDEs overlapping the FRE sub-section", b, len,
			   text_lo, text_len, "sub-section");
	}
	CASE("kernel rules: FDEs")
	{
		/* outside the registered text */
		size_t l0;
		uint8_t *b0 = scopy(&l0);
		expect_bad("first function before the text", b0, l0,
			   text_lo + 1, text_len - 1, "outside the text");
		b0 = scopy(&l0);
		expect_bad("last function past the text", b0, l0, text_lo,
			   text_len - 1, "outside the text");
		b0 = scopy(&l0);
		expect_bad("text elsewhere", b0, l0, 0x1000, 0x1000,
			   "outside the text");
		RULE("equal starts", "does not increase",
		     s_set_start(b, SB, fn[FA].start));
		RULE("decreasing starts", "does not increase",
		     s_set_start(b, SC, fn[FB].start - 8));
		RULE("overlapping functions", "overlaps",
		     put(s_fde(b, SB) + 8, 0x200, 4));
		RULE("wrapping function", "wraps",
		     s_set_start(b, SD, UINT64_MAX - 100);
		     text_len = 0);
		text_len = fn[FD].start + fn[FD].size - text_lo;
		RULE("attribute record past the FRE area", "attribute record",
		     put(s_fde(b, SD) + 12, get(b + SH_FRE_LEN, 4), 4));
		RULE("attribute record straddling the end", "attribute record",
		     put(s_fde(b, SD) + 12, get(b + SH_FRE_LEN, 4) - 4, 4));
		RULE("attribute record at ~0", "attribute record",
		     put(s_fde(b, SD) + 12, 0xffffffff, 4));
		RULE("zero FREs", "no FREs", put(s_attr(b, SB), 0, 2));
		RULE("num_fres > func_size", "FREs for a",
		     put(s_attr(b, SA), 2, 2));
		RULE("PC mask with rep_size 0", "rep_size",
		     s_attr(b, SB)[2] |= 0x10);
		RULE("FDE type 1 (flexible)", "FDE type", s_attr(b, SB)[3] = 1);
	}
	CASE("kernel rules: PC-mask FDE with a rep_size is accepted")
	{
		size_t len;
		uint8_t *b = scopy(&len);
		s_attr(b, SB)[2] |= 0x10;
		s_attr(b, SB)[4] = 16;
		int rc = jsf_validate_sframe(b, len, sec_base, text_lo,
					     text_len, msg, sizeof(msg));
		CHECK(rc == 0, "%s", msg);
		free(b);
	}
	CASE("kernel rules: FREs")
	{
		RULE("FRE type 3", "FRE type", s_attr(b, SB)[2] = 3);
		RULE("FRE type 15", "FRE type", s_attr(b, SB)[2] = 0xf);
		RULE("start offset = func_size (1-byte)", ">= function size",
		     *s_fre(b, SB, 3) = 200);
		RULE("start offset = func_size (4-byte)", ">= function size",
		     put(s_fre(b, SD, 1), fn[FD].size, 4));
		RULE("start offsets not increasing", "does not increase",
		     *s_fre(b, SB, 2) = *s_fre(b, SB, 1));
		RULE("start offsets decreasing", "does not increase",
		     *s_fre(b, SB, 2) = 0);
		RULE("first FRE not at 0", "first FRE", *s_fre(b, SB, 0) = 1);
		/* exact number of data words: AMD64 has CFA and FP only */
		RULE("3 data words", "data words",
		     s_fre(b, SB, 0)[1] =
			 (uint8_t)((s_fre(b, SB, 0)[1] & ~0x1e) | 3 << 1));
		RULE("15 data words", "data words", s_fre(b, SB, 0)[1] |= 0x1e);
		RULE("data-word size code 3", "data-word size",
		     s_fre(b, SB, 0)[1] |= 0x60);
		RULE("mangled-RA bit", "mangled-RA",
		     s_fre(b, SB, 0)[1] |= 0x80);
		/* no leftovers: records must fit the FRE sub-section */
		RULE("FREs run past the FRE sub-section", "past the FRE",
		     put(s_attr(b, SD), 3, 2));
		RULE("data words run past the FRE sub-section", "run past",
		     put(b + SH_FRE_LEN, get(b + SH_FRE_LEN, 4) - 1, 4);
		     len -= 1);
		RULE("header num_fres below the FREs used", "num_fres",
		     put(b + SH_NUM_FRES, get(b + SH_NUM_FRES, 4) - 1, 4));
	}
	free(sec0);
}

int main(void)
{
	h_seed();
	snprintf(dir, sizeof(dir), "/tmp/jsf-t_badinput-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	build(tpath("orig"), false);
	orig = read_file(tpath("orig"), &orig_len);
	work = malloc(orig_len + 8192);
	layout(orig);

	t_pristine();
	t_truncations();
	t_header_fields();
	t_block_fields();
	t_sframe_fields();
	t_index_and_fres();
	t_log_fields();
	t_field_sweep();
	t_bit_flips();
	t_garbage();
	t_not_regions();
	t_fifo();
	t_live();
	t_amplification();
	t_raw_sections();

	unlink(tpath("orig"));
	unlink(tpath("mut"));
	unlink(tpath("trunc"));
	unlink(tpath("garbage"));
	free(orig);
	free(work);
	rmdir(dir);
	return h_exit();
}
