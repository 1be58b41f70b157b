/* SPDX-License-Identifier: MIT */
/*
 * The Lua module's internals (vm/), its files by job:
 *   module.c  the Lua API (start/stop/stats/rows), options, the process
 *             state, the fork-aware pid, messages;
 *   attach.c  the jit.attach multiplexer (one dispatcher per VM event);
 *   traces.c  the trace table (per Lua state) and the event handlers;
 *   sinks.c   the region, perf's jitdump and perf map;
 *   vmcheck.c the VM frame layout check;
 *   audit_*.c the auditlog (audit.h).
 * The process state (struct vmod) is passed to whatever needs it; a Lua
 * state's table (struct lstate) points to it.
 */
#ifndef VM_VM_H
#define VM_VM_H

#include "audit.h"
#include "jitsframe.h"
#include "lj.h"

#include <lua.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What is known of one trace number: of its last trace, then (from
 * TINFO_POS on) where its last start was. */
struct tinfo {
	uint64_t start;
	uint32_t size;
	int32_t spadj;
	uint8_t nrows;
	uint8_t live;
	struct jsf_row rows[LJ_MAX_ROWS];
	uint64_t eh_lo, map_hi; /* where its jitdump unwind data went */
	uint8_t *lmap;		/* its Lua frames (luamap.c), malloc'd */
	uint32_t lmap_len;
	uint32_t loop;	     /* tracemc's loop offset (0: no loop) */
	uint32_t line;	     /* Lua source line where the trace starts */
	uint32_t start_pc;   /* its start's bytecode pc, while pos_pending */
	uint8_t pos_pending; /* file/line not looked up yet (see on_start) */
	char file[96];	     /* its chunk name */
};
#define TINFO_POS offsetof(struct tinfo, line)

/* What a Lua stack walk from outside reads (luavm.c; docs/ABI.md 1.6). */
struct lv_layout {
	uint64_t g, vm_start, vm_end;
	uint16_t g_vmstate, g_cur_L, g_jit_base, L_base, L_stack, L_cframe,
	    cf_pc, fn_ffid, fn_pc, pt_size, pt_sizebc, pt_chunkname,
	    pt_firstline, pt_numline, pt_lineinfo, str_len, str_data;
	uint16_t cf_prev, cf_nres; /* the C frame's previous one, its nres */
	int fr2_gc64;
};
#define LV_AREA_SIZE 80 /* 72, and the C frame chain's two offsets */

/* The module's process state: one region (and jitdump, perf map,
 * auditlog) per process, shared by every Lua state in it. mu guards it
 * all (and the auditlog). */
struct vmod {
	/* what every event touches first (a few cache lines) */
	pthread_mutex_t mu;
	struct jsf_region *region;
	struct jd_writer *jd; /* perf sinks (perfmap/): jitdump, perf map */
	struct pmap *pm;
	pid_t pid;	/* process that owns region */
	unsigned epoch; /* bumped when a region is (re)created */
	int failed;	/* an internal error stopped publishing */
	int layout;	/* 0 unknown, 1 verified, -1 refused */
	int quiet;
	int replace; /* replace an existing file at an explicit path */
	int want_perfmap;
	int no_mlock;	  /* start{mlock = false}: JSF_REGION_NO_MLOCK */
	uint32_t history; /* start{region_history}: history_max; 0 default */
	/* ffnames.c: trace events seen, and the one at which to look for
	 * builtins and modules again (here, beside what each event touches
	 * anyway) */
	uint32_t ff_events, ff_next;
	uint64_t traces, published, skipped, removed;
	uint32_t nlive; /* rows live in the current region, all states */
	/* a stopped trace's facts (machine code, loop offset, parent) from
	 * its GCtrace (lj/ljtrace.h) once they agreed with jit.util, checked
	 * again on one trace in VM_RAW_RECHECK; any disagreement: jit.util
	 * for the rest of the process (traces.c) */
	int raw;	   /* VM_RAW_* */
	unsigned raw_mask; /* layouts that agreed */
	int raw_fault;	   /* JSF_ENV_VM_RAWFAULT: tests only */
	uint32_t raw_checked, raw_base_op;
	uint64_t raw_stops, raw_traces, raw_checks;
	char raw_why[160];
	/* the Lua frames of each trace (luamap.c): VM_LM_*; only when
	 * want_luamap (start{luamap=true}, JITSFRAME_LUAMAP=1) */
	int want_luamap;
	int lm, lm_shift; /* lm_shift: JSF_ENV_VM_LUAMAP_SHIFT, tests only */
	uint32_t lm_checked;
	uint64_t lm_stops, lm_traces, lm_bytes, lm_bad, lm_ns;
	char lm_why[160];
	/* the maps built from the trace's IR constants and the prototypes
	 * through the verified Lua layout, without jit.util: VM_LM_* (on
	 * once LM_CHECK traces gave the same bytes both ways; then one in
	 * LM_RECHECK again); lmk: the IR opcode and type bytes of a function
	 * and of a number constant, learnt from tracek's answers;
	 * lmr_bug: JSF_ENV_VM_LUAMAP_RAWBUG, tests only */
	int lmr, lmr_bug;
	uint32_t lmr_checked;
	uint64_t lmr_traces;
	struct {
		uint8_t o, t, known;
	} lmk[2];
	char lmr_why[160];
	/* the Lua stack's layout for out-of-process readers (luavm.c):
	 * lv_state 0 unchecked, 1 verified (published in every region of
	 * the process, lv_epoch), -1 refused (lv_why, said once) */
	int lv_state;
	unsigned lv_epoch;
	struct lv_layout lv;
	char lv_why[160];
	/* builtins' names (ffnames.c): ff_state -1 off (no jit.vmdef);
	 * ff_busy: a thread is looking for them */
	struct vm_ff *ff;
	int ff_state, ff_busy;
	struct vaudit audit;
	/* strings */
	char path[4200];      /* the region's path */
	char base_path[4000]; /* as configured (explicit path or "") */
	char jd_dir[2048];    /* the jitdump's directory ("": none) */
	char refusal[256];
	char last_skip[128];
};

enum { VM_RAW_UNTRIED, VM_RAW_CHECKING, VM_RAW_ON, VM_RAW_OFF };
#define VM_RAW_CHECK 4	  /* traces compared before raw reads alone */
#define VM_RAW_RECHECK 64 /* then one trace in this many */
enum { VM_LM_CHECKING, VM_LM_ON, VM_LM_OFF };

/* VM_BENCH_CUT: bench-only builds of the module cut short (never in the
 * product: build/bench/cutN/jitsframe.so, docs/VM.md "Cost"), to see what
 * is left of a trace stop's cost without its later parts: 1, the handler
 * returns at once (LuaJIT's call of the module); 2, a stop returns at its
 * start (the dispatch: the event read, the lock, the region ensured);
 * 3, everything but the region's add (the facts, rows and name);
 * 4, an auditlog whose raw stop records are the trace's bytes alone
 * (bench/audit_bench.lua's floor; not a readable log); 5, a stop that
 * only copies its facts and its name's source to a ring, the least a
 * stop would do if another thread derived and added the rows. */
#ifndef VM_BENCH_CUT
#define VM_BENCH_CUT 0
#endif

/* The VM events we multiplex (a dispatcher's upvalue). */
enum { VM_EV_TRACE, VM_EV_RECORD, VM_EV_TEXIT };

/* Per Lua state (a userdata in its registry). */
struct lm_build;
struct lstate {
	struct vmod *m;
	struct tinfo *t; /* indexed by trace number */
	uint32_t cap;
	uint32_t used; /* 1 + the highest trace number seen */
	int enabled;
	int installed;	/* dispatcher attached, jit.attach wrapped */
	unsigned epoch; /* the m->epoch its traces were published in */
	uint32_t nlive; /* of m->nlive, this state's */
	/* chains_ref: event name -> the handlers others attached, called
	 * after ours; disps_ref: event name -> our dispatcher for it */
	int chains_ref, orig_ref, disps_ref, util_ref;
	int chained; /* handlers in all chains: 0, the dispatcher returns */
	/* starts_ref: trace number -> the function its last start began in,
	 * until that trace stops (its name is looked up then, not per
	 * attempt); LUA_NOREF until first needed */
	int starts_ref;
	int basefn_ref; /* trace number -> its base frame's function */
	/* The last "start" (a VM records one trace at a time, so a "stop"
	 * is of the last trace started): its number, and the prototype and
	 * bytecode position it began at (st_pt NULL: not known that way).
	 * The trace is named from them at its stop, so that a start (most
	 * end in an abort) touches nothing else. LuaJIT keeps the
	 * prototype alive while the trace is recorded (J->cur.startpt). */
	uint32_t st_tr, st_pos;
	const void *st_pt;
	/* luamap.c's build state (some 21 KiB), made at the first map and
	 * kept: one malloc for the state's life, not one a trace */
	struct lm_build *lmb;
};

/* The code every trace event runs, from several files, placed together
 * (.text.hot: the linker groups it) so that an event after a long compile
 * touches few cold code lines and pages, as when it was one file. */
#define VM_HOT __attribute__((section(".text.hot.jitsframe_vm")))

/* module.c */
/* This process's pid, without a system call (refreshed in a fork child). */
pid_t vm_self_pid(void);
void vm_log(const struct vmod *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Require a module, leaving it on the stack; 0 on success. */
int vm_require(lua_State *L, const char *name);

/* attach.c: multiplex "trace" (plus "record" and "texit" for a full
 * auditlog), wrapping jit.attach; 0 or -1. uninstall gives LuaJIT back its
 * own attach, leaving others' handlers attached. */
int vm_install(lua_State *L, struct lstate *s);
void vm_uninstall(lua_State *L, struct lstate *s);

/* traces.c */
struct lstate *vm_get_state(lua_State *L); /* NULL: none yet */
struct lstate *vm_new_state(struct vmod *m, lua_State *L);
/* Our part of VM event ev (VM_EV_*); its arguments are the stack, 1..top. */
void vm_event(lua_State *L, struct lstate *s, int ev);
/* Map this module's code and constants in now (once, from start()). */
void vm_prefault_self(lua_State *L);
/* Withdraw every trace of s (m->mu held). */
void vm_on_flush(struct vmod *m, struct lstate *s);
/* What jit.util said of a trace, as lj/ljtrace's discovery keys the trace
 * array by (shared with the auditlog's raw reader): from its traceinfo
 * table at idx, and from tracemc's three results (code, address, loop
 * offset) starting at idx. The stack is left as it was. */
void vm_known_info(lua_State *L, int idx, struct ljt_known *k);
void vm_known_mc(lua_State *L, int idx, struct ljt_known *k);

/* luamap.c, with m->mu held: the Lua frames of stopped trace tr (ti,
 * its rows known) into ti->lmap (docs/ABI.md 1.5), or none; on "start",
 * what the map needs of the trace's start (the event's arguments). */
void vm_luamap(struct vmod *m, lua_State *L, struct lstate *s, uint32_t tr,
	       struct tinfo *ti);
void vm_luamap_start(lua_State *L, struct lstate *s, uint32_t tr);
/* The map of ti's loop alone (no frames) into out: its length (<= 32). */
#define VM_LOOPMAP_MAX 32
uint32_t vm_loop_map(const struct tinfo *ti, uint8_t *out);

/* luavm.c, with m->mu held: check the Lua stack's layout on the running VM
 * (once; L is the caller of start(), vl the verified frame layout), and
 * publish it in the region (once per region). */
struct lj_layout;
void vm_luavm_check(struct vmod *m, lua_State *L, const struct lj_layout *vl);
void vm_luavm_publish(struct vmod *m);
/* `profile -- CMD`: tell the profiler start() is done, wait for its word
 * (JSF_ENV_PROFILE_SYNC); once per process */
void vm_luavm_sync(void);
/* ffnames.c: the builtins' names in the runtime area ("LJFF", docs/ABI.md
 * 1.6). scan: at start() and at the 1st, 2nd, 4th, 8th... trace event; without
 * m->mu (it runs Lua), taking it to publish. publish: m->mu held, after
 * vm_luavm_publish (a new region gets them all). */
#define VM_RT_MAX 3072	   /* the runtime area (LV_AREA_SIZE of it LJVM's) */
#define VM_RTX (64 * 1024) /* the runtime extension each region reserves */
void vm_ff_scan(struct vmod *m, lua_State *L);
/* jit.util.funcinfo (the function at fi) of the C function at idx, in a
 * protected call (it may raise): its C address (0: none) and its
 * fast-function id (*ffid; -1: none, a plain C function). */
uint64_t vm_cfunc_addr(lua_State *L, int fi, int idx, lua_Integer *ffid);
/* The 20 bytes that begin an LJFF or LJCF record (tag, version 1, its
 * len, base, cnt entries: docs/ABI.md 1.6). */
void vm_rt_names_head(uint8_t *b, const char *tag, uint32_t len, uint64_t base,
		      unsigned cnt);
/* One entry of such a record at b (address - base d, the name's nl bytes,
 * no NUL): the bytes it took, 5 + nl. */
uint32_t vm_rt_names_entry(uint8_t *b, int32_t d, const char *nm, size_t nl);
/* Records made for every region (rec, reclen bytes), and how many of
 * them the current one has (epoch, len): vm_rt_publish (m->mu held)
 * appends to its runtime area what it lacks, once (what: the message's
 * words when refused). */
struct vm_rtpub {
	unsigned epoch; /* m->epoch whose region has len of them */
	uint32_t len;
};
void vm_rt_publish(struct vmod *m, const uint8_t *rec, uint32_t reclen,
		   struct vm_rtpub *p, const char *what);
/* cfnames.c: the C functions of Lua modules ("LJCF", docs/ABI.md 1.6),
 * looked for with the builtins (ffnames.c's scan and schedule). walk: in
 * the scan's protected call, loaded package.loaded's index, fi
 * jit.util.funcinfo's; record (new names into records) and publish (what
 * the current region lacks): m->mu held. */
struct vm_cf;
struct vm_cf *vm_cf_new(void);
void vm_cf_free(struct vm_cf *cf);
int vm_cf_count(const struct vm_cf *cf);
void vm_cf_walk(struct vm_cf *cf, lua_State *L, int loaded, int fi);
void vm_cf_record(struct vmod *m, struct vm_cf *cf, int shift);
void vm_cf_publish(struct vmod *m, struct vm_cf *cf);
void vm_ff_publish(struct vmod *m);
/* A Lua function's prototype where position pos will be found in it
 * (else NULL), and that start position (0, or -1), through the verified
 * layout (luavm.c) */
const void *vm_luavm_proto(const struct vmod *m, const void *fn, uint32_t pos);
int vm_luavm_pos(const struct vmod *m, const void *proto, uint32_t pos,
		 char *file, size_t filelen, uint32_t *line);
/* Lua function fn through the verified layout, as jit.util.funcinfo
 * gives it (bytecodes, linedefined, source) with its prototype and
 * bytecode: 0, or -1 (not verified, or not a Lua function); the line of
 * position pos < bytecodes (funcinfo's currentline: 0 without line info) */
struct vm_fninfo {
	const void *proto;
	uint64_t bc;
	uint32_t nbc, first;
	const char *src; /* the chunk name, NUL-terminated (a GCstr's) */
};
int vm_luavm_fn(const struct vmod *m, const void *fn, struct vm_fninfo *fi);
uint32_t vm_luavm_line(const struct vmod *m, const void *proto, uint32_t pos);

/* sinks.c, all with m->mu held */
/* Make sure the region (and the perf sinks) belong to this process. */
int vm_ensure_region(struct vmod *m);
void vm_stop_publishing(struct vmod *m, const char *what, int err);
/* Add trace tr of state s (ti) to the region and the perf sinks. */
void vm_publish(struct vmod *m, struct lstate *s, struct tinfo *ti, uint32_t tr,
		uint64_t now);
void vm_unpublish(struct vmod *m, struct lstate *s, struct tinfo *ti,
		  uint64_t now);

#endif
