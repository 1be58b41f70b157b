/* SPDX-License-Identifier: MIT */
/*
 * Raw stop records (record schema format 3, docs/AUDITLOG.md "Raw stop
 * records"): the writer copies a stopped trace's IR, snapshots and
 * snapshot map out of the VM as bytes (field `raw`, with the Lua-valued
 * constants in `rawk`) instead of encoding every field; the reader
 * expands them back into the format-2 fields `ir`, `k` and `snap`, byte
 * for byte what the writer's jit.util build encodes. Everything in `raw`
 * is checked against the bytes it has before it is read.
 *
 * raw := u8 version (1), u8 snap_size, u8 mapofs_w (2|4), u8 snap_ref,
 *        u8 snap_nslots, u8 snap_nent,         (the SnapShot layout)
 *        u8 kop[9] (IR opcodes of KPRI KINT KGC KPTR KKPTR KNULL KNUM
 *        KINT64 KSLOT; 255: none), u8 nops, {u8 op, u8 mode}[nops] (the
 *        mode of every opcode of refs >= REF_BIAS),
 *        u32le nk, nins (biased, as in GCtrace), nsnap, nmap,
 *        IRIns[nins - nk] (refs nk..nins-1, 8 bytes each, as in memory),
 *        SnapShot[nsnap] (snap_size bytes each), SnapEntry[nmap] (u32le)
 * rawk := msgpack map {ref - REF_BIAS = value}: a constant whose value is
 *        not in the IR (strings, other GC objects, 64-bit integers), as
 *        the format-2 `k` entry's first element.
 * Version 2 (docs/AUDITLOG.md "Raw stop records"): the same facts without
 * what no expansion reads (constants' chain links and GC pointers, the
 * other snapshot fields, the map's frame words), counts and constants as
 * varints; the reader rewrites it as version 1 before expanding it.
 */
#ifndef ALOG_AUDITRAW_H
#define ALOG_AUDITRAW_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#define ALOG_RAW_VERSION 2 /* the newest; version 1 is still read */
#define ALOG_RAW_V1 1
#define ALOG_RAW_V2 2
#define ALOG_RAW_REF_BIAS 0x8000u
#define ALOG_RAW_NKOP 9
/* indexes into kop[] */
enum {
	ALOG_K_PRI,
	ALOG_K_INT,
	ALOG_K_GC,
	ALOG_K_PTR,
	ALOG_K_KPTR,
	ALOG_K_NULL,
	ALOG_K_NUM,
	ALOG_K_INT64,
	ALOG_K_SLOT
};
#define ALOG_RAW_HEAD 16  /* bytes before the op modes (version 1) */
#define ALOG_RAW2_HEAD 11 /* bytes before the op modes (version 2) */

/* Version 2's integers: LEB128 varints, signed ones zigzagged. */
static inline uint8_t *alog_raw_uv(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}
static inline uint8_t *alog_raw_sv(uint8_t *p, int64_t v)
{
	return alog_raw_uv(p, ((uint64_t)v << 1) ^ (v < 0 ? ~(uint64_t)0 : 0));
}

/* Is constant opcode o (kop[] of a raw record) one whose value is in the
 * IR (then rawk has no entry for it)? t: its IR type (irt & 0x1f). */
static inline int alog_raw_k_inline(const uint8_t *kop, unsigned o, unsigned t)
{
	return (o == kop[ALOG_K_PRI] && t <= 2) || o == kop[ALOG_K_INT] ||
	       o == kop[ALOG_K_NULL] || o == kop[ALOG_K_NUM] ||
	       o == kop[ALOG_K_PTR] || o == kop[ALOG_K_KPTR];
}
/* a constant opcode whose value takes the next slot too */
static inline int alog_raw_k64(const uint8_t *kop, unsigned o)
{
	return o == kop[ALOG_K_NUM] || o == kop[ALOG_K_INT64] ||
	       o == kop[ALOG_K_GC] || o == kop[ALOG_K_PTR] ||
	       o == kop[ALOG_K_KPTR];
}

/* Version 2's constants: what follows a constant's opcode and type bytes,
 * by its opcode o (kop[] of the record): nothing (its value is in the
 * type, or in rawk), a zigzag varint (KINT), 8 bytes (KNUM), a varint
 * (KPTR, KKPTR), two varints (KSLOT), or else the IRIns's op1, op2 and
 * prev words (6 bytes). */
enum {
	ALOG_K2_OTHER,
	ALOG_K2_NONE,
	ALOG_K2_INT,
	ALOG_K2_NUM,
	ALOG_K2_PTR,
	ALOG_K2_SLOT
};
static inline int alog_raw_k2(const uint8_t *kop, unsigned o)
{
	if (o == kop[ALOG_K_PRI] || o == kop[ALOG_K_NULL] ||
	    o == kop[ALOG_K_GC] || o == kop[ALOG_K_INT64])
		return ALOG_K2_NONE;
	if (o == kop[ALOG_K_INT])
		return ALOG_K2_INT;
	if (o == kop[ALOG_K_NUM])
		return ALOG_K2_NUM;
	if (o == kop[ALOG_K_PTR] || o == kop[ALOG_K_KPTR])
		return ALOG_K2_PTR;
	if (o == kop[ALOG_K_SLOT])
		return ALOG_K2_SLOT;
	return ALOG_K2_OTHER;
}

/* Pack the format-2 fields "ir", "k", "snap" (keys and values) of the
 * raw fields raw/rawk (rawk: one msgpack map's bytes) into sb. 0, or -1
 * with why. */
int alog_raw_expand(msgpack_sbuffer *sb, const uint8_t *raw, size_t rawlen,
		    const uint8_t *rawk, size_t rawklen, char *why,
		    size_t whylen);

/* A record's payload p (one msgpack map, already walked): if it is a
 * stop record with raw/rawk fields, the same record with them expanded (in
 * their place: ir, k, snap) into out (cleared first), and 1; 0 when it has
 * none; -1 with why when they do not decode. */
int alog_raw_record(const uint8_t *p, size_t len, msgpack_sbuffer *out,
		    char *why, size_t whylen);
/* The same for any map with raw/rawk fields (the writer's check). */
int alog_raw_fields(const uint8_t *p, size_t len, msgpack_sbuffer *out,
		    char *why, size_t whylen);

#endif
