/* SPDX-License-Identifier: MIT */
/*
 * The auditlog's raw trace reader (audit.h): a stopped trace's IR,
 * constants, snapshots and machine code read from the GCtrace's memory
 * (lj/ljtrace.h) once a layout agreed with jit.util, checked again on one
 * trace in A->raw_recheck; else, or on any disagreement, jit.util.
 */
#include "auditint.h"
#include "vm.h"

#include "lj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RAW_CHECK_TRACES 1 /* traces checked before raw reads alone */

const char *const va_kop_names[K_N] = {
    "KPRI", "KINT", "KGC", "KPTR", "KKPTR", "KNULL", "KNUM", "KINT64", "KSLOT"};

/* GCstr: gct ~LJ_TSTR, the length at offset 16 (before 2.1's string
 * hashing rework) or 20 (after: a string id came in), the bytes at 24 (the
 * header's size either way, GC64). Learnt from the first string constant
 * whose tracek answer matches exactly one of them; -1: neither. */
#define IRT_STR 4
#define GCT_STR 4

static void learn_str(struct vaudit *A, uint64_t p, lua_State *L)
{
	size_t n;
	const char *s = lua_tolstring(L, -3, &n);
	const uint8_t *gs = (const uint8_t *)(uintptr_t)p;
	if (!s || !gs || gs[9] != GCT_STR || lua_type(L, -3) != LUA_TSTRING) {
		A->str_len = -1;
		return;
	}
	int ok16 = ljt_u32(gs, 16) == n, ok20 = ljt_u32(gs, 20) == n;
	if (ok16 == ok20 || memcmp(gs + 24, s, n))
		A->str_len = n ? -1 : 0; /* "" tells nothing: ask again */
	else
		A->str_len = ok16 ? 16 : 20;
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
	struct vaudit *A = c->A;
	const uint32_t B = LJT_REF_BIAS;
	uint32_t nins = ljt_u32(T, lay->nins), nk = ljt_u32(T, lay->nk);
	uint32_t nsnap = ljt_u16(T, lay->nsnap);
	const uint8_t *ir = (const uint8_t *)(uintptr_t)ljt_u64(T, lay->ir);
	if (nins <= B || nk > B || !ir)
		return -1;
	*nexit = nsnap;
	uint32_t lt = ljt_u8(T, lay->linktype);
	if (!A->linkname_known[lt]) {
		lua_pushinteger(L, tr);
		call_util(L, c, U_TRACEINFO, 1, 1);
		lua_getfield(L, -1, "linktype");
		const char *s = lua_tostring(L, -1);
		size_t len = s ? strlen(s) : 0;
		if (!s || len >= sizeof(A->linkname[0])) {
			lua_pop(L, 2);
			return -1;
		}
		memcpy(A->linkname[lt], s, len + 1);
		A->linkname_known[lt] = 1;
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
	pstr(pk, A->linkname[lt]);

	/* modes of opcodes not seen before: learnt from traceir, which must
	 * agree with memory on that instruction */
	for (uint32_t ref = B; ref < nins; ref++) {
		const uint8_t *in = ir + 8 * (size_t)ref;
		uint32_t o = in[5];
		if (A->irmode_known[o])
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
		A->irmode[o] = (uint8_t)md;
		A->irmode_known[o] = 1;
	}
	pstr(pk, "ir");
	size_t m = map_begin(sb);
	char *p = mp_room(sb, (size_t)(nins - B) * 24);
	if (!p)
		return -1;
	for (uint32_t ref = B; ref < nins; ref++) {
		const uint8_t *in = ir + 8 * (size_t)ref;
		uint32_t md = A->irmode[in[5]];
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
			   ljt_u16(in, 6) ^ (A->raw_fault && ref + 1 == nins));
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
		if (o == A->kop[K_SLOT]) {
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
		if (vo == A->kop[K_PRI] && t <= 2) { /* nil, false, true */
			if (t == 0)
				msgpack_pack_nil(pk);
			else if (t == 1)
				msgpack_pack_false(pk);
			else
				msgpack_pack_true(pk);
		} else if (vo == A->kop[K_INT]) {
			int32_t i;
			memcpy(&i, v, 4);
			pnum(pk, i);
		} else if (vo == A->kop[K_NULL]) {
			pnum(pk, 0);
		} else if (vo == A->kop[K_NUM]) {
			double d;
			memcpy(&d, v + 8, 8);
			pnum(pk, d);
		} else if (vo == A->kop[K_PTR] || vo == A->kop[K_KPTR]) {
			pnum(pk, (lua_Number)ljt_u64(v, 8));
		} else if (vo == A->kop[K_GC] && t == IRT_STR &&
			   A->str_len > 0) {
			/* a string: its bytes follow the GCstr header */
			const uint8_t *gs =
			    (const uint8_t *)(uintptr_t)ljt_u64(v, 8);
			if (!gs || gs[9] != GCT_STR)
				return -1;
			msgpack_pack_str_with_body(pk, gs + 24,
						   ljt_u32(gs, A->str_len));
		} else { /* a Lua value: ask jit.util */
			lua_pushinteger(L, tr);
			lua_pushinteger(L, (lua_Integer)idx);
			call_util(L, c, U_TRACEK, 2, 3);
			if (lua_tointeger(L, -2) != (lua_Integer)t ||
			    (slot >= 0 && lua_tointeger(L, -1) != slot)) {
				lua_pop(L, 3);
				return -1;
			}
			if (vo == A->kop[K_GC] && t == IRT_STR && !A->str_len)
				learn_str(A, ljt_u64(v, 8), L);
			c->kbox = t == IRT_I64 || t == IRT_U64;
			va_pack_any(L, c, pk, -3, 0, 1);
			c->kbox = 0;
			lua_pop(L, 3);
		}
		pnum(pk, t);
		if (slot >= 0)
			pnum(pk, slot);
		n++;
		if (is_k64(A, o))
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
static void raw_off(struct vaudit *A, const char *fmt, lua_Integer tr)
{
	A->raw = RAW_OFF;
	snprintf(A->raw_why, sizeof(A->raw_why), fmt, (long long)tr);
}

/* First stop: look for the trace array, keyed by this trace. */
static void raw_discover(lua_State *L, struct ctx *c, lua_Integer tr)
{
	struct vaudit *A = c->A;
	A->raw = RAW_OFF;
	if (!A->x64_gc64) {
		snprintf(A->raw_why, sizeof(A->raw_why),
			 "not an x64 VM with GC64");
		return;
	}
	for (int i = 0; i < K_N; i++)
		if (A->kop[i] < 0) {
			snprintf(A->raw_why, sizeof(A->raw_why),
				 "no IR opcode %s in jit.vmdef",
				 va_kop_names[i]);
			return;
		}
	struct ljt_known k = {.tr = (uint32_t)tr};
	lua_pushinteger(L, tr);
	call_util(L, c, U_TRACEINFO, 1, 1);
	if (!lua_istable(L, -1)) {
		lua_pop(L, 1);
		raw_off(A, "trace %lld: no traceinfo", tr);
		return;
	}
	vm_known_info(L, -1, &k);
	lua_pop(L, 1);
	lua_pushinteger(L, tr);
	call_util(L, c, U_TRACEMC, 1, 3);
	vm_known_mc(L, -3, &k);
	lua_pop(L, 3);
	unsigned mask;
	char why[160];
	if (ljt_discover(L, &k, &mask, why, sizeof(why))) {
		snprintf(A->raw_why, sizeof(A->raw_why), "%s", why);
		return;
	}
	A->raw_mask = mask;
	A->raw = RAW_CHECKING;
}

static void sb_reset(msgpack_sbuffer *sb, msgpack_packer *pk)
{
	msgpack_sbuffer_clear(sb);
	msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
}

/* A stopped trace's info, ir, k, snap, mc, addr, loop: from memory once
 * the layout agreed with jit.util on RAW_CHECK_TRACES traces (and again
 * on one trace in A->raw_recheck), else through jit.util. */
uint32_t va_pack_stop_trace(lua_State *L, struct ctx *c, msgpack_packer *pk,
			    msgpack_sbuffer *sb, lua_Integer tr,
			    lua_Integer *nexit)
{
	struct vaudit *A = c->A;
	msgpack_packer p2;
	if (A->raw == RAW_UNTRIED)
		raw_discover(L, c, tr);
	if (A->raw == RAW_ON && ++A->raw_stops % A->raw_recheck) {
		const struct ljt_layout *lay =
		    &ljt_layouts[__builtin_ctz(A->raw_mask)];
		const uint8_t *T = ljt_trace(L, (uint32_t)tr, lay);
		if (T) {
			sb_reset(&A->sbr, &p2);
			if (pack_trace_raw(L, c, &p2, &A->sbr, tr, T, lay,
					   nexit) == 7) {
				msgpack_sbuffer_write(sb, A->sbr.data,
						      A->sbr.size);
				A->raw_traces++;
				return 7;
			}
			raw_off(A,
				"trace %lld: its memory and jit.util disagree",
				tr);
		} else {
			raw_off(A, "trace %lld: not found in the trace array",
				tr);
		}
	}
	if (A->raw == RAW_CHECKING || A->raw == RAW_ON) {
		const struct ljt_layout *l0 =
		    &ljt_layouts[__builtin_ctz(A->raw_mask)];
		const uint8_t *T0 = ljt_trace(L, (uint32_t)tr, l0);
		sb_reset(&A->sbu, &p2);
		uint32_t n = va_pack_trace_util(L, c, &p2, &A->sbu, tr, 1, T0,
						l0, nexit);
		for (unsigned i = 0; T0 && ljt_layouts[i].name; i++) {
			if (!(A->raw_mask & (1u << i)))
				continue;
			const struct ljt_layout *lay = &ljt_layouts[i];
			const uint8_t *T = ljt_trace(L, (uint32_t)tr, lay);
			lua_Integer nx = 0;
			sb_reset(&A->sbr, &p2);
			if (!T ||
			    pack_trace_raw(L, c, &p2, &A->sbr, tr, T, lay,
					   &nx) != 7 ||
			    nx != *nexit || A->sbr.size != A->sbu.size ||
			    memcmp(A->sbr.data, A->sbu.data, A->sbu.size))
				A->raw_mask &= ~(1u << i);
		}
		A->raw_checks++;
		if (!T0 || !A->raw_mask)
			raw_off(A,
				"trace %lld: no known layout gives what "
				"jit.util gives",
				tr);
		else if (++A->raw_checked >= RAW_CHECK_TRACES)
			A->raw = RAW_ON;
		msgpack_sbuffer_write(sb, A->sbu.data, A->sbu.size);
		return n;
	}
	return va_pack_trace_util(L, c, pk, sb, tr, 1, NULL, NULL, nexit);
}