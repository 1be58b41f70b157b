/* SPDX-License-Identifier: MIT */
/*
 * The Lua module `jitsframe`: attaches to LuaJIT's trace events with C
 * callbacks and publishes exact unwind rows for every trace into a region
 * (libjitsframe). See docs/VM.md; vm.h says which file does what. This
 * file: the Lua API, its options (the table, then the environment:
 * common/jsfenv.h), start and stop.
 *
 *   local jsf = require("jitsframe")
 *   jsf.start{ region = PATH }   -- default: $JITSFRAME_REGION, else
 *                                 -- BASE/jitsframe-UID/PID.region, BASE:
 *                                 -- $TMPDIR, else /dev/shm (a tmpfs with
 *                                 -- room), else /tmp
 *   jsf.start{ auditlog = PATH, level = "default"|"full" }  -- the auditlog
 *   jsf.stop()
 */
#include "audit.h"
#include "jitdump.h"
#include "jitsframe.h"
#include "jsfenv.h"
#include "lj.h"
#include "vm.h"
#include "vmcheck.h"

#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MOD_VERSION JSF_VERSION_STRING

/* ------------------------------------------------------- process state */

/* The module's state is the process's: one region per process, shared by
 * every Lua state in it (each lstate points here). Only the Lua API's
 * entry points and the destructor name it; everything else is given it. */
static struct vmod g_mod = {.mu = PTHREAD_MUTEX_INITIALIZER,
			    .audit = VAUDIT_INIT};

/* This process's pid, refreshed in a fork child (pthread_atfork), so that
 * the per-event fork check costs no system call. Process-wide by nature
 * (a fork is the process's), hence global. */
static pid_t g_self;
static void after_fork_child(void)
{
	g_self = getpid();
}
static void register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}
VM_HOT pid_t vm_self_pid(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	if (!g_self) {
		g_self = getpid();
		pthread_once(&once, register_fork_handler);
	}
	return g_self;
}

void vm_log(const struct vmod *m, const char *fmt, ...)
{
	if (m->quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("jitsframe: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int vm_require(lua_State *L, const char *name)
{
	lua_getglobal(L, "require");
	lua_pushstring(L, name);
	return lua_pcall(L, 1, 1, 0);
}

/* -------------------------------------------------------- the Lua API */

static int fail(lua_State *L, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	lua_pushnil(L);
	lua_pushstring(L, buf);
	return 2;
}

/* The VM checks that do not need machine code: GC64 x64 LuaJIT. */
static const char *check_vm_kind(lua_State *L)
{
	int top = lua_gettop(L);
	const char *why = NULL;
	if (vm_require(L, "jit") || !lua_istable(L, -1)) {
		why = "not LuaJIT (no jit module)";
		goto out;
	}
	lua_getfield(L, -1, "arch");
	if (!lua_isstring(L, -1) || strcmp(lua_tostring(L, -1), "x64")) {
		why = "not an x64 LuaJIT";
		goto out;
	}
	if (vm_require(L, "ffi") || !lua_istable(L, -1)) {
		why = "no ffi module (cannot check GC64)";
		goto out;
	}
	lua_getfield(L, -1, "abi");
	lua_pushstring(L, "gc64");
	if (lua_pcall(L, 1, 1, 0) || !lua_toboolean(L, -1))
		why = "not a GC64 build (only GC64 is verified)";
out:
	lua_settop(L, top);
	return why;
}

/* $name when set and not empty, else NULL */
static const char *env_set(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* *out = s, a decimal count from 1 to UINT32_MAX (a Lua number's text:
 * digits alone); false for anything else. */
static bool count_of(const char *s, uint32_t *out)
{
	size_t n = strspn(s, "0123456789");
	if (!n || s[n] || n > 10)
		return false;
	unsigned long long v = strtoull(s, NULL, 10);
	if (!v || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* The default directory's regions of processes that are gone, the newest
 * kept (keep: a count, "all", NULL: the library's default); once per
 * process, once its own region is made there (not on a refused start, and
 * outside m->mu) (docs/VM.md). dir: that region's directory (its path, cut
 * at the last '/'). */
static void prune_default_dir(struct vmod *m, char *dir, const char *keep)
{
	static pid_t done;
	char *slash = strrchr(dir, '/');
	if (done == getpid() || (keep && !strcmp(keep, "all")) || !slash ||
	    slash == dir)
		return;
	*slash = 0;
	done = getpid();
	struct jsf_prune_opts o = {.sz = sizeof(o)};
	if (keep) {
		unsigned long n = strtoul(keep, NULL, 10);
		o.keep = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
		o.flags = n ? 0 : JSF_PRUNE_ALL;
	}
	int n = jsf_region_prune(dir, &o);
	if (n < 0 && n != -ENOENT)
		vm_log(m, "cannot prune %s: %s", dir, jsf_strerror(n));
}

static int l_start(lua_State *L)
{
	struct vmod *m = &g_mod;
	/* Called by the interpreter: our return address is inside it. */
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	const char *path = NULL, *jitdump = NULL, *alog = NULL, *alevel = NULL;
	int replace = 0, quiet = -1, perfmap = 0, no_mlock = 0, luamap = -1;
	const char *rkeep = NULL, *rhist = NULL;
	uint64_t amax = 64u << 20;
	unsigned akeep = 3;
	if (!lua_isnoneornil(L, 1)) {
		luaL_checktype(L, 1, LUA_TTABLE);
		lua_getfield(L, 1, "region");
		path = lua_tostring(L, -1);
		lua_getfield(L, 1, "replace");
		replace = lua_toboolean(L, -1);
		lua_getfield(L, 1, "quiet");
		if (!lua_isnil(L, -1))
			quiet = lua_toboolean(L, -1);
		lua_getfield(L, 1, "jitdump");
		if (lua_isstring(L, -1))
			jitdump = lua_tostring(L, -1);
		else if (lua_toboolean(L, -1))
			jitdump = ".";
		lua_getfield(L, 1, "perfmap");
		perfmap = lua_toboolean(L, -1);
		lua_getfield(L, 1, "auditlog");
		alog = lua_tostring(L, -1);
		lua_getfield(L, 1, "level");
		alevel = lua_tostring(L, -1);
		lua_getfield(L, 1, "auditlog_max");
		if (lua_isnumber(L, -1))
			amax = (uint64_t)lua_tonumber(L, -1);
		lua_getfield(L, 1, "auditlog_keep");
		if (lua_isnumber(L, -1))
			akeep = (unsigned)lua_tonumber(L, -1);
		lua_getfield(L, 1, "mlock");
		no_mlock = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
		lua_getfield(L, 1, "luamap");
		if (lua_isboolean(L, -1))
			luamap = lua_toboolean(L, -1);
		lua_getfield(L, 1, "region_keep");
		if (lua_type(L, -1) == LUA_TNUMBER ||
		    lua_type(L, -1) == LUA_TSTRING)
			rkeep = lua_tostring(L, -1);
		else if (lua_isboolean(L, -1) && !lua_toboolean(L, -1))
			rkeep = "all";
		lua_getfield(L, 1, "region_history");
		if (lua_type(L, -1) == LUA_TNUMBER ||
		    lua_type(L, -1) == LUA_TSTRING)
			rhist = lua_tostring(L, -1);
		else if (!lua_isnil(L, -1))
			rhist = "";
		lua_pop(L, 13);
	}
	const char *env;
	if (!alog)
		alog = env_set(JSF_ENV_AUDITLOG);
	if (!alevel)
		alevel = env_set(JSF_ENV_AUDITLOG_LEVEL);
	if ((env = env_set(JSF_ENV_AUDITLOG_MAX)))
		amax = strtoull(env, NULL, 0);
	if ((env = env_set(JSF_ENV_AUDITLOG_KEEP)))
		akeep = (unsigned)strtoul(env, NULL, 0);
	int alev = VAUDIT_DEFAULT;
	if (alevel && !strcmp(alevel, "full"))
		alev = VAUDIT_FULL;
	else if (alevel && strcmp(alevel, "default"))
		return fail(L,
			    "jitsframe: level must be \"default\" or \"full\"");
	if (!jitdump)
		jitdump = env_set(JSF_ENV_JITDUMP);
	if (!perfmap && (env = getenv(JSF_ENV_PERFMAP)))
		perfmap = *env == '1';
	if (!no_mlock && (env = getenv(JSF_ENV_NO_MLOCK)))
		no_mlock = *env == '1';
	if (luamap < 0)
		luamap = (env = getenv(JSF_ENV_LUAMAP)) && *env == '1';
	if (!path || !*path)
		path = getenv(JSF_ENV_REGION);
	if (path && strlen(path) >= sizeof(m->base_path) - 16)
		return fail(L, "jitsframe: region path too long");
	if (!rkeep)
		rkeep = env_set(JSF_ENV_REGION_KEEP);
	size_t digits = rkeep ? strspn(rkeep, "0123456789") : 0;
	if (rkeep && strcmp(rkeep, "all") && (!digits || rkeep[digits]))
		return fail(L, "jitsframe: region_keep must be a count or "
			       "\"all\"");
	if (!rhist)
		rhist = env_set(JSF_ENV_REGION_HISTORY);
	uint32_t history = 0;
	if (rhist && !count_of(rhist, &history))
		return fail(L, "jitsframe: region_history must be a count "
			       "from 1 to 4294967295");
	pthread_mutex_lock(&m->mu);
	m->raw_fault = getenv(JSF_ENV_VM_RAWFAULT) != NULL;    /* tests only */
	m->lm_shift = getenv(JSF_ENV_VM_LUAMAP_SHIFT) != NULL; /* tests only */
	m->lmr_bug = getenv(JSF_ENV_VM_LUAMAP_RAWBUG) != NULL; /* tests only */
	m->want_luamap = luamap;
	if (quiet >= 0)
		m->quiet = quiet;
	struct lj_layout lay;
	int fresh = 0;
	if (m->layout == 0) {
		fresh = 1;
		const char *why = check_vm_kind(L);
		if (!why && lj_check_layout(ra, &lay, &why) == 0 &&
		    lay.cfa_jit != LJ_CFRAME_JIT)
			why = "trace frame size differs from the verified 96";
		m->layout = why ? -1 : 1;
		if (why) {
			snprintf(
			    m->refusal, sizeof(m->refusal),
			    "unsupported VM layout: %s; publishing nothing",
			    why);
			vm_log(m, "%s", m->refusal);
		}
	}
	if (m->layout < 0) {
		pthread_mutex_unlock(&m->mu);
		return fail(L, "jitsframe: %s", m->refusal);
	}
	if (m->region && m->pid == vm_self_pid() && path &&
	    strcmp(path, m->base_path) != 0) {
		pthread_mutex_unlock(&m->mu);
		return fail(L,
			    "jitsframe: this process already publishes to %s",
			    m->path);
	}
	if (!m->region) {
		snprintf(m->base_path, sizeof(m->base_path), "%s",
			 path ? path : "");
		m->replace = replace;
		snprintf(m->jd_dir, sizeof(m->jd_dir), "%s",
			 jitdump ? jitdump : "");
		m->want_perfmap = perfmap;
		m->no_mlock = no_mlock;
		m->history = history;
	}
	if (fresh && m->layout > 0) {
		vm_luavm_check(m, L, &lay);
		vm_prefault_self(L);
	}
	int err = vm_ensure_region(m);
	char made[sizeof(m->path)]; /* where, for the prune (outside m->mu) */
	memcpy(made, m->path, sizeof(made));
	int in_default =
	    !m->base_path[0]; /* (not a path of an earlier start) */
	if (!err)
		vm_luavm_publish(m);
	pthread_mutex_unlock(&m->mu);
	if (err)
		return fail(L, "jitsframe: cannot create the region %s: %s",
			    made, jsf_strerror(err));
	/* its own region, just made (or already there), is live: locked */
	if (in_default)
		prune_default_dir(m, made, rkeep);
	struct lstate *s = vm_new_state(m, L);
	if (s->util_ref == LUA_NOREF) {
		if (vm_require(L, "jit.util"))
			return fail(L, "jitsframe: no jit.util");
		s->util_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	}
	/* the builtins' names, for readers (before the first trace) */
	vm_ff_scan(m, L);
	if (alog && (!vaudit_level(&m->audit) ||
		     strcmp(alog, vaudit_path(&m->audit)))) {
		char aerr[512];
		struct vaudit_cfg ac = {alog, alev, amax, akeep, replace};
		pthread_mutex_lock(&m->mu);
		int e = vaudit_open(&m->audit, L, &ac, aerr, sizeof(aerr));
		pthread_mutex_unlock(&m->mu);
		if (e)
			return fail(L, "jitsframe: auditlog: %s", aerr);
	}
	if (vm_install(L, s))
		return fail(L, "jitsframe: cannot attach to trace events");
	vm_luavm_sync(); /* profile -- CMD */
	s->enabled = 1;
	lua_pushboolean(L, 1);
	lua_pushstring(L, m->path);
	return 2;
}

static int l_stop(lua_State *L)
{
	struct lstate *s = vm_get_state(L);
	if (!s || !s->enabled) {
		lua_pushboolean(L, 0);
		return 1;
	}
	struct vmod *m = s->m;
	s->enabled = 0;
	/* We stop following this state's traces: rows we could no longer
	 * keep true are withdrawn now. */
	pthread_mutex_lock(&m->mu);
	if (m->region && m->pid == vm_self_pid() && !m->failed)
		vm_on_flush(m, s);
	pthread_mutex_unlock(&m->mu);
	if (s->installed)
		vm_uninstall(L, s);
	pthread_mutex_lock(&m->mu);
	vaudit_close(&m->audit, "stopped by jitsframe.stop()");
	pthread_mutex_unlock(&m->mu);
	lua_pushboolean(L, 1);
	return 1;
}

static int l_stats(lua_State *L)
{
	struct vmod *m = &g_mod;
	pthread_mutex_lock(&m->mu);
	lua_createtable(L, 0, 12);
	lua_pushnumber(L, (lua_Number)m->traces);
	lua_setfield(L, -2, "traces");
	lua_pushnumber(L, (lua_Number)m->published);
	lua_setfield(L, -2, "published");
	lua_pushnumber(L, (lua_Number)m->skipped);
	lua_setfield(L, -2, "skipped");
	lua_pushnumber(L, (lua_Number)m->removed);
	lua_setfield(L, -2, "removed");
	lua_pushstring(L, m->path);
	lua_setfield(L, -2, "region");
	lua_pushboolean(L, m->failed);
	lua_setfield(L, -2, "failed");
	if (m->layout < 0) {
		lua_pushstring(L, m->refusal);
		lua_setfield(L, -2, "refused");
	}
	static const char *const lv[] = {"off", "unchecked", "on"};
	lua_pushstring(L, lv[m->lv_state + 1]);
	lua_setfield(L, -2, "luastack");
	if (m->lv_state < 0) {
		lua_pushstring(L, m->lv_why);
		lua_setfield(L, -2, "luastack_off");
	}
	if (m->last_skip[0]) {
		lua_pushstring(L, m->last_skip);
		lua_setfield(L, -2, "last_skip");
	}
	static const char *const raw[] = {"untried", "checking", "on", "off"};
	lua_pushstring(L, raw[m->raw]);
	lua_setfield(L, -2, "raw");
	lua_pushnumber(L, (lua_Number)m->raw_traces);
	lua_setfield(L, -2, "raw_traces");
	lua_pushnumber(L, (lua_Number)m->raw_checks);
	lua_setfield(L, -2, "raw_checked");
	if (m->raw == VM_RAW_OFF) {
		lua_pushstring(L, m->raw_why);
		lua_setfield(L, -2, "raw_off");
	}
	/* the Lua frames of traces (luamap.c) */
	static const char *const lm[] = {"checking", "on", "off"};
	lua_pushstring(L, lm[m->lm]);
	lua_setfield(L, -2, "luamap");
	lua_pushnumber(L, (lua_Number)m->lm_traces);
	lua_setfield(L, -2, "luamap_traces");
	lua_pushnumber(L, (lua_Number)m->lm_bytes);
	lua_setfield(L, -2, "luamap_bytes");
	lua_pushnumber(L, (lua_Number)m->lm_ns);
	lua_setfield(L, -2, "luamap_ns");
	if (m->lm == VM_LM_OFF) {
		lua_pushstring(L, m->lm_why);
		lua_setfield(L, -2, "luamap_off");
	}
	lua_pushstring(L, lm[m->lmr]);
	lua_setfield(L, -2, "luamap_raw");
	lua_pushnumber(L, (lua_Number)m->lmr_traces);
	lua_setfield(L, -2, "luamap_raw_traces");
	if (m->lmr == VM_LM_OFF) {
		lua_pushstring(L, m->lmr_why);
		lua_setfield(L, -2, "luamap_raw_off");
	}
	if (m->region && m->pid == vm_self_pid()) {
		/* resident pages (jitsframe.h): what is locked, what was
		 * refused (RLIMIT_MEMLOCK), and why; then the history */
		struct jsf_region_stats st = {.sz = sizeof(st)};
		if (jsf_region_stats(m->region, &st) == 0) {
			lua_pushnumber(L, (lua_Number)st.locked_bytes);
			lua_setfield(L, -2, "locked_bytes");
			lua_pushnumber(L, (lua_Number)st.lock_failures);
			lua_setfield(L, -2, "lock_failures");
			if (st.lock_errno) {
				lua_pushstring(L, strerror(st.lock_errno));
				lua_setfield(L, -2, "lock_error");
			}
			/* its size, and the removed traces it keeps for
			 * time queries and has dropped (region_history) */
			lua_pushnumber(L, (lua_Number)st.file_size);
			lua_setfield(L, -2, "region_bytes");
			lua_pushnumber(
			    L, (lua_Number)(st.logged_funcs - st.live_funcs));
			lua_setfield(L, -2, "history");
			lua_pushnumber(L, (lua_Number)st.dropped_history);
			lua_setfield(L, -2, "history_dropped");
		}
	}
	vaudit_stats(&m->audit, L);
	lua_setfield(L, -2, "auditlog");
	pthread_mutex_unlock(&m->mu);
	return 1;
}

/* rows(tr): what this state published for trace tr (tests, debugging). */
static int l_rows(lua_State *L)
{
	uint32_t tr = (uint32_t)luaL_checkinteger(L, 1);
	struct lstate *s = vm_get_state(L);
	if (!s || tr >= s->cap || !s->t[tr].nrows)
		return 0;
	struct tinfo *ti = &s->t[tr];
	lua_createtable(L, 0, 5);
	lua_pushnumber(L, (lua_Number)ti->start);
	lua_setfield(L, -2, "start");
	lua_pushinteger(L, ti->size);
	lua_setfield(L, -2, "size");
	lua_pushinteger(L, ti->spadj);
	lua_setfield(L, -2, "spadj");
	lua_pushboolean(L, ti->live);
	lua_setfield(L, -2, "live");
	lua_createtable(L, ti->nrows, 0);
	for (int i = 0; i < ti->nrows; i++) {
		lua_createtable(L, 0, 2);
		lua_pushinteger(L, ti->rows[i].offset);
		lua_setfield(L, -2, "offset");
		lua_pushinteger(L, ti->rows[i].cfa_offset);
		lua_setfield(L, -2, "cfa");
		lua_rawseti(L, -2, i + 1);
	}
	lua_setfield(L, -2, "rows");
	return 1;
}

__attribute__((destructor)) static void at_unload(void)
{
	struct vmod *m = &g_mod;
	/* Process exit (or the last state unloading us): mark the region
	 * closed cleanly. A forked child leaves its parent's region alone. */
	if (m->region && m->pid == getpid()) {
		jsf_region_destroy(m->region);
		jd_close(m->jd);
		pmap_close(m->pm);
	}
	m->region = NULL;
	vaudit_close(&m->audit, "end of log: process exit");
}

__attribute__((visibility("default"))) int luaopen_jitsframe(lua_State *L)
{
	static const luaL_Reg fns[] = {
	    {"start", l_start}, {"stop", l_stop}, {"stats", l_stats},
	    {"rows", l_rows},	{NULL, NULL},
	};
	lua_newtable(L);
	luaL_register(L, NULL, fns);
	vaudit_register(L);
	lua_pushstring(L, MOD_VERSION);
	lua_setfield(L, -2, "version");
	return 1;
}
