/* SPDX-License-Identifier: MIT */
/*
 * A msgpack encoder straight into a msgpack_sbuffer: the bytes msgpack-c's
 * msgpack_pack_* write (same forms: the smallest one, as msgpack-c picks
 * it), without its write callback per element. The auditlog's writer
 * builds its hot records with these (docs/AUDITLOG.md "Cost");
 * tests/t_auditdec.c compares them with msgpack-c's packer. Where the
 * buffer cannot grow (out of memory) a value is left out, as msgpack-c's
 * packer leaves it out.
 */
#ifndef ALOG_AUDITMP_H
#define ALOG_AUDITMP_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Room for n more bytes at sb->data + sb->size (not yet counted), NULL
 * when the buffer cannot grow. */
char *alog_mpw_grow(msgpack_sbuffer *sb, size_t n);

static inline char *alog_mpw_room(msgpack_sbuffer *sb, size_t n)
{
	if (__builtin_expect(sb->alloc - sb->size >= n, 1))
		return sb->data + sb->size;
	return alog_mpw_grow(sb, n);
}

static inline void alog_mpw_be16(char *p, uint16_t v)
{
	p[0] = (char)(v >> 8);
	p[1] = (char)v;
}
static inline void alog_mpw_be32(char *p, uint32_t v)
{
	v = __builtin_bswap32(v);
	memcpy(p, &v, 4);
}
static inline void alog_mpw_be64(char *p, uint64_t v)
{
	v = __builtin_bswap64(v);
	memcpy(p, &v, 8);
}

/* bytes as they are (pre-encoded keys, bodies) */
static inline void alog_mpw_bytes(msgpack_sbuffer *sb, const void *b, size_t n)
{
	char *p = alog_mpw_room(sb, n);
	if (!p)
		return;
	memcpy(p, b, n);
	sb->size += n;
}

static inline void alog_mpw_byte(msgpack_sbuffer *sb, uint8_t b)
{
	char *p = alog_mpw_room(sb, 1);
	if (!p)
		return;
	*p = (char)b;
	sb->size++;
}

/* the form of n in a one-byte/16/32 family (array, map) */
static inline void alog_mpw_head(msgpack_sbuffer *sb, size_t n, uint8_t fix,
				 unsigned fixmax, uint8_t b16)
{
	char *p = alog_mpw_room(sb, 5);
	if (!p)
		return;
	if (n < fixmax) {
		p[0] = (char)(fix | (uint8_t)n);
		sb->size += 1;
	} else if (n < 65536) {
		p[0] = (char)b16;
		alog_mpw_be16(p + 1, (uint16_t)n);
		sb->size += 3;
	} else {
		p[0] = (char)(b16 + 1);
		alog_mpw_be32(p + 1, (uint32_t)n);
		sb->size += 5;
	}
}

static inline void alog_mpw_map(msgpack_sbuffer *sb, size_t n)
{
	alog_mpw_head(sb, n, 0x80, 16, 0xde);
}

static inline void alog_mpw_array(msgpack_sbuffer *sb, size_t n)
{
	alog_mpw_head(sb, n, 0x90, 16, 0xdc);
}

static inline void alog_mpw_uint(msgpack_sbuffer *sb, uint64_t d)
{
	char *p = alog_mpw_room(sb, 9);
	if (!p)
		return;
	if (d < 128) {
		p[0] = (char)d;
		sb->size += 1;
	} else if (d < 256) {
		p[0] = (char)0xcc;
		p[1] = (char)d;
		sb->size += 2;
	} else if (d < 65536) {
		p[0] = (char)0xcd;
		alog_mpw_be16(p + 1, (uint16_t)d);
		sb->size += 3;
	} else if (d < (1ull << 32)) {
		p[0] = (char)0xce;
		alog_mpw_be32(p + 1, (uint32_t)d);
		sb->size += 5;
	} else {
		p[0] = (char)0xcf;
		alog_mpw_be64(p + 1, d);
		sb->size += 9;
	}
}

/* msgpack_pack_int64: a non-negative value in the unsigned forms */
static inline void alog_mpw_int(msgpack_sbuffer *sb, int64_t d)
{
	if (d >= 0) {
		alog_mpw_uint(sb, (uint64_t)d);
		return;
	}
	if (d >= -32) { /* negative fixint */
		alog_mpw_byte(sb, (uint8_t)d);
		return;
	}
	char *p = alog_mpw_room(sb, 9);
	if (!p)
		return;
	if (d >= -128) {
		p[0] = (char)0xd0;
		p[1] = (char)(uint8_t)d;
		sb->size += 2;
	} else if (d >= -32768) {
		p[0] = (char)0xd1;
		alog_mpw_be16(p + 1, (uint16_t)d);
		sb->size += 3;
	} else if (d >= -2147483648ll) {
		p[0] = (char)0xd2;
		alog_mpw_be32(p + 1, (uint32_t)d);
		sb->size += 5;
	} else {
		p[0] = (char)0xd3;
		alog_mpw_be64(p + 1, (uint64_t)d);
		sb->size += 9;
	}
}

static inline void alog_mpw_double(msgpack_sbuffer *sb, double d)
{
	char *p = alog_mpw_room(sb, 9);
	if (!p)
		return;
	uint64_t u;
	memcpy(&u, &d, 8);
	p[0] = (char)0xcb;
	alog_mpw_be64(p + 1, u);
	sb->size += 9;
}

static inline void alog_mpw_nil(msgpack_sbuffer *sb)
{
	alog_mpw_byte(sb, 0xc0);
}

static inline void alog_mpw_bool(msgpack_sbuffer *sb, int b)
{
	alog_mpw_byte(sb, b ? 0xc3 : 0xc2);
}

/* a str's header (msgpack_pack_str) */
static inline void alog_mpw_strhead(msgpack_sbuffer *sb, size_t l)
{
	char *p = alog_mpw_room(sb, 5);
	if (!p)
		return;
	if (l < 32) {
		p[0] = (char)(0xa0 | l);
		sb->size += 1;
	} else if (l < 256) {
		p[0] = (char)0xd9;
		p[1] = (char)l;
		sb->size += 2;
	} else if (l < 65536) {
		p[0] = (char)0xda;
		alog_mpw_be16(p + 1, (uint16_t)l);
		sb->size += 3;
	} else {
		p[0] = (char)0xdb;
		alog_mpw_be32(p + 1, (uint32_t)l);
		sb->size += 5;
	}
}

static inline void alog_mpw_str(msgpack_sbuffer *sb, const void *s, size_t l)
{
	alog_mpw_strhead(sb, l);
	alog_mpw_bytes(sb, s, l);
}

/* a bin's header (msgpack_pack_bin) */
static inline void alog_mpw_binhead(msgpack_sbuffer *sb, size_t l)
{
	char *p = alog_mpw_room(sb, 5);
	if (!p)
		return;
	if (l < 256) {
		p[0] = (char)0xc4;
		p[1] = (char)l;
		sb->size += 2;
	} else if (l < 65536) {
		p[0] = (char)0xc5;
		alog_mpw_be16(p + 1, (uint16_t)l);
		sb->size += 3;
	} else {
		p[0] = (char)0xc6;
		alog_mpw_be32(p + 1, (uint32_t)l);
		sb->size += 5;
	}
}

#endif
