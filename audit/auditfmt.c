/* SPDX-License-Identifier: MIT */
/* The auditlog byte format: CRC32C, framing and the reader. */
#include "auditfmt.h"
#include "auditraw.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* CRC32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven. */
static uint32_t crc_tab[8][256];
static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^
					crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

#if defined(__x86_64__)
#include <nmmintrin.h>
/* The same CRC with the SSE4.2 crc32 instruction (8 bytes a step). One
 * instruction's result feeds the next, so a long buffer goes three
 * blocks of CRC3_BLK bytes at a time, in three independent registers,
 * joined by linearity: the register after A then B is shift(crc(A)) xor
 * crc_from_0(B), where shift runs the register over CRC3_BLK zero bytes.
 * shift is linear in the register's 32 bits: crc3_tab holds it for each
 * byte of the register, made by running the crc32 instruction itself over
 * the zeros from each single bit. */
#define CRC3_BLK 256
static uint32_t crc3_tab[4][256];
__attribute__((target("sse4.2"))) static void crc3_init(void)
{
	uint32_t bit[32];
	for (int i = 0; i < 32; i++) {
		uint32_t x = 1u << i;
		for (int n = 0; n < CRC3_BLK; n++)
			x = _mm_crc32_u8(x, 0);
		bit[i] = x;
	}
	for (int k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++) {
			uint32_t x = 0;
			for (int i = 0; i < 8; i++)
				if (b >> i & 1)
					x ^= bit[8 * k + i];
			crc3_tab[k][b] = x;
		}
}
static inline uint32_t crc3_shift(uint32_t c)
{
	return crc3_tab[0][c & 0xff] ^ crc3_tab[1][(c >> 8) & 0xff] ^
	       crc3_tab[2][(c >> 16) & 0xff] ^ crc3_tab[3][c >> 24];
}
__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = ~crc;
	if (len >= 3 * CRC3_BLK) {
		static int ready;
		if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
			crc3_init(); /* idempotent, as crc_init */
			__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
		}
		while (len >= 3 * CRC3_BLK) {
			uint64_t c1 = 0, c2 = 0;
			for (size_t i = 0; i < CRC3_BLK; i += 8) {
				uint64_t a, b, d;
				memcpy(&a, p + i, 8);
				memcpy(&b, p + CRC3_BLK + i, 8);
				memcpy(&d, p + 2 * CRC3_BLK + i, 8);
				c = _mm_crc32_u64(c, a);
				c1 = _mm_crc32_u64(c1, b);
				c2 = _mm_crc32_u64(c2, d);
			}
			c = crc3_shift(crc3_shift((uint32_t)c) ^ (uint32_t)c1) ^
			    (uint32_t)c2;
			p += 3 * CRC3_BLK;
			len -= 3 * CRC3_BLK;
		}
	}
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	uint32_t c32 = (uint32_t)c;
	while (len--)
		c32 = _mm_crc32_u8(c32, *p++);
	return ~c32;
}
#endif

static uint32_t crc_sw(uint32_t crc, const void *buf, size_t len);

uint32_t alog_crc32c(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
	static int hw = -1;
	if (hw < 0)
		hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	if (hw)
		return crc_hw(crc, buf, len);
#endif
	return crc_sw(crc, buf, len);
}

/* The portable one (also the reference the tests compare against). */
uint32_t alog_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	return crc_sw(crc, buf, len);
}

static uint32_t crc_sw(uint32_t crc, const void *buf, size_t len)
{
	static int ready;
	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		crc_init(); /* idempotent: racing threads compute the same */
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	}
	const uint8_t *p = buf;
	crc = ~crc;
	while (len >= 8) {
		uint32_t lo =
		    crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
			   (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
		crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		      crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		      crc_tab[3][p[4]] ^ crc_tab[2][p[5]] ^ crc_tab[1][p[6]] ^
		      crc_tab[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

void alog_magic(uint8_t out[ALOG_MAGIC_LEN])
{
	memset(out, 0, ALOG_MAGIC_LEN);
	memcpy(out, ALOG_MAGIC, sizeof(ALOG_MAGIC) - 1); /* no NUL: 8 bytes */
	out[8] = ALOG_VERSION;
}

void alog_frame(uint8_t out[ALOG_FRAME], const void *payload, uint32_t len)
{
	alog_st32(out, len);
	alog_st32(out + 4, alog_crc32c(0, payload, len));
}

void alog_reader_init(struct alog_reader *r, const void *buf, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->buf = buf;
	r->len = len;
	msgpack_unpacked_init(&r->up);
}

int alog_read_file(struct alog_reader *r, const char *path)
{
	alog_reader_init(r, NULL, 0);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		snprintf(r->msg, sizeof(r->msg), "%s: %s", path, strerror(e));
		if (fd >= 0)
			close(fd);
		r->state = -1;
		return -e;
	}
	size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 65536,
	       n = 0;
	uint8_t *buf = malloc(cap);
	for (;;) {
		if (!buf) {
			close(fd);
			snprintf(r->msg, sizeof(r->msg), "%s: out of memory",
				 path);
			r->state = -1;
			return -ENOMEM;
		}
		ssize_t got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int e = errno;
			free(buf);
			close(fd);
			snprintf(r->msg, sizeof(r->msg), "%s: %s", path,
				 strerror(e));
			r->state = -1;
			return -e;
		}
		if (got == 0)
			break;
		n += (size_t)got;
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap * 2);
			if (!nb)
				free(buf);
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	r->buf = buf;
	r->len = n;
	r->owned = 1;
	return 0;
}

/* Walk one msgpack value in [*p, end) without building it: every
 * container's element count must fit in the bytes left (each element takes
 * at least one byte), so that msgpack-c never allocates for a count a
 * damaged length claims; nesting is bounded. 0 ok, -1 bad. */
static int mp_skip(const uint8_t **pp, const uint8_t *end, int depth)
{
	const uint8_t *p = *pp;
	if (p >= end || depth > 64)
		return -1;
	uint8_t c = *p++;
	uint64_t n = 0, items = 0, skip = 0;
	size_t need = 0;
#define NEED(k)                                      \
	do {                                         \
		if ((size_t)(end - p) < (size_t)(k)) \
			return -1;                   \
	} while (0)
	if (c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3) {
		/* fixint, nil, bool */
	} else if (c >= 0x80 && c <= 0x8f) {
		items = 2u * (c & 0x0f);
	} else if (c >= 0x90 && c <= 0x9f) {
		items = c & 0x0f;
	} else if (c >= 0xa0 && c <= 0xbf) {
		skip = c & 0x1f;
	} else {
		switch (c) {
		case 0xcc:
		case 0xd0:
			skip = 1;
			break;
		case 0xcd:
		case 0xd1:
			skip = 2;
			break;
		case 0xca:
		case 0xce:
		case 0xd2:
			skip = 4;
			break;
		case 0xcb:
		case 0xcf:
		case 0xd3:
			skip = 8;
			break;
		case 0xd4:
			skip = 2;
			break;
		case 0xd5:
			skip = 3;
			break;
		case 0xd6:
			skip = 5;
			break;
		case 0xd7:
			skip = 9;
			break;
		case 0xd8:
			skip = 17;
			break;
		case 0xc4:
		case 0xd9:
		case 0xc7:
			need = 1;
			break;
		case 0xc5:
		case 0xda:
		case 0xdc:
		case 0xde:
		case 0xc8:
			need = 2;
			break;
		case 0xc6:
		case 0xdb:
		case 0xdd:
		case 0xdf:
		case 0xc9:
			need = 4;
			break;
		default:
			return -1; /* 0xc1 never used */
		}
		if (need) {
			NEED(need);
			for (size_t i = 0; i < need; i++)
				n = n << 8 | p[i];
			p += need;
			if (c == 0xdc || c == 0xdd)
				items = n;
			else if (c == 0xde || c == 0xdf)
				items = 2 * n;
			else if (c == 0xc7 || c == 0xc8 || c == 0xc9)
				skip = n + 1; /* ext: type byte + data */
			else
				skip = n;
		}
	}
	NEED(skip);
	p += skip;
	if (items > (uint64_t)(end - p))
		return -1;
	for (uint64_t i = 0; i < items; i++)
		if (mp_skip(&p, end, depth + 1))
			return -1;
#undef NEED
	*pp = p;
	return 0;
}

int alog_mp_skip(const uint8_t **pp, const uint8_t *end)
{
	return mp_skip(pp, end, 0);
}

static int damaged(struct alog_reader *r, size_t at, const char *why)
{
	snprintf(r->msg, sizeof(r->msg),
		 "damaged at byte %zu: %.190s; %llu records decoded", at, why,
		 (unsigned long long)r->nrec);
	r->state = -1;
	return -1;
}

int alog_next(struct alog_reader *r, const msgpack_object **obj)
{
	if (r->state)
		return r->state > 0 ? 0 : -1;
	if (r->off == 0) {
		uint8_t m[ALOG_MAGIC_LEN];
		alog_magic(m);
		if (r->len < ALOG_MAGIC_LEN)
			return damaged(r, 0,
				       r->len ? "truncated file magic"
					      : "empty file (no magic)");
		if (memcmp(r->buf, m, 8))
			return damaged(r, 0, "not an auditlog (bad magic)");
		if (memcmp(r->buf, m, ALOG_MAGIC_LEN))
			return damaged(r, 8, "unsupported format version");
		r->off = ALOG_MAGIC_LEN;
	}
	size_t at = r->off;
	if (at == r->len) {
		r->state = 1;
		return 0;
	}
	r->rec_off = at;
	/* Zeros where a frame should be: the end of the written data. The
	 * writer allocates the file ahead and writes each record's length
	 * last, so what follows is zeros, or a record that was being written
	 * when its writer stopped: noted, not damage. */
	size_t z = at;
	while (z < r->len && z < at + ALOG_FRAME && !r->buf[z])
		z++;
	if (z == r->len || z == at + ALOG_FRAME) {
		r->state = 1;
		r->msg[0] = 0;
		while (z < r->len && !r->buf[z])
			z++;
		if (z < r->len)
			snprintf(r->msg, sizeof(r->msg),
				 "unfinished record at byte %zu (its writer "
				 "stopped while writing it); %llu records "
				 "decoded",
				 at, (unsigned long long)r->nrec);
		return 0;
	}
	if (r->len - at < ALOG_FRAME)
		return damaged(r, at, "truncated record frame");
	uint32_t len = alog_ld32(r->buf + at), crc = alog_ld32(r->buf + at + 4);
	if (len == 0 || len > ALOG_MAX_RECORD)
		return damaged(r, at, "impossible record length");
	if (r->len - at - ALOG_FRAME < len)
		return damaged(r, at, "truncated record");
	const uint8_t *p = r->buf + at + ALOG_FRAME;
	if (alog_crc32c(0, p, len) != crc)
		return damaged(r, at, "checksum mismatch");
	const uint8_t *q = p;
	if (mp_skip(&q, p + len, 0) || q != p + len)
		return damaged(r, at, "record is not one msgpack value");
	/* a raw stop record (format 3): expanded into its format-2 fields */
	char why[160];
	int x = alog_raw_record(p, len, &r->xb, why, sizeof(why));
	if (x < 0) {
		char m[200];
		snprintf(m, sizeof(m), "stop record: bad raw trace: %.150s",
			 why);
		return damaged(r, at, m);
	}
	if (x > 0) {
		p = (const uint8_t *)r->xb.data;
		len = (uint32_t)r->xb.size;
	}
	size_t used = 0;
	msgpack_unpack_return ret =
	    msgpack_unpack_next(&r->up, (const char *)p, len, &used);
	if (ret != MSGPACK_UNPACK_SUCCESS || used != len)
		return damaged(r, at, "record is not one msgpack value");
	if (r->up.data.type != MSGPACK_OBJECT_MAP)
		return damaged(r, at, "record is not a msgpack map");
	if (r->nrec == 0) {
		const msgpack_object *ev = alog_mp_get(&r->up.data, "ev");
		uint32_t n;
		const char *s = alog_mp_str(ev, &n);
		if (!s || n != 6 || memcmp(s, "header", 6))
			return damaged(r, at, "first record is not a header");
	}
	r->off = at + ALOG_FRAME + alog_ld32(r->buf + at);
	r->nrec++;
	*obj = &r->up.data;
	return 1;
}

void alog_reader_free(struct alog_reader *r)
{
	msgpack_unpacked_destroy(&r->up);
	msgpack_sbuffer_destroy(&r->xb);
	if (r->owned)
		free((void *)r->buf);
	r->buf = NULL;
	r->owned = 0;
}

const msgpack_object *alog_mp_get(const msgpack_object *map, const char *key)
{
	if (!map || map->type != MSGPACK_OBJECT_MAP)
		return NULL;
	size_t kl = strlen(key);
	for (uint32_t i = 0; i < map->via.map.size; i++) {
		const msgpack_object *k = &map->via.map.ptr[i].key;
		if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == kl &&
		    !memcmp(k->via.str.ptr, key, kl))
			return &map->via.map.ptr[i].val;
	}
	return NULL;
}

const msgpack_object *alog_mp_geti(const msgpack_object *map, int64_t key)
{
	if (!map || map->type != MSGPACK_OBJECT_MAP)
		return NULL;
	for (uint32_t i = 0; i < map->via.map.size; i++) {
		int64_t v;
		if (alog_mp_int(&map->via.map.ptr[i].key, &v) && v == key)
			return &map->via.map.ptr[i].val;
	}
	return NULL;
}

int alog_mp_int(const msgpack_object *o, int64_t *out)
{
	if (!o)
		return 0;
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		*out = (int64_t)o->via.u64;
		return 1;
	}
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*out = o->via.i64;
		return 1;
	}
	return 0;
}

int alog_mp_num(const msgpack_object *o, double *out)
{
	int64_t i;
	if (alog_mp_int(o, &i)) {
		*out = o->type == MSGPACK_OBJECT_POSITIVE_INTEGER
			   ? (double)o->via.u64
			   : (double)i;
		return 1;
	}
	if (o && (o->type == MSGPACK_OBJECT_FLOAT64 ||
		  o->type == MSGPACK_OBJECT_FLOAT32)) {
		*out = o->via.f64;
		return 1;
	}
	return 0;
}

const char *alog_mp_str(const msgpack_object *o, uint32_t *len)
{
	if (!o)
		return NULL;
	if (o->type == MSGPACK_OBJECT_STR) {
		*len = o->via.str.size;
		return o->via.str.ptr;
	}
	if (o->type == MSGPACK_OBJECT_BIN) {
		*len = o->via.bin.size;
		return o->via.bin.ptr;
	}
	return NULL;
}
