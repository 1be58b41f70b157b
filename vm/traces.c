/* SPDX-License-Identifier: MIT */
/*
 * The trace table and the trace-event handlers (vm.h): per Lua state, what
 * is known of each trace number (its rows, where it was published); on
 * "stop" the rows from its machine code (lj/), on "start" its source
 * position (for perf), on "flush" everything withdrawn.
 */
#include "audit.h"
#include "jitsframe.h"
#include "lj.h"
#include "vm.h"

#include <errno.h>
#include <lauxlib.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ the trace table */

static const char STATE_KEY = 0; /* its address is the registry key */

VM_HOT struct lstate *vm_get_state(lua_State *L)
{
	lua_pushlightuserdata(L, (void *)&STATE_KEY);
	lua_rawget(L, LUA_REGISTRYINDEX);
	struct lstate *s = lua_touserdata(L, -1);
	lua_pop(L, 1);
	return s;
}

/* Room for trace numbers up to tr (zeroed, so its pages are present):
 * 0, or -1 out of memory. */
static int grow(struct lstate *s, uint32_t tr)
{
	uint32_t cap = s->cap ? s->cap : 64;
	while (cap <= tr)
		cap *= 2;
	struct tinfo *t = realloc(s->t, cap * sizeof(*t));
	if (!t)
		return -1;
	memset(t + s->cap, 0, (cap - s->cap) * sizeof(*t));
	s->t = t;
	s->cap = cap;
	return 0;
}

VM_HOT static struct tinfo *slot(struct lstate *s, uint32_t tr)
{
	if (tr >= s->cap && grow(s, tr))
		return NULL;
	if (tr >= s->used)
		s->used = tr + 1;
	return &s->t[tr];
}

/* After a fork or a new region: publish this state's known traces. */
VM_HOT static void sync_state(struct vmod *m, struct lstate *s)
{
	if (s->epoch == m->epoch)
		return;
	uint64_t now = jsf_now_ns();
	s->nlive = 0;
	for (uint32_t i = 0; i < s->used; i++)
		if (s->t[i].live) {
			s->t[i].live = 0;
			vm_publish(m, s, &s->t[i], i, now);
		}
	s->epoch = m->epoch;
}

/* ------------------------------------------------------------ events */

/* Call util[name](args...) leaving nres results on the stack. */
VM_HOT static int util_call(lua_State *L, struct lstate *s, const char *name,
			    int nargs, int nres)
{
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->util_ref);
	lua_getfield(L, -1, name);
	lua_remove(L, -2);
	lua_insert(L, -1 - nargs);
	return lua_pcall(L, nargs, nres, 0);
}

VM_HOT static void skip(struct vmod *m, uint32_t tr, const char *why)
{
	m->skipped++;
	snprintf(m->last_skip, sizeof(m->last_skip), "trace %u: %s", tr, why);
}

/* What the rows of a stopped trace are made from. */
struct facts {
	const uint8_t *mc; /* its machine code */
	uint64_t addr;
	uint32_t len, loop; /* tracemc's loop offset */
	uint32_t parent;    /* op1 of its IR_BASE: 0 for a root trace */
	uint32_t base_op;   /* IR_BASE's opcode */
};

/* Through jit.util: tracemc and traceir(tr, 0), whose results stay on the
 * stack (the machine code is a Lua string there). NULL or why not. */
VM_HOT static const char *facts_util(lua_State *L, struct lstate *s,
				     uint32_t tr, struct facts *f)
{
	lua_pushinteger(L, tr);
	if (util_call(L, s, "tracemc", 1, 3) || !lua_isstring(L, -3))
		return "no machine code";
	size_t len;
	f->mc = (const uint8_t *)lua_tolstring(L, -3, &len);
	f->addr = (uint64_t)lua_tonumber(L, -2);
	f->loop = (uint32_t)lua_tonumber(L, -1);
	if (len > UINT32_MAX / 2)
		return "trace too large";
	f->len = (uint32_t)len;
	lua_pushinteger(L, tr);
	lua_pushinteger(L, 0);
	if (util_call(L, s, "traceir", 2, 4))
		return "traceir failed";
	f->base_op = (uint32_t)lua_tointeger(L, -3) >> 8; /* of ot */
	f->parent = (uint32_t)lua_tointeger(L, -2);	  /* op1 of BASE */
	return NULL;
}

/* From trace T's memory (layout lay): the same, or NULL when T has no
 * machine code or IR (then jit.util is asked). */
VM_HOT static const struct facts *facts_raw(const struct vmod *m,
					    const uint8_t *T,
					    const struct ljt_layout *lay,
					    struct facts *f)
{
	const uint8_t *ir = (const uint8_t *)(uintptr_t)ljt_u64(T, lay->ir);
	f->mc = (const uint8_t *)(uintptr_t)ljt_u64(T, lay->mcode);
	f->addr = (uint64_t)(uintptr_t)f->mc;
	f->len = ljt_u32(T, lay->szmcode);
	f->loop = ljt_u32(T, lay->mcloop) ^ (m->raw_fault != 0);
	if (!f->mc || !ir || ljt_u32(T, lay->nins) <= LJT_REF_BIAS)
		return NULL;
	const uint8_t *base = ir + 8 * (size_t)LJT_REF_BIAS; /* REF_BASE */
	f->parent = ljt_u16(base, 0);
	f->base_op = ljt_u8(base, 5);
	return f;
}

static void raw_off(struct vmod *m, uint32_t tr, const char *why)
{
	m->raw = VM_RAW_OFF;
	snprintf(m->raw_why, sizeof(m->raw_why), "trace %u: %s", tr, why);
}

void vm_known_info(lua_State *L, int idx, struct ljt_known *k)
{
	if (idx < 0) /* (Lua 5.1 has no lua_absindex) */
		idx = lua_gettop(L) + idx + 1;
	lua_getfield(L, idx, "nins");
	lua_getfield(L, idx, "nk");
	lua_getfield(L, idx, "nexit");
	lua_getfield(L, idx, "link");
	k->nins = (uint32_t)lua_tointeger(L, -4);
	k->nk = (uint32_t)lua_tointeger(L, -3);
	k->nexit = (uint32_t)lua_tointeger(L, -2);
	k->link = (uint32_t)lua_tointeger(L, -1);
	lua_pop(L, 4);
}

void vm_known_mc(lua_State *L, int idx, struct ljt_known *k)
{
	if (idx < 0) /* (Lua 5.1 has no lua_absindex) */
		idx = lua_gettop(L) + idx + 1;
	size_t len = 0;
	if (lua_isstring(L, idx))
		lua_tolstring(L, idx, &len);
	k->szmcode = (uint32_t)len;
	k->mcode = (uintptr_t)lua_tonumber(L, idx + 1);
	k->mcloop = (uint32_t)lua_tointeger(L, idx + 2);
}

/* First stop: find the trace array (lj/ljtrace.h), keyed by trace tr
 * (its machine code: from f, what jit.util's tracemc said, else asked). */
static void raw_discover(struct vmod *m, lua_State *L, struct lstate *s,
			 uint32_t tr, const struct facts *f)
{
	int top = lua_gettop(L);
	struct ljt_known k = {.tr = tr};
	m->raw = VM_RAW_OFF;
	lua_pushinteger(L, tr);
	if (util_call(L, s, "traceinfo", 1, 1) || !lua_istable(L, -1)) {
		raw_off(m, tr, "no traceinfo");
		goto out;
	}
	vm_known_info(L, -1, &k);
	lua_settop(L, top);
	if (f) {
		k.szmcode = f->len;
		k.mcode = (uintptr_t)f->addr;
		k.mcloop = f->loop;
	} else {
		lua_pushinteger(L, tr);
		if (util_call(L, s, "tracemc", 1, 3) || !lua_isstring(L, -3)) {
			raw_off(m, tr, "no machine code to start from");
			goto out;
		}
		vm_known_mc(L, -3, &k);
	}
	unsigned mask;
	if (ljt_discover(L, &k, &mask, m->raw_why, sizeof(m->raw_why)))
		goto out;
	m->raw_mask = mask;
	m->raw = VM_RAW_CHECKING;
out:
	lua_settop(L, top);
}

/* The facts of stopped trace tr: from its GCtrace once the layout agreed
 * with jit.util on VM_RAW_CHECK traces (and again on one in
 * VM_RAW_RECHECK: then both are read and must agree in every fact and
 * every byte of the machine code), else, and for ever after any
 * disagreement, from jit.util. NULL or why the trace is skipped. */
VM_HOT static const char *trace_facts(struct vmod *m, lua_State *L,
				      struct lstate *s, uint32_t tr,
				      struct facts *f)
{
	/* once: some 15-20 us; jit.util's facts (asked first: the check
	 * below needs them too) give the discovery its key's machine code */
	const char *uwhy = NULL;
	int asked = m->raw == VM_RAW_UNTRIED;
	if (asked) {
		uwhy = facts_util(L, s, tr, f);
		raw_discover(m, L, s, tr, uwhy ? NULL : f);
	}
	if (m->raw == VM_RAW_OFF)
		return asked ? uwhy : facts_util(L, s, tr, f);
	const struct ljt_layout *lay = &ljt_layouts[__builtin_ctz(m->raw_mask)];
	const uint8_t *T = ljt_trace(L, tr, lay);
	struct facts r;
	const struct facts *rf = T ? facts_raw(m, T, lay, &r) : NULL;
	if (m->raw == VM_RAW_ON && ++m->raw_stops % VM_RAW_RECHECK) {
		if (rf && rf->base_op == m->raw_base_op) {
			*f = *rf;
			m->raw_traces++;
			return NULL;
		}
		if (!T)
			raw_off(m, tr, "not found in the trace array");
		/* no machine code or IR in memory: ask jit.util, check */
	}
	const char *why = asked ? uwhy : facts_util(L, s, tr, f);
	m->raw_checks++;
	if (m->raw == VM_RAW_OFF || (why && !rf)) /* or neither has code */
		return why;
	if (why || !rf || rf->addr != f->addr || rf->len != f->len ||
	    rf->loop != f->loop || rf->parent != f->parent ||
	    rf->base_op != f->base_op || memcmp(rf->mc, f->mc, f->len) ||
	    (m->raw_checked && rf->base_op != m->raw_base_op)) {
		raw_off(m, tr, why ? why : "its memory and jit.util disagree");
		return why;
	}
	m->raw_base_op = rf->base_op;
	if (m->raw == VM_RAW_CHECKING && ++m->raw_checked >= VM_RAW_CHECK)
		m->raw = VM_RAW_ON;
	return NULL;
}

/* A chunk name as it goes into a trace's name (perf's symbol, a folded
 * stack's frame): no newline, ';' or space. */
VM_HOT static void file_name_safe(char *file)
{
	/* (strcspn: a byte loop was some 300 instructions a trace) */
	for (char *c = file + strcspn(file, "\n; "); *c;
	     c += 1 + strcspn(c + 1, "\n; "))
		*c = '_';
}

/* Where a trace begins in the source: funcinfo(func, pc) of the function
 * and pc at stack indexes fidx, pcidx (absolute) into ti->file, ti->line. */
VM_HOT static void start_pos(lua_State *L, struct lstate *s, struct tinfo *ti,
			     int fidx, int pcidx)
{
	int top = lua_gettop(L);
	ti->line = 0;
	ti->file[0] = 0;
	lua_pushvalue(L, fidx);
	lua_pushvalue(L, pcidx);
	if (lua_isfunction(L, -2) && util_call(L, s, "funcinfo", 2, 1) == 0 &&
	    lua_istable(L, -1)) {
		lua_getfield(L, -1, "currentline");
		ti->line = (uint32_t)lua_tointeger(L, -1);
		lua_getfield(L, -2, "source");
		const char *src = lua_tostring(L, -1);
		if (src) {
			if (*src == '@' || *src == '=')
				src++;
			size_t n = strlen(src);
			if (n >=
			    sizeof(ti->file)) /* keep the end of long paths */
				src += n - (sizeof(ti->file) - 1);
			snprintf(ti->file, sizeof(ti->file), "%s", src);
			file_name_safe(ti->file);
		}
	}
	lua_settop(L, top);
}

/* "start": tr, func, pc: remember where the trace begins in the source.
 * Through the verified VM layout, only the prototype and the pc: the
 * name is looked up at the trace's stop (most starts end in an abort:
 * sidetraces has some 16 attempts per trace, luacheck one in two).
 * Otherwise, with perf's sinks on, through jit.util at once (perf names
 * the trace at its stop, as before); without them, for the region only:
 * keep the function and pc (one table store) and look the name up when
 * the trace stops. */
VM_HOT static void on_start(struct vmod *m, lua_State *L, struct lstate *s,
			    uint32_t tr)
{
	s->st_tr = tr;
	s->st_pos = (uint32_t)lua_tointeger(L, 4);
	s->st_pt = vm_luavm_proto(m, lua_topointer(L, 3), s->st_pos);
	if (s->st_pt)
		return;
	struct tinfo *ti = slot(s, tr);
	if (!ti)
		return;
	ti->pos_pending = 0;
	if (m->jd || m->pm) {
		start_pos(L, s, ti, 3, 4);
		return;
	}
	ti->line = 0;
	ti->file[0] = 0;
	if (!lua_isfunction(L, 3))
		return;
	if (s->starts_ref == LUA_NOREF) {
		lua_createtable(L, 64, 0);
		s->starts_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	}
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->starts_ref);
	lua_pushvalue(L, 3);
	lua_rawseti(L, -2, (int)tr);
	lua_pop(L, 1);
	ti->start_pc = s->st_pos;
	ti->pos_pending = 1;
}

/* The pending start position of trace tr, now that it stopped (and is
 * published: need 1) or not (need 0: only the reference goes). */
VM_HOT static void start_pos_pending(lua_State *L, struct lstate *s,
				     struct tinfo *ti, uint32_t tr, int need)
{
	if (!ti->pos_pending || s->starts_ref == LUA_NOREF)
		return;
	ti->pos_pending = 0;
	int top = lua_gettop(L);
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->starts_ref);
	if (need) {
		lua_rawgeti(L, -1, (int)tr);
		lua_pushinteger(L, ti->start_pc);
		start_pos(L, s, ti, top + 2, top + 3);
	}
	lua_pushnil(L);
	lua_rawseti(L, top + 1, (int)tr);
	lua_settop(L, top);
}

/* At trace tr's stop: its start position from its start's prototype and
 * pc (on_start), when that is how it was kept (an older start's pending
 * reference, if any, goes); else the position, if any, is in ti already. */
VM_HOT static void stop_pos(const struct vmod *m, lua_State *L,
			    struct lstate *s, struct tinfo *ti, uint32_t tr)
{
	const void *pt = s->st_pt;
	if (s->st_tr != tr || !pt)
		return;
	s->st_pt = NULL; /* used */
	start_pos_pending(L, s, ti, tr, 0);
	if (vm_luavm_pos(m, pt, s->st_pos, ti->file, sizeof(ti->file),
			 &ti->line)) { /* (vm_luavm_proto said it would not) */
		ti->line = 0;
		ti->file[0] = 0;
	}
	file_name_safe(ti->file);
}

VM_HOT static void on_stop(struct vmod *m, lua_State *L, struct lstate *s,
			   uint32_t tr)
{
	int top = lua_gettop(L);
	m->traces++;
#if VM_BENCH_CUT == 2 /* bench-only builds: see vm.h */
	(void)top, (void)s, (void)tr;
	return;
#endif
	struct tinfo *ti = slot(s, tr);
	if (!ti) {
		vm_stop_publishing(m, "allocating trace state", -ENOMEM);
		return;
	}
	uint64_t now = jsf_now_ns();
#if VM_BENCH_CUT == 5 /* bench-only builds: see vm.h */
	{
		static struct cut5 {
			uint64_t addr, now;
			uint32_t tr, len, loop, parent, line;
			char file[sizeof(ti->file)];
		} ring[64];
		static unsigned at;
		stop_pos(m, L, s, ti, tr);
		struct facts f;
		if (!trace_facts(m, L, s, tr, &f)) {
			struct cut5 *e = &ring[at++ % 64];
			*e = (struct cut5){f.addr, now,	     tr,       f.len,
					   f.loop, f.parent, ti->line, {0}};
			memcpy(e->file, ti->file, sizeof(e->file));
			__asm__ volatile("" : : "r"(e) : "memory");
		}
		lua_settop(L, top);
		return;
	}
#endif
	/* A stop for a known number: the old trace is gone (freed by the GC,
	 * which sends no event). */
	vm_unpublish(m, s, ti, now);
	free(ti->lmap);
	memset(ti, 0, TINFO_POS); /* the start position stays */
	stop_pos(m, L, s, ti, tr);
	struct facts f;
	const char *why = trace_facts(m, L, s, tr, &f);
	if (why) {
		skip(m, tr, why);
		goto out;
	}
	const uint8_t *mc = f.mc;
	uint32_t len = f.len, loop = f.loop, parent = f.parent;
	uint64_t addr = f.addr;
	struct lj_trace_in in = {mc, len, loop, tr, parent != 0, 0, 0};
	if (parent) {
		if (parent >= s->cap || !s->t[parent].nrows) {
			skip(m, tr, "parent trace not known");
			goto out;
		}
		in.parent_spadj = s->t[parent].spadj;
	}
	struct lj_trace_out o = {.why = "trace too large"};
	if (len > UINT32_MAX / 2 || lj_trace_rows(&in, &o)) {
		skip(m, tr, o.why);
		goto out;
	}
	ti->start = addr;
	ti->size = len;
	ti->loop = loop;
	ti->spadj = o.spadj;
	ti->nrows = (uint8_t)o.nrows;
	memcpy(ti->rows, o.rows, sizeof(o.rows));
	start_pos_pending(L, s, ti, tr, 1);
	vm_luamap(m, L, s, tr, ti);
	vm_publish(m, s, ti, tr, now);
out:
	start_pos_pending(L, s, ti, tr, 0);
	lua_settop(L, top);
}

VM_HOT void vm_on_flush(struct vmod *m, struct lstate *s)
{
	uint64_t now = jsf_now_ns();
	if (s->nlive > 1 && s->nlive == m->nlive &&
	    jsf_region_remove_all(m->region, now) == 0) {
		/* Every live row is this state's (the usual case: one VM):
		 * one call, one rewrite, not one per trace (each a rewrite
		 * closing the window's smaller side and a step of a
		 * rebuild: about 110-240 us a flush on luacheck) */
		m->removed += s->nlive;
		m->nlive = 0;
		s->nlive = 0;
		for (uint32_t i = 0; i < s->used; i++)
			s->t[i].live = 0;
	}
	for (uint32_t i = 0; i < s->used; i++) {
		vm_unpublish(m, s, &s->t[i], now);
		free(s->t[i].lmap);
		memset(&s->t[i], 0, sizeof(s->t[i]));
	}
}

VM_HOT static void handle(lua_State *L, struct lstate *s)
{
	struct vmod *m = s->m;
	size_t n;
	const char *what = lua_tolstring(L, 1, &n);
	if (!what)
		return;
	int stop = n == 4 && !memcmp(what, "stop", 4);
	int flush = n == 5 && !memcmp(what, "flush", 5);
	int start = n == 5 && !memcmp(what, "start", 5);
	if (stop) {
		/* the trace's slot, cold after a compile: its lines fetched
		 * while the mutex and the rest are fetched too */
		lua_Integer tr = lua_tointeger(L, 2);
		if (tr > 0 && (uint64_t)tr < s->cap)
			for (size_t o = 0; o < sizeof(struct tinfo); o += 64)
				__builtin_prefetch((char *)&s->t[tr] + o, 1);
	}
	/* at the 1st event, the 2nd, 4th, 8th...: modules and libraries
	 * loaded since (a count lost to a race is harmless: no locked add) */
	uint32_t k = __atomic_load_n(&m->ff_events, __ATOMIC_RELAXED);
	__atomic_store_n(&m->ff_events, k + 1, __ATOMIC_RELAXED);
	if (k + 1 >= __atomic_load_n(&m->ff_next, __ATOMIC_RELAXED))
		vm_ff_scan(m, L);
	pthread_mutex_lock(&m->mu);
	if (!stop && !flush && !start) {
		/* abort: for the auditlog only */
	} else if (!m->failed && vm_ensure_region(m) == 0) {
		sync_state(m, s);
		if (stop)
			on_stop(m, L, s, (uint32_t)lua_tointeger(L, 2));
		else if (flush)
			vm_on_flush(m, s);
		else { /* start: names (perf, the region), the base frame */
			if (m->want_luamap)
				vm_luamap_start(L, s,
						(uint32_t)lua_tointeger(L, 2));
			on_start(m, L, s, (uint32_t)lua_tointeger(L, 2));
		}
	} else if (!m->failed) {
		m->failed = 1;
	}
	if (vaudit_level(&m->audit)) {
		int32_t spadj = INT32_MIN;
		lua_Integer tr = lua_tointeger(L, 2);
		if (stop && tr > 0 && (uint32_t)tr < s->cap && s->t[tr].nrows)
			spadj = s->t[tr].spadj;
		vaudit_trace(&m->audit, L, spadj);
	}
	pthread_mutex_unlock(&m->mu);
}

/* Our part of event ev (VM_EV_*, the dispatcher's upvalue) for state s. */
VM_HOT void vm_event(lua_State *L, struct lstate *s, int ev)
{
#if VM_BENCH_CUT == 1 /* bench-only builds: see vm.h */
	(void)L, (void)s, (void)ev;
	return;
#endif
	struct vmod *m = s->m;
	if (ev == VM_EV_TRACE) {
		handle(L, s);
	} else if (vaudit_level(&m->audit) >= VAUDIT_FULL) {
		pthread_mutex_lock(&m->mu);
		if (ev == VM_EV_RECORD)
			vaudit_record(&m->audit, L);
		else if (ev == VM_EV_TEXIT)
			vaudit_texit(&m->audit, L);
		pthread_mutex_unlock(&m->mu);
	}
}

/* ------------------------------------------------ this module's pages */

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif

static int prefault_one(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	uintptr_t self = (uintptr_t)ctx;
	long pg = sysconf(_SC_PAGESIZE);
	int ours = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && self >= lo &&
		    self < lo + ph->p_memsz)
			ours = 1;
	}
	if (!ours)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo =
		    (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)(pg - 1);
		uintptr_t hi = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
		/* read-only faults only: nothing changes but the page
		 * tables (an old kernel says EINVAL: nothing happens) */
		if (!(ph->p_flags & PF_W) && hi > lo)
			madvise((void *)lo, hi - lo, MADV_POPULATE_READ);
	}
	return 1;
}

/* Map this module's code and constants now (start()), so that the first
 * trace events do not take a page fault per code page they run first
 * (some microseconds in a trace's first stops). */
void vm_prefault_self(lua_State *L)
{
	dl_iterate_phdr(prefault_one, (void *)(uintptr_t)&vm_prefault_self);
	ljt_prewarm(L);
}

/* -------------------------------------------------- per-Lua-state */

static int state_gc(lua_State *L)
{
	struct lstate *s = lua_touserdata(L, 1);
	struct vmod *m = s->m;
	/* The state is closing: its machine code is about to be freed. */
	pthread_mutex_lock(&m->mu);
	if (m->region && m->pid == vm_self_pid() && !m->failed)
		vm_on_flush(m, s);
	pthread_mutex_unlock(&m->mu);
	for (uint32_t i = 0; i < s->cap; i++)
		free(s->t[i].lmap);
	free(s->t);
	s->t = NULL;
	s->cap = 0;
	free(s->lmb);
	s->lmb = NULL;
	return 0;
}

struct lstate *vm_new_state(struct vmod *m, lua_State *L)
{
	struct lstate *s = vm_get_state(L);
	if (s)
		return s;
	lua_pushlightuserdata(L, (void *)&STATE_KEY);
	s = lua_newuserdata(L, sizeof(*s));
	memset(s, 0, sizeof(*s));
	s->m = m;
	s->chains_ref = s->orig_ref = s->disps_ref = s->util_ref = LUA_NOREF;
	s->starts_ref = s->basefn_ref = LUA_NOREF;
	/* the first 64 traces' table now (start()), not in the first
	 * trace's stop: some 18 KB, a page fault each page (2-3 us here) */
	(void)grow(s, 63);
	lua_newtable(L);
	lua_pushcfunction(L, state_gc);
	lua_setfield(L, -2, "__gc");
	lua_setmetatable(L, -2);
	lua_rawset(L, LUA_REGISTRYINDEX);
	return s;
}
