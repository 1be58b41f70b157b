/* SPDX-License-Identifier: MIT */
/*
 * Several Lua states in one process (a C host, libluajit), each in its own
 * thread, share one region: each state's traces are published; a flush in
 * one state removes only its own; lua_close removes a state's functions
 * before its machine code is freed.
 */
#include "harness.h"
#include "jitsframe.h"

#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <pthread.h>
#include <unistd.h>

static char region[256];

/* Lua: start, run hot loops, optionally flush and re-run, and return the
 * starts of the traces still published by this state. */
static const char *script =
    "local jsf = require('jitsframe')\n"
    "assert(jsf.start{region = ..., quiet = true})\n"
    "local flush = select(2, ...)\n"
    "local function work(k)\n"
    "  local x = 0\n"
    "  for i = 1, 300000 do if i % k == 0 then x = x + i else x = x - 1 end "
    "end\n"
    "  return x\n"
    "end\n"
    "work(3) work(7)\n"
    "if flush then jit.flush() work(5) end\n"
    "jit.off() -- the loop below must not add traces of its own\n"
    "local live = {}\n"
    "for tr = 1, 1000 do local r = jsf.rows(tr)\n"
    "  if r and r.live then live[#live + 1] = r.start end end\n"
    "return live\n";

struct worker {
	lua_State *L;
	int flush;
	uint64_t starts[256];
	int n;
	int err;
	char msg[256];
};

static void *run(void *arg)
{
	struct worker *w = arg;
	w->L = luaL_newstate();
	luaL_openlibs(w->L);
	if (luaL_loadstring(w->L, script)) {
		snprintf(w->msg, sizeof(w->msg), "%s", lua_tostring(w->L, -1));
		w->err = 1;
		return NULL;
	}
	lua_pushstring(w->L, region);
	lua_pushboolean(w->L, w->flush);
	if (lua_pcall(w->L, 2, 1, 0)) {
		snprintf(w->msg, sizeof(w->msg), "%s", lua_tostring(w->L, -1));
		w->err = 1;
		return NULL;
	}
	for (int i = 1; i <= (int)lua_objlen(w->L, -1) && w->n < 256; i++) {
		lua_rawgeti(w->L, -1, i);
		w->starts[w->n++] = (uint64_t)lua_tonumber(w->L, -1);
		lua_pop(w->L, 1);
	}
	lua_pop(w->L, 1);
	return NULL;
}

static int found(const struct jsf_view *v, uint64_t pc)
{
	return jsf_view_lookup(v, pc, 0, NULL, NULL, NULL) == 0;
}

int main(void)
{
	char dir[] = "/tmp/jsf-t_states-XXXXXX";
	if (!mkdtemp(dir))
		return 2;
	snprintf(region, sizeof(region), "%s/region", dir);
	/* the module from the build tree */
	setenv("LUA_CPATH", "build/lua/?.so", 1);
	struct worker a = {.flush = 1}, b = {.flush = 0};
	CASE("two states in two threads publish into one region")
	{
		pthread_t ta, tb;
		pthread_create(&ta, NULL, run, &a);
		pthread_create(&tb, NULL, run, &b);
		pthread_join(ta, NULL);
		pthread_join(tb, NULL);
		CHECK(!a.err && !b.err, "a: %s b: %s", a.msg, b.msg);
		CHECK(a.n > 0 && b.n > 0, "live traces: a %d, b %d", a.n, b.n);
		struct jsf_view *v;
		CHECK_EQ(jsf_view_open(&v, region), 0);
		struct jsf_view_info info = {.sz = sizeof(info)};
		jsf_view_info(v, &info);
		CHECK(info.live, "live region");
		CHECK_EQ(info.live_funcs, (uint32_t)(a.n + b.n));
		for (int i = 0; i < a.n; i++)
			CHECK(found(v, a.starts[i]), "a's trace %d", i);
		for (int i = 0; i < b.n; i++)
			CHECK(found(v, b.starts[i]), "b's trace %d", i);
		/* a flushed once: its earlier traces are history, not live */
		CHECK(info.logged_funcs > info.live_funcs,
		      "flushed traces kept as history (%u logged)",
		      info.logged_funcs);
		jsf_view_close(v);
	}
	CASE("lua_close removes that state's functions only")
	{
		lua_close(a.L);
		struct jsf_view *v;
		CHECK_EQ(jsf_view_open(&v, region), 0);
		for (int i = 0; i < a.n; i++)
			CHECK(!found(v, a.starts[i]), "a's trace %d gone", i);
		for (int i = 0; i < b.n; i++)
			CHECK(found(v, b.starts[i]), "b's trace %d still there",
			      i);
		jsf_view_close(v);
		lua_close(b.L);
		char msg[256];
		CHECK(jsf_validate_region(region, msg, sizeof(msg)) == 0, "%s",
		      msg);
	}
	unlink(region);
	rmdir(dir);
	return h_exit();
}
