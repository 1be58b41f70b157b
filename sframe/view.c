/* SPDX-License-Identifier: MIT */
/*
 * The reader side: open a region live (its producer holds the file lock) or
 * post-mortem, and look up (pc, time). Live "now" lookups read the shared
 * SFrame index directly under the seqlock protocol of docs/ABI.md; the rest
 * works on checked snapshots (snap.c).
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOOKUP_TRIES 4096 /* bounded retries of a live lookup */
#define SNAP_TRIES 256	  /* bounded retries of a live snapshot */
#define MAP_MAX (1ull << 40)
#define VIDX_BYTES                                               \
	((size_t)64 << 20) /* reader index: reserved, touched as \
			      needed */
#define VIDX_SCAN 8	   /* rows a function's lookup compares all of */
#define VIDX_TOP 16	   /* starts a block of the index's top level */
#define TIDX_BYTES ((size_t)64 << 20) /* the log's index: reserved */
#define TIDX_AFTER 32 /* direct time lookups of a table before indexing it */

struct jsf_view {
	int fd;
	bool live, recovered;
	const uint8_t *map; /* live only: max_size bytes, read-only */
	uint64_t map_len;
	uint64_t checked; /* live: bytes fstat() showed to exist (atomic) */
	struct sf_rinfo ri;
	struct sf_snap snap; /* post-mortem only */
	struct vidx *ix;     /* live only: the reader's index, or NULL */
};

static struct vidx *vidx_new(void);
static void vidx_free(struct vidx *ix);

static __thread char view_err[512];

const char *jsf_view_error(void)
{
	return view_err;
}

int sf_rhdr_parse(const uint8_t *h, uint64_t st_size, struct sf_rinfo *ri,
		  char *msg, size_t msglen)
{
#define BAD(...)                                  \
	do {                                      \
		sf_msg(msg, msglen, __VA_ARGS__); \
		return -EBADMSG;                  \
	} while (0)
	if (st_size < SF_RHDR_SIZE)
		BAD("not a region: %llu bytes, shorter than the %d-byte header",
		    (unsigned long long)st_size, SF_RHDR_SIZE);
	if (memcmp(h + RH_MAGIC, SF_REGION_MAGIC, 8))
		BAD("not a region file (bad magic; still being created?)");
	ri->abi = LD32(h + RH_ABI);
	if (ri->abi != JSF_ABI_VERSION)
		BAD("region ABI version %u, this reader knows %d", ri->abi,
		    JSF_ABI_VERSION);
	if (LD32(h + RH_HDR_SIZE) != SF_RHDR_SIZE)
		BAD("region header size %u, expected %d", LD32(h + RH_HDR_SIZE),
		    SF_RHDR_SIZE);
	ri->arch = LD32(h + RH_ARCH);
	if (ri->arch != JSF_ARCH_X86_64)
		BAD("unsupported architecture %u", ri->arch);
	ri->state = LD32(h + RH_STATE);
	if (ri->state != SF_STATE_LIVE && ri->state != SF_STATE_CLOSED)
		BAD("bad region state %u", ri->state);
	ri->max_size = LD64(h + RH_MAX_SIZE);
	ri->file_size = LD64A(h + RH_FILE_SIZE);
	ri->producer_base = LD64(h + RH_PRODUCER_BASE);
	ri->create_ns = LD64(h + RH_CREATE_NS);
	ri->close_ns = LD64(h + RH_CLOSE_NS);
	ri->pid = LD32(h + RH_PID);
	ri->seq = LD64A(h + RH_SEQ);
	ri->sec_off = LD64(h + RH_SEC_OFF);
	if (ri->max_size > MAP_MAX || ri->file_size > ri->max_size)
		BAD("bad sizes: file %llu, max %llu",
		    (unsigned long long)ri->file_size,
		    (unsigned long long)ri->max_size);
	if (ri->file_size > st_size)
		BAD("file truncated: header says %llu bytes, file has %llu",
		    (unsigned long long)ri->file_size,
		    (unsigned long long)st_size);
	if (ri->sec_off < SF_RHDR_SIZE || ri->sec_off % 4096 ||
	    ri->sec_off + SF_SHDR_SIZE > ri->file_size)
		BAD("section offset %llu outside the file",
		    (unsigned long long)ri->sec_off);
	if (ri->producer_base % 4096)
		BAD("producer base %#llx not page aligned",
		    (unsigned long long)ri->producer_base);
#undef BAD
	return 0;
}

/*
 * How much of a live mapping may be touched, given the header's file_size:
 * never more than the file really has (a damaged header must not make us
 * fault). fstat() runs only when file_size grew past what was checked.
 */
static uint64_t live_limit(int fd, uint64_t *checked, uint64_t map_len,
			   uint64_t fsz)
{
	if (fsz > map_len)
		fsz = map_len;
	uint64_t c = __atomic_load_n(checked, __ATOMIC_RELAXED);
	if (fsz > c) {
		struct stat st;
		c = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
		__atomic_store_n(checked, c, __ATOMIC_RELAXED);
	}
	return fsz < c ? fsz : c;
}

/* [a, a+n) of a live block into its copy (clipped to the block). */
static void copy_range(uint8_t *dst, const uint8_t *blk, uint64_t total,
		       uint64_t a, uint64_t n)
{
	if (a < total)
		copy_shared(dst + a, blk + a, n > total - a ? total - a : n);
}

/*
 * The parts of a live block in use into a zeroed copy: the headers, the
 * FDE window, the FRE bytes, the published log entries, their name index
 * slots and the name bytes, each as far as the copied headers say (their
 * counts are published after what they count). Never the rest: pages
 * past what is in use need not exist (docs/ABI.md 3.6), and reading such
 * a hole of a full tmpfs raises SIGBUS (tests/t_fullfs.c).
 */
static void copy_used(uint8_t *c, const uint8_t *blk, uint64_t total)
{
	const uint64_t sf = SF_SHDR_SIZE, hdr = sf + SFRAME_HDR_SIZE;
	copy_range(c, blk, total, 0, hdr + 4);
	if (total < hdr + 4)
		return;
	uint32_t nf = LD32(c + sf + SH_NUM_FDES), log_n = LD32(c + SB_LOG_N);
	copy_range(c, blk, total, hdr + LD32(c + sf + SH_FDEOFF),
		   (uint64_t)nf * 16);
	copy_range(c, blk, total, hdr + LD32(c + sf + SH_FREOFF),
		   LD32(c + sf + SH_FRE_LEN));
	copy_range(c, blk, total, LD32(c + SB_LOG_OFF),
		   (uint64_t)log_n * SF_LOG_ENTRY_SIZE);
	if (LD32(c + SB_FEATURES) & SB_F_NAMES) {
		copy_range(c, blk, total, LD32(c + SB_NIDX_OFF),
			   (uint64_t)log_n * 4);
		copy_range(c, blk, total, LD32(c + SB_NAMES_OFF),
			   LD32(c + SB_NAMES_LEN));
	}
}

/* Consistent copy of the current block of a live mapping (seqlock). */
static int snap_from_map(int fd, uint64_t *checked, const uint8_t *map,
			 uint64_t map_len, struct sf_snap *s, char *msg,
			 size_t msglen)
{
	for (int tries = 0; tries < SNAP_TRIES; tries++) {
		uint64_t s1 = LD64A(map + RH_SEQ);
		if (s1 & 1) {
			sched_yield();
			continue;
		}
		uint64_t fsz =
		    live_limit(fd, checked, map_len, LD64A(map + RH_FILE_SIZE));
		uint64_t off = LD64(map + RH_SEC_OFF);
		if (off < SF_RHDR_SIZE || off % 8 || off + SF_SHDR_SIZE > fsz)
			goto check;
		uint64_t total = LD64(map + off + SB_TOTAL);
		if (total % 8 || total > fsz - off || total < SF_SHDR_SIZE)
			goto check;
		uint8_t *copy = calloc(1, total);
		if (!copy) {
			sf_msg(msg, msglen, "out of memory");
			return -ENOMEM;
		}
		copy_used(copy, map + off, total);
		if (LD64(map + RH_SEQ) != s1) {
			free(copy);
			continue;
		}
		return sf_snap_parse(s, copy, total,
				     LD64(map + RH_PRODUCER_BASE) + off, msg,
				     msglen);
	check:
		if (LD64(map + RH_SEQ) == s1) {
			sf_msg(msg, msglen, "section block outside the file");
			return -EBADMSG;
		}
	}
	sf_msg(msg, msglen, "the producer kept rewriting the region");
	return -EAGAIN;
}

static int snap_from_file(int fd, const struct sf_rinfo *ri, struct sf_snap *s,
			  char *msg, size_t msglen)
{
	uint8_t sh[SF_SHDR_SIZE];
	if (pread(fd, sh, sizeof(sh), (off_t)ri->sec_off) !=
	    (ssize_t)sizeof(sh)) {
		sf_msg(msg, msglen, "cannot read the section block");
		return -EBADMSG;
	}
	uint64_t total = LD64(sh + SB_TOTAL);
	if (total < SF_SHDR_SIZE || total > ri->file_size - ri->sec_off) {
		sf_msg(msg, msglen,
		       "section block of %llu bytes at %llu outside the file",
		       (unsigned long long)total,
		       (unsigned long long)ri->sec_off);
		return -EBADMSG;
	}
	uint8_t *copy = malloc(total);
	if (!copy) {
		sf_msg(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	if (pread(fd, copy, total, (off_t)ri->sec_off) != (ssize_t)total) {
		free(copy);
		sf_msg(msg, msglen, "short read of the section block");
		return -EBADMSG;
	}
	return sf_snap_parse(s, copy, total, ri->producer_base + ri->sec_off,
			     msg, msglen);
}

static int open_region(const char *path, int *fdp, struct sf_rinfo *ri,
		       bool *live, char *msg, size_t msglen)
{
	uint8_t hdr[SF_RHDR_SIZE];
	struct stat st;
	/* O_NONBLOCK: a FIFO must not block us before the S_ISREG check. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		sf_msg(msg, msglen, "%s: %s", path, strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		sf_msg(msg, msglen, "%s: not a regular file", path);
		close(fd);
		return -EBADMSG;
	}
	/* The header first, then the file's size: a live producer grows
	 * the file (ftruncate) before its header says so, and never shrinks
	 * it, so a size read after the header covers what the header says.
	 * Read before it, the size could predate a growth the header then
	 * showed: "file truncated" of a sound region (t_concurrency). */
	ssize_t got = pread(fd, hdr, sizeof(hdr), 0);
	if (got == SF_RHDR_SIZE && fstat(fd, &st) < 0) {
		int e = errno;
		sf_msg(msg, msglen, "%s: %s", path, strerror(e));
		close(fd);
		return -e;
	}
	uint64_t avail = got < SF_RHDR_SIZE ? (got < 0 ? 0 : (uint64_t)got)
					    : (uint64_t)st.st_size;
	int err = sf_rhdr_parse(hdr, avail, ri, msg, msglen);
	if (err) {
		close(fd);
		return err;
	}
	/* A live producer holds LOCK_EX for its whole life. */
	*live = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	if (!*live)
		flock(fd, LOCK_UN);
	*fdp = fd;
	return 0;
}

int sf_load(const char *path, struct sf_rinfo *ri, struct sf_snap *s,
	    bool *live, bool *recovered, char *msg, size_t msglen)
{
	int fd = -1, err = open_region(path, &fd, ri, live, msg, msglen);
	if (err)
		return err;
	if (*live) {
		void *m =
		    mmap(NULL, ri->max_size, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			err = -errno;
			sf_msg(msg, msglen, "mmap: %s", strerror(-err));
		} else {
			uint64_t checked = 0;
			err = snap_from_map(fd, &checked, m, ri->max_size, s,
					    msg, msglen);
			munmap(m, ri->max_size);
		}
	} else {
		err = snap_from_file(fd, ri, s, msg, msglen);
	}
	*recovered = !*live && (ri->seq & 1);
	close(fd);
	return err;
}

static int view_open(struct jsf_view **out, const char *path);

int jsf_view_open(struct jsf_view **out, const char *path)
{
	int err = view_open(out, path);
	if (err && view_err[0]) /* the cause, for jsf_strerror too */
		sf_fail(err, "%s", view_err);
	return err;
}

static int view_open(struct jsf_view **out, const char *path)
{
	view_err[0] = 0;
	if (!out || !path) {
		sf_msg(view_err, sizeof(view_err), "no %s given",
		       out ? "path" : "output pointer");
		return -EINVAL;
	}
	*out = NULL;
	struct jsf_view *v = calloc(1, sizeof(*v));
	if (!v) {
		sf_msg(view_err, sizeof(view_err), "out of memory");
		return -ENOMEM;
	}
	int err = open_region(path, &v->fd, &v->ri, &v->live, view_err,
			      sizeof(view_err));
	if (err) {
		free(v);
		return err;
	}
	if (v->live) {
		void *m =
		    mmap(NULL, v->ri.max_size, PROT_READ, MAP_SHARED, v->fd, 0);
		if (m == MAP_FAILED) {
			err = -errno;
			sf_msg(view_err, sizeof(view_err), "mmap: %s",
			       strerror(-err));
			goto fail;
		}
		v->map = m;
		v->map_len = v->ri.max_size;
		v->ix = vidx_new(); /* NULL: lookups read the table alone */
	} else {
		err = snap_from_file(v->fd, &v->ri, &v->snap, view_err,
				     sizeof(view_err));
		if (err)
			goto fail;
		v->recovered = v->ri.seq & 1;
	}
	*out = v;
	return 0;
fail:
	close(v->fd);
	free(v);
	return err;
}

void jsf_view_close(struct jsf_view *v)
{
	if (!v)
		return;
	if (v->map)
		munmap((void *)v->map, v->map_len);
	vidx_free(v->ix);
	sf_snap_free(&v->snap);
	close(v->fd);
	free(v);
}

/* The current table of a live mapping, every offset bounds-checked. */
struct ltab {
	const uint8_t *blk, *sf, *fdes, *fre;
	uint64_t off, total, fde_cap;
	uint32_t nf, fdeoff, fre_len;
};

static int live_tab(const struct jsf_view *v, struct ltab *lt)
{
	const uint8_t *m = v->map;
	uint64_t fsz = live_limit(v->fd, (uint64_t *)&v->checked, v->map_len,
				  LD64A(m + RH_FILE_SIZE));
	uint64_t off = LD64(m + RH_SEC_OFF);
	if (off < SF_RHDR_SIZE || off % 8 || off + SF_SHDR_SIZE > fsz)
		return -EBADMSG;
	const uint8_t *blk = m + off;
	uint64_t total = LD64(blk + SB_TOTAL);
	uint64_t fde_cap = LD32(blk + SB_FDE_CAP),
		 fre_cap = LD32(blk + SB_FRE_CAP);
	if (total > fsz - off ||
	    SF_SHDR_SIZE + SFRAME_HDR_SIZE + 4 + fde_cap * 16 + fre_cap > total)
		return -EBADMSG;
	const uint8_t *sf = blk + SF_SHDR_SIZE;
	uint32_t nf = LD32A(sf + SH_NUM_FDES);
	uint64_t fdeoff = LD32(sf + SH_FDEOFF), freoff = LD32(sf + SH_FREOFF);
	uint32_t fre_len = LD32(sf + SH_FRE_LEN);
	if (freoff != 4 + fde_cap * 16 || fre_len > fre_cap ||
	    fdeoff % 16 != 4 || fdeoff + (uint64_t)nf * 16 > freoff)
		return -EBADMSG;
	*lt = (struct ltab){.blk = blk,
			    .sf = sf,
			    .fdes = sf + SFRAME_HDR_SIZE + fdeoff,
			    .fre = sf + SFRAME_HDR_SIZE + freoff,
			    .off = off,
			    .total = total,
			    .fde_cap = fde_cap,
			    .nf = nf,
			    .fdeoff = (uint32_t)fdeoff,
			    .fre_len = fre_len};
	return 0;
}

/* The function log of a table: its entries and how many are published. */
static int log_of(const struct ltab *lt, const uint8_t **le, uint32_t *n)
{
	uint64_t log_off = LD32(lt->blk + SB_LOG_OFF);
	uint64_t log_cap = LD32(lt->blk + SB_LOG_CAP);
	uint32_t log_n = LD32A(lt->blk + SB_LOG_N);
	if (log_off + log_cap * SF_LOG_ENTRY_SIZE > lt->total ||
	    log_n > log_cap)
		return -EBADMSG;
	*le = lt->blk + log_off;
	*n = log_n;
	return 0;
}

/* The answer for pc in the function (start, size, attribute record). */
static int func_answer(const struct ltab *lt, uint64_t start, uint32_t size,
		       uint64_t attr, uint64_t pc, uint64_t *fs, uint32_t *fz,
		       struct jsf_row *row)
{
	struct jsf_row r;
	int n = sf_read_func(lt->fre, lt->fre_len, (uint32_t)attr, size,
			     (uint32_t)(pc - start), &r, NULL, 0);
	if (n < 0)
		return -EBADMSG;
	if (fs)
		*fs = start;
	if (fz)
		*fz = size;
	if (row)
		*row = r;
	return 0;
}

/*
 * One attempt at a live lookup, reading the shared mapping. Any
 * inconsistency returns -EBADMSG; the caller's seqlock check decides whether
 * it was a concurrent rewrite (retry) or real damage.
 */
static int live_once(const struct jsf_view *v, uint64_t pc, uint64_t t,
		     uint64_t *fs, uint32_t *fz, struct jsf_row *row)
{
	struct ltab lt;
	int err = live_tab(v, &lt);
	if (err)
		return err;
	const uint8_t *m = v->map;
	uint32_t nf = lt.nf;
	uint64_t start, attr;
	uint32_t size;
	if (t == 0) {
		const uint8_t *fdes = lt.fdes;
		/* PC-relative starts, decoded at the producer's addresses. */
		uint64_t rebase = v->ri.producer_base - (uint64_t)(uintptr_t)m;
		if (!nf)
			return -ENOENT;
		/* The last FDE with start <= pc (or the first), branch-free
		 * and 8-ary: each step loads 7 starts at once and counts those
		 * <= pc, so the chain of dependent loads is log8(nf) long (5 at
		 * 8,000 functions) and nothing mispredicts. */
		uint64_t p = (uint64_t)(uintptr_t)fdes;
		uint32_t len = nf;
#define FDE_START(q) ((q) + rebase + LD64((const uint8_t *)(uintptr_t)(q)))
		while (len >= 8) {
			uint32_t step = len / 8, c = 0;
			uint64_t st = (uint64_t)step * 16;
			for (uint32_t j = 1; j < 8; j++)
				c += FDE_START(p + j * st) <= pc;
			p += c * st;
			len = c < 7 ? step : len - 7 * step;
		}
		uint32_t c = 0;
		for (uint32_t j = 1; j < len; j++)
			c += FDE_START(p + j * 16) <= pc;
		p += (uint64_t)c * 16;
#undef FDE_START
		start = p + rebase + LD64((const uint8_t *)p);
		if (start > pc)
			return -ENOENT;
		/* func_size, func_start_fre_off */
		uint64_t sa = LD64((const uint8_t *)p + 8);
		size = (uint32_t)sa;
		attr = sa >> 32;
		if (pc - start >= size)
			return -ENOENT;
	} else {
		/* Past times: scan the function log, newest first. */
		const uint8_t *le;
		uint32_t log_n;
		if (log_of(&lt, &le, &log_n))
			return -EBADMSG;
		for (uint32_t i = log_n; i-- > 0;) {
			const uint8_t *p = le + (size_t)i * SF_LOG_ENTRY_SIZE;
			if (sf_log_covers(p, pc, t)) {
				start = LD64(p + LE_START);
				size = LD32(p + LE_SIZE);
				attr = LD32(p + LE_ATTR);
				goto found;
			}
		}
		return -ENOENT;
	}
found:
	return func_answer(&lt, start, size, attr, pc, fs, fz, row);
}

/*
 * The reader's index of a live table (docs/ABI.md, "Implementation notes"):
 * private, dense copies of the live functions' starts and sizes and their
 * rows decoded, so that a lookup of an unchanged table reads five shared
 * words and then private memory alone. Its memory is reserved when the view
 * opens (jsf_view_lookup allocates nothing); one thread at a time owns it
 * through a flag it only tries to take (the others, and a signal handler
 * that interrupts the owner, read the shared table as before). It is built
 * from the shared table under the same seqlock check as a lookup, every
 * offset bounds-checked and every row decoded and checked, and is used only
 * while (seq, sec_off, num_fdes, fdeoff) are what it was built from: within
 * one even seq a table changes only by appends, so that key names one table.
 * Appends extend it; any other change waits for as many lookups as the table
 * has functions before a rebuild (a rebuild costs about that many), so that a
 * churning producer costs at most about twice the direct reads.
 */

struct vidx {
	/* The index is one thread's: the first to look up through it (a
	 * compare-and-swap, once); busy: that thread is inside a lookup (a
	 * signal handler interrupting it reads the shared table). No locked
	 * instruction per lookup: one (an exchange, before) kept successive
	 * lookups from overlapping, 2.6x vs 1.7x libsframe at 8,000
	 * functions (bench/region_bench.c). */
	uintptr_t owner; /* atomic: pthread_self() of the owner, 0 none */
	int busy;	 /* written by the owner only */
	bool ok;	 /* the arrays hold the table of the key */
	uint64_t seq;	 /* key: seq, sec_off, n, fdeoff */
	uint64_t off;
	uint32_t n, fdeoff;
	const uint8_t *sf; /* the key's SFrame header in the mapping */
	uint64_t pend_seq, pend_off; /* a table not indexed yet ... */
	uint32_t pend_n, pend_hits;  /* ... and its direct lookups */
	uint32_t fcap, rcap, nrows;  /* capacity (functions, rows), rows used */
	uint64_t builds, answers;    /* for tests: sf_view_index_stats */
	struct tidx *tx;	     /* the log's index (past times), or NULL */
	uint64_t *start;
	/* every VIDX_TOP-th start (ntop of them): searched first, it stays
	 * in the cache, and then only the one block of starts it names */
	uint64_t *top;
	uint32_t ntop;
	/* each function's size and first row, side by side (fcap + 1: the
	 * last one's row0 ends the rows), so that an answer reads one line */
	struct vfn {
		uint32_t size, row0;
	} * fn;
	struct vrow *rows; /* rcap; a function's rows side by side */
};

/* A row as the index keeps it: 16 bytes, so that a function's rows share
 * a cache line or two with its answer. bits: cfa_base (2), has_fp (1),
 * outermost (1), ra_rule (2). */
struct vrow {
	uint32_t offset;
	int32_t cfa_offset, fp_offset;
	int16_t ra_offset;
	uint8_t bits, pad;
};

/* (vidx_build decodes rows where their copies go, converting forward) */
_Static_assert(sizeof(struct jsf_row) >= sizeof(struct vrow),
	       "a row's compact copy must not pass the next row");

/* False for a row the compact form cannot hold exactly (the table is then
 * not indexed: its lookups read the shared table). */
static bool vrow_put(struct vrow *d, struct jsf_row r)
{
	if (r.ra_offset != (int16_t)r.ra_offset || r.cfa_base > 3 ||
	    r.ra_rule > 3)
		return false;
	*d = (struct vrow){.offset = r.offset,
			   .cfa_offset = r.cfa_offset,
			   .fp_offset = r.fp_offset,
			   .ra_offset = (int16_t)r.ra_offset,
			   .bits = (uint8_t)(r.cfa_base | (r.has_fp ? 4 : 0) |
					     (r.outermost ? 8 : 0) |
					     r.ra_rule << 4)};
	return true;
}

static void vrow_get(struct jsf_row *r, const struct vrow *s)
{
	*r = (struct jsf_row){.offset = s->offset,
			      .cfa_base = s->bits & 3,
			      .cfa_offset = s->cfa_offset,
			      .has_fp = (s->bits & 4) != 0,
			      .fp_offset = s->fp_offset,
			      .outermost = (s->bits & 8) != 0,
			      .ra_rule = (uint8_t)(s->bits >> 4 & 3),
			      .ra_offset = s->ra_offset};
}

static struct vidx *vidx_new(void)
{
	void *m = mmap(NULL, VIDX_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	void *t = mmap(NULL, TIDX_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	((struct vidx *)m)->tx = t == MAP_FAILED ? NULL : t;
	return m;
}

static void vidx_free(struct vidx *ix)
{
	if (!ix)
		return;
	if (ix->tx)
		munmap(ix->tx, TIDX_BYTES);
	munmap(ix, VIDX_BYTES);
}

/* Lay the arrays out for fcap functions; false if they do not fit. */
static bool vidx_carve(struct vidx *ix, uint64_t fcap)
{
	uint8_t *base = (uint8_t *)ix, *end = base + VIDX_BYTES;
	uint8_t *p = base + ((sizeof(*ix) + 63) & ~(size_t)63);
	uint64_t ntop = fcap / VIDX_TOP + 1;
	uint64_t fbytes = fcap * 8 + (fcap + 1) * sizeof(struct vfn) + ntop * 8;
	if (fbytes + 64 > (uint64_t)(end - p))
		return false;
	ix->start = (uint64_t *)p;
	ix->fn = (struct vfn *)(p + fcap * 8);
	ix->top = (uint64_t *)(ix->fn + fcap + 1);
	p += (fbytes + 63) & ~(uint64_t)63;
	uint64_t rcap = (uint64_t)(end - p) / sizeof(struct vrow);
	if (rcap < 2)
		return false;
	ix->rows = (struct vrow *)p;
	ix->fcap = (uint32_t)fcap;
	ix->rcap = (uint32_t)rcap;
	return true;
}

/*
 * Index the table as of seq s1 (even): from scratch, or only the functions
 * appended since the index was built. Every function must be well formed
 * (rows decodable and checked, starts sorted, no overlap), else nothing is
 * indexed and lookups read the shared table (with its own answers for a
 * damaged function). False if not indexed.
 */
static bool vidx_build(const struct jsf_view *v, struct vidx *ix, uint64_t s1)
{
	struct ltab lt;
	if (live_tab(v, &lt))
		goto fail;
	uint32_t i0 = 0;
	if (ix->ok && ix->seq == s1 && ix->off == lt.off &&
	    ix->fdeoff == lt.fdeoff && lt.nf > ix->n) {
		i0 = ix->n; /* appended: the first n FDEs did not change */
	} else {
		if (!vidx_carve(ix, lt.fde_cap))
			goto fail;
		ix->nrows = 0;
		ix->fn[0].row0 = 0;
	}
	ix->ok = false;
	if (lt.nf > ix->fcap)
		goto fail;
	uint64_t rebase = v->ri.producer_base - (uint64_t)(uintptr_t)v->map;
	for (uint32_t i = i0; i < lt.nf; i++) {
		const uint8_t *p = lt.fdes + (size_t)i * 16;
		uint64_t start = (uint64_t)(uintptr_t)p + rebase + LD64(p);
		uint64_t sa = LD64(p + 8);
		uint32_t size = (uint32_t)sa, attr = (uint32_t)(sa >> 32);
		if (!size || start + size < start ||
		    (i && start < ix->start[i - 1] + ix->fn[i - 1].size))
			goto fail;
		/* the rows decoded where their compact copies go, then
		 * copied forward (by memcpy: one memory, two types): row k's
		 * copy (16 bytes at 16k) never reaches row k + 1 (at 28k) */
		uint8_t *buf = (uint8_t *)(ix->rows + ix->nrows);
		uint32_t room =
		    (uint32_t)((uint64_t)(ix->rcap - ix->nrows) *
			       sizeof(struct vrow) / sizeof(struct jsf_row));
		int nr = sf_read_func(lt.fre, lt.fre_len, attr, size, 0, NULL,
				      (struct jsf_row *)(void *)buf, room);
		if (nr <= 0 || (uint32_t)nr > room)
			goto fail;
		for (int k = 0; k < nr; k++) {
			struct jsf_row r;
			struct vrow c;
			memcpy(&r, buf + (size_t)k * sizeof(r), sizeof(r));
			if ((k == 0 && r.offset != 0) || !vrow_put(&c, r))
				goto fail; /* (or a row 16 bytes cannot hold) */
			memcpy(buf + (size_t)k * sizeof(c), &c, sizeof(c));
		}
		ix->start[i] = start;
		ix->fn[i].size = size;
		ix->nrows += (uint32_t)nr;
		ix->fn[i + 1].row0 = ix->nrows;
		if (i % VIDX_TOP == 0)
			ix->top[i / VIDX_TOP] = start;
	}
	ix->ntop = (lt.nf + VIDX_TOP - 1) / VIDX_TOP;
	if (LD64(v->map + RH_SEQ) != s1)
		goto fail; /* rewritten under us: what we read is void */
	ix->seq = s1;
	ix->off = lt.off;
	ix->n = lt.nf;
	ix->fdeoff = lt.fdeoff;
	ix->sf = lt.sf;
	ix->ok = true;
	__atomic_store_n(&ix->builds, ix->builds + 1, __ATOMIC_RELAXED);
	return true;
fail:
	ix->ok = false;
	return false;
}

/* The last of st[0, len) <= pc (0 if none): 8-ary and branch-free. */
static uint32_t last_le(const uint64_t *st, uint32_t len, uint64_t pc)
{
	uint32_t b = 0;
	while (len >= 8) {
		uint32_t step = len / 8, c = 0;
		for (uint32_t j = 1; j < 8; j++)
			c += st[b + j * step] <= pc;
		b += c * step;
		len = c < 7 ? step : len - 7 * step;
	}
	uint32_t c = 0;
	for (uint32_t j = 1; j < len; j++)
		c += st[b + j] <= pc;
	return b + c;
}

/* The function and row at pc in the index (the table's answer). */
static int vidx_find(const struct vidx *ix, uint64_t pc, uint64_t *fs,
		     uint32_t *fz, struct jsf_row *row)
{
	uint32_t n = ix->n;
	if (!n)
		return -ENOENT;
	/* Last start <= pc (or the first): its block, then in it. */
	uint32_t b = last_le(ix->top, ix->ntop, pc) * VIDX_TOP,
		 len = n - b < VIDX_TOP ? n - b : VIDX_TOP;
	b += last_le(ix->start + b, len, pc);
	uint64_t start = ix->start[b];
	uint32_t size = ix->fn[b].size;
	if (start > pc || pc - start >= size)
		return -ENOENT;
	uint32_t off = (uint32_t)(pc - start), r0 = ix->fn[b].row0,
		 nr = ix->fn[b + 1].row0 - r0, k = 1;
	/* k >= 1: the first row is at 0 (checked when indexed) */
	const struct vrow *vr = ix->rows + r0;
	if (nr <= VIDX_SCAN) { /* each row: no branch on the offsets */
		for (uint32_t j = 1; j < nr; j++)
			k += vr[j].offset <= off;
	} else {
		while (k < nr && vr[k].offset <= off)
			k++;
	}
	if (fs)
		*fs = start;
	if (fz)
		*fz = size;
	if (row)
		vrow_get(row, &vr[k - 1]);
	return 0;
}

/* Enter the view's private indexes: false if another thread owns them or
 * this is a signal handler interrupting the owner's own lookup. */
static bool vidx_enter(struct vidx *ix)
{
	if (!ix)
		return false;
	/* pthread_self: a load from the thread pointer, AS-safe in glibc */
	uintptr_t me = (uintptr_t)pthread_self(),
		  ow = __atomic_load_n(&ix->owner, __ATOMIC_ACQUIRE);
	if (ow != me && (ow || !__atomic_compare_exchange_n(
				   &ix->owner, &ow, me, false, __ATOMIC_ACQ_REL,
				   __ATOMIC_ACQUIRE)))
		return false; /* another thread's */
	if (__atomic_load_n(&ix->busy, __ATOMIC_RELAXED))
		return false; /* a signal handler interrupting our own lookup */
	__atomic_store_n(&ix->busy, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return true;
}

static void vidx_leave(struct vidx *ix)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&ix->busy, 0, __ATOMIC_RELAXED);
}

/*
 * A "now" lookup through the index, if this thread may own it and it
 * describes the current table (or can be brought to): 1 answered (*rc),
 * 0 not (read the shared table), -1 the table changed under us (retry).
 */
static int vidx_lookup(const struct jsf_view *v, uint64_t s1, uint64_t pc,
		       uint64_t *fs, uint32_t *fz, struct jsf_row *row, int *rc)
{
	struct vidx *ix = v->ix;
	if (!vidx_enter(ix))
		return 0;
	int got = 0;
	uint64_t off = LD64(v->map + RH_SEC_OFF);
	if (ix->ok && ix->seq == s1 && ix->off == off) {
		uint32_t nf = LD32A(ix->sf + SH_NUM_FDES);
		uint32_t fdeoff = LD32(ix->sf + SH_FDEOFF);
		if (LD64(v->map + RH_SEQ) != s1) {
			got = -1;
			goto out;
		}
		if (fdeoff == ix->fdeoff && nf == ix->n)
			got = 1;
		else if (fdeoff == ix->fdeoff && nf > ix->n)
			got = vidx_build(v, ix, s1); /* appended */
		if (got) {
			*rc = vidx_find(ix, pc, fs, fz, row);
			goto out;
		}
	}
	/* Not indexed: count this table's direct lookups, index it once
	 * they have cost about what indexing it costs. */
	{
		uint32_t nf = 0;
		if (ix->pend_seq == s1 && ix->pend_off == off) {
			ix->pend_hits++;
			nf = ix->pend_n;
		} else {
			ix->pend_seq = s1;
			ix->pend_off = off;
			ix->pend_hits = 1;
			struct ltab lt;
			ix->pend_n = live_tab(v, &lt) ? UINT32_MAX : lt.nf;
			nf = ix->pend_n;
		}
		if (nf != UINT32_MAX && ix->pend_hits > nf / 2 + 8) {
			ix->pend_hits = 0;
			ix->ok = false;
			if (vidx_build(v, ix, s1)) {
				*rc = vidx_find(ix, pc, fs, fz, row);
				got = 1;
			}
		}
	}
out:
	__atomic_store_n(&ix->answers, ix->answers + (got > 0),
			 __ATOMIC_RELAXED);
	vidx_leave(ix);
	return got;
}

/*
 * The reader's index of the function log, for lookups at past times
 * (docs/ABI.md, "Implementation notes"). Without it such a lookup scans the
 * log newest first, as the ABI describes; with it, a private copy of the
 * log's immutable fields (start, size, add time) sorted by start, each with
 * the largest end among it and those before, finds the candidates for pc
 * by a binary search and a short walk back, and reads from the shared log
 * only their remove times and the answer. Within one even seq and sec_off
 * the log only grows and only its remove times change (§3.1, §3.2), so that
 * key names it; entries appended since are scanned directly (they are the
 * newest). The view's index owner alone uses it (vidx_enter), and indexes a
 * table after TIDX_AFTER direct time lookups of it, so that a producer that
 * rewrites its table all the time costs little more than the direct scan.
 */
struct tent {
	uint64_t start, add,
	    maxend;	  /* maxend: of this entry and those before */
	uint32_t size, i; /* i: the log index */
};
struct tidx {
	bool ok;
	uint64_t seq, off; /* key: seq, sec_off */
	uint32_t n, cap;   /* log entries indexed ([0, n)), room */
	uint64_t pend_seq, pend_off;
	uint32_t pend_hits;
	uint64_t builds, answers; /* for tests: sf_view_tindex_stats */
	struct tent e[];
};

static bool tent_less(const struct tent *a, const struct tent *b)
{
	return a->start < b->start || (a->start == b->start && a->i < b->i);
}

static void tent_sift(struct tent *e, uint32_t i, uint32_t n)
{
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			return;
		if (c + 1 < n && tent_less(&e[c], &e[c + 1]))
			c++;
		if (!tent_less(&e[i], &e[c]))
			return;
		struct tent t = e[i];
		e[i] = e[c];
		e[c] = t;
		i = c;
	}
}

/* Index log entries [0, n) of a table read at seq s1; false if not. A
 * heapsort: no allocation (a lookup may run in a signal handler). */
static bool tidx_build(const struct jsf_view *v, struct tidx *tx, uint64_t s1,
		       const struct ltab *lt, const uint8_t *le, uint32_t n)
{
	tx->ok = false;
	if (!tx->cap)
		tx->cap = (uint32_t)((TIDX_BYTES - sizeof(*tx)) /
				     sizeof(struct tent));
	if (n > tx->cap)
		return false;
	struct tent *e = tx->e;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *p = le + (size_t)i * SF_LOG_ENTRY_SIZE;
		e[i] = (struct tent){.start = LD64(p + LE_START),
				     .add = LD64(p + LE_ADD),
				     .size = LD32(p + LE_SIZE),
				     .i = i};
		if (e[i].start + e[i].size < e[i].start)
			return false;
	}
	for (uint32_t i = n / 2; i-- > 0;)
		tent_sift(e, i, n);
	for (uint32_t k = n; k-- > 1;) {
		struct tent t = e[0];
		e[0] = e[k];
		e[k] = t;
		tent_sift(e, 0, k);
	}
	uint64_t maxend = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t end = e[i].start + e[i].size;
		maxend = end > maxend ? end : maxend;
		e[i].maxend = maxend;
	}
	if (LD64(v->map + RH_SEQ) != s1)
		return false; /* rewritten under us: what we read is void */
	tx->seq = s1;
	tx->off = lt->off;
	tx->n = n;
	tx->ok = true;
	__atomic_store_n(&tx->builds, tx->builds + 1, __ATOMIC_RELAXED);
	return true;
}

/* The newest log entry that covers pc at t (0: now), or -1: the scan's
 * answer. */
static int64_t tidx_find(const struct tidx *tx, const uint8_t *le,
			 uint32_t log_n, uint64_t pc, uint64_t t)
{
	for (uint32_t i = log_n; i-- > tx->n;) /* appended: the newest */
		if (sf_log_covers(le + (size_t)i * SF_LOG_ENTRY_SIZE, pc, t))
			return i;
	const struct tent *e = tx->e;
	uint32_t lo = 0, hi = tx->n;
	while (lo < hi) { /* the first start > pc */
		uint32_t mid = lo + (hi - lo) / 2;
		if (e[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	int64_t best = -1;
	for (uint32_t k = lo; k-- > 0 && e[k].maxend > pc;) {
		const struct tent *c = &e[k];
		if (pc - c->start >= c->size || (t && c->add > t) ||
		    (int64_t)c->i <= best)
			continue;
		struct sf_ent f = {
		    .add = c->add,
		    .remove = LD64(le + (size_t)c->i * SF_LOG_ENTRY_SIZE +
				   LE_REMOVE)};
		if (sf_alive(&f, t))
			best = c->i;
	}
	return best;
}

/*
 * Through the log's index, if this thread owns the view's index: the log
 * index of the newest entry that covers pc at t (0: now), -1 if none, -2
 * if not answered here (scan the log). *lt, *le: the table and log it
 * read, valid if the caller's seq check holds.
 */
static int64_t tidx_search(const struct jsf_view *v, uint64_t s1, uint64_t pc,
			   uint64_t t, struct ltab *lt, const uint8_t **le)
{
	struct vidx *ix = v->ix;
	if (!ix || !ix->tx || !vidx_enter(ix))
		return -2;
	struct tidx *tx = ix->tx;
	int64_t i = -2;
	uint32_t log_n;
	if (live_tab(v, lt) || log_of(lt, le, &log_n))
		goto out; /* the scan says what is wrong */
	if (!tx->ok || tx->seq != s1 || tx->off != lt->off || log_n < tx->n ||
	    log_n - tx->n > 64 + tx->n / 8) {
		if (tx->pend_seq == s1 && tx->pend_off == lt->off) {
			tx->pend_hits++;
		} else {
			tx->pend_seq = s1;
			tx->pend_off = lt->off;
			tx->pend_hits = 1;
		}
		if (tx->pend_hits <= TIDX_AFTER)
			goto out;
		tx->pend_hits = 0;
		if (!tidx_build(v, tx, s1, lt, *le, log_n))
			goto out;
	}
	i = tidx_find(tx, *le, log_n, pc, t);
	__atomic_store_n(&tx->answers, tx->answers + 1, __ATOMIC_RELAXED);
out:
	vidx_leave(ix);
	return i;
}

/* For names.c: tidx_search's answer alone (-2: scan the log). */
int64_t sf_view_log_find(const struct jsf_view *v, uint64_t s1, uint64_t pc,
			 uint64_t t)
{
	struct ltab lt;
	const uint8_t *le;
	return tidx_search(v, s1, pc, t, &lt, &le);
}

/*
 * A past-time lookup through the log's index: 1 answered (*rc), 0 not
 * (scan the log), -1 the table changed under us (retry).
 */
static int tidx_lookup(const struct jsf_view *v, uint64_t s1, uint64_t pc,
		       uint64_t t, uint64_t *fs, uint32_t *fz,
		       struct jsf_row *row, int *rc)
{
	struct ltab lt;
	const uint8_t *le;
	int64_t i = tidx_search(v, s1, pc, t, &lt, &le);
	if (i == -2)
		return 0;
	if (i < 0) {
		*rc = -ENOENT;
	} else {
		const uint8_t *p = le + (size_t)i * SF_LOG_ENTRY_SIZE;
		*rc = func_answer(&lt, LD64(p + LE_START), LD32(p + LE_SIZE),
				  LD32(p + LE_ATTR), pc, fs, fz, row);
	}
	return LD64(v->map + RH_SEQ) == s1 ? 1 : -1;
}

int jsf_view_lookup(const struct jsf_view *v, uint64_t pc, uint64_t at_ns,
		    uint64_t *func_start, uint32_t *func_size,
		    struct jsf_row *row)
{
	if (!v)
		return -EINVAL;
	if (!v->live) {
		const struct sf_ent *f = sf_snap_find(&v->snap, pc, at_ns);
		if (!f)
			return -ENOENT;
		if (func_start)
			*func_start = f->start;
		if (func_size)
			*func_size = f->size;
		if (row)
			*row = sf_snap_row(&v->snap, f, pc);
		return 0;
	}
	for (int tries = 0; tries < LOOKUP_TRIES; tries++) {
		uint64_t s1 = LD64A(v->map + RH_SEQ);
		if (s1 & 1) {
			if (tries > 64)
				sched_yield();
			continue;
		}
		int rc, got = at_ns == 0
				  ? vidx_lookup(v, s1, pc, func_start,
						func_size, row, &rc)
				  : tidx_lookup(v, s1, pc, at_ns, func_start,
						func_size, row, &rc);
		if (got > 0)
			return rc;
		if (got < 0)
			continue;
		uint64_t fs = 0;
		uint32_t fz = 0;
		struct jsf_row r;
		rc = live_once(v, pc, at_ns, &fs, &fz, &r);
		if (LD64(v->map + RH_SEQ) != s1)
			continue; /* rewritten under us: what we read is void */
		if (rc == 0) {
			if (func_start)
				*func_start = fs;
			if (func_size)
				*func_size = fz;
			if (row)
				*row = r;
		}
		return rc;
	}
	return -EAGAIN;
}

/* The snapshot to iterate: the frozen one, or a fresh live one. */
static int get_snap(const struct jsf_view *v, struct sf_snap *tmp,
		    const struct sf_snap **out)
{
	if (!v->live) {
		*out = &v->snap;
		return 0;
	}
	char msg[256];
	int err = snap_from_map(v->fd, (uint64_t *)&v->checked, v->map,
				v->map_len, tmp, msg, sizeof(msg));
	*out = tmp;
	return err;
}

/* The header's facts (everything but the counts) into *i. */
static void info_of(const struct sf_rinfo *ri, bool live, bool recovered,
		    uint64_t file_size, uint64_t seq, struct jsf_view_info *i)
{
	i->abi_version = ri->abi;
	i->arch = ri->arch;
	i->producer_pid = ri->pid;
	i->live = live;
	i->recovered = recovered;
	i->create_ns = ri->create_ns;
	i->closed = !live && ri->state == SF_STATE_CLOSED;
	i->close_ns = live ? 0 : ri->close_ns;
	i->file_size = file_size;
	i->seq = seq;
}

int jsf_view_info(const struct jsf_view *v, struct jsf_view_info *info)
{
	if (!v || !info || info->sz < sizeof(size_t))
		return -EINVAL;
	struct jsf_view_info i = {.sz = info->sz};
	struct sf_snap tmp = {0};
	const struct sf_snap *s = NULL;
	/* the counts need a snapshot (of a live region: a copy of its whole
	 * current block); a caller whose sz stops before them gets the rest
	 * from the header alone */
	if (info->sz > offsetof(struct jsf_view_info, live_funcs)) {
		int err = get_snap(v, &tmp, &s);
		if (err)
			return err;
	}
	if (v->live)
		info_of(&v->ri, true, v->recovered,
			LD64A(v->map + RH_FILE_SIZE), LD64A(v->map + RH_SEQ),
			&i);
	else
		info_of(&v->ri, false, v->recovered, v->ri.file_size, v->ri.seq,
			&i);
	if (s) {
		i.live_funcs = s->nlive;
		i.logged_funcs = s->log_n;
	}
	sf_snap_free(&tmp);
	memcpy(info, &i, info->sz < sizeof(i) ? info->sz : sizeof(i));
	return 0;
}

int jsf_region_info(const char *path, struct jsf_view_info *info)
{
	view_err[0] = 0;
	if (!path || !info || info->sz < sizeof(size_t))
		return -EINVAL;
	int fd = -1;
	bool live = false;
	struct sf_rinfo ri = {0};
	int err =
	    open_region(path, &fd, &ri, &live, view_err, sizeof(view_err));
	if (err) {
		if (view_err[0])
			sf_fail(err, "%s", view_err);
		return err;
	}
	if (fd >= 0)
		close(fd);
	struct jsf_view_info i = {.sz = info->sz};
	info_of(&ri, live, !live && (ri.seq & 1), ri.file_size, ri.seq, &i);
	memcpy(info, &i, info->sz < sizeof(i) ? info->sz : sizeof(i));
	return 0;
}

int jsf_view_foreach(const struct jsf_view *v, uint64_t at_ns,
		     int (*cb)(const struct jsf_func *f, void *ctx), void *ctx)
{
	if (!v || !cb)
		return -EINVAL;
	struct sf_snap tmp = {0};
	const struct sf_snap *s;
	int err = get_snap(v, &tmp, &s);
	if (err)
		return err;
	int rc = 0;
	for (uint32_t i = 0; i < s->log_n && !rc; i++) {
		const struct sf_ent *e = &s->e[i];
		if (at_ns != JSF_ALL && !sf_alive(e, at_ns))
			continue;
		struct jsf_func f = {e->start, e->size,	  e->nrows,
				     e->add,   e->remove, s->rows + e->row0};
		rc = cb(&f, ctx);
	}
	sf_snap_free(&tmp);
	return rc;
}

void sf_view_index_stats(const struct jsf_view *v, uint64_t *builds,
			 uint64_t *answers)
{
	struct vidx *ix = v->ix;
	*builds = *answers = 0;
	if (!ix)
		return;
	/* (tests: after the owner's lookups ended) */
	*builds = __atomic_load_n(&ix->builds, __ATOMIC_RELAXED);
	*answers = __atomic_load_n(&ix->answers, __ATOMIC_RELAXED);
}

void sf_view_tindex_stats(const struct jsf_view *v, uint64_t *builds,
			  uint64_t *answers)
{
	struct tidx *tx = v->ix ? v->ix->tx : NULL;
	*builds = *answers = 0;
	if (!tx)
		return;
	*builds = __atomic_load_n(&tx->builds, __ATOMIC_RELAXED);
	*answers = __atomic_load_n(&tx->answers, __ATOMIC_RELAXED);
}

/* For export.c and validate.c: the view's snapshot. */
int sf_view_snap(const struct jsf_view *v, struct sf_snap *tmp,
		 const struct sf_snap **out)
{
	return get_snap(v, tmp, out);
}

/* For names.c: the live mapping and how much of it may be read now. */
const uint8_t *sf_view_live(const struct jsf_view *v, uint64_t *limit)
{
	if (!v->live)
		return NULL;
	*limit = live_limit(v->fd, (uint64_t *)&v->checked, v->map_len,
			    LD64A(v->map + RH_FILE_SIZE));
	return v->map;
}
