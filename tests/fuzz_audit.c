/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the auditlog decoder (audit/auditfmt.c) and the CLI's
 * way of reading records.
 *
 * Input modes (first byte):
 *  'R': the rest is a whole log file, decoded as is (checksums and all);
 *  'F': the rest is a LuaJIT bytecode dump, as a func record carries one
 *       (audit/auditfunc.c): decoded, then every answer read; a failure must
 *       say why;
 *  'X': the rest is one record payload, expanded if it is a raw stop
 *       record (audit/auditraw.h): the expansion must be one msgpack
 *       value, a refusal must say why;
 *  'W': a raw trace alone, any version (version 2's compact encoding is
 *       rewritten as version 1 before it is expanded: the fuzzer reaches
 *       it without keeping a record's msgpack framing right): a length
 *       byte n, n bytes of rawk (one msgpack value), then the raw bytes;
 *       the expansion must be the three fields ir, k, snap (six msgpack
 *       values), a refusal must say why;
 *  anything else: the rest is split into payloads (a length byte, then
 *       that many bytes), each framed with a correct CRC32C after a valid
 *       magic, so that the msgpack layer and the record checks are reached.
 *
 * Oracles, besides "no crash, no sanitizer report, no leak": the decoder
 * ends cleanly or with "damaged at byte N: ...; K records decoded" where
 * K is the number of records it returned and N is inside the input; every
 * returned record is a map; records decoded never exceed the frames given.
 */
#include "auditfmt.h"
#include "auditfunc.h"
#include "auditraw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void walk(const msgpack_object *o, int depth)
{
	/* touch everything, as a reader would */
	if (depth > 80)
		abort();
	if (o->type == MSGPACK_OBJECT_MAP)
		for (uint32_t i = 0; i < o->via.map.size; i++) {
			walk(&o->via.map.ptr[i].key, depth + 1);
			walk(&o->via.map.ptr[i].val, depth + 1);
		}
	else if (o->type == MSGPACK_OBJECT_ARRAY)
		for (uint32_t i = 0; i < o->via.array.size; i++)
			walk(&o->via.array.ptr[i], depth + 1);
}

static void check(const uint8_t *buf, size_t len, uint64_t maxrec)
{
	struct alog_reader r;
	alog_reader_init(&r, buf, len);
	const msgpack_object *o;
	int ret;
	uint64_t n = 0;
	while ((ret = alog_next(&r, &o)) == 1) {
		if (o->type != MSGPACK_OBJECT_MAP) {
			fprintf(stderr, "record is not a map\n");
			abort();
		}
		walk(o, 0);
		int64_t v;
		(void)alog_mp_int(alog_mp_get(o, "tr"), &v);
		uint32_t sl;
		(void)alog_mp_str(alog_mp_get(o, "ev"), &sl);
		(void)alog_mp_geti(o, -1);
		n++;
	}
	if (n != r.nrec || n > maxrec) {
		fprintf(stderr, "count %llu vs %llu\n", (unsigned long long)n,
			(unsigned long long)r.nrec);
		abort();
	}
	if (ret < 0) {
		unsigned long long at, k;
		if (sscanf(r.msg, "damaged at byte %llu: ", &at) != 1 ||
		    at > len || !strstr(r.msg, "records decoded") ||
		    sscanf(strstr(r.msg, "; ") + 2, "%llu records", &k) != 1 ||
		    k != n) {
			fprintf(stderr, "bad message: %s\n", r.msg);
			abort();
		}
	}
	alog_reader_free(&r);
	if (alog_next(&r, &o) == 1) /* after the end: stays ended */
		abort();
}

static void check_dump(const uint8_t *buf, size_t len)
{
	struct alog_fproto p;
	if (alog_fproto_decode(&p, buf, len)) {
		if (!p.err[0])
			abort();
		alog_fproto_free(&p);
		return;
	}
	/* everything a reader asks, one past each end too */
	volatile uint64_t sink = 0;
	for (uint32_t pc = 0; pc <= p.sizebc + 1; pc++)
		sink += alog_fproto_ins(&p, pc) +
			(uint64_t)alog_fproto_line(&p, pc);
	for (uint32_t i = 0; i <= p.numuv; i++) {
		const char *n = alog_fproto_uvname(&p, i);
		if (n)
			sink += strlen(n);
		else if (i < p.numuv)
			abort();
	}
	for (uint32_t i = 0; i < p.nkgc; i++)
		if (p.kgc[i].kind == ALOG_FK_STR && p.kgc[i].len)
			sink += (uint8_t)p.kgc[i].s[p.kgc[i].len - 1];
	for (uint32_t i = 0; i < p.nkn; i++)
		sink += p.kn[i] == p.kn[i];
	if (p.head_len > len || p.proto_off + p.proto_len > len)
		abort();
	(void)sink;
	alog_fproto_free(&p);
}

static void check_raw(const uint8_t *buf, size_t len)
{
	const uint8_t *q = buf;
	if (alog_mp_skip(&q, buf + len) || q != buf + len)
		return; /* the reader walks a payload first */
	msgpack_sbuffer out;
	msgpack_sbuffer_init(&out);
	char why[160] = "";
	int x = alog_raw_record(buf, len, &out, why, sizeof(why));
	if (x < 0 && !why[0])
		abort();
	if (x > 0) {
		q = (const uint8_t *)out.data;
		if (alog_mp_skip(&q, q + out.size) ||
		    q != (const uint8_t *)out.data + out.size)
			abort();
	}
	msgpack_sbuffer_destroy(&out);
}

static void check_rawbody(const uint8_t *data, size_t size)
{
	if (size < 1 || (size_t)data[0] > size - 1)
		return;
	size_t kn = data[0];
	uint8_t *k = malloc(kn ? kn : 1), *r = malloc(size - 1 - kn + 1);
	memcpy(k, data + 1, kn);
	memcpy(r, data + 1 + kn, size - 1 - kn);
	const uint8_t *q = k;
	if (!alog_mp_skip(&q, k + kn) && q == k + kn) {
		msgpack_sbuffer out;
		msgpack_sbuffer_init(&out);
		char why[160] = "";
		int x = alog_raw_expand(&out, r, size - 1 - kn, k, kn, why,
					sizeof(why));
		if (x < 0 && !why[0])
			abort();
		if (x == 0) {
			q = (const uint8_t *)out.data;
			const uint8_t *end = q + out.size;
			for (int i = 0; i < 6; i++)
				if (alog_mp_skip(&q, end))
					abort();
			if (q != end)
				abort();
		}
		msgpack_sbuffer_destroy(&out);
	}
	free(k);
	free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] == 'W') {
		check_rawbody(data + 1, size - 1);
		return 0;
	}
	if (data[0] == 'X') {
		uint8_t *b = malloc(size - 1 ? size - 1 : 1);
		memcpy(b, data + 1, size - 1);
		check_raw(b, size - 1);
		free(b);
		return 0;
	}
	if (data[0] == 'F') {
		uint8_t *b = malloc(size - 1 ? size - 1 : 1);
		memcpy(b, data + 1, size - 1);
		check_dump(b, size - 1);
		free(b);
		return 0;
	}
	if (data[0] == 'R') {
		uint8_t *b = malloc(size - 1 ? size - 1 : 1);
		memcpy(b, data + 1, size - 1);
		check(b, size - 1, UINT64_MAX);
		free(b);
		return 0;
	}
	uint8_t *b = malloc(ALOG_MAGIC_LEN + size * 9 + 16);
	size_t o = ALOG_MAGIC_LEN, i = 1;
	uint64_t frames = 0;
	alog_magic(b);
	/* a valid header payload first half of the time */
	if (data[0] & 1) {
		static const uint8_t h[] = {0x81, 0xa2, 'e', 'v', 0xa6, 'h',
					    'e',  'a',	'd', 'e', 'r'};
		alog_frame(b + o, h, sizeof(h));
		memcpy(b + o + ALOG_FRAME, h, sizeof(h));
		o += ALOG_FRAME + sizeof(h);
		frames++;
	}
	while (i < size) {
		size_t n = data[i++];
		if (n > size - i)
			n = size - i;
		if (n == 0)
			continue;
		alog_frame(b + o, data + i, (uint32_t)n);
		memcpy(b + o + ALOG_FRAME, data + i, n);
		o += ALOG_FRAME + n;
		i += n;
		frames++;
	}
	uint8_t *exact = malloc(o);
	memcpy(exact, b, o);
	free(b);
	check(exact, o, frames);
	free(exact);
	return 0;
}
