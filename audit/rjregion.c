/* SPDX-License-Identifier: MIT */
/*
 * Rows and a region from a RaptorJIT auditlog (rjlog.h, docs/RAPTORJIT.md
 * "Rows").
 *
 * A RaptorJIT trace's machine code has LuaJIT 2.1's heads and tails
 * (lj/ljrows.c, checked on every trace of the fixture logs); only its frame
 * is larger: CFRAME_SIZE 96 (six pushes) and CFRAME_SIZE_JIT 112, read from
 * the log's own macro records and accepted only at those values, the ones
 * the rows were verified for under gdb (../shared/raptorjit/
 * rowprobe.expect.tsv). A trace's rows are the lj/ derivation with that
 * frame, and are published only when the adjustment they imply equals the
 * GCtrace's logged spadjust (two independent readings of one fact).
 *
 * Lifetimes: a trace is added at its trace_stop's nanotime (logged after it
 * is committed, before it first runs) and removed at the next
 * trace_flushall of its jit_State (machine code is freed only there, and
 * at lua_close, which is not logged: traces live to the end of the log).
 *
 * Side traces: a parent is logged before its exit is patched to jump to
 * the side trace, so its logged MCode still jumps to the exit stub there.
 * That does not matter for rows: the patch rewrites only the rel32 of that
 * jump (same length, no rsp change), and the side trace starts with the
 * parent's adjustment, which is its row at offset 0. The parent's
 * adjustment is the GCtrace spadjust of the parent live at the side
 * trace's birth (rj_log_trace_at), never a trace of the same number from
 * another epoch. A stitched trace (parent 0, exitno = the stitching trace)
 * is entered from the interpreter, not from a trace's frame: a root for
 * rows.
 */
#include "rjlog.h"

#include "jitsframe.h"
#include "lj.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x86-64 RaptorJIT's frame, the only one its rows were verified for. */
#define RJ_CFRAME 96
#define RJ_CFRAME_JIT 112

int rj_log_frame(const struct rj_log *log, uint32_t *cframe,
		 uint32_t *cframe_jit, char *msg, size_t msglen)
{
	int64_t cf = 0, cfj = 0;
	int e1 = rj_log_macro_int(log, "CFRAME_SIZE", &cf);
	int e2 = rj_log_macro_int(log, "CFRAME_SIZE_JIT", &cfj);
	if (e1 || e2 || cf != RJ_CFRAME || cfj != RJ_CFRAME_JIT) {
		char a[24] = "absent", b[24] = "absent";
		if (!e1)
			snprintf(a, sizeof(a), "%" PRId64, cf);
		if (!e2)
			snprintf(b, sizeof(b), "%" PRId64, cfj);
		snprintf(msg, msglen,
			 "RaptorJIT log: CFRAME_SIZE %s, CFRAME_SIZE_JIT %s in "
			 "its DWARF macros; trace rows are verified only for "
			 "x86-64 RaptorJIT's %d and %d",
			 a, b, RJ_CFRAME, RJ_CFRAME_JIT);
		return -EINVAL;
	}
	*cframe = (uint32_t)cf;
	*cframe_jit = (uint32_t)cfj;
	return 0;
}

static void refusal(struct rj_region_stats *st, const struct rj_trace *t,
		    const char *why)
{
	if (st->refused++ == 0)
		snprintf(st->first_refusal, sizeof(st->first_refusal),
			 "trace %" PRIu32 " (event %" PRIu64 "): %s",
			 t->traceno, t->event_index, why);
}

/* Rows of trace t, or a reason in *why. */
static int trace_rows(const struct rj_log *log, const struct rj_trace *t,
		      uint32_t cframe_jit, struct lj_trace_out *o,
		      const char **why)
{
	struct lj_trace_in in = {.mc = t->mc,
				 .len = t->szmcode,
				 .loop = t->mcloop,
				 .traceno = t->traceno,
				 .side = t->parent != 0,
				 .cframe_jit = cframe_jit};
	if (t->parent) {
		const struct rj_trace *p =
		    rj_log_trace_at(log, t->jit_state, t->parent, t->born_ns);
		if (!p || p == t) {
			*why = "its parent is not live in the log";
			return -1;
		}
		in.parent_spadj = (int32_t)p->spadjust;
	}
	if (lj_trace_rows(&in, o)) {
		*why = o->why;
		return -1;
	}
	if (o->spadj != (int32_t)t->spadjust) {
		*why = "the machine code's stack adjustment is not the "
		       "GCtrace's spadjust";
		return -1;
	}
	return 0;
}

int rj_log_trace_rows(const struct rj_log *log, const struct rj_trace *t,
		      uint32_t cframe_jit, struct jsf_row *rows, uint32_t max,
		      uint32_t *nrows, const char **why)
{
	struct lj_trace_out o;
	*nrows = 0;
	if (!t->mc || !t->szmcode) {
		*why = "no machine code in the log";
		return -1;
	}
	if (cframe_jit != RJ_CFRAME_JIT) {
		*why = "not RaptorJIT's verified trace frame";
		return -1;
	}
	if (trace_rows(log, t, cframe_jit, &o, why))
		return -1;
	if (o.nrows > max) {
		*why = "more rows than room";
		return -1;
	}
	memcpy(rows, o.rows, o.nrows * sizeof(*rows));
	*nrows = o.nrows;
	return 0;
}

int rj_log_to_region(const struct rj_log *log, uint32_t cframe_jit,
		     struct jsf_region *r, struct rj_region_stats *st,
		     char *msg, size_t msglen)
{
	memset(st, 0, sizeof(*st));
	if (cframe_jit != RJ_CFRAME_JIT) {
		snprintf(msg, msglen,
			 "RaptorJIT trace frame %" PRIu32
			 ": rows are verified only for %d",
			 cframe_jit, RJ_CFRAME_JIT);
		return -EINVAL;
	}
	size_t nt = rj_log_ntraces(log), nf = rj_log_nflushes(log);
	/* published traces not yet removed (indexes into the log's) */
	size_t *live = malloc((nt ? nt : 1) * sizeof(*live));
	if (!live) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	size_t nlive = 0, ti = 0, fi = 0;
	int err = 0;
	/* both lists are in log order, which is time order: merge them */
	while (ti < nt || fi < nf) {
		const struct rj_trace *t =
		    ti < nt ? rj_log_trace(log, ti) : NULL;
		const struct rj_flush *f =
		    fi < nf ? rj_log_flush(log, fi) : NULL;
		if (f && (!t || f->record_offset < t->record_offset)) {
			fi++;
			st->flushes++;
			uint64_t at = f->nanotime ? f->nanotime : 1;
			size_t k = 0;
			for (size_t i = 0; i < nlive; i++) {
				const struct rj_trace *lt =
				    rj_log_trace(log, live[i]);
				if (lt->jit_state != f->jit_state) {
					live[k++] = live[i];
					continue;
				}
				err = jsf_region_remove(r, lt->mcode, at);
				if (err) {
					snprintf(msg, msglen,
						 "removing trace %" PRIu32
						 " at flush (event %" PRIu64
						 "): %s",
						 lt->traceno, f->event_index,
						 jsf_strerror(err));
					goto out;
				}
			}
			nlive = k;
			continue;
		}
		if (!t)
			break; /* (no flush either: the loop's condition) */
		ti++;
		st->traces++;
		if (!t->mc || !t->szmcode) {
			st->no_mcode++;
			continue;
		}
		struct lj_trace_out o;
		const char *why = NULL;
		if (trace_rows(log, t, cframe_jit, &o, &why)) {
			refusal(st, t, why);
			continue;
		}
		err = jsf_region_add(r, t->mcode, t->szmcode, o.rows, o.nrows,
				     t->born_ns ? t->born_ns : 1);
		if (err == -EEXIST) {
			/* code freed without a logged flush would be the
			 * only way: never published over a live trace */
			refusal(st, t, "its code overlaps a live trace");
			err = 0;
			continue;
		}
		if (err) {
			snprintf(msg, msglen,
				 "publishing trace %" PRIu32 " (event %" PRIu64
				 "): %s",
				 t->traceno, t->event_index, jsf_strerror(err));
			goto out;
		}
		st->published++;
		live[nlive++] = ti - 1;
	}
out:
	free(live);
	return err;
}
