/* SPDX-License-Identifier: MIT */
/*
 * The auditlog's writer glue (audit.h): opening the log and writing its
 * header, each VM event's record built in one protected call (a Lua error
 * drops that record, counted, and never reaches the host program), the
 * records handed to the file writer (audit/auditw.h), close, stats.
 */
#include "auditint.h"
#include "jitsframe.h"
#include "jsfenv.h"
#include "vm.h"

#include <errno.h>
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ASTATE_KEY = 0; /* its address is the registry key */

static const char *const util_names[U_N] = {
    "funcinfo", "funcbc",    "funck",	"funcuvname",	 "traceinfo", "traceir",
    "tracek",	"tracesnap", "tracemc", "traceexitstub", "ircalladdr"};

/* ------------------------------------------------------------ records */

void va_put_record(struct vaudit *A, msgpack_sbuffer *sb, int defer)
{
	if (!A->w)
		return;
	if (defer) { /* a copy into the pending buffer: not timed apart
		      * (in event_ns), two clock reads fewer per attempt */
		if (alogw_defer(A->w, sb->data, sb->size) == 0)
			return;
		alogw_close(A->w, NULL);
		A->w = NULL;
		return;
	}
	uint64_t t0 = jsf_now_ns();
	int err = alogw_write(A->w, sb->data, sb->size);
	A->put_end = jsf_now_ns(); /* the event's end too (event()) */
	A->write_ns += A->put_end - t0;
	if (err) {
		alogw_close(A->w, NULL); /* the writer left its note */
		A->w = NULL;
	}
}

/* ------------------------------------------------------- state, events */

/* A new table with weak keys, as a registry reference. */
static int weak_keys_ref(lua_State *L)
{
	lua_newtable(L);
	lua_newtable(L);
	lua_pushstring(L, "k");
	lua_setfield(L, -2, "__mode");
	lua_setmetatable(L, -2);
	return luaL_ref(L, LUA_REGISTRYINDEX);
}

static void new_fnids(lua_State *L, struct astate *a)
{
	if (a->fnids_ref != LUA_NOREF)
		luaL_unref(L, LUA_REGISTRYINDEX, a->fnids_ref);
	a->fnids_ref = weak_keys_ref(L);
}

/* The astate's __gc (its VM closing): A's cache no longer points to it. */
static int astate_gc(lua_State *L)
{
	struct astate *a = lua_touserdata(L, 1);
	if (a && a->A && a->A->ast == a)
		a->A->ast = a->A->ast_reg = NULL;
	return 0;
}

/* This VM's astate (registry[&ASTATE_KEY]), made if create. The last one
 * found is remembered in A with its VM's registry, which identifies the
 * VM: a registry lookup fewer per event; the astate's __gc forgets it
 * when that VM closes, so a later VM whose registry lands at the same
 * address looks its own up. */
static struct astate *get_astate(struct vaudit *A, lua_State *L, int create)
{
	const void *reg = lua_topointer(L, LUA_REGISTRYINDEX);
	if (A->ast && A->ast_reg == reg)
		return A->ast;
	lua_pushlightuserdata(L, (void *)&ASTATE_KEY);
	lua_rawget(L, LUA_REGISTRYINDEX);
	struct astate *a = lua_touserdata(L, -1);
	lua_pop(L, 1);
	if (a) {
		A->ast = a;
		A->ast_reg = (void *)reg;
	}
	if (a || !create)
		return a;
	int top = lua_gettop(L);
	if (vm_require(L, "jit.util") || !lua_istable(L, -1)) {
		lua_settop(L, top);
		return NULL;
	}
	lua_pushlightuserdata(L, (void *)&ASTATE_KEY);
	a = lua_newuserdata(L, sizeof(*a));
	memset(a, 0, sizeof(*a));
	a->A = A;
	a->fnids_ref = a->typeof_ref = LUA_NOREF;
	lua_createtable(L, 0, 1);
	lua_pushcfunction(L, astate_gc);
	lua_setfield(L, -2, "__gc");
	lua_setmetatable(L, -2);
	lua_rawset(L, LUA_REGISTRYINDEX);
	for (int u = 0; u < U_N; u++) {
		lua_getfield(L, -1, util_names[u]);
		a->uref[u] = luaL_ref(L, LUA_REGISTRYINDEX);
	}
	a->util_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	lua_rawgeti(L, LUA_REGISTRYINDEX, a->uref[U_TRACEK]);
	a->tracek_c = lua_iscfunction(L, -1);
	lua_rawgeti(L, LUA_REGISTRYINDEX, a->uref[U_FUNCINFO]);
	int kobj_ok = lua_iscfunction(L, -1);
	lua_pop(L, 2);
	lua_getglobal(L, "tostring");
	kobj_ok = kobj_ok && lua_iscfunction(L, -1);
	a->tostring_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	a->kobj_ref = LUA_NOREF;
	if (kobj_ok) /* the packed objects (pack_obj): weak keys */
		a->kobj_ref = weak_keys_ref(L);
	if (vm_require(L, "ffi") == 0 && lua_istable(L, -1)) {
		lua_getfield(L, -1, "typeof");
		a->typeof_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	}
	lua_settop(L, top);
	lua_pushcfunction(L, va_build); /* one closure, not one per event */
	a->build_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	new_fnids(L, a);
	a->gen = alogw_gen(A->w);
	return a;
}

static void event(struct vaudit *A, lua_State *L, const char *kind,
		  int32_t spadj)
{
	if (!A->w)
		return;
	if (A->owner !=
	    vm_self_pid()) { /* a fork child: the log is the parent's */
		alogw_forget(A->w);
		A->w = NULL;
		return;
	}
	struct astate *a = get_astate(A, L, 1);
	if (!a)
		return;
	alogw_begin(A->w);
	if (alogw_gen(A->w) != a->gen) { /* a new file: resend funcs */
		new_fnids(L, a);
		a->gexit = 0;
		a->gen = alogw_gen(A->w);
	}
	int n = lua_gettop(L);
	if (!lua_checkstack(L, n + 48))
		return;
	struct ctx c = {.A = A, .a = a, .spadj = spadj, .kind = kind};
	if (kind[0] == 't' && kind[1] == 'r') { /* "trace" */
		/* Unprotected first: a start, a stop read raw, a flush or an
		 * abort whose functions have their ids already call no Lua
		 * function and cannot raise (auditint.h, ctx.nolua), so no
		 * lua_pcall; else (bail) the same build again, protected. */
		c.nolua = 1;
		uint64_t t0 = jsf_now_ns();
		c.now = t0; /* the records' ns */
		A->put_end = 0;
		lua_pushlightuserdata(L, &c);
		lua_insert(L, 1);
		va_build(L);
		lua_settop(L, n + 1);
		lua_remove(L, 1);
		if (!c.bail) {
			/* the write, if any, was the build's last step */
			A->event_ns +=
			    (A->put_end ? A->put_end : jsf_now_ns()) - t0;
			A->direct++;
			return;
		}
		A->event_ns += jsf_now_ns() - t0;
		c = (struct ctx){.A = A, .a = a, .spadj = spadj, .kind = kind};
	}
	lua_rawgeti(L, LUA_REGISTRYINDEX, a->build_ref);
	lua_pushlightuserdata(L, &c);
	for (int i = 1; i <= n; i++)
		lua_pushvalue(L, i);
	uint64_t t0 = jsf_now_ns();
	int perr = lua_pcall(L, n + 1, 0, 0);
	A->event_ns += jsf_now_ns() - t0;
	if (perr) {
		A->dropped++;
		const char *e = lua_tostring(L, -1);
		snprintf(A->last_err, sizeof(A->last_err), "%s", e ? e : "?");
	}
	lua_settop(L, n);
}

void vaudit_trace(struct vaudit *A, lua_State *L, int32_t spadj)
{
	event(A, L, "trace", spadj);
}

void vaudit_record(struct vaudit *A, lua_State *L)
{
	if (A->level >= VAUDIT_FULL)
		event(A, L, "record", INT32_MIN);
}

void vaudit_texit(struct vaudit *A, lua_State *L)
{
	if (A->level >= VAUDIT_FULL)
		event(A, L, "texit", INT32_MIN);
}

VM_HOT int vaudit_level(const struct vaudit *A)
{
	return A->w && A->owner == vm_self_pid() ? A->level : 0;
}

const char *vaudit_path(const struct vaudit *A)
{
	return A->path;
}

int vaudit_open(struct vaudit *A, lua_State *L, const struct vaudit_cfg *cfg,
		char *err, size_t errlen)
{
	if (A->w && A->owner == vm_self_pid()) {
		snprintf(err, errlen, "this process already logs to %s",
			 A->path);
		return -EBUSY;
	}
	if (A->w) { /* inherited over fork */
		alogw_forget(A->w);
		A->w = NULL;
	}
	A->level = cfg->level;
	/* debugging knobs of the raw trace reader (docs/AUDITLOG.md) */
	const char *rc = getenv(JSF_ENV_AUDIT_RAWCHECK);
	if (rc && *rc) {
		char *end;
		unsigned long v = strtoul(rc, &end, 10);
		if (*end || v > 1u << 30) {
			snprintf(err, errlen,
				 JSF_ENV_AUDIT_RAWCHECK "=%s: not a number "
							"of traces",
				 rc);
			return -EINVAL;
		}
		if (v == 0 && A->raw != RAW_OFF) {
			A->raw = RAW_OFF;
			snprintf(A->raw_why, sizeof(A->raw_why),
				 JSF_ENV_AUDIT_RAWCHECK "=0");
		}
		A->raw_recheck = v ? (unsigned)v : VAUDIT_RAW_RECHECK;
	}
	A->raw_fault = getenv(JSF_ENV_AUDIT_RAWFAULT) != NULL;
	A->raw_v1 = getenv(JSF_ENV_AUDIT_RAWV1) != NULL;
	struct astate *a = get_astate(A, L, 1);
	if (!a) {
		snprintf(err, errlen, "no jit.util");
		return -ENOENT;
	}
	struct ctx c = {.A = A, .a = a, .spadj = INT32_MIN, .kind = "header"};
	lua_pushcfunction(L, va_build_header);
	lua_pushlightuserdata(L, &c);
	if (lua_pcall(L, 1, 0, 0)) {
		snprintf(err, errlen, "building the header: %s",
			 lua_tostring(L, -1));
		lua_pop(L, 1);
		return -EINVAL;
	}
	const char *nm = getenv(JSF_ENV_AUDITLOG_NOMAP);
	struct alogw_opts o = {cfg->path, cfg->max_bytes, cfg->keep,
			       cfg->replace, nm && *nm && strcmp(nm, "0")};
	int e = alogw_open(&A->w, &o, A->sb.data, A->sb.size);
	if (e) {
		snprintf(err, errlen, "%s: %s", cfg->path, strerror(-e));
		return e;
	}
	A->owner = vm_self_pid();
	snprintf(A->path, sizeof(A->path), "%s", cfg->path);
	a->gen = alogw_gen(A->w);
	new_fnids(L, a);
	a->gexit = 0;
	return 0;
}

void vaudit_close(struct vaudit *A, const char *note)
{
	if (A->w && A->owner == vm_self_pid())
		alogw_close(A->w, note);
	else if (A->w)
		alogw_forget(A->w);
	A->w = NULL;
}

void vaudit_stats(const struct vaudit *A, lua_State *L)
{
	lua_createtable(L, 0, 8);
	lua_pushstring(L, A->path);
	lua_setfield(L, -2, "path");
	lua_pushboolean(L, A->w != NULL);
	lua_setfield(L, -2, "logging");
	lua_pushstring(L, A->level >= VAUDIT_FULL ? "full" : "default");
	lua_setfield(L, -2, "level");
	lua_pushnumber(L, (lua_Number)alogw_records(A->w));
	lua_setfield(L, -2, "records");
	lua_pushnumber(L, (lua_Number)alogw_bytes(A->w));
	lua_setfield(L, -2, "bytes");
	lua_pushnumber(L, (lua_Number)A->dropped);
	lua_setfield(L, -2, "dropped");
	lua_pushnumber(L, (lua_Number)A->funcs);
	lua_setfield(L, -2, "funcs");
	/* trace events built without lua_pcall (audit_write.c) */
	lua_pushnumber(L, (lua_Number)A->direct);
	lua_setfield(L, -2, "direct");
	/* time (ns) in building records (func records included), in func
	 * records alone, and in write(2) */
	lua_pushnumber(L, (lua_Number)A->event_ns);
	lua_setfield(L, -2, "event_ns");
	lua_pushnumber(L, (lua_Number)A->func_ns);
	lua_setfield(L, -2, "func_ns");
	lua_pushnumber(L, (lua_Number)A->write_ns);
	lua_setfield(L, -2, "write_ns");
	/* the raw trace reader (ljtrace.h): state, traces read raw */
	static const char *const rs[] = {"untried", "checking", "on", "off"};
	lua_pushstring(L, rs[A->raw]);
	lua_setfield(L, -2, "raw");
	lua_pushnumber(L, (lua_Number)A->raw_traces);
	lua_setfield(L, -2, "raw_traces");
	lua_pushnumber(L, (lua_Number)A->raw_checks);
	lua_setfield(L, -2, "raw_checked");
	lua_pushboolean(L, A->str_len > 0); /* string constants read raw */
	lua_setfield(L, -2, "raw_strings");
	if (A->raw_why[0]) {
		lua_pushstring(L, A->raw_why);
		lua_setfield(L, -2, "raw_off");
	}
	if (A->last_err[0]) {
		lua_pushstring(L, A->last_err);
		lua_setfield(L, -2, "last_error");
	}
	if (alogw_error(A->w)) {
		lua_pushstring(L, alogw_error(A->w));
		lua_setfield(L, -2, "error");
	}
}
