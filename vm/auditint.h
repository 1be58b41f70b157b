/* SPDX-License-Identifier: MIT */
/*
 * What the auditlog's files in vm/ share (audit.h says which does what):
 * the per-Lua-state cache, the context of one record's build, the packing
 * helpers, the constants the raw reader and the builders agree on.
 */
#ifndef VM_AUDITINT_H
#define VM_AUDITINT_H

#include "audit.h"
#include "auditlog.h"
#include "jitsframe.h"
#include "lj.h"

#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Per Lua state: cached functions and the function-id table. */
struct astate {
	struct vaudit *A; /* whose cache (vaudit.ast) may point here */
	int util_ref, fnids_ref, tostring_ref, typeof_ref, build_ref;
	int uref[16];	/* registry refs of the jit.util functions (U_*) */
	unsigned gen;	/* writer generation the fnids belong to */
	uint32_t gexit; /* shared exit stubs already sent */
	int gexit_none; /* traceexitstub(i) answers nil: per trace */
	int tracek_c;	/* jit.util.tracek is a C function (audit_raw.c) */
	/* objects -> their packed bytes (audit_build.c, pack_obj), a weak-
	 * keyed table; LUA_NOREF: not used (tostring or funcinfo replaced) */
	int kobj_ref;
};

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

/* One record's build (and the header's). */
struct ctx {
	struct vaudit *A;
	struct astate *a;
	int fnids; /* stack index of the weak id table */
	int32_t spadj;
	const char *kind; /* "trace", "record", "texit" */
	int defer;	  /* set by build: write with the next record */
	int in_func;	  /* building a func record: functions not followed */
	int kbox;	  /* packing a tracek value of type I64/U64 */
	/* Built without lua_pcall (audit_write.c): nothing may call into Lua
	 * or raise. Where the build would need to (a new function, jit.util,
	 * a check trace, a Lua value's tostring) it sets bail and stops; the
	 * event is then built again, protected, from the start. */
	int nolua, bail;
	uint64_t now; /* the event's CLOCK_MONOTONIC ns, 0: read it */
};

/* IR opcodes of the constants, from the log's own jit.vmdef.irnames */
enum { K_PRI, K_INT, K_GC, K_PTR, K_KPTR, K_NULL, K_NUM, K_INT64, K_SLOT, K_N };
_Static_assert(K_N == VAUDIT_NKOP, "struct vaudit's kop[]");
extern const char *const va_kop_names[K_N];
#define IRT_I64 21 /* IR types of 64-bit integers (jit/dump.lua's too) */
#define IRT_U64 22

/* Raw trace reads (ljtrace.h): not tried yet, checking, on, off. */
enum { RAW_UNTRIED, RAW_CHECKING, RAW_ON, RAW_OFF };

/* ----------------------------------------------------------- packing */

/* Every packer here writes into a msgpack_sbuffer (pk->data): values go
 * straight into it through audit/auditmp.h (msgpack-c's bytes, without a
 * callback per element). */
#define PK_SB(pk) ((msgpack_sbuffer *)(pk)->data)

static inline void pk_int(msgpack_packer *pk, int64_t v)
{
	alog_mpw_int(PK_SB(pk), v);
}
static inline void pk_uint(msgpack_packer *pk, uint64_t v)
{
	alog_mpw_uint(PK_SB(pk), v);
}
static inline void pk_map(msgpack_packer *pk, size_t n)
{
	alog_mpw_map(PK_SB(pk), n);
}
static inline void pk_array(msgpack_packer *pk, size_t n)
{
	alog_mpw_array(PK_SB(pk), n);
}
static inline void pk_nil(msgpack_packer *pk)
{
	alog_mpw_nil(PK_SB(pk));
}
static inline void pk_bool(msgpack_packer *pk, int b)
{
	alog_mpw_bool(PK_SB(pk), b);
}
static inline void pk_double(msgpack_packer *pk, double d)
{
	alog_mpw_double(PK_SB(pk), d);
}
static inline void pk_str(msgpack_packer *pk, const void *s, size_t n)
{
	alog_mpw_str(PK_SB(pk), s, n);
}
static inline void pk_bin(msgpack_packer *pk, size_t n)
{
	alog_mpw_binhead(PK_SB(pk), n);
}
static inline void pk_body(msgpack_packer *pk, const void *b, size_t n)
{
	alog_mpw_bytes(PK_SB(pk), b, n);
}

static inline __attribute__((always_inline)) void pstr(msgpack_packer *pk,
						       const char *s)
{
	size_t n = strlen(s);
	/* a literal key (n known here, a fixstr): its head and bytes with
	 * one room check, for as much room as pk_str's head asks (so that
	 * where the buffer cannot grow, pk_str below leaves out what it
	 * always did) */
	if (__builtin_constant_p(n) && n < 32) {
		msgpack_sbuffer *sb = PK_SB(pk);
		char *p = alog_mpw_room(sb, n + 1 < 5 ? 5 : n + 1);
		if (p) {
			p[0] = (char)(0xa0 | n);
			memcpy(p + 1, s, n);
			sb->size += n + 1;
			return;
		}
	}
	pk_str(pk, s, n);
}

static inline void pnum(msgpack_packer *pk, lua_Number d)
{
	/* integral, in range and not -0: an int; else the exact double
	 * (in range, d is integral exactly when its truncation equals it) */
	if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
	    (double)(int64_t)d == d && !(d == 0 && signbit(d)))
		pk_int(pk, (int64_t)d);
	else
		pk_double(pk, d);
}

/* A map whose size is filled in at the end (map32, size patched). */
static inline size_t map_begin(msgpack_sbuffer *sb)
{
	static const char m[5] = {(char)0xdf, 0, 0, 0, 0};
	size_t at = sb->size;
	alog_mpw_bytes(sb, m, 5);
	return at;
}

static inline void map_end(msgpack_sbuffer *sb, size_t at, uint32_t n)
{
	if (!sb->data || at + 5 > sb->size)
		return;
	sb->data[at + 1] = (char)(n >> 24);
	sb->data[at + 2] = (char)(n >> 16);
	sb->data[at + 3] = (char)(n >> 8);
	sb->data[at + 4] = (char)n;
}

/* jit.util's function u pushed (its arguments go on top of it) */
static inline void push_util(lua_State *L, struct ctx *c, int u)
{
	lua_rawgeti(L, LUA_REGISTRYINDEX, c->a->uref[u]);
}

/* jit.util's function u called on the nargs values on top */
static inline void call_util(lua_State *L, struct ctx *c, int u, int nargs,
			     int nres)
{
	/* with c->nolua only for tracek (audit_raw.c says when): every
	 * other caller bails first */
	push_util(L, c, u);
	lua_insert(L, -1 - nargs);
	lua_call(L, nargs, nres);
}

/* what the raw reader's constant loop asks of an opcode (vaudit.kcls) */
enum {
	VA_KC_K64 = 1,	/* is_k64 */
	VA_KC_INL = 2,	/* alog_raw_k_inline whatever the type */
	VA_KC_PRI = 4,	/* alog_raw_k_inline if the type is <= 2 */
	VA_KC_SLOT = 8, /* KSLOT */
};

/* a constant op whose value takes the next slot too */
static inline int is_k64(const struct vaudit *A, int o)
{
	return o == A->kop[K_NUM] || o == A->kop[K_INT64] ||
	       o == A->kop[K_GC] || o == A->kop[K_PTR] || o == A->kop[K_KPTR];
}

/* --------------------------------------- the builders (audit_build.c) */

void va_pack_any(lua_State *L, struct ctx *c, msgpack_packer *pk, int idx,
		 int expand, int depth);
/* key then the value at the top of the stack (popped) */
void va_kv_top(lua_State *L, struct ctx *c, msgpack_packer *pk, const char *k,
	       int expand);
/* The id of the function at idx; its func record goes out first. */
uint64_t va_ensure_func(lua_State *L, struct ctx *c, int idx);
/* "ev" and "ns": the event's time (c->now, read once per event) unless
 * a func record went out since (0: read the clock). ev: a string
 * literal (its length is its size). */
static inline __attribute__((always_inline)) uint64_t
va_rec_head_n(struct ctx *c, msgpack_packer *pk, const char *ev)
{
	pstr(pk, "ev");
	pstr(pk, ev);
	pstr(pk, "ns");
	uint64_t t = c->now ? c->now : jsf_now_ns();
	pk_uint(pk, t);
	return t;
}
#define va_rec_head(c, pk, ev) va_rec_head_n(c, pk, "" ev)
/* key k (kl bytes), then the number at idx (nil if none): a number, or a
 * string that converts to one (lua_isnumber's), as lua_tonumber reads
 * it; one API call */
static inline __attribute__((always_inline)) void
va_field_num(msgpack_packer *pk, const char *k, size_t kl, lua_State *L,
	     int idx)
{
	pk_str(pk, k, kl);
	int isnum = 0;
	lua_Number d = lua_tonumberx(L, idx, &isnum);
	if (isnum)
		pnum(pk, d);
	else
		pk_nil(pk);
}
/* the same with k a string literal */
#define va_field_int(pk, k, L, idx) \
	va_field_num(pk, "" k, sizeof(k) - 1, L, idx)
/* A trace through jit.util (see audit_build.c). */
uint32_t va_pack_trace_util(lua_State *L, struct ctx *c, msgpack_packer *pk,
			    msgpack_sbuffer *sb, lua_Integer tr, int mc,
			    const uint8_t *T, const struct ljt_layout *lay,
			    lua_Integer *nexit);
/* Lua C functions run protected: a trace-event record (stack 1 = ctx, 2..
 * = the event's args), the header (1 = ctx) into A->sb. */
int va_build(lua_State *L);
int va_build_header(lua_State *L);

/* ------------------------------------------ the raw reader (audit_raw.c) */

/* A stopped trace's info, ir, k, snap, mc, addr, loop: raw or through
 * jit.util. Returns the fields packed. */
uint32_t va_pack_stop_trace(lua_State *L, struct ctx *c, msgpack_packer *pk,
			    msgpack_sbuffer *sb, lua_Integer tr,
			    lua_Integer *nexit);

/* ---------------------------------------- the writer glue (audit_write.c) */

/* Write a record; a deferred one goes out with the next written one. */
void va_put_record(struct vaudit *A, msgpack_sbuffer *sb, int defer);

#endif
