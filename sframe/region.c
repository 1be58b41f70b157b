/* SPDX-License-Identifier: MIT */
/*
 * The producer side of a region: a file-backed shared mapping holding a valid
 * SFrame V3 section (sorted, PC-relative starts) plus an append-only function
 * log. The protocol and layout are specified in docs/ABI.md; the comments
 * here name the step of that protocol each store implements.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A block's pages are made present (and locked) in chunks of CHUNK bytes,
 * each before anything in it is written (docs/ABI.md 3.6). */
#define CHUNK 65536u
/* A rebuild's growth: the new block's log, FRE and name capacities are
 * this many times what it keeps, from MIG_GROW_MIN kept entries on, when
 * no history is dropped (mig_alloc). */
#define MIG_GROW 8u
#define MIG_GROW_MIN 4096u
struct blkpop {
	uint8_t *bits;	 /* one bit a chunk */
	uint64_t locked; /* bytes of the block mlocked */
};

/* The incremental rebuild (docs/ABI.md 3.3): a scan (only when history is
 * dropped) picks the entries to drop, then a copy carries the old block's
 * log entries, in log order, into the new one, a bounded step per add or
 * remove, until it has caught up with the log; then the switch. */
enum { MIG_OFF, MIG_SCAN, MIG_COPY };
struct mig {
	int phase;
	uint32_t pos;  /* next old log entry to pass */
	uint32_t skip; /* removed entries still to drop as they are passed */
	uint32_t scan_end; /* entries [0, scan_end) were decided by the scan */
	uint32_t kn;	   /* entries kept (scan) or written (copy) */
	uint64_t kfre, knames; /* scan: bytes of the kept entries */
	uint64_t dropped;
	uint32_t *remap; /* old log_cap: new index, UINT32_MAX dropped */
	uint64_t off, total, fix_end, fix_done;
	uint8_t *blk;
	uint32_t fde_cap, fre_cap, log_cap, log_off, fre_off;
	uint32_t fre_used, num_fres;
	uint32_t *lattr;
	uint32_t *wlog;
	struct blkpop pop;
};

struct jsf_region {
	pthread_mutex_t mu;
	int fd;
	char *path;
	uint8_t *base; /* mapping of max_size bytes */
	uint64_t max_size, file_size;
	uint32_t arch, history_max, initial;
	/* the runtime extension's bytes after the header page (docs/ABI.md
	 * 1.7): blocks go at blk_lo = 4096 + them, never below */
	uint32_t rtx_cap;
	uint64_t blk_lo;
	/* current section block */
	uint64_t sec_off, sec_total;
	uint8_t *sf;   /* SFrame header */
	uint8_t *fde0; /* FDE slot 0 */
	uint8_t *fre;  /* FRE sub-section */
	uint8_t *log;
	uint32_t fde_cap, fre_cap, log_cap;
	uint32_t lo, n; /* live window: slots [lo, lo+n) */
	uint32_t fre_used, num_fres, log_n;
	/* The FDE slots themselves are the producer's index of the live
	 * functions: it is their only writer, so what it reads there is what
	 * it wrote (a private copy had to move with every shift, a quarter of
	 * a random add's time at 8,000 functions). */
	/* log_cap entries: each log entry's attribute record offset. Records
	 * are bump-allocated in log order (and a rebuild keeps that order), so
	 * these ascend and give each record's length as the distance to the
	 * next: a rebuild never decodes FREs to find it. */
	uint32_t *lattr;
	uint32_t *wlog; /* fde_cap entries: each slot's log entry */
	uint64_t seq, compactions, dropped;
	bool named;	    /* names given: every new block has a name area */
	bool mapped;	    /* maps given: every new block's records have one */
	uint32_t name_need; /* a rebuild's room for the name being added */
	struct sf_resid res;
	struct blkpop pop; /* the current block's populated chunks */
	struct mig mig;	   /* a new block being filled (docs/ABI.md 3.3) */
	bool mig_blocked;  /* no room for one: rebuild when full */
	uint64_t sync_rebuilds, op_copied, op_pages, max_copied, max_pages;
	/* the block retired at the last switch (a slow reader may still be
	 * on it): its pages are freed at the next one */
	uint64_t prev_off, prev_total;
};

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* --- seqlock writer side (docs/ABI.md, "Rewrites") --- */
static void seq_begin(struct jsf_region *r)
{
	r->seq++;
	ST64(r->base + RH_SEQ, r->seq); /* odd: rewrite in progress */
}

static void seq_end(struct jsf_region *r)
{
	r->seq++;
	ST64R(r->base + RH_SEQ, r->seq); /* even: table consistent */
}

/* The producer's own reads of the slots it wrote (no other writer, so no
 * ordering to ask for). */
#define LDO32(p) __atomic_load_n((const uint32_t *)(p), __ATOMIC_RELAXED)
#define LDO64(p) __atomic_load_n((const uint64_t *)(p), __ATOMIC_RELAXED)

/* FDE slot `slot` of the section block at blk (any block). */
static uint8_t *blk_slot(uint8_t *blk, uint32_t slot)
{
	return blk + SF_SHDR_SIZE + SFRAME_HDR_SIZE + 4 +
	       (size_t)slot * SFRAME_V3_FDE_SIZE;
}

static uint8_t *slot_at(const struct jsf_region *r, uint32_t slot)
{
	return r->fde0 + (size_t)slot * SFRAME_V3_FDE_SIZE;
}

/* FDE_FUNC_START_PCREL: start = address of the field + value. */
static uint64_t slot_start(const struct jsf_region *r, uint32_t slot)
{
	const uint8_t *p = slot_at(r, slot);
	return (uint64_t)(uintptr_t)p + LDO64(p);
}

static uint32_t slot_size(const struct jsf_region *r, uint32_t slot)
{
	return LDO32(slot_at(r, slot) + 8);
}

/* Write the FDE slot at p (in any block). */
static void put_fde(uint8_t *p, uint64_t start, uint32_t size, uint32_t attr)
{
	ST64(p, start - (uint64_t)(uintptr_t)p);
	/* func_size and func_start_fre_off in one aligned store */
	ST64(p + 8, (uint64_t)size | (uint64_t)attr << 32);
}

/* Copy n slots of the window from `from` to the block's slots at `to`
 * (16-byte slots, in a direction that is safe when they overlap): each
 * PC-relative start changes by the distance it moves. */
static void copy_slots(uint8_t *to, const uint8_t *from, uint32_t n)
{
	uint64_t d = (uint64_t)(uintptr_t)from - (uint64_t)(uintptr_t)to;
	size_t bytes = (size_t)n * SFRAME_V3_FDE_SIZE;
	if (to < from) {
		for (size_t o = 0; o < bytes; o += SFRAME_V3_FDE_SIZE) {
			uint64_t v = LDO64(from + o), w = LDO64(from + o + 8);
			ST64(to + o, v + d);
			ST64(to + o + 8, w);
		}
	} else {
		for (size_t o = bytes; o;) {
			o -= SFRAME_V3_FDE_SIZE;
			uint64_t v = LDO64(from + o), w = LDO64(from + o + 8);
			ST64(to + o, v + d);
			ST64(to + o + 8, w);
		}
	}
}

/* Move count slots from `from` to `to` (inside a rewrite), with their
 * log entries (wlog). */
static void move_range(struct jsf_region *r, uint32_t from, uint32_t to,
		       uint32_t count)
{
	if (!count || from == to)
		return;
	memmove(&r->wlog[to], &r->wlog[from], count * sizeof(*r->wlog));
	copy_slots(slot_at(r, to), slot_at(r, from), count);
}

static void publish_window(struct jsf_region *r)
{
	ST32(r->sf + SH_FDEOFF, 4 + r->lo * SFRAME_V3_FDE_SIZE);
	ST32R(r->sf + SH_NUM_FDES, r->n);
}

/* Move the whole window so that it starts at new_lo (inside a rewrite). */
static void shift_window(struct jsf_region *r, uint32_t new_lo)
{
	move_range(r, r->lo, new_lo, r->n);
	r->lo = new_lo;
}

/* First window position whose start is >= start. The ends first: a
 * JIT's code grows down (LuaJIT) or up through its areas, so most adds
 * land there, and the search's cold cache lines are not read. */
static uint32_t lower_bound(const struct jsf_region *r, uint64_t start)
{
	if (!r->n || start <= slot_start(r, r->lo))
		return 0;
	if (slot_start(r, r->lo + r->n - 1) < start)
		return r->n;
	uint32_t a = 1, b = r->n - 1;
	while (a < b) {
		uint32_t m = a + (b - a) / 2;
		if (slot_start(r, r->lo + m) < start)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

/* --- section block construction --- */

struct lent { /* a log entry being carried into a new section */
	uint64_t start, add, remove;
	uint32_t size, attr, len;
	uint32_t new_attr;
};

static uint64_t block_size(uint32_t fde_cap, uint32_t fre_cap, uint32_t log_cap,
			   uint32_t *log_off)
{
	uint64_t sec = SFRAME_HDR_SIZE + 4 + (uint64_t)fde_cap * 16 + fre_cap;
	uint64_t lo = round_up(SF_SHDR_SIZE + sec, 8);
	*log_off = (uint32_t)lo;
	return round_up(lo + (uint64_t)log_cap * SF_LOG_ENTRY_SIZE, 4096);
}

static void set_section(struct jsf_region *r, uint64_t off, uint32_t fde_cap,
			uint32_t fre_cap, uint32_t log_cap, uint32_t log_off,
			uint64_t total)
{
	uint8_t *blk = r->base + off;
	r->sec_off = off;
	r->sec_total = total;
	r->sf = blk + SF_SHDR_SIZE;
	r->fde0 = blk_slot(blk, 0);
	r->fre = r->fde0 + (size_t)fde_cap * SFRAME_V3_FDE_SIZE;
	r->log = blk + log_off;
	r->fde_cap = fde_cap;
	r->fre_cap = fre_cap;
	r->log_cap = log_cap;
}

static int ensure_file(struct jsf_region *r, uint64_t end)
{
	if (end <= r->file_size)
		return 0;
	if (ftruncate(r->fd, (off_t)end) < 0)
		return -errno;
	r->file_size = end;
	ST64R(r->base + RH_FILE_SIZE, end); /* readers may now touch it */
	return 0;
}

static void write_log_entry(uint8_t *p, const struct lent *e)
{
	ST64(p + LE_START, e->start);
	ST64(p + LE_ADD, e->add);
	ST64(p + LE_REMOVE, e->remove);
	ST32(p + LE_SIZE, e->size);
	ST32(p + LE_ATTR, e->new_attr);
}

/* A new block's own header (no reader can reach the block yet). */
static void block_header(uint8_t *blk, uint64_t total, uint32_t fde_cap,
			 uint32_t fre_cap, uint32_t log_cap, uint32_t log_off)
{
	for (uint64_t i = 0; i < SF_SHDR_SIZE; i += 8)
		ST64(blk + i, 0);
	copy_out(blk + SB_MAGIC, (const uint8_t *)SF_SECTION_MAGIC, 8);
	ST64(blk + SB_TOTAL, total);
	ST32(blk + SB_FDE_CAP, fde_cap);
	ST32(blk + SB_FRE_CAP, fre_cap);
	ST32(blk + SB_LOG_CAP, log_cap);
	ST32(blk + SB_LOG_OFF, log_off);
	ST32(blk + SB_SEC_LEN,
	     SFRAME_HDR_SIZE + 4 + (uint64_t)fde_cap * 16 + fre_cap);
}

/* A new block's SFrame header, its FRE sub-section as filled. */
static void sframe_header(const struct jsf_region *r, uint8_t *blk,
			  uint32_t num_fres, uint32_t fre_used,
			  uint32_t fde_cap)
{
	uint8_t *sf = blk + SF_SHDR_SIZE;
	ST32(
	    sf,
	    SFRAME_MAGIC | (SFRAME_V3 << 16) |
		((uint32_t)(SFRAME_F_FDE_SORTED | SFRAME_F_FDE_FUNC_START_PCREL)
		 << 24));
	ST32(sf + 4, (uint32_t)r->arch | (0u << 8) |
			 ((uint32_t)(uint8_t)SFRAME_RA_FIXED_X86_64 << 16));
	ST32(sf + SH_NUM_FRES, num_fres);
	ST32(sf + SH_FRE_LEN, fre_used);
	ST32(sf + SH_FREOFF, 4 + fde_cap * SFRAME_V3_FDE_SIZE);
}

/* --- resident chunks (docs/ABI.md 3.6) --- */

static bool pop_init(struct blkpop *bp, uint64_t total)
{
	bp->locked = 0;
	bp->bits = calloc((total + CHUNK - 1) / CHUNK / 8 + 1, 1);
	return bp->bits != NULL;
}

/* hold's loop: chunks c..ce, some not present yet. */
static __attribute__((noinline)) int
hold_chunks(struct jsf_region *r, uint8_t *blk, struct blkpop *bp,
	    uint64_t total, uint64_t c, uint64_t ce)
{
	for (; c <= ce; c++) {
		if (bp->bits[c >> 3] & (1u << (c & 7)))
			continue;
		uint64_t s = c * CHUNK,
			 l = total - s < CHUNK ? total - s : CHUNK;
		bool locked;
		int err = sf_res_hold(&r->res, blk + s, l, &locked);
		if (locked)
			bp->locked += l;
		if (err) /* not marked: tried again when next needed */
			return err;
		bp->bits[c >> 3] |= (uint8_t)(1u << (c & 7));
		r->op_pages += (l + 4095) / 4096;
	}
	return 0;
}

/* Make the chunks of [a, a+len) of a block (offsets in it) present, and
 * locked when allowed, before anything there is written or published:
 * 0, or -errno when they cannot be made (a full file system), and then
 * nothing may be stored there (it would raise SIGBUS in the host). Almost
 * every call is within one chunk already present: one bit test, inline. */
static inline int hold(struct jsf_region *r, uint8_t *blk, struct blkpop *bp,
		       uint64_t total, uint64_t a, uint64_t len)
{
	if (!len)
		return 0;
	uint64_t c = a / CHUNK, ce = (a + len - 1) / CHUNK;
	if (c == ce && (bp->bits[c >> 3] & (1u << (c & 7))))
		return 0;
	return hold_chunks(r, blk, bp, total, c, ce);
}

/* The pages log entry k of a block is written into, before it is: its
 * record's fl FRE bytes at block offset fre_at, its log entry (the log
 * at block offset log_off) and, in a named block, its name index slot
 * and nl name bytes at the end of the name area. */
static int hold_entry(struct jsf_region *r, uint8_t *blk, struct blkpop *bp,
		      uint64_t total, uint64_t fre_at, uint32_t fl,
		      uint64_t log_off, uint32_t k, uint32_t nl)
{
	int err = hold(r, blk, bp, total, fre_at, fl);
	if (!err)
		err = hold(r, blk, bp, total,
			   log_off + (uint64_t)k * SF_LOG_ENTRY_SIZE,
			   SF_LOG_ENTRY_SIZE);
	if (!err && (LD32(blk + SB_FEATURES) & SB_F_NAMES)) {
		err = hold(r, blk, bp, total,
			   LD32(blk + SB_NIDX_OFF) + 4 * (uint64_t)k, 4);
		if (!err)
			err = hold(r, blk, bp, total,
				   LD32(blk + SB_NAMES_OFF) +
				       (uint64_t)LD32(blk + SB_NAMES_LEN),
				   nl);
	}
	return err;
}

/* The whole block at once (a rebuild done in one call). */
static int hold_all(struct jsf_region *r, uint8_t *blk, struct blkpop *bp,
		    uint64_t total)
{
	bool locked;
	int err = sf_res_hold(&r->res, blk, total, &locked);
	if (locked)
		bp->locked = total;
	if (err)
		return err;
	uint64_t n = (total + CHUNK - 1) / CHUNK;
	for (uint64_t c = 0; c < n; c++)
		bp->bits[c >> 3] |= (uint8_t)(1u << (c & 7));
	r->op_pages += total / 4096;
	return 0;
}

static void pop_release(struct jsf_region *r, uint8_t *blk, uint64_t total,
			struct blkpop *bp)
{
	sf_res_release(&r->res, blk, total, bp->locked);
	free(bp->bits);
	bp->bits = NULL;
	bp->locked = 0;
}

/* --- the incremental rebuild (docs/ABI.md 3.3) --- */

static uint32_t fre_len_of(const struct jsf_region *r, uint32_t i)
{
	return (i + 1 < r->log_n ? r->lattr[i + 1] : r->fre_used) - r->lattr[i];
}

static void mig_free(struct mig *m)
{
	free(m->remap);
	free(m->lattr);
	free(m->wlog);
	free(m->pop.bits);
	memset(m, 0, sizeof(*m));
	m->remap = m->lattr = m->wlog = NULL; /* (for clang-analyzer, which */
	m->pop.bits = NULL;		      /* does not follow the memset) */
	m->phase = MIG_OFF;
}

/* Give up a migration (its block was never reachable). */
static void mig_abort(struct jsf_region *r)
{
	struct mig *m = &r->mig;
	if (m->phase == MIG_OFF)
		return;
	if (m->pop.bits)
		sf_res_release(&r->res, m->blk, m->total, m->pop.locked);
	mig_free(m);
}

static uint64_t max3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a > b ? a : b;
	return m > c ? m : c;
}

/* Lay out and set up the new block from what the scan found (kn entries
 * of kfre FRE bytes and knames name bytes kept), with room for everything
 * the old block can still take: the copy can always finish. */
static int mig_alloc(struct jsf_region *r)
{
	struct mig *m = &r->mig;
	const uint8_t *old = r->base + r->sec_off;
	bool names = LD32(old + SB_FEATURES) & SB_F_NAMES;
	bool srcmap = LD32(old + SB_FEATURES) & SB_F_SRCMAP;
	uint64_t room_log = r->log_cap - r->log_n,
		 room_fre = r->fre_cap - r->fre_used;
	uint64_t fde_cap =
	    max3(4 * (uint64_t)r->n + 16, r->fde_cap, r->initial);
	if (fde_cap > 0x7ffffff)
		return -ENOSPC;
	/* The parts that keep history (the log, FRE and name bytes) get 4
	 * times what is kept; a region that only grows (no history dropped:
	 * the scan did not run), once it is large, MIG_GROW times, unless
	 * that does not fit. The next rebuild starts at half of it, so each
	 * entry is copied about g / (g - 2) times over the region's growth:
	 * 2 with 4, 4/3 with 8. Unused capacity is a hole in the file, not
	 * memory (3.6): it costs at most a partly used chunk per part. */
	uint64_t log_cap = 0, fre_cap = 0, total = 0, off = 0;
	uint32_t log_off = 0;
	struct sf_nlay nlay;
	uint64_t g0 = !m->scan_end && m->kn >= MIG_GROW_MIN ? MIG_GROW : 4;
	for (uint64_t g = g0;; g = 4) {
		log_cap =
		    max3(g * m->kn + 16, m->kn + room_log + 16, r->initial);
		fre_cap = round_up((g * m->kfre > m->kfre + room_fre
					? g * m->kfre
					: m->kfre + room_fre) +
				       1024,
				   64);
		if (log_cap <= 0x7ffffff && fre_cap <= 0x7fffffff) {
			total = block_size((uint32_t)fde_cap, (uint32_t)fre_cap,
					   (uint32_t)log_cap, &log_off);
			if (names) {
				uint64_t room_n = LD32(old + SB_NAMES_CAP) -
						  LD32(old + SB_NAMES_LEN);
				uint64_t k = m->knames;
				total = sf_names_layout_cap(
				    log_off, (uint32_t)log_cap,
				    (g * k > k + room_n ? g * k : k + room_n) +
					SF_NAMES_FIRST + 1024,
				    &nlay);
			}
			off = r->blk_lo;
			if (off + total > r->sec_off)
				off = round_up(r->sec_off + r->sec_total, 4096);
			if (off + total <= r->max_size)
				break;
		}
		if (g == 4)
			return -ENOSPC;
	}
	m->lattr = malloc(log_cap * sizeof(*m->lattr));
	m->wlog = malloc(fde_cap * sizeof(*m->wlog));
	if (!m->lattr || !m->wlog || !pop_init(&m->pop, total))
		return -ENOMEM;
	int err = ensure_file(r, off + total);
	if (err)
		return err;
	m->off = off;
	m->total = total;
	m->blk = r->base + off;
	m->fde_cap = (uint32_t)fde_cap;
	m->fre_cap = (uint32_t)fre_cap;
	m->log_cap = (uint32_t)log_cap;
	m->log_off = log_off;
	m->fre_off = (uint32_t)(SF_SHDR_SIZE + SFRAME_HDR_SIZE + 4 +
				fde_cap * SFRAME_V3_FDE_SIZE);
	m->fix_end = m->fre_off;
	m->fix_done = CHUNK < m->fix_end ? CHUNK : m->fix_end;
	uint8_t *blk = m->blk;
	err = hold(r, blk, &m->pop, total, 0, m->fix_done);
	if (err)
		return err;
	block_header(blk, total, (uint32_t)fde_cap, (uint32_t)fre_cap,
		     (uint32_t)log_cap, log_off);
	if (names) {
		err = hold(r, blk, &m->pop, total, nlay.names_off,
			   SF_NAMES_FIRST);
		if (err)
			return err;
		sf_names_init(blk, &nlay, srcmap);
	}
	m->kn = 0;
	m->pos = 0;
	m->phase = MIG_COPY;
	return 0;
}

/* Start a migration: the current block passed half of one of its
 * capacities. O(1): the scan and the copy run in later steps. */
static void mig_start(struct jsf_region *r)
{
	struct mig *m = &r->mig;
	uint32_t nhist = r->log_n - r->n;
	uint32_t keep = nhist > r->history_max ? r->history_max : nhist;
	memset(m, 0, sizeof(*m));
	m->remap = malloc((r->log_cap ? r->log_cap : 1) * sizeof(*m->remap));
	if (!m->remap) {
		r->mig_blocked = true;
		return;
	}
	m->skip = nhist - keep;
	if (m->skip) { /* which ones: the scan decides, then the layout */
		m->phase = MIG_SCAN;
		return;
	}
	const uint8_t *old = r->base + r->sec_off;
	m->kn = r->log_n;
	m->kfre = r->fre_used;
	if (LD32(old + SB_FEATURES) & SB_F_NAMES)
		m->knames = LD32(old + SB_NAMES_LEN) - SF_NAMES_FIRST;
	m->phase = MIG_SCAN; /* for mig_alloc's failure path */
	if (mig_alloc(r)) {
		mig_abort(r);
		r->mig_blocked = true;
	}
}

/* Work a step may do: entries passed, FRE bytes and name bytes copied
 * (or, in the scan, passed). */
struct work {
	uint64_t ents, fre, names;
};

/* A remove's step: the constant an add's has too. */
static const struct work rm_step = {8, 256, 256};

static bool within(const struct work *w, const struct work *bud)
{
	return w->ents < bud->ents || w->fre < bud->fre ||
	       w->names < bud->names;
}

static void mig_switch(struct jsf_region *r);

/* Free the file's pages in [a, b) (a hole reads as zeros; on tmpfs they
 * were memory). A failure keeps them: nothing else changes. */
static void punch(const struct jsf_region *r, uint64_t a, uint64_t b)
{
	if (b > a && r->fd >= 0)
		(void)fallocate(r->fd,
				FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				(off_t)a, (off_t)(b - a));
}

/* A switch retired the block [old_off, +old_total): free the one retired
 * at the switch before (docs/ABI.md 3.3), but for what the current block
 * or the one just retired reuse of its space; remember the new one. */
static void retire(struct jsf_region *r, uint64_t old_off, uint64_t old_total)
{
	uint64_t a = r->prev_off, b = r->prev_off + r->prev_total;
	uint64_t k[2][2] = {{r->sec_off, r->sec_off + r->sec_total},
			    {old_off, old_off + old_total}};
	if (k[1][0] < k[0][0]) { /* the kept ranges in address order */
		uint64_t t0 = k[0][0], t1 = k[0][1];
		k[0][0] = k[1][0], k[0][1] = k[1][1];
		k[1][0] = t0, k[1][1] = t1;
	}
	for (int i = 0; i < 2 && a < b; i++) {
		if (k[i][1] <= a || k[i][0] >= b)
			continue; /* apart */
		punch(r, a, k[i][0] > a ? k[i][0] : a);
		a = k[i][1];
	}
	punch(r, a, b);
	r->prev_off = old_off;
	r->prev_total = old_total;
}

/* One bounded step of the migration (bud NULL: to the end). */
static void mig_step(struct jsf_region *r, const struct work *bud)
{
	struct mig *m = &r->mig;
	struct work w = {0, 0, 0}, nb;
	uint8_t *old = r->base + r->sec_off;
	if (bud && !(LD32(old + SB_FEATURES) & SB_F_NAMES)) {
		nb = *bud; /* no names: nothing to count there */
		nb.names = 0;
		bud = &nb;
	}
	while (m->phase == MIG_SCAN && (!bud || within(&w, bud))) {
		if (m->pos == r->log_n) {
			m->scan_end = m->pos;
			if (mig_alloc(r)) {
				mig_abort(r);
				r->mig_blocked = true;
				return;
			}
			break;
		}
		uint32_t i = m->pos++;
		uint32_t fl = fre_len_of(r, i), nl = sf_names_rec1(old, i);
		w.ents++;
		w.fre += fl;
		w.names += nl;
		if (m->skip &&
		    LD64(r->log + (size_t)i * SF_LOG_ENTRY_SIZE + LE_REMOVE)) {
			m->skip--;
			m->remap[i] = UINT32_MAX;
			continue;
		}
		m->remap[i] = 0;
		m->kn++;
		m->kfre += fl;
		m->knames += nl;
	}
	if (m->phase != MIG_COPY)
		return;
	uint8_t *blk = m->blk, *nfre = blk + m->fre_off,
		*nlog = blk + m->log_off;
	while (m->pos < r->log_n && (!bud || within(&w, bud))) {
		uint32_t i = m->pos++;
		w.ents++;
		if (i < m->scan_end && m->remap[i] == UINT32_MAX) {
			m->dropped++;
			continue;
		}
		uint32_t k = m->kn++, fl = fre_len_of(r, i), at = r->lattr[i];
		m->remap[i] = k;
		/* its record and FREs, its log entry, its name: their pages
		 * first (none can be made: the migration is given up) */
		bool named = LD32(blk + SB_FEATURES) & SB_F_NAMES;
		uint32_t nl = named ? sf_names_rec1(old, i) : 0;
		if (hold_entry(r, blk, &m->pop, m->total,
			       m->fre_off + m->fre_used, fl, m->log_off, k, nl))
			goto give_up;
		copy_out(nfre + m->fre_used, r->fre + at, fl); /* (own) */
		m->lattr[k] = m->fre_used;
		m->fre_used += fl;
		m->num_fres += ldu(r->fre + at, 2);
		const uint8_t *p = r->log + (size_t)i * SF_LOG_ENTRY_SIZE;
		struct lent e = {.start = LD64(p + LE_START),
				 .add = LD64(p + LE_ADD),
				 .remove = LD64(p + LE_REMOVE),
				 .size = LD32(p + LE_SIZE),
				 .new_attr = m->lattr[k]};
		write_log_entry(nlog + (size_t)k * SF_LOG_ENTRY_SIZE, &e);
		if (named)
			sf_names_copy1(blk, k, old, i, nl);
		w.fre += fl;
		w.names += nl;
		r->op_copied += fl + nl + SF_LOG_ENTRY_SIZE + 4;
	}
	/* the header and the FDE slots: two chunks a step */
	uint64_t fix = bud ? 2 * CHUNK : m->fix_end;
	if (m->fix_done < m->fix_end) {
		uint64_t e = m->fix_done + fix;
		if (e > m->fix_end)
			e = m->fix_end;
		if (hold(r, blk, &m->pop, m->total, m->fix_done,
			 e - m->fix_done))
			goto give_up;
		m->fix_done = e;
	}
	if (m->pos == r->log_n && m->fix_done == m->fix_end)
		mig_switch(r);
	return;
give_up: /* its block was never reachable; rebuild whole when full */
	mig_abort(r);
	r->mig_blocked = true;
}

/* The copy has caught up: the new block gets the live window (O(live)
 * FDE writes) and its SFrame header, and becomes the region's table. */
static void mig_switch(struct jsf_region *r)
{
	struct mig *m = &r->mig;
	uint8_t *blk = m->blk;
	uint32_t lo = (m->fde_cap - r->n) / 2;
	uint8_t *nfde = blk_slot(blk, lo);
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t nl = m->remap[r->wlog[r->lo + i]];
		put_fde(nfde + (size_t)i * SFRAME_V3_FDE_SIZE,
			slot_start(r, r->lo + i), slot_size(r, r->lo + i),
			m->lattr[nl]);
		m->wlog[lo + i] = nl;
	}
	ST32(blk + SB_LOG_N, m->kn);
	sframe_header(r, blk, m->num_fres, m->fre_used, m->fde_cap);
	uint64_t old_off = r->sec_off, old_total = r->sec_total;
	struct blkpop old_pop = r->pop;
	free(r->wlog);
	free(r->lattr);
	r->wlog = m->wlog;
	r->lattr = m->lattr;
	r->pop = m->pop;
	set_section(r, m->off, m->fde_cap, m->fre_cap, m->log_cap, m->log_off,
		    m->total);
	r->lo = lo;
	r->fre_used = m->fre_used;
	r->num_fres = m->num_fres;
	r->log_n = m->kn;
	publish_window(r);
	seq_begin(r);
	ST64(r->base + RH_SEC_OFF, m->off);
	seq_end(r);
	pop_release(r, r->base + old_off, old_total, &old_pop);
	retire(r, old_off, old_total);
	r->compactions++;
	r->dropped += m->dropped;
	free(m->remap);
	memset(m, 0, sizeof(*m));
}

/* After an add or a remove: start a migration once the current block is
 * past half of a capacity, or advance the one under way by `bud`. */
static void mig_tick(struct jsf_region *r, const struct work *bud)
{
	if (r->mig.phase == MIG_OFF) {
		const uint8_t *blk = r->base + r->sec_off;
		bool half = 2 * (uint64_t)r->fre_used > r->fre_cap ||
			    2 * (uint64_t)r->log_n > r->log_cap ||
			    2 * (uint64_t)r->n > r->fde_cap;
		if (LD32(blk + SB_FEATURES) & SB_F_NAMES)
			half |= 2 * (uint64_t)LD32(blk + SB_NAMES_LEN) >
				LD32(blk + SB_NAMES_CAP);
		if (!half || r->mig_blocked)
			return;
		mig_start(r);
	}
	if (r->mig.phase != MIG_OFF)
		mig_step(r, bud);
}

/* The work counters of one add or remove. */
static void op_begin(struct jsf_region *r)
{
	r->op_copied = r->op_pages = 0;
}

static void op_end(struct jsf_region *r)
{
	if (r->op_copied > r->max_copied)
		r->max_copied = r->op_copied;
	if (r->op_pages > r->max_pages)
		r->max_pages = r->op_pages;
}

/*
 * Build a new section holding every live function and the newest retained
 * history, with room for `need_fre` more FRE bytes, then switch readers to
 * it. On failure the current section is untouched. When every log entry is
 * kept (the usual growth), the FRE area and the log move as two blocks and
 * every offset stays; only when history is dropped are the log entries read
 * one by one (their record lengths from lattr, never by decoding FREs).
 */
static int rebuild(struct jsf_region *r, uint32_t need_fre, bool force_drop)
{
	uint32_t ln = r->log_n, nlive = r->n, nhist = ln - r->n;
	struct lent *ents = NULL;
	uint32_t *remap = NULL, *lattr = NULL, *wlog = NULL;
	struct blkpop np = {0};
	int err = -ENOMEM;
	mig_abort(r); /* a migration's block is never reachable: dropped */
	/* Drop the oldest history beyond history_max (and all if forced). */
	uint32_t keep_hist = nhist > r->history_max ? r->history_max : nhist;
	if (force_drop)
		keep_hist = 0;
	for (;;) {
		bool whole = keep_hist == nhist;
		uint32_t kept = ln;
		uint64_t fre_bytes = r->fre_used;
		if (!whole && !ents) {
			ents = calloc(ln ? ln : 1, sizeof(*ents));
			remap = calloc(ln ? ln : 1, sizeof(*remap));
			if (!ents || !remap)
				goto out;
			for (uint32_t i = 0; i < ln; i++) {
				const uint8_t *p =
				    r->log + (size_t)i * SF_LOG_ENTRY_SIZE;
				struct lent *e = &ents[i];
				e->start = LD64(p + LE_START);
				e->add = LD64(p + LE_ADD);
				e->remove = LD64(p + LE_REMOVE);
				e->size = LD32(p + LE_SIZE);
				/* Records are contiguous in log order. */
				e->attr = r->lattr[i];
				e->len = (i + 1 < ln ? r->lattr[i + 1]
						     : r->fre_used) -
					 e->attr;
			}
		}
		if (!whole) {
			uint32_t skip = nhist - keep_hist;
			kept = 0;
			fre_bytes = 0;
			for (uint32_t i = 0; i < ln; i++) {
				if (ents[i].remove && skip) {
					skip--;
					remap[i] = UINT32_MAX;
					continue;
				}
				remap[i] = kept++;
				fre_bytes += ents[i].len;
			}
		}
		uint64_t fde_cap = 2 * (uint64_t)nlive + 16;
		if (fde_cap < r->initial)
			fde_cap = r->initial;
		/* Never below what the live set already needed (16 bytes a
		 * slot): a producer whose live set empties and fills again (a
		 * LuaJIT flush, then recompiles) otherwise got a small index
		 * from the rebuild that grew its log, and rebuilt the whole
		 * block, all history with it, each time the live set grew
		 * back past it (6 of 13 rebuilds in bench/workloads/
		 * flushstorm, milliseconds each). */
		if (!force_drop && fde_cap < r->fde_cap)
			fde_cap = r->fde_cap;
		uint64_t log_cap = 2 * (uint64_t)kept + 16;
		if (log_cap < r->initial)
			log_cap = r->initial;
		uint64_t fre_cap =
		    round_up(2 * (fre_bytes + need_fre) + 1024, 64);
		uint32_t log_off = 0;
		uint64_t total = 0, off = r->blk_lo;
		bool fits = fde_cap <= 0x7ffffff && log_cap <= 0x7ffffff &&
			    fre_cap <= 0x7fffffff;
		struct sf_nlay nlay;
		if (fits) {
			total = block_size((uint32_t)fde_cap, (uint32_t)fre_cap,
					   (uint32_t)log_cap, &log_off);
			if (r->named) /* the name area after the log */
				total = sf_names_layout(
				    log_off, (uint32_t)log_cap,
				    sf_names_kept(r->sec_total
						      ? r->base + r->sec_off
						      : NULL,
						  remap, ln, r->mapped) +
					r->name_need,
				    &nlay);
			fits = total <= r->max_size;
		}
		if (fits) {
			if (off + total > r->sec_off)
				off = round_up(r->sec_off + r->sec_total, 4096);
			fits = off + total <= r->max_size;
		}
		if (!fits) {
			if (keep_hist == 0) {
				err = sf_fail(-ENOSPC,
					      "region full: max_size reached "
					      "even without history");
				goto out;
			}
			keep_hist /= 2;
			continue;
		}
		err = -ENOMEM;
		wlog = malloc(fde_cap * sizeof(*wlog));
		lattr = malloc(log_cap * sizeof(*lattr));
		if (!wlog || !lattr || !pop_init(&np, total))
			goto out;
		err = ensure_file(r, off + total);
		if (err)
			goto out;
		uint8_t *blk = r->base + off;
		/* Resident before any reader can reach it (docs/ABI.md 3.6),
		 * and before it is written: the pages populated writable in
		 * one call, not one write fault per page as the copy below
		 * first touches them (some 2-5 us each on ext4). When that
		 * succeeds, nothing can fail from there on. */
		uint64_t old_off = r->sec_off, old_total = r->sec_total;
		struct blkpop old_pop = r->pop;
		err = hold_all(r, blk, &np, total);
		if (err) {
			sf_res_release(&r->res, blk, total, np.locked);
			goto out;
		}
		r->pop = np;
		np.bits = NULL;
		/* Write the whole new block; no reader can reach it yet. */
		const uint8_t *old_fre = r->fre;
		block_header(blk, total, (uint32_t)fde_cap, (uint32_t)fre_cap,
			     (uint32_t)log_cap, log_off);
		uint32_t fre_used = 0, num_fres = 0;
		uint8_t *new_fre = blk + SF_SHDR_SIZE + SFRAME_HDR_SIZE + 4 +
				   fde_cap * SFRAME_V3_FDE_SIZE;
		uint8_t *new_log = blk + log_off;
		if (whole) {
			/* Records are bump-allocated in log order, so the used
			 * FRE area moves as one block, word by word (both areas
			 * are 8-aligned), and so does the log: every offset and
			 * index stays. */
			for (uint32_t b = 0; b + 8 <= r->fre_used; b += 8)
				ST64(new_fre + b, LD64(old_fre + b));
			for (uint32_t b = r->fre_used & ~7u; b < r->fre_used;
			     b++)
				ST8(new_fre + b, LD8(old_fre + b));
			for (size_t b = 0; b < (size_t)ln * SF_LOG_ENTRY_SIZE;
			     b += 8)
				ST64(new_log + b, LD64(r->log + b));
			fre_used = r->fre_used;
			num_fres = r->num_fres;
			if (ln)
				memcpy(lattr, r->lattr, ln * sizeof(*lattr));
		} else {
			for (uint32_t i = 0; i < ln; i++) {
				struct lent *e = &ents[i];
				if (remap[i] == UINT32_MAX)
					continue;
				e->new_attr = fre_used;
				copy_out(new_fre + fre_used, old_fre + e->attr,
					 e->len);
				fre_used += e->len;
				num_fres += ldu(old_fre + e->attr, 2);
				write_log_entry(new_log + (size_t)remap[i] *
							      SF_LOG_ENTRY_SIZE,
						e);
				lattr[remap[i]] = e->new_attr;
			}
		}
		if (r->named)
			sf_names_carry(blk, &nlay,
				       r->sec_total ? r->base + r->sec_off
						    : NULL,
				       remap, ln, r->mapped);
		ST32(blk + SB_LOG_N, kept);
		/* The new window, centred, from the current one (a whole
		 * copy keeps every record's offset). */
		uint32_t lo = (uint32_t)(fde_cap - nlive) / 2;
		uint8_t *nfde = blk_slot(blk, lo);
		if (whole && r->n)
			copy_slots(nfde, slot_at(r, r->lo), r->n);
		for (uint32_t i = 0; i < r->n; i++) {
			uint32_t li = r->wlog[r->lo + i];
			if (!whole) {
				put_fde(nfde + (size_t)i * SFRAME_V3_FDE_SIZE,
					slot_start(r, r->lo + i),
					slot_size(r, r->lo + i),
					ents[li].new_attr);
				li = remap[li];
			}
			wlog[lo + i] = li;
		}
		sframe_header(r, blk, num_fres, fre_used, (uint32_t)fde_cap);
		/* Switch: from here on this block is the region's table. */
		free(r->wlog);
		r->wlog = wlog;
		wlog = NULL;
		free(r->lattr);
		r->lattr = lattr;
		lattr = NULL;
		set_section(r, off, (uint32_t)fde_cap, (uint32_t)fre_cap,
			    (uint32_t)log_cap, log_off, total);
		r->lo = lo;
		r->fre_used = fre_used;
		r->num_fres = num_fres;
		r->log_n = kept;
		publish_window(r);
		seq_begin(r);
		ST64(r->base + RH_SEC_OFF, off);
		seq_end(r);
		if (old_total) { /* retired: no longer held */
			pop_release(r, r->base + old_off, old_total, &old_pop);
			retire(r, old_off, old_total);
		}
		r->compactions++;
		r->sync_rebuilds++;
		r->mig_blocked = false;
		r->op_copied += fre_used + (uint64_t)kept * SF_LOG_ENTRY_SIZE +
				(r->named ? LD32(blk + SB_NAMES_LEN) : 0);
		r->dropped += nhist - keep_hist;
		err = 0;
		goto out;
	}
out:
	free(np.bits);
	free(ents);
	free(remap);
	free(wlog);
	free(lattr);
	return err;
}

/* --- public producer API --- */

int jsf_region_create(struct jsf_region **out, const char *path,
		      const struct jsf_region_opts *opts)
{
	struct jsf_region_opts o = {0};
	int err;
	if (!out)
		return -EINVAL;
	*out = NULL;
	if ((err = sf_opts_in(&o, sizeof(o), opts, "jsf_region_opts")))
		return err;
	const struct sf_arch *arch = sf_arch(o.arch);
	if (!arch || !arch->implemented)
		return sf_fail(-EOPNOTSUPP,
			       "architecture %u: %s regions are not "
			       "implemented (x86-64 only)",
			       o.arch, arch ? arch->name : "unknown");
	const uint32_t known = JSF_REGION_REPLACE | JSF_REGION_NO_MLOCK |
			       JSF_REGION_NAMED | JSF_REGION_MAPPED;
	if (o.flags & ~known)
		return sf_fail(-EINVAL,
			       "jsf_region_opts.flags: unknown bits 0x%x",
			       o.flags & ~known);
	struct jsf_region *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->mu, NULL);
	r->arch = arch->id;
	r->history_max = o.history_max ? o.history_max : 1u << 20;
	r->max_size = o.max_size ? o.max_size : 1ull << 30;
	r->initial = o.initial_funcs ? o.initial_funcs : 256;
	if (r->initial > 1u << 24)
		r->initial = 1u << 24;
	r->fd = -1;
	r->res.fd = -1;
	r->res.off = o.flags & JSF_REGION_NO_MLOCK;
	if (r->max_size < 64 * 1024 || r->max_size > (1ull << 40)) {
		err = sf_fail(-EINVAL,
			      "jsf_region_opts.max_size %llu: outside [64 "
			      "KiB, 1 TiB]",
			      (unsigned long long)r->max_size);
		goto fail;
	}
	if (o.runtime_ext > RH_RTX_MAX ||
	    round_up(o.runtime_ext, 4096) * 4 > r->max_size) {
		err = sf_fail(-EINVAL,
			      "jsf_region_opts.runtime_ext %u: more than 1 "
			      "MiB or a quarter of max_size",
			      o.runtime_ext);
		goto fail;
	}
	r->rtx_cap = (uint32_t)round_up(o.runtime_ext, 4096);
	r->blk_lo = SF_RHDR_SIZE + (uint64_t)r->rtx_cap;
	if (path) {
		mode_t mode = o.mode ? o.mode : 0600;
		if (o.flags & JSF_REGION_REPLACE)
			unlink(path);
		r->fd = open(path,
			     O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			     mode);
		if (r->fd < 0) {
			err = -errno;
			goto fail;
		}
		fchmod(r->fd, mode); /* exact mode, whatever the umask */
		r->path = strdup(path);
	} else {
		r->fd = memfd_create("jitsframe-region", MFD_CLOEXEC);
		if (r->fd < 0) {
			err = -errno;
			goto fail;
		}
		char buf[64];
		snprintf(buf, sizeof(buf), "/proc/%d/fd/%d", (int)getpid(),
			 r->fd);
		r->path = strdup(buf);
	}
	if (!r->path) {
		err = -ENOMEM;
		goto fail;
	}
	/* The lock tells readers a producer is alive (released on death). */
	if (flock(r->fd, LOCK_EX | LOCK_NB) < 0) {
		err = -errno;
		goto fail;
	}
	r->base = mmap(NULL, r->max_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->fd, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		err = -errno;
		goto fail;
	}
	/* No readahead: populating a chunk (docs/ABI.md 3.6) then faults in
	 * that chunk, not a growing window past it (ext4 read ahead up to
	 * megabytes of holes, zero-filled, within a single add). */
	madvise(r->base, r->max_size, MADV_RANDOM);
	/* The header page present (for the region's life) before its first
	 * store: on a full file system the create fails, no SIGBUS. */
	r->res.fd = r->fd;
	r->res.base = r->base;
	if (ftruncate(r->fd, SF_RHDR_SIZE) < 0) {
		err = -errno;
		goto fail;
	}
	err = sf_res_hold(&r->res, r->base, SF_RHDR_SIZE, NULL);
	if (err)
		goto fail;
	err = ensure_file(r, r->blk_lo); /* (the extension: a hole) */
	if (err)
		goto fail;
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	uint8_t *h = r->base;
	ST32(h + RH_ABI, JSF_ABI_VERSION);
	ST32(h + RH_HDR_SIZE, SF_RHDR_SIZE);
	ST32(h + RH_ARCH, r->arch);
	ST64(h + RH_MAX_SIZE, r->max_size);
	ST64(h + RH_PRODUCER_BASE, (uint64_t)(uintptr_t)r->base);
	ST64(h + RH_CREATE_NS, o.create_ns ? o.create_ns : jsf_now_ns());
	ST64(h + RH_CREATE_REAL,
	     (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec);
	ST32(h + RH_PID, o.producer_pid ? o.producer_pid : (uint32_t)getpid());
	ST32(h + RH_STATE, SF_STATE_LIVE);
	if (r->rtx_cap) { /* before the magic: no reader sees it change */
		ST32(h + RH_RTX_CAP, r->rtx_cap);
		ST32(h + RH_FEATURES, RH_F_RTX);
	}
	/* First section: placed right after the header (sec_off/total 0 make
	 * rebuild() put it there). */
	r->sec_off = r->blk_lo + ((uint64_t)1 << 62);
	/* JSF_REGION_NAMED: a name area, and room for initial_funcs names
	 * (48 bytes each: "TRACE_n::chunk:line") and rows (16 bytes);
	 * JSF_REGION_MAPPED: with source maps (36 bytes more each: a
	 * trace's loop alone is 24-32) */
	r->mapped = o.flags & JSF_REGION_MAPPED;
	r->named = r->mapped || (o.flags & JSF_REGION_NAMED);
	r->name_need = r->named ? r->initial * (r->mapped ? 84 : 48) : 0;
	err = rebuild(r, r->named ? r->initial * 16 : 0, false);
	r->name_need = 0;
	if (err)
		goto fail;
	r->compactions = 0;
	r->sync_rebuilds = 0;
	/* Magic last: a reader never accepts a half-initialised header. */
	copy_out(h + RH_MAGIC, (const uint8_t *)SF_REGION_MAGIC, 8);
	*out = r;
	return 0;
fail:
	if (r->base)
		munmap(r->base, r->max_size);
	if (r->fd >= 0)
		close(r->fd);
	if (path && r->path)
		unlink(path);
	free(r->path);
	pthread_mutex_destroy(&r->mu);
	free(r);
	return err;
}

/* Room in the current block for an add of len FRE bytes and this name. */
static bool fits(struct jsf_region *r, uint32_t len, const char *name,
		 uint32_t maplen)
{
	return r->fre_cap - r->fre_used >= len && r->log_n < r->log_cap &&
	       r->n < r->fde_cap &&
	       (!name ||
		sf_names_room(r->base + r->sec_off, name, maplen, r->mapped));
}

/* A tombstone of entry li also in the new block when the copy passed it. */
static void mig_tomb(struct jsf_region *r, uint32_t li, uint64_t now)
{
	struct mig *m = &r->mig;
	if (m->phase == MIG_COPY && li < m->pos && m->remap[li] != UINT32_MAX)
		ST64(m->blk + m->log_off +
			 (size_t)m->remap[li] * SF_LOG_ENTRY_SIZE + LE_REMOVE,
		     now);
}

static int add_locked(struct jsf_region *r, uint64_t start, uint32_t size,
		      const struct jsf_row *rows, uint32_t nrows,
		      const char *name, const void *map, uint32_t maplen,
		      uint64_t now)
{
	if (start + size < start || size == 0)
		return sf_fail(-EINVAL,
			       "function [0x%llx, +%u): empty or past the "
			       "end of the address space",
			       (unsigned long long)start, size);
	int err = sf_check_rows(sf_arch(r->arch), rows, nrows, size);
	if (err)
		return err;
	uint32_t k = lower_bound(r, start);
	/* Live functions never overlap: check both neighbours. */
	uint32_t hit = UINT32_MAX;
	if (k < r->n && slot_start(r, r->lo + k) < start + size)
		hit = r->lo + k;
	else if (k > 0 &&
		 slot_start(r, r->lo + k - 1) + slot_size(r, r->lo + k - 1) >
		     start)
		hit = r->lo + k - 1;
	if (hit != UINT32_MAX)
		return sf_fail(-EEXIST,
			       "function [0x%llx, +%u) overlaps the live "
			       "function [0x%llx, +%u)",
			       (unsigned long long)start, size,
			       (unsigned long long)slot_start(r, hit),
			       slot_size(r, hit));
	uint8_t stackbuf[512], *enc = stackbuf;
	size_t maxlen = SF_FUNC_ENC_MAX(nrows);
	if (maxlen > sizeof(stackbuf) && !(enc = malloc(maxlen)))
		return -ENOMEM;
	uint32_t len = (uint32_t)sf_encode_func(rows, nrows, size, enc);
	if (name)
		r->named = true;
	if (name && map)
		r->mapped = true;
	bool room = fits(r, len, name, maplen);
	if (!room && r->mig.phase != MIG_OFF) {
		/* The old block filled before the copy caught up (a burst of
		 * large adds): finish it now. */
		mig_step(r, NULL);
		r->sync_rebuilds += r->mig.phase == MIG_OFF;
		room = fits(r, len, name, maplen);
	}
	if (!room) {
		r->name_need = sf_name_rec_len(name, maplen, r->mapped);
		err = rebuild(r, len, false);
		if (err == -ENOSPC)
			err = rebuild(r, len, true); /* last resort */
		r->name_need = 0;
		if (err)
			goto out;
	}
	/* 0. the pages about to be written present (docs/ABI.md 3.6) */
	uint32_t attr = r->fre_used, nrec = 0;
	uint8_t *blk = r->base + r->sec_off;
	/* (a full file system: the add fails, nothing written) */
	if (LD32(blk + SB_FEATURES) & SB_F_NAMES)
		nrec = sf_name_rec_len(name, maplen,
				       LD32(blk + SB_FEATURES) & SB_F_SRCMAP);
	err = hold_entry(r, blk, &r->pop, r->sec_total,
			 (uint64_t)(r->fre - blk) + attr, len,
			 (uint64_t)(r->log - blk), r->log_n, nrec);
	if (err)
		goto out;
	/* 1. attribute record and FREs, beyond what any FDE references. */
	copy_out(r->fre + attr, enc, len);
	r->fre_used += len;
	r->num_fres += nrows;
	ST32(r->sf + SH_NUM_FRES, r->num_fres);
	ST32(r->sf + SH_FRE_LEN, r->fre_used);
	/* 2. its name (docs/ABI.md 1.4), then the log entry, published with
	 * release. */
	if (r->named)
		sf_names_put(r->base + r->sec_off, r->log_n, name, map, maplen);
	struct lent le = {
	    .start = start, .add = now, .size = size, .new_attr = attr};
	write_log_entry(r->log + (size_t)r->log_n * SF_LOG_ENTRY_SIZE, &le);
	r->lattr[r->log_n] = attr;
	r->log_n++;
	ST32R(r->base + r->sec_off + SB_LOG_N, r->log_n);
	/* 3. the FDE: append with a release count, or rewrite in a seqlock. */
	uint32_t right_free = r->fde_cap - r->lo - r->n;
	if (k == r->n && right_free) {
		r->wlog[r->lo + r->n] = r->log_n - 1;
		put_fde(slot_at(r, r->lo + r->n), start, size, attr);
		r->n++;
		ST32R(r->sf + SH_NUM_FDES, r->n); /* the publishing store */
		goto done;
	}
	seq_begin(r);
	/* Open a hole at k on the cheaper side; when that side is full,
	 * re-centre the window first, so that runs of descending (LuaJIT) or
	 * ascending adds cost O(1) amortised. n < fde_cap holds here. */
	bool use_left = k <= r->n - k;
	if (use_left ? r->lo == 0 : right_free == 0)
		shift_window(r, (r->fde_cap - r->n) / 2);
	if (use_left && r->lo == 0)
		use_left = false;
	else if (!use_left && r->fde_cap - r->lo - r->n == 0)
		use_left = true;
	if (use_left) {
		move_range(r, r->lo, r->lo - 1, k);
		r->lo--;
	} else {
		move_range(r, r->lo + k, r->lo + k + 1, r->n - k);
	}
	r->wlog[r->lo + k] = r->log_n - 1;
	put_fde(slot_at(r, r->lo + k), start, size, attr);
	r->n++;
	publish_window(r);
	seq_end(r);
done:;
	/* 4. a step of the migration: at least 4 times what this add took
	 * of each capacity, plus a constant (docs/ABI.md 3.3) */
	struct work bud = {4 + 8, 4 * (uint64_t)len + 256,
			   4 * (uint64_t)nrec + 256};
	mig_tick(r, &bud);
out:
	if (enc != stackbuf)
		free(enc);
	return err;
}

int jsf_region_add(struct jsf_region *r, uint64_t start, uint32_t size,
		   const struct jsf_row *rows, uint32_t nrows, uint64_t now_ns)
{
	if (!r)
		return -EINVAL;
	pthread_mutex_lock(&r->mu);
	op_begin(r);
	int err = add_locked(r, start, size, rows, nrows, NULL, NULL, 0,
			     now_ns ? now_ns : jsf_now_ns());
	op_end(r);
	pthread_mutex_unlock(&r->mu);
	return err;
}

int jsf_region_add_named(struct jsf_region *r, uint64_t start, uint32_t size,
			 const struct jsf_row *rows, uint32_t nrows,
			 const char *name, uint64_t now_ns)
{
	if (!r)
		return -EINVAL;
	pthread_mutex_lock(&r->mu);
	op_begin(r);
	int err = add_locked(r, start, size, rows, nrows, name, NULL, 0,
			     now_ns ? now_ns : jsf_now_ns());
	op_end(r);
	pthread_mutex_unlock(&r->mu);
	return err;
}

int jsf_region_add_mapped(struct jsf_region *r, uint64_t start, uint32_t size,
			  const struct jsf_row *rows, uint32_t nrows,
			  const char *name, const void *map, uint32_t maplen,
			  uint64_t now_ns)
{
	if (!r || (map && (!name || maplen > SF_SRCMAP_MAX)))
		return -EINVAL;
	pthread_mutex_lock(&r->mu);
	op_begin(r);
	int err =
	    add_locked(r, start, size, rows, nrows, name, maplen ? map : NULL,
		       map ? maplen : 0, now_ns ? now_ns : jsf_now_ns());
	op_end(r);
	pthread_mutex_unlock(&r->mu);
	return err;
}

/* The runtime area grows by len bytes (docs/ABI.md 1.6): the bytes, then
 * the length (release), so that a reader that reads the length sees every
 * byte before it; the header's bit the first time. first: only if there is
 * no area yet (-EEXIST otherwise), and in the header page. An append that
 * the header page's area cannot hold goes to the runtime extension
 * (docs/ABI.md 1.7), when the region has one: its pages made first (a
 * full file system: -ENOSPC, not SIGBUS), the bytes, then its length. */
static int runtime_write(struct jsf_region *r, const void *data, uint32_t len,
			 bool first)
{
	if (!r || !data || !len ||
	    len > (first || RH_RT_MAX > r->rtx_cap ? RH_RT_MAX : r->rtx_cap))
		return -EINVAL;
	pthread_mutex_lock(&r->mu);
	uint8_t *h = r->base;
	uint32_t feat = LD32(h + RH_FEATURES);
	uint32_t have = (feat & RH_F_RUNTIME) ? LD32(h + RH_RT_LEN) : 0;
	uint32_t xhave = LD32(h + RH_RTX_LEN);
	int err = 0;
	if (first && have) {
		err = -EEXIST;
	} else if (len <= RH_RT_MAX - have) {
		copy_out(h + RH_RT_OFF + have, (const uint8_t *)data, len);
		ST32(h + RH_RT_LEN, have + len);
		if (!have)
			ST32(h + RH_FEATURES, feat | RH_F_RUNTIME);
	} else if (first || len > r->rtx_cap - xhave) {
		err = -ENOSPC;
	} else {
		uint8_t *x = h + RH_RTX_OFF;
		uint64_t p0 = xhave / 4096 * 4096;
		err = sf_res_fill(&r->res, x + p0,
				  round_up((uint64_t)xhave + len, 4096) - p0);
		if (!err) {
			copy_out(x + xhave, (const uint8_t *)data, len);
			ST32(h + RH_RTX_LEN, xhave + len);
		}
	}
	pthread_mutex_unlock(&r->mu);
	return err;
}

int jsf_region_set_runtime(struct jsf_region *r, const void *data, uint32_t len)
{
	return runtime_write(r, data, len, true);
}

int jsf_region_append_runtime(struct jsf_region *r, const void *data,
			      uint32_t len)
{
	return runtime_write(r, data, len, false);
}

int jsf_region_remove(struct jsf_region *r, uint64_t start, uint64_t now_ns)
{
	if (!r)
		return -EINVAL;
	pthread_mutex_lock(&r->mu);
	uint64_t now = now_ns ? now_ns : jsf_now_ns();
	uint32_t k = lower_bound(r, start);
	int err = -ENOENT;
	op_begin(r);
	if (k < r->n && slot_start(r, r->lo + k) == start) {
		/* The tombstone: the log entry gets its removal time... */
		ST64R(r->log + (size_t)r->wlog[r->lo + k] * SF_LOG_ENTRY_SIZE +
			  LE_REMOVE,
		      now);
		mig_tomb(r, r->wlog[r->lo + k], now);
		/* ...and the FDE leaves the index (close the smaller side). */
		seq_begin(r);
		if (k < r->n - 1 - k) {
			move_range(r, r->lo, r->lo + 1, k);
			r->lo++;
		} else {
			move_range(r, r->lo + k + 1, r->lo + k, r->n - 1 - k);
		}
		r->n--;
		publish_window(r);
		seq_end(r);
		err = 0;
		mig_tick(r, &rm_step);
	}
	op_end(r);
	pthread_mutex_unlock(&r->mu);
	return err;
}

int jsf_region_remove_all(struct jsf_region *r, uint64_t now_ns)
{
	if (!r)
		return -EINVAL;
	pthread_mutex_lock(&r->mu);
	uint64_t now = now_ns ? now_ns : jsf_now_ns();
	op_begin(r);
	for (uint32_t i = 0; i < r->n; i++) {
		ST64R(r->log + (size_t)r->wlog[r->lo + i] * SF_LOG_ENTRY_SIZE +
			  LE_REMOVE,
		      now);
		mig_tomb(r, r->wlog[r->lo + i], now);
	}
	seq_begin(r);
	r->n = 0;
	r->lo = r->fde_cap / 2;
	publish_window(r);
	seq_end(r);
	mig_tick(r, &rm_step);
	op_end(r);
	pthread_mutex_unlock(&r->mu);
	return 0;
}

int jsf_region_compact(struct jsf_region *r)
{
	if (!r)
		return -EINVAL;
	pthread_mutex_lock(&r->mu);
	int err = rebuild(r, 0, false);
	pthread_mutex_unlock(&r->mu);
	return err;
}

int jsf_region_stats(const struct jsf_region *r, struct jsf_region_stats *st)
{
	if (!r || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	struct jsf_region_stats s = {.sz = st->sz};
	struct jsf_region *m = (struct jsf_region *)r;
	pthread_mutex_lock(&m->mu);
	s.live_funcs = r->n;
	s.logged_funcs = r->log_n;
	s.file_size = r->file_size;
	s.compactions = r->compactions;
	s.dropped_history = r->dropped;
	s.seq = r->seq;
	s.locked_bytes = r->res.locked;
	s.lock_failures = r->res.failures;
	s.lock_errno = r->res.last_err;
	s.sync_rebuilds = r->sync_rebuilds;
	s.max_op_copied = r->max_copied;
	s.max_op_pages = r->max_pages;
	pthread_mutex_unlock(&m->mu);
	memcpy(st, &s, st->sz < sizeof(s) ? st->sz : sizeof(s));
	return 0;
}

int jsf_region_section(const struct jsf_region *r, const void **addr,
		       size_t *len)
{
	if (!r || !addr || !len)
		return -EINVAL;
	struct jsf_region *m = (struct jsf_region *)r;
	pthread_mutex_lock(&m->mu);
	*addr = r->sf;
	*len = (size_t)(r->fre - r->sf) + r->fre_used;
	pthread_mutex_unlock(&m->mu);
	return 0;
}

const char *jsf_region_path(const struct jsf_region *r)
{
	return r ? r->path : NULL;
}

void jsf_region_destroy(struct jsf_region *r)
{
	if (!r)
		return;
	ST64(r->base + RH_CLOSE_NS, jsf_now_ns());
	ST32R(r->base + RH_STATE, SF_STATE_CLOSED);
	munmap(r->base, r->max_size);
	close(r->fd); /* releases the producer lock */
	mig_free(&r->mig);
	free(r->pop.bits);
	free(r->wlog);
	free(r->lattr);
	free(r->path);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

void jsf_region_detach(struct jsf_region *r)
{
	if (!r)
		return;
	/* No lock (a parent thread may have held it at fork), no stores. */
	munmap(r->base, r->max_size);
	close(r->fd);
	mig_free(&r->mig);
	free(r->pop.bits);
	free(r->wlog);
	free(r->lattr);
	free(r->path);
	free(r);
}
