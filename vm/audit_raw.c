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

/* Where entry x is among the previous snapshot's entries pe[cur..cur+4]
 * (pn of them): its first index from cur, 5 if none. */
static inline uint32_t snap_ahead(const uint32_t *pe, uint32_t cur, uint32_t pn,
				  uint32_t x)
{
	uint32_t n = pn - cur < 5 ? pn - cur : 5;
	for (uint32_t k = 0; k < n; k++)
		if (pe[cur + k] == x)
			return k;
	return 5;
}

/* Whether the four entries at a and b are the same (two 8-byte loads
 * each: a run of copied entries is compared four at a time). */
static inline int snap_eq4(const uint32_t *a, const uint32_t *b)
{
	uint64_t a0, a1, b0, b1;
	memcpy(&a0, a, 8);
	memcpy(&a1, a + 2, 8);
	memcpy(&b0, b, 8);
	memcpy(&b1, b + 2, 8);
	return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

/* The raw field, version 2 (audit/auditraw.h): the constants and
 * snapshots of the trace encoded compactly, the instructions as in memory
 * (a varint per operand cost more time than its bytes cost the writer);
 * the reader rewrites it as the version-1 bytes. -1 (nothing written)
 * where version 1 must be used: a 64-bit constant in the last constant
 * slot. */
static int pack_raw_v2(struct vaudit *A, msgpack_packer *pk,
		       msgpack_sbuffer *sb, const uint8_t *ir, uint32_t nk,
		       uint32_t nins, const uint8_t *snap, const uint8_t *map,
		       uint32_t nsnap, const struct ljt_layout *lay,
		       const uint8_t *ops, unsigned nops)
{
	const uint32_t B = LJT_REF_BIAS;
	if (!A->k2cls_ready) { /* the reader's classes, once per opcode */
		uint8_t kop[K_N];
		for (int i = 0; i < K_N; i++)
			kop[i] = (uint8_t)A->kop[i];
		for (unsigned o = 0; o < 256; o++)
			A->k2cls[o] = (uint8_t)alog_raw_k2(kop, o);
		A->k2cls_ready = 1;
	}
	uint32_t nmap = 0;
	for (uint32_t sn = 0; sn < nsnap; sn++)
		nmap += snap[(size_t)sn * lay->snap_size + lay->snap_nent];
	if (nsnap) { /* the map: its entries' range, as above */
		const uint8_t *S = snap + (size_t)(nsnap - 1) * lay->snap_size;
		uint32_t end =
		    (lay->mapofs_w == 4 ? ljt_u32(S, 0) : ljt_u16(S, 0)) +
		    S[lay->snap_nent];
		for (size_t o = 0; o < 4 * (size_t)end; o += 64)
			__builtin_prefetch(map + o);
	}
	size_t bound = ALOG_RAW2_HEAD + 2 * (size_t)nops + 40 +
		       10 * (size_t)(nins - nk) + 12 * (size_t)nsnap +
		       8 * (size_t)nmap;
	size_t at = sb->size;
	/* written 9 bytes on (the key "raw" and the bin's largest header
	 * go in front), moved down once its length is known */
	uint8_t *r0 = (uint8_t *)alog_mpw_room(sb, 9 + bound + 8);
	if (!r0)
		return -1;
	uint8_t *r = r0 + 9;
	r[0] = ALOG_RAW_V2;
	for (int i = 0; i < K_N; i++)
		r[1 + i] = (uint8_t)A->kop[i];
	r[10] = (uint8_t)nops;
	r += ALOG_RAW2_HEAD;
	for (unsigned i = 0; i < nops; i++) {
		*r++ = ops[i];
		*r++ = A->irmode[ops[i]];
	}
	r = alog_raw_uv(r, B - nk);
	r = alog_raw_uv(r, nins - B);
	r = alog_raw_uv(r, nsnap);
	r = alog_raw_uv(r, nmap);
	for (uint32_t ref = nk; ref < B; ref++) {
		const uint8_t *in = ir + 8 * (size_t)ref;
		int o = in[5];
		*r++ = (uint8_t)o;
		*r++ = in[4];
		switch (A->k2cls[o]) {
		case ALOG_K2_NONE:
			break;
		case ALOG_K2_INT:
			r = alog_raw_sv(r, (int32_t)ljt_u32(in, 0));
			break;
		case ALOG_K2_NUM:
			memcpy(r, in + 8, 8);
			r += 8;
			break;
		case ALOG_K2_PTR:
			r = alog_raw_uv(r, ljt_u64(in, 8));
			break;
		case ALOG_K2_SLOT:
			r = alog_raw_uv(r, (B - ljt_u16(in, 0)) & 0xffff);
			r = alog_raw_uv(r, ljt_u16(in, 2));
			break;
		default:
			memcpy(r, in, 4);
			memcpy(r + 4, in + 6, 2);
			r += 6;
		}
		if (A->kcls[o] & VA_KC_K64) {
			if (ref + 1 >= B)
				return -1;
			ref++;
		}
	}
	size_t nir = 8 * (size_t)(nins - B);
	memcpy(r, ir + 8 * (size_t)B, nir);
	r += nir;
	/* fault injection for the tests: one wrong register (the last
	 * instruction's, as version 1 does) */
	if (A->raw_fault)
		r[-2] ^= 1;
	uint32_t sref = B;
	const uint32_t *pe = NULL;
	uint32_t pn = 0;
	for (uint32_t sn = 0; sn < nsnap; sn++) {
		const uint8_t *S = snap + (size_t)sn * lay->snap_size;
		uint32_t ofs =
		    lay->mapofs_w == 4 ? ljt_u32(S, 0) : ljt_u16(S, 0);
		uint32_t nent = S[lay->snap_nent],
			 ref = ljt_u16(S, lay->snap_ref);
		const uint32_t *e =
		    (const uint32_t *)(const void *)(map + 4 * (size_t)ofs);
		r = alog_raw_sv(r, (int32_t)(ref - sref));
		sref = ref;
		*r++ = S[lay->snap_nslots];
		r = alog_raw_uv(r, nent);
		/* the entries against the previous snapshot's: runs copied,
		 * skipped (up to 4 ahead) or new */
		uint32_t i = 0, cur = 0;
		while (i < nent) {
			uint32_t k = snap_ahead(pe, cur, pn, e[i]);
			if (k < 5) {
				if (k)
					r = alog_raw_uv(r,
							(uint64_t)k << 2 | 1);
				cur += k;
				/* pe[cur] == e[i]: the run's first entry */
				uint32_t lim = nent - i;
				if (lim > pn - cur)
					lim = pn - cur;
				if (lim > 255)
					lim = 255;
				uint32_t c = 1;
				while (c + 4 <= lim &&
				       snap_eq4(pe + cur + c, e + i + c))
					c += 4;
				while (c < lim && pe[cur + c] == e[i + c])
					c++;
				i += c, cur += c;
				r = alog_raw_uv(r, (uint64_t)c << 2);
				continue;
			}
			uint32_t c = 0;
			uint8_t *h = r++; /* count < 32: one byte */
			while (i < nent && c < 31) {
				if (c && snap_ahead(pe, cur, pn, e[i]) < 5)
					break;
				*r++ = (uint8_t)(e[i] >> 24);
				*r++ = (uint8_t)(e[i] >> 16);
				r = alog_raw_sv(r, (int32_t)(e[i] & 0xffff) -
						       (int32_t)B);
				i++, c++;
			}
			*h = (uint8_t)(c << 2 | 2);
		}
		pe = e, pn = nent;
	}
	size_t len = (size_t)(r - (r0 + 9));
	if (len > bound) /* cannot happen: the bound is each item's most */
		abort();
	pstr(pk, "raw"); /* within the room: nothing moves */
	alog_mpw_binhead(sb, len);
	memmove(sb->data + sb->size, sb->data + at + 9, len);
	sb->size += len;
	return 0;
}

/* pack_trace_raw's rawk field (key and map) into pk/sb: the constants
 * whose value is not in the IR. 0, or -1/-2 as pack_trace_raw. */
static int pack_rawk(lua_State *L, struct ctx *c, msgpack_packer *pk,
		     msgpack_sbuffer *sb, lua_Integer tr, const uint8_t *ir,
		     uint32_t nk)
{
	struct vaudit *A = c->A;
	const uint32_t B = LJT_REF_BIAS;
	pstr(pk, "rawk");
	size_t m = map_begin(sb);
	uint32_t n = 0;
	for (uint32_t ref = nk; ref < B; ref++) {
		const uint8_t *in = ir + 8 * (size_t)ref, *v = in;
		int o = in[5], slot = -1;
		int64_t idx = (int64_t)ref - B;
		if (A->kcls[o] & VA_KC_SLOT) {
			uint32_t to = ljt_u16(in, 0);
			if (to < nk || to >= B)
				return -1;
			slot = (int)ljt_u16(in, 2);
			v = ir + 8 * (size_t)to;
		}
		int vo = v[5];
		uint32_t t = v[4] & 0x1f; /* irt_type */
		if (A->kcls[o] & VA_KC_K64)
			ref++;
		if ((A->kcls[vo] & VA_KC_INL) ||
		    ((A->kcls[vo] & VA_KC_PRI) && t <= 2))
			continue;
		pk_int(pk, idx);
		n++;
		if (vo == A->kop[K_GC] && t == IRT_STR && A->str_len > 0) {
			/* a string: its bytes follow the GCstr header */
			const uint8_t *gs =
			    (const uint8_t *)(uintptr_t)ljt_u64(v, 8);
			if (!gs || gs[9] != GCT_STR)
				return -1;
			pk_str(pk, gs + 24, ljt_u32(gs, A->str_len));
			continue;
		}
		/* a Lua value: ask jit.util. Unprotected too (c->nolua),
		 * where that runs no Lua code and cannot raise: tracek is a
		 * C function setting a slot (no debug hook runs inside a VM
		 * event's handler); not for a 64-bit integer (a new cdata
		 * box, the FFI loaded on demand) nor a string (learn_str),
		 * nor if jit.util.tracek was replaced by a Lua function.
		 * The value is then packed only if that needs no Lua call (a
		 * function whose id is known), else the build bails. */
		if (c->nolua && (t == IRT_I64 || t == IRT_U64 || t == IRT_STR ||
				 !c->a->tracek_c))
			return -2;
		/* the function pushed first: no insert (call_util's) */
		push_util(L, c, U_TRACEK);
		lua_pushinteger(L, tr);
		lua_pushinteger(L, (lua_Integer)idx);
		lua_call(L, 2, 3);
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
		if (c->bail)
			return -2;
	}
	map_end(sb, m, n);
	return 0;
}

/* The snapshot map's length in entries: the furthest end of the nsnap
 * snapshots' entry ranges. */
static uint32_t snap_map_len(const uint8_t *snap, uint32_t nsnap,
			     const struct ljt_layout *lay)
{
	uint32_t nmap = 0;
	for (uint32_t sn = 0; sn < nsnap; sn++) {
		const uint8_t *S = snap + (size_t)sn * lay->snap_size;
		uint32_t e =
		    (lay->mapofs_w == 4 ? ljt_u32(S, 0) : ljt_u16(S, 0)) +
		    S[lay->snap_nent];
		if (e > nmap)
			nmap = e;
	}
	return nmap;
}

#if VM_BENCH_CUT == 4 /* bench-only builds: see vm.h */
/* The trace's bytes alone (instructions and constants, snapshots, their
 * map, machine code) as one bin: what any stop record copies, with no
 * encoding, no constants' values, no opcode modes. Not a readable log. */
static int cut_bytes_only(msgpack_packer *pk, msgpack_sbuffer *sb,
			  const uint8_t *T, const struct ljt_layout *lay,
			  const uint8_t *ir, uint32_t nk, uint32_t nins,
			  uint32_t nsnap)
{
	const uint8_t *snap = (const uint8_t *)(uintptr_t)ljt_u64(T, lay->snap);
	const uint8_t *map =
	    (const uint8_t *)(uintptr_t)ljt_u64(T, lay->snapmap);
	const uint8_t *mc = (const uint8_t *)(uintptr_t)ljt_u64(T, lay->mcode);
	uint32_t nmap = snap ? snap_map_len(snap, nsnap, lay) : 0;
	size_t n[4] = {
	    (size_t)(nins - nk) * 8, snap ? (size_t)nsnap * lay->snap_size : 0,
	    map ? 4 * (size_t)nmap : 0, mc ? ljt_u32(T, lay->szmcode) : 0};
	const uint8_t *from[4] = {ir + 8 * (size_t)nk, snap, map, mc};
	pstr(pk, "raw");
	pk_bin(pk, n[0] + n[1] + n[2] + n[3]);
	char *p = alog_mpw_room(sb, n[0] + n[1] + n[2] + n[3]);
	if (!p)
		return -1;
	for (int i = 0; i < 4; i++) {
		if (n[i])
			memcpy(p, from[i], n[i]);
		p += n[i];
	}
	sb->size += n[0] + n[1] + n[2] + n[3];
	return 6;
}
#endif

/* The stop record's trace fields from the GCtrace's memory (layout lay),
 * as a raw stop record (format 3, audit/auditraw.h): info, raw (the IR,
 * snapshots and snapshot map copied as bytes), rawk (the constants whose
 * value is not in the IR), mc, addr, loop; the reader expands raw/rawk
 * into format 2's ir, k and snap. jit.util is still called for what
 * needs a Lua value (a GC constant other than a string, a 64-bit integer
 * constant: one tracek each) and once per new IR opcode (its mode, which
 * is not in memory) or link type (its name). -1 if T and jit.util
 * disagree on something looked at twice; -2 (c->nolua) where jit.util
 * would be called; else the fields packed (6). */
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
#if VM_BENCH_CUT == 4
	if (sb != &A->sbr) /* (not a check against jit.util) */
		return cut_bytes_only(pk, sb, T, lay, ir, nk, nins, nsnap);
#endif
	/* the trace's memory is cold when its stop event runs: ask for the
	 * constants, instructions and snapshots now, so that the misses
	 * overlap (the encoding below reads them in dependent steps) */
	{
		const uint8_t *s0 =
		    (const uint8_t *)(uintptr_t)ljt_u64(T, lay->snap);
		size_t kb = 8 * (size_t)(nins - nk),
		       sb0 = s0 ? (size_t)nsnap * lay->snap_size : 0;
		for (size_t o = 0; o < kb; o += 64)
			__builtin_prefetch(ir + 8 * (size_t)nk + o);
		for (size_t o = 0; o < sb0; o += 64)
			__builtin_prefetch(s0 + o);
	}
	uint32_t lt = ljt_u8(T, lay->linktype);
	if (!A->linkname_known[lt] && c->nolua)
		return -2;
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
	pk_map(pk, 5);
	pstr(pk, "nins");
	pk_int(pk, (int64_t)nins - B - 1);
	pstr(pk, "nk");
	pk_int(pk, (int64_t)B - nk);
	pstr(pk, "link");
	pk_int(pk, ljt_u16(T, lay->link));
	pstr(pk, "nexit");
	pk_int(pk, nsnap);
	pstr(pk, "linktype");
	pstr(pk, A->linkname[lt]);

	/* the instructions' opcodes; the modes of those not seen before
	 * learnt from traceir, which must agree with memory on that
	 * instruction */
	uint8_t ops[256];
	unsigned nops = 0;
	if (!++A->opgen) {
		memset(A->opstamp, 0, sizeof(A->opstamp));
		A->opgen = 1;
	}
	const uint32_t gen = A->opgen;
	uint32_t *stamp = A->opstamp;
	for (uint32_t ref = B; ref < nins; ref++) {
		const uint8_t *in = ir + 8 * (size_t)ref;
		uint32_t o = in[5];
		if (stamp[o] == gen)
			continue;
		stamp[o] = gen;
		ops[nops++] = (uint8_t)o;
		if (A->irmode_known[o])
			continue;
		if (c->nolua)
			return -2;
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
	const uint8_t *snap = (const uint8_t *)(uintptr_t)ljt_u64(T, lay->snap);
	const uint8_t *map =
	    (const uint8_t *)(uintptr_t)ljt_u64(T, lay->snapmap);
	if (nsnap && (!snap || !map))
		return -1;
	uint8_t kop[K_N];
	for (int i = 0; i < K_N; i++)
		kop[i] = (uint8_t)A->kop[i];
	if (!A->kcls_ready) { /* the tests below, once per opcode */
		for (unsigned o = 0; o < 256; o++)
			A->kcls[o] =
			    (uint8_t)((is_k64(A, (int)o) ? VA_KC_K64 : 0) |
				      (alog_raw_k_inline(kop, o, 3) ? VA_KC_INL
								    : 0) |
				      (alog_raw_k_inline(kop, o, 0) ? VA_KC_PRI
								    : 0) |
				      ((int)o == A->kop[K_SLOT] ? VA_KC_SLOT
								: 0));
		A->kcls_ready = 1;
	}
	/* unprotected: rawk first, aside (A->sbr), so that a constant that
	 * needs Lua stops the build before the encoding below, not after
	 * it; appended where it belongs */
	int rk;
	if (c->nolua) {
		msgpack_packer pr;
		msgpack_sbuffer_clear(&A->sbr);
		msgpack_packer_init(&pr, &A->sbr, msgpack_sbuffer_write);
		if ((rk = pack_rawk(L, c, &pr, &A->sbr, tr, ir, nk)) != 0)
			return rk;
	}
	if (!A->raw_v1 && !pack_raw_v2(A, pk, sb, ir, nk, nins, snap, map,
				       nsnap, lay, ops, nops))
		goto rawk;
	uint32_t nmap = snap_map_len(snap, nsnap, lay);
	size_t nir = (size_t)(nins - nk) * 8,
	       nsn = (size_t)nsnap * lay->snap_size;
	size_t len = ALOG_RAW_HEAD + 2 * (size_t)nops + 16 + nir + nsn +
		     4 * (size_t)nmap;
	pstr(pk, "raw");
	pk_bin(pk, len);
	char *p = alog_mpw_room(sb, len);
	if (!p)
		return -1;
	uint8_t *r = (uint8_t *)p;
	r[0] = ALOG_RAW_V1;
	r[1] = lay->snap_size;
	r[2] = lay->mapofs_w;
	r[3] = lay->snap_ref;
	r[4] = lay->snap_nslots;
	r[5] = lay->snap_nent;
	for (int i = 0; i < K_N; i++)
		r[6 + i] = (uint8_t)A->kop[i];
	r[15] = (uint8_t)nops;
	r += ALOG_RAW_HEAD;
	for (unsigned i = 0; i < nops; i++) {
		*r++ = ops[i];
		*r++ = A->irmode[ops[i]];
	}
	uint32_t cnt[4] = {nk, nins, nsnap, nmap};
	memcpy(r, cnt, 16); /* little-endian: x64 only */
	r += 16;
	memcpy(r, ir + 8 * (size_t)nk, nir);
	/* fault injection for the tests: one wrong register */
	if (A->raw_fault)
		r[nir - 2] ^= 1;
	r += nir;
	if (nsnap) {
		memcpy(r, snap, nsn);
		memcpy(r + nsn, map, 4 * (size_t)nmap);
	}
	sb->size += len;

rawk:
	if (c->nolua) /* built above */
		alog_mpw_bytes(sb, A->sbr.data, A->sbr.size);
	else if ((rk = pack_rawk(L, c, pk, sb, tr, ir, nk)) != 0)
		return rk;

	const uint8_t *mc = (const uint8_t *)(uintptr_t)ljt_u64(T, lay->mcode);
	pstr(pk, "mc");
	if (mc) {
		uint32_t ml = ljt_u32(T, lay->szmcode);
		pk_bin(pk, ml);
		pk_body(pk, mc, ml);
		pstr(pk, "addr");
		pnum(pk, (lua_Number)(intptr_t)mc);
		pstr(pk, "loop");
		pnum(pk, ljt_u32(T, lay->mcloop));
	} else {
		pk_nil(pk);
		pstr(pk, "addr");
		pk_nil(pk);
		pstr(pk, "loop");
		pk_nil(pk);
	}
	return 6;
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
	/* the rows' reader (vm/traces.c) found the array already (at this
	 * very stop, as a rule, keyed by this trace): its layouts, no second
	 * search; the check below compares every byte as before */
	unsigned mask;
	if (ljt_discovered(L, &mask)) {
		A->raw_mask = mask;
		A->raw = RAW_CHECKING;
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

/* A stopped trace's fields: from memory (a raw stop record: info, raw,
 * rawk, mc, addr, loop) once the layout agreed with jit.util on
 * RAW_CHECK_TRACES traces (and again on one trace in A->raw_recheck),
 * else through jit.util (info, ir, k, snap, mc, addr, loop). A check
 * expands the raw build with the reader's own expander (auditraw.h) and
 * compares it with the jit.util build byte for byte. */
uint32_t va_pack_stop_trace(lua_State *L, struct ctx *c, msgpack_packer *pk,
			    msgpack_sbuffer *sb, lua_Integer tr,
			    lua_Integer *nexit)
{
	struct vaudit *A = c->A;
	msgpack_packer p2;
	if (c->nolua) {
		/* unprotected (auditint.h): only a raw read needing no
		 * jit.util, not a check trace, no new shared exit stub */
		int go = A->raw == RAW_ON && A->raw_mask &&
			 (A->raw_stops + 1) % A->raw_recheck;
		const struct ljt_layout *lay =
		    go ? &ljt_layouts[__builtin_ctz(A->raw_mask)] : NULL;
		const uint8_t *T = go ? ljt_trace(L, (uint32_t)tr, lay) : NULL;
		size_t at = sb->size;
		if (!T || c->a->gexit_none ||
		    ljt_u16(T, lay->nsnap) > c->a->gexit ||
		    pack_trace_raw(L, c, pk, sb, tr, T, lay, nexit) != 6) {
			sb->size = at;
			c->bail = 1;
			return 0;
		}
		A->raw_stops++;
		A->raw_traces++;
		return 6;
	}
	if (A->raw == RAW_UNTRIED)
		raw_discover(L, c, tr);
	if (A->raw == RAW_ON && ++A->raw_stops % A->raw_recheck) {
		const struct ljt_layout *lay =
		    &ljt_layouts[__builtin_ctz(A->raw_mask)];
		const uint8_t *T = ljt_trace(L, (uint32_t)tr, lay);
		if (T) {
			size_t at = sb->size;
			if (pack_trace_raw(L, c, pk, sb, tr, T, lay, nexit) ==
			    6) {
				A->raw_traces++;
				return 6;
			}
			sb->size = at;
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
		size_t um = map_begin(&A->sbu);
		uint32_t n = va_pack_trace_util(L, c, &p2, &A->sbu, tr, 1, T0,
						l0, nexit);
		map_end(&A->sbu, um, n);
		for (unsigned i = 0; T0 && ljt_layouts[i].name; i++) {
			if (!(A->raw_mask & (1u << i)))
				continue;
			const struct ljt_layout *lay = &ljt_layouts[i];
			const uint8_t *T = ljt_trace(L, (uint32_t)tr, lay);
			lua_Integer nx = 0;
			sb_reset(&A->sbr, &p2);
			size_t rm = map_begin(&A->sbr);
			char why[160];
			int rn = T ? pack_trace_raw(L, c, &p2, &A->sbr, tr, T,
						    lay, &nx)
				   : -1;
			if (rn == 6)
				map_end(&A->sbr, rm, 6);
			if (rn != 6 || nx != *nexit ||
			    alog_raw_fields((const uint8_t *)A->sbr.data,
					    A->sbr.size, &A->sbx, why,
					    sizeof(why)) != 1 ||
			    A->sbx.size != A->sbu.size ||
			    memcmp(A->sbx.data, A->sbu.data, A->sbu.size))
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
		msgpack_sbuffer_write(sb, A->sbu.data + 5, A->sbu.size - 5);
		return n;
	}
	return va_pack_trace_util(L, c, pk, sb, tr, 1, NULL, NULL, nexit);
}
