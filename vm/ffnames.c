/* SPDX-License-Identifier: MIT */
/*
 * ffnames.c: the names of LuaJIT's builtins written in C (string.gsub,
 * table.sort, error, tostring...) for out-of-process readers, published in
 * the region's runtime area as "LJFF" records (docs/ABI.md 1.6). A stripped
 * luajit (Debian's) has no symbol for them: a profile shows
 * [luajit+0x6f610] where the program spends its time in string.gsub.
 *
 * Each builtin's C address and fast-function id are LuaJIT's own answer
 * (jit.util.funcinfo on the function object), its name LuaJIT's own too
 * (jit.vmdef.ffnames[ffid]). The functions are found in the library tables
 * package.loaded holds (the libraries, their userdata's metatables: io's
 * file methods, ffi.C's), and the three iterators the builtins return
 * (ipairs', string.gmatch's, coroutine.wrap's). Libraries loaded later
 * (ffi, table.new, string.buffer) are looked for again at the 1st trace
 * event, the 2nd, the 4th, the 8th... (with modules' C functions,
 * cfnames.c).
 *
 * An address is named only when no other builtin can be at it. LuaJIT
 * gives a fast function with no C fallback of its own the handler of the
 * one registered before it (lj_lib.c: "Copy handler from previous
 * function"; math.abs, floor and ceil share one), so an address is named
 * when no other builtin found has it and the ids either side, where they
 * belong to the same library, have been found (a missing one might share
 * it; not one that is a module of its own, such as table.new, which
 * lj_lib_postreg makes with its own C function). What a reader then names
 * is exactly the C function at that address.
 */
#include "vm.h" /* (audit's face: alog_st16/32/64, little-endian) */

#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "jsfenv.h"

#define VM_FF_MAX 512 /* fast-function ids (LuaJIT 2.1: some 230) */
#define VM_FF_FIRST 1 /* the first look again, in trace events */

struct vm_ff {
	int n;		       /* ids 0..n-1 in ffnames */
	char *name[VM_FF_MAX]; /* jit.vmdef.ffnames */
	uint64_t addr[VM_FF_MAX];
	uint8_t state[VM_FF_MAX]; /* 0 open, 1 published, 2 never */
	uint8_t own[VM_FF_MAX];	  /* a module of its own: its own C code */
	int nkeys;
	char *key[VM_FF_MAX]; /* package.loaded keys still to look at */
	uint8_t keydone[VM_FF_MAX];
	int found, found_rec; /* addresses found; as of the last record */
	struct vm_cf *cf;     /* the C functions of modules (cfnames.c) */
	int cf_rec;	      /* of them, found as of the last record */
	size_t loaded_n;      /* package.loaded's entries at the last look */
	int looked;
	int shift;		/* JSF_ENV_VM_FFNAME_SHIFT: tests only */
	uint8_t rec[VM_RT_MAX]; /* every LJFF record made, for each region */
	uint32_t reclen;
	struct vm_rtpub pub;
};

/* The library of a builtin's name: up to its last dot ("io.method" of
 * "io.method.read"), "_G" for the base library's ("pcall"). */
static size_t group_len(const char *s)
{
	const char *d = strrchr(s, '.');
	return d ? (size_t)(d - s) : 0;
}

static int same_group(const char *a, const char *b)
{
	size_t la = group_len(a), lb = group_len(b);
	return la == lb && !memcmp(a, b, la);
}

static void add_key(struct vm_ff *ff, const char *k, size_t len)
{
	for (int i = 0; i < ff->nkeys; i++)
		if (strlen(ff->key[i]) == len && !memcmp(ff->key[i], k, len))
			return;
	if (ff->nkeys == VM_FF_MAX)
		return;
	char *s = strndup(k, len);
	if (!s)
		return;
	ff->key[ff->nkeys++] = s;
}

void vm_rt_names_head(uint8_t *b, const char *tag, uint32_t len, uint64_t base,
		      unsigned cnt)
{
	memcpy(b, tag, 4); /* (no NUL) */
	alog_st16(b + 4, 1);
	alog_st16(b + 6, (uint16_t)len);
	alog_st64(b + 8, base);
	alog_st16(b + 16, (uint16_t)cnt);
	alog_st16(b + 18, 0);
}

uint32_t vm_rt_names_entry(uint8_t *b, int32_t d, const char *nm, size_t nl)
{
	alog_st32(b, (uint32_t)d);
	b[4] = (uint8_t)nl;
	for (size_t i = 0; i < nl; i++) /* (no NUL) */
		b[5 + i] = (uint8_t)nm[i];
	return 5 + (uint32_t)nl;
}

void vm_rt_publish(struct vmod *m, const uint8_t *rec, uint32_t reclen,
		   struct vm_rtpub *p, const char *what)
{
	if (p->epoch != m->epoch) { /* a new region: all of them */
		p->epoch = m->epoch;
		p->len = 0;
	}
	if (p->len == reclen)
		return;
	int err =
	    jsf_region_append_runtime(m->region, rec + p->len, reclen - p->len);
	if (err)
		vm_log(m, "cannot publish %s: %s", what, jsf_strerror(err));
	p->len = reclen; /* (once, even when refused) */
}

uint64_t vm_cfunc_addr(lua_State *L, int fi, int idx, lua_Integer *ffid)
{
	lua_pushvalue(L, fi);
	lua_pushvalue(L, idx);
	lua_call(L, 1, 1);
	lua_getfield(L, -1, "ffid");
	lua_getfield(L, -2, "addr");
	*ffid = lua_isnil(L, -2) ? -1 : lua_tointeger(L, -2);
	uint64_t a = (uint64_t)lua_tonumber(L, -1);
	lua_pop(L, 3);
	return a;
}

/* The function at idx: its id and address (jit.util.funcinfo at fi). */
static void note(struct vm_ff *ff, lua_State *L, int fi, int idx)
{
	if (!lua_iscfunction(L, idx))
		return;
	lua_Integer id;
	uint64_t a = vm_cfunc_addr(L, fi, idx, &id);
	if (id < 2 || id >= ff->n || !a || ff->addr[id])
		return;
	ff->addr[id] = a;
	ff->found++;
	/* the iterators a builtin returns, which no table holds */
	const char *nm = ff->name[id];
	if (!strcmp(nm, "ipairs") || !strcmp(nm, "string.gmatch") ||
	    !strcmp(nm, "coroutine.wrap")) {
		lua_pushvalue(L, idx);
		if (nm[0] == 'i')
			lua_newtable(L);
		else if (nm[0] == 's')
			lua_pushliteral(L, ""), lua_pushliteral(L, "");
		else
			lua_pushvalue(L, fi); /* any function: never resumed */
		lua_call(L, nm[0] == 's' ? 2 : 1, 1);
		note(ff, L, fi, lua_gettop(L));
		lua_pop(L, 1);
	}
}

static void walk(struct vm_ff *ff, lua_State *L, int fi, int t, int depth)
{
	lua_pushnil(L);
	while (lua_next(L, t)) {
		int v = lua_gettop(L);
		if (lua_isfunction(L, v)) {
			note(ff, L, fi, v);
		} else if (depth == 0 && lua_isuserdata(L, v) &&
			   lua_getmetatable(L, v)) { /* io.stdout, ffi.C */
			int mt = lua_gettop(L);
			walk(ff, L, fi, mt, 1);
			lua_pushliteral(L, "__index");
			lua_rawget(L, mt);
			if (lua_istable(L, -1))
				walk(ff, L, fi, lua_gettop(L), 1);
			lua_settop(L, mt - 1);
		}
		lua_settop(L, v - 1);
	}
}

/* lua_pcall'd: upvalue 1 the vm_ff. Looks at every key not yet found. */
static int scan(lua_State *L)
{
	struct vm_ff *ff = lua_touserdata(L, lua_upvalueindex(1));
	/* jit.util as loaded (the module requires it at start): no call of
	 * the host's `require`, which may be its own */
	lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
	int loaded = lua_gettop(L);
	if (!lua_istable(L, loaded))
		return 0;
	/* nothing loaded since the last look: nothing new to find there
	 * (most looks; a walk of the modules' tables is tens of us) */
	size_t cnt = 0;
	lua_pushnil(L);
	while (lua_next(L, loaded)) {
		cnt++;
		lua_pop(L, 1);
	}
	if (ff->looked && cnt == ff->loaded_n)
		return 0;
	ff->looked = 1;
	ff->loaded_n = cnt;
	lua_pushliteral(L, "jit.util");
	lua_rawget(L, loaded);
	if (!lua_istable(L, -1))
		return 0;
	lua_pushliteral(L, "funcinfo");
	lua_rawget(L, -2);
	int fi = lua_gettop(L);
	if (!lua_iscfunction(L, fi))
		return 0;
	for (int i = 0; i < ff->nkeys; i++) {
		if (ff->keydone[i])
			continue;
		lua_getfield(L, loaded, ff->key[i]);
		if (lua_istable(L, -1)) {
			ff->keydone[i] = 1;
			walk(ff, L, fi, lua_gettop(L), 0);
		} else if (lua_isfunction(L, -1)) {
			ff->keydone[i] = 1;
			note(ff, L, fi, lua_gettop(L));
		}
		lua_settop(L, fi);
	}
	if (ff->cf)
		vm_cf_walk(ff->cf, L, loaded, fi);
	return 0;
}

/* LuaJIT's names, and the keys to look for: each library ("string",
 * "_G"), each builtin that is a module of its own ("table.new"). 0, or -1
 * without jit.vmdef. */
static int load_names(struct vm_ff *ff, lua_State *L)
{
	int top = lua_gettop(L);
	if (vm_require(L, "jit.vmdef") || !lua_istable(L, -1)) {
		lua_settop(L, top);
		return -1;
	}
	lua_getfield(L, -1, "ffnames");
	if (!lua_istable(L, -1)) {
		lua_settop(L, top);
		return -1;
	}
	lua_getfield(L, LUA_REGISTRYINDEX, "_PRELOAD");
	int pre = lua_gettop(L);
	lua_pushvalue(L, -2);
	for (int id = 0; id < VM_FF_MAX; id++) {
		lua_rawgeti(L, -1, id);
		const char *s = lua_tostring(L, -1);
		if (s && id >= 2 && (ff->name[id] = strdup(s))) {
			size_t g = group_len(s);
			add_key(ff, g ? s : "_G", g ? g : 2);
			if (g == 6 &&
			    !memcmp(s, "buffer", 6)) /* string.buffer's */
				add_key(ff, "string.buffer", 13);
			/* require("table.new"): lj_lib_postreg gives it its
			 * own C function; it shares no other's. Its name is
			 * a key of package.loaded once required; no other
			 * builtin's is (looking them all up again at every
			 * look cost ~200 lua_getfield) */
			if (lua_istable(L, pre)) {
				lua_getfield(L, pre, s);
				ff->own[id] = lua_isfunction(L, -1);
				lua_pop(L, 1);
			}
			if (ff->own[id])
				add_key(ff, s, strlen(s));
		}
		lua_pop(L, 1);
		if (s)
			ff->n = id + 1;
	}
	lua_settop(L, top);
	return ff->n > 2 ? 0 : -1;
}

/* The builtins that can now be named (above), as one more LJFF record. */
static void make_record(struct vm_ff *ff)
{
	uint8_t *b = ff->rec + ff->reclen;
	uint32_t room = VM_RT_MAX - LV_AREA_SIZE - ff->reclen, len = 20;
	uint64_t base = 0;
	unsigned cnt = 0;
	for (int k = 2; k < ff->n; k++) {
		if (ff->state[k] || !ff->addr[k])
			continue;
		int ok = 1;
		for (int j = 2; j < ff->n && ok; j++)
			if (j != k && ff->addr[j] == ff->addr[k])
				ok = 0;
		if (!ok) { /* shared: never (a reader could not tell) */
			ff->state[k] = 2;
			continue;
		}
		for (int j = k - 1; j <= k + 1; j += 2)
			if (j >= 2 && j < ff->n && ff->name[j] && !ff->own[j] &&
			    same_group(ff->name[j], ff->name[k]) &&
			    !ff->addr[j])
				ok = 0; /* might share it: wait for it */
		if (!ok)
			continue;
		const char *nm = ff->name[k];
		if (ff->shift && k + 1 < ff->n && ff->name[k + 1])
			nm = ff->name[k + 1]; /* planted: the next id's name */
		size_t nl = strlen(nm);
		if (!cnt)
			base = ff->addr[k];
		int64_t d = (int64_t)(ff->addr[k] - base);
		if (nl > 255 || d != (int32_t)d) {
			ff->state[k] = 2;
			continue;
		}
		if (len + 5 + nl > room)
			break; /* the area is full: the rest unnamed */
		len += vm_rt_names_entry(b + len, (int32_t)d, nm, nl);
		ff->state[k] = 1;
		cnt++;
	}
	if (!cnt)
		return;
	vm_rt_names_head(b, "LJFF", len, base, cnt);
	ff->reclen += len;
}

static void ff_free(struct vm_ff *ff)
{
	for (int i = 0; ff && i < VM_FF_MAX; i++)
		free(ff->name[i]), free(ff->key[i]);
	if (ff)
		vm_cf_free(ff->cf);
	free(ff);
}

/* Outside m->mu (it runs Lua: funcinfo's tables, the iterators; a GC
 * step may run a finaliser), one thread at a time (m->ff_busy); then,
 * under m->mu, the record and its publication. */
void vm_ff_scan(struct vmod *m, lua_State *L)
{
	if (__atomic_load_n(&m->ff_state, __ATOMIC_RELAXED) < 0 ||
	    __atomic_exchange_n(&m->ff_busy, 1, __ATOMIC_ACQUIRE))
		return;
	struct vm_ff *ff = m->ff;
	if (!ff) {
		if (!(ff = calloc(1, sizeof(*ff))) || load_names(ff, L)) {
			if (ff)
				vm_log(m, "builtins not named: no jit.vmdef");
			ff_free(ff);
			__atomic_store_n(&m->ff_state, -1, __ATOMIC_RELAXED);
			__atomic_store_n(&m->ff_next, UINT32_MAX,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&m->ff_busy, 0, __ATOMIC_RELEASE);
			return;
		}
		ff->shift = getenv(JSF_ENV_VM_FFNAME_SHIFT) != NULL;
		ff->cf = vm_cf_new(); /* (none: builtins alone) */
		__atomic_store_n(&m->ff, ff, __ATOMIC_RELEASE);
	}
	/* again at the 1st trace event, the 2nd, 4th, 8th...: a module
	 * loaded later is named some time after (within as many events
	 * again as had passed), at a cost that vanishes per event */
	uint32_t now = __atomic_load_n(&m->ff_events, __ATOMIC_RELAXED);
	__atomic_store_n(&m->ff_next,
			 now < VM_FF_FIRST	? VM_FF_FIRST
			 : now > UINT32_MAX / 2 ? UINT32_MAX
						: 2 * now,
			 __ATOMIC_RELAXED);
	int open = 0;
	for (int i = 0; i < ff->nkeys; i++)
		open |= !ff->keydone[i];
	if (open || ff->cf) { /* (modules: any time) */
		int top = lua_gettop(L);
		lua_pushlightuserdata(L, ff);
		lua_pushcclosure(L, scan, 1);
		(void)lua_pcall(L, 0, 0,
				0); /* (out of memory: what it found) */
		lua_settop(L, top);
	}
	int cfn = vm_cf_count(ff->cf);
	if (ff->found != ff->found_rec || cfn != ff->cf_rec) {
		/* (make_record: O(ids^2)) */
		ff->found_rec = ff->found;
		ff->cf_rec = cfn;
		pthread_mutex_lock(&m->mu);
		make_record(ff);
		if (ff->cf)
			vm_cf_record(m, ff->cf, ff->shift);
		vm_ff_publish(m);
		pthread_mutex_unlock(&m->mu);
	}
	__atomic_store_n(&m->ff_busy, 0, __ATOMIC_RELEASE);
}

/* m->mu held: every record not yet in the current region. */
void vm_ff_publish(struct vmod *m)
{
	struct vm_ff *ff = m->ff;
	if (!ff || !m->region)
		return;
	vm_rt_publish(m, ff->rec, ff->reclen, &ff->pub, "the builtins' names");
	/* then the modules' C functions (their own epoch and length): the
	 * builtins' first, in the header page while it has room */
	vm_cf_publish(m, ff->cf);
}
