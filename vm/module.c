/* SPDX-License-Identifier: MIT */
/*
 * The Lua module `jitsframe`: attaches to LuaJIT's trace events with C
 * callbacks and publishes exact unwind rows for every trace into a region
 * (libjitsframe). See docs/VM.md.
 *
 *   local jsf = require("jitsframe")
 *   jsf.start{ region = PATH }   -- default: $JITSFRAME_REGION, else
 *                                 -- ${TMPDIR:-/tmp}/jitsframe-UID/PID.region
 *   jsf.start{ auditlog = PATH, level = "default"|"full" }  -- the auditlog
 *   jsf.stop()
 */
#include "audit.h"
#include "jitdump.h"
#include "jitsframe.h"
#include "jsfenv.h"
#include "lj.h"
#include "vmcheck.h"

#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MOD_VERSION JSF_VERSION_STRING

/* ------------------------------------------------------- process state */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct jsf_region *g_region;
static pid_t g_pid;	       /* process that owns g_region */
static unsigned g_epoch;       /* bumped when a region is (re)created */
static char g_path[4200];      /* the region's path */
static char g_base_path[4000]; /* as configured (explicit path or "") */
static int g_layout = 0;       /* 0 unknown, 1 verified, -1 refused */
static char g_refusal[256];
static int g_failed; /* an internal error stopped publishing */
static uint64_t g_traces, g_published, g_skipped, g_removed;
static char g_last_skip[128];
static int g_quiet;
static int g_replace; /* replace an existing file at an explicit path */
/* perf sinks (perfmap/): jitdump into a directory, and the perf map */
static char g_jd_dir[2048];
static int g_want_perfmap;
static struct jsf_jitdump *g_jd;
static struct jsf_perfmap *g_pm;

/* This process's pid, refreshed in a fork child (pthread_atfork), so that
 * the per-event fork check costs no system call. */
static pid_t g_self;
static void after_fork_child(void)
{
	g_self = getpid();
}
static void register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, after_fork_child);
}
static pid_t self_pid(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	if (!g_self) {
		g_self = getpid();
		pthread_once(&once, register_fork_handler);
	}
	return g_self;
}

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logmsg(const char *fmt, ...)
{
	if (g_quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("jitsframe: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ------------------------------------------------------ per-Lua-state */

struct tinfo {
	uint64_t start;
	uint32_t size;
	int32_t spadj;
	uint8_t nrows;
	uint8_t live;
	struct jsf_row rows[LJ_MAX_ROWS];
	uint32_t line;		/* Lua source line where the trace starts */
	uint64_t eh_lo, map_hi; /* where its jitdump unwind data went */
	char file[96];		/* its chunk name */
};

struct lstate {
	struct tinfo *t; /* indexed by trace number */
	uint32_t cap;
	uint32_t used; /* 1 + the highest trace number seen */
	int enabled;
	int installed; /* dispatcher attached, jit.attach wrapped */
	unsigned epoch;
	/* chains_ref: event name -> the handlers others attached, called
	 * after ours; disps_ref: event name -> our dispatcher for it */
	int chains_ref, orig_ref, disps_ref, util_ref;
};

static const char STATE_KEY = 0; /* its address is the registry key */

static struct lstate *get_state(lua_State *L)
{
	lua_pushlightuserdata(L, (void *)&STATE_KEY);
	lua_rawget(L, LUA_REGISTRYINDEX);
	struct lstate *s = lua_touserdata(L, -1);
	lua_pop(L, 1);
	return s;
}

static struct tinfo *slot(struct lstate *s, uint32_t tr)
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

/* ------------------------------------------------------------ region */

static int default_path(char *buf, size_t len)
{
	const char *tmp = getenv("TMPDIR");
	char dir[2048];
	if (!tmp || !*tmp)
		tmp = "/tmp";
	snprintf(dir, sizeof(dir), "%s/jitsframe-%u", tmp, (unsigned)getuid());
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	struct stat st;
	/* Ours, a real directory, not writable by others: else refuse. */
	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 022))
		return -EPERM;
	snprintf(buf, len, "%s/%d.region", dir, (int)getpid());
	return 0;
}

/* Create this process's region (g_mu held). */
static int open_region(void)
{
	int err;
	struct jsf_region_opts o = {.sz = sizeof(o)};
	if (g_base_path[0]) {
		if (g_pid && g_pid != getpid()) /* a forked child: own file */
			snprintf(g_path, sizeof(g_path), "%s-%d", g_base_path,
				 (int)getpid());
		else
			snprintf(g_path, sizeof(g_path), "%s", g_base_path);
	} else {
		err = default_path(g_path, sizeof(g_path));
		if (err) {
			logmsg(
			    "cannot prepare the default region directory: %s",
			    strerror(-err));
			return err;
		}
		o.flags = JSF_REGION_REPLACE; /* stale file of a reused pid */
	}
	if (g_replace)
		o.flags = JSF_REGION_REPLACE;
	err = jsf_region_create(&g_region, g_path, &o);
	if (err) {
		logmsg("cannot create region %s: %s", g_path,
		       jsf_strerror(err));
		return err;
	}
	g_pid = getpid();
	g_epoch++;
	if (g_jd_dir[0]) {
		err = jsf_jitdump_open(&g_jd, g_jd_dir);
		if (err)
			logmsg("cannot create %s/jit-%d.dump: %s", g_jd_dir,
			       (int)getpid(), strerror(-err));
	}
	if (g_want_perfmap) {
		err = jsf_perfmap_open(&g_pm);
		if (err)
			logmsg("cannot create /tmp/perf-%d.map: %s",
			       (int)getpid(), strerror(-err));
	}
	return 0;
}

/* Make sure the region belongs to this process (fork), g_mu held. */
static int ensure_region(void)
{
	if (g_region && g_pid != self_pid()) {
		jsf_region_detach(g_region); /* the parent's: leave it alone */
		g_region = NULL;
		/* the parent's jitdump and perf map are its own too */
		if (g_jd)
			jsf_jitdump_close(g_jd);
		if (g_pm)
			jsf_perfmap_close(g_pm);
		g_jd = NULL;
		g_pm = NULL;
	}
	if (!g_region)
		return open_region();
	return 0;
}

static void stop_publishing(const char *what, int err)
{
	if (!g_failed)
		logmsg("%s failed (%s): no more rows will be published", what,
		       jsf_strerror(err));
	g_failed = 1;
}

/* The name perf shows: TRACE_n::chunk:line. */
static void trace_name(const struct tinfo *ti, uint32_t tr, char *buf,
		       size_t len)
{
	snprintf(buf, len, "TRACE_%u::%s:%u", tr, ti->file[0] ? ti->file : "?",
		 ti->line);
}

/* Published traces overlapping [lo, hi) (jitdump layout). */
static struct lstate *g_nb_state;
static uint32_t neighbours(uint64_t lo, uint64_t hi, struct jsf_code_info *out,
			   uint32_t max, void *ctx)
{
	struct lstate *s = ctx;
	uint32_t n = 0;
	for (uint32_t i = 0; s && i < s->used && n < max; i++) {
		const struct tinfo *t = &s->t[i];
		uint64_t a = t->start,
			 e = t->map_hi > a + t->size ? t->map_hi : a + t->size;
		if (!t->live || e <= lo || a >= hi)
			continue;
		out[n++] = (struct jsf_code_info){
		    t->start, t->size, t->rows, t->nrows, t->eh_lo, t->map_hi};
	}
	return n;
}

/* The perf sinks: code (read from the trace's own memory), rows, line. */
static void publish_perf(struct tinfo *ti, uint32_t tr, uint64_t now)
{
	char name[160];
	if (!g_jd && !g_pm)
		return;
	trace_name(ti, tr, name, sizeof(name));
	if (g_jd) {
		/* perf's line table ends at the last entry: give the trace's
		 * line to its first and its last byte. */
		const char *file = ti->file[0] ? ti->file : "?";
		struct jsf_jd_placed placed;
		struct jsf_line line[2] = {
		    {ti->start, ti->line, file},
		    {ti->start + ti->size - 1, ti->line, file}};
		int err = jsf_jitdump_code(
		    g_jd, ti->start, (const void *)(uintptr_t)ti->start,
		    ti->size, name, ti->rows, ti->nrows, line, ti->line ? 2 : 0,
		    now, neighbours, g_nb_state, &placed);
		ti->eh_lo = placed.eh_lo;
		ti->map_hi = placed.map_hi;
		if (err) {
			logmsg("writing the jitdump failed (%s); it stops here",
			       strerror(-err));
			jsf_jitdump_close(g_jd);
			g_jd = NULL;
		}
	}
	if (g_pm && jsf_perfmap_add(g_pm, ti->start, ti->size, name)) {
		logmsg("writing the perf map failed; it stops here");
		jsf_perfmap_close(g_pm);
		g_pm = NULL;
	}
}

static void publish(struct tinfo *ti, uint32_t tr, uint64_t now)
{
	int err = jsf_region_add(g_region, ti->start, ti->size, ti->rows,
				 ti->nrows, now);
	if (err == 0) {
		ti->live = 1;
		g_published++;
		publish_perf(ti, tr, now);
	} else if (err == -EEXIST) {
		g_skipped++;
		snprintf(g_last_skip, sizeof(g_last_skip),
			 "overlaps a published trace");
	} else {
		stop_publishing("adding a trace", err);
	}
}

static void unpublish(struct tinfo *ti, uint64_t now)
{
	if (!ti->live)
		return;
	ti->live = 0;
	int err = jsf_region_remove(g_region, ti->start, now);
	if (err == 0)
		g_removed++;
	else if (err != -ENOENT)
		stop_publishing("removing a trace", err);
}

/* After a fork or a new region: publish this state's known traces. */
static void sync_state(struct lstate *s)
{
	if (s->epoch == g_epoch)
		return;
	uint64_t now = jsf_now_ns();
	for (uint32_t i = 0; i < s->used; i++)
		if (s->t[i].live) {
			s->t[i].live = 0;
			publish(&s->t[i], i, now);
		}
	s->epoch = g_epoch;
}

/* ------------------------------------------------------------ events */

/* Call util[name](args...) leaving nres results on the stack. */
static int util_call(lua_State *L, struct lstate *s, const char *name,
		     int nargs, int nres)
{
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->util_ref);
	lua_getfield(L, -1, name);
	lua_remove(L, -2);
	lua_insert(L, -1 - nargs);
	return lua_pcall(L, nargs, nres, 0);
}

static void skip(uint32_t tr, const char *why)
{
	g_skipped++;
	snprintf(g_last_skip, sizeof(g_last_skip), "trace %u: %s", tr, why);
}

static void on_stop(lua_State *L, struct lstate *s, uint32_t tr)
{
	int top = lua_gettop(L);
	g_traces++;
	struct tinfo *ti = slot(s, tr);
	if (!ti) {
		stop_publishing("allocating trace state", -ENOMEM);
		return;
	}
	uint64_t now = jsf_now_ns();
	/* A stop for a known number: the old trace is gone (freed by the GC,
	 * which sends no event). */
	unpublish(ti, now);
	uint32_t line = ti->line;
	char file[sizeof(ti->file)];
	memcpy(file, ti->file, sizeof(file));
	memset(ti, 0, sizeof(*ti));
	ti->line = line; /* from the "start" event */
	memcpy(ti->file, file, sizeof(file));
	lua_pushinteger(L, tr);
	if (util_call(L, s, "tracemc", 1, 3) || !lua_isstring(L, -3)) {
		skip(tr, "no machine code");
		goto out;
	}
	size_t len;
	const uint8_t *mc = (const uint8_t *)lua_tolstring(L, -3, &len);
	uint64_t addr = (uint64_t)lua_tonumber(L, -2);
	uint32_t loop = (uint32_t)lua_tonumber(L, -1);
	lua_pushinteger(L, tr);
	lua_pushinteger(L, 0);
	if (util_call(L, s, "traceir", 2, 4)) {
		skip(tr, "traceir failed");
		goto out;
	}
	uint32_t parent = (uint32_t)lua_tointeger(L, -2); /* op1 of BASE */
	struct lj_trace_in in = {mc, (uint32_t)len, loop, tr, parent != 0, 0};
	if (parent) {
		if (parent >= s->cap || !s->t[parent].nrows) {
			skip(tr, "parent trace not known");
			goto out;
		}
		in.parent_spadj = s->t[parent].spadj;
	}
	struct lj_trace_out o = {.why = "trace too large"};
	if (len > UINT32_MAX / 2 || lj_trace_rows(&in, &o)) {
		skip(tr, o.why);
		goto out;
	}
	ti->start = addr;
	ti->size = (uint32_t)len;
	ti->spadj = o.spadj;
	ti->nrows = (uint8_t)o.nrows;
	memcpy(ti->rows, o.rows, sizeof(o.rows));
	publish(ti, tr, now);
out:
	lua_settop(L, top);
}

/* "start": tr, func, pc: remember where the trace begins in the source. */
static void on_start(lua_State *L, struct lstate *s, uint32_t tr)
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

static void on_flush(struct lstate *s)
{
	uint64_t now = jsf_now_ns();
	for (uint32_t i = 0; i < s->used; i++) {
		unpublish(&s->t[i], now);
		memset(&s->t[i], 0, sizeof(s->t[i]));
	}
}

static void handle(lua_State *L, struct lstate *s)
{
	const char *what = lua_tostring(L, 1);
	if (!what)
		return;
	int stop = !strcmp(what, "stop"), flush = !strcmp(what, "flush");
	int start = !strcmp(what, "start");
	pthread_mutex_lock(&g_mu);
	g_nb_state = s;
	if (!stop && !flush && !start) {
		/* abort: for the auditlog only */
	} else if (!g_failed && ensure_region() == 0) {
		sync_state(s);
		if (stop)
			on_stop(L, s, (uint32_t)lua_tointeger(L, 2));
		else if (flush)
			on_flush(s);
		else if (g_jd || g_pm) /* start: names are for perf only */
			on_start(L, s, (uint32_t)lua_tointeger(L, 2));
	} else if (!g_failed) {
		g_failed = 1;
	}
	if (vaudit_level()) {
		int32_t spadj = INT32_MIN;
		lua_Integer tr = lua_tointeger(L, 2);
		if (stop && tr > 0 && (uint32_t)tr < s->cap && s->t[tr].nrows)
			spadj = s->t[tr].spadj;
		vaudit_trace(L, spadj);
	}
	pthread_mutex_unlock(&g_mu);
}

/* The one handler LuaJIT holds for each event we multiplex ("trace"; also
 * "record" and "texit" for a full auditlog): ours first, then the chain of
 * handlers attached by others (-jv, -jdump, jit.attach). Upvalue 1 is the
 * event's name. */
static int dispatcher(lua_State *L)
{
	int n = lua_gettop(L);
	struct lstate *s = get_state(L);
	if (!s)
		return 0;
	const char *ev = lua_tostring(L, lua_upvalueindex(1));
	if (s->enabled && ev) {
		if (!strcmp(ev, "trace")) {
			handle(L, s);
		} else if (vaudit_level() >= VAUDIT_FULL) {
			pthread_mutex_lock(&g_mu);
			if (!strcmp(ev, "record"))
				vaudit_record(L);
			else if (!strcmp(ev, "texit"))
				vaudit_texit(L);
			pthread_mutex_unlock(&g_mu);
		}
	}
	lua_settop(L, n);
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->chains_ref);
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_rawget(L, -2);
	if (!lua_istable(L, -1)) {
		lua_settop(L, n);
		return 0;
	}
	int chain = lua_gettop(L);
	for (int i = 1;; i++) {
		lua_rawgeti(L, chain, i);
		if (lua_isnil(L, -1)) {
			lua_pop(L, 1);
			break;
		}
		for (int a = 1; a <= n; a++)
			lua_pushvalue(L, a);
		if (lua_pcall(L, n, 0, 0)) {
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

static void chain_remove(lua_State *L, int t, int pos)
{
	int n = (int)lua_objlen(L, t);
	for (int i = pos; i < n; i++) {
		lua_rawgeti(L, t, i + 1);
		lua_rawseti(L, t, i);
	}
	lua_pushnil(L);
	lua_rawseti(L, t, n);
}

/* jit.attach, as others see it while we are installed. */
static int attach_wrapper(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TFUNCTION);
	struct lstate *s = get_state(L);
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
			}
			return 0;
		}
	} else { /* detach: from every chain, then from LuaJIT */
		lua_pushnil(L);
		while (lua_next(L, chains)) {
			int t = lua_gettop(L);
			int pos = lua_istable(L, t) ? chain_find(L, t, 1) : 0;
			if (pos)
				chain_remove(L, t, pos);
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

/* Require a module, leaving it on the stack; 0 on success. */
static int require(lua_State *L, const char *name)
{
	lua_getglobal(L, "require");
	lua_pushstring(L, name);
	return lua_pcall(L, 1, 1, 0);
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
	lua_pushstring(L, ev);
	lua_pushcclosure(L, dispatcher, 1);
	int disp = lua_gettop(L);
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->chains_ref);
	lua_newtable(L);
	int chain = lua_gettop(L);
	lua_pushvalue(L, chain);
	lua_setfield(L, -3, ev);
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
				if (lua_isfunction(L, -1))
					lua_rawseti(L, chain, 1);
				else
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
static int install(lua_State *L, struct lstate *s)
{
	int top = lua_gettop(L);
	if (!s->installed) {
		if (require(L, "jit") || !lua_istable(L, -1))
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
	if (vaudit_level() >= VAUDIT_FULL &&
	    (hook_event(L, s, "record") || hook_event(L, s, "texit")))
		goto fail;
	lua_settop(L, top);
	return 0;
fail:
	lua_settop(L, top);
	return -1;
}

/* Give LuaJIT back its own attach, leaving others' handlers attached. */
static void uninstall(lua_State *L, struct lstate *s)
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
	if (require(L, "jit") == 0 && lua_istable(L, -1)) {
		lua_rawgeti(L, LUA_REGISTRYINDEX, s->orig_ref);
		lua_setfield(L, -2, "attach");
	}
	luaL_unref(L, LUA_REGISTRYINDEX, s->chains_ref);
	luaL_unref(L, LUA_REGISTRYINDEX, s->disps_ref);
	luaL_unref(L, LUA_REGISTRYINDEX, s->orig_ref);
	s->chains_ref = s->disps_ref = s->orig_ref = LUA_NOREF;
	s->installed = 0;
	lua_settop(L, top);
}

/* -------------------------------------------------------- the Lua API */

static int state_gc(lua_State *L)
{
	struct lstate *s = lua_touserdata(L, 1);
	/* The state is closing: its machine code is about to be freed. */
	pthread_mutex_lock(&g_mu);
	if (g_region && g_pid == self_pid() && !g_failed)
		on_flush(s);
	pthread_mutex_unlock(&g_mu);
	free(s->t);
	s->t = NULL;
	s->cap = 0;
	return 0;
}

static struct lstate *new_state(lua_State *L)
{
	struct lstate *s = get_state(L);
	if (s)
		return s;
	lua_pushlightuserdata(L, (void *)&STATE_KEY);
	s = lua_newuserdata(L, sizeof(*s));
	memset(s, 0, sizeof(*s));
	s->chains_ref = s->orig_ref = s->disps_ref = s->util_ref = LUA_NOREF;
	lua_newtable(L);
	lua_pushcfunction(L, state_gc);
	lua_setfield(L, -2, "__gc");
	lua_setmetatable(L, -2);
	lua_rawset(L, LUA_REGISTRYINDEX);
	return s;
}

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
	if (require(L, "jit") || !lua_istable(L, -1)) {
		why = "not LuaJIT (no jit module)";
		goto out;
	}
	lua_getfield(L, -1, "arch");
	if (!lua_isstring(L, -1) || strcmp(lua_tostring(L, -1), "x64")) {
		why = "not an x64 LuaJIT";
		goto out;
	}
	if (require(L, "ffi") || !lua_istable(L, -1)) {
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

static int l_start(lua_State *L)
{
	/* Called by the interpreter: our return address is inside it. */
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	const char *path = NULL, *jitdump = NULL, *alog = NULL, *alevel = NULL;
	int replace = 0, quiet = -1, perfmap = 0;
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
		lua_pop(L, 9);
	}
	if (!alog && getenv(JSF_ENV_AUDITLOG) && *getenv("JITSFRAME_AUDITLOG"))
		alog = getenv(JSF_ENV_AUDITLOG);
	if (!alevel && getenv(JSF_ENV_AUDITLOG_LEVEL) &&
	    *getenv("JITSFRAME_AUDITLOG_LEVEL"))
		alevel = getenv(JSF_ENV_AUDITLOG_LEVEL);
	if (getenv(JSF_ENV_AUDITLOG_MAX) && *getenv("JITSFRAME_AUDITLOG_MAX"))
		amax = strtoull(getenv(JSF_ENV_AUDITLOG_MAX), NULL, 0);
	if (getenv(JSF_ENV_AUDITLOG_KEEP) && *getenv("JITSFRAME_AUDITLOG_KEEP"))
		akeep =
		    (unsigned)strtoul(getenv(JSF_ENV_AUDITLOG_KEEP), NULL, 0);
	int alev = VAUDIT_DEFAULT;
	if (alevel && !strcmp(alevel, "full"))
		alev = VAUDIT_FULL;
	else if (alevel && strcmp(alevel, "default"))
		return fail(L,
			    "jitsframe: level must be \"default\" or \"full\"");
	if (!jitdump && getenv(JSF_ENV_JITDUMP) && *getenv("JITSFRAME_JITDUMP"))
		jitdump = getenv(JSF_ENV_JITDUMP);
	if (!perfmap && getenv(JSF_ENV_PERFMAP))
		perfmap = *getenv(JSF_ENV_PERFMAP) == '1';
	if (!path || !*path)
		path = getenv(JSF_ENV_REGION);
	if (path && strlen(path) >= sizeof(g_base_path) - 16)
		return fail(L, "jitsframe: region path too long");
	pthread_mutex_lock(&g_mu);
	if (quiet >= 0)
		g_quiet = quiet;
	if (g_layout == 0) {
		struct lj_layout lay;
		const char *why = check_vm_kind(L);
		if (!why && lj_check_layout(ra, &lay, &why) == 0 &&
		    lay.cfa_jit != LJ_CFRAME_JIT)
			why = "trace frame size differs from the verified 96";
		g_layout = why ? -1 : 1;
		if (why) {
			snprintf(
			    g_refusal, sizeof(g_refusal),
			    "unsupported VM layout: %s; publishing nothing",
			    why);
			logmsg("%s", g_refusal);
		}
	}
	if (g_layout < 0) {
		pthread_mutex_unlock(&g_mu);
		return fail(L, "jitsframe: %s", g_refusal);
	}
	if (g_region && g_pid == self_pid() && path &&
	    strcmp(path, g_base_path) != 0) {
		pthread_mutex_unlock(&g_mu);
		return fail(L,
			    "jitsframe: this process already publishes to %s",
			    g_path);
	}
	if (!g_region) {
		snprintf(g_base_path, sizeof(g_base_path), "%s",
			 path ? path : "");
		g_replace = replace;
		snprintf(g_jd_dir, sizeof(g_jd_dir), "%s",
			 jitdump ? jitdump : "");
		g_want_perfmap = perfmap;
	}
	int err = ensure_region();
	pthread_mutex_unlock(&g_mu);
	if (err)
		return fail(L, "jitsframe: cannot create the region %s: %s",
			    g_path, jsf_strerror(err));
	struct lstate *s = new_state(L);
	if (s->util_ref == LUA_NOREF) {
		if (require(L, "jit.util"))
			return fail(L, "jitsframe: no jit.util");
		s->util_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	}
	if (alog && (!vaudit_level() || strcmp(alog, vaudit_path()))) {
		char aerr[512];
		struct vaudit_cfg ac = {alog, alev, amax, akeep, replace};
		pthread_mutex_lock(&g_mu);
		int e = vaudit_open(L, &ac, aerr, sizeof(aerr));
		pthread_mutex_unlock(&g_mu);
		if (e)
			return fail(L, "jitsframe: auditlog: %s", aerr);
	}
	if (install(L, s))
		return fail(L, "jitsframe: cannot attach to trace events");
	s->enabled = 1;
	lua_pushboolean(L, 1);
	lua_pushstring(L, g_path);
	return 2;
}

static int l_stop(lua_State *L)
{
	struct lstate *s = get_state(L);
	if (!s || !s->enabled) {
		lua_pushboolean(L, 0);
		return 1;
	}
	s->enabled = 0;
	/* We stop following this state's traces: rows we could no longer
	 * keep true are withdrawn now. */
	pthread_mutex_lock(&g_mu);
	if (g_region && g_pid == self_pid() && !g_failed)
		on_flush(s);
	pthread_mutex_unlock(&g_mu);
	if (s->installed)
		uninstall(L, s);
	pthread_mutex_lock(&g_mu);
	vaudit_close("stopped by jitsframe.stop()");
	pthread_mutex_unlock(&g_mu);
	lua_pushboolean(L, 1);
	return 1;
}

static int l_stats(lua_State *L)
{
	pthread_mutex_lock(&g_mu);
	lua_createtable(L, 0, 8);
	lua_pushnumber(L, (lua_Number)g_traces);
	lua_setfield(L, -2, "traces");
	lua_pushnumber(L, (lua_Number)g_published);
	lua_setfield(L, -2, "published");
	lua_pushnumber(L, (lua_Number)g_skipped);
	lua_setfield(L, -2, "skipped");
	lua_pushnumber(L, (lua_Number)g_removed);
	lua_setfield(L, -2, "removed");
	lua_pushstring(L, g_path);
	lua_setfield(L, -2, "region");
	lua_pushboolean(L, g_failed);
	lua_setfield(L, -2, "failed");
	if (g_layout < 0) {
		lua_pushstring(L, g_refusal);
		lua_setfield(L, -2, "refused");
	}
	if (g_last_skip[0]) {
		lua_pushstring(L, g_last_skip);
		lua_setfield(L, -2, "last_skip");
	}
	vaudit_stats(L);
	lua_setfield(L, -2, "auditlog");
	pthread_mutex_unlock(&g_mu);
	return 1;
}

/* rows(tr): what this state published for trace tr (tests, debugging). */
static int l_rows(lua_State *L)
{
	uint32_t tr = (uint32_t)luaL_checkinteger(L, 1);
	struct lstate *s = get_state(L);
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
	/* Process exit (or the last state unloading us): mark the region
	 * closed cleanly. A forked child leaves its parent's region alone. */
	if (g_region && g_pid == getpid()) {
		jsf_region_destroy(g_region);
		jsf_jitdump_close(g_jd);
		jsf_perfmap_close(g_pm);
	}
	g_region = NULL;
	vaudit_close("end of log: process exit");
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
