/* SPDX-License-Identifier: MIT */
/*
 * The auditlog's record builders (audit.h, docs/AUDITLOG.md): jit.util is
 * called with lua_call from C and its results are packed straight into a
 * msgpack buffer; the header record, trace-event records, func records
 * (a bytecode dump plus what the dump lacks). The raw trace reader
 * (audit_raw.c) stands in for jit.util on stopped traces.
 */
#include "auditint.h"
#include "jitsframe.h"
#include "lj.h"
#include "vm.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PRODUCER "jitsframe " JSF_VERSION_STRING

/* ----------------------------------------------------------- packing */

/* Whether the object at idx packs to the same bytes for as long as it
 * lives: a table, a full userdata, a thread or a prototype without a
 * metatable (tostring() then prints the type and the address, which a
 * LuaJIT object keeps; a prototype's loc is its own). Those bytes are
 * kept in the weak-keyed astate.kobj_ref table, so they are packed once,
 * and with the table (rawget, no Lua call) also in an unprotected build
 * (ctx.nolua). Anything with a metatable is packed anew each time, as
 * its __tostring may answer differently. */
static int kobj_fixed(lua_State *L, struct ctx *c, int idx, int t,
		      const char *tn)
{
	if (c->a->kobj_ref == LUA_NOREF)
		return 0;
	if (t != LUA_TTABLE && t != LUA_TUSERDATA && t != LUA_TTHREAD &&
	    strcmp(tn, "proto"))
		return 0;
	if (lua_getmetatable(L, idx)) {
		lua_pop(L, 1);
		return 0;
	}
	return 1;
}

/* A Lua value that is neither plain data nor a function. */
static void pack_obj(lua_State *L, struct ctx *c, msgpack_packer *pk, int idx)
{
	int t = lua_type(L, idx);
	/* lua_type() says nil for a trace object (a snapshot's stitched
	 * frame): tostring() and type() say "trace" (replay helper) */
	const char *tn = t == LUA_TNIL ? "trace" : lua_typename(L, t);
	int fixed = kobj_fixed(L, c, idx, t, tn);
	if (fixed) {
		lua_rawgeti(L, LUA_REGISTRYINDEX, c->a->kobj_ref);
		lua_pushvalue(L, idx);
		lua_rawget(L, -2);
		if (lua_type(L, -1) == LUA_TSTRING) {
			size_t n;
			const char *s = lua_tolstring(L, -1, &n);
			pk_body(pk, s, n);
			lua_pop(L, 2);
			return;
		}
		lua_pop(L, 2);
	}
	if (c->nolua) { /* tostring() and funcinfo: Lua calls */
		c->bail = 1;
		pk_nil(pk);
		return;
	}
	msgpack_sbuffer *sb = PK_SB(pk);
	size_t at = sb->size;
	int cd = !strcmp(tn, "cdata");
	/* a proto's location: jit.bc prints it for FNEW (replay helper) */
	int pl = !strcmp(tn, "proto");
	/* LuaJIT names protos "proto" in tostring; its type() says so too */
	int tyof = cd && c->a->typeof_ref != LUA_NOREF;
	pk_map(pk, (tyof ? 4 : 3) + pl);
	if (pl) {
		pstr(pk, "loc");
		lua_pushvalue(L, idx);
		call_util(L, c, U_FUNCINFO, 1, 1);
		lua_getfield(L, -1, "loc");
		va_pack_any(L, c, pk, -1, 0, 1);
		lua_pop(L, 2);
	}
	pstr(pk, "obj");
	pstr(pk, tn);
	pstr(pk, "addr");
	/* a 64-bit integer constant's cdata is a new box per tracek call:
	 * its address means nothing (jit.dump prints the value) */
	pk_uint(pk,
		cd && c->kbox ? 0 : (uint64_t)(uintptr_t)lua_topointer(L, idx));
	pstr(pk, "str");
	lua_rawgeti(L, LUA_REGISTRYINDEX, c->a->tostring_ref);
	lua_pushvalue(L, idx);
	lua_call(L, 1, 1);
	size_t n;
	const char *s = lua_tolstring(L, -1, &n);
	pk_str(pk, s ? s : "", s ? n : 0);
	lua_pop(L, 1);
	if (tyof) {
		pstr(pk, "ctype");
		lua_rawgeti(L, LUA_REGISTRYINDEX, c->a->tostring_ref);
		lua_rawgeti(L, LUA_REGISTRYINDEX, c->a->typeof_ref);
		lua_pushvalue(L, idx);
		lua_call(L, 1, 1);
		lua_call(L, 1, 1);
		s = lua_tolstring(L, -1, &n);
		if (s && n > 7 && !memcmp(s, "ctype<", 6) && s[n - 1] == '>')
			pk_str(pk, s + 6, n - 7);
		else
			pk_str(pk, s ? s : "", s ? n : 0);
		lua_pop(L, 1);
	}
	/* kept if whole: one msgpack value exactly (a buffer that could
	 * not grow lost bytes) */
	if (!fixed || !sb->data || sb->size <= at)
		return;
	const uint8_t *p = (const uint8_t *)sb->data + at;
	const uint8_t *end = (const uint8_t *)sb->data + sb->size;
	if (!alog_mp_skip(&p, end) && p == end) {
		lua_rawgeti(L, LUA_REGISTRYINDEX, c->a->kobj_ref);
		lua_pushvalue(L, idx);
		lua_pushlstring(L, sb->data + at, sb->size - at);
		lua_rawset(L, -3);
		lua_pop(L, 1);
	}
}

void va_pack_any(lua_State *L, struct ctx *c, msgpack_packer *pk, int idx,
		 int expand, int depth)
{
	if (idx < 0)
		idx = lua_gettop(L) + idx + 1;
	switch (lua_type(L, idx)) {
	case LUA_TNIL:
	case LUA_TNONE:
		if (lua_topointer(L, idx)) /* a trace (replay helper) */
			break;
		pk_nil(pk);
		return;
	case LUA_TBOOLEAN:
		if (lua_toboolean(L, idx))
			pk_bool(pk, 1);
		else
			pk_bool(pk, 0);
		return;
	case LUA_TNUMBER:
		pnum(pk, lua_tonumber(L, idx));
		return;
	case LUA_TSTRING: {
		size_t n;
		const char *s = lua_tolstring(L, idx, &n);
		pk_str(pk, s, n);
		return;
	}
	case LUA_TFUNCTION:
		if (!c->in_func) {
			uint64_t id = va_ensure_func(L, c, idx);
			pk_map(pk, 1);
			pstr(pk, "fn");
			pk_uint(pk, id);
			return;
		}
		break;
	case LUA_TTABLE:
		if (expand && depth < 8) {
			uint32_t n = 0;
			lua_pushnil(L);
			while (lua_next(L, idx)) {
				n++;
				lua_pop(L, 1);
			}
			if (n && lua_objlen(L, idx) == n) {
				/* a sequence 1..n: an array (the same Lua table
				 * when read back), smaller and faster */
				pk_array(pk, n);
				for (uint32_t i = 1; i <= n; i++) {
					lua_rawgeti(L, idx, (int)i);
					va_pack_any(L, c, pk, -1, 1, depth + 1);
					lua_pop(L, 1);
				}
				return;
			}
			pk_map(pk, n);
			lua_pushnil(L);
			while (lua_next(L, idx)) {
				va_pack_any(L, c, pk, -2, 0, depth + 1);
				va_pack_any(L, c, pk, -1, 1, depth + 1);
				lua_pop(L, 1);
			}
			return;
		}
		break;
	default:
		break;
	}
	pack_obj(L, c, pk, idx);
}

/* key then the value at the top of the stack (popped) */
void va_kv_top(lua_State *L, struct ctx *c, msgpack_packer *pk, const char *k,
	       int expand)
{
	pstr(pk, k);
	va_pack_any(L, c, pk, -1, expand, 0);
	lua_pop(L, 1);
}

/* A Lua function's prototype for its func record (format 2): one
 * lua_dump (LuaJIT's bytecode dump: instructions, constants, line info,
 * upvalue names) instead of a jit.util call per bytecode and constant,
 * plus what the dump lacks, read with jit.util:
 *  live = {[pc] = ins}: funcbc's instruction where it differs from the
 *         dump's (lua_dump writes loops unpatched: JFORL -> FORL...) and
 *         always pc 0 (the FUNCF/JFUNCF... header, not in the dump);
 *         only pc 0 and the pcs of patchable ops (those with an I- or
 *         J-prefixed variant in jit.vmdef.bcnames) are read;
 *  bcm  = {[op] = mode} funcbc's second answer for each op used, learned
 *         once per op per process from a funcbc call;
 *  kobj = {[i] = value} funck(f, i) for GC constants other than strings
 *         (tables, child protos, cdata: their address and tostring);
 *  locprefix = funcinfo(f).loc without ":line".
 * The dump keeps only the function's own prototype (LuaJIT writes the
 * children first; their bytes are dropped). Decoded by audit/auditfunc.c. */
static int dump_writer(lua_State *L, const void *p, size_t sz, void *ud)
{
	struct vaudit *A = ud;
	(void)L;
	if (A->dlen + sz > A->dcap) {
		size_t cap = A->dcap ? A->dcap : 4096;
		while (cap < A->dlen + sz)
			cap *= 2;
		char *nb = realloc(A->dbuf, cap);
		if (!nb)
			return 1;
		A->dbuf = nb;
		A->dcap = cap;
	}
	memcpy(A->dbuf + A->dlen, p, sz);
	A->dlen += sz;
	return 0;
}

/* ops with an I- or J-prefixed variant: the VM patches them in place */
static void learn_patchable(struct vaudit *A, lua_State *L)
{
	A->patch_ready = 1;
	size_t n = 0;
	const char *bn = NULL;
	if (vm_require(L, "jit.vmdef") == 0 && lua_istable(L, -1)) {
		lua_getfield(L, -1, "bcnames");
		bn = lua_tolstring(L, -1, &n);
		lua_pop(L, 1); /* the string stays alive in vmdef */
	}
	if (!bn || n % 6 || n / 6 > 256) { /* unknown: read every pc */
		memset(A->patchable, 1, sizeof(A->patchable));
		lua_pop(L, 1);
		return;
	}
	size_t nop = n / 6;
	for (size_t i = 0; i < nop; i++) {
		const char *x = bn + 6 * i;
		size_t xl = 6;
		while (xl && x[xl - 1] == ' ')
			xl--;
		for (size_t j = 0; j < nop && xl < 6; j++) {
			const char *y = bn + 6 * j;
			if ((y[0] == 'I' || y[0] == 'J') &&
			    !memcmp(y + 1, x, xl) &&
			    (xl + 1 == 6 || y[xl + 1] == ' '))
				A->patchable[i] = 1;
		}
	}
	lua_pop(L, 1);
}

static void pack_lua_func(lua_State *L, struct ctx *c, msgpack_packer *pk,
			  int idx, int info, int nbc)
{
	struct vaudit *A = c->A;
	msgpack_sbuffer *sb = pk->data;
	if (!A->patch_ready)
		learn_patchable(A, L);
	/* locprefix: funcinfo(f).loc (pc 0) without ":line" */
	char prefix[1024] = "";
	lua_getfield(L, info, "loc");
	size_t ln;
	const char *loc = lua_tolstring(L, -1, &ln);
	if (loc) {
		const char *colon = strrchr(loc, ':');
		size_t pl = colon ? (size_t)(colon - loc) : ln;
		if (pl >= sizeof(prefix))
			pl = sizeof(prefix) - 1;
		memcpy(prefix, loc, pl);
		prefix[pl] = 0;
	}
	lua_pop(L, 1);
	pstr(pk, "locprefix");
	pstr(pk, prefix);

	A->dlen = 0;
	lua_pushvalue(L, idx);
	int derr = lua_dump(L, dump_writer, A);
	lua_pop(L, 1);
	/* in A: a Lua error below (longjmp) leaves it to the next call */
	struct alog_fproto *fp = &A->fp;
	alog_fproto_free(fp);
	if (derr)
		luaL_error(L, "func record: lua_dump failed");
	if (alog_fproto_decode(fp, A->dbuf, A->dlen))
		luaL_error(L, "func record: own dump: %s", fp->err);
	if (fp->sizebc != (uint32_t)nbc)
		luaL_error(L, "func record: dump has %d bytecodes, not %d",
			   (int)fp->sizebc, nbc);
	pstr(pk, "dump");
	pk_bin(pk, fp->head_len + fp->proto_len + 1);
	pk_body(pk, A->dbuf, fp->head_len);
	pk_body(pk, A->dbuf + fp->proto_off, fp->proto_len);
	pk_body(pk, "", 1);

	/* live instructions and modes */
	uint8_t used[256];
	memset(used, 0, sizeof(used));
	pstr(pk, "live");
	size_t lm = map_begin(sb);
	uint32_t nl = 0;
	for (uint32_t pc = 0; pc < fp->sizebc; pc++) {
		uint32_t ins = alog_fproto_ins(fp, pc);
		uint8_t op = (uint8_t)ins;
		if (pc && !A->patchable[op] && A->bcmode[op]) {
			used[op] = 1;
			continue;
		}
		lua_pushvalue(L, idx);
		lua_pushinteger(L, (lua_Integer)pc);
		call_util(L, c, U_FUNCBC, 2, 2);
		if (!lua_isnumber(L, -2) || !lua_isnumber(L, -1))
			luaL_error(L, "funcbc(f, %d): no instruction", (int)pc);
		uint32_t lins = (uint32_t)(int32_t)lua_tonumber(L, -2);
		int mode = (int)lua_tointeger(L, -1);
		lua_pop(L, 2);
		if (pc == 0 || lins != ins) {
			pk_int(pk, pc);
			pk_int(pk, (int32_t)lins);
			nl++;
		}
		op = (uint8_t)lins;
		A->bcmode[op] = mode + 1;
		used[op] = 1;
	}
	map_end(sb, lm, nl);
	uint32_t nm = 0;
	for (int op = 0; op < 256; op++)
		nm += used[op];
	pstr(pk, "bcm");
	pk_map(pk, nm);
	for (int op = 0; op < 256; op++)
		if (used[op]) {
			pk_int(pk, op);
			pk_int(pk, A->bcmode[op] - 1);
		}

	/* GC constants the dump cannot stand for */
	uint32_t nko = 0;
	for (uint32_t i = 0; i < fp->nkgc; i++)
		nko += fp->kgc[i].kind != ALOG_FK_STR;
	pstr(pk, "kobj");
	pk_map(pk, nko);
	for (uint32_t i = 0; i < fp->nkgc; i++) {
		if (fp->kgc[i].kind == ALOG_FK_STR)
			continue;
		int k = (int)i - (int)fp->nkgc;
		lua_pushvalue(L, idx);
		lua_pushinteger(L, k);
		call_util(L, c, U_FUNCK, 2, 1);
		pk_int(pk, k);
		va_pack_any(L, c, pk, -1, 0, 1);
		lua_pop(L, 1);
	}
	alog_fproto_free(fp);
}

/* The func record of the function at idx (a new id), written now. */
/* info: stack index of funcinfo(f) (left there) */
static void write_func(lua_State *L, struct ctx *c, int idx, uint64_t id,
		       int info)
{
	struct vaudit *A = c->A;
	uint64_t t0 = jsf_now_ns();
	msgpack_sbuffer *sb = &A->sbf;
	msgpack_packer pk;
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	c->in_func = 1;
	size_t m = map_begin(sb);
	uint32_t n = 4;
	pstr(&pk, "ev");
	pstr(&pk, "func");
	pstr(&pk, "ns");
	pk_uint(&pk, jsf_now_ns());
	pstr(&pk, "id");
	pk_uint(&pk, id);
	/* info without currentline/loc (they belong to a pc), one pass */
	pstr(&pk, "info");
	{
		size_t im = map_begin(sb);
		uint32_t k = 0;
		lua_pushnil(L);
		while (lua_next(L, info)) {
			const char *key = lua_type(L, -2) == LUA_TSTRING
					      ? lua_tostring(L, -2)
					      : "";
			if (!strcmp(key, "proto") &&
			    !strcmp(lua_typename(L, lua_type(L, -1)),
				    "proto")) {
				/* as pack_obj writes it, its loc
				 * (funcinfo(proto) .loc) being ours at pc 0: no
				 * second funcinfo */
				pstr(&pk, "proto");
				pk_map(&pk, 4);
				pstr(&pk, "loc");
				lua_getfield(L, info, "loc");
				va_pack_any(L, c, &pk, -1, 0, 1);
				lua_pop(L, 1);
				pstr(&pk, "obj");
				pstr(&pk, "proto");
				pstr(&pk, "addr");
				pk_uint(&pk, (uint64_t)(uintptr_t)lua_topointer(
						 L, -1));
				pstr(&pk, "str");
				lua_rawgeti(L, LUA_REGISTRYINDEX,
					    c->a->tostring_ref);
				lua_pushvalue(L, -2);
				lua_call(L, 1, 1);
				va_pack_any(L, c, &pk, -1, 0, 1);
				lua_pop(L, 1);
				k++;
			} else if (strcmp(key, "currentline") &&
				   strcmp(key, "loc")) {
				va_pack_any(L, c, &pk, -2, 0, 1);
				va_pack_any(L, c, &pk, -1, 1, 1);
				k++;
			}
			lua_pop(L, 1);
		}
		map_end(sb, im, k);
	}
	lua_getfield(L, info, "bytecodes");
	int nbc = lua_isnumber(L, -1) ? (int)lua_tointeger(L, -1) : -1;
	lua_pop(L, 1);
	if (nbc >= 0) { /* a Lua function */
		pack_lua_func(L, c, &pk, idx, info, nbc);
		n += 5;
	}
	map_end(sb, m, n);
	c->in_func = 0;
	A->funcs++;
	A->func_ns += jsf_now_ns() - t0;
	c->now = 0;		 /* the records after it: later than it */
	va_put_record(A, sb, 1); /* with the record that refers to it */
}

/* The id of the function at idx; its func record goes out first. */
uint64_t va_ensure_func(lua_State *L, struct ctx *c, int idx)
{
	lua_pushvalue(L, idx);
	lua_rawget(L, c->fnids);
	int isnum = 0;
	lua_Number fid = lua_tonumberx(L, -1, &isnum); /* ids are numbers */
	lua_pop(L, 1);
	if (isnum)
		return (uint64_t)fid;
	if (c->nolua) { /* funcinfo, a func record: Lua calls */
		c->bail = 1;
		return 0;
	}
	/* A Lua function: its prototype (funcinfo's "proto") is the identity,
	 * so closures of one prototype share one id and one func record
	 * (everything the record holds comes from the prototype). Protos are
	 * keys of the same weak table: a dead prototype's entry goes with it.
	 */
	lua_pushvalue(L, idx);
	call_util(L, c, U_FUNCINFO, 1, 1);
	int info = lua_gettop(L);
	lua_getfield(L, info, "proto");
	int proto = lua_gettop(L);
	if (!lua_isnil(L, proto)) {
		lua_pushvalue(L, proto);
		lua_rawget(L, c->fnids);
		if (lua_isnumber(L, -1)) {
			uint64_t id = (uint64_t)lua_tonumber(L, -1);
			lua_pushvalue(L, idx);
			lua_pushvalue(L, -2);
			lua_rawset(L, c->fnids);
			lua_settop(L, info - 1);
			return id;
		}
		lua_pop(L, 1);
	}
	uint64_t id = c->A->next_fn++;
	lua_pushvalue(L, idx);
	lua_pushnumber(L, (lua_Number)id);
	lua_rawset(L, c->fnids);
	if (!lua_isnil(L, proto)) {
		lua_pushvalue(L, proto);
		lua_pushnumber(L, (lua_Number)id);
		lua_rawset(L, c->fnids);
	}
	write_func(L, c, idx, id, info);
	lua_settop(L, info - 1);
	return id;
}

/* traceinfo's table at idx, in a fixed order (nins, nk, link, nexit,
 * linktype, then any other field). */
static void pack_info(lua_State *L, struct ctx *c, msgpack_packer *pk, int idx)
{
	static const char *const f[] = {"nins", "nk", "link", "nexit",
					"linktype"};
	uint32_t n = 0;
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		n++;
		lua_pop(L, 1);
	}
	pk_map(pk, n);
	for (int i = 0; i < 5; i++) {
		lua_getfield(L, idx, f[i]);
		if (!lua_isnil(L, -1))
			va_kv_top(L, c, pk, f[i], 0);
		else
			lua_pop(L, 1);
	}
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		const char *k =
		    lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
		int known = 0;
		for (int i = 0; k && i < 5; i++)
			known |= !strcmp(k, f[i]);
		if (!known) {
			va_pack_any(L, c, pk, -2, 0, 1);
			va_pack_any(L, c, pk, -1, 1, 1);
		}
		lua_pop(L, 1);
	}
}

/* Without T (an aborted trace, or raw reads off): whether the constant
 * tracek just gave (stack -3 value, -2 IR type, -1 KSLOT's slot) keeps its
 * 64-bit value in the next slot. tracek cannot tell, and asked about that
 * slot it decodes the value's bytes as a constant: a junk KGC there is a
 * wild pointer (SIGSEGV in packing it, seen at the full level). KNUM (IR
 * type NUM) and KINT64 (I64, U64) always; on GC64 also KGC (any other
 * value that is not a number: a GC object) and KPTR/KKPTR (a number of
 * a pointer or GC type that is not 0: KNULL gives 0). A KSLOT is one. */
static int k_two_slots(lua_State *L, struct ctx *c)
{
	if (!lua_isnil(L, -1))
		return 0;
	lua_Integer t = lua_tointeger(L, -2);
	if (t == 14 || t == IRT_I64 || t == IRT_U64) /* IRT_NUM */
		return 1;
	if (!c->A->gc64 || t <= 2 || t > 12) /* KPRI; KINT: INT and such */
		return 0;
	if (lua_type(L, -3) != LUA_TNUMBER)
		return 1;		 /* KGC */
	return lua_tonumber(L, -3) != 0; /* KPTR, KKPTR; not KNULL */
}

/* A trace through jit.util: info, ir, k, snap (and with mc, also mc, addr,
 * loop). T (raw, may be NULL) only tells which constant slots hold the
 * second half of a 64-bit constant, which tracek cannot: they are left
 * out, as the raw reader leaves them out. Returns the fields packed. */
uint32_t va_pack_trace_util(lua_State *L, struct ctx *c, msgpack_packer *pk,
			    msgpack_sbuffer *sb, lua_Integer tr, int mc,
			    const uint8_t *T, const struct ljt_layout *lay,
			    lua_Integer *nexit)
{
	lua_pushinteger(L, tr);
	call_util(L, c, U_TRACEINFO, 1, 1);
	if (!lua_istable(L, -1)) {
		lua_pop(L, 1);
		return 0;
	}
	lua_getfield(L, -1, "nins");
	lua_Integer nins = lua_tointeger(L, -1);
	lua_getfield(L, -2, "nk");
	lua_Integer nk = lua_tointeger(L, -1);
	lua_getfield(L, -3, "nexit");
	*nexit = lua_tointeger(L, -1);
	lua_pop(L, 3);
	pstr(pk, "info");
	pack_info(L, c, pk, lua_gettop(L));
	lua_pop(L, 1);
	/* ir: traceir(tr, i) for i = 0..nins (instructions; 0 is BASE) */
	pstr(pk, "ir");
	size_t m = map_begin(sb);
	uint32_t n = 0;
	for (lua_Integer i = 0; i <= nins; i++) {
		lua_pushinteger(L, tr);
		lua_pushinteger(L, i);
		call_util(L, c, U_TRACEIR, 2, 5);
		if (!lua_isnil(L, -5)) {
			pk_int(pk, i);
			pk_array(pk, 5);
			for (int j = -5; j < 0; j++) /* integers */
				pk_int(pk, lua_tointeger(L, j));
			n++;
		}
		lua_pop(L, 5);
	}
	map_end(sb, m, n);
	/* k: tracek(tr, i) for i = -nk..-1 (constants) */
	const uint8_t *ir =
	    T ? (const uint8_t *)(uintptr_t)ljt_u64(T, lay->ir) : NULL;
	pstr(pk, "k");
	m = map_begin(sb);
	n = 0;
	for (lua_Integer i = -nk; i < 0; i++) {
		lua_pushinteger(L, tr);
		lua_pushinteger(L, i);
		call_util(L, c, U_TRACEK, 2, 3);
		if (!(lua_isnil(L, -3) && lua_isnil(L, -2))) {
			pk_int(pk, i);
			int cnt = lua_isnil(L, -1) ? 2 : 3;
			pk_array(pk, (size_t)cnt);
			lua_Integer kt = lua_tointeger(L, -2);
			c->kbox = kt == IRT_I64 || kt == IRT_U64;
			for (int j = -3; j < -3 + cnt; j++)
				va_pack_any(L, c, pk, j, 0, 1);
			c->kbox = 0;
			n++;
		}
		int two = ir ? is_k64(c->A, ir[8 * (LJT_REF_BIAS + i) + 5])
			     : k_two_slots(L, c);
		lua_pop(L, 3);
		if (two)
			i++; /* its value slot */
	}
	map_end(sb, m, n);
	pstr(pk, "snap");
	m = map_begin(sb);
	n = 0;
	for (lua_Integer i = 0;; i++) {
		lua_pushinteger(L, tr);
		lua_pushinteger(L, i);
		call_util(L, c, U_TRACESNAP, 2, 1);
		if (lua_isnil(L, -1)) {
			lua_pop(L, 1);
			break;
		}
		pk_int(pk, i);
		va_pack_any(L, c, pk, -1, 1, 1);
		lua_pop(L, 1);
		n++;
	}
	map_end(sb, m, n);
	if (!mc)
		return 4;
	lua_pushinteger(L, tr);
	call_util(L, c, U_TRACEMC, 1, 3);
	pstr(pk, "mc");
	size_t len = 0;
	const char *code =
	    lua_isstring(L, -3) ? lua_tolstring(L, -3, &len) : NULL;
	if (code) {
		pk_bin(pk, len);
		pk_body(pk, code, len);
	} else {
		pk_nil(pk);
	}
	va_field_int(pk, "addr", L, -2);
	va_field_int(pk, "loop", L, -1);
	lua_pop(L, 3);
	return 7;
}

/* Build a trace-event record: stack 1 = ctx, 2.. = the event's args. */
int va_build(lua_State *L)
{
	struct ctx *c = lua_touserdata(L, 1);
	int nargs = lua_gettop(L) - 1;
	lua_rawgeti(L, LUA_REGISTRYINDEX, c->a->fnids_ref);
	c->fnids = lua_gettop(L);
	struct vaudit *A = c->A;

	msgpack_sbuffer *sb = &A->sb;
	msgpack_packer pkv, *pk = &pkv;
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
	size_t m = map_begin(sb);
	uint32_t n = 2;
	/* c->kind: "trace" (the common case: tested first), "record",
	 * "texit" */
	int is_trace = c->kind[0] == 't' && c->kind[1] == 'r';
	if (!is_trace && !strcmp(c->kind, "record")) { /* tr, func, pc, depth */
		/* the func record (if new) goes out before this one */
		uint64_t fid =
		    lua_isfunction(L, 3) ? va_ensure_func(L, c, 3) : 0;
		va_rec_head(c, pk, "record");
		c->defer = 1;
		va_field_int(pk, "tr", L, 2);
		pstr(pk, "func");
		if (fid)
			pk_uint(pk, fid);
		else
			pk_nil(pk);
		va_field_int(pk, "pc", L, 4);
		va_field_int(pk, "depth", L, 5);
		n += 4;
		/* the bytecode as it is now (replay helper): LuaJIT patches
		 * loop and function heads in place (FORL -> JFORL, IFORL...)
		 * after the func record was written */
		if (fid && lua_tointeger(L, 4) >= 0 && !lua_iscfunction(L, 3)) {
			lua_pushvalue(L, 3);
			lua_pushvalue(L, 4);
			call_util(L, c, U_FUNCBC, 2, 2);
			if (!lua_isnil(L, -2)) {
				pstr(pk, "ins");
				va_pack_any(L, c, pk, -2, 0, 1);
				pstr(pk, "m");
				va_pack_any(L, c, pk, -1, 0, 1);
				n += 2;
			}
			lua_pop(L, 2);
		}
	} else if (!is_trace) { /* "texit": tr, ex, ngpr, nfpr, regs */
		va_rec_head(c, pk, "texit");
		va_field_int(pk, "tr", L, 2);
		va_field_int(pk, "ex", L, 3);
		va_field_int(pk, "ngpr", L, 4);
		va_field_int(pk, "nfpr", L, 5);
		pstr(pk, "regs");
		int nr = nargs > 4 ? nargs - 4 : 0;
		pk_array(pk, (size_t)nr);
		for (int i = 0; i < nr; i++)
			va_pack_any(L, c, pk, 6 + i, 0, 1);
		n += 5;
	} else {
		if (c->nolua && lua_type(L, 2) != LUA_TSTRING) {
			c->bail = 1; /* lua_tostring would convert it */
			return 0;
		}
		size_t wl = 0;
		const char *what = lua_tolstring(L, 2, &wl);
		if (!what)
			return 0;
		uint64_t fid = 0;
#define WHAT_IS(w) (wl == sizeof(w) - 1 && !memcmp(what, w, sizeof(w) - 1))
		int is_start = WHAT_IS("start"), is_stop = WHAT_IS("stop");
		int is_abort = WHAT_IS("abort");
		if ((is_start || is_stop || is_abort) && lua_isfunction(L, 4))
			fid = va_ensure_func(L, c, 4);
		if (c->nolua && is_abort && A->level >= VAUDIT_FULL)
			c->bail = 1; /* its trace through jit.util */
		if (c->bail)
			return 0;
		lua_Integer tr = lua_tointeger(L, 3);
		if (is_start) {
			va_rec_head(c, pk, "start");
			c->defer = 1;
			va_field_int(pk, "tr", L, 3);
			pstr(pk, "func");
			pk_uint(pk, fid);
			va_field_int(pk, "pc", L, 5);
			n += 3;
			if (nargs >= 5) {
				va_field_int(pk, "otr", L, 6);
				va_field_int(pk, "oex", L, 7);
				n += 2;
			}
		} else if (is_stop) {
			va_rec_head(c, pk, "stop");
			va_field_int(pk, "tr", L, 3);
			n++;
			if (fid) {
				pstr(pk, "func");
				pk_uint(pk, fid);
				n++;
			}
			lua_Integer nexit = 0;
			n += va_pack_stop_trace(L, c, pk, sb, tr, &nexit);
			if (c->bail)
				return 0;
			/* exit stubs: shared ones (x86/x64) only when new (the
			 * unprotected build bailed out before if any are) */
			struct astate *a = c->a;
			if (!a->gexit_none) {
				pstr(pk, "gexitstub");
				size_t gm = map_begin(sb);
				uint32_t gn = 0;
				for (lua_Integer i = a->gexit; i < nexit; i++) {
					lua_pushinteger(L, i);
					call_util(L, c, U_TRACEEXITSTUB, 1, 1);
					if (lua_isnil(L, -1)) {
						a->gexit_none = 1;
						lua_pop(L, 1);
						break;
					}
					pk_int(pk, i);
					va_pack_any(L, c, pk, -1, 0, 1);
					lua_pop(L, 1);
					gn++;
				}
				map_end(sb, gm, gn);
				n++;
				if (!a->gexit_none &&
				    nexit > (lua_Integer)a->gexit)
					a->gexit = (uint32_t)nexit;
			}
			if (a->gexit_none) { /* per-trace stubs (ARM, MIPS...)
					      */
				pstr(pk, "exitstub");
				size_t em = map_begin(sb);
				uint32_t en = 0;
				for (lua_Integer i = 0; i <= nexit; i++) {
					lua_pushinteger(L, tr);
					lua_pushinteger(L, i);
					call_util(L, c, U_TRACEEXITSTUB, 2, 1);
					if (!lua_isnil(L, -1)) {
						pk_int(pk, i);
						va_pack_any(L, c, pk, -1, 0, 1);
						en++;
					}
					lua_pop(L, 1);
				}
				map_end(sb, em, en);
				n++;
			}
			if (c->spadj != INT32_MIN) {
				pstr(pk, "spadj");
				pk_int(pk, c->spadj);
				n++;
			}
		} else if (is_abort) { /* tr, func, pc, err, errinfo */
			va_rec_head(c, pk, "abort");
			va_field_int(pk, "tr", L, 3);
			pstr(pk, "func");
			pk_uint(pk, fid);
			va_field_int(pk, "pc", L, 5);
			pstr(pk, "err");
			va_pack_any(L, c, pk, 6, 0, 0);
			pstr(pk, "errinfo");
			va_pack_any(L, c, pk, 7, 0, 0);
			if (c->bail)
				return 0;
			n += 5;
			lua_Integer nx;
			if (A->level >= VAUDIT_FULL)
				n += va_pack_trace_util(L, c, pk, sb, tr, 0,
							NULL, NULL, &nx);
		} else if (WHAT_IS("flush")) {
#undef WHAT_IS
			va_rec_head(c, pk, "flush");
			c->a->gexit =
			    0; /* the exit stubs are freed with the code */
		} else {
			return 0;
		}
	}
	map_end(sb, m, n);
	/* A trace's start and its recorded bytecodes go out with its stop or
	 * abort, in the same write(2). */
	va_put_record(A, sb, c->defer);
	return 0;
}

/* ------------------------------------------------------------- header */

/* Header: stack 1 = ctx, 2 = level string. */
int va_build_header(lua_State *L)
{
	struct ctx *c = lua_touserdata(L, 1);
	lua_rawgeti(L, LUA_REGISTRYINDEX, c->a->fnids_ref);
	c->fnids = lua_gettop(L);
	c->in_func = 1; /* no functions expected: never emit func records */
	struct vaudit *A = c->A;
	msgpack_sbuffer *sb = &A->sb;
	msgpack_packer pkv, *pk = &pkv;
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	pk_map(pk, 13);
	va_rec_head(c, pk, "header");
	pstr(pk, "format");
	pk_int(pk, 2); /* 2: func records carry a bytecode dump */
	/* stop records may be raw (audit/auditraw.h): their version */
	pstr(pk, "raw_stop");
	pk_int(pk, ALOG_RAW_VERSION);
	pstr(pk, "producer");
	pstr(pk, PRODUCER);
	pstr(pk, "level");
	pstr(pk, A->level >= VAUDIT_FULL ? "full" : "default");
	pstr(pk, "pid");
	pk_int(pk, getpid());
	pstr(pk, "unix_ns");
	pk_uint(pk, (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec);
	pstr(pk, "clock");
	pstr(pk, "CLOCK_MONOTONIC");
	pstr(pk, "byteorder");
	pstr(pk, "little"); /* of the framing; msgpack is big-endian */
	/* vm */
	if (vm_require(L, "jit"))
		lua_error(L);
	int jit = lua_gettop(L);
	pstr(pk, "vm");
	pk_map(pk, 6);
	static const char *const vf[] = {"version", "version_num", "arch",
					 "os"};
	for (int i = 0; i < 4; i++) {
		lua_getfield(L, jit, vf[i]);
		va_kv_top(L, c, pk, vf[i], 0);
	}
	pstr(pk, "gc64");
	int gc64 = 0;
	if (vm_require(L, "ffi") == 0 && lua_istable(L, -1)) {
		lua_getfield(L, -1, "abi");
		lua_pushstring(L, "gc64");
		lua_call(L, 1, 1);
		gc64 = lua_toboolean(L, -1);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	if (gc64)
		pk_bool(pk, 1);
	else
		pk_bool(pk, 0);
	pstr(pk, "status");
	int before = lua_gettop(L);
	lua_getfield(L, jit, "status");
	lua_call(L, 0, LUA_MULTRET);
	int ns = lua_gettop(L) - before;
	pk_array(pk, (size_t)ns);
	for (int i = 1; i <= ns; i++)
		va_pack_any(L, c, pk, before + i, 0, 1);
	lua_settop(L, before);
	/* vmdef, generically */
	if (vm_require(L, "jit.vmdef"))
		lua_error(L);
	int vmdef = lua_gettop(L);
	pstr(pk, "vmdef");
	va_pack_any(L, c, pk, vmdef, 1, 0);
	/* what the raw trace reader needs: constant opcodes, x64 + GC64 */
	lua_getfield(L, vmdef, "irnames");
	size_t inl = 0;
	const char *irn = lua_tolstring(L, -1, &inl);
	A->kcls_ready = 0;
	A->k2cls_ready = 0;
	for (int i = 0; i < K_N; i++) {
		A->kop[i] = -1;
		size_t kl = strlen(va_kop_names[i]);
		for (size_t o = 0; irn && o + 6 <= inl && o / 6 < 256; o += 6)
			if (!memcmp(irn + o, va_kop_names[i], kl) &&
			    (kl == 6 || irn[o + kl] == ' ')) {
				A->kop[i] = (int)(o / 6);
				break;
			}
	}
	lua_pop(L, 1);
	lua_getfield(L, jit, "arch");
	A->gc64 = gc64;
	A->x64_gc64 =
	    gc64 && lua_isstring(L, -1) && !strcmp(lua_tostring(L, -1), "x64");
	lua_pop(L, 1);
	/* ircalladdr(i) for i = 0..#vmdef.ircall */
	lua_getfield(L, vmdef, "ircall");
	int nc = lua_istable(L, -1) ? (int)lua_objlen(L, -1) : -1;
	lua_pop(L, 1);
	pstr(pk, "ircalladdr");
	pk_map(pk, (uint32_t)(nc + 1));
	for (int i = 0; i <= nc; i++) {
		lua_pushinteger(L, i);
		call_util(L, c, U_IRCALLADDR, 1, 1);
		pk_int(pk, i);
		va_pack_any(L, c, pk, -1, 0, 1);
		lua_pop(L, 1);
	}
	c->in_func = 0;
	return 0;
}
