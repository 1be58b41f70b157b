/* SPDX-License-Identifier: MIT */
/*
 * The auditlog's byte format (docs/AUDITLOG.md), shared by the writer
 * (audit/auditw.c), the Lua module's reader and the CLI:
 *
 *   file   := magic record*
 *   magic  := "JSFAUDIT" u8 version(1) u8[7] zero     (16 bytes)
 *   record := u32le len, u32le crc32c(payload), payload[len]
 *   payload:= one msgpack map (string keys); the first record is ev=header
 *
 * The reader stops at the first record that is truncated, too long, fails
 * its checksum or does not decode as exactly one msgpack map.
 */
#ifndef ALOG_AUDITFMT_H
#define ALOG_AUDITFMT_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

/* Little-endian bytes at any alignment: the frames' headers, the raw
 * records' fields (auditfmt.c, auditraw.c), and through this library's
 * face the module's Lua-frame maps and Lua layout area (vm/luamap.c,
 * vm/luavm.c). */
static inline void alog_st16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static inline void alog_st32(uint8_t *p, uint32_t v)
{
	alog_st16(p, v);
	alog_st16(p + 2, v >> 16);
}
static inline void alog_st64(uint8_t *p, uint64_t v)
{
	alog_st32(p, (uint32_t)v);
	alog_st32(p + 4, (uint32_t)(v >> 32));
}
static inline uint32_t alog_ld16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}
static inline uint32_t alog_ld32(const uint8_t *p)
{
	return alog_ld16(p) | alog_ld16(p + 2) << 16;
}
static inline uint64_t alog_ld64(const uint8_t *p)
{
	return (uint64_t)alog_ld32(p) | (uint64_t)alog_ld32(p + 4) << 32;
}

#define ALOG_MAGIC "JSFAUDIT"
#define ALOG_VERSION 1
#define ALOG_MAGIC_LEN 16
#define ALOG_FRAME 8		     /* len + crc */
#define ALOG_MAX_RECORD (256u << 20) /* 256 MiB */

uint32_t alog_crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t alog_crc32c_sw(uint32_t crc, const void *buf, size_t len);
/* Fill the 16-byte file magic. */
void alog_magic(uint8_t out[ALOG_MAGIC_LEN]);
/* Frame header for a payload. */
void alog_frame(uint8_t out[ALOG_FRAME], const void *payload, uint32_t len);

/* Reader over a memory buffer (the whole file). */
struct alog_reader {
	const uint8_t *buf;
	size_t len;
	size_t off;	/* next record's offset */
	size_t rec_off; /* the current record's offset */
	uint64_t nrec;	/* records decoded so far */
	int state;	/* 0 reading, 1 clean end, -1 damaged */
	char msg[256];	/* "damaged at byte N: <why>; K records decoded" */
	msgpack_unpacked up;
	msgpack_sbuffer xb; /* a raw stop record expanded (auditraw.h) */
	int owned;	    /* buf is malloc'd by alog_read_file */
};

void alog_reader_init(struct alog_reader *r, const void *buf, size_t len);
/* Read a whole file into a reader: 0, or -errno (r->msg says why). */
int alog_read_file(struct alog_reader *r, const char *path);
/* The next record: 1 and *obj (valid until the next call), 0 at a clean
 * end, -1 at damage (r->msg). */
int alog_next(struct alog_reader *r, const msgpack_object **obj);
void alog_reader_free(struct alog_reader *r);

/* Walk one msgpack value at *pp (bounded by end, container counts checked
 * against the bytes left): 0 and *pp past it, or -1. */
int alog_mp_skip(const uint8_t **pp, const uint8_t *end);

/* msgpack_object helpers for readers */
const msgpack_object *alog_mp_get(const msgpack_object *map, const char *key);
const msgpack_object *alog_mp_geti(const msgpack_object *map, int64_t key);
int alog_mp_int(const msgpack_object *o, int64_t *out); /* 1 if integral */
int alog_mp_num(const msgpack_object *o, double *out);
/* A str (or bin) as pointer+length; NULL if not one. */
const char *alog_mp_str(const msgpack_object *o, uint32_t *len);

#endif
