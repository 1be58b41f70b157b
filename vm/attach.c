/* SPDX-License-Identifier: MIT */
/*
 * The jit.attach multiplexer (vm.h). LuaJIT holds one handler per VM
 * event; we take that slot with a dispatcher that runs ours first, then
 * a chain of the handlers others attach (-jv, -jdump, jit.attach, also
 * the one attached before us), and wrap jit.attach so that theirs join
 * the chain. Lua state only: no process state here.
 */
#include "audit.h"
#include "vm.h"

#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <string.h>

/* The one handler LuaJIT holds for each event we multiplex ("trace"; also
 * "record" and "texit" for a full auditlog): ours first, then the chain of
 * handlers attached by others (-jv, -jdump, jit.attach). Upvalues: 1 the
 * event's name, 2 the state (light userdata), 3 the event (VM_EV_*), 4 its
 * chain (a dispatcher and its chain live and die together: hook_event). */
VM_HOT static int dispatcher(lua_State *L)
{
	int n = lua_gettop(L);
	struct lstate *s = lua_touserdata(L, lua_upvalueindex(2));
	if (!s)
		return 0;
	if (s->enabled)
		vm_event(L, s, (int)lua_tointeger(L, lua_upvalueindex(3)));
	lua_settop(L, n);
	if (!s->chained) /* no chain holds a handler: not looked at */
		return 0;
	int chain = lua_upvalueindex(4);
	for (int i = 1;; i++) {
		lua_rawgeti(L, chain, i);
		if (lua_isnil(L, -1)) {
			lua_pop(L, 1);
			break;
		}
		for (int a = 1; a <= n; a++)
			lua_pushvalue(L, a);
		if (lua_pcall(L, n, 0, 0)) {
			const char *ev = lua_tostring(L, lua_upvalueindex(1));
			fprintf(stderr, "jitsframe: %s handler failed: %s\n",
				ev ? ev : "?", lua_tostring(L, -1));
			lua_pop(L, 1);
		}
	}
	lua_settop(L, n);
	return 0;
}

/* Position of fn in the chain table at index t, or 0. */
static int chain_find(lua_State *L, int t, int fn)
{
	for (int i = 1;; i++) {
		lua_rawgeti(L, t, i);
		if (lua_isnil(L, -1)) {
			lua_pop(L, 1);
			return 0;
		}
		int eq = lua_rawequal(L, -1, fn);
		lua_pop(L, 1);
		if (eq)
			return i;
	}
}

static void chain_remove(lua_State *L, struct lstate *s, int t, int pos)
{
	int n = (int)lua_objlen(L, t);
	for (int i = pos; i < n; i++) {
		lua_rawgeti(L, t, i + 1);
		lua_rawseti(L, t, i);
	}
	lua_pushnil(L);
	lua_rawseti(L, t, n);
	s->chained--; /* (after: never below what the chains hold) */
}

/* jit.attach, as others see it while we are installed. */
static int attach_wrapper(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TFUNCTION);
	struct lstate *s = vm_get_state(L);
	const char *ev = lua_isnoneornil(L, 2) ? NULL : luaL_checkstring(L, 2);
	if (!s || !s->installed) /* not ours any more: plain attach */
		goto orig;
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->chains_ref);
	int chains = lua_gettop(L);
	if (ev) {
		lua_getfield(L, chains, ev);
		if (lua_istable(L, -1)) { /* an event we multiplex */
			int t = lua_gettop(L);
			if (!chain_find(L, t, 1)) {
				lua_pushvalue(L, 1);
				lua_rawseti(L, t, (int)lua_objlen(L, t) + 1);
				s->chained++;
			}
			return 0;
		}
	} else { /* detach: from every chain, then from LuaJIT */
		lua_pushnil(L);
		while (lua_next(L, chains)) {
			int t = lua_gettop(L);
			int pos = lua_istable(L, t) ? chain_find(L, t, 1) : 0;
			if (pos)
				chain_remove(L, s, t, pos);
			lua_pop(L, 1);
		}
	}
	lua_settop(L, 2);
orig:
	if (s)
		lua_rawgeti(L, LUA_REGISTRYINDEX, s->orig_ref);
	else
		return luaL_error(L, "jitsframe: no original jit.attach");
	lua_insert(L, 1);
	lua_call(L, lua_gettop(L) - 1, 0);
	return 0;
}

/* Multiplex event ev: attach a dispatcher for it, and whatever handler it
 * replaced in LuaJIT's one slot joins the event's chain. */
static int hook_event(lua_State *L, struct lstate *s, const char *ev)
{
	int top = lua_gettop(L);
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->disps_ref);
	int disps = lua_gettop(L);
	lua_getfield(L, disps, ev);
	if (!lua_isnil(L, -1)) { /* already */
		lua_settop(L, top);
		return 0;
	}
	lua_pop(L, 1);
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->chains_ref);
	lua_newtable(L);
	int chain = lua_gettop(L);
	lua_pushvalue(L, chain);
	lua_setfield(L, -3, ev);
	lua_pushstring(L, ev);
	lua_pushlightuserdata(L, s);
	lua_pushinteger(L, !strcmp(ev, "trace")	   ? VM_EV_TRACE
			   : !strcmp(ev, "record") ? VM_EV_RECORD
						   : VM_EV_TEXIT);
	lua_pushvalue(L, chain);
	lua_pushcclosure(L, dispatcher, 4);
	int disp = lua_gettop(L);
	/* LuaJIT keeps one handler per event in registry._VMEVENTS: copy it,
	 * attach, and whatever our dispatcher replaced joins the chain. */
	lua_getfield(L, LUA_REGISTRYINDEX, "_VMEVENTS");
	int evs = lua_gettop(L);
	lua_newtable(L);
	int snap = lua_gettop(L);
	if (lua_istable(L, evs)) {
		lua_pushnil(L);
		while (lua_next(L, evs)) {
			lua_pushvalue(L, -2);
			lua_insert(L, -2);
			lua_rawset(L, snap);
		}
	}
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->orig_ref);
	lua_pushvalue(L, disp);
	lua_pushstring(L, ev);
	if (lua_pcall(L, 2, 0, 0)) {
		lua_settop(L, top);
		return -1;
	}
	lua_pushvalue(L, disp);
	lua_setfield(L, disps, ev);
	lua_getfield(L, LUA_REGISTRYINDEX, "_VMEVENTS");
	if (lua_istable(L, -1)) {
		int now = lua_gettop(L);
		lua_pushnil(L);
		while (lua_next(L, now)) {
			if (lua_rawequal(L, -1, disp)) {
				lua_pushvalue(L, -2);
				lua_rawget(L, snap);
				if (lua_isfunction(L, -1)) {
					lua_rawseti(L, chain, 1);
					s->chained++;
				} else
					lua_pop(L, 1);
			}
			lua_pop(L, 1);
		}
	}
	lua_settop(L, top);
	return 0;
}

/* Wrap jit.attach and multiplex "trace" (plus "record" and "texit" for a
 * full auditlog), keeping handlers attached before us. */
int vm_install(lua_State *L, struct lstate *s)
{
	int top = lua_gettop(L);
	if (!s->installed) {
		if (vm_require(L, "jit") || !lua_istable(L, -1))
			goto fail;
		int jit = lua_gettop(L);
		lua_getfield(L, jit, "attach");
		if (lua_tocfunction(L, -1) == attach_wrapper) { /* ours */
			lua_settop(L, top);
			return 0;
		}
		if (s->orig_ref != LUA_NOREF) /* stayed a multiplexer */
			luaL_unref(L, LUA_REGISTRYINDEX, s->orig_ref);
		s->orig_ref = luaL_ref(L, LUA_REGISTRYINDEX);
		if (s->chains_ref == LUA_NOREF) {
			lua_newtable(L);
			s->chains_ref = luaL_ref(L, LUA_REGISTRYINDEX);
			lua_newtable(L);
			s->disps_ref = luaL_ref(L, LUA_REGISTRYINDEX);
		}
		lua_pushcfunction(L, attach_wrapper);
		lua_setfield(L, jit, "attach");
		s->installed = 1;
	}
	if (hook_event(L, s, "trace"))
		goto fail;
	if (vaudit_level(&s->m->audit) >= VAUDIT_FULL &&
	    (hook_event(L, s, "record") || hook_event(L, s, "texit")))
		goto fail;
	lua_settop(L, top);
	return 0;
fail:
	lua_settop(L, top);
	return -1;
}

/* Give LuaJIT back its own attach, leaving others' handlers attached. */
void vm_uninstall(lua_State *L, struct lstate *s)
{
	int top = lua_gettop(L);
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->chains_ref);
	int chains = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, chains)) {
		if (lua_objlen(L, -1) > 1) { /* LuaJIT cannot hold two */
			lua_settop(L, top);
			return;
		}
		lua_pop(L, 1);
	}
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->disps_ref);
	int disps = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, disps)) { /* key ev, value dispatcher */
		lua_pushvalue(L, -2);
		lua_rawget(L, chains);
		lua_rawgeti(L, LUA_REGISTRYINDEX, s->orig_ref);
		lua_rawgeti(L, -2, 1);
		if (lua_isfunction(L, -1)) { /* give the slot back to it */
			lua_pushvalue(L, -5);
			lua_pcall(L, 2, 0, 0);
		} else {
			lua_pop(L, 1);
			lua_pushvalue(L, -3); /* detach our dispatcher */
			lua_pcall(L, 1, 0, 0);
		}
		lua_settop(L, disps + 1); /* keep the key */
	}
	if (vm_require(L, "jit") == 0 && lua_istable(L, -1)) {
		lua_rawgeti(L, LUA_REGISTRYINDEX, s->orig_ref);
		lua_setfield(L, -2, "attach");
	}
	luaL_unref(L, LUA_REGISTRYINDEX, s->chains_ref);
	luaL_unref(L, LUA_REGISTRYINDEX, s->disps_ref);
	luaL_unref(L, LUA_REGISTRYINDEX, s->orig_ref);
	luaL_unref(L, LUA_REGISTRYINDEX, s->starts_ref);
	luaL_unref(L, LUA_REGISTRYINDEX, s->basefn_ref);
	s->chains_ref = s->disps_ref = s->orig_ref = s->starts_ref = LUA_NOREF;
	s->basefn_ref = LUA_NOREF;
	s->chained = 0;
	for (uint32_t i = 0; i < s->used && s->t; i++)
		s->t[i].pos_pending = 0; /* the table of starts is gone */
	s->installed = 0;
	lua_settop(L, top);
}
