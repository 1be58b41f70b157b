/* SPDX-License-Identifier: MIT */
/*
 * cfnames.c: the names of the C functions of Lua modules (cjson.encode,
 * lfs.dir, ngx.say) for out-of-process readers, published as "LJCF"
 * records in the region's runtime area, most in its extension (docs/ABI.md
 * 1.6, 1.7). A stripped module (Debian's lua-cjson, lua-filesystem,
 * ngx_http_lua) exports only its luaopen_ function: a profile shows
 * [cjson.so+0x5f20] where the program spends its time in cjson.encode.
 *
 * A function is found where Lua code finds it: a field of a table that
 * package.loaded holds, or of a table in such a table (ngx.req.get_headers),
 * or package.loaded's own value; named by the key it was found under
 * ("cjson" .. "." .. "encode"; the base library's "_G" adds no prefix). Its
 * C address is LuaJIT's own answer (jit.util.funcinfo(f).addr); builtins
 * (funcinfo gives an ffid) are ffnames.c's. Each table is walked once per
 * Lua state, the first time it is seen (a module loaded later is found at
 * the next look, ffnames.c's schedule); a table that is itself a module
 * is walked as that module, not as a field of another. A look reads at
 * most CF_STEPS table entries (bounded work in a trace event): a table
 * it leaves half read stays so; those it did not reach wait for the
 * next.
 *
 * An address is named only when it is one function's. The same function
 * found under a second name (an alias) keeps its first; a second function
 * at the same address (C closures of one C function: cjson.safe's
 * wrappers) means the C code is shared, and the address is named by
 * neither: never, if no name was published yet; otherwise its second name
 * is published too, and readers name an address given two names by
 * neither (docs/ABI.md 1.6).
 */
#include "vm.h" /* (audit's face: alog_st16/32/64, little-endian) */

#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#define CF_MAX 4096	  /* C functions kept */
#define CF_REC_MAX VM_RTX /* bytes of LJCF records, all regions' */
#define CF_NAME_MAX 255	  /* a name's bytes (the record's u8) */
#define CF_STEPS 5000	  /* table entries looked at in one look */

struct cf_fn {
	uint64_t addr;
	const void *obj; /* the function object (aliases: the same) */
	char *name;
	uint8_t state; /* 0 new, 1 published, 2 shared: never */
	uint8_t rank;  /* 0 a module's name, 1 a global's (_G) */
};

struct vm_cf {
	struct cf_fn f[CF_MAX];
	int n;
	uint8_t *rec; /* every LJCF record made, for each region */
	uint32_t reclen;
	struct vm_rtpub pub;
	int full;   /* said once: the records' room is used up */
	int budget; /* of CF_STEPS, left in this look */
};

/* the registry key of a state's tables already walked (weak keys) */
static const char seen_key;

struct vm_cf *vm_cf_new(void)
{
	return calloc(1, sizeof(struct vm_cf));
}

int vm_cf_count(const struct vm_cf *cf)
{
	return cf ? cf->n : 0;
}

void vm_cf_free(struct vm_cf *cf)
{
	for (int i = 0; cf && i < cf->n; i++)
		free(cf->f[i].name);
	if (cf)
		free(cf->rec);
	free(cf);
}

static void found(struct vm_cf *cf, uint64_t a, const void *obj,
		  const char *name, size_t nl, int rank)
{
	int other = 0;
	for (int i = 0; i < cf->n; i++) {
		if (cf->f[i].addr != a)
			continue;
		if (cf->f[i].obj == obj) { /* an alias: one name while
					      unpublished, a module's before
					      a global's (cjson.encode, not
					      json = cjson.encode), then the
					      shortest, then the first in
					      byte order */
			char *o = cf->f[i].name, *s;
			size_t ol = strlen(o);
			int r = cf->f[i].rank;
			if (cf->f[i].state || rank > r ||
			    (rank == r &&
			     (nl > ol ||
			      (nl == ol && memcmp(name, o, nl) >= 0))) ||
			    !(s = strndup(name, nl)))
				return;
			cf->f[i].rank = (uint8_t)rank;
			free(o);
			cf->f[i].name = s;
			return;
		}
		other = 1;
		if (cf->f[i].state == 0)
			cf->f[i].state = 2;
	}
	if (cf->n == CF_MAX || nl > CF_NAME_MAX)
		return;
	char *s = strndup(name, nl);
	if (!s)
		return;
	/* another function at a published address: this name too, so
	 * that readers name it by neither; else shared: never */
	int pubd = 0;
	for (int i = 0; other && i < cf->n; i++)
		pubd |= cf->f[i].addr == a && cf->f[i].state == 1;
	cf->f[cf->n++] =
	    (struct cf_fn){a, obj, s, other && !pubd ? 2 : 0, (uint8_t)rank};
}

/* The key at idx if a string (not a number: lua_tolstring would change
 * it, and lua_next with it), else NULL. */
static const char *str_key(lua_State *L, int idx, size_t *kl)
{
	return lua_type(L, idx) == LUA_TSTRING ? lua_tolstring(L, idx, kl)
					       : NULL;
}

/* pre.k into out (CF_NAME_MAX + 1 bytes; pl + 1 + kl fit): its length.
 * No pre (pl 0): k alone. */
static size_t join(char *out, const char *pre, size_t pl, const char *k,
		   size_t kl)
{
	size_t n = 0;
	if (pl) {
		memcpy(out, pre, pl);
		out[pl] = '.';
		n = pl + 1;
	}
	memcpy(out + n, k, kl);
	return n + kl;
}

/* The C function at idx (not a builtin): its address, named pre.key
 * (rank: found through _G, 1, or a module, 0). */
static void note(struct vm_cf *cf, lua_State *L, int fi, int idx,
		 const char *pre, size_t pl, const char *key, size_t kl,
		 int rank)
{
	if (!lua_iscfunction(L, idx))
		return;
	lua_Integer ffid;
	uint64_t a = vm_cfunc_addr(L, fi, idx, &ffid);
	if (ffid >= 0 || !a || pl + 1 + kl > CF_NAME_MAX)
		return; /* (a builtin: ffnames.c's) */
	char name[CF_NAME_MAX + 1];
	found(cf, a, lua_topointer(L, idx), name, join(name, pre, pl, key, kl),
	      rank);
}

/* Table t, found as pre (pl bytes; "" for _G), depth 0 a module's, 1 a
 * table in it; seen: the state's tables already walked (each once);
 * mods: package.loaded's tables (walked as modules of their own). */
static void walk(struct vm_cf *cf, lua_State *L, int fi, int t, int seen,
		 int mods, const char *pre, size_t pl, int depth, int rank)
{
	lua_pushvalue(L, t);
	lua_rawget(L, seen);
	int done = lua_toboolean(L, -1);
	lua_pop(L, 1);
	if (done)
		return;
	lua_pushvalue(L, t);
	lua_pushboolean(L, 1);
	lua_rawset(L, seen);
	lua_pushnil(L);
	while (lua_next(L, t)) {
		int v = lua_gettop(L);
		if (cf->budget-- <= 0) { /* (bounded work per event: the
					    rest of a huge table unread) */
			lua_settop(L, v - 2);
			return;
		}
		size_t kl;
		const char *k = str_key(L, v - 1, &kl);
		if (k && lua_iscfunction(L, v)) {
			note(cf, L, fi, v, pre, pl, k, kl, rank);
		} else if (k && depth == 0 && lua_istable(L, v) &&
			   pl + 1 + kl <= CF_NAME_MAX) {
			lua_pushvalue(L, v);
			lua_rawget(L, mods);
			int mod = lua_toboolean(L, -1);
			lua_pop(L, 1);
			if (!mod) {
				char p[CF_NAME_MAX + 1];
				walk(cf, L, fi, v, seen, mods, p,
				     join(p, pre, pl, k, kl), 1, rank);
			}
		}
		lua_settop(L, v - 1);
	}
}

void vm_cf_walk(struct vm_cf *cf, lua_State *L, int loaded, int fi)
{
	int top = lua_gettop(L);
	cf->budget = CF_STEPS;
	lua_pushlightuserdata(L, (void *)&seen_key);
	lua_rawget(L, LUA_REGISTRYINDEX);
	if (!lua_istable(L, -1)) { /* made once per state, weak keys */
		lua_pop(L, 1);
		lua_newtable(L);
		lua_newtable(L);
		lua_pushliteral(L, "k");
		lua_setfield(L, -2, "__mode");
		lua_setmetatable(L, -2);
		lua_pushlightuserdata(L, (void *)&seen_key);
		lua_pushvalue(L, -2);
		lua_rawset(L, LUA_REGISTRYINDEX);
	}
	int seen = lua_gettop(L);
	/* the modules' tables, package.loaded itself and package.preload:
	 * never walked as another's field */
	lua_newtable(L);
	int mods = lua_gettop(L);
	lua_pushvalue(L, loaded);
	lua_pushboolean(L, 1);
	lua_rawset(L, mods);
	lua_getfield(L, LUA_REGISTRYINDEX, "_PRELOAD");
	lua_pushboolean(L, 1);
	lua_rawset(L, mods);
	lua_pushnil(L);
	while (lua_next(L, loaded)) {
		if (lua_istable(L, -1)) {
			lua_pushvalue(L, -1);
			lua_pushboolean(L, 1);
			lua_rawset(L, mods);
		}
		lua_pop(L, 1);
	}
	lua_pushnil(L);
	while (cf->budget > 0 && lua_next(L, loaded)) {
		int v = lua_gettop(L);
		size_t kl;
		const char *k = str_key(L, v - 1, &kl);
		if (k && lua_istable(L, v)) {
			int g = kl == 2 && !memcmp(k, "_G", 2);
			walk(cf, L, fi, v, seen, mods, k, g ? 0 : kl, 0, g);
		} else if (k && lua_iscfunction(L, v)) { /* a module that is
							    a function */
			note(cf, L, fi, v, "", 0, k, kl, 0);
		}
		lua_settop(L, v - 1);
	}
	lua_settop(L, top);
}

static int by_addr(const void *a, const void *b)
{
	const struct cf_fn *x = *(struct cf_fn *const *)a,
			   *y = *(struct cf_fn *const *)b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Append one record of the cnt entries at e (sorted, within an s32 of
 * the first) to cf->rec; 0, or -1 when there is no room. shift (tests
 * only, JSF_ENV_VM_FFNAME_SHIFT): each entry named as the next (the last
 * as the first). */
static int record(struct vm_cf *cf, struct cf_fn **e, int cnt, int shift)
{
	uint32_t len = 20;
	for (int i = 0; i < cnt; i++)
		len += 5 + (uint32_t)strlen(e[shift ? (i + 1) % cnt : i]->name);
	if (len > CF_REC_MAX - cf->reclen)
		return -1;
	uint8_t *b = cf->rec + cf->reclen;
	uint64_t base = e[0]->addr;
	vm_rt_names_head(b, "LJCF", len, base, (unsigned)cnt);
	uint32_t p = 20;
	for (int i = 0; i < cnt; i++) {
		const char *nm = e[shift ? (i + 1) % cnt : i]->name;
		p += vm_rt_names_entry(b + p, (int32_t)(e[i]->addr - base), nm,
				       strlen(nm));
		e[i]->state = 1;
	}
	cf->reclen += len;
	return 0;
}

void vm_cf_record(struct vmod *m, struct vm_cf *cf, int shift)
{
	struct cf_fn *e[CF_MAX];
	int k = 0;
	for (int i = 0; i < cf->n; i++)
		if (cf->f[i].state == 0)
			e[k++] = &cf->f[i];
	if (!k || cf->full)
		return;
	if (!cf->rec && !(cf->rec = malloc(CF_REC_MAX)))
		return;
	qsort(e, (size_t)k, sizeof(struct cf_fn *), by_addr);
	/* records of entries within an s32 of their first, under 32 KiB */
	for (int i = 0; i < k;) {
		int j = i + 1;
		uint32_t len = 25 + (uint32_t)strlen(e[i]->name);
		while (j < k && e[j]->addr - e[i]->addr <= INT32_MAX &&
		       len + 5 + CF_NAME_MAX < 32768)
			len += 5 + (uint32_t)strlen(e[j++]->name);
		if (record(cf, e + i, j - i, shift)) {
			cf->full = 1;
			vm_log(m,
			       "C functions past the first %d not named: "
			       "no room for their names",
			       i);
			return;
		}
		i = j;
	}
}

void vm_cf_publish(struct vmod *m, struct vm_cf *cf)
{
	if (cf && m->region)
		vm_rt_publish(m, cf->rec, cf->reclen, &cf->pub,
			      "the C functions' names");
}
