/* SPDX-License-Identifier: MIT */
/*
 * libjitsframe: exact unwind rows for JIT-compiled code, published as
 * SFrame V3 records in a shared, concurrently readable memory region.
 *
 * Conventions (libbpf style; jitsframe(3) is the manual):
 *  - errors: every int-returning call returns 0 (or a count) on success
 *    and a negative errno on failure; nothing is printed by the library.
 *    jsf_strerror(err) right after a failure names its cause (which row,
 *    which field, which function overlapped), else the errno's meaning.
 *  - options: every opts struct starts with `size_t sz`, set by the caller
 *    to sizeof(struct ...) as it was compiled. A NULL opts pointer means
 *    all defaults. A smaller sz (a caller built against an older header)
 *    is accepted: the fields it does not reach are 0, i.e. defaults. A
 *    larger sz (a newer header) is accepted when every byte this library
 *    does not know is 0, and refused with -EINVAL otherwise. Output structs
 *    (stats, info) are filled up to their sz.
 *  - times are CLOCK_MONOTONIC nanoseconds (jsf_now_ns(); perf's -k 1).
 *    A time argument of 0 means "now": for a producer call, the event is
 *    stamped with jsf_now_ns(); for a reader, "as of now" (live) or "as of
 *    the end of the file" (post-mortem).
 *  - threads and signals: each call below says whether it may run
 *    concurrently with others (MT-safe) and inside a signal handler
 *    (AS-safe: no locks, no allocation, only async-signal-safe syscalls).
 *
 * The region's format and its memory-ordering protocol are docs/ABI.md.
 */
#ifndef JITSFRAME_H
#define JITSFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version (libjitsframe.so.MAJOR.MINOR.PATCH, soname
 * libjitsframe.so.MAJOR); the CLI and the Lua module carry the same. */
#define JSF_VERSION_MAJOR 1
#define JSF_VERSION_MINOR 8
#define JSF_VERSION_PATCH 0
#define JSF_STR_(x) #x
#define JSF_STR(x) JSF_STR_(x)
#define JSF_VERSION_STRING         \
	JSF_STR(JSF_VERSION_MAJOR) \
	"." JSF_STR(JSF_VERSION_MINOR) "." JSF_STR(JSF_VERSION_PATCH)

#define JSF_ABI_VERSION 1 /* region format version, see docs/ABI.md */

/* Marks the public API: libjitsframe is built with -fvisibility=hidden. */
#ifndef JSF_API
#define JSF_API __attribute__((visibility("default")))
#endif

/* CFA base register of a row. */
enum { JSF_SP = 1, JSF_FP = 2 };

/*
 * Architectures (the SFrame ABI/arch identifiers). A region has one, chosen
 * by jsf_region_opts.arch; only JSF_ARCH_X86_64 is implemented (others
 * fail with -EOPNOTSUPP). AArch64 will be an addition: its identifier and
 * its return-address rules below are already part of the row model.
 */
enum { JSF_ARCH_AARCH64 = 2, JSF_ARCH_X86_64 = 3 };

/* Where a row's return address is (jsf_row.ra_rule). */
enum {
	JSF_RA_DEFAULT = 0, /* the architecture's usual rule: x86-64 at
			       CFA - 8; AArch64 in the link register */
	JSF_RA_CFA = 1,	    /* saved at CFA + ra_offset */
	JSF_RA_REG = 2,	    /* still in the link register (AArch64) */
};

/*
 * One unwind row: from instruction `offset` (bytes from the function start)
 * until the next row's offset,
 *   CFA = (cfa_base == JSF_SP ? SP : FP) + cfa_offset
 *   RA  by ra_rule: JSF_RA_CFA: at CFA + ra_offset; JSF_RA_REG: in the
 *       link register; JSF_RA_DEFAULT: the architecture's rule
 *   saved FP at CFA + fp_offset when has_fp
 * An `outermost` row says: no caller (the other fields are ignored).
 *
 * A producer may leave ra_rule 0 (JSF_RA_DEFAULT) or state the rule; a rule
 * the region's architecture cannot express is refused (-EINVAL; on x86-64
 * the return address is always at CFA - 8). Rows read back from a region
 * (jsf_view_lookup, jsf_view_foreach) always state it: on x86-64,
 * ra_rule = JSF_RA_CFA, ra_offset = -8.
 */
struct jsf_row {
	uint32_t offset;
	uint8_t cfa_base;
	int32_t cfa_offset;
	bool has_fp;
	int32_t fp_offset;
	bool outermost;
	uint8_t ra_rule;   /* JSF_RA_* */
	int32_t ra_offset; /* JSF_RA_CFA: RA at CFA + ra_offset */
};

/* The version of the library actually loaded (it may be newer than the
 * header a program was built with): JSF_VERSION_MAJOR << 16 | MINOR << 8 |
 * PATCH, and as "MAJOR.MINOR.PATCH". */
JSF_API uint32_t jsf_version(void); /* MT-safe, AS-safe (both) */
JSF_API const char *jsf_version_string(void);

/* CLOCK_MONOTONIC in nanoseconds. MT-safe, AS-safe. */
JSF_API uint64_t jsf_now_ns(void);

/*
 * Text for a negative errno returned by this library: the cause of the last
 * failure on this thread when `err` is its code, else the code's meaning.
 * The string stays valid until the next failing call on this thread.
 * MT-safe (per-thread state); not AS-safe.
 */
JSF_API const char *jsf_strerror(int err);

/* ---------------------------------------------------------------- producer */

struct jsf_region;

enum {
	/* Replace an existing file at `path` (default: fail with -EEXIST). */
	JSF_REGION_REPLACE = 1u << 0,
	/* Do not mlock the region's live pages (see below). (1.1) */
	JSF_REGION_NO_MLOCK = 1u << 1,
	/* Functions will be added with names (jsf_region_add_named or
	 * _mapped): the first section block is made at create with a name
	 * area and room for initial_funcs functions' names and rows, so that
	 * the first adds do not each rebuild it (a LuaJIT producer's first
	 * traces). Only sizes differ. (1.1) */
	JSF_REGION_NAMED = 1u << 2,
	/* NAMED, and the functions will be added with source maps
	 * (jsf_region_add_mapped): the first block's name area carries them
	 * (docs/ABI.md 1.5) and has room for initial_funcs names with a
	 * short map each, so that the first add with a map does not rebuild
	 * the block (populating the new one whole). (1.6) */
	JSF_REGION_MAPPED = 1u << 3,
};

struct jsf_region_opts {
	size_t sz;		/* sizeof(struct jsf_region_opts) */
	uint32_t arch;		/* 0: the host (JSF_ARCH_X86_64) */
	uint32_t mode;		/* file mode; 0: 0600 (it reveals addresses) */
	uint32_t flags;		/* JSF_REGION_* */
	uint32_t history_max;	/* removed functions kept for time queries;
				   0: 1048576; oldest dropped first */
	uint64_t max_size;	/* largest the file may grow; 0: 1 GiB */
	uint32_t initial_funcs; /* capacity hint; 0: 256 */
	uint32_t __pad;
	/* A region written on behalf of another process, after the fact
	 * (from its log: `jitsframe region import`, RaptorJIT): the
	 * producer pid it names and its creation time (CLOCK_MONOTONIC ns,
	 * at or before the first add's now_ns); 0: this process, now. */
	uint32_t producer_pid;
	uint32_t __pad2;
	uint64_t create_ns;
	/* (1.8) Bytes of runtime extension to reserve after the header page
	 * (docs/ABI.md 1.7; rounded up to 4 KiB, at most 1 MiB and a quarter
	 * of max_size): where jsf_region_append_runtime puts what the header
	 * page's 3072 bytes cannot hold. A hole in the file until written.
	 * 0: none. */
	uint32_t runtime_ext;
	uint32_t __pad3;
};

/*
 * Create a region. `path` NULL: an anonymous memfd (readable by others
 * through /proc/PID/fd/N, see jsf_region_path()). The file is created with
 * O_EXCL|O_NOFOLLOW. The calling process is "the producer" until destroy.
 * -EOPNOTSUPP: an architecture other than x86-64.
 *
 * Resident pages (docs/ABI.md 3.6): an in-kernel reader (a BPF program)
 * cannot fault pages in, so the region keeps the pages such a reader needs
 * — the header and the current section block — present in this process's
 * page tables: populated when they come into use, and mlocked so that
 * reclaim cannot unmap them (old blocks are unlocked when a rebuild retires
 * them). mlock counts against RLIMIT_MEMLOCK unless the process has
 * CAP_IPC_LOCK; when it is refused the region works as before, its pages
 * are still populated (but may be reclaimed under memory pressure), and
 * jsf_region_stats counts the refusal (lock_failures). JSF_REGION_NO_MLOCK:
 * populate only, never mlock.
 *
 * Producer calls (create, add, remove, remove_all, compact, stats,
 * section) are MT-safe: one region may be fed from several threads (a
 * mutex inside serialises them; readers never take it). None is AS-safe.
 * destroy and detach must not run concurrently with another call on the
 * same region.
 */
JSF_API int jsf_region_create(struct jsf_region **out, const char *path,
			      const struct jsf_region_opts *opts);

/*
 * Publish a function [start, start+size) with `nrows` rows sorted by
 * strictly increasing offset, the first at offset 0, all < size.
 * -EEXIST: it overlaps a live function; -EINVAL: bad rows;
 * -ENOSPC: max_size reached even after dropping all history.
 * Functions may be added in any address order. now_ns 0: jsf_now_ns().
 */
JSF_API int jsf_region_add(struct jsf_region *r, uint64_t start, uint32_t size,
			   const struct jsf_row *rows, uint32_t nrows,
			   uint64_t now_ns);

/*
 * (1.1, JITSFRAME_1.1) jsf_region_add, giving the function a name for
 * out-of-process readers (a profiler attached to the process: jsf_view_name;
 * docs/ABI.md 1.4). `name` is a NUL-terminated string, cut to 1024 bytes;
 * NULL: no name (as jsf_region_add). Names live beside the SFrame section,
 * never in it, and follow their function through removal (time-aware) and
 * compaction. The first named add rebuilds the section once to make room.
 */
JSF_API int jsf_region_add_named(struct jsf_region *r, uint64_t start,
				 uint32_t size, const struct jsf_row *rows,
				 uint32_t nrows, const char *name,
				 uint64_t now_ns);

/*
 * (1.1, JITSFRAME_1.1) jsf_region_add_named with a source map: what the
 * function's machine code stands for in the producer's source language, by
 * code offset (docs/ABI.md 1.5: ranges, each with its stack of source
 * frames; the LuaJIT module: each trace's Lua frames, inlined calls
 * included). `map`, `maplen` bytes (at most 1 MiB), is stored as given
 * beside the name (so a map needs a name: -EINVAL without one), follows
 * the function's time like the name, and is read back with
 * jsf_view_srcmap and decoded with jsf_srcmap_frames. NULL map: as
 * jsf_region_add_named. The first add with a map rebuilds the section once.
 */
JSF_API int jsf_region_add_mapped(struct jsf_region *r, uint64_t start,
				  uint32_t size, const struct jsf_row *rows,
				  uint32_t nrows, const char *name,
				  const void *map, uint32_t maplen,
				  uint64_t now_ns);

/*
 * (1.1, JITSFRAME_1.1) The producer's runtime area (docs/ABI.md 1.6): up to
 * 3072 bytes that tell out-of-process readers where the producer's own
 * state is (the LuaJIT module: the VM's global state and the field offsets
 * a Lua stack walk needs, each checked against the running VM), copied
 * into the region's header page (resident for the region's life) and
 * flagged by header feature bit 0. Set once: -EEXIST after that;
 * -EINVAL for no data or more than 3072 bytes.
 */
JSF_API int jsf_region_set_runtime(struct jsf_region *r, const void *data,
				   uint32_t len);

/*
 * (1.7, JITSFRAME_1.7) Append len bytes to the producer's runtime area
 * (docs/ABI.md 1.6): after what is there (the first call, or
 * jsf_region_set_runtime, begins it), the bytes first, then the area's
 * length (release), so that a reader sees whole appends only; what is
 * there never changes. Since 1.8, an append the header page's 3072 bytes
 * cannot hold goes whole to the runtime extension (docs/ABI.md 1.7) of a
 * region created with jsf_region_opts.runtime_ext. -ENOSPC when neither
 * has room (nothing written); -EINVAL for no data, or more than the
 * larger of the two can ever hold.
 */
JSF_API int jsf_region_append_runtime(struct jsf_region *r, const void *data,
				      uint32_t len);

/* Tombstone the live function starting at `start` (-ENOENT if none).
 * now_ns 0: jsf_now_ns(). */
JSF_API int jsf_region_remove(struct jsf_region *r, uint64_t start,
			      uint64_t now_ns);

/* Tombstone every live function (a JIT that frees all its code at once). */
JSF_API int jsf_region_remove_all(struct jsf_region *r, uint64_t now_ns);

/*
 * Rewrite the region into a fresh section: reclaims the space of dropped
 * history and re-centres the index. Done automatically when space runs out.
 */
JSF_API int jsf_region_compact(struct jsf_region *r);

struct jsf_region_stats {
	size_t sz;
	uint32_t live_funcs;
	uint32_t logged_funcs; /* live + retained history */
	uint64_t file_size;
	uint64_t compactions;
	uint64_t dropped_history;
	uint64_t seq; /* the region's generation counter */
	/* (1.1) resident pages: bytes mlocked now (header and current
	 * block), mlock calls refused so far (RLIMIT_MEMLOCK) and the errno
	 * of the last refusal (0: none). */
	uint64_t locked_bytes;
	uint64_t lock_failures;
	int32_t lock_errno;
	uint32_t __pad;
	/* (1.2) rebuilds (docs/ABI.md 3.3): a new block is filled a bounded
	 * step per add or remove; `sync_rebuilds` of them (the old block
	 * filled first, a compaction, a first name) were done whole within
	 * one call. The most work one add or remove did so far: bytes it
	 * copied into a new block, pages it populated. */
	uint64_t sync_rebuilds;
	uint64_t max_op_copied;
	uint64_t max_op_pages;
};
JSF_API int jsf_region_stats(const struct jsf_region *r,
			     struct jsf_region_stats *st);

/*
 * The live SFrame V3 section inside the region, for registration with a
 * kernel-side unwinder: valid only under the protocol of docs/ABI.md, and
 * moved by compaction (re-query after each call that changed the region).
 */
JSF_API int jsf_region_section(const struct jsf_region *r, const void **addr,
			       size_t *len);

/* Path of the region file ("/proc/self/fd/N" for a memfd). */
JSF_API const char *jsf_region_path(const struct jsf_region *r);

/* Unmap and close: the file stays, marked closed. */
JSF_API void jsf_region_destroy(struct jsf_region *r);

/*
 * In a child after fork(): drop this process's copy of the parent's region
 * without touching the file (the parent still owns and publishes it).
 */
JSF_API void jsf_region_detach(struct jsf_region *r);

/* ------------------------------------------------------------------ reader */

struct jsf_view;

/*
 * Open a region file read-only, live (its producer is running) or
 * post-mortem. Hostile or damaged files fail with -EBADMSG (never a crash);
 * jsf_strerror(err) (or jsf_view_error()) then says what was wrong.
 *
 * Reader calls on one view are MT-safe: any number of threads may look up,
 * iterate and export concurrently, with the producer running in another
 * process or thread. jsf_view_lookup alone is also AS-safe (a SIGPROF
 * handler may call it on a view opened beforehand): it allocates nothing,
 * takes no lock and calls only fstat(2) and sched_yield(2). open,
 * foreach, info, export and close allocate and are not AS-safe; close
 * must not run concurrently with another call on the same view.
 */
JSF_API int jsf_view_open(struct jsf_view **out, const char *path);

/* Why the last jsf_view_open on this thread failed (per-thread buffer);
 * kept for older callers: jsf_strerror gives the same text. */
JSF_API const char *jsf_view_error(void);

/*
 * Which function covered `pc`, and its row there, at time `at_ns`
 * (0: as of now; post-mortem: as of the end of the file).
 * -ENOENT: none; -EAGAIN: the producer kept rewriting the table during
 * every bounded retry (live regions only).  Outputs may be NULL.
 * MT-safe, AS-safe; bounded work (a binary search or a log scan, at most
 * a fixed number of retries; on a live view, now and then a sort of the
 * function log into the view's private index, no allocation).
 */
JSF_API int jsf_view_lookup(const struct jsf_view *v, uint64_t pc,
			    uint64_t at_ns, uint64_t *func_start,
			    uint32_t *func_size, struct jsf_row *row);

/*
 * (1.1, JITSFRAME_1.1) The name the producer gave (jsf_region_add_named)
 * the function that covered `pc` (its start, or any address inside it) at
 * time `at_ns` (0: now; post-mortem: at the end), as jsf_view_lookup finds
 * it: so a function removed and another added at the same address are
 * each named for their own time. Returns the name's length (without the
 * NUL) and copies it, cut to len - 1 bytes and NUL-terminated, into buf
 * (buf may be NULL when len is 0: the length alone). -ENOENT no function;
 * -ENODATA it has no name (or the region carries none: an older producer);
 * -EBADMSG the name area is damaged; -EAGAIN as jsf_view_lookup.
 * MT-safe, AS-safe (no allocation, no lock; bounded work: a log scan, or
 * jsf_view_lookup's index of the log).
 */
JSF_API int jsf_view_name(const struct jsf_view *v, uint64_t pc, uint64_t at_ns,
			  char *buf, size_t len);

/*
 * (1.1, JITSFRAME_1.1) The source map (jsf_region_add_mapped) of the
 * function that covered `pc` at `at_ns` (as jsf_view_name): returns its
 * length and copies up to len bytes of it into buf (NULL with len 0: the
 * length alone); *func_start (may be NULL) gets the function's start, so
 * that pc - *func_start is the offset to decode. -ENOENT no function;
 * -ENODATA it has no map; -EBADMSG damaged; -EAGAIN as jsf_view_lookup.
 * MT-safe, AS-safe.
 */
JSF_API int jsf_view_srcmap(const struct jsf_view *v, uint64_t pc,
			    uint64_t at_ns, void *buf, size_t len,
			    uint64_t *func_start);

/* One source frame of a map (pointers into the map's bytes). */
struct jsf_srcframe {
	const char *file; /* the chunk or file name */
	const char *name; /* the function's name, NULL unknown */
	uint32_t line;	  /* the line at this point (a caller: its call) */
	uint32_t first;	  /* the function's first line (0: the main chunk) */
	uint32_t pc;	  /* the bytecode position this line is from */
};
#define JSF_SRCMAP_EXACT 1u /* the frames at this offset are exact */
/* (added for issue 13, map header flag bit 0, range flag bit 1) */
#define JSF_SRCMAP_LOOP                               \
	2u /* the offset is in the function's loop (a \
	      LuaJIT trace: at or after its loop offset) */
#define JSF_SRCMAP_LOOPS                                               \
	4u /* the map marks its loop (so a clear JSF_SRCMAP_LOOP means \
	      "before the loop", or a function without one) */

/*
 * (1.1, JITSFRAME_1.1) Decode map (len bytes, as jsf_view_srcmap gave it)
 * at code offset `off`: up to max frames into out, INNERMOST FIRST, and in
 * *flags (may be NULL) JSF_SRCMAP_EXACT when the map knows them (clear:
 * the producer was not sure there, no frames: the function's own name is
 * all there is), JSF_SRCMAP_LOOP when off is in the function's loop and
 * JSF_SRCMAP_LOOPS when the map marks its loop at all. Returns the number of
 * frames at off (may exceed max), -EINVAL a map this version cannot read, or
 * damaged (every offset in it is bounds-checked). The last range runs to the
 * function's end. AS-safe (no allocation).
 */
JSF_API int jsf_srcmap_frames(const void *map, size_t len, uint32_t off,
			      struct jsf_srcframe *out, uint32_t max,
			      uint32_t *flags);

struct jsf_view_info {
	size_t sz;
	uint32_t abi_version;
	uint32_t arch;
	uint32_t producer_pid;
	bool live;	    /* a producer holds the region */
	bool closed;	    /* the producer closed it cleanly */
	bool recovered;	    /* producer died mid-update; index rebuilt */
	uint64_t create_ns; /* CLOCK_MONOTONIC at creation */
	uint64_t close_ns;  /* 0 unless closed */
	uint64_t file_size;
	uint64_t seq;
	uint32_t live_funcs;
	uint32_t logged_funcs;
};
/* sz: how much of the struct the caller has (sizeof: all of it). The two
 * counts take a snapshot of the table (of a live region, a copy of its
 * whole current block: megabytes for a program with many traces); with sz
 * = offsetof(struct jsf_view_info, live_funcs) they are left 0 and the
 * rest comes from the header alone. */
JSF_API int jsf_view_info(const struct jsf_view *v, struct jsf_view_info *info);
/*
 * (1.3, JITSFRAME_1.3) The same facts of the region file at path without a
 * view: its header, and whether a producer holds it (docs/ABI.md 4); the
 * counts are left 0. For a closed region jsf_view_open reads its whole
 * table; this reads 4 KiB. Returns 0, or negative errno as jsf_view_open
 * (jsf_view_error() says why).
 */
JSF_API int jsf_region_info(const char *path, struct jsf_view_info *info);

/* One function as iterated. remove_ns 0: still live. */
struct jsf_func {
	uint64_t start;
	uint32_t size;
	uint32_t nrows;
	uint64_t add_ns;
	uint64_t remove_ns;
	const struct jsf_row *rows; /* valid during the callback only */
};

/*
 * Call `cb` for every function in address order: at_ns 0: the live ones;
 * JSF_ALL: every logged one (live and history); else those live at at_ns.
 * A non-zero return from cb stops the walk and is returned.
 */
#define JSF_ALL UINT64_MAX
JSF_API int jsf_view_foreach(const struct jsf_view *v, uint64_t at_ns,
			     int (*cb)(const struct jsf_func *f, void *ctx),
			     void *ctx);

JSF_API void jsf_view_close(struct jsf_view *v);

/* ------------------------------------------------------------------ export */

struct jsf_export_opts {
	size_t sz;
	uint32_t version; /* 3 (default when 0) or 1 */
	uint32_t __pad;
	uint64_t at_ns; /* 0: live now, else the functions live at at_ns */
	uint64_t base;	/* V3: address the section is laid out for (default
			   0). V1: address starts are relative to */
	bool has_base;	/* V1: use `base`; else choose one (see out_base) */
};

/*
 * Serialise the selected functions as a standalone SFrame section (sorted;
 * V3 with FDE_FUNC_START_PCREL). *out is malloc'd. *out_base (may be NULL)
 * receives the base used. -ENOENT when no function is selected, -ERANGE when
 * a V1 export cannot reach every function with 32-bit starts.
 */
JSF_API int jsf_view_export(const struct jsf_view *v,
			    const struct jsf_export_opts *o, void **out,
			    size_t *out_len, uint64_t *out_base);

/* --------------------------------------------------------------- validator */

/*
 * Check a region file: the kernel unwinder's rules on its SFrame section
 * plus the region's own invariants. 0 if valid, else -EBADMSG with the first
 * violation in msg. The validators are MT-safe, not AS-safe.
 */
JSF_API int jsf_validate_region(const char *path, char *msg, size_t msglen);

/*
 * Check a raw SFrame V3 section of `len` bytes, loaded at address
 * `sec_addr`, against the rules the proposed kernel unwinder applies, for
 * text [text_start, text_start+text_size) (text_size 0: any address).
 */
JSF_API int jsf_validate_sframe(const void *buf, size_t len, uint64_t sec_addr,
				uint64_t text_start, uint64_t text_size,
				char *msg, size_t msglen);

/* ------------------------------------------------------ ELF .sframe */

/*
 * The row at `pc` of an ELF object's .sframe section (SFrame V1, as
 * binutils 2.40's `as --gsframe` writes, or V2; x86-64): `sec` holds the
 * section's `len` bytes, loaded at `sec_addr` (its sh_addr). On success
 * *func_start and *func_size give the function that covers pc, *row its
 * row there (row->offset: where the row starts, from func_start; for a
 * PLT's repeating FDE, within the repeated block) in the form the region's
 * readers give, and *row_end the offset from func_start up to which that
 * row holds for the addresses from pc on. Outputs may be NULL.
 * Returns 0; -ENOENT no function (or no row) covers pc; -EOPNOTSUPP the
 * row is outside this row model (the RA offset stored per row, or a
 * mangled RA); -EBADMSG not a V1/V2 x86-64 section, or damaged. Every
 * read is bounds-checked against len: hostile input fails, never crashes.
 * No allocation, no locks: thread-safe.
 */
JSF_API int jsf_sframe_find(const void *sec, size_t len, uint64_t sec_addr,
			    uint64_t pc, uint64_t *func_start,
			    uint32_t *func_size, uint32_t *row_end,
			    struct jsf_row *row);

/* ------------------------------------------------------------- discovery */

/*
 * Find the region of process `pid` by the convention of docs/ABI.md §8:
 *  1. its own mappings (/proc/PID/maps, a live process): the MAP_SHARED
 *     file whose header is a region's with producer_pid == pid (a forked
 *     child still mapping its parent's region is skipped), read through
 *     /proc/PID/map_files/ or /proc/PID/fd/ where the path cannot be
 *     opened (a memfd, a file gone, another mount namespace);
 *  2. BASE/jitsframe-UID/PID.region for every UID and every BASE of
 *     jsf_region_search_base ($TMPDIR when set, else /dev/shm, /tmp; the
 *     directory owned by UID and closed to others, else skipped): a
 *     post-mortem region, its producer_pid == pid and, when not_after_ns
 *     is non-zero, its create_ns <= not_after_ns (pids are reused: pass
 *     the time of the samples the region is to serve); the newest wins.
 * Writes the path (NUL-terminated, `len` bytes at most) and returns 0;
 * -ENOENT none (jsf_strerror names where it looked), -EACCES one exists
 * but cannot be read, -EINVAL bad arguments.
 * MT-safe; not AS-safe (it opens directories and allocates).
 */
JSF_API int jsf_region_find(int pid, uint64_t not_after_ns, char *path,
			    size_t len);
/*
 * (1.4, JITSFRAME_1.4) Where a producer given no path keeps its region
 * (docs/ABI.md 8): the per-user directory BASE/jitsframe-UID, BASE being
 * $TMPDIR when set, else /dev/shm when it is a tmpfs the caller can write
 * with at least 256 MiB free (the region's pages are memory either way;
 * there they are not written back to a disk), else /tmp. Writes DIR
 * (NUL-terminated) to buf; with create, makes it (0700) when missing.
 * Returns 0; -EPERM when it is not a directory of the caller's UID or is
 * writable by others, -ENAMETOOLONG, -EINVAL, or mkdir's negative errno. The
 * region's file is then DIR/PID.region.
 */
JSF_API int jsf_region_default_dir(char *buf, size_t len, bool create);
/*
 * (1.4) The bases whose jitsframe-UID directories a consumer searches
 * (jsf_region_find's step 2), i = 0, 1, ...: $TMPDIR alone when set (where
 * a producer with the same environment puts its region), else /dev/shm
 * and /tmp; NULL past the last. The strings are static (or the
 * environment's).
 */
JSF_API const char *jsf_region_search_base(unsigned i);

/* ------------------------------------------------------------- retention */

#define JSF_PRUNE_KEEP_DEFAULT 16u
#define JSF_PRUNE_BYTES_DEFAULT (256ull << 20)
enum {
	JSF_PRUNE_ALL = 1u << 0,     /* keep none of them (keep is ignored) */
	JSF_PRUNE_DRY_RUN = 1u << 1, /* remove nothing; report what would go */
};

struct jsf_prune_opts {
	size_t sz;	    /* sizeof(struct jsf_prune_opts) */
	uint32_t keep;	    /* dead regions kept, newest first; 0: 16 */
	uint32_t flags;	    /* JSF_PRUNE_* */
	uint64_t max_bytes; /* the kept ones' allocated bytes at most (the
			       newest is kept whatever its size); 0: 256 MiB,
			       on a tmpfs a sixteenth of its size if less */
	/* called for each region removed (JSF_PRUNE_DRY_RUN: that would
	 * be): its file name in dir and its allocated bytes */
	void (*removed)(const char *name, uint64_t bytes, void *ctx);
	void *ctx;
};

/*
 * (1.5, JITSFRAME_1.5) Retention of post-mortem regions (docs/ABI.md
 * 8.1): in `dir` (a per-user default directory, jsf_region_default_dir),
 * the files named PID.region that are regions whose producer is gone
 * (their lock free, ABI.md 4), newest first by creation time: the first
 * `keep` are kept while their allocated size stays within max_bytes, the
 * others removed. A live producer's region, a file being created, one
 * that is not a region or not the caller's, and any other name are never
 * touched. At most 4096 entries are looked at. NULL opts: the defaults.
 * Returns how many were removed (or would be), or a negative errno:
 * -EPERM when dir is not the caller's or is writable by others (nothing
 * is removed there), -ENOENT, -EINVAL, -ENOMEM.
 * MT-safe; not AS-safe.
 */
JSF_API int jsf_region_prune(const char *dir,
			     const struct jsf_prune_opts *opts);

#ifdef __cplusplus
}
#endif
#endif
