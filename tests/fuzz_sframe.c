/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for jsf_validate_sframe on raw SFrame V3 sections.
 *
 * Input modes (low bit of the first byte):
 *  0: raw: sec_addr (8 bytes), text_start (8), text_size (8, only when bit 1
 *     of the first byte is set, else 0), then the section bytes;
 *  1: construct: encode a valid section from the input with an encoder
 *     written here (independent of the library's), with a text range that
 *     covers it or not, then apply mutations aimed at the header, the FDEs
 *     and the FRE sub-section.
 *
 * Oracles:
 *  - the verdict equals that of an independent checker of the rules in
 *    docs (shared/reference/sframe.md, "What the proposed kernel unwinder
 *    checks", plus the library's documented extras: no overlapping
 *    functions, first FRE at offset 0, at most 2 data words on AMD64);
 *  - an unmutated constructed section whose functions are all inside the
 *    text range is accepted;
 *  - validation is deterministic, does not depend on the buffer's
 *    alignment, writes a non-empty NUL-terminated message that fits any
 *    buffer size, and gives the same verdict without a message buffer;
 *  - a section accepted with a text range is accepted without one.
 *
 * The kernel also rejects a section whose FRE sub-section starts before the
 * end of the FDE sub-section ("inconsistent fde/fre offsets"); the library
 * does not check it (a known bug, demonstrated by t_badinput). This target
 * tolerates that one difference unless JSF_FUZZ_STRICT=1 is set in the
 * environment, so that fuzzing goes on looking for others.
 */
#include "jitsframe.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...)                                                            \
	do {                                                                 \
		fprintf(stderr, "fuzz_sframe: oracle failed: " __VA_ARGS__); \
		fprintf(stderr, "\n");                                       \
		abort();                                                     \
	} while (0)

#define HDR 28u
#define FDESZ 16u
#define MAXF 8
#define MAXROWS 16
#define MAXLEN (64 * 1024)

static bool strict;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *s = getenv("JSF_FUZZ_STRICT");
	strict = !s || *s != '0'; /* the library bug is fixed: on by default */
	return 0;
}

struct in {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct in *in, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes && in->n; i++, in->n--)
		v |= (uint64_t)*in->p++ << (8 * i);
	return v;
}

static uint64_t ld(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void st(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* ------------------------------------------------ independent checker */

enum verdict { OK, BAD, BAD_ORDER_ONLY };

/*
 * The rules, written from the format description. Returns OK, BAD, or
 * BAD_ORDER_ONLY when the only violation is the kernel's sub-section order
 * rule (FRE sub-section starting before the FDE sub-section ends).
 */
static enum verdict check(const uint8_t *b, size_t len, uint64_t sec_addr,
			  uint64_t ts, uint64_t tz, const char **why)
{
#define NO(s)               \
	do {                \
		*why = s;   \
		return BAD; \
	} while (0)
	if (len < HDR)
		NO("short");
	if (ld(b, 2) != 0xdee2 || b[2] != 3)
		NO("magic/version");
	if (b[3] != 0x5)
		NO("flags");
	if (b[4] != 3 || b[5] != 0 || b[6] != 0xf8 || b[7] != 0)
		NO("arch/fixed offsets/auxhdr");
	uint64_t nf = ld(b + 8, 4), nfres = ld(b + 12, 4);
	uint64_t frelen = ld(b + 16, 4), fdeoff = ld(b + 20, 4),
		 freoff = ld(b + 24, 4);
	if (!nf || !nfres)
		NO("empty");
	uint64_t body = len - HDR;
	if (fdeoff + nf * FDESZ > body || freoff + frelen > body)
		NO("sub-section outside");
	const uint8_t *fre = b + HDR + freoff;
	uint64_t prev_start = 0, prev_end = 0, seen = 0;
	for (uint64_t i = 0; i < nf; i++) {
		uint64_t fo = HDR + fdeoff + i * FDESZ;
		uint64_t start = sec_addr + fo + ld(b + fo, 8);
		uint64_t size = ld(b + fo + 8, 4), attr = ld(b + fo + 12, 4);
		if (tz && (start < ts || start - ts >= tz ||
			   size > tz - (start - ts)))
			NO("outside text");
		if (i && (start <= prev_start || start < prev_end))
			NO("order/overlap");
		if (start + size < start)
			NO("wrap");
		prev_start = start;
		prev_end = start + size;
		if (attr + 5 > frelen)
			NO("attr outside");
		const uint8_t *a = fre + attr;
		uint64_t n = ld(a, 2);
		unsigned type = a[2] & 0xf, pcmask = (a[2] >> 4) & 1;
		if (n == 0 || n > size || type > 2 || (pcmask && a[4] == 0) ||
		    (a[3] & 0xf))
			NO("attribute record");
		uint64_t off = attr + 5, prev = 0;
		unsigned aw = 1u << type;
		for (uint64_t k = 0; k < n; k++) {
			if (off + aw + 1 > frelen)
				NO("FRE outside");
			unsigned info = fre[off + aw];
			unsigned nw = (info >> 1) & 0xf, ws = (info >> 5) & 3;
			if (ws > 2 || nw > 2 || (info & 0x80))
				NO("FRE info");
			uint64_t flen = aw + 1 + nw * (1u << ws);
			if (off + flen > frelen)
				NO("FRE words outside");
			uint64_t ip = ld(fre + off, aw);
			if (ip >= size || (k && ip <= prev) || (!k && ip != 0))
				NO("FRE start offset");
			prev = ip;
			off += flen;
		}
		seen += n;
	}
	if (seen > nfres)
		NO("num_fres");
	if (freoff < fdeoff + nf * FDESZ) {
		*why = "FRE sub-section starts inside the FDE sub-section";
		return BAD_ORDER_ONLY;
	}
	*why = "valid";
	return OK;
#undef NO
}

/* ---------------------------------------------------- independent encoder */

struct fn {
	uint64_t start;
	uint32_t size, nrows;
	uint32_t off[MAXROWS];
	int32_t cfa[MAXROWS], fp[MAXROWS];
	uint8_t nw[MAXROWS], base[MAXROWS];
};

static unsigned width_code(int32_t v)
{
	if (v >= -128 && v <= 127)
		return 0;
	if (v >= -32768 && v <= 32767)
		return 1;
	return 2;
}

/* Encode n functions (sorted, not overlapping); returns the length. */
static size_t encode(uint8_t *out, struct fn *f, unsigned n, uint64_t sec_addr,
		     struct in *in)
{
	unsigned pad_a = (unsigned)take(in, 1) % 3 * 4, pad_b = 0;
	unsigned lay = (unsigned)take(in, 1);
	pad_b = lay & 3;
	uint8_t *fre0 = out + HDR + pad_a + n * FDESZ + pad_b;
	uint32_t fl = 0, nfres = 0;
	memset(out, 0, MAXLEN);
	for (unsigned i = 0; i < n; i++) {
		unsigned t = f[i].size <= 0x100	    ? 0
			     : f[i].size <= 0x10000 ? 1
						    : 2;
		if ((lay >> 2) & 1 && t < 2)
			t++; /* wider than needed is allowed */
		uint8_t *fo = out + HDR + pad_a + i * FDESZ;
		st(fo, f[i].start - (sec_addr + (uint64_t)(fo - out)), 8);
		st(fo + 8, f[i].size, 4);
		st(fo + 12, fl, 4);
		uint8_t *p = fre0 + fl;
		st(p, f[i].nrows, 2);
		p[2] = (uint8_t)t;
		p[3] = 0;
		p[4] = 0;
		p += 5;
		for (unsigned k = 0; k < f[i].nrows; k++) {
			unsigned ws = 0, nw = f[i].nw[k];
			if (nw >= 1 && width_code(f[i].cfa[k]) > ws)
				ws = width_code(f[i].cfa[k]);
			if (nw >= 2 && width_code(f[i].fp[k]) > ws)
				ws = width_code(f[i].fp[k]);
			st(p, f[i].off[k], 1u << t);
			p += 1u << t;
			*p++ = (uint8_t)(ws << 5 | nw << 1 | f[i].base[k]);
			if (nw >= 1) {
				st(p, (uint32_t)f[i].cfa[k], 1u << ws);
				p += 1u << ws;
			}
			if (nw >= 2) {
				st(p, (uint32_t)f[i].fp[k], 1u << ws);
				p += 1u << ws;
			}
		}
		nfres += f[i].nrows;
		fl = (uint32_t)(p - fre0);
		if ((lay >> 3) & 1)
			fl += 2; /* unreferenced bytes between functions */
	}
	out[0] = 0xe2;
	out[1] = 0xde;
	out[2] = 3;
	out[3] = 0x5;
	out[4] = 3;
	out[5] = 0;
	out[6] = 0xf8;
	out[7] = 0;
	st(out + 8, n, 4);
	st(out + 12, nfres + ((lay >> 4) & 1), 4);
	st(out + 16, fl, 4);
	st(out + 20, pad_a, 4);
	st(out + 24, pad_a + n * FDESZ + pad_b, 4);
	return (size_t)(fre0 - out) + fl + ((lay >> 5) & 3);
}

static unsigned gen(struct in *in, struct fn *f)
{
	unsigned n = 1 + (unsigned)take(in, 1) % MAXF;
	uint64_t at = 0x7f0000100000ull + take(in, 2);
	for (unsigned i = 0; i < n; i++) {
		struct fn *g = &f[i];
		memset(g, 0, sizeof(*g));
		unsigned s = (unsigned)take(in, 1);
		g->size = s < 240 ? 1 + s : 1 + (uint32_t)take(in, 3);
		at += take(in, 1) & 0x3f;
		g->start = at;
		at += g->size;
		uint32_t max = g->size < MAXROWS ? g->size : MAXROWS;
		uint32_t want = 1 + (uint32_t)take(in, 1) % max;
		uint32_t step = g->size / want;
		for (uint32_t off = 0; g->nrows < want && off < g->size;
		     off += 1 + (uint32_t)take(in, 1) % step) {
			unsigned k = g->nrows++, b = (unsigned)take(in, 1);
			g->off[k] = off;
			g->nw[k] = (uint8_t)(b % 3);
			g->base[k] = (b >> 2) & 1;
			g->cfa[k] = (int32_t)take(in, 1 + (b >> 3) % 4);
			g->fp[k] = (int32_t)(0u - (uint32_t)take(
						      in, 1 + (b >> 5) % 4));
		}
	}
	return n;
}

static void mutate(struct in *in, uint8_t *b, size_t *len)
{
	uint64_t fdeoff = ld(b + 20, 4), freoff = ld(b + 24, 4);
	uint64_t nf = ld(b + 8, 4), fl = ld(b + 16, 4);
	struct {
		uint64_t at, span;
	} base[4] = {
	    {0, HDR},
	    {HDR + fdeoff, nf * FDESZ + 1},
	    {HDR + freoff, fl + 1},
	    {0, *len + 1},
	};
	static const uint32_t vals[] = {
	    0,		1,	    2,		3,	   4,	   5,
	    0x7f,	0x80,	    0xff,	0x100,	   0xffff, 0x10000,
	    0x7fffffff, 0x80000000, 0xfffffff8, 0xffffffff};
	for (unsigned nm = 0; in->n && nm < 8; nm++) {
		unsigned sel = (unsigned)take(in, 1);
		uint64_t pos =
		    base[sel & 3].at + take(in, 2) % base[sel & 3].span;
		unsigned kind = (sel >> 2) % 8;
		uint64_t v = kind == 7 ? 0
				       : take(in, kind == 3   ? 8
						  : kind == 2 ? 4
							      : 1);
		unsigned w = kind == 3 ? 8 : kind == 2 || kind == 4 ? 4 : 1;
		if (kind == 4)
			v = vals[v % (sizeof(vals) / sizeof(vals[0]))];
		if (kind == 5)
			v = (pos < *len ? b[pos] : 0) ^ v;
		if (kind == 6)
			v = (pos + 4 <= *len ? ld(b + pos, 4) : 0) + (int8_t)v;
		if (kind == 6)
			w = 4;
		if (kind == 7) {
			if (pos < *len)
				*len = pos;
			continue;
		}
		for (unsigned i = 0; i < w; i++)
			if (pos + i < *len)
				b[pos + i] = (uint8_t)(v >> (8 * i));
	}
}

/* ----------------------------------------------------------------- checks */

static int validate(const uint8_t *b, size_t len, uint64_t sa, uint64_t ts,
		    uint64_t tz, char *msg, size_t msglen)
{
	if (msg && msglen)
		memset(msg, 0x5a, msglen); /* no stale NUL helps */
	return jsf_validate_sframe(b, len, sa, ts, tz, msg, msglen);
}

static void run(const uint8_t *b, size_t len, uint64_t sa, uint64_t ts,
		uint64_t tz, bool must_pass)
{
	char msg[512], msg2[512], tiny[8];
	int rc = validate(b, len, sa, ts, tz, msg, sizeof(msg));
	if (rc != 0 && rc != -EBADMSG)
		FAIL("rc %d", rc);
	if (!memchr(msg, 0, sizeof(msg)) || !msg[0])
		FAIL("message empty or not terminated (rc %d)", rc);
	const char *why;
	enum verdict want = check(b, len, sa, ts, tz, &why);
	if (want == BAD_ORDER_ONLY && rc == 0 && strict)
		FAIL("accepted a section whose FRE sub-section starts inside "
		     "the FDE sub-section (the kernel rejects it: "
		     "\"inconsistent fde/fre offsets\"); library says: %s",
		     msg);
	if (want == BAD_ORDER_ONLY)
		want = rc == 0 ? OK : BAD; /* either way for the rest */
	if ((want == OK) != (rc == 0))
		FAIL("library %s (%s), independent checker %s (%s)",
		     rc ? "rejects" : "accepts", msg,
		     want == OK ? "accepts" : "rejects", why);
	if (must_pass && rc)
		FAIL("valid constructed section rejected: %s", msg);

	/* deterministic, alignment-independent, any message buffer */
	int rc2 = validate(b, len, sa, ts, tz, msg2, sizeof(msg2));
	if (rc2 != rc || strcmp(msg, msg2))
		FAIL("not deterministic: '%s' / '%s'", msg, msg2);
	uint8_t *copy = malloc(len + 1);
	if (!copy)
		abort();
	if (len)
		memcpy(copy + 1, b, len);
	rc2 = validate(copy + 1, len, sa, ts, tz, msg2, sizeof(msg2));
	if (rc2 != rc || strcmp(msg, msg2))
		FAIL("depends on the buffer address: '%s' / '%s'", msg, msg2);
	free(copy);
	if (validate(b, len, sa, ts, tz, NULL, 0) != rc ||
	    validate(b, len, sa, ts, tz, msg2, 0) != rc)
		FAIL("verdict depends on the message buffer");
	for (size_t l = 1; l <= sizeof(tiny); l++) {
		if (validate(b, len, sa, ts, tz, tiny, l) != rc)
			FAIL("verdict depends on msglen %zu", l);
		if (!memchr(tiny, 0, l) || strncmp(tiny, msg, l - 1))
			FAIL("msglen %zu: message not a truncated prefix", l);
	}
	if (rc == 0 && tz &&
	    validate(b, len, sa, 0, 0, msg2, sizeof(msg2)) != 0)
		FAIL("accepted with a text range but not without: %s", msg2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[MAXLEN];
	struct in in = {data, size};
	unsigned mode = (unsigned)take(&in, 1);
	if (!(mode & 1)) {
		uint64_t sa = take(&in, 8), ts = take(&in, 8), tz = 0;
		if (mode & 2)
			tz = take(&in, 8);
		/* exactly the remaining bytes, in a buffer of their size, so
		 * that ASan sees any read past the end */
		uint8_t *b = malloc(in.n ? in.n : 1);
		if (!b)
			abort();
		memcpy(b, in.p, in.n);
		run(b, in.n, sa, ts, tz, false);
		free(b);
		return 0;
	}
	static struct fn f[MAXF];
	unsigned n = gen(&in, f);
	uint64_t sa = 0x7f0000000000ull + take(&in, 2) * 8;
	if (mode & 2)
		sa = f[0].start + take(&in, 4); /* section after the text */
	size_t len = encode(buf, f, n, sa, &in);
	uint64_t ts = 0, tz = 0;
	bool inside = true;
	if (mode & 4) {
		uint64_t lo = f[0].start, hi = f[n - 1].start + f[n - 1].size;
		ts = lo - take(&in, 1);
		tz = hi - ts + take(&in, 1);
		if (mode & 8) { /* shrink it: may cut a function off */
			unsigned cut = (unsigned)take(&in, 2);
			ts += cut & 0xff;
			tz = tz > (cut >> 8) + (cut & 0xff)
				 ? tz - (cut >> 8) - (cut & 0xff)
				 : 1;
			for (unsigned i = 0; i < n; i++)
				if (f[i].start < ts ||
				    f[i].start + f[i].size > ts + tz)
					inside = false;
		}
	}
	bool mutated = in.n > 0;
	mutate(&in, buf, &len);
	uint8_t *b = malloc(len ? len : 1);
	if (!b)
		abort();
	memcpy(b, buf, len);
	run(b, len, sa, ts, tz, !mutated && inside);
	free(b);
	return 0;
}
