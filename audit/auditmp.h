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

/* At p (room made): the one-byte tag, then v big-endian in w bytes (0,
 * 1, 2, 4 or 8); counted in sb->size. */
static inline void alog_mpw_put(msgpack_sbuffer *sb, char *p, uint8_t tag,
				uint64_t v, unsigned w)
{
	p[0] = (char)tag;
	if (w == 1)
		p[1] = (char)v;
	else if (w == 2)
		alog_mpw_be16(p + 1, (uint16_t)v);
	else if (w == 4)
		alog_mpw_be32(p + 1, (uint32_t)v);
	else if (w == 8)
		alog_mpw_be64(p + 1, v);
	sb->size += 1 + w;
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
	if (n < fixmax)
		alog_mpw_put(sb, p, (uint8_t)(fix | n), 0, 0);
	else if (n < 65536)
		alog_mpw_put(sb, p, b16, n, 2);
	else
		alog_mpw_put(sb, p, (uint8_t)(b16 + 1), n, 4);
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
	if (d < 128)
		alog_mpw_put(sb, p, (uint8_t)d, 0, 0);
	else if (d < 256)
		alog_mpw_put(sb, p, 0xcc, d, 1);
	else if (d < 65536)
		alog_mpw_put(sb, p, 0xcd, d, 2);
	else if (d < (1ull << 32))
		alog_mpw_put(sb, p, 0xce, d, 4);
	else
		alog_mpw_put(sb, p, 0xcf, d, 8);
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
	if (d >= -128)
		alog_mpw_put(sb, p, 0xd0, (uint64_t)d, 1);
	else if (d >= -32768)
		alog_mpw_put(sb, p, 0xd1, (uint64_t)d, 2);
	else if (d >= -2147483648ll)
		alog_mpw_put(sb, p, 0xd2, (uint64_t)d, 4);
	else
		alog_mpw_put(sb, p, 0xd3, (uint64_t)d, 8);
}

static inline void alog_mpw_double(msgpack_sbuffer *sb, double d)
{
	char *p = alog_mpw_room(sb, 9);
	if (!p)
		return;
	uint64_t u;
	memcpy(&u, &d, 8);
	alog_mpw_put(sb, p, 0xcb, u, 8);
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
	if (l < 32)
		alog_mpw_put(sb, p, (uint8_t)(0xa0 | l), 0, 0);
	else if (l < 256)
		alog_mpw_put(sb, p, 0xd9, l, 1);
	else if (l < 65536)
		alog_mpw_put(sb, p, 0xda, l, 2);
	else
		alog_mpw_put(sb, p, 0xdb, l, 4);
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
	if (l < 256)
		alog_mpw_put(sb, p, 0xc4, l, 1);
	else if (l < 65536)
		alog_mpw_put(sb, p, 0xc5, l, 2);
	else
		alog_mpw_put(sb, p, 0xc6, l, 4);
}

#endif
