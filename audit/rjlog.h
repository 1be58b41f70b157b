/* SPDX-License-Identifier: MIT */
/*
 * RaptorJIT's own auditlog (its lj_auditlog.c; ../shared/reference/
 * raptorjit.md and docs/RAPTORJIT.md): a stream of msgpack fixmaps, each a
 * record of one of three kinds,
 *
 *   memory {type:"memory", hint, address, data}   raw bytes of a VM object
 *   blob   {type:"blob", name, data}              e.g. "lj_dwarf.dwo"
 *   event  {type:"event", nanotime, event, ...}   trace_stop, trace_abort,
 *                                                 trace_flushall, lex, ...
 *
 * The log embeds the VM's split DWARF (the blob "lj_dwarf.dwo"), and every
 * raw struct is decoded through it, by field name, never by a hard-coded
 * offset: a log whose DWARF lacks a needed field, or whose memory record
 * disagrees with the DWARF's struct size, is refused (rj_log_open fails,
 * one message). The reader parses untrusted bytes: every read is
 * bounds-checked; a cut or damaged log decodes up to its last complete
 * record and says where it stopped, as alog_next does for ours
 * (tests/fuzz_rjlog.c).
 *
 * Lifetimes: a trace lives from its trace_stop event's nanotime (logged
 * after the trace is committed, before it first runs) to the next
 * trace_flushall of the same jit_State (trace numbers are reused after a
 * flush); RJ_NEVER if no flush follows in the log.
 */
#ifndef ALOG_RJLOG_H
#define ALOG_RJLOG_H

#include "jitsframe.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RJ_NEVER UINT64_MAX

struct rj_log; /* opaque: the whole file in memory plus its indexes */

/* One committed trace: a trace_stop event with its GCtrace and MCode. */
struct rj_trace {
	uint64_t event_index;	/* 0-based among all event records */
	uint64_t record_offset; /* byte offset of the trace_stop record */
	uint64_t born_ns;   /* the trace_stop's nanotime (CLOCK_MONOTONIC) */
	uint64_t dead_ns;   /* next trace_flushall of jit_state, or RJ_NEVER */
	uint64_t jit_state; /* the event's jit_State address */
	uint64_t gctrace;   /* the event's GCtrace address */
	/* GCtrace fields, decoded through the log's DWARF */
	uint64_t mcode;
	uint32_t szmcode, mcloop;
	uint32_t spadjust;
	uint32_t traceno, parent, root, link;
	uint32_t exitno;
	uint32_t linktype;
	/* the trace's machine code as logged (the latest MCode[] memory
	 * record at `mcode`, szmcode bytes); NULL if the log has none */
	const uint8_t *mc;
	/* the raw GCtrace bytes (rj_log_type_size(log, "GCtrace") of them) */
	const uint8_t *raw;
};

/* A trace_flushall event. */
struct rj_flush {
	uint64_t event_index, record_offset, nanotime, jit_state;
};

/*
 * Open a log file (read whole into memory) or a buffer (copied). 0 and
 * *out on success, even for a cut or damaged log (then rj_log_damage()
 * says where decoding stopped: everything before it is usable). -errno
 * (-EINVAL: not a RaptorJIT log, or one the reader cannot trust) with the
 * reason in msg, and *out NULL.
 */
int rj_log_open(struct rj_log **out, const char *path, char *msg,
		size_t msglen);
int rj_log_open_mem(struct rj_log **out, const void *buf, size_t len, char *msg,
		    size_t msglen);
void rj_log_close(struct rj_log *log);

/* NULL for a log that ends cleanly at a record boundary; else "damaged at
 * byte N: <why>; K records decoded" (the same shape as ours). */
const char *rj_log_damage(const struct rj_log *log);

/* Traces in log order (trace_stop order), flushes likewise. */
size_t rj_log_ntraces(const struct rj_log *log);
const struct rj_trace *rj_log_trace(const struct rj_log *log, size_t i);
size_t rj_log_nflushes(const struct rj_log *log);
const struct rj_flush *rj_log_flush(const struct rj_log *log, size_t i);

/* The live trace numbered `traceno` of `jit_state` at time `ns` (for a
 * side trace's parent, a stitched trace's predecessor), or NULL. */
const struct rj_trace *rj_log_trace_at(const struct rj_log *log,
				       uint64_t jit_state, uint32_t traceno,
				       uint64_t ns);

/* --- the embedded DWARF --- */
/* Size of a struct/union/typedef by name; 0 if unknown. */
uint32_t rj_log_type_size(const struct rj_log *log, const char *type);
/* A member's byte offset and size in `type`: 0, or -ENOENT. */
int rj_log_field(const struct rj_log *log, const char *type, const char *member,
		 uint32_t *off, uint32_t *size);
/* Read an unsigned member of a raw struct (1, 2, 4 or 8 bytes, little
 * endian): 0, or -ENOENT/-ERANGE. `raw` has `rawlen` bytes. */
int rj_log_get(const struct rj_log *log, const char *type, const char *member,
	       const uint8_t *raw, size_t rawlen, uint64_t *val);
/* A macro's definition text from the DWARF's macro records (-g3), e.g.
 * "CFRAME_SIZE" -> "(12*8)", "IRDEF(_)" -> "_(LT, N , ref, ref) ...";
 * NULL if absent. `name` is the macro name without parameters. */
const char *rj_log_macro(const struct rj_log *log, const char *name);
/* Evaluate an integer macro whose definition is an expression of
 * integers, + - * / ( ) and other such macros: 0, or -ENOENT/-EINVAL. */
int rj_log_macro_int(const struct rj_log *log, const char *name, int64_t *val);

/* --- raw records --- */
/* The latest memory record that covers [addr, addr+len) and starts at or
 * before byte offset `before` of the log (SIZE_MAX: anywhere); `hint`
 * NULL for any hint. Its bytes from addr, or NULL. */
const uint8_t *rj_log_memory(const struct rj_log *log, uint64_t addr,
			     size_t len, const char *hint, size_t before);

/* Iterate all records: the callback sees each record's offset, kind
 * ("memory", "blob", "event") and the event name or memory hint or blob
 * name; nonzero return stops. For listings and --dump. */
struct rj_record {
	uint64_t offset;
	const char *kind;
	const char *name;    /* event name, memory hint, blob name */
	uint64_t address;    /* memory */
	uint64_t nanotime;   /* event */
	const uint8_t *data; /* memory/blob data */
	size_t len;
};
int rj_log_foreach(const struct rj_log *log,
		   int (*fn)(const struct rj_record *rec, void *arg),
		   void *arg);
/* An event's other keys, for the record at `offset` (an event): the
 * unsigned integer value of key, 0 and *val, or -ENOENT. */
int rj_log_event_u64(const struct rj_log *log, uint64_t offset, const char *key,
		     uint64_t *val);

/* Cheap check of a file's first bytes: 1 if it looks like a RaptorJIT
 * auditlog (a fixmap whose first key is "type"), else 0. */
int rj_log_sniff(const void *buf, size_t len);

/* --- rows and a region from the log (audit/rjregion.c, uses lj/) --- */

/* The VM's frame facts from the log's own macros: CFRAME_SIZE (the
 * interpreter's frame, CFA = rsp + cframe in VM code) and CFRAME_SIZE_JIT
 * (CFA = rsp + cframe_jit + spadjust in a trace). 0, or -EINVAL with msg
 * (macros absent, or not the x86-64 values the rows were verified for).
 * A consumer that has the binary checks cframe against the interpreter's
 * .debug_frame FDE (unwind/) before trusting either. */
int rj_log_frame(const struct rj_log *log, uint32_t *cframe,
		 uint32_t *cframe_jit, char *msg, size_t msglen);

struct rj_region_stats {
	uint32_t traces;    /* trace_stop records seen */
	uint32_t published; /* added to the region */
	uint32_t refused;   /* machine code the row derivation refused */
	uint32_t no_mcode;  /* no MCode[] record for the trace */
	uint32_t flushes;   /* trace_flushall events applied */
	char first_refusal[160];
};

/* The rows of one trace of the log, as rj_log_to_region publishes them
 * (lj/'s derivation, the parent's adjustment from the live parent): 0 and
 * rows[0..*nrows), or -1 with *why (a refusal: publish nothing). max must
 * be at least 4. */
int rj_log_trace_rows(const struct rj_log *log, const struct rj_trace *t,
		      uint32_t cframe_jit, struct jsf_row *rows, uint32_t max,
		      uint32_t *nrows, const char **why);

/* Publish every trace of the log into region `r` with exact rows (lj/'s
 * derivation with the log's cframe_jit), added at its born_ns and removed
 * at its dead_ns, in log time order, so that a time-aware reader of `r`
 * sees what the process had at each instant. 0, or -errno with msg. */
int rj_log_to_region(const struct rj_log *log, uint32_t cframe_jit,
		     struct jsf_region *r, struct rj_region_stats *st,
		     char *msg, size_t msglen);

/* --- names for listings (audit/rjinfo.c; added by the tools helper) --- */
/* rj_log_get's reading of a member of 1..8 bytes, any type (GCRef and MRef
 * members are 8-byte structs): 0, or -ENOENT/-ERANGE. */
int rj_log_getf(const struct rj_log *log, const char *type, const char *member,
		const uint8_t *raw, size_t rawlen, uint64_t *val);
/* "chunk:line" of GCproto `pt` at bytecode address `pc` (as -jv: a chunk
 * name's '@' or '=' dropped; the line by lj_debug_line's rule), from the
 * GCproto and GCstr memory records logged before byte `before`: 0, or
 * -ENOENT with what is known ("?" parts) in out. */
int rj_log_proto_loc(const struct rj_log *log, uint64_t pt, uint64_t pc,
		     size_t before, char *out, size_t cap);
/* Where a trace starts, as -jv prints it: "[(parent/exit) |(n/stitch) ]
 * chunk:line" (its GCtrace's startpt and startpc). 0 or -ENOENT. */
int rj_log_trace_loc(const struct rj_log *log, const struct rj_trace *t,
		     char *out, size_t cap);
/* The enumerators of the enum `type` (its tag or typedef name, e.g.
 * "TraceError") in the log's DWARF: names[v] for 0 <= v < max, with the
 * prefix `strip` (e.g. "LJ_TRERR_") dropped; "" where none. The number
 * stored, or -ENOENT. */
#define RJ_ENUM_NAME 40
int rj_log_enum(const struct rj_log *log, const char *type, const char *strip,
		char (*names)[RJ_ENUM_NAME], size_t max);
/* The value of the enumerator `name` (e.g. "REF_BIAS"), any enum: 0, or
 * -ENOENT. */
int rj_log_enumerator(const struct rj_log *log, const char *name, int64_t *val);

/* --- the log as our own auditlog's records (audit/rjaudit.c) --- */
/* The host LuaJIT's numbering, as its jit.vmdef has it: name[kind][i] is
 * number i's name (IR opcodes and bytecodes as in irnames/bcnames, six
 * columns trimmed; irfield, ircall, irfpm, ffnames as they are). */
enum { RJH_IR, RJH_BC, RJH_IRFIELD, RJH_IRCALL, RJH_IRFPM, RJH_FF, RJH_NKINDS };
#define RJH_MAX 512
#define RJH_NAME 48
struct rj_host {
	uint32_t n[RJH_NKINDS];
	char name[RJH_NKINDS][RJH_MAX][RJH_NAME];
};
/* Write the log's traces, aborts and flushes to `out` as a jitsframe
 * auditlog (docs/AUDITLOG.md: header, func, start, stop, abort, flush
 * records), numbers mapped by name onto `host`'s, so that the replay
 * driver runs LuaJIT's jit/dump.lua and jit/v.lua on it unchanged
 * (docs/RAPTORJIT.md, "Replay"). 0, or -errno with msg (-EINVAL: an
 * opcode or name the host lacks, an encoding other than LuaJIT 2.1's, a
 * trace without its IR records: refused, one message). Records before
 * the reason stay written. */
int rj_log_to_audit(const struct rj_log *log, const struct rj_host *host,
		    FILE *out, char *msg, size_t msglen);

#endif
