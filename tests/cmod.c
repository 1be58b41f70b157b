/* SPDX-License-Identifier: MIT */
/*
 * A Lua C module for tests/t_cfnames.sh, built twice: as is (its symbols
 * the test's ground truth: nm gives each function's address) and stripped
 * (what the profiled program loads: only luaopen_cmod and luaopen_cmodfn
 * exported, as a distribution's module; the functions are static). Its
 * functions, each a C function of its own, busy for a while so that profiles
 * catch them: cmod.spin(n)          arithmetic, n rounds cmod.churn(n) strings,
 * n rounds (a second function, apart) cmod.nested.deep(n)   a table in the
 * module's table cmod.call(f)          calls f (tests/t_gdb.sh: a stop inside
 * it) cmod.twin1, cmod.twin2  two closures of one C function (shared: its
 *                         address must get no name)
 *   require("cmodfn")     a module that is a function (its own name)
 * No code of another project.
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>
#include <stdio.h>

/* (noinline, no tail calls out: each frame its own function's) */
#define BUSY static __attribute__((noinline, used))

BUSY int cmod_spin(lua_State *L)
{
	lua_Integer n = luaL_checkinteger(L, 1);
	volatile uint64_t x = 1;
	for (lua_Integer i = 0; i < n * 1000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	lua_pushinteger(L, (lua_Integer)(x & 0xffff));
	return 1;
}

BUSY int cmod_churn(lua_State *L)
{
	lua_Integer n = luaL_checkinteger(L, 1);
	char buf[64];
	volatile size_t t = 0;
	for (lua_Integer i = 0; i < n * 100; i++)
		t += (size_t)snprintf(buf, sizeof(buf), "%lld.%d", (long long)i,
				      (int)(i % 7));
	lua_pushinteger(L, (lua_Integer)t);
	return 1;
}

BUSY int cmod_deep(lua_State *L)
{
	lua_Integer n = luaL_checkinteger(L, 1);
	volatile double d = 1;
	for (lua_Integer i = 0; i < n * 1000; i++)
		d = d * 1.0000001 + 0.5;
	lua_pushnumber(L, d);
	return 1;
}

BUSY int cmod_call(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TFUNCTION);
	lua_pushvalue(L, 1);
	lua_call(L, 0, 1);
	return 1 + 0 * lua_gettop(L); /* (after the call: no tail call) */
}

BUSY int cmod_twin(lua_State *L)
{
	lua_pushinteger(L, lua_tointeger(L, lua_upvalueindex(1)));
	return 1;
}

BUSY int cmod_fn(lua_State *L)
{
	lua_Integer n = luaL_checkinteger(L, 1);
	volatile uint32_t x = 7;
	for (lua_Integer i = 0; i < n * 1000; i++)
		x = x * 1103515245u + 12345u;
	lua_pushinteger(L, (lua_Integer)(x & 0xffff));
	return 1;
}

__attribute__((visibility("default"))) int luaopen_cmod(lua_State *L);
int luaopen_cmod(lua_State *L)
{
	lua_newtable(L);
	lua_pushcfunction(L, cmod_spin);
	lua_setfield(L, -2, "spin");
	lua_pushcfunction(L, cmod_churn);
	lua_setfield(L, -2, "churn");
	lua_pushcfunction(L, cmod_call);
	lua_setfield(L, -2, "call");
	lua_newtable(L);
	lua_pushcfunction(L, cmod_deep);
	lua_setfield(L, -2, "deep");
	lua_setfield(L, -2, "nested");
	for (int i = 1; i <= 2; i++) {
		lua_pushinteger(L, i);
		lua_pushcclosure(L, cmod_twin, 1);
		lua_setfield(L, -2, i == 1 ? "twin1" : "twin2");
	}
	return 1;
}

__attribute__((visibility("default"))) int luaopen_cmodfn(lua_State *L);
int luaopen_cmodfn(lua_State *L)
{
	lua_pushcfunction(L, cmod_fn);
	return 1;
}
