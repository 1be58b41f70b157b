/* SPDX-License-Identifier: MIT */
/*
 * Raw stop records: expansion into the format-2 fields (auditraw.h).
 * Everything is read from the record's bytes after a bounds check; the
 * encodings are the writer's (vm/audit_raw.c, msgpack-c's smallest
 * integer forms, map32 for the maps it patches).
 */
#include "auditraw.h"
#include "auditfmt.h"
#include "auditmp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define B ALOG_RAW_REF_BIAS

/* auditmp.h's slow path: the buffer doubled (as msgpack-c grows it) until
 * n more bytes fit */
char *alog_mpw_grow(msgpack_sbuffer *sb, size_t n)
{
	size_t na = sb->alloc ? sb->alloc : MSGPACK_SBUFFER_INIT_SIZE;
	while (na - sb->size < n) {
		if (na * 2 <= na)
			return NULL;
		na *= 2;
	}
	char *d = realloc(sb->data, na);
	if (!d)
		return NULL;
	sb->data = d;
	sb->alloc = na;
	return d + sb->size;
}

static int bad(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -1;
}

static void pk_str(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str_with_body(pk, s, strlen(s));
}

static size_t map32_begin(msgpack_sbuffer *sb)
{
	static const char m[5] = {(char)0xdf, 0, 0, 0, 0};
	size_t at = sb->size;
	msgpack_sbuffer_write(sb, m, 5);
	return at;
}

static void map32_end(msgpack_sbuffer *sb, size_t at, uint32_t n)
{
	if (!sb->data || at + 5 > sb->size)
		return;
	sb->data[at + 1] = (char)(n >> 24);
	sb->data[at + 2] = (char)(n >> 16);
	sb->data[at + 3] = (char)(n >> 8);
	sb->data[at + 4] = (char)n;
}

/* the writer's pnum: integral, in range and not -0: an int */
static void pk_num(msgpack_packer *pk, double d)
{
	if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
	    d == (double)(int64_t)d && !(d == 0 && __builtin_signbit(d)))
		msgpack_pack_int64(pk, (int64_t)d);
	else
		msgpack_pack_double(pk, d);
}

/* a msgpack integer at *pp (end: bound); 0 ok */
static int rd_int(const uint8_t **pp, const uint8_t *end, int64_t *v)
{
	const uint8_t *p = *pp;
	if (p >= end)
		return -1;
	uint8_t c = *p++;
	size_t n = 0;
	int sign = 0;
	if (c <= 0x7f || c >= 0xe0) { /* positive / negative fixint */
		*v = c <= 0x7f ? (int64_t)c : (int64_t)c - 256;
		*pp = p;
		return 0;
	}
	if (c >= 0xcc && c <= 0xcf)
		n = (size_t)1 << (c - 0xcc);
	else if (c >= 0xd0 && c <= 0xd3)
		n = (size_t)1 << (c - 0xd0), sign = 1;
	else
		return -1;
	if ((size_t)(end - p) < n)
		return -1;
	uint64_t u = 0;
	for (size_t i = 0; i < n; i++)
		u = u << 8 | p[i];
	if (sign && n >= 1 && n < 8 && (u >> (8 * n - 1)))
		u |= ~(uint64_t)0 << (8 * n);
	*v = (int64_t)u;
	*pp = p + n;
	return 0;
}

/* a map or array header at *pp: its count; 0 ok */
static int rd_head(const uint8_t **pp, const uint8_t *end, int map, uint32_t *n)
{
	const uint8_t *p = *pp;
	if (p >= end)
		return -1;
	uint8_t c = *p++, fix = map ? 0x80 : 0x90, t16 = map ? 0xde : 0xdc;
	if ((c & 0xf0) == fix) {
		*n = c & 0x0f;
	} else if (c == t16 && end - p >= 2) {
		*n = (uint32_t)p[0] << 8 | p[1];
		p += 2;
	} else if (c == t16 + 1 && end - p >= 4) {
		*n = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		     (uint32_t)p[2] << 8 | p[3];
		p += 4;
	} else {
		return -1;
	}
	*pp = p;
	return 0;
}

struct kval {
	const uint8_t *p;
	uint32_t len;
};

/* version 2's readers: a varint at *pp (below end); 0 ok */
static int rd_uv(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	uint64_t u = 0;
	for (unsigned sh = 0; sh < 64; sh += 7) {
		if (*pp >= end)
			return -1;
		uint8_t c = *(*pp)++;
		u |= (uint64_t)(c & 0x7f) << sh;
		if (!(c & 0x80)) {
			*v = u;
			return 0;
		}
	}
	return -1;
}
static int rd_sv(const uint8_t **pp, const uint8_t *end, int64_t *v)
{
	uint64_t u;
	if (rd_uv(pp, end, &u))
		return -1;
	*v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	return 0;
}

/* the snapshot layout of a version-1 record made from a version-2 one */
enum { V1_SSZ = 8, V1_SREF = 4, V1_SNSL = 6, V1_SNENT = 7 };

/* A version-2 raw trace (auditraw.h) rewritten as the version-1 bytes it
 * stands for (what version 2 leaves out, which no expansion reads, as
 * zeros: constants' chain links, a GC constant's pointer, a snapshot's
 * other fields, the map's frame words), in *out (malloc'd). 0, or -1
 * with why. */
static int v2_to_v1(const uint8_t *raw, size_t rawlen, uint8_t **out,
		    size_t *outlen, char *why, size_t whylen)
{
	const uint8_t *p = raw, *end = raw + rawlen;
	if (rawlen < ALOG_RAW2_HEAD)
		return bad(why, whylen, "raw trace too short");
	const uint8_t *kop = raw + 1;
	unsigned nops = raw[10];
	p += ALOG_RAW2_HEAD;
	if ((size_t)(end - p) < 2 * (size_t)nops)
		return bad(why, whylen, "raw trace too short");
	const uint8_t *ops = p; /* checked by the expansion */
	p += 2 * (size_t)nops;
	uint64_t xk, xi, xs, xm;
	if (rd_uv(&p, end, &xk) || rd_uv(&p, end, &xi) || rd_uv(&p, end, &xs) ||
	    rd_uv(&p, end, &xm))
		return bad(why, whylen, "raw trace too short");
	if (xk > B || xi == 0 || xi > (1u << 15) - 1 || xs > (1u << 20) ||
	    xm > (1u << 24) || xk + xi > (1u << 20))
		return bad(why, whylen, "raw trace: impossible counts");
	/* every constant, instruction and snapshot takes a byte at least */
	if ((uint64_t)(end - p) < xs || (uint64_t)(end - p) < xm / 128)
		return bad(why, whylen, "raw trace: counts past its bytes");
	uint32_t nk = (uint32_t)(B - xk), nins = (uint32_t)(B + xi),
		 nsnap = (uint32_t)xs, nmap = (uint32_t)xm;
	size_t o = ALOG_RAW_HEAD + 2 * (size_t)nops + 16;
	size_t nir = (size_t)(nins - nk) * 8;
	size_t len = o + nir + (size_t)nsnap * V1_SSZ + (size_t)nmap * 4;
	uint8_t *r = calloc(1, len);
	if (!r)
		return bad(why, whylen, "out of memory");
	r[0] = ALOG_RAW_V1;
	r[1] = V1_SSZ;
	r[2] = 4;
	r[3] = V1_SREF;
	r[4] = V1_SNSL;
	r[5] = V1_SNENT;
	memcpy(r + 6, kop, ALOG_RAW_NKOP);
	r[15] = (uint8_t)nops;
	memcpy(r + ALOG_RAW_HEAD, ops, 2 * (size_t)nops);
	uint8_t *c = r + ALOG_RAW_HEAD + 2 * (size_t)nops;
	alog_st32(c, nk);
	alog_st32(c + 4, nins);
	alog_st32(c + 8, nsnap);
	alog_st32(c + 12, nmap);
	uint8_t *irs = r + o, *snaps = irs + nir, *map = snaps + nsnap * V1_SSZ;
#define INS(ref) (irs + 8 * (size_t)((ref)-nk))
	uint64_t u;
	int64_t sv;
	for (uint32_t ref = nk; ref < B; ref++) {
		uint8_t *in = INS(ref);
		if (end - p < 2)
			goto cut;
		unsigned op = p[0];
		in[4] = p[1];
		in[5] = (uint8_t)op;
		p += 2;
		int k64 = alog_raw_k64(kop, op);
		if (k64 && ref + 1 >= B) {
			free(r);
			return bad(why, whylen,
				   "raw trace: 64-bit constant cut");
		}
		switch (alog_raw_k2(kop, op)) {
		case ALOG_K2_NONE: /* the value is in t, or rawk */
			break;
		case ALOG_K2_INT:
			if (rd_sv(&p, end, &sv))
				goto cut;
			alog_st32(in, (uint32_t)sv);
			break;
		case ALOG_K2_NUM:
			if (end - p < 8)
				goto cut;
			memcpy(in + 8, p, 8);
			p += 8;
			break;
		case ALOG_K2_PTR:
			if (rd_uv(&p, end, &u))
				goto cut;
			alog_st32(in + 8, (uint32_t)u);
			alog_st32(in + 12, (uint32_t)(u >> 32));
			break;
		case ALOG_K2_SLOT: {
			uint64_t to, sl;
			if (rd_uv(&p, end, &to) || rd_uv(&p, end, &sl) ||
			    to > 0xffff || sl > 0xffff)
				goto cut;
			alog_st16(in, (uint32_t)(B - to));
			alog_st16(in + 2, (uint32_t)sl);
			break;
		}
		default:
			if (end - p < 6)
				goto cut;
			memcpy(in, p, 4);
			memcpy(in + 6, p + 4, 2);
			p += 6;
		}
		if (k64)
			ref++;
	}
	/* the instructions, as in memory */
	if ((size_t)(end - p) < 8 * (size_t)(nins - B))
		goto cut;
	memcpy(INS(B), p, 8 * (size_t)(nins - B));
	p += 8 * (size_t)(nins - B);
	uint32_t sref = B, pofs = 0, pn = 0, ofs = 0;
	for (uint32_t sn = 0; sn < nsnap; sn++) {
		uint8_t *S = snaps + (size_t)sn * V1_SSZ;
		uint64_t nent;
		if (rd_sv(&p, end, &sv) || p >= end)
			goto cut;
		sref = (sref + (uint32_t)sv) & 0xffff;
		alog_st32(S, ofs);
		alog_st16(S + V1_SREF, sref);
		S[V1_SNSL] = *p++;
		if (rd_uv(&p, end, &nent) || nent > 255 || nent > nmap - ofs)
			goto cut;
		S[V1_SNENT] = (uint8_t)nent;
		uint32_t got = 0, cur = 0;
		while (got < nent) {
			if (rd_uv(&p, end, &u) || (u >> 2) == 0 ||
			    (u >> 2) > 255)
				goto cut;
			uint32_t cnt = (uint32_t)(u >> 2), kind = u & 3;
			if (kind == 0) { /* copy from the previous snapshot */
				if (cnt > pn - cur || cnt > nent - got)
					goto cut;
				memcpy(map + 4 * (size_t)(ofs + got),
				       map + 4 * (size_t)(pofs + cur), 4 * cnt);
				got += cnt, cur += cnt;
			} else if (kind == 1) { /* skip in the previous one */
				if (cnt > pn - cur)
					goto cut;
				cur += cnt;
			} else if (kind == 2) { /* new entries */
				if (cnt > nent - got)
					goto cut;
				for (uint32_t i = 0; i < cnt; i++, got++) {
					if (end - p < 2)
						goto cut;
					uint32_t e = (uint32_t)p[0] << 24 |
						     (uint32_t)p[1] << 16;
					p += 2;
					if (rd_sv(&p, end, &sv) ||
					    sv < -(int64_t)B ||
					    sv >= (int64_t)B)
						goto cut;
					e |= (uint32_t)(sv + B);
					alog_st32(map + 4 * (size_t)(ofs + got),
						  e);
				}
			} else { /* kind 3: new entries, u32le each */
				if (cnt > nent - got ||
				    (size_t)(end - p) < 4 * (size_t)cnt)
					goto cut;
				memcpy(map + 4 * (size_t)(ofs + got), p,
				       4 * (size_t)cnt);
				p += 4 * (size_t)cnt;
				got += cnt;
			}
		}
		pofs = ofs, pn = (uint32_t)nent;
		ofs += (uint32_t)nent;
	}
#undef INS
	if (ofs != nmap || p != end) {
		free(r);
		return bad(why, whylen, "raw trace: %s",
			   p != end ? "bytes after its snapshots"
				    : "snapshot entries do not add up");
	}
	*out = r;
	*outlen = len;
	return 0;
cut:
	free(r);
	return bad(why, whylen, "raw trace: cut short or out of range at %zu",
		   (size_t)(p - raw));
}

static int expand_v1(msgpack_sbuffer *sb, const uint8_t *raw, size_t rawlen,
		     const uint8_t *rawk, size_t rawklen, char *why,
		     size_t whylen);

int alog_raw_expand(msgpack_sbuffer *sb, const uint8_t *raw, size_t rawlen,
		    const uint8_t *rawk, size_t rawklen, char *why,
		    size_t whylen)
{
	if (rawlen >= 1 && raw[0] == ALOG_RAW_V2) {
		uint8_t *v1 = NULL;
		size_t n = 0;
		if (v2_to_v1(raw, rawlen, &v1, &n, why, whylen))
			return -1;
		int ret = expand_v1(sb, v1, n, rawk, rawklen, why, whylen);
		free(v1);
		return ret;
	}
	return expand_v1(sb, raw, rawlen, rawk, rawklen, why, whylen);
}

static int expand_v1(msgpack_sbuffer *sb, const uint8_t *raw, size_t rawlen,
		     const uint8_t *rawk, size_t rawklen, char *why,
		     size_t whylen)
{
	if (rawlen < ALOG_RAW_HEAD)
		return bad(why, whylen, "raw trace too short");
	if (raw[0] != ALOG_RAW_V1)
		return bad(why, whylen, "raw trace version %u unknown", raw[0]);
	unsigned ssz = raw[1], mw = raw[2], sref = raw[3], snsl = raw[4],
		 snent = raw[5];
	if ((mw != 2 && mw != 4) || ssz < mw || sref + 2 > ssz || snsl >= ssz ||
	    snent >= ssz)
		return bad(why, whylen, "raw trace: bad snapshot layout");
	const uint8_t *kop = raw + 6;
	unsigned nops = raw[15];
	size_t o = ALOG_RAW_HEAD + 2 * (size_t)nops;
	if (rawlen < o + 16)
		return bad(why, whylen, "raw trace too short");
	uint8_t mode[256], known[256];
	memset(known, 0, sizeof(known));
	for (unsigned i = 0; i < nops; i++) {
		known[raw[ALOG_RAW_HEAD + 2 * i]] = 1;
		mode[raw[ALOG_RAW_HEAD + 2 * i]] =
		    raw[ALOG_RAW_HEAD + 2 * i + 1];
	}
	uint32_t nk = alog_ld32(raw + o), nins = alog_ld32(raw + o + 4),
		 nsnap = alog_ld32(raw + o + 8), nmap = alog_ld32(raw + o + 12);
	o += 16;
	if (nk > B || nins <= B || nins - nk > (1u << 20) ||
	    nsnap > (1u << 20) || nmap > (1u << 24))
		return bad(why, whylen, "raw trace: impossible counts");
	size_t need =
	    (size_t)(nins - nk) * 8 + (size_t)nsnap * ssz + (size_t)nmap * 4;
	if (rawlen - o != need)
		return bad(why, whylen, "raw trace: %zu bytes, not %zu",
			   rawlen - o, need);
	const uint8_t *irs = raw + o, *snaps = irs + (size_t)(nins - nk) * 8,
		      *map = snaps + (size_t)nsnap * ssz;
#define INS(ref) (irs + 8 * (size_t)((ref)-nk))

	/* rawk: {idx = value} */
	struct kval *kv = calloc(B - nk + 1, sizeof(*kv));
	if (!kv)
		return bad(why, whylen, "out of memory");
	int ret = -1;
	const uint8_t *kp = rawk, *kend = rawk ? rawk + rawklen : NULL;
	uint32_t nkv;
	if (!rawk || rd_head(&kp, kend, 1, &nkv)) {
		bad(why, whylen, "raw trace: rawk is not a map");
		goto out;
	}
	for (uint32_t i = 0; i < nkv; i++) {
		int64_t idx;
		if (rd_int(&kp, kend, &idx) || idx >= 0 ||
		    idx < (int64_t)nk - (int64_t)B) {
			bad(why, whylen, "raw trace: bad rawk key");
			goto out;
		}
		const uint8_t *v = kp;
		if (alog_mp_skip(&kp, kend)) {
			bad(why, whylen, "raw trace: bad rawk value");
			goto out;
		}
		kv[idx + (int64_t)B - nk] =
		    (struct kval){v, (uint32_t)(kp - v)};
	}
	if (kp != kend) {
		bad(why, whylen, "raw trace: bytes after rawk");
		goto out;
	}

	msgpack_packer pkv, *pk = &pkv;
	msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
	pk_str(pk, "ir");
	size_t m = map32_begin(sb);
	for (uint32_t ref = B; ref < nins; ref++) {
		const uint8_t *in = INS(ref);
		unsigned op = in[5];
		if (!known[op]) {
			bad(why, whylen, "raw trace: no mode for IR opcode %u",
			    op);
			goto out;
		}
		unsigned md = mode[op];
		msgpack_pack_int64(pk, (int64_t)(ref - B));
		msgpack_pack_array(pk, 5);
		msgpack_pack_int64(pk, md);
		msgpack_pack_int64(pk, alog_ld16(in + 4));
		msgpack_pack_int64(pk, (int64_t)alog_ld16(in) -
					   ((md & 3) == 0 ? B : 0));
		msgpack_pack_int64(pk, (int64_t)alog_ld16(in + 2) -
					   (((md >> 2) & 3) == 0 ? B : 0));
		msgpack_pack_int64(pk, alog_ld16(in + 6));
	}
	map32_end(sb, m, nins - B);

	pk_str(pk, "k");
	m = map32_begin(sb);
	uint32_t n = 0;
	for (uint32_t ref = nk; ref < B; ref++) {
		const uint8_t *in = INS(ref), *v = in;
		unsigned op = in[5];
		int slot = -1;
		int64_t idx = (int64_t)ref - B;
		if (op == kop[ALOG_K_SLOT]) {
			uint32_t to = alog_ld16(in);
			if (to < nk || to >= B) {
				bad(why, whylen, "raw trace: bad KSLOT");
				goto out;
			}
			slot = (int)alog_ld16(in + 2);
			v = INS(to);
		}
		unsigned vo = v[5], t = v[4] & 0x1f;
		int k64 = alog_raw_k64(kop, vo);
		if (k64 && v + 16 > snaps) {
			bad(why, whylen, "raw trace: 64-bit constant cut");
			goto out;
		}
		msgpack_pack_int64(pk, idx);
		msgpack_pack_array(pk, slot < 0 ? 2 : 3);
		if (!alog_raw_k_inline(kop, vo, t)) {
			struct kval *e = &kv[ref - nk];
			if (!e->p) {
				bad(why, whylen,
				    "raw trace: constant %lld not in rawk",
				    (long long)idx);
				goto out;
			}
			msgpack_sbuffer_write(sb, (const char *)e->p, e->len);
		} else if (vo == kop[ALOG_K_PRI]) {
			if (t == 0)
				msgpack_pack_nil(pk);
			else if (t == 1)
				msgpack_pack_false(pk);
			else
				msgpack_pack_true(pk);
		} else if (vo == kop[ALOG_K_INT]) {
			pk_num(pk, (int32_t)alog_ld32(v));
		} else if (vo == kop[ALOG_K_NULL]) {
			pk_num(pk, 0);
		} else if (vo == kop[ALOG_K_NUM]) {
			uint64_t u = alog_ld64(v + 8);
			double d;
			memcpy(&d, &u, 8);
			pk_num(pk, d);
		} else { /* KPTR, KKPTR */
			pk_num(pk, (double)alog_ld64(v + 8));
		}
		pk_num(pk, t);
		if (slot >= 0)
			pk_num(pk, slot);
		n++;
		if (alog_raw_k64(kop, op))
			ref++;
	}
	map32_end(sb, m, n);

	pk_str(pk, "snap");
	m = map32_begin(sb);
	for (uint32_t sn = 0; sn < nsnap; sn++) {
		const uint8_t *S = snaps + (size_t)sn * ssz;
		uint32_t ofs = mw == 4 ? alog_ld32(S) : alog_ld16(S);
		uint32_t nent = S[snent];
		if (ofs > nmap || nent > nmap - ofs) {
			bad(why, whylen, "raw trace: snapshot %u out of map",
			    sn);
			goto out;
		}
		msgpack_pack_int64(pk, sn);
		msgpack_pack_map(pk, nent + 3);
		msgpack_pack_int64(pk, 0);
		msgpack_pack_int64(pk, (int64_t)alog_ld16(S + sref) - B);
		msgpack_pack_int64(pk, 1);
		msgpack_pack_int64(pk, S[snsl]);
		for (uint32_t e = 0; e < nent; e++) {
			msgpack_pack_int64(pk, e + 2);
			msgpack_pack_int64(
			    pk, (int32_t)alog_ld32(map + 4 * (ofs + e)));
		}
		msgpack_pack_int64(pk, nent + 2);
		msgpack_pack_int64(pk, (int32_t)0xff000000u);
	}
	map32_end(sb, m, nsnap);
	ret = 0;
#undef INS
out:
	free(kv);
	return ret;
}

static int key_is(const uint8_t *k, const uint8_t *end, const char *s)
{
	size_t n = strlen(s);
	return k < end && *k == (0xa0 | n) && (size_t)(end - k) >= n + 1 &&
	       !memcmp(k + 1, s, n);
}

static int expand_map(const uint8_t *p, size_t len, msgpack_sbuffer *out,
		      char *why, size_t whylen, int need_stop)
{
	const uint8_t *q = p, *end = p + len;
	uint32_t n;
	if (rd_head(&q, end, 1, &n))
		return 0;
	const uint8_t *body = q, *raw = NULL, *rawk = NULL;
	int stop = 0;
	size_t rawlen = 0, rawklen = 0;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *k = q;
		if (alog_mp_skip(&q, end))
			return 0; /* walked before: cannot happen */
		const uint8_t *v = q;
		if (alog_mp_skip(&q, end))
			return 0;
		if (key_is(k, v, "ev")) {
			stop = key_is(v, q, "stop");
		} else if (key_is(k, v, "raw")) {
			uint32_t bl;
			if (*v == 0xc4 && q - v >= 2)
				bl = v[1], v += 2;
			else if (*v == 0xc5 && q - v >= 3)
				bl = (uint32_t)v[1] << 8 | v[2], v += 3;
			else if (*v == 0xc6 && q - v >= 5)
				bl = (uint32_t)v[1] << 24 |
				     (uint32_t)v[2] << 16 |
				     (uint32_t)v[3] << 8 | v[4],
				v += 5;
			else
				return bad(why, whylen, "raw is not a bin");
			if (raw)
				return bad(why, whylen, "two raw fields");
			if ((size_t)(q - v) != bl)
				return bad(why, whylen, "raw: bad length");
			raw = v;
			rawlen = bl;
		} else if (key_is(k, v, "rawk")) {
			if (rawk)
				return bad(why, whylen, "two rawk fields");
			rawk = v;
			rawklen = (size_t)(q - v);
		}
	}
	if (!raw || (need_stop && !stop))
		return 0;
	if (!rawk)
		return bad(why, whylen, "raw without rawk");
	msgpack_sbuffer_clear(out);
	size_t m = map32_begin(out);
	q = body;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *k = q;
		alog_mp_skip(&q, end);
		const uint8_t *v = q;
		alog_mp_skip(&q, end);
		if (key_is(k, v, "raw")) {
			if (alog_raw_expand(out, raw, rawlen, rawk, rawklen,
					    why, whylen))
				return -1;
		} else if (!key_is(k, v, "rawk")) {
			msgpack_sbuffer_write(out, (const char *)k,
					      (size_t)(q - k));
		}
	}
	map32_end(out, m, n + 1);
	return 1;
}

int alog_raw_record(const uint8_t *p, size_t len, msgpack_sbuffer *out,
		    char *why, size_t whylen)
{
	return expand_map(p, len, out, why, whylen, 1);
}

int alog_raw_fields(const uint8_t *p, size_t len, msgpack_sbuffer *out,
		    char *why, size_t whylen)
{
	return expand_map(p, len, out, why, whylen, 0);
}
