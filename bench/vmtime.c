/* SPDX-License-Identifier: MIT */
/*
 * vmtime: a Lua C module for bench/vm_bench.lua. It times LuaJIT's "trace"
 * event handler from the outside:
 *
 *   local vt = require("vmtime")
 *   vt.wrap([post])  -- wrap the one "trace" handler LuaJIT holds (attach a
 *                    -- no-op first if there is none)
 *   ... run the workload ...
 *   vt.results()     -- a table of counts and times, in ns
 *   vt.now()         -- CLOCK_MONOTONIC in ns
 *   vt.noop()        -- attach a no-op C "trace" handler, untimed (the
 *                    -- floor of any handler: LuaJIT's cost per event)
 *
 * LuaJIT keeps one handler per event in registry._VMEVENTS and fetches it
 * from there for every event (lj_vmevent_prepare), so replacing the table
 * entry with a C closure that calls the old value puts two clock reads
 * around exactly the handler call. With jitsframe started, that handler is
 * the module's dispatcher; in a plain run it is a no-op C function, which
 * measures the cost of the wrapping itself (the baseline to subtract).
 *
 * It also measures the VM's own compile time per trace: from the moment the
 * "start" handler returns to the moment the "stop" (or "abort") handler is
 * entered. Recording runs interleaved with interpretation of the recorded
 * bytecode, so a span is "recording + optimisation + assembly + commit" as
 * the program experiences it; the handlers' time is excluded.
 *
 * The first handler call is also reported on its own ("first"): it pays
 * for one-time setup (jitsframe allocates its per-trace table there).
 *
 * post(what, tr), if given, is called after the timed call (never inside a
 * timed interval), e.g. to look at jitsframe.stats() after each stop.
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { EV_START, EV_STOP, EV_ABORT, EV_FLUSH, EV_OTHER, NEV };
static const char *const ev_name[NEV] = {"start", "stop", "abort", "flush",
					 "other"};

struct series {
	uint64_t *v;
	size_t n, cap;
	uint64_t sum;
};

static struct {
	struct series handler[NEV]; /* handler time per event kind */
	struct series compile;	    /* start-return .. stop-entry */
	struct series aborted;	    /* start-return .. abort-entry */
	uint64_t start_done;
	int open;
	uint64_t first_ns; /* the very first handler call (one-time setup) */
	int first_kind, calls;
} acc;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void series_add(struct series *s, uint64_t x)
{
	s->sum += x;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4096;
		uint64_t *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return; /* keep the sum, drop the sample */
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = x;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* {n=, sum=, median=, p90=, p99=, max=, top1_sum=} in ns. */
static void push_series(lua_State *L, struct series *s)
{
	lua_createtable(L, 0, 6);
	lua_pushnumber(L, (lua_Number)s->n);
	lua_setfield(L, -2, "n");
	lua_pushnumber(L, (lua_Number)s->sum);
	lua_setfield(L, -2, "sum");
	if (s->n) {
		qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
		lua_pushnumber(L, (lua_Number)s->v[s->n / 2]);
		lua_setfield(L, -2, "median");
		lua_pushnumber(L, (lua_Number)s->v[s->n * 9 / 10]);
		lua_setfield(L, -2, "p90");
		lua_pushnumber(L, (lua_Number)s->v[s->n * 99 / 100]);
		lua_setfield(L, -2, "p99");
		lua_pushnumber(L, (lua_Number)s->v[s->n - 1]);
		lua_setfield(L, -2, "max");
		uint64_t top =
		    0; /* the slowest 1%: how much of sum the tail is */
		for (size_t i = s->n * 99 / 100; i < s->n; i++)
			top += s->v[i];
		lua_pushnumber(L, (lua_Number)top);
		lua_setfield(L, -2, "top1_sum");
	}
}

static int kind(const char *what)
{
	if (!what)
		return EV_OTHER;
	for (int k = 0; k < EV_OTHER; k++)
		if (!strcmp(what, ev_name[k]))
			return k;
	return EV_OTHER;
}

/* The closure put in place of the handler: upvalue 1 = the old handler,
 * upvalue 2 = post hook or nil. */
static int timed(lua_State *L)
{
	uint64_t t0 = now_ns();
	int n = lua_gettop(L);
	int k = kind(lua_tostring(L, 1));
	if (acc.open && (k == EV_STOP || k == EV_ABORT)) {
		series_add(k == EV_STOP ? &acc.compile : &acc.aborted,
			   t0 - acc.start_done);
		acc.open = 0;
	}
	lua_pushvalue(L, lua_upvalueindex(1));
	for (int i = 1; i <= n; i++)
		lua_pushvalue(L, i);
	t0 = now_ns();
	lua_call(L, n, 0);
	uint64_t t1 = now_ns();
	series_add(&acc.handler[k], t1 - t0);
	if (acc.calls++ == 0) {
		acc.first_ns = t1 - t0;
		acc.first_kind = k;
	}
	if (!lua_isnil(L, lua_upvalueindex(2))) {
		lua_pushvalue(L, lua_upvalueindex(2));
		lua_pushvalue(L, 1);
		lua_pushvalue(L, 2);
		lua_pcall(L, 2, 0, 0); /* errors: ignored (message dropped) */
		lua_settop(L, n);
	}
	if (k == EV_START) {
		acc.start_done = now_ns();
		acc.open = 1;
	}
	return 0;
}

static int noop(lua_State *L)
{
	(void)L;
	return 0;
}

/* Leaves on the stack the key of the last function found in the table at
 * evt (nil if none); returns how many functions it holds. */
static int find_handler(lua_State *L, int evt)
{
	int found = 0;
	lua_pushnil(L);
	int slot = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, evt)) {
		if (lua_isfunction(L, -1)) {
			found++;
			lua_pushvalue(L, -2);
			lua_replace(L, slot);
		}
		lua_pop(L, 1);
	}
	if (found > 1) { /* a full auditlog: jitsframe multiplexes "record"
			  * and "texit" too; its "trace" dispatcher is the C
			  * closure whose first upvalue is "trace" */
		found = 0;
		lua_pushnil(L);
		while (lua_next(L, evt)) {
			if (lua_iscfunction(L, -1) &&
			    lua_getupvalue(L, -1, 1)) {
				const char *u = lua_tostring(L, -1);
				if (u && !strcmp(u, "trace")) {
					found++;
					lua_pushvalue(L, -3);
					lua_replace(L, slot);
				}
				lua_pop(L, 1);
			}
			lua_pop(L, 1);
		}
	}
	return found;
}

static void attach_noop(lua_State *L)
{
	lua_getglobal(L, "require");
	lua_pushstring(L, "jit");
	lua_call(L, 1, 1);
	lua_getfield(L, -1, "attach");
	lua_pushcfunction(L, noop);
	lua_pushstring(L, "trace");
	lua_call(L, 2, 0);
	lua_pop(L, 1);
}

/* vt.noop(): jit.attach a no-op C handler to "trace", untimed: the floor
 * of any handler (LuaJIT's own cost of sending each event). */
static int l_noop(lua_State *L)
{
	attach_noop(L);
	return 0;
}

static int l_wrap(lua_State *L)
{
	lua_settop(L, 1); /* post or nil */
	lua_getfield(L, LUA_REGISTRYINDEX, "_VMEVENTS");
	int found = lua_istable(L, 2) ? find_handler(L, 2) : 0;
	if (found == 0) { /* nothing attached: jit.attach(noop, "trace") */
		lua_settop(L, 1);
		attach_noop(L);
		lua_getfield(L, LUA_REGISTRYINDEX, "_VMEVENTS");
		if (!lua_istable(L, 2))
			return luaL_error(L,
					  "vmtime: no _VMEVENTS after attach");
		found = find_handler(L, 2);
	}
	if (found != 1)
		return luaL_error(L,
				  "vmtime: %d event handlers attached, "
				  "expected exactly one (trace)",
				  found);
	/* stack: post, _VMEVENTS, key */
	lua_pushvalue(L, 3);
	lua_rawget(L, 2);
	int was_noop = lua_tocfunction(L, -1) == noop;
	lua_pushvalue(L, 1);
	lua_pushcclosure(L, timed, 2);
	lua_pushvalue(L, 3);
	lua_insert(L, -2);
	lua_rawset(L, 2);
	for (int k = 0; k < NEV; k++)
		free(acc.handler[k].v);
	free(acc.compile.v);
	free(acc.aborted.v);
	memset(&acc, 0, sizeof(acc));
	lua_pushstring(L, was_noop ? "noop" : "handler");
	return 1;
}

static int l_results(lua_State *L)
{
	lua_createtable(L, 0, 16);
	for (int k = 0; k < NEV; k++) {
		push_series(L, &acc.handler[k]);
		lua_setfield(L, -2, ev_name[k]);
	}
	lua_createtable(L, 0, 2);
	lua_pushnumber(L, (lua_Number)acc.first_ns);
	lua_setfield(L, -2, "ns");
	lua_pushstring(L, ev_name[acc.first_kind]);
	lua_setfield(L, -2, "kind");
	lua_setfield(L, -2, "first");
	push_series(L, &acc.compile);
	lua_setfield(L, -2, "compile");
	push_series(L, &acc.aborted);
	lua_setfield(L, -2, "aborted");
	return 1;
}

static int l_now(lua_State *L)
{
	lua_pushnumber(L, (lua_Number)now_ns());
	return 1;
}

__attribute__((visibility("default"))) int luaopen_vmtime(lua_State *L)
{
	static const luaL_Reg fns[] = {
	    {"wrap", l_wrap}, {"noop", l_noop}, {"results", l_results},
	    {"now", l_now},   {NULL, NULL},
	};
	lua_newtable(L);
	luaL_register(L, NULL, fns);
	return 1;
}
