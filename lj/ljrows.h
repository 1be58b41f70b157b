/* SPDX-License-Identifier: MIT */
/* LuaJIT 2.1 x86-64 (GC64): unwind rows for one trace from its machine code. */
#ifndef LJ_LJROWS_H
#define LJ_LJROWS_H

#include "jitsframe.h"

#include <stdbool.h>
#include <stdint.h>

/* CFA = rsp + LJ_CFRAME_JIT + spadj inside a LuaJIT trace; verified at
 * start-up against the running VM (vm/vmcheck.c), never assumed. Another
 * VM of the family passes its own frame size (cframe_jit below: RaptorJIT's
 * is 112, read from its auditlog, audit/rjregion.c). */
#define LJ_CFRAME_JIT 96
#define LJ_MAX_ROWS 4

struct lj_trace_in {
	const uint8_t *mc; /* the trace's machine code (tracemc) */
	uint32_t len;
	uint32_t loop; /* tracemc's loop offset: 0 for non-looping */
	uint32_t traceno;
	bool side;	      /* has a parent trace */
	int32_t parent_spadj; /* the parent's stack adjustment, if side */
	/* CFA = rsp + cframe_jit + adjustment; 0: LJ_CFRAME_JIT. Must be a
	 * positive multiple of 16 (rsp is 16-aligned in a trace and at the
	 * call that entered the VM). Last, so that positional initialisers
	 * of the fields above keep LuaJIT's 96. */
	uint32_t cframe_jit;
};

struct lj_trace_out {
	struct jsf_row rows[LJ_MAX_ROWS];
	uint32_t nrows;
	int32_t spadj;	   /* this trace's own stack adjustment */
	uint32_t head_end; /* offset of the trace-number store */
	const char *why;   /* refusal reason */
};

/*
 * Derive exact rows (docs/VM.md): CFA = rsp + cframe_jit (96 for LuaJIT) +
 * adjustment, the parent's
 * in a side trace's head up to and including its add, the trace's own in the
 * body, the base value after the tail add; saved rbp at CFA-16, RA at CFA-8.
 * Returns 0, or -1 with out->why set when the code does not match the
 * patterns verified for this VM (then nothing may be published).
 */
int lj_trace_rows(const struct lj_trace_in *in, struct lj_trace_out *out);

#endif
