/* SPDX-License-Identifier: MIT */
/* perf's jitdump (jit-PID.dump) and perf map (/tmp/perf-PID.map) sinks. */
#ifndef JSF_JITDUMP_H
#define JSF_JITDUMP_H

#include "ehframe.h"
#include "jitsframe.h"

#include <stdint.h>

struct jd_writer;

/* One source line of machine code at `addr`. */
struct jd_line {
	uint64_t addr;
	uint32_t line;
	const char *file;
};

/* Create DIR/jit-PID.dump (O_EXCL, 0600) and map it so perf records it. */
int jd_open(struct jd_writer **out, const char *dir);
/* The same, written after the fact on behalf of process `pid` (e.g. from
 * RaptorJIT's auditlog): DIR/jit-PID.dump, its header timed `ts`, its loads
 * naming pid, and no mapping (nobody records this process). */
int jd_open_as(struct jd_writer **out, const char *dir, uint32_t pid,
	       uint64_t ts);

/* Code already described to perf, as the neighbours callback reports it. */
struct jd_code_info {
	uint64_t start;
	uint32_t size;
	const struct jsf_row *rows;
	uint32_t nrows;
	uint64_t eh_lo, map_hi; /* its load's unwind data: [eh_lo, map_hi) */
};

/* The published code overlapping [lo, hi): how many were put in out. */
typedef uint32_t (*jd_neighbours_fn)(uint64_t lo, uint64_t hi,
				     struct jd_code_info *out, uint32_t max,
				     void *ctx);

/* Where a load's unwind data went (for the neighbours of later loads). */
struct jd_placed {
	uint64_t eh_lo, map_hi; /* 0, 0: no unwind data */
};

/*
 * Write DEBUG_INFO (if nlines), UNWINDING_INFO (from rows) and CODE_LOAD
 * for one piece of code, in that order, as one write (threads may share
 * the writer). ts: CLOCK_MONOTONIC ns. `nb` (may be NULL) reports the code
 * already loaded around; *placed (may be NULL) receives where this load's
 * unwind data went. See the comment in jitdump.c.
 */
int jd_code(struct jd_writer *w, uint64_t addr, const void *code, uint32_t size,
	    const char *name, const struct jsf_row *rows, uint32_t nrows,
	    const struct jd_line *lines, uint32_t nlines, uint64_t ts,
	    jd_neighbours_fn nb, void *nbctx, struct jd_placed *placed);

const char *jd_path(const struct jd_writer *w);
void jd_close(struct jd_writer *w);

/* One CODE_LOAD read back. */
struct jd_load {
	uint32_t pid;
	uint64_t index; /* the N of perf inject's jitted-PID-N.so */
	uint64_t ts;
	uint64_t code_addr, code_size; /* as declared to perf */
	uint64_t lo, hi; /* the code itself (from DEBUG_INFO; else declared) */
	const char *name;
};

/* Call cb for every CODE_LOAD of a jitdump file. Returns how many, or a
 * negative errno. */
int jd_loads(const char *path, void (*cb)(const struct jd_load *l, void *ctx),
	     void *ctx);

/* /tmp/perf-PID.map: append "START SIZE name" lines. */
struct pmap;
int pmap_open(struct pmap **out);
int pmap_add(struct pmap *m, uint64_t addr, uint32_t size, const char *name);
void pmap_close(struct pmap *m);

#endif
