/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the region reader and validator: jsf_view_open and
 * everything a reader does with a view, plus jsf_validate_region, on hostile
 * region files.
 *
 * Input modes (first byte):
 *  'R' / 'L': the rest of the input is the whole region file ('L': pretend
 *             a producer is alive: hold LOCK_EX on the file while reading);
 *  anything else: build a valid region with the producer API from the input
 *             bytes (a little program of adds, removes and compactions),
 *             copy its file, then apply mutations taken from the rest of
 *             the input at offsets relative to the region's structures
 *             (region header, section block header, SFrame header, FDEs,
 *             FREs, function log), so that they reach past the magic checks.
 *
 * Oracles, besides "no crash, no sanitizer report, no leak":
 *  - every call returns one of its documented results;
 *  - every answer is self-consistent (a found function covers the pc, its
 *    row is inside it; iteration yields well-formed functions in order);
 *  - an unmutated region validates and answers exactly like a model of what
 *    was added/removed;
 *  - jsf_validate_region and jsf_view_open agree, and a region that
 *    validates answers every lookup of every row of every live function
 *    with that row (index and log agree), live or post-mortem;
 *  - a successful V3 export passes jsf_validate_sframe.
 * A violated oracle aborts with a message naming it.
 *
 * Known library bug, tolerated unless JSF_FUZZ_STRICT=1 is set: the live
 * reader requires the SFrame header's fdeoff to be 4 mod 8 and answers
 * -EBADMSG otherwise, but jsf_validate_region accepts any fdeoff (see
 * t_badinput).
 */
#include "jitsframe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Layout offsets used to aim mutations (docs/ABI.md); kept local so that
 * the harness does not depend on the library's private header. */
#define RHDR 4096u
#define SHDR 64u
#define SFHDR 28u
#define LOGENT 32u

#define MAXF 64
#define MAXROWS 24

#define FAIL(...)                                                          \
	do {                                                               \
		fprintf(stderr, "fuzz_view: oracle failed: " __VA_ARGS__); \
		fprintf(stderr, "\n");                                     \
		abort();                                                   \
	} while (0)

static char tmpl[] = "/tmp/jsf_fuzz_view.XXXXXX";
static char file_path[64]; /* /proc/self/fd/N of the unlinked temp file */
static int file_fd = -1, lock_fd = -1;
static bool strict;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	file_fd = mkstemp(tmpl);
	if (file_fd < 0) {
		perror("mkstemp");
		abort();
	}
	/* Unlinked at once: nothing is left behind, even after a crash; the
	 * library opens it again through /proc. */
	unlink(tmpl);
	snprintf(file_path, sizeof(file_path), "/proc/self/fd/%d", file_fd);
	/* A second open file description: its LOCK_EX makes the reader's
	 * LOCK_SH|LOCK_NB fail, i.e. the region looks live. */
	lock_fd = open(file_path, O_RDWR | O_CLOEXEC);
	if (lock_fd < 0) {
		perror("open");
		abort();
	}
	const char *s = getenv("JSF_FUZZ_STRICT");
	strict = !s || *s != '0'; /* the library bug is fixed: on by default */
	return 0;
}

/* ------------------------------------------------------------ input bytes */

struct in {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct in *in, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes && in->n; i++, in->n--)
		v |= (uint64_t)*in->p++ << (8 * i);
	return v;
}

/* ------------------------------------------------------------------ model */

struct mf {
	uint64_t start, add, remove;
	uint32_t size, nrows;
	struct jsf_row rows[MAXROWS];
	bool named;  /* added with jsf_region_add_named, named by name_of */
	bool mapped; /* added with jsf_region_add_mapped, its map map_of's */
};

/* The name the harness gives function k (its length varies with k). */
static void name_of(const struct mf *f, uint32_t k, char *buf, size_t len)
{
	snprintf(buf, len, "TRACE_%u::%.*s:%llu", k, (int)(k * 7 % 40),
		 "chunk/with/a/rather/long/path/name.lua",
		 (unsigned long long)f->start);
}

/* The source map the harness gives function k (docs/ABI.md 1.5: valid,
 * 1-3 ranges over its code, one frame each, its length varying with k). */
static uint32_t map_of(const struct mf *f, uint32_t k, uint8_t *b)
{
	uint32_t nr = 1 + k % 3, nstr = 0;
	char str[64];
	nstr += (uint32_t)snprintf(str, 32, "chunk%u.lua", k) + 1;
	uint32_t fn = nstr;
	nstr += (uint32_t)snprintf(str + nstr, 32, "fn%u", k) + 1;
	uint32_t len = 16 + 8 * nr + 20 + 2 * nr + nstr;
	memset(b, 0, len);
	b[0] = 1;			    /* version */
	b[4] = (uint8_t)nr;		    /* nranges */
	b[6] = 1;			    /* nframes */
	b[8] = (uint8_t)nr;		    /* nstack */
	b[12] = (uint8_t)nstr;		    /* strlen */
	for (uint32_t i = 0; i < nr; i++) { /* lo, stack, depth, flags */
		uint32_t lo = i * (f->size / nr ? f->size / nr : 1);
		memcpy(b + 16 + 8 * i, &lo, 4);
		b[16 + 8 * i + 4] = (uint8_t)i;
		b[16 + 8 * i + 6] = 1;
		b[16 + 8 * i + 7] = 1; /* EXACT */
	}
	uint8_t *fr = b + 16 + 8 * nr; /* file, name, line, first, pc */
	uint32_t line = k + 1, first = k;
	memcpy(fr + 4, &fn, 4);
	memcpy(fr + 8, &line, 4);
	memcpy(fr + 12, &first, 4);
	memcpy(b + len - nstr, str, nstr); /* the stack: nr zeros */
	return len;
}

struct model {
	struct mf f[MAXF];
	uint32_t n;
	uint64_t now;
};

static bool alive(const struct mf *f, uint64_t t)
{
	if (t == 0)
		return f->remove == 0;
	return f->add <= t && (f->remove == 0 || t < f->remove);
}

static const struct mf *m_find(const struct model *m, uint64_t pc, uint64_t t)
{
	for (uint32_t i = 0; i < m->n; i++) {
		const struct mf *f = &m->f[i];
		if (pc - f->start < f->size && alive(f, t))
			return f;
	}
	return NULL;
}

static struct jsf_row m_row(const struct mf *f, uint64_t pc)
{
	struct jsf_row r = f->rows[0];
	for (uint32_t i = 0; i < f->nrows; i++)
		if (f->rows[i].offset <= pc - f->start)
			r = f->rows[i];
	return r;
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

static int32_t sval(struct in *in, unsigned code)
{
	switch (code) {
	case 0:
		return (int8_t)take(in, 1);
	case 1:
		return (int16_t)take(in, 2);
	default:
		return (int32_t)take(in, 4);
	}
}

/* One function from the input: rows valid by construction. */
static void gen_func(struct in *in, struct mf *f)
{
	memset(f, 0, sizeof(*f));
	f->start = 0x7f0000000000ull + take(in, 2) * 64 + take(in, 1);
	unsigned s = (unsigned)take(in, 1);
	if (s < 200)
		f->size = 1 + s;
	else if (s < 250)
		f->size = 1 + (uint32_t)take(in, 2);
	else
		f->size = 1 + (uint32_t)take(in, 3);
	uint32_t max = f->size < MAXROWS ? f->size : MAXROWS;
	uint32_t want = 1 + (uint32_t)take(in, 1) % max;
	uint32_t step = f->size / want ? f->size / want : 1;
	uint32_t off = 0;
	while (f->nrows < want && off < f->size) {
		struct jsf_row *r = &f->rows[f->nrows++];
		unsigned b = (unsigned)take(in, 1);
		r->offset = off;
		if ((b & 7) == 7) {
			r->outermost = true;
		} else {
			r->cfa_base = b & 8 ? JSF_FP : JSF_SP;
			r->cfa_offset = sval(in, (b >> 4) & 3);
			if (b & 0x40) {
				r->has_fp = true;
				r->fp_offset = sval(in, (b >> 4) & 3);
			}
		}
		off += 1 + (uint32_t)take(in, 1) % step;
	}
}

/* Run the producer program; returns the region (still open). */
static struct jsf_region *build(struct in *in, struct model *m, bool *ok)
{
	unsigned flags = (unsigned)take(in, 1);
	struct jsf_region_opts o = {.sz = sizeof(o)};
	if (flags & 0x10)
		o.initial_funcs = 1 + (uint32_t)take(in, 1) % 8;
	if (flags & 0x20)
		o.history_max = 1 + (uint32_t)take(in, 1) % 4;
	o.max_size = flags & 0x40 ? 64 * 1024 : 1024 * 1024;
	struct jsf_region *r;
	int rc = jsf_region_create(&r, NULL, &o);
	if (rc)
		FAIL("jsf_region_create: %d", rc);
	memset(m, 0, sizeof(*m));
	m->now = 1000;
	unsigned nops = 1 + (unsigned)take(in, 1) % 16;
	*ok = true;
	for (unsigned i = 0; i < nops; i++) {
		unsigned op = (unsigned)take(in, 1);
		m->now += 10;
		switch (op % 8) {
		case 5: { /* remove a live one */
			uint32_t k = m->n ? (op >> 3) % m->n : 0;
			if (k < m->n && !m->f[k].remove) {
				rc =
				    jsf_region_remove(r, m->f[k].start, m->now);
				if (rc)
					FAIL("remove: %d", rc);
				m->f[k].remove = m->now;
			}
			break;
		}
		case 6:
			if (op >> 6)
				break; /* rare */
			rc = jsf_region_remove_all(r, m->now);
			if (rc)
				FAIL("remove_all: %d", rc);
			for (uint32_t k = 0; k < m->n; k++)
				if (!m->f[k].remove)
					m->f[k].remove = m->now;
			break;
		case 7:
			rc = jsf_region_compact(r);
			if (rc && rc != -ENOSPC)
				FAIL("compact: %d", rc);
			break;
		default: {
			if (m->n == MAXF)
				break;
			struct mf *f = &m->f[m->n];
			gen_func(in, f);
			f->add = m->now;
			/* flag 0x80: named adds (every other one unnamed) */
			f->named = (flags & 0x80) && (m->n % 3 != 2);
			/* flag 0x08: every other named add has a map */
			f->mapped = f->named && (flags & 0x08) && m->n % 2 == 0;
			char nm[96];
			uint8_t map[128];
			name_of(f, m->n, nm, sizeof(nm));
			uint32_t ml = f->mapped ? map_of(f, m->n, map) : 0;
			rc = f->mapped
				 ? jsf_region_add_mapped(r, f->start, f->size,
							 f->rows, f->nrows, nm,
							 map, ml, f->add)
			     : f->named
				 ? jsf_region_add_named(r, f->start, f->size,
							f->rows, f->nrows, nm,
							f->add)
				 : jsf_region_add(r, f->start, f->size, f->rows,
						  f->nrows, f->add);
			if (rc == 0) {
				m->n++;
				break;
			}
			if (rc == -ENOSPC) {
				*ok = false; /* history may be gone: fine */
				break;
			}
			if (rc != -EEXIST)
				FAIL("add: %d", rc);
			/* -EEXIST: must really overlap a live function */
			bool ov = false;
			for (uint32_t k = 0; k < m->n; k++) {
				const struct mf *g = &m->f[k];
				if (!g->remove &&
				    g->start < f->start + f->size &&
				    f->start < g->start + g->size)
					ov = true;
			}
			if (!ov)
				FAIL("add %#llx+%u: -EEXIST without overlap",
				     (unsigned long long)f->start, f->size);
			break;
		}
		}
	}
	return r;
}

/* ---------------------------------------------------------- mutations */

static uint32_t le32(const uint8_t *b, size_t len, size_t off)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < 4; i++)
		if (off + i < len)
			v |= (uint32_t)b[off + i] << (8 * i);
	return v;
}

static uint64_t le64(const uint8_t *b, size_t len, size_t off)
{
	return le32(b, len, off) | (uint64_t)le32(b, len, off + 4) << 32;
}

static void put(uint8_t *b, size_t len, size_t off, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (off + i < len)
			b[off + i] = (uint8_t)(v >> (8 * i));
}

static const uint64_t interesting[] = {
    0,
    1,
    2,
    3,
    4,
    7,
    8,
    16,
    0x7f,
    0x80,
    0xff,
    0x100,
    0xfff,
    0x1000,
    0x1001,
    0x1040,
    0x7fff,
    0xffff,
    0x10000,
    0x7fffffff,
    0x80000000,
    0xfffffff0,
    0xffffffff,
    1ull << 32,
    1ull << 40,
    (1ull << 40) + 1,
    1ull << 63,
    UINT64_MAX,
    UINT64_MAX - 4095,
};
#define NINT (sizeof(interesting) / sizeof(interesting[0]))

struct file {
	uint8_t *b;
	size_t len, cap;
};

static void resize(struct file *f, size_t len)
{
	if (len > f->cap) {
		uint8_t *nb = realloc(f->b, len);
		if (!nb)
			abort();
		f->b = nb;
		f->cap = len;
	}
	if (len > f->len)
		memset(f->b + f->len, 0, len - f->len);
	f->len = len;
}

/* Apply mutations aimed at the structures of the (unmutated) region. */
static unsigned mutate(struct in *in, struct file *f)
{
	const uint8_t *b = f->b;
	size_t len = f->len;
	uint64_t sec = le64(b, len, 80); /* RH_SEC_OFF */
	if (sec > len)
		sec = RHDR;
	uint64_t sf = sec + SHDR;
	uint64_t fdeoff = le32(b, len, sf + 20), freoff = le32(b, len, sf + 24);
	uint64_t nf = le32(b, len, sf + 8), frelen = le32(b, len, sf + 16);
	uint64_t logoff = le32(b, len, sec + 32), logn = le32(b, len, sec + 28);
	uint64_t nidx = le32(b, len, sec + 44), names = le32(b, len, sec + 48);
	uint64_t nlen = le32(b, len, sec + 56);
	struct {
		uint64_t at, span;
	} base[10] = {
	    {0, 128},
	    {sec, SHDR},
	    {sf, SFHDR},
	    {sf + SFHDR + fdeoff, nf * 16 + 16},
	    {sf + SFHDR + freoff, frelen + 16},
	    {sec + logoff, logn * LOGENT + LOGENT},
	    {0, len + 1},
	    {len > 64 ? len - 64 : 0, 64},
	    {sec + nidx, logn * 4 + 4}, /* the name index */
	    {sec + names, nlen + 8},	/* the name area */
	};
	unsigned nmut = 0;
	while (in->n && nmut < 16) {
		unsigned sel = (unsigned)take(in, 1);
		unsigned kind = (unsigned)take(in, 1) % 12;
		uint64_t off = take(in, 2);
		uint64_t pos =
		    base[sel % 10].at +
		    off % (base[sel % 10].span ? base[sel % 10].span : 1);
		nmut++;
		switch (kind) {
		case 0:
			put(f->b, f->len, pos, take(in, 1), 1);
			break;
		case 1:
			put(f->b, f->len, pos,
			    le32(f->b, f->len, pos) ^ take(in, 1), 1);
			break;
		case 2:
			put(f->b, f->len, pos, take(in, 2), 2);
			break;
		case 3:
			put(f->b, f->len, pos, take(in, 4), 4);
			break;
		case 4:
			put(f->b, f->len, pos, take(in, 8), 8);
			break;
		case 5:
			put(f->b, f->len, pos, interesting[take(in, 1) % NINT],
			    4);
			break;
		case 6:
			put(f->b, f->len, pos, interesting[take(in, 1) % NINT],
			    8);
			break;
		case 7: /* small delta on a u32 */
			put(f->b, f->len, pos,
			    le32(f->b, f->len, pos) + (int8_t)take(in, 1), 4);
			break;
		case 8: /* values relative to the file's own geometry */
		{
			uint64_t rel[] = {f->len,  f->len - 1, f->len + 1, sec,
					  sec + 1, sec - 4096, len - sec,  0};
			put(f->b, f->len, pos, rel[take(in, 1) % 8], 8);
			break;
		}
		case 9: /* truncate */
			if (pos < f->len)
				resize(f, pos);
			break;
		case 10: /* extend a little */
			resize(f, f->len + 1 + take(in, 2) % 8192);
			break;
		case 11: /* copy a record over another (duplicate FDE/log) */
		{
			unsigned s2 = (unsigned)take(in, 1);
			uint64_t src =
			    base[s2 % 8].at +
			    take(in, 2) %
				(base[s2 % 8].span ? base[s2 % 8].span : 1);
			unsigned n = s2 & 0x80 ? 32 : 16;
			for (unsigned i = 0; i < n; i++)
				if (src + i < f->len && pos + i < f->len)
					f->b[pos + i] = f->b[src + i];
			break;
		}
		}
	}
	return nmut;
}

static void write_file(const uint8_t *b, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t w = pwrite(file_fd, b + done, len - done, (off_t)done);
		if (w <= 0) {
			perror("pwrite");
			abort();
		}
		done += (size_t)w;
	}
	if (ftruncate(file_fd, (off_t)len) < 0) {
		perror("ftruncate");
		abort();
	}
}

/* Bytes of the region file behind r (a memfd), read before destroy. */
static void copy_region(struct jsf_region *r, struct file *f)
{
	int fd = open(jsf_region_path(r), O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		abort();
	resize(f, (size_t)st.st_size);
	if (pread(fd, f->b, f->len, 0) != (ssize_t)f->len)
		abort();
	close(fd);
}

/* --------------------------------------------------------------- reading */

static void check_row(const struct jsf_row *r, uint32_t size, const char *what)
{
	if (r->offset >= size)
		FAIL("%s: row offset %u >= size %u", what, r->offset, size);
	if (!r->outermost && r->cfa_base != JSF_SP && r->cfa_base != JSF_FP)
		FAIL("%s: cfa_base %u", what, r->cfa_base);
}

struct walk {
	uint32_t n;
	uint64_t prev;
	struct jsf_func f[MAXF];
	struct jsf_row rows[MAXF][MAXROWS];
	uint32_t kept;
};

static int walk_cb(const struct jsf_func *f, void *ctx)
{
	struct walk *w = ctx;
	if (w->n && f->start < w->prev)
		FAIL("foreach: start %#llx after %#llx",
		     (unsigned long long)f->start, (unsigned long long)w->prev);
	if (f->size == 0 || f->start + f->size < f->start || f->nrows == 0 ||
	    f->nrows > f->size || !f->rows)
		FAIL("foreach: bad function %#llx+%u rows %u",
		     (unsigned long long)f->start, f->size, f->nrows);
	if (f->remove_ns && f->remove_ns < f->add_ns)
		FAIL("foreach: removed before added");
	for (uint32_t i = 0; i < f->nrows; i++) {
		check_row(&f->rows[i], f->size, "foreach");
		if (i ? f->rows[i].offset <= f->rows[i - 1].offset
		      : f->rows[0].offset != 0)
			FAIL("foreach: row %u offset %u out of order", i,
			     f->rows[i].offset);
	}
	if (w->kept < MAXF) {
		w->f[w->kept] = *f;
		uint32_t k = f->nrows < MAXROWS ? f->nrows : MAXROWS;
		memcpy(w->rows[w->kept], f->rows, k * sizeof(*f->rows));
		w->f[w->kept].nrows = k;
		w->f[w->kept].rows = NULL;
		w->kept++;
	}
	w->n++;
	w->prev = f->start;
	return 0;
}

static int stop_cb(const struct jsf_func *f, void *ctx)
{
	(void)f;
	(*(int *)ctx)++;
	return 7;
}

/* A name's or source map's answer nr at pc and time t (what: which) is
 * one of the documented ones: a length up to max, -ENOENT, -ENODATA,
 * -EBADMSG, or -EAGAIN from a live region only. false: it was -EAGAIN,
 * ask no more at this time. */
static bool info_rc(const char *what, int nr, int max, bool live, uint64_t pc,
		    uint64_t t)
{
	if (nr == -EAGAIN) {
		if (!live)
			FAIL("%s: -EAGAIN post-mortem", what);
		return false;
	}
	if (nr < 0 && nr != -ENOENT && nr != -ENODATA && nr != -EBADMSG)
		FAIL("%s %#llx t %llu: rc %d", what, (unsigned long long)pc,
		     (unsigned long long)t, nr);
	if (nr > max)
		FAIL("%s: rc %d", what, nr);
	return true;
}

static bool lookup_rc_ok(int rc, bool live)
{
	return rc == 0 || rc == -ENOENT ||
	       (live && (rc == -EBADMSG || rc == -EAGAIN));
}

/* Set once a live lookup gave up (-EAGAIN: the sequence count is odd for
 * good): each costs thousands of retries, so the rest are skipped. */
static bool gave_up;
static unsigned ebadmsg; /* lookups that answered -EBADMSG */

static int lookup(const struct jsf_view *v, uint64_t pc, uint64_t t, bool live,
		  uint64_t *fs, uint32_t *fz, struct jsf_row *row)
{
	*fs = 0;
	*fz = 0;
	memset(row, 0, sizeof(*row));
	if (gave_up)
		return -EAGAIN;
	int rc = jsf_view_lookup(v, pc, t, fs, fz, row);
	if (rc == -EAGAIN) {
		if (!live)
			FAIL("lookup: -EAGAIN post-mortem");
		gave_up = true;
		return rc;
	}
	if (rc == -EBADMSG)
		ebadmsg++;
	if (!lookup_rc_ok(rc, live))
		FAIL("lookup %#llx t %llu: rc %d", (unsigned long long)pc,
		     (unsigned long long)t, rc);
	if (rc == 0) {
		if (*fz == 0 || pc - *fs >= *fz)
			FAIL("lookup %#llx: got %#llx+%u, not covering",
			     (unsigned long long)pc, (unsigned long long)*fs,
			     *fz);
		check_row(row, *fz, "lookup");
		if (row->offset > pc - *fs)
			FAIL("lookup %#llx: row at %u past the pc",
			     (unsigned long long)pc, row->offset);
	}
	/* NULL outputs are allowed and give the same answer. */
	int rc2 = jsf_view_lookup(v, pc, t, NULL, NULL, NULL);
	if (rc2 != rc)
		FAIL("lookup %#llx with NULL outputs: %d, before %d",
		     (unsigned long long)pc, rc2, rc);
	return rc;
}

static void check_export(const struct jsf_view *v, unsigned ver, uint64_t t,
			 uint32_t nlive, bool exact)
{
	struct jsf_export_opts o = {
	    .sz = sizeof(o), .version = ver, .at_ns = t};
	void *buf = NULL;
	size_t len = 0;
	uint64_t base = 1;
	int rc = jsf_view_export(v, &o, &buf, &len, &base);
	if (rc != 0 && rc != -ENOENT && rc != -EBADMSG && rc != -ERANGE &&
	    rc != -EAGAIN)
		FAIL("export v%u: rc %d", ver, rc);
	if (rc)
		return;
	if (!buf || len < 28)
		FAIL("export v%u: %zu bytes", ver, len);
	const uint8_t *b = buf;
	if (b[0] != 0xe2 || b[1] != 0xde || b[2] != ver)
		FAIL("export v%u: bad header", ver);
	uint32_t nf = le32(b, len, 8);
	if (exact && t == 0 && nf != nlive)
		FAIL("export v%u: %u FDEs, %u live functions", ver, nf, nlive);
	if (ver == 3) {
		char msg[256] = "";
		int vr =
		    jsf_validate_sframe(buf, len, base, 0, 0, msg, sizeof(msg));
		if (vr)
			FAIL("export v3 of an accepted view fails validation: "
			     "%s",
			     msg);
	}
	free(buf);
}

static void read_region(bool live, const struct model *m, bool pristine,
			bool fdeoff_odd)
{
	char msg[512] = "", msg2[512] = "";
	int vr = jsf_validate_region(file_path, msg, sizeof(msg));
	if (vr != 0 && vr != -EBADMSG && vr != -ENOMEM)
		FAIL("validate_region: rc %d", vr);
	if (!msg[0])
		FAIL("validate_region: empty message (rc %d)", vr);
	int vr2 = jsf_validate_region(file_path, msg2, sizeof(msg2));
	if (vr2 != vr || strcmp(msg, msg2))
		FAIL("validate_region not deterministic: %d '%s' / %d '%s'", vr,
		     msg, vr2, msg2);
	if (pristine && vr)
		FAIL("unmutated region fails validation: %s", msg);

	struct jsf_view *v = NULL;
	gave_up = false;
	ebadmsg = 0;
	int rc = jsf_view_open(&v, file_path);
	if (rc) {
		if (rc > 0 || v)
			FAIL("view_open: rc %d, view %p", rc, (void *)v);
		if (!jsf_view_error()[0])
			FAIL("view_open: rc %d with an empty error", rc);
		if (vr == 0)
			FAIL("region validates but view_open fails: %s",
			     jsf_view_error());
		return;
	}
	struct jsf_view_info info = {.sz = sizeof(info)};
	rc = jsf_view_info(v, &info);
	if (rc && !(live && (rc == -EBADMSG || rc == -EAGAIN)))
		FAIL("view_info: %d", rc);
	if (rc == 0 && info.live != live)
		FAIL("view_info: live %d, expected %d", info.live, live);
	if (vr == 0 && rc)
		FAIL("region validates but view_info fails: %d", rc);
	if (rc == 0 && info.live_funcs > info.logged_funcs)
		FAIL("view_info: %u live of %u logged", info.live_funcs,
		     info.logged_funcs);

	static struct walk wl, wa;
	memset(&wl, 0, sizeof(wl));
	memset(&wa, 0, sizeof(wa));
	int fr = jsf_view_foreach(v, 0, walk_cb, &wl);
	int fa = jsf_view_foreach(v, JSF_ALL, walk_cb, &wa);
	if (fr != fa || (fr && !live))
		FAIL("foreach: %d / %d", fr, fa);
	if (rc == 0 && fr == 0 &&
	    (wl.n != info.live_funcs || wa.n != info.logged_funcs))
		FAIL("foreach: %u/%u functions, info says %u/%u", wl.n, wa.n,
		     info.live_funcs, info.logged_funcs);
	if (fr == 0 && wa.n) {
		int calls = 0;
		if (jsf_view_foreach(v, JSF_ALL, stop_cb, &calls) != 7 ||
		    calls != 1)
			FAIL("foreach: non-zero callback return not honoured");
	}

	/* Lookups: model-driven pcs and times, and around every function. */
	uint64_t fs;
	uint32_t fz;
	struct jsf_row row;
	uint64_t times[MAXF + 3];
	unsigned nt = 0;
	times[nt++] = 0;
	times[nt++] = 1; /* before anything */
	times[nt++] = m->now + 1000;
	for (uint32_t i = 0; i < m->n && nt < MAXF + 3; i++)
		times[nt++] = m->f[i].remove ? m->f[i].remove - 1 : m->f[i].add;
	for (unsigned ti = 0; ti < nt; ti++) {
		uint64_t t = times[ti];
		for (uint32_t i = 0; i < m->n; i++) {
			const struct mf *f = &m->f[i];
			uint64_t pcs[] = {
			    f->start - 1, f->start, f->start + f->size / 2,
			    f->start + f->size - 1, f->start + f->size};
			for (unsigned k = 0; k < 5; k++) {
				uint64_t pc = pcs[k];
				rc = lookup(v, pc, t, live, &fs, &fz, &row);
				if (!pristine)
					continue;
				const struct mf *g = m_find(m, pc, t);
				if (!g) {
					if (rc != -ENOENT)
						FAIL("pristine: pc %#llx t "
						     "%llu: "
						     "found %#llx, model none",
						     (unsigned long long)pc,
						     (unsigned long long)t,
						     (unsigned long long)fs);
					continue;
				}
				if (rc == -ENOENT && g->remove)
					continue; /* dropped history */
				struct jsf_row want = m_row(g, pc);
				if (rc || fs != g->start || fz != g->size ||
				    !row_eq(&row, &want))
					FAIL("pristine: pc %#llx t %llu: rc %d "
					     "%#llx+%u row %u, model %#llx+%u "
					     "row %u",
					     (unsigned long long)pc,
					     (unsigned long long)t, rc,
					     (unsigned long long)fs, fz,
					     row.offset,
					     (unsigned long long)g->start,
					     g->size, want.offset);
			}
		}
		/* a few far-away pcs */
		lookup(v, 0, t, live, &fs, &fz, &row);
		lookup(v, UINT64_MAX, t, live, &fs, &fz, &row);
	}

	/* What the file itself claims: every function it iterates. */
	for (uint32_t i = 0; i < wa.kept; i++) {
		const struct jsf_func *f = &wa.f[i];
		lookup(v, f->start, 0, live, &fs, &fz, &row);
		lookup(v, f->start + f->size - 1, f->add_ns, live, &fs, &fz,
		       &row);
		lookup(v, f->start, f->remove_ns ? f->remove_ns - 1 : JSF_ALL,
		       live, &fs, &fz, &row);
	}
	/* A region that validates: the index agrees with the log. */
	if (vr == 0 && fr == 0) {
		for (uint32_t i = 0; i < wl.kept; i++) {
			const struct jsf_func *f = &wl.f[i];
			for (uint32_t k = 0; k < f->nrows; k++) {
				const struct jsf_row *want = &wl.rows[i][k];
				uint64_t pc = f->start + want->offset;
				rc = lookup(v, pc, 0, live, &fs, &fz, &row);
				if (rc == -EAGAIN)
					continue; /* live, seq odd */
				if (rc || fs != f->start || fz != f->size ||
				    !row_eq(&row, want))
					FAIL(
					    "validated region: pc %#llx: rc %d "
					    "%#llx+%u row %u, iterated "
					    "%#llx+%u "
					    "row %u (%s)",
					    (unsigned long long)pc, rc,
					    (unsigned long long)fs, fz,
					    row.offset,
					    (unsigned long long)f->start,
					    f->size, want->offset, msg);
			}
		}
	}

	/* Names (docs/ABI.md 1.4): documented results; a pristine region
	 * names each function as the model does, at its own time; one that
	 * validates has no damaged name. */
	unsigned bad_names = 0;
	for (unsigned ti = 0; ti < nt && !gave_up; ti++) {
		for (uint32_t i = 0; i < m->n; i++) {
			const struct mf *f = &m->f[i];
			char got[48], want[96];
			uint64_t pc = f->start + f->size / 2, t = times[ti];
			int nr = jsf_view_name(v, pc, t, got, sizeof(got));
			if (!info_rc("name", nr, 1024, live, pc, t))
				break;
			if (nr >= 0 &&
			    strlen(got) != ((size_t)nr < sizeof(got) - 1
						? (size_t)nr
						: sizeof(got) - 1))
				FAIL("name: rc %d but %zu bytes", nr,
				     strlen(got));
			bad_names += nr == -EBADMSG;
			if (!pristine)
				continue;
			const struct mf *g = m_find(m, pc, t);
			int want_rc = -ENOENT;
			if (g && g->named) {
				name_of(g, (uint32_t)(g - m->f), want,
					sizeof(want));
				want_rc = (int)strlen(want);
			} else if (g) {
				want_rc = -ENODATA;
			}
			if (nr == -ENOENT && g && g->remove)
				continue; /* dropped history */
			if (nr != want_rc ||
			    (nr >= 0 && strncmp(got, want, sizeof(got) - 1)))
				FAIL("pristine: name %#llx t %llu: rc %d '%s', "
				     "model %d '%s'",
				     (unsigned long long)pc,
				     (unsigned long long)t, nr,
				     nr >= 0 ? got : "", want_rc,
				     want_rc >= 0 ? want : "");
		}
	}
	if (vr == 0 && bad_names)
		FAIL("region validates (%s) but %u names answer -EBADMSG", msg,
		     bad_names);

	/* Source maps (docs/ABI.md 1.5): documented results, and what is
	 * read decodes without harm; a pristine region gives each function
	 * the map it was added with, byte for byte, or -ENODATA; one that
	 * validates has no damaged map. */
	unsigned bad_maps = 0;
	for (unsigned ti = 0; ti < nt && !gave_up; ti++) {
		for (uint32_t i = 0; i < m->n; i++) {
			const struct mf *f = &m->f[i];
			uint8_t got[160], want[128];
			uint64_t pc = f->start + f->size / 2, t = times[ti],
				 mfs = 0;
			int nr =
			    jsf_view_srcmap(v, pc, t, got, sizeof(got), &mfs);
			if (!info_rc("srcmap", nr, 1 << 20, live, pc, t))
				break;
			if (nr >= 0 && (mfs > pc || pc - mfs > UINT32_MAX))
				FAIL(
				    "srcmap: function start %#llx for pc %#llx",
				    (unsigned long long)mfs,
				    (unsigned long long)pc);
			if (nr >= 0) {
				struct jsf_srcframe sf[4];
				uint32_t fl;
				(void)jsf_srcmap_frames(
				    got,
				    (size_t)nr < sizeof(got) ? (size_t)nr
							     : sizeof(got),
				    (uint32_t)(pc - mfs), sf, 4, &fl);
			}
			bad_maps += nr == -EBADMSG;
			if (!pristine)
				continue;
			const struct mf *g = m_find(m, pc, t);
			if (nr == -ENOENT && g && g->remove)
				continue; /* dropped history */
			int want_rc = !g ? -ENOENT : !g->mapped ? -ENODATA : 0;
			if (g && g->mapped)
				want_rc =
				    (int)map_of(g, (uint32_t)(g - m->f), want);
			if (nr != want_rc ||
			    (nr > 0 && (mfs != g->start ||
					memcmp(got, want, (size_t)nr))))
				FAIL("pristine: srcmap %#llx t %llu: rc %d, "
				     "model %d",
				     (unsigned long long)pc,
				     (unsigned long long)t, nr, want_rc);
		}
	}
	if (vr == 0 && bad_maps)
		FAIL("region validates (%s) but %u maps answer -EBADMSG", msg,
		     bad_maps);

	/* A region that validates is consistent: no lookup finds damage. */
	if (vr == 0 && ebadmsg && (strict || !fdeoff_odd))
		FAIL("region validates (%s) but %u lookups answer -EBADMSG",
		     msg, ebadmsg);

	bool exact = fr == 0;
	check_export(v, 3, 0, wl.n, exact);
	check_export(v, 1, 0, wl.n, exact);
	if (m->n) {
		check_export(v, 3, m->f[0].add, 0, false);
		check_export(v, 1, m->now / 2 + 500, 0, false);
	}
	jsf_view_close(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct model m;
	static struct file f;
	struct in in = {data, size};
	bool live = false, pristine = false;
	memset(&m, 0, sizeof(m));
	if (size >= 1 && (data[0] == 'R' || data[0] == 'L')) {
		live = data[0] == 'L';
		resize(&f, 0);
		resize(&f, size - 1);
		memcpy(f.b, data + 1, size - 1);
	} else {
		take(&in, 1);
		bool ok, keep_live = size && (data[0] & 1);
		live = size && (data[0] & 2);
		struct jsf_region *r = build(&in, &m, &ok);
		if (!keep_live) {
			/* closed cleanly: copy after destroy, through an fd */
			int fd = open(jsf_region_path(r), O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				abort();
			jsf_region_destroy(r);
			struct stat st;
			if (fstat(fd, &st) < 0)
				abort();
			resize(&f, 0);
			resize(&f, (size_t)st.st_size);
			if (pread(fd, f.b, f.len, 0) != (ssize_t)f.len)
				abort();
			close(fd);
		} else {
			/* state LIVE in the copy: a producer that died */
			resize(&f, 0);
			copy_region(r, &f);
			jsf_region_destroy(r);
		}
		pristine = mutate(&in, &f) == 0 && ok;
	}
	write_file(f.b, f.len);
	if (live && flock(lock_fd, LOCK_EX | LOCK_NB) < 0)
		abort();
	/* the SFrame header's fdeoff, for the known bug above */
	bool fdeoff_odd = false;
	uint64_t sec = le64(f.b, f.len, 80);
	if (sec < f.len)
		fdeoff_odd = le32(f.b, f.len, sec + SHDR + 20) % 8 != 4;
	read_region(live, &m, pristine, fdeoff_odd);
	if (live)
		flock(lock_fd, LOCK_UN);
	return 0;
}
