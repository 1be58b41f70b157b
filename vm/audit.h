/* SPDX-License-Identifier: MIT */
/*
 * The auditlog, Lua side: turns LuaJIT's VM events into records (schema:
 * docs/AUDITLOG.md) with jit.util called from C, and reads logs back into
 * Lua tables (jsf.audit_records / jsf.audit_status). Callers hold the
 * module's lock around every call except the reading API.
 *
 * Its files, by job: audit_write.c (the writer glue: open, events, close,
 * stats), audit_build.c (the record builders through jit.util),
 * audit_raw.c (the raw trace reader), audit_read.c (the reading API);
 * auditint.h is what they share.
 */
#ifndef VM_AUDIT_H
#define VM_AUDIT_H

#include "auditlog.h"

#include <lua.h>
#include <stdint.h>
#include <sys/types.h>

#define VAUDIT_DEFAULT 1
#define VAUDIT_FULL 2
#define VAUDIT_RAW_RECHECK 128 /* raw reads: one trace in this many checked */
#define VAUDIT_NKOP 9	       /* constant IR opcodes the raw reader knows */

struct vaudit_cfg {
	const char *path;
	int level;	    /* VAUDIT_DEFAULT or VAUDIT_FULL */
	uint64_t max_bytes; /* rotation bound per file, 0: none */
	unsigned keep;	    /* rotated files kept */
	int replace;
};

/* The auditlog's state: one per process (the log is the process's; a fork
 * child does not write its parent's), in the module's state. Start it
 * with VAUDIT_INIT. */
struct vaudit {
	/* scalars first: what every event reads shares a cache line or two */
	struct alogw *w; /* the writer */
	int level;
	pid_t owner;	  /* the process that opened w */
	uint64_t next_fn; /* function ids, unique in the process */
	uint64_t dropped, funcs;
	uint64_t direct; /* trace events built without lua_pcall */
	uint64_t func_ns, event_ns, write_ns; /* time spent */
	uint64_t put_end; /* the clock after the last write (audit_write.c) */
	void *ast, *ast_reg; /* the last VM's astate and registry (or NULL) */
	msgpack_sbuffer sb, sbf; /* the record, a func record */
	/* the raw trace reader (audit_raw.c) */
	int raw;	      /* RAW_* */
	unsigned raw_recheck; /* JSF_ENV_AUDIT_RAWCHECK */
	int raw_fault;	      /* JSF_ENV_AUDIT_RAWFAULT: tests only */
	int raw_v1;	      /* JSF_ENV_AUDIT_RAWV1: raw records version 1 */
	unsigned raw_mask;    /* candidate layouts still agreeing */
	unsigned raw_checked; /* traces found equal */
	int str_len;  /* GCstr's len offset, 0 unknown, -1 no raw strings */
	int x64_gc64; /* the VM is x64 with GC64: raw reads possible */
	int gc64;     /* the VM is GC64 (the header's gc64) */
	int kop[VAUDIT_NKOP]; /* opcode of each constant op, -1 unknown */
	uint8_t kcls[256];    /* VA_KC_* of each opcode, from kop */
	uint8_t k2cls[256];   /* ALOG_K2_*: raw version 2's constant kinds */
	int k2cls_ready;
	int kcls_ready;
	uint64_t raw_traces, raw_stops, raw_checks;
	msgpack_sbuffer sbu, sbr;     /* jit.util and raw builds, to compare */
	msgpack_sbuffer sbx;	      /* the raw build expanded */
	uint32_t opgen, opstamp[256]; /* opcodes seen in this trace */
	/* func records: the bytecode dump, what is known of the ops */
	char *dbuf;
	size_t dlen, dcap;
	int patch_ready;
	struct alog_fproto fp; /* a Lua error leaves it to the next call */
	/* tables */
	uint8_t irmode[256], irmode_known[256];
	int32_t bcmode[256]; /* mode + 1 of each op, 0: not yet known */
	uint8_t patchable[256];
	char linkname[256][24]; /* linktype index -> traceinfo's name */
	uint8_t linkname_known[256];
	/* strings */
	char raw_why[200];
	char last_err[200];
	char path[4096];
};
#define VAUDIT_INIT                                             \
	{                                                       \
		.next_fn = 1, .raw_recheck = VAUDIT_RAW_RECHECK \
	}

/* Open the log (process-wide) and write its header; 0, or -errno with a
 * message in err. */
int vaudit_open(struct vaudit *A, lua_State *L, const struct vaudit_cfg *cfg,
		char *err, size_t errlen);
/* The level being logged, 0 when not logging (or in a fork child). */
int vaudit_level(const struct vaudit *A);
const char *vaudit_path(const struct vaudit *A);
/* Event handlers: the event's arguments are the stack, 1..top.
 * trace: "start"|"stop"|"abort"|"flush", ...; spadj from the rows (or
 * INT32_MIN when unknown). */
void vaudit_trace(struct vaudit *A, lua_State *L, int32_t spadj);
void vaudit_record(struct vaudit *A, lua_State *L);
void vaudit_texit(struct vaudit *A, lua_State *L);
/* Close with a final note (NULL: none). */
void vaudit_close(struct vaudit *A, const char *note);
/* stats into the table at the top of the stack */
void vaudit_stats(const struct vaudit *A, lua_State *L);
/* Register audit_records and audit_status in the table at the top. */
void vaudit_register(lua_State *L);

#endif
