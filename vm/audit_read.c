/* SPDX-License-Identifier: MIT */
/*
 * The auditlog's reading API (audit.h): jsf.audit_records(path) iterates
 * over a log's records as Lua tables (format-2 func records expanded with
 * the fields the replay reads), jsf.audit_status() says how reading
 * ended. No process state: callers need not hold the module's lock.
 */
#include "audit.h"
#include "auditlog.h"

#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ reading */

static const char STATUS_KEY = 0;

static void push_obj(lua_State *L, const msgpack_object *o, int depth)
{
	if (depth > 64) {
		lua_pushnil(L);
		return;
	}
	switch (o->type) {
	case MSGPACK_OBJECT_BOOLEAN:
		lua_pushboolean(L, o->via.boolean);
		break;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		lua_pushnumber(L, (lua_Number)o->via.u64);
		break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		lua_pushnumber(L, (lua_Number)o->via.i64);
		break;
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		lua_pushnumber(L, o->via.f64);
		break;
	case MSGPACK_OBJECT_STR:
		lua_pushlstring(L, o->via.str.ptr, o->via.str.size);
		break;
	case MSGPACK_OBJECT_BIN:
		lua_pushlstring(L, o->via.bin.ptr, o->via.bin.size);
		break;
	case MSGPACK_OBJECT_ARRAY:
		lua_checkstack(L, 4);
		lua_createtable(L, (int)o->via.array.size, 0);
		for (uint32_t i = 0; i < o->via.array.size; i++) {
			push_obj(L, &o->via.array.ptr[i], depth + 1);
			lua_rawseti(L, -2, (int)i + 1);
		}
		break;
	case MSGPACK_OBJECT_MAP:
		lua_checkstack(L, 4);
		lua_createtable(L, 0, (int)o->via.map.size);
		for (uint32_t i = 0; i < o->via.map.size; i++) {
			push_obj(L, &o->via.map.ptr[i].key, depth + 1);
			if (lua_isnil(L, -1) ||
			    (lua_type(L, -1) == LUA_TNUMBER &&
			     lua_tonumber(L, -1) != lua_tonumber(L, -1))) {
				lua_pop(L,
					1); /* nil or NaN key: not a Lua key */
				continue;
			}
			push_obj(L, &o->via.map.ptr[i].val, depth + 1);
			lua_rawset(L, -3);
		}
		break;
	default:
		lua_pushnil(L);
		break;
	}
}

/* A format-2 func record (table at t) gets the format-1 fields the
 * replay reads (lines, bc, k, uv: jit.util's answers) from its bytecode
 * dump and live/bcm/kobj. 0, or -1 with err. A record without a dump
 * (format 1, or a C function) is left as it is. */
static int expand_func(lua_State *L, int t, char *err, size_t errlen)
{
	lua_getfield(L, t, "ev");
	int isf = lua_type(L, -1) == LUA_TSTRING &&
		  !strcmp(lua_tostring(L, -1), "func");
	lua_pop(L, 1);
	if (!isf)
		return 0;
	lua_getfield(L, t, "dump");
	size_t dl;
	const char *d =
	    lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &dl) : NULL;
	if (!d) {
		lua_pop(L, 1);
		return 0;
	}
	int top = lua_gettop(L); /* the dump string stays here */
	struct alog_fproto fp;
	if (!lua_checkstack(L, 16)) {
		snprintf(err, errlen, "Lua stack full");
		lua_pop(L, 1);
		return -1;
	}
	if (alog_fproto_decode(&fp, d, dl)) {
		snprintf(err, errlen, "bad bytecode dump: %s", fp.err);
		alog_fproto_free(&fp);
		lua_settop(L, top - 1);
		return -1;
	}
	const char *why = NULL;
	static const char *const names[4] = {"bytecodes", "nconsts", "gcconsts",
					     "upvalues"};
	uint32_t want[4] = {fp.sizebc, fp.nkn, fp.nkgc, fp.numuv};
	lua_getfield(L, t, "info");
	int info = lua_gettop(L);
	for (int i = 0; i < 4 && !why; i++) {
		lua_getfield(L, info, names[i]);
		if (!lua_isnumber(L, -1) || lua_tonumber(L, -1) != want[i])
			why = names[i];
		lua_pop(L, 1);
	}
	if (why) {
		snprintf(err, errlen, "info.%s does not match the dump", why);
		goto bad;
	}
	lua_getfield(L, t, "live");
	lua_getfield(L, t, "bcm");
	lua_getfield(L, t, "kobj");
	int live = top + 2, bcm = top + 3, kobj = top + 4;
	if (!lua_istable(L, live) || !lua_istable(L, bcm) ||
	    !lua_istable(L, kobj)) {
		snprintf(err, errlen, "live, bcm or kobj missing");
		goto bad;
	}
	lua_createtable(L, 0, (int)fp.sizebc); /* lines */
	lua_createtable(L, 0, (int)fp.sizebc); /* bc */
	int lines = top + 5, bc = top + 6;
	for (uint32_t pc = 0; pc < fp.sizebc; pc++) {
		lua_pushnumber(L, (lua_Number)alog_fproto_line(&fp, pc));
		lua_rawseti(L, lines, (int)pc);
		lua_rawgeti(L, live, (int)pc);
		lua_Number ins;
		if (lua_isnumber(L, -1)) {
			ins = lua_tonumber(L, -1);
			if (ins != (int32_t)ins) {
				snprintf(err, errlen,
					 "live[%u] is not an "
					 "instruction",
					 pc);
				goto bad;
			}
		} else if (pc == 0) {
			snprintf(err, errlen, "live[0] missing");
			goto bad;
		} else {
			ins = (int32_t)alog_fproto_ins(&fp, pc);
		}
		lua_pop(L, 1);
		lua_rawgeti(L, bcm, (int)((uint32_t)(int32_t)ins & 0xff));
		if (!lua_isnumber(L, -1)) {
			snprintf(err, errlen, "no mode for opcode %u",
				 (uint32_t)(int32_t)ins & 0xff);
			goto bad;
		}
		lua_createtable(L, 2, 0);
		lua_pushnumber(L, ins);
		lua_rawseti(L, -2, 1);
		lua_pushvalue(L, -2);
		lua_rawseti(L, -2, 2);
		lua_rawseti(L, bc, (int)pc);
		lua_pop(L, 1);
	}
	lua_createtable(L, (int)fp.nkn, (int)fp.nkgc); /* k */
	int k = top + 7;
	for (uint32_t i = 0; i < fp.nkn; i++) {
		lua_pushnumber(L, fp.kn[i]);
		lua_rawseti(L, k, (int)i);
	}
	for (uint32_t i = 0; i < fp.nkgc; i++) {
		int ki = (int)i - (int)fp.nkgc;
		if (fp.kgc[i].kind == ALOG_FK_STR) {
			lua_pushlstring(L, fp.kgc[i].s, fp.kgc[i].len);
		} else {
			lua_rawgeti(L, kobj, ki);
			if (lua_isnil(L, -1)) {
				snprintf(err, errlen, "kobj[%d] missing", ki);
				goto bad;
			}
		}
		lua_rawseti(L, k, ki);
	}
	lua_createtable(L, 0, fp.numuv); /* uv */
	for (uint32_t i = 0; i < fp.numuv; i++) {
		lua_pushstring(L, alog_fproto_uvname(&fp, i));
		lua_rawseti(L, -2, (int)i);
	}
	lua_setfield(L, t, "uv");
	lua_setfield(L, t, "k");
	lua_setfield(L, t, "bc");
	lua_setfield(L, t, "lines");
	alog_fproto_free(&fp);
	lua_settop(L, top - 1);
	return 0;
bad:
	alog_fproto_free(&fp);
	lua_settop(L, top - 1);
	return -1;
}

/* jsf.audit_func_expand(rec) -> rec, or nil and why (a test hook) */
static int l_audit_func_expand(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	char err[256];
	lua_settop(L, 1);
	if (expand_func(L, 1, err, sizeof(err))) {
		lua_pushnil(L);
		lua_pushstring(L, err);
		return 2;
	}
	return 1;
}

static void set_status(lua_State *L, const char *msg)
{
	lua_pushlightuserdata(L, (void *)&STATUS_KEY);
	if (msg)
		lua_pushstring(L, msg);
	else
		lua_pushnil(L);
	lua_rawset(L, LUA_REGISTRYINDEX);
}

static int reader_gc(lua_State *L)
{
	struct alog_reader *r = lua_touserdata(L, 1);
	if (r && r->buf)
		alog_reader_free(r);
	return 0;
}

static int reader_next(lua_State *L)
{
	struct alog_reader *r = lua_touserdata(L, lua_upvalueindex(1));
	if (!r->buf && r->state)
		return 0;
	const msgpack_object *o;
	int ret = alog_next(r, &o);
	if (ret == 1) {
		push_obj(L, o, 0);
		char err[256], msg[400];
		if (o->type == MSGPACK_OBJECT_MAP &&
		    expand_func(L, lua_gettop(L), err, sizeof(err))) {
			/* a damaged func record ends the log like any damage */
			snprintf(msg, sizeof(msg),
				 "damaged at byte %zu: func record: %s; %llu "
				 "records decoded",
				 r->rec_off, err,
				 (unsigned long long)(r->nrec - 1));
			set_status(L, msg);
			r->state = -1;
			alog_reader_free(r);
			return 0;
		}
		return 1;
	}
	set_status(L, ret < 0 ? r->msg : NULL);
	alog_reader_free(r);
	return 0;
}

/* jsf.audit_records(path) -> iterator over the records as tables */
static int l_audit_records(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	struct alog_reader *r = lua_newuserdata(L, sizeof(*r));
	memset(r, 0, sizeof(*r));
	lua_newtable(L);
	lua_pushcfunction(L, reader_gc);
	lua_setfield(L, -2, "__gc");
	lua_setmetatable(L, -2);
	if (alog_read_file(r, path)) {
		lua_pushstring(L, r->msg);
		alog_reader_free(r);
		return lua_error(L);
	}
	set_status(L, "not read to the end");
	lua_pushcclosure(L, reader_next, 1);
	return 1;
}

/* jsf.audit_status() -> nil after a clean end, else the damage message */
static int l_audit_status(lua_State *L)
{
	lua_pushlightuserdata(L, (void *)&STATUS_KEY);
	lua_rawget(L, LUA_REGISTRYINDEX);
	return 1;
}

void vaudit_register(lua_State *L)
{
	lua_pushcfunction(L, l_audit_records);
	lua_setfield(L, -2, "audit_records");
	lua_pushcfunction(L, l_audit_status);
	lua_setfield(L, -2, "audit_status");
	lua_pushcfunction(L, l_audit_func_expand);
	lua_setfield(L, -2, "audit_func_expand");
}
