/* SPDX-License-Identifier: MIT */
/*
 * The auditlog, Lua side (see audit.h, docs/AUDITLOG.md). Every record is
 * built in one protected call: jit.util is called with lua_call from C, the
 * results are packed straight into a msgpack buffer, then the framed record
 * goes to the file with one write(2). Any Lua error while building drops
 * that record (counted) and never reaches the host program.
 */
#include "audit.h"
#include "auditlog.h"
#include "jitsframe.h"
#include "jsfenv.h"
#include "lj.h"

#include <errno.h>
#include <lauxlib.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PRODUCER "jitsframe " JSF_VERSION_STRING

/* ------------------------------------------------------ process state */

static struct alogw *g_w;
static int g_level;
static pid_t g_owner;
static char g_apath[4096];
static uint64_t g_next_fn = 1; /* function ids, unique in the process */
static uint64_t g_dropped, g_funcs;
static uint64_t g_func_ns, g_event_ns, g_write_ns; /* time spent */
static char g_last_err[200];
static msgpack_sbuffer g_sb, g_sbf; /* the record, a func record */
static int g_in_func;		    /* building a func record */
static int g_kbox;		    /* packing a tracek value of type I64/U64 */

/* Per Lua state: cached functions and the function-id table. */
struct astate {
	int util_ref, fnids_ref, tostring_ref, typeof_ref, build_ref;
	int uref[16];	/* registry refs of the jit.util functions (U_*) */
	unsigned gen;	/* writer generation the fnids belong to */
	uint32_t gexit; /* shared exit stubs already sent */
	int gexit_none; /* traceexitstub(i) answers nil: per trace */
};
static const char ASTATE_KEY = 0;

/* util functions, pushed once per record at fixed stack slots */
enum {
	U_FUNCINFO,
	U_FUNCBC,
	U_FUNCK,
	U_FUNCUVNAME,
	U_TRACEINFO,
	U_TRACEIR,
	U_TRACEK,
	U_TRACESNAP,
	U_TRACEMC,
	U_TRACEEXITSTUB,
	U_IRCALLADDR,
	U_N
};
static const char *const util_names[U_N] = {
    "funcinfo", "funcbc",    "funck",	"funcuvname",	 "traceinfo", "traceir",
    "tracek",	"tracesnap", "tracemc", "traceexitstub", "ircalladdr"};

struct ctx {
	struct astate *a;
	int fnids; /* stack index of the weak id table */
	int32_t spadj;
	const char *kind; /* "trace", "record", "texit" */
	int defer;	  /* set by build: write with the next record */
};

static void forked(void);
static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, forked);
}

/* This process's pid without a system call per event: refreshed in a
 * fork child. */
static pid_t g_self;
static void forked(void)
{
	g_self = getpid();
}
static pid_t self(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	if (!g_self) {
		g_self = getpid();
		pthread_once(&once, register_atfork);
	}
	return g_self;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ----------------------------------------------------------- packing */

static void pstr(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str_with_body(pk, s, strlen(s));
}

static void pnum(msgpack_packer *pk, lua_Number d)
{
	/* integral, in range and not -0: an int; else the exact double */
	if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
	    d == floor(d) && !(d == 0 && signbit(d)))
		msgpack_pack_int64(pk, (int64_t)d);
	else
		msgpack_pack_double(pk, d);
}

/* A map whose size is filled in at the end (map32, size patched). */
static size_t map_begin(msgpack_sbuffer *sb)
{
	static const char m[5] = {(char)0xdf, 0, 0, 0, 0};
	size_t at = sb->size;
	msgpack_sbuffer_write(sb, m, 5);
	return at;
}

static void map_end(msgpack_sbuffer *sb, size_t at, uint32_t n)
{
	if (!sb->data || at + 5 > sb->size)
		return;
	sb->data[at + 1] = (char)(n >> 24);
	sb->data[at + 2] = (char)(n >> 16);
	sb->data[at + 3] = (char)(n >> 8);
	sb->data[at + 4] = (char)n;
}

static void pack_any(lua_State *L, struct ctx *c, msgpack_packer *pk, int idx,
		     int expand, int depth);

static void call_util(lua_State *L, struct ctx *c, int u, int nargs, int nres)
{
	lua_rawgeti(L, LUA_REGISTRYINDEX, c->a->uref[u]);
	lua_insert(L, -1 - nargs);
	lua_call(L, nargs, nres);
}

static uint64_t ensure_func(lua_State *L, struct ctx *c, int idx);

/* A Lua value that is neither plain data nor a function. */
static void pack_obj(lua_State *L, struct ctx *c, msgpack_packer *pk, int idx)
{
	int t = lua_type(L, idx);
	/* lua_type() says nil for a trace object (a snapshot's stitched
	 * frame): tostring() and type() say "trace" (replay helper) */
	const char *tn = t == LUA_TNIL ? "trace" : lua_typename(L, t);
	int cd = !strcmp(tn, "cdata");
	/* a proto's location: jit.bc prints it for FNEW (replay helper) */
	int pl = !strcmp(tn, "proto");
	/* LuaJIT names protos "proto" in tostring; its type() says so too */
	int tyof = cd && c->a->typeof_ref != LUA_NOREF;
	msgpack_pack_map(pk, (tyof ? 4 : 3) + pl);
	if (pl) {
		pstr(pk, "loc");
		lua_pushvalue(L, idx);
		call_util(L, c, U_FUNCINFO, 1, 1);
		lua_getfield(L, -1, "loc");
		pack_any(L, c, pk, -1, 0, 1);
		lua_pop(L, 2);
	}
	pstr(pk, "obj");
	pstr(pk, tn);
	pstr(pk, "addr");
	/* a 64-bit integer constant's cdata is a new box per tracek call:
	 * its address means nothing (jit.dump prints the value) */
	msgpack_pack_uint64(
	    pk, cd && g_kbox ? 0 : (uint64_t)(uintptr_t)lua_topointer(L, idx));
	pstr(pk, "str");
	lua_rawgeti(L, LUA_REGISTRYINDEX, c->a->tostring_ref);
	lua_pushvalue(L, idx);
	lua_call(L, 1, 1);
	size_t n;
	const char *s = lua_tolstring(L, -1, &n);
	msgpack_pack_str_with_body(pk, s ? s : "", s ? n : 0);
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
			msgpack_pack_str_with_body(pk, s + 6, n - 7);
		else
			msgpack_pack_str_with_body(pk, s ? s : "", s ? n : 0);
		lua_pop(L, 1);
	}
}

static void pack_any(lua_State *L, struct ctx *c, msgpack_packer *pk, int idx,
		     int expand, int depth)
{
	if (idx < 0)
		idx = lua_gettop(L) + idx + 1;
	switch (lua_type(L, idx)) {
	case LUA_TNIL:
	case LUA_TNONE:
		if (lua_topointer(L, idx)) /* a trace (replay helper) */
			break;
		msgpack_pack_nil(pk);
		return;
	case LUA_TBOOLEAN:
		if (lua_toboolean(L, idx))
			msgpack_pack_true(pk);
		else
			msgpack_pack_false(pk);
		return;
	case LUA_TNUMBER:
		pnum(pk, lua_tonumber(L, idx));
		return;
	case LUA_TSTRING: {
		size_t n;
		const char *s = lua_tolstring(L, idx, &n);
		msgpack_pack_str_with_body(pk, s, n);
		return;
	}
	case LUA_TFUNCTION:
		if (!g_in_func) {
			uint64_t id = ensure_func(L, c, idx);
			msgpack_pack_map(pk, 1);
			pstr(pk, "fn");
			msgpack_pack_uint64(pk, id);
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
				msgpack_pack_array(pk, n);
				for (uint32_t i = 1; i <= n; i++) {
					lua_rawgeti(L, idx, (int)i);
					pack_any(L, c, pk, -1, 1, depth + 1);
					lua_pop(L, 1);
				}
				return;
			}
			msgpack_pack_map(pk, n);
			lua_pushnil(L);
			while (lua_next(L, idx)) {
				pack_any(L, c, pk, -2, 0, depth + 1);
				pack_any(L, c, pk, -1, 1, depth + 1);
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
static void kv_top(lua_State *L, struct ctx *c, msgpack_packer *pk,
		   const char *k, int expand)
{
	pstr(pk, k);
	pack_any(L, c, pk, -1, expand, 0);
	lua_pop(L, 1);
}

/* ------------------------------------------------------------ records */

/* Write a record; a deferred one goes out with the next written one. */
static void put_record(msgpack_sbuffer *sb, int defer)
{
	if (!g_w)
		return;
	uint64_t t0 = now_ns();
	int err = defer ? alogw_defer(g_w, sb->data, sb->size)
			: alogw_write(g_w, sb->data, sb->size);
	g_write_ns += now_ns() - t0;
	if (err) {
		alogw_close(g_w, NULL); /* the writer left its note */
		g_w = NULL;
	}
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
static char *g_dbuf;
static size_t g_dlen, g_dcap;
static int32_t g_bcmode[256]; /* mode + 1 of each op, 0: not yet known */
static uint8_t g_patchable[256];
static int g_patch_ready;

static int dump_writer(lua_State *L, const void *p, size_t sz, void *ud)
{
	(void)L;
	(void)ud;
	if (g_dlen + sz > g_dcap) {
		size_t cap = g_dcap ? g_dcap : 4096;
		while (cap < g_dlen + sz)
			cap *= 2;
		char *nb = realloc(g_dbuf, cap);
		if (!nb)
			return 1;
		g_dbuf = nb;
		g_dcap = cap;
	}
	memcpy(g_dbuf + g_dlen, p, sz);
	g_dlen += sz;
	return 0;
}

static int require_mod(lua_State *L, const char *name);

/* ops with an I- or J-prefixed variant: the VM patches them in place */
static void learn_patchable(lua_State *L)
{
	g_patch_ready = 1;
	size_t n = 0;
	const char *bn = NULL;
	if (require_mod(L, "jit.vmdef") == 0 && lua_istable(L, -1)) {
		lua_getfield(L, -1, "bcnames");
		bn = lua_tolstring(L, -1, &n);
		lua_pop(L, 1); /* the string stays alive in vmdef */
	}
	if (!bn || n % 6 || n / 6 > 256) { /* unknown: read every pc */
		memset(g_patchable, 1, sizeof(g_patchable));
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
				g_patchable[i] = 1;
		}
	}
	lua_pop(L, 1);
}

static void pack_lua_func(lua_State *L, struct ctx *c, msgpack_packer *pk,
			  int idx, int info, int nbc)
{
	msgpack_sbuffer *sb = pk->data;
	if (!g_patch_ready)
		learn_patchable(L);
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

	g_dlen = 0;
	lua_pushvalue(L, idx);
	int derr = lua_dump(L, dump_writer, NULL);
	lua_pop(L, 1);
	/* static: a Lua error below (longjmp) leaves it to the next call */
	static struct alog_fproto fp;
	alog_fproto_free(&fp);
	if (derr)
		luaL_error(L, "func record: lua_dump failed");
	if (alog_fproto_decode(&fp, g_dbuf, g_dlen))
		luaL_error(L, "func record: own dump: %s", fp.err);
	if (fp.sizebc != (uint32_t)nbc)
		luaL_error(L, "func record: dump has %d bytecodes, not %d",
			   (int)fp.sizebc, nbc);
	pstr(pk, "dump");
	msgpack_pack_bin(pk, fp.head_len + fp.proto_len + 1);
	msgpack_pack_bin_body(pk, g_dbuf, fp.head_len);
	msgpack_pack_bin_body(pk, g_dbuf + fp.proto_off, fp.proto_len);
	msgpack_pack_bin_body(pk, "", 1);

	/* live instructions and modes */
	uint8_t used[256];
	memset(used, 0, sizeof(used));
	pstr(pk, "live");
	size_t lm = map_begin(sb);
	uint32_t nl = 0;
	for (uint32_t pc = 0; pc < fp.sizebc; pc++) {
		uint32_t ins = alog_fproto_ins(&fp, pc);
		uint8_t op = (uint8_t)ins;
		if (pc && !g_patchable[op] && g_bcmode[op]) {
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
			msgpack_pack_int64(pk, pc);
			msgpack_pack_int64(pk, (int32_t)lins);
			nl++;
		}
		op = (uint8_t)lins;
		g_bcmode[op] = mode + 1;
		used[op] = 1;
	}
	map_end(sb, lm, nl);
	uint32_t nm = 0;
	for (int op = 0; op < 256; op++)
		nm += used[op];
	pstr(pk, "bcm");
	msgpack_pack_map(pk, nm);
	for (int op = 0; op < 256; op++)
		if (used[op]) {
			msgpack_pack_int64(pk, op);
			msgpack_pack_int64(pk, g_bcmode[op] - 1);
		}

	/* GC constants the dump cannot stand for */
	uint32_t nko = 0;
	for (uint32_t i = 0; i < fp.nkgc; i++)
		nko += fp.kgc[i].kind != ALOG_FK_STR;
	pstr(pk, "kobj");
	msgpack_pack_map(pk, nko);
	for (uint32_t i = 0; i < fp.nkgc; i++) {
		if (fp.kgc[i].kind == ALOG_FK_STR)
			continue;
		int k = (int)i - (int)fp.nkgc;
		lua_pushvalue(L, idx);
		lua_pushinteger(L, k);
		call_util(L, c, U_FUNCK, 2, 1);
		msgpack_pack_int64(pk, k);
		pack_any(L, c, pk, -1, 0, 1);
		lua_pop(L, 1);
	}
	alog_fproto_free(&fp);
}

/* The func record of the function at idx (a new id), written now. */
/* info: stack index of funcinfo(f) (left there) */
static void write_func(lua_State *L, struct ctx *c, int idx, uint64_t id,
		       int info)
{
	uint64_t t0 = now_ns();
	msgpack_sbuffer *sb = &g_sbf;
	msgpack_packer pk;
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	g_in_func = 1;
	size_t m = map_begin(sb);
	uint32_t n = 4;
	pstr(&pk, "ev");
	pstr(&pk, "func");
	pstr(&pk, "ns");
	msgpack_pack_uint64(&pk, now_ns());
	pstr(&pk, "id");
	msgpack_pack_uint64(&pk, id);
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
				msgpack_pack_map(&pk, 4);
				pstr(&pk, "loc");
				lua_getfield(L, info, "loc");
				pack_any(L, c, &pk, -1, 0, 1);
				lua_pop(L, 1);
				pstr(&pk, "obj");
				pstr(&pk, "proto");
				pstr(&pk, "addr");
				msgpack_pack_uint64(
				    &pk,
				    (uint64_t)(uintptr_t)lua_topointer(L, -1));
				pstr(&pk, "str");
				lua_rawgeti(L, LUA_REGISTRYINDEX,
					    c->a->tostring_ref);
				lua_pushvalue(L, -2);
				lua_call(L, 1, 1);
				pack_any(L, c, &pk, -1, 0, 1);
				lua_pop(L, 1);
				k++;
			} else if (strcmp(key, "currentline") &&
				   strcmp(key, "loc")) {
				pack_any(L, c, &pk, -2, 0, 1);
				pack_any(L, c, &pk, -1, 1, 1);
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
	g_in_func = 0;
	g_funcs++;
	g_func_ns += now_ns() - t0;
	put_record(sb, 1); /* with the record that refers to it */
}

/* The id of the function at idx; its func record goes out first. */
static uint64_t ensure_func(lua_State *L, struct ctx *c, int idx)
{
	lua_pushvalue(L, idx);
	lua_rawget(L, c->fnids);
	if (lua_isnumber(L, -1)) {
		uint64_t id = (uint64_t)lua_tonumber(L, -1);
		lua_pop(L, 1);
		return id;
	}
	lua_pop(L, 1);
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
	uint64_t id = g_next_fn++;
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

static uint64_t rec_head(msgpack_packer *pk, const char *ev)
{
	pstr(pk, "ev");
	pstr(pk, ev);
	pstr(pk, "ns");
	uint64_t t = now_ns();
	msgpack_pack_uint64(pk, t);
	return t;
}

static void field_int(msgpack_packer *pk, const char *k, lua_State *L, int idx)
{
	pstr(pk, k);
	if (lua_isnumber(L, idx))
		pnum(pk, lua_tonumber(L, idx));
	else
		msgpack_pack_nil(pk);
}

/* ------------------------------------------------------------ traces */

/* IR opcodes of the constants, from the log's own jit.vmdef.irnames */
enum { K_PRI, K_INT, K_GC, K_PTR, K_KPTR, K_NULL, K_NUM, K_INT64, K_SLOT, K_N };
static const char *const kop_names[K_N] = {
    "KPRI", "KINT", "KGC", "KPTR", "KKPTR", "KNULL", "KNUM", "KINT64", "KSLOT"};
static int g_kop[K_N]; /* opcode of each, -1 unknown */
#define IRT_I64 21     /* IR types of 64-bit integers (jit/dump.lua's too) */
#define IRT_U64 22
static int g_x64_gc64; /* the VM is x64 with GC64: raw reads possible */

/* Raw trace reads (ljtrace.h): not tried yet, checking, on, off. */
enum { RAW_UNTRIED, RAW_CHECKING, RAW_ON, RAW_OFF };
#define RAW_CHECK_TRACES 1 /* traces checked before raw reads alone */
#define RAW_RECHECK 128	   /* then one trace in this many (default) */
static int g_raw;
static unsigned g_raw_recheck = RAW_RECHECK; /* JITSFRAME_AUDIT_RAWCHECK */
static int g_raw_fault;	       /* JITSFRAME_AUDIT_RAWFAULT: tests only */
static unsigned g_raw_mask;    /* candidate layouts still agreeing */
static unsigned g_raw_checked; /* traces found equal */
static uint64_t g_raw_traces, g_raw_stops, g_raw_checks;
static char g_raw_why[200];
static uint8_t g_irmode[256], g_irmode_known[256];
static char g_linkname[256][24]; /* linktype index -> traceinfo's name */
static uint8_t g_linkname_known[256];
static msgpack_sbuffer g_sbu, g_sbr; /* jit.util and raw builds, to compare */

/* GCstr: gct ~LJ_TSTR, the length at offset 16 (before 2.1's string
 * hashing rework) or 20 (after: a string id came in), the bytes at 24 (the
 * header's size either way, GC64). Learnt from the first string constant
 * whose tracek answer matches exactly one of them; -1: neither. */
#define IRT_STR 4
#define GCT_STR 4
static int g_str_len; /* offset of len, 0 unknown, -1 no raw strings */

static void learn_str(uint64_t p, lua_State *L)
{
	size_t n;
	const char *s = lua_tolstring(L, -3, &n);
	const uint8_t *gs = (const uint8_t *)(uintptr_t)p;
	if (!s || !gs || gs[9] != GCT_STR || lua_type(L, -3) != LUA_TSTRING) {
		g_str_len = -1;
		return;
	}
	int ok16 = ljt_u32(gs, 16) == n, ok20 = ljt_u32(gs, 20) == n;
	if (ok16 == ok20 || memcmp(gs + 24, s, n))
		g_str_len = n ? -1 : 0; /* "" tells nothing: ask again */
	else
		g_str_len = ok16 ? 16 : 20;
}

static int is_k64(int o)
{
	return o == g_kop[K_NUM] || o == g_kop[K_INT64] || o == g_kop[K_GC] ||
	       o == g_kop[K_PTR] || o == g_kop[K_KPTR];
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
	msgpack_pack_map(pk, n);
	for (int i = 0; i < 5; i++) {
		lua_getfield(L, idx, f[i]);
		if (!lua_isnil(L, -1))
			kv_top(L, c, pk, f[i], 0);
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
			pack_any(L, c, pk, -2, 0, 1);
			pack_any(L, c, pk, -1, 1, 1);
		}
		lua_pop(L, 1);
	}
}

/* A trace through jit.util: info, ir, k, snap (and with mc, also mc, addr,
 * loop). T (raw, may be NULL) only tells which constant slots hold the
 * second half of a 64-bit constant, which tracek cannot: they are left
 * out, as the raw reader leaves them out. Returns the fields packed. */
static uint32_t pack_trace_util(lua_State *L, struct ctx *c, msgpack_packer *pk,
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
			msgpack_pack_int64(pk, i);
			msgpack_pack_array(pk, 5);
			for (int j = -5; j < 0; j++) /* integers */
				msgpack_pack_int64(pk, lua_tointeger(L, j));
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
			msgpack_pack_int64(pk, i);
			int cnt = lua_isnil(L, -1) ? 2 : 3;
			msgpack_pack_array(pk, (size_t)cnt);
			lua_Integer kt = lua_tointeger(L, -2);
			g_kbox = kt == IRT_I64 || kt == IRT_U64;
			for (int j = -3; j < -3 + cnt; j++)
				pack_any(L, c, pk, j, 0, 1);
			g_kbox = 0;
			n++;
		}
		lua_pop(L, 3);
		if (ir && is_k64(ir[8 * (LJT_REF_BIAS + i) + 5]))
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
		msgpack_pack_int64(pk, i);
		pack_any(L, c, pk, -1, 1, 1);
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
		msgpack_pack_bin(pk, len);
		msgpack_pack_bin_body(pk, code, len);
	} else {
		msgpack_pack_nil(pk);
	}
	field_int(pk, "addr", L, -2);
	field_int(pk, "loop", L, -1);
	lua_pop(L, 3);
	return 7;
}

/* The raw reader's hot loops encode straight into the buffer: the bytes
 * msgpack-c's msgpack_pack_int64 / _array / _map would write (the checks
 * against the jit.util build, which uses msgpack-c, compare them). */
static char *mp_room(msgpack_sbuffer *sb, size_t n)
{
	if (sb->alloc - sb->size < n) {
		size_t na = sb->alloc ? sb->alloc * 2 : 8192;
		while (na - sb->size < n)
			na *= 2;
		char *d = realloc(sb->data, na);
		if (!d)
			return NULL;
		sb->data = d;
		sb->alloc = na;
	}
	return sb->data + sb->size;
}

static char *mp_be(char *p, uint8_t tag, uint64_t v, int bytes)
{
	*p++ = (char)tag;
	for (int i = bytes - 1; i >= 0; i--)
		*p++ = (char)(v >> (8 * i));
	return p;
}

static char *mp_int(char *p, int64_t d)
{
	if (d < -(1LL << 5)) {
		if (d < -(1LL << 15))
			return d < -(1LL << 31)
				   ? mp_be(p, 0xd3, (uint64_t)d, 8)
				   : mp_be(p, 0xd2, (uint64_t)d, 4);
		return d < -(1LL << 7) ? mp_be(p, 0xd1, (uint64_t)d, 2)
				       : mp_be(p, 0xd0, (uint64_t)d, 1);
	}
	if (d < (1LL << 7)) {
		*p++ = (char)(int8_t)d;
		return p;
	}
	if (d < (1LL << 16))
		return d < (1LL << 8) ? mp_be(p, 0xcc, (uint64_t)d, 1)
				      : mp_be(p, 0xcd, (uint64_t)d, 2);
	return d < (1LL << 32) ? mp_be(p, 0xce, (uint64_t)d, 4)
			       : mp_be(p, 0xcf, (uint64_t)d, 8);
}

static char *mp_head(char *p, uint32_t n, uint8_t fix, uint8_t t16)
{
	if (n < 16) {
		*p++ = (char)(fix | n);
		return p;
	}
	return n < 65536 ? mp_be(p, t16, n, 2)
			 : mp_be(p, (uint8_t)(t16 + 1), n, 4);
}

/* The same seven fields from the GCtrace's memory (layout lay). jit.util
 * is still called for what needs a Lua value (a GC constant, a 64-bit
 * integer constant: one tracek each) and once per new IR opcode (its mode,
 * which is not in memory) or link type (its name). -1 if T and jit.util
 * disagree on something looked at twice. */
static int pack_trace_raw(lua_State *L, struct ctx *c, msgpack_packer *pk,
			  msgpack_sbuffer *sb, lua_Integer tr, const uint8_t *T,
			  const struct ljt_layout *lay, lua_Integer *nexit)
{
	const uint32_t B = LJT_REF_BIAS;
	uint32_t nins = ljt_u32(T, lay->nins), nk = ljt_u32(T, lay->nk);
	uint32_t nsnap = ljt_u16(T, lay->nsnap);
	const uint8_t *ir = (const uint8_t *)(uintptr_t)ljt_u64(T, lay->ir);
	if (nins <= B || nk > B || !ir)
		return -1;
	*nexit = nsnap;
	uint32_t lt = ljt_u8(T, lay->linktype);
	if (!g_linkname_known[lt]) {
		lua_pushinteger(L, tr);
		call_util(L, c, U_TRACEINFO, 1, 1);
		lua_getfield(L, -1, "linktype");
		const char *s = lua_tostring(L, -1);
		if (!s || strlen(s) >= sizeof(g_linkname[0])) {
			lua_pop(L, 2);
			return -1;
		}
		strcpy(g_linkname[lt], s);
		g_linkname_known[lt] = 1;
		lua_pop(L, 2);
	}
	pstr(pk, "info");
	msgpack_pack_map(pk, 5);
	pstr(pk, "nins");
	msgpack_pack_int64(pk, (int64_t)nins - B - 1);
	pstr(pk, "nk");
	msgpack_pack_int64(pk, (int64_t)B - nk);
	pstr(pk, "link");
	msgpack_pack_int64(pk, ljt_u16(T, lay->link));
	pstr(pk, "nexit");
	msgpack_pack_int64(pk, nsnap);
	pstr(pk, "linktype");
	pstr(pk, g_linkname[lt]);

	/* modes of opcodes not seen before: learnt from traceir, which must
	 * agree with memory on that instruction */
	for (uint32_t ref = B; ref < nins; ref++) {
		const uint8_t *in = ir + 8 * (size_t)ref;
		uint32_t o = in[5];
		if (g_irmode_known[o])
			continue;
		int64_t op1 = ljt_u16(in, 0), op2 = ljt_u16(in, 2);
		lua_pushinteger(L, tr);
		lua_pushinteger(L, (lua_Integer)(ref - B));
		call_util(L, c, U_TRACEIR, 2, 5);
		uint32_t md = (uint32_t)lua_tointeger(L, -5);
		int ok =
		    !lua_isnil(L, -5) && md < 256 &&
		    lua_tointeger(L, -4) == ljt_u16(in, 4) &&
		    lua_tointeger(L, -3) == op1 - ((md & 3) == 0 ? B : 0) &&
		    lua_tointeger(L, -2) ==
			op2 - (((md >> 2) & 3) == 0 ? B : 0) &&
		    lua_tointeger(L, -1) == ljt_u16(in, 6);
		lua_pop(L, 5);
		if (!ok)
			return -1;
		g_irmode[o] = (uint8_t)md;
		g_irmode_known[o] = 1;
	}
	pstr(pk, "ir");
	size_t m = map_begin(sb);
	char *p = mp_room(sb, (size_t)(nins - B) * 24);
	if (!p)
		return -1;
	for (uint32_t ref = B; ref < nins; ref++) {
		const uint8_t *in = ir + 8 * (size_t)ref;
		uint32_t md = g_irmode[in[5]];
		p = mp_int(p, (int64_t)(ref - B));
		*p++ = (char)0x95; /* array of 5 */
		p = mp_int(p, md);
		p = mp_int(p, ljt_u16(in, 4));
		p = mp_int(p,
			   (int64_t)ljt_u16(in, 0) - ((md & 3) == 0 ? B : 0));
		p = mp_int(p, (int64_t)ljt_u16(in, 2) -
				  (((md >> 2) & 3) == 0 ? B : 0));
		/* fault injection for the tests: one wrong register */
		p = mp_int(p,
			   ljt_u16(in, 6) ^ (g_raw_fault && ref + 1 == nins));
	}
	sb->size = (size_t)(p - sb->data);
	map_end(sb, m, nins - B);

	pstr(pk, "k");
	m = map_begin(sb);
	uint32_t n = 0;
	for (uint32_t ref = nk; ref < B; ref++) {
		const uint8_t *in = ir + 8 * (size_t)ref, *v = in;
		int o = in[5], slot = -1;
		int64_t idx = (int64_t)ref - B;
		if (o == g_kop[K_SLOT]) {
			uint32_t to = ljt_u16(in, 0);
			if (to < nk || to >= B)
				return -1;
			slot = (int)ljt_u16(in, 2);
			v = ir + 8 * (size_t)to;
		}
		int vo = v[5];
		uint32_t t = v[4] & 0x1f; /* irt_type */
		msgpack_pack_int64(pk, idx);
		msgpack_pack_array(pk, slot < 0 ? 2 : 3);
		if (vo == g_kop[K_PRI] && t <= 2) { /* nil, false, true */
			if (t == 0)
				msgpack_pack_nil(pk);
			else if (t == 1)
				msgpack_pack_false(pk);
			else
				msgpack_pack_true(pk);
		} else if (vo == g_kop[K_INT]) {
			int32_t i;
			memcpy(&i, v, 4);
			pnum(pk, i);
		} else if (vo == g_kop[K_NULL]) {
			pnum(pk, 0);
		} else if (vo == g_kop[K_NUM]) {
			double d;
			memcpy(&d, v + 8, 8);
			pnum(pk, d);
		} else if (vo == g_kop[K_PTR] || vo == g_kop[K_KPTR]) {
			pnum(pk, (lua_Number)ljt_u64(v, 8));
		} else if (vo == g_kop[K_GC] && t == IRT_STR && g_str_len > 0) {
			/* a string: its bytes follow the GCstr header */
			const uint8_t *gs =
			    (const uint8_t *)(uintptr_t)ljt_u64(v, 8);
			if (!gs || gs[9] != GCT_STR)
				return -1;
			msgpack_pack_str_with_body(pk, gs + 24,
						   ljt_u32(gs, g_str_len));
		} else { /* a Lua value: ask jit.util */
			lua_pushinteger(L, tr);
			lua_pushinteger(L, (lua_Integer)idx);
			call_util(L, c, U_TRACEK, 2, 3);
			if (lua_tointeger(L, -2) != (lua_Integer)t ||
			    (slot >= 0 && lua_tointeger(L, -1) != slot)) {
				lua_pop(L, 3);
				return -1;
			}
			if (vo == g_kop[K_GC] && t == IRT_STR && !g_str_len)
				learn_str(ljt_u64(v, 8), L);
			g_kbox = t == IRT_I64 || t == IRT_U64;
			pack_any(L, c, pk, -3, 0, 1);
			g_kbox = 0;
			lua_pop(L, 3);
		}
		pnum(pk, t);
		if (slot >= 0)
			pnum(pk, slot);
		n++;
		if (is_k64(o))
			ref++;
	}
	map_end(sb, m, n);

	pstr(pk, "snap");
	m = map_begin(sb);
	const uint8_t *snap = (const uint8_t *)(uintptr_t)ljt_u64(T, lay->snap);
	const uint8_t *map =
	    (const uint8_t *)(uintptr_t)ljt_u64(T, lay->snapmap);
	if (nsnap && (!snap || !map))
		return -1;
	for (uint32_t sn = 0; sn < nsnap; sn++) {
		const uint8_t *S = snap + (size_t)sn * lay->snap_size;
		uint32_t ofs =
		    lay->mapofs_w == 4 ? ljt_u32(S, 0) : ljt_u16(S, 0);
		uint32_t nent = S[lay->snap_nent];
		p = mp_room(sb, 32 + (size_t)nent * 9);
		if (!p)
			return -1;
		p = mp_int(p, sn);
		p = mp_head(p, nent + 3, 0x80, 0xde); /* map */
		p = mp_int(p, 0);
		p = mp_int(p, (int64_t)ljt_u16(S, lay->snap_ref) - B);
		p = mp_int(p, 1);
		p = mp_int(p, S[lay->snap_nslots]);
		for (uint32_t e = 0; e < nent; e++) {
			p = mp_int(p, e + 2);
			p = mp_int(p, (int32_t)ljt_u32(map, 4 * (ofs + e)));
		}
		p = mp_int(p, nent + 2);
		p = mp_int(p, (int32_t)0xff000000u); /* SNAP(255,0,0) */
		sb->size = (size_t)(p - sb->data);
	}
	map_end(sb, m, nsnap);

	const uint8_t *mc = (const uint8_t *)(uintptr_t)ljt_u64(T, lay->mcode);
	pstr(pk, "mc");
	if (mc) {
		uint32_t len = ljt_u32(T, lay->szmcode);
		msgpack_pack_bin(pk, len);
		msgpack_pack_bin_body(pk, mc, len);
		pstr(pk, "addr");
		pnum(pk, (lua_Number)(intptr_t)mc);
		pstr(pk, "loop");
		pnum(pk, ljt_u32(T, lay->mcloop));
	} else {
		msgpack_pack_nil(pk);
		pstr(pk, "addr");
		msgpack_pack_nil(pk);
		pstr(pk, "loop");
		msgpack_pack_nil(pk);
	}
	return 7;
}
static void raw_off(const char *fmt, lua_Integer tr)
{
	g_raw = RAW_OFF;
	snprintf(g_raw_why, sizeof(g_raw_why), fmt, (long long)tr);
}

/* First stop: look for the trace array, keyed by this trace. */
static void raw_discover(lua_State *L, struct ctx *c, lua_Integer tr)
{
	g_raw = RAW_OFF;
	if (!g_x64_gc64) {
		snprintf(g_raw_why, sizeof(g_raw_why),
			 "not an x64 VM with GC64");
		return;
	}
	for (int i = 0; i < K_N; i++)
		if (g_kop[i] < 0) {
			snprintf(g_raw_why, sizeof(g_raw_why),
				 "no IR opcode %s in jit.vmdef", kop_names[i]);
			return;
		}
	struct ljt_known k = {.tr = (uint32_t)tr};
	lua_pushinteger(L, tr);
	call_util(L, c, U_TRACEINFO, 1, 1);
	if (!lua_istable(L, -1)) {
		lua_pop(L, 1);
		raw_off("trace %lld: no traceinfo", tr);
		return;
	}
	lua_getfield(L, -1, "nins");
	lua_getfield(L, -2, "nk");
	lua_getfield(L, -3, "nexit");
	lua_getfield(L, -4, "link");
	k.nins = (uint32_t)lua_tointeger(L, -4);
	k.nk = (uint32_t)lua_tointeger(L, -3);
	k.nexit = (uint32_t)lua_tointeger(L, -2);
	k.link = (uint32_t)lua_tointeger(L, -1);
	lua_pop(L, 5);
	lua_pushinteger(L, tr);
	call_util(L, c, U_TRACEMC, 1, 3);
	size_t len = 0;
	if (lua_isstring(L, -3))
		lua_tolstring(L, -3, &len);
	k.szmcode = (uint32_t)len;
	k.mcode = (uintptr_t)lua_tonumber(L, -2);
	k.mcloop = (uint32_t)lua_tointeger(L, -1);
	lua_pop(L, 3);
	unsigned mask;
	char why[160];
	if (ljt_discover(L, &k, &mask, why, sizeof(why))) {
		snprintf(g_raw_why, sizeof(g_raw_why), "%s", why);
		return;
	}
	g_raw_mask = mask;
	g_raw = RAW_CHECKING;
}

static void sb_reset(msgpack_sbuffer *sb, msgpack_packer *pk)
{
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
}

/* A stopped trace's info, ir, k, snap, mc, addr, loop: from memory once
 * the layout agreed with jit.util on RAW_CHECK_TRACES traces (and again
 * on one trace in RAW_RECHECK), else through jit.util. */
static uint32_t pack_stop_trace(lua_State *L, struct ctx *c, msgpack_packer *pk,
				msgpack_sbuffer *sb, lua_Integer tr,
				lua_Integer *nexit)
{
	msgpack_packer p2;
	if (g_raw == RAW_UNTRIED)
		raw_discover(L, c, tr);
	if (g_raw == RAW_ON && ++g_raw_stops % g_raw_recheck) {
		const struct ljt_layout *lay =
		    &ljt_layouts[__builtin_ctz(g_raw_mask)];
		const uint8_t *T = ljt_trace(L, (uint32_t)tr, lay);
		if (T) {
			sb_reset(&g_sbr, &p2);
			if (pack_trace_raw(L, c, &p2, &g_sbr, tr, T, lay,
					   nexit) == 7) {
				msgpack_sbuffer_write(sb, g_sbr.data,
						      g_sbr.size);
				g_raw_traces++;
				return 7;
			}
			raw_off("trace %lld: its memory and jit.util disagree",
				tr);
		} else {
			raw_off("trace %lld: not found in the trace array", tr);
		}
	}
	if (g_raw == RAW_CHECKING || g_raw == RAW_ON) {
		const struct ljt_layout *l0 =
		    &ljt_layouts[__builtin_ctz(g_raw_mask)];
		const uint8_t *T0 = ljt_trace(L, (uint32_t)tr, l0);
		sb_reset(&g_sbu, &p2);
		uint32_t n =
		    pack_trace_util(L, c, &p2, &g_sbu, tr, 1, T0, l0, nexit);
		for (unsigned i = 0; T0 && ljt_layouts[i].name; i++) {
			if (!(g_raw_mask & (1u << i)))
				continue;
			const struct ljt_layout *lay = &ljt_layouts[i];
			const uint8_t *T = ljt_trace(L, (uint32_t)tr, lay);
			lua_Integer nx = 0;
			sb_reset(&g_sbr, &p2);
			if (!T ||
			    pack_trace_raw(L, c, &p2, &g_sbr, tr, T, lay,
					   &nx) != 7 ||
			    nx != *nexit || g_sbr.size != g_sbu.size ||
			    memcmp(g_sbr.data, g_sbu.data, g_sbu.size))
				g_raw_mask &= ~(1u << i);
		}
		g_raw_checks++;
		if (!T0 || !g_raw_mask)
			raw_off("trace %lld: no known layout gives what "
				"jit.util gives",
				tr);
		else if (++g_raw_checked >= RAW_CHECK_TRACES)
			g_raw = RAW_ON;
		msgpack_sbuffer_write(sb, g_sbu.data, g_sbu.size);
		return n;
	}
	return pack_trace_util(L, c, pk, sb, tr, 1, NULL, NULL, nexit);
}

/* Build a trace-event record: stack 1 = ctx, 2.. = the event's args. */
static int build(lua_State *L)
{
	struct ctx *c = lua_touserdata(L, 1);
	int nargs = lua_gettop(L) - 1;
	lua_rawgeti(L, LUA_REGISTRYINDEX, c->a->fnids_ref);
	c->fnids = lua_gettop(L);

	msgpack_sbuffer *sb = &g_sb;
	msgpack_packer pkv, *pk = &pkv;
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
	size_t m = map_begin(sb);
	uint32_t n = 2;
	if (!strcmp(c->kind, "record")) { /* tr, func, pc, depth */
		/* the func record (if new) goes out before this one */
		uint64_t fid = lua_isfunction(L, 3) ? ensure_func(L, c, 3) : 0;
		rec_head(pk, "record");
		c->defer = 1;
		field_int(pk, "tr", L, 2);
		pstr(pk, "func");
		if (fid)
			msgpack_pack_uint64(pk, fid);
		else
			msgpack_pack_nil(pk);
		field_int(pk, "pc", L, 4);
		field_int(pk, "depth", L, 5);
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
				pack_any(L, c, pk, -2, 0, 1);
				pstr(pk, "m");
				pack_any(L, c, pk, -1, 0, 1);
				n += 2;
			}
			lua_pop(L, 2);
		}
	} else if (!strcmp(c->kind, "texit")) { /* tr, ex, ngpr, nfpr, regs */
		rec_head(pk, "texit");
		field_int(pk, "tr", L, 2);
		field_int(pk, "ex", L, 3);
		field_int(pk, "ngpr", L, 4);
		field_int(pk, "nfpr", L, 5);
		pstr(pk, "regs");
		int nr = nargs > 4 ? nargs - 4 : 0;
		msgpack_pack_array(pk, (size_t)nr);
		for (int i = 0; i < nr; i++)
			pack_any(L, c, pk, 6 + i, 0, 1);
		n += 5;
	} else {
		const char *what = lua_tostring(L, 2);
		if (!what)
			return 0;
		uint64_t fid = 0;
		int is_start = !strcmp(what, "start"),
		    is_stop = !strcmp(what, "stop");
		int is_abort = !strcmp(what, "abort");
		if ((is_start || is_stop || is_abort) && lua_isfunction(L, 4))
			fid = ensure_func(L, c, 4);
		lua_Integer tr = lua_tointeger(L, 3);
		if (is_start) {
			rec_head(pk, "start");
			c->defer = 1;
			field_int(pk, "tr", L, 3);
			pstr(pk, "func");
			msgpack_pack_uint64(pk, fid);
			field_int(pk, "pc", L, 5);
			n += 3;
			if (nargs >= 5) {
				field_int(pk, "otr", L, 6);
				field_int(pk, "oex", L, 7);
				n += 2;
			}
		} else if (is_stop) {
			rec_head(pk, "stop");
			field_int(pk, "tr", L, 3);
			n++;
			if (fid) {
				pstr(pk, "func");
				msgpack_pack_uint64(pk, fid);
				n++;
			}
			lua_Integer nexit = 0;
			n += pack_stop_trace(L, c, pk, sb, tr, &nexit);
			/* exit stubs: shared ones (x86/x64) only when new */
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
					msgpack_pack_int64(pk, i);
					pack_any(L, c, pk, -1, 0, 1);
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
						msgpack_pack_int64(pk, i);
						pack_any(L, c, pk, -1, 0, 1);
						en++;
					}
					lua_pop(L, 1);
				}
				map_end(sb, em, en);
				n++;
			}
			if (c->spadj != INT32_MIN) {
				pstr(pk, "spadj");
				msgpack_pack_int64(pk, c->spadj);
				n++;
			}
		} else if (is_abort) { /* tr, func, pc, err, errinfo */
			rec_head(pk, "abort");
			field_int(pk, "tr", L, 3);
			pstr(pk, "func");
			msgpack_pack_uint64(pk, fid);
			field_int(pk, "pc", L, 5);
			pstr(pk, "err");
			pack_any(L, c, pk, 6, 0, 0);
			pstr(pk, "errinfo");
			pack_any(L, c, pk, 7, 0, 0);
			n += 5;
			lua_Integer nx;
			if (g_level >= VAUDIT_FULL)
				n += pack_trace_util(L, c, pk, sb, tr, 0, NULL,
						     NULL, &nx);
		} else if (!strcmp(what, "flush")) {
			rec_head(pk, "flush");
			c->a->gexit =
			    0; /* the exit stubs are freed with the code */
		} else {
			return 0;
		}
	}
	map_end(sb, m, n);
	/* A trace's start and its recorded bytecodes go out with its stop or
	 * abort, in the same write(2). */
	put_record(sb, c->defer);
	return 0;
}

/* ------------------------------------------------------- state, events */

static int require_mod(lua_State *L, const char *name)
{
	lua_getglobal(L, "require");
	lua_pushstring(L, name);
	return lua_pcall(L, 1, 1, 0);
}

static void new_fnids(lua_State *L, struct astate *a)
{
	if (a->fnids_ref != LUA_NOREF)
		luaL_unref(L, LUA_REGISTRYINDEX, a->fnids_ref);
	lua_newtable(L);
	lua_newtable(L);
	lua_pushstring(L, "k");
	lua_setfield(L, -2, "__mode");
	lua_setmetatable(L, -2);
	a->fnids_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

static struct astate *get_astate(lua_State *L, int create)
{
	lua_pushlightuserdata(L, (void *)&ASTATE_KEY);
	lua_rawget(L, LUA_REGISTRYINDEX);
	struct astate *a = lua_touserdata(L, -1);
	lua_pop(L, 1);
	if (a || !create)
		return a;
	int top = lua_gettop(L);
	if (require_mod(L, "jit.util") || !lua_istable(L, -1)) {
		lua_settop(L, top);
		return NULL;
	}
	lua_pushlightuserdata(L, (void *)&ASTATE_KEY);
	a = lua_newuserdata(L, sizeof(*a));
	memset(a, 0, sizeof(*a));
	a->fnids_ref = a->typeof_ref = LUA_NOREF;
	lua_rawset(L, LUA_REGISTRYINDEX);
	for (int u = 0; u < U_N; u++) {
		lua_getfield(L, -1, util_names[u]);
		a->uref[u] = luaL_ref(L, LUA_REGISTRYINDEX);
	}
	a->util_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	lua_getglobal(L, "tostring");
	a->tostring_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	if (require_mod(L, "ffi") == 0 && lua_istable(L, -1)) {
		lua_getfield(L, -1, "typeof");
		a->typeof_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	}
	lua_settop(L, top);
	lua_pushcfunction(L, build); /* one closure, not one per event */
	a->build_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	new_fnids(L, a);
	a->gen = alogw_gen(g_w);
	return a;
}

static void event(lua_State *L, const char *kind, int32_t spadj)
{
	if (!g_w)
		return;
	if (g_owner != self()) { /* a fork child: the log is the parent's */
		alogw_forget(g_w);
		g_w = NULL;
		return;
	}
	struct astate *a = get_astate(L, 1);
	if (!a)
		return;
	alogw_begin(g_w);
	if (alogw_gen(g_w) != a->gen) { /* a new file: resend funcs */
		new_fnids(L, a);
		a->gexit = 0;
		a->gen = alogw_gen(g_w);
	}
	int n = lua_gettop(L);
	if (!lua_checkstack(L, n + 48))
		return;
	struct ctx c = {.a = a, .spadj = spadj, .kind = kind};
	lua_rawgeti(L, LUA_REGISTRYINDEX, a->build_ref);
	lua_pushlightuserdata(L, &c);
	for (int i = 1; i <= n; i++)
		lua_pushvalue(L, i);
	g_in_func = 0;
	uint64_t t0 = now_ns();
	int perr = lua_pcall(L, n + 1, 0, 0);
	g_event_ns += now_ns() - t0;
	if (perr) {
		g_dropped++;
		const char *e = lua_tostring(L, -1);
		snprintf(g_last_err, sizeof(g_last_err), "%s", e ? e : "?");
	}
	g_in_func = 0;
	lua_settop(L, n);
}

void vaudit_trace(lua_State *L, int32_t spadj)
{
	event(L, "trace", spadj);
}

void vaudit_record(lua_State *L)
{
	if (g_level >= VAUDIT_FULL)
		event(L, "record", INT32_MIN);
}

void vaudit_texit(lua_State *L)
{
	if (g_level >= VAUDIT_FULL)
		event(L, "texit", INT32_MIN);
}

int vaudit_level(void)
{
	return g_w && g_owner == self() ? g_level : 0;
}

const char *vaudit_path(void)
{
	return g_apath;
}

/* ------------------------------------------------------------- header */

/* Header: stack 1 = ctx, 2 = level string. */
static int build_header(lua_State *L)
{
	struct ctx *c = lua_touserdata(L, 1);
	lua_rawgeti(L, LUA_REGISTRYINDEX, c->a->fnids_ref);
	c->fnids = lua_gettop(L);
	g_in_func = 1; /* no functions expected: never emit func records */
	msgpack_sbuffer *sb = &g_sb;
	msgpack_packer pkv, *pk = &pkv;
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	msgpack_pack_map(pk, 12);
	rec_head(pk, "header");
	pstr(pk, "format");
	msgpack_pack_int(pk, 2); /* 2: func records carry a bytecode dump */
	pstr(pk, "producer");
	pstr(pk, PRODUCER);
	pstr(pk, "level");
	pstr(pk, g_level >= VAUDIT_FULL ? "full" : "default");
	pstr(pk, "pid");
	msgpack_pack_int64(pk, getpid());
	pstr(pk, "unix_ns");
	msgpack_pack_uint64(pk, (uint64_t)rt.tv_sec * 1000000000u +
				    (uint64_t)rt.tv_nsec);
	pstr(pk, "clock");
	pstr(pk, "CLOCK_MONOTONIC");
	pstr(pk, "byteorder");
	pstr(pk, "little"); /* of the framing; msgpack is big-endian */
	/* vm */
	if (require_mod(L, "jit"))
		lua_error(L);
	int jit = lua_gettop(L);
	pstr(pk, "vm");
	msgpack_pack_map(pk, 6);
	static const char *const vf[] = {"version", "version_num", "arch",
					 "os"};
	for (int i = 0; i < 4; i++) {
		lua_getfield(L, jit, vf[i]);
		kv_top(L, c, pk, vf[i], 0);
	}
	pstr(pk, "gc64");
	int gc64 = 0;
	if (require_mod(L, "ffi") == 0 && lua_istable(L, -1)) {
		lua_getfield(L, -1, "abi");
		lua_pushstring(L, "gc64");
		lua_call(L, 1, 1);
		gc64 = lua_toboolean(L, -1);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	if (gc64)
		msgpack_pack_true(pk);
	else
		msgpack_pack_false(pk);
	pstr(pk, "status");
	int before = lua_gettop(L);
	lua_getfield(L, jit, "status");
	lua_call(L, 0, LUA_MULTRET);
	int ns = lua_gettop(L) - before;
	msgpack_pack_array(pk, (size_t)ns);
	for (int i = 1; i <= ns; i++)
		pack_any(L, c, pk, before + i, 0, 1);
	lua_settop(L, before);
	/* vmdef, generically */
	if (require_mod(L, "jit.vmdef"))
		lua_error(L);
	int vmdef = lua_gettop(L);
	pstr(pk, "vmdef");
	pack_any(L, c, pk, vmdef, 1, 0);
	/* what the raw trace reader needs: constant opcodes, x64 + GC64 */
	lua_getfield(L, vmdef, "irnames");
	size_t inl = 0;
	const char *irn = lua_tolstring(L, -1, &inl);
	for (int i = 0; i < K_N; i++) {
		g_kop[i] = -1;
		size_t kl = strlen(kop_names[i]);
		for (size_t o = 0; irn && o + 6 <= inl && o / 6 < 256; o += 6)
			if (!memcmp(irn + o, kop_names[i], kl) &&
			    (kl == 6 || irn[o + kl] == ' ')) {
				g_kop[i] = (int)(o / 6);
				break;
			}
	}
	lua_pop(L, 1);
	lua_getfield(L, jit, "arch");
	g_x64_gc64 =
	    gc64 && lua_isstring(L, -1) && !strcmp(lua_tostring(L, -1), "x64");
	lua_pop(L, 1);
	/* ircalladdr(i) for i = 0..#vmdef.ircall */
	lua_getfield(L, vmdef, "ircall");
	int nc = lua_istable(L, -1) ? (int)lua_objlen(L, -1) : -1;
	lua_pop(L, 1);
	pstr(pk, "ircalladdr");
	msgpack_pack_map(pk, (uint32_t)(nc + 1));
	for (int i = 0; i <= nc; i++) {
		lua_pushinteger(L, i);
		call_util(L, c, U_IRCALLADDR, 1, 1);
		msgpack_pack_int64(pk, i);
		pack_any(L, c, pk, -1, 0, 1);
		lua_pop(L, 1);
	}
	g_in_func = 0;
	return 0;
}

int vaudit_open(lua_State *L, const struct vaudit_cfg *cfg, char *err,
		size_t errlen)
{
	if (g_w && g_owner == self()) {
		snprintf(err, errlen, "this process already logs to %s",
			 g_apath);
		return -EBUSY;
	}
	if (g_w) { /* inherited over fork */
		alogw_forget(g_w);
		g_w = NULL;
	}
	g_level = cfg->level;
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
		if (v == 0 && g_raw != RAW_OFF) {
			g_raw = RAW_OFF;
			snprintf(g_raw_why, sizeof(g_raw_why),
				 JSF_ENV_AUDIT_RAWCHECK "=0");
		}
		g_raw_recheck = v ? (unsigned)v : RAW_RECHECK;
	}
	g_raw_fault = getenv(JSF_ENV_AUDIT_RAWFAULT) != NULL;
	struct astate *a = get_astate(L, 1);
	if (!a) {
		snprintf(err, errlen, "no jit.util");
		return -ENOENT;
	}
	struct ctx c = {.a = a, .spadj = INT32_MIN, .kind = "header"};
	lua_pushcfunction(L, build_header);
	lua_pushlightuserdata(L, &c);
	if (lua_pcall(L, 1, 0, 0)) {
		snprintf(err, errlen, "building the header: %s",
			 lua_tostring(L, -1));
		lua_pop(L, 1);
		g_in_func = 0;
		return -EINVAL;
	}
	const char *nm = getenv(JSF_ENV_AUDITLOG_NOMAP);
	struct alogw_opts o = {cfg->path, cfg->max_bytes, cfg->keep,
			       cfg->replace, nm && *nm && strcmp(nm, "0")};
	int e = alogw_open(&g_w, &o, g_sb.data, g_sb.size);
	if (e) {
		snprintf(err, errlen, "%s: %s", cfg->path, strerror(-e));
		return e;
	}
	g_owner = self();
	snprintf(g_apath, sizeof(g_apath), "%s", cfg->path);
	a->gen = alogw_gen(g_w);
	new_fnids(L, a);
	a->gexit = 0;
	return 0;
}

void vaudit_close(const char *note)
{
	if (g_w && g_owner == self())
		alogw_close(g_w, note);
	else if (g_w)
		alogw_forget(g_w);
	g_w = NULL;
}

void vaudit_stats(lua_State *L)
{
	lua_createtable(L, 0, 8);
	lua_pushstring(L, g_apath);
	lua_setfield(L, -2, "path");
	lua_pushboolean(L, g_w != NULL);
	lua_setfield(L, -2, "logging");
	lua_pushstring(L, g_level >= VAUDIT_FULL ? "full" : "default");
	lua_setfield(L, -2, "level");
	lua_pushnumber(L, (lua_Number)alogw_records(g_w));
	lua_setfield(L, -2, "records");
	lua_pushnumber(L, (lua_Number)alogw_bytes(g_w));
	lua_setfield(L, -2, "bytes");
	lua_pushnumber(L, (lua_Number)g_dropped);
	lua_setfield(L, -2, "dropped");
	lua_pushnumber(L, (lua_Number)g_funcs);
	lua_setfield(L, -2, "funcs");
	/* time (ns) in building records (func records included), in func
	 * records alone, and in write(2) */
	lua_pushnumber(L, (lua_Number)g_event_ns);
	lua_setfield(L, -2, "event_ns");
	lua_pushnumber(L, (lua_Number)g_func_ns);
	lua_setfield(L, -2, "func_ns");
	lua_pushnumber(L, (lua_Number)g_write_ns);
	lua_setfield(L, -2, "write_ns");
	/* the raw trace reader (ljtrace.h): state, traces read raw */
	static const char *const rs[] = {"untried", "checking", "on", "off"};
	lua_pushstring(L, rs[g_raw]);
	lua_setfield(L, -2, "raw");
	lua_pushnumber(L, (lua_Number)g_raw_traces);
	lua_setfield(L, -2, "raw_traces");
	lua_pushnumber(L, (lua_Number)g_raw_checks);
	lua_setfield(L, -2, "raw_checked");
	lua_pushboolean(L, g_str_len > 0); /* string constants read raw */
	lua_setfield(L, -2, "raw_strings");
	if (g_raw_why[0]) {
		lua_pushstring(L, g_raw_why);
		lua_setfield(L, -2, "raw_off");
	}
	if (g_last_err[0]) {
		lua_pushstring(L, g_last_err);
		lua_setfield(L, -2, "last_error");
	}
	if (alogw_error(g_w)) {
		lua_pushstring(L, alogw_error(g_w));
		lua_setfield(L, -2, "error");
	}
}

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
