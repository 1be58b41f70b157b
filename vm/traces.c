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

VM_HOT static struct tinfo *slot(struct lstate *s, uint32_t tr)
{
	if (tr >= s->cap) {
		uint32_t cap = s->cap ? s->cap : 64;
		while (cap <= tr)
			cap *= 2;
		struct tinfo *t = realloc(s->t, cap * sizeof(*t));
		if (!t)
			return NULL;
		memset(t + s->cap, 0, (cap - s->cap) * sizeof(*t));
		s->t = t;
		s->cap = cap;
	}
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

VM_HOT static void on_stop(struct vmod *m, lua_State *L, struct lstate *s,
			   uint32_t tr)
{
	int top = lua_gettop(L);
	m->traces++;
	struct tinfo *ti = slot(s, tr);
	if (!ti) {
		vm_stop_publishing(m, "allocating trace state", -ENOMEM);
		return;
	}
	uint64_t now = jsf_now_ns();
	/* A stop for a known number: the old trace is gone (freed by the GC,
	 * which sends no event). */
	vm_unpublish(m, ti, now);
	uint32_t line = ti->line;
	char file[sizeof(ti->file)];
	memcpy(file, ti->file, sizeof(file));
	memset(ti, 0, sizeof(*ti));
	ti->line = line; /* from the "start" event */
	memcpy(ti->file, file, sizeof(file));
	lua_pushinteger(L, tr);
	if (util_call(L, s, "tracemc", 1, 3) || !lua_isstring(L, -3)) {
		skip(m, tr, "no machine code");
		goto out;
	}
	size_t len;
	const uint8_t *mc = (const uint8_t *)lua_tolstring(L, -3, &len);
	uint64_t addr = (uint64_t)lua_tonumber(L, -2);
	uint32_t loop = (uint32_t)lua_tonumber(L, -1);
	lua_pushinteger(L, tr);
	lua_pushinteger(L, 0);
	if (util_call(L, s, "traceir", 2, 4)) {
		skip(m, tr, "traceir failed");
		goto out;
	}
	uint32_t parent = (uint32_t)lua_tointeger(L, -2); /* op1 of BASE */
	struct lj_trace_in in = {mc, (uint32_t)len, loop, tr, parent != 0, 0};
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
	ti->size = (uint32_t)len;
	ti->spadj = o.spadj;
	ti->nrows = (uint8_t)o.nrows;
	memcpy(ti->rows, o.rows, sizeof(o.rows));
	vm_publish(m, s, ti, tr, now);
out:
	lua_settop(L, top);
}

/* "start": tr, func, pc: remember where the trace begins in the source. */
VM_HOT static void on_start(lua_State *L, struct lstate *s, uint32_t tr)
{
	int top = lua_gettop(L);
	struct tinfo *ti = slot(s, tr);
	if (!ti)
		return;
	ti->line = 0;
	ti->file[0] = 0;
	lua_pushvalue(L, 3);
	lua_pushvalue(L, 4);
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
			for (char *c = ti->file; *c; c++)
				if (*c == '\n' || *c == ';' || *c == ' ')
					*c = '_';
		}
	}
	lua_settop(L, top);
}

VM_HOT void vm_on_flush(struct vmod *m, struct lstate *s)
{
	uint64_t now = jsf_now_ns();
	for (uint32_t i = 0; i < s->used; i++) {
		vm_unpublish(m, &s->t[i], now);
		memset(&s->t[i], 0, sizeof(s->t[i]));
	}
}

VM_HOT static void handle(lua_State *L, struct lstate *s)
{
	struct vmod *m = s->m;
	const char *what = lua_tostring(L, 1);
	if (!what)
		return;
	int stop = !strcmp(what, "stop"), flush = !strcmp(what, "flush");
	int start = !strcmp(what, "start");
	pthread_mutex_lock(&m->mu);
	if (!stop && !flush && !start) {
		/* abort: for the auditlog only */
	} else if (!m->failed && vm_ensure_region(m) == 0) {
		sync_state(m, s);
		if (stop)
			on_stop(m, L, s, (uint32_t)lua_tointeger(L, 2));
		else if (flush)
			vm_on_flush(m, s);
		else if (m->jd || m->pm) /* start: names are for perf only */
			on_start(L, s, (uint32_t)lua_tointeger(L, 2));
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

/* Our part of event ev (the dispatcher's upvalue) for state s. */
VM_HOT void vm_event(lua_State *L, struct lstate *s, const char *ev)
{
	struct vmod *m = s->m;
	if (!strcmp(ev, "trace")) {
		handle(L, s);
	} else if (vaudit_level(&m->audit) >= VAUDIT_FULL) {
		pthread_mutex_lock(&m->mu);
		if (!strcmp(ev, "record"))
			vaudit_record(&m->audit, L);
		else if (!strcmp(ev, "texit"))
			vaudit_texit(&m->audit, L);
		pthread_mutex_unlock(&m->mu);
	}
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
	free(s->t);
	s->t = NULL;
	s->cap = 0;
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
	lua_newtable(L);
	lua_pushcfunction(L, state_gc);
	lua_setfield(L, -2, "__gc");
	lua_setmetatable(L, -2);
	lua_rawset(L, LUA_REGISTRYINDEX);
	return s;
}
