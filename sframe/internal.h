/* SPDX-License-Identifier: MIT */
/* Private to libjitsframe: the region layout (docs/ABI.md) and helpers. */
#ifndef SF_INTERNAL_H
#define SF_INTERNAL_H

#include "jitsframe.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

/* --- the default directories (find.c, prune.c) --- */
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
/* A file system whose pages are memory (statfs(2) of it) */
static inline bool sf_is_tmpfs(const struct statfs *fs)
{
	return (unsigned long)fs->f_type == TMPFS_MAGIC;
}
/* A directory a producer's region may be kept in: the caller's, closed
 * to others' writes (lstat(2)/fstat(2) of it) */
static inline bool sf_dir_ours(const struct stat *st)
{
	return S_ISDIR(st->st_mode) && st->st_uid == getuid() &&
	       !(st->st_mode & 022);
}

/* --- SFrame constants (binutils include/sframe.h, V3) --- */
#define SFRAME_MAGIC 0xdee2
#define SFRAME_V1 1
#define SFRAME_V3 3
#define SFRAME_F_FDE_SORTED 0x1
#define SFRAME_F_FRAME_POINTER 0x2
#define SFRAME_F_FDE_FUNC_START_PCREL 0x4
#define SFRAME_HDR_SIZE 28
#define SFRAME_V3_FDE_SIZE 16
#define SFRAME_V3_ATTR_SIZE 5
#define SFRAME_V1_FDE_SIZE 17
#define SFRAME_RA_FIXED_X86_64 (-8)

/* SFrame header field offsets. */
#define SH_NUM_FDES 8
#define SH_NUM_FRES 12
#define SH_FRE_LEN 16
#define SH_FDEOFF 20
#define SH_FREOFF 24

/* --- region layout --- */
#define SF_REGION_MAGIC "JSFREGN"  /* 8 bytes with the NUL */
#define SF_SECTION_MAGIC "JSFSECT" /* 8 bytes with the NUL */
#define SF_RHDR_SIZE 4096
#define SF_SHDR_SIZE 64
#define SF_LOG_ENTRY_SIZE 32
#define SF_STATE_LIVE 1
#define SF_STATE_CLOSED 2

/* Region header at file offset 0 (all fields little-endian, naturally
 * aligned; the atomically accessed ones are marked). */
#define RH_MAGIC 0	    /* char[8] */
#define RH_ABI 8	    /* u32 */
#define RH_HDR_SIZE 12	    /* u32 */
#define RH_ARCH 16	    /* u32 */
#define RH_STATE 20	    /* u32, atomic */
#define RH_MAX_SIZE 24	    /* u64 */
#define RH_FILE_SIZE 32	    /* u64, atomic (release after ftruncate) */
#define RH_PRODUCER_BASE 40 /* u64 */
#define RH_CREATE_NS 48	    /* u64 */
#define RH_CREATE_REAL 56   /* u64 CLOCK_REALTIME ns */
#define RH_PID 64	    /* u32 */
#define RH_SEQ 72	    /* u64, atomic: the generation counter */
#define RH_SEC_OFF 80	    /* u64, atomic: current section block */
#define RH_CLOSE_NS 88	    /* u64, atomic */
#define RH_FEATURES 96	    /* u32, atomic: header features (RT) */
#define RH_RT_LEN 100	    /* u32: bytes of the runtime area */
#define RH_RT_OFF 1024	    /* the runtime area (docs/ABI.md 1.6) */
#define RH_RT_MAX 3072
#define RH_F_RUNTIME 1u
#define RH_RTX_CAP 104		/* u32: bytes reserved after the header page */
#define RH_RTX_LEN 108		/* u32, atomic: bytes of them in use */
#define RH_F_RTX 2u		/* the runtime extension (docs/ABI.md 1.7) */
#define RH_RTX_OFF SF_RHDR_SIZE /* where it lies in the file */
#define RH_RTX_MAX (1u << 20)	/* largest extension a producer may ask */

/* Section block header at sec_off. The SFrame section follows at +64. */
#define SB_MAGIC 0    /* char[8] */
#define SB_TOTAL 8    /* u64 bytes of the whole block */
#define SB_FDE_CAP 16 /* u32 FDE slots */
#define SB_FRE_CAP 20 /* u32 bytes of FRE area */
#define SB_LOG_CAP 24 /* u32 log entries */
#define SB_LOG_N 28   /* u32, atomic (release): published log entries */
#define SB_LOG_OFF 32 /* u32 offset of the log from the block start */
#define SB_SEC_LEN 36 /* u32 bytes from the SFrame header to FRE area end */
/* Bytes 40..63, once reserved (docs/ABI.md 1.2, 1.4, 7): the block's
 * extensions. A block without any has them all 0. */
#define SB_FEATURES 40	 /* u32 SB_F_* */
#define SB_NIDX_OFF 44	 /* u32 block offset of the name index (log_cap u32) */
#define SB_NAMES_OFF 48	 /* u32 block offset of the name area */
#define SB_NAMES_CAP 52	 /* u32 bytes of the name area */
#define SB_NAMES_LEN 56	 /* u32, atomic (release): bytes of it in use */
#define SB_F_NAMES 1u	 /* the block carries function names */
#define SB_F_SRCMAP 2u	 /* each name record carries a source map (1.5) */
#define SF_NAMES_FIRST 4 /* first record of a name area (0: "no name") */
#define SF_NAME_MAX 1024 /* longest name kept; longer ones are cut */
#define SF_SRCMAP_MAX (1u << 20) /* largest source map (docs/ABI.md 1.5) */

/* Function log entry. */
#define LE_START 0   /* u64 */
#define LE_ADD 8     /* u64 */
#define LE_REMOVE 16 /* u64, atomic: 0 while live */
#define LE_SIZE 24   /* u32 */
#define LE_ATTR 28   /* u32 offset of the attribute record in the FRE area */

/* --- access to shared memory ---
 * Everything in a shared mapping is read with acquire loads and written with
 * release stores (plain MOVs on x86-64). That makes the seqlock protocol of
 * docs/ABI.md correct without standalone fences: a reader that sees any
 * store made inside a rewrite also sees the odd sequence number that
 * preceded it, and ThreadSanitizer can check it. */
#define LD8(p) __atomic_load_n((const uint8_t *)(p), __ATOMIC_ACQUIRE)
#define LD16(p) __atomic_load_n((const uint16_t *)(p), __ATOMIC_ACQUIRE)
#define LD32(p) __atomic_load_n((const uint32_t *)(p), __ATOMIC_ACQUIRE)
#define LD64(p) __atomic_load_n((const uint64_t *)(p), __ATOMIC_ACQUIRE)
#define LD32A LD32
#define LD64A LD64
#define ST8(p, v) \
	__atomic_store_n((uint8_t *)(p), (uint8_t)(v), __ATOMIC_RELEASE)
#define ST32(p, v) \
	__atomic_store_n((uint32_t *)(p), (uint32_t)(v), __ATOMIC_RELEASE)
#define ST64(p, v) \
	__atomic_store_n((uint64_t *)(p), (uint64_t)(v), __ATOMIC_RELEASE)
#define ST32R ST32
#define ST64R ST64

/* Unaligned little-endian loads, byte by byte (FRE fields). */
static inline uint32_t ldu(const uint8_t *p, unsigned n)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint32_t)LD8(p + i) << (8 * i);
	return v;
}
static inline int32_t lds(const uint8_t *p, unsigned n)
{
	uint32_t v = ldu(p, n); /* n == 0: no bytes, 0 */
	if (n > 0 && n < 4 && (v & (1u << (8 * n - 1))))
		v |= ~0u << (8 * n);
	return (int32_t)v;
}
static inline void stu(uint8_t *p, uint32_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		ST8(p + i, v >> (8 * i));
}
/* n bytes into a shared mapping from memory no other thread writes: the
 * producer's own buffers, or its own block (a reader only reads it, and
 * reads do not race): plain loads, release stores 8 at a time once dst is
 * aligned (names and maps of 60-1000 bytes: a byte a store cost some 9
 * instructions a byte on the producer's hot path). */
static inline void copy_out(uint8_t *dst, const uint8_t *src, size_t n)
{
	size_t i = 0;
	for (; i < n && ((uintptr_t)(dst + i) & 7); i++)
		ST8(dst + i, src[i]);
	for (; i + 8 <= n; i += 8) {
		uint64_t v;
		memcpy(&v, src + i, 8);
		ST64(dst + i, v);
	}
	for (; i < n; i++)
		ST8(dst + i, src[i]);
}

/* n bytes out of a shared mapping (into it, or into a copy), 8 at a time
 * where both addresses allow: the producer's rebuild copy, a reader's
 * snapshot of the parts of a block in use. */
static inline void copy_shared(uint8_t *dst, const uint8_t *src, uint64_t n)
{
	uint64_t b = 0;
	if ((((uintptr_t)dst ^ (uintptr_t)src) & 7) == 0) {
		for (; b < n && ((uintptr_t)(dst + b) & 7); b++)
			ST8(dst + b, LD8(src + b));
		for (; b + 8 <= n; b += 8)
			ST64(dst + b, LD64(src + b));
	}
	for (; b < n; b++)
		ST8(dst + b, LD8(src + b));
}

/* --- FRE encoding (sfenc.c) --- */

struct sf_arch;

/* Largest encoded size of a function with n rows (attr + FREs). */
#define SF_FUNC_ENC_MAX(n) (SFRAME_V3_ATTR_SIZE + (size_t)(n) * (4 + 1 + 2 * 4))

/* Check rows for a function of `size` bytes on architecture a; 0 or
 * -EINVAL (through sf_fail, naming the row and the rule). */
int sf_check_rows(const struct sf_arch *a, const struct jsf_row *rows,
		  uint32_t nrows, uint32_t size);

/* FRE start-address type (0, 1, 2) for a function of `size` bytes. */
unsigned sf_fre_type(uint32_t size);

/* Encode the FREs only (no attribute record) into out; returns bytes. */
size_t sf_encode_fres(const struct jsf_row *rows, uint32_t nrows,
		      unsigned fre_type, uint8_t *out);

/* Encode the V3 attribute record + FREs; returns bytes. */
size_t sf_encode_func(const struct jsf_row *rows, uint32_t nrows, uint32_t size,
		      uint8_t *out);

/*
 * Decode one FRE at p (at most `avail` bytes). Returns its length, or 0 when
 * malformed (bad width/count, or does not fit).
 */
size_t sf_decode_fre(const uint8_t *p, size_t avail, unsigned fre_type,
		     struct jsf_row *row);
/* The region's only architecture so far: rows read back state its fixed
 * return-address rule (RA at CFA - 8). */
#define SF_X86_64_RA_FIXED (-8)

/*
 * Read the function whose attribute record is at fre_area+attr_off
 * (fre_len bytes valid): look up the row for `off` (if row != NULL) and/or
 * decode all rows into `all` (capacity allcap). Returns the number of rows,
 * or -EBADMSG if the record is malformed. Checks the kernel's per-FRE rules
 * against func_size.
 */
int sf_read_func(const uint8_t *fre_area, uint32_t fre_len, uint32_t attr_off,
		 uint32_t func_size, uint32_t off, struct jsf_row *row,
		 struct jsf_row *all, uint32_t allcap);

/* Bytes of the attribute record + FREs at attr, or 0 if malformed. */
uint32_t sf_func_len(const uint8_t *fre_area, uint32_t fre_len, uint32_t attr);

/* --- architectures, errors, options (sfenc.c) --- */

/* What the row model needs of an architecture. */
struct sf_arch {
	uint32_t id;	  /* JSF_ARCH_* */
	const char *name; /* "x86-64" */
	int8_t ra_fixed;  /* RA at CFA + ra_fixed in every row (SFrame's
			     fixed RA offset), or 0: per row / in a register */
	bool implemented; /* a region can be created for it */
};
/* The architecture `id` (0: the host's), or NULL if unknown. */
const struct sf_arch *sf_arch(uint32_t id);

/*
 * Record why a call fails (for jsf_strerror on this thread) and return err.
 * Every failure with a cause more precise than its errno goes through it.
 */
int sf_fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * The options rule of every opts struct (libbpf's OPTS_VALID): NULL means
 * all defaults; `sz` (the first member) at least sizeof(size_t); a smaller
 * sz than the library's struct (an older caller) is accepted, the missing
 * fields being 0; bytes beyond the library's struct (a newer caller) must
 * be 0, else -EINVAL. Copies into dst (dsz bytes, zeroed first). `what`
 * names the struct for the error text.
 */
int sf_opts_in(void *dst, size_t dsz, const void *src, const char *what);

/* Formatted message into a caller buffer (never overflows). */
void sf_msg(char *msg, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* --- snapshots of a section block (snap.c) --- */

struct sf_ent { /* one logged function, decoded */
	uint64_t start, add, remove;
	uint32_t size, attr, nrows, row0;
	uint32_t log_idx;
};

struct sf_snap {
	uint8_t *blk; /* private copy of the section block (owned) */
	uint64_t blk_len;
	uint64_t blk_addr; /* the block's address in the producer */
	uint32_t fde_cap, fre_cap, log_cap, log_n;
	const uint8_t *sf; /* SFrame header inside blk */
	uint32_t sec_len;  /* bytes of the SFrame section in use */
	struct sf_ent *e;  /* log_n entries sorted by (start, log index) */
	struct jsf_row *rows;
	uint32_t maxsize; /* largest function: bounds the backward scan */
	uint32_t nlive;
};

/* Parse and check a block copy; takes ownership of blk. */
int sf_snap_parse(struct sf_snap *s, uint8_t *blk, uint64_t len,
		  uint64_t blk_addr, char *msg, size_t msglen);
void sf_snap_free(struct sf_snap *s);
/* The function covering pc at time t (0: live at the end), or NULL. */
const struct sf_ent *sf_snap_find(const struct sf_snap *s, uint64_t pc,
				  uint64_t t);
/* The row of f at pc. */
struct jsf_row sf_snap_row(const struct sf_snap *s, const struct sf_ent *f,
			   uint64_t pc);
static inline bool sf_alive(const struct sf_ent *f, uint64_t t)
{
	if (t == 0)
		return f->remove == 0;
	return f->add <= t && (f->remove == 0 || t < f->remove);
}
/* Log entry p (docs/ABI.md 1.3, read from a shared log) covers pc at t. */
static inline bool sf_log_covers(const uint8_t *p, uint64_t pc, uint64_t t)
{
	struct sf_ent f = {.start = LD64(p + LE_START),
			   .add = LD64(p + LE_ADD),
			   .remove = LD64(p + LE_REMOVE),
			   .size = LD32(p + LE_SIZE)};
	return pc - f.start < f.size && sf_alive(&f, t);
}

/* --- function names (names.c; docs/ABI.md 1.4) --- */

/* Where a new block's name area goes (after its log). */
struct sf_nlay {
	uint32_t nidx_off, names_off, names_cap;
};
/* Bytes of the record of `name` (cut to SF_NAME_MAX). */
uint32_t sf_name_rec_len(const char *name, uint32_t maplen, bool srcmap);
/* Bytes the names of the entries kept by a rebuild (remap[i] !=
 * UINT32_MAX, i < ln; remap NULL: a rebuild that drops nothing, every
 * entry kept at its index) take in block `blk` (0 if it has no names). */
uint64_t sf_names_kept(const uint8_t *blk, const uint32_t *remap, uint32_t ln,
		       bool srcmap);
/* The block's total size once a name area of `need` bytes follows its log
 * (log_off, log_cap); fills lay. */
uint64_t sf_names_layout(uint32_t log_off, uint32_t log_cap, uint64_t need,
			 struct sf_nlay *lay);
/* The same with the area's capacity given (bytes, rounded up to 64). */
uint64_t sf_names_layout_cap(uint32_t log_off, uint32_t log_cap, uint64_t cap,
			     struct sf_nlay *lay);
/* In a new block (not yet reachable): the name header, an empty area. */
void sf_names_init(uint8_t *blk, const struct sf_nlay *lay, bool srcmap);
/* Bytes of log entry idx's name record in its own block (0: none). */
uint32_t sf_names_rec1(const uint8_t *blk, uint32_t idx);
/* In a new block with the same features as old (not yet reachable): log
 * entry nidx gets old entry oidx's record (len bytes, sf_names_rec1),
 * appended to its area, or none. */
void sf_names_copy1(uint8_t *nblk, uint32_t nidx, const uint8_t *old,
		    uint32_t oidx, uint32_t len);
/* In a new block (not yet reachable): the name header, and the names of
 * the kept entries of the old block (NULL: none) at their new indexes
 * (remap NULL: all of them, at the same indexes). */
void sf_names_carry(uint8_t *blk, const struct sf_nlay *lay, const uint8_t *old,
		    const uint32_t *remap, uint32_t ln, bool srcmap);
/* Room for `name` in the block's name area (false: no name area). */
bool sf_names_room(const uint8_t *blk, const char *name, uint32_t maplen,
		   bool srcmap);
/* Give log entry idx (not yet published) its name (NULL: none); a block
 * without a name area is left alone. */
void sf_names_put(uint8_t *blk, uint32_t idx, const char *name, const void *map,
		  uint32_t maplen);
/* The source map of log entry idx (SRCMAP blocks; docs/ABI.md 1.5): its
 * length, up to len bytes of it in buf; -ENODATA none, -EBADMSG damaged. */
int sf_srcmap_read(const uint8_t *blk, uint64_t avail, uint32_t log_n,
		   uint32_t idx, void *buf, size_t len);
/* The name of log entry idx (< log_n) of a block of which `avail` bytes
 * may be read: its length, the text (cut to len - 1) in buf; -ENODATA no
 * name, -EBADMSG the name area is damaged. */
int sf_name_read(const uint8_t *blk, uint64_t avail, uint32_t log_n,
		 uint32_t idx, char *buf, size_t len);
/* The validator's check of a block's name area (0 or -EBADMSG, msg). */
int sf_names_check(const uint8_t *blk, uint64_t total, char *msg,
		   size_t msglen);
/* For names.c: a live view's mapping and the bytes of it that may be read
 * now; NULL for a post-mortem view. */
const uint8_t *sf_view_live(const struct jsf_view *v, uint64_t *limit);

/* --- resident pages (resident.c; docs/ABI.md 3.6) --- */
struct sf_resid {
	bool off; /* JSF_REGION_NO_MLOCK */
	int fd;	  /* the region's file (-1: none), mapped at base */
	const uint8_t *base;
	uint64_t locked;   /* bytes mlocked now */
	uint64_t failures; /* mlock calls refused */
	int last_err;	   /* errno of the last refusal */
};
/* Make [addr, addr+len) present and writable in this process's page
 * tables, and lock it there unless rs->off (*locked: whether it was; may
 * be NULL). 0, or -errno when its pages cannot be made (the file system
 * is full): nothing may then be stored there (SIGBUS). */
int sf_res_hold(struct sf_resid *rs, void *addr, uint64_t len, bool *locked);
/* The same, never locked: pages only the producer's readers in user space
 * read (the runtime extension). */
int sf_res_fill(struct sf_resid *rs, void *addr, uint64_t len);
/* Unlock a range of which sf_res_hold locked `locked` bytes (0: none). */
void sf_res_release(struct sf_resid *rs, void *addr, uint64_t len,
		    uint64_t locked);

/* --- region header read by views and the validator (view.c) --- */
struct sf_rinfo {
	uint32_t abi, arch, state, pid;
	uint64_t max_size, file_size, producer_base, create_ns, close_ns;
	uint64_t seq, sec_off;
};
/* Check a region header (hdr: SF_RHDR_SIZE bytes) against the file size. */
int sf_rhdr_parse(const uint8_t *hdr, uint64_t st_size, struct sf_rinfo *ri,
		  char *msg, size_t msglen);
/*
 * Open `path` and take a consistent snapshot of its current section (live:
 * under the seqlock; post-mortem: read from the file). *live tells which.
 */
int sf_load(const char *path, struct sf_rinfo *ri, struct sf_snap *s,
	    bool *live, bool *recovered, char *msg, size_t msglen);
/* For tests: how often a live view's reader index was built and how many
 * lookups it answered (0, 0 without one). Not AS-safe. */
void sf_view_index_stats(const struct jsf_view *v, uint64_t *builds,
			 uint64_t *answers);
/* For names.c, inside a live lookup read at seq s1: the log index of the
 * newest entry covering pc at t (0: now) by the view's index of the log,
 * -1 none, -2 not answered (scan the log). */
int64_t sf_view_log_find(const struct jsf_view *v, uint64_t s1, uint64_t pc,
			 uint64_t t);
/* The same for the index of the function log (lookups at past times). */
void sf_view_tindex_stats(const struct jsf_view *v, uint64_t *builds,
			  uint64_t *answers);
/* A view's snapshot: its own (post-mortem) or a fresh one in *tmp (live;
 * free it with sf_snap_free). */
int sf_view_snap(const struct jsf_view *v, struct sf_snap *tmp,
		 const struct sf_snap **out);
/* jsf_validate_sframe with the region's relaxation (empty allowed). */
int sf_validate_sframe(const void *buf, size_t len, uint64_t sec_addr,
		       uint64_t text_start, uint64_t text_size,
		       bool allow_empty, char *msg, size_t msglen);

#endif
