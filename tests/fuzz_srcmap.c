/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the source-map decoder (sframe/srcmap.c,
 * jsf_srcmap_frames): a map is bytes a region file holds beside a
 * function's name (docs/ABI.md 1.5), and a region file is a file anyone
 * could have written; report, profile and the sampler's user side decode
 * them.
 *
 * Input modes (first byte):
 *  'M': the rest is a map, as is;
 *  anything else: a recipe (the rest): a valid map built here from the
 *       input (ranges, frames, stack, strings), then up to four byte
 *       mutations taken from the input's tail, so that most inputs are
 *       maps close to valid.
 *
 * Oracles, besides "no crash, no sanitizer report":
 *  - a second decoder written here from docs/ABI.md 1.5 validates the
 *    whole map (version 1, every count within the length, ranges from 0
 *    strictly increasing, each range's frames within the stack, every
 *    stack entry a frame, every frame's strings NUL-terminated strings of
 *    the string area). For a map it accepts, jsf_srcmap_frames gives at
 *    every offset asked (each range's start, the byte before it, the last
 *    offsets) the range's frames, innermost first, field by field, and
 *    its flags;
 *  - for any map, what the library returns is a count of frames whose
 *    strings lie in the map's string area, or -EINVAL; with max 0 (out
 *    NULL) the count is the same as with room for every frame.
 */
#include "jitsframe.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rd16(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8;
}
static uint32_t rd32(const uint8_t *p)
{
	return rd16(p) | rd16(p + 2) << 16;
}
static void wr16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static void wr32(uint8_t *p, uint32_t v)
{
	wr16(p, v & 0xffff);
	wr16(p + 2, v >> 16);
}

/* The parts of a map the second decoder found. */
struct map {
	uint32_t flags, nr, nf, ns, nstr;
	const uint8_t *rg, *fr, *st, *str;
};

static int is_str(const struct map *m, uint32_t o)
{
	return o < m->nstr && memchr(m->str + o, 0, m->nstr - o) != NULL;
}

/* 1: the whole map is valid (docs/ABI.md 1.5); 0: it is not. */
static int second(const uint8_t *p, size_t len, struct map *m)
{
	if (len < 16 || rd16(p) != 1)
		return 0;
	m->flags = rd16(p + 2);
	m->nr = rd16(p + 4);
	m->nf = rd16(p + 6);
	m->ns = rd32(p + 8);
	m->nstr = rd32(p + 12);
	uint64_t need =
	    16 + 8ull * m->nr + 20ull * m->nf + 2ull * m->ns + m->nstr;
	if (m->nr == 0 || need > len)
		return 0;
	m->rg = p + 16;
	m->fr = m->rg + 8 * (size_t)m->nr;
	m->st = m->fr + 20 * (size_t)m->nf;
	m->str = m->st + 2 * (size_t)m->ns;
	for (uint32_t i = 0; i < m->nr; i++) {
		const uint8_t *r = m->rg + 8 * (size_t)i;
		if (i == 0 ? rd32(r) != 0 : rd32(r) <= rd32(r - 8))
			return 0;
		if ((uint64_t)rd16(r + 4) + r[6] > m->ns)
			return 0;
	}
	for (uint32_t i = 0; i < m->ns; i++)
		if (rd16(m->st + 2 * (size_t)i) >= m->nf)
			return 0;
	for (uint32_t i = 0; i < m->nf; i++) {
		const uint8_t *f = m->fr + 20 * (size_t)i;
		if (!is_str(m, rd32(f)) ||
		    (rd32(f + 4) != UINT32_MAX && !is_str(m, rd32(f + 4))))
			return 0;
	}
	return 1;
}

/* The range covering off: the last one starting at or below it. */
static const uint8_t *range_of(const struct map *m, uint32_t off)
{
	const uint8_t *r = m->rg;
	for (uint32_t i = 1; i < m->nr && rd32(m->rg + 8 * (size_t)i) <= off;
	     i++)
		r = m->rg + 8 * (size_t)i;
	return r;
}

static void fail(const char *what, uint32_t off, int got, int want)
{
	fprintf(stderr, "oracle: %s at offset %u: got %d, want %d\n", what, off,
		got, want);
	abort();
}

static void ask(const uint8_t *p, size_t len, int valid, const struct map *m,
		uint32_t off)
{
	struct jsf_srcframe out[256];
	uint32_t flags = 0xdead, flags0 = 0xdead;
	int n = jsf_srcmap_frames(p, len, off, out, 256, &flags);
	int n0 = jsf_srcmap_frames(p, len, off, NULL, 0, &flags0);
	if (n != -EINVAL && n < 0)
		fail("an error other than -EINVAL", off, n, -EINVAL);
	if (n0 >= 0 && n >= 0 && n0 != n)
		fail("max 0 and max 256 disagree", off, n0, n);
	if (n >= 0 && n0 >= 0 && flags != flags0)
		fail("flags with max 0 and max 256 disagree", off, (int)flags0,
		     (int)flags);
	const uint8_t *end = p + len;
	for (int k = 0; k < n && k < 256; k++) {
		const uint8_t *f = (const uint8_t *)out[k].file,
			      *nm = (const uint8_t *)out[k].name;
		if (!f || f < p || f >= end || (nm && (nm < p || nm >= end)))
			fail("a string outside the map", off, k, -1);
	}
	if (!valid)
		return;
	const uint8_t *r = range_of(m, off);
	uint32_t first = rd16(r + 4), depth = r[6];
	uint32_t want_flags = (r[7] & (JSF_SRCMAP_EXACT | JSF_SRCMAP_LOOP)) |
			      (m->flags & 1 ? JSF_SRCMAP_LOOPS : 0);
	if (n != (int)depth)
		fail("frames of a valid map", off, n, (int)depth);
	if (flags != want_flags)
		fail("flags of a valid map", off, (int)flags, (int)want_flags);
	for (uint32_t k = 0; k < depth; k++) {
		/* innermost first: the stack's last entry of the range */
		uint32_t fi = rd16(m->st + 2 * (size_t)(first + depth - 1 - k));
		const uint8_t *fr = m->fr + 20 * (size_t)fi;
		uint32_t no = rd32(fr + 4);
		const char *file = (const char *)m->str + rd32(fr);
		const char *name =
		    no == UINT32_MAX ? NULL : (const char *)m->str + no;
		if (out[k].file != file || out[k].name != name ||
		    out[k].line != rd32(fr + 8) ||
		    out[k].first != rd32(fr + 12) || out[k].pc != rd32(fr + 16))
			fail("a frame of a valid map", off, (int)k, (int)fi);
	}
}

/* A valid map from a recipe, then a few mutations. */
static uint8_t *from_recipe(const uint8_t *d, size_t n, size_t *olen)
{
	uint32_t nr = n > 0 ? 1 + d[0] % 12 : 1, nf = n > 1 ? d[1] % 10 : 0;
	uint32_t ns = 0, nstr = 0;
	char strs[256];
	/* strings: "", then "fK.lua" for K < 4, "gK" for K < 3 */
	uint32_t soff[8];
	int nsoff = 0;
	strs[nstr++] = 0;
	soff[nsoff++] = 0;
	for (int k = 0; k < 4; k++) {
		soff[nsoff++] = nstr;
		nstr += (uint32_t)snprintf(strs + nstr, 16, "f%d.lua", k) + 1;
	}
	for (int k = 0; k < 3; k++) {
		soff[nsoff++] = nstr;
		nstr += (uint32_t)snprintf(strs + nstr, 16, "g%d", k) + 1;
	}
	uint8_t stack[64 * 2];
	uint8_t ranges[12 * 8];
	uint32_t lo = 0;
	for (uint32_t i = 0; i < nr; i++) {
		uint8_t q = n > 2 + i ? d[2 + i] : 0;
		uint32_t depth = nf ? q % 5 : 0;
		if (ns + depth > 64)
			depth = 0;
		wr32(ranges + 8 * i, lo);
		wr16(ranges + 8 * i + 4, ns);
		ranges[8 * i + 6] = (uint8_t)depth;
		ranges[8 * i + 7] = q >> 6;
		for (uint32_t k = 0; k < depth; k++, ns++)
			wr16(stack + 2 * ns, (uint32_t)(q + k * 7) % nf);
		lo += 1 + (q & 0x3f) * 3;
	}
	size_t len =
	    16 + 8 * (size_t)nr + 20 * (size_t)nf + 2 * (size_t)ns + nstr;
	uint8_t *m = calloc(1, len);
	if (!m)
		abort();
	wr16(m, 1);
	wr16(m + 2, n > 14 ? d[14] & 1 : 0);
	wr16(m + 4, nr);
	wr16(m + 6, nf);
	wr32(m + 8, ns);
	wr32(m + 12, nstr);
	memcpy(m + 16, ranges, 8 * (size_t)nr);
	uint8_t *fr = m + 16 + 8 * (size_t)nr;
	for (uint32_t i = 0; i < nf; i++) {
		uint8_t q = n > 15 + i ? d[15 + i] : (uint8_t)i;
		wr32(fr + 20 * i, soff[1 + q % 4]);
		wr32(fr + 20 * i + 4, q & 0x80 ? UINT32_MAX : soff[5 + q % 3]);
		wr32(fr + 20 * i + 8, q);
		wr32(fr + 20 * i + 12, q / 2);
		wr32(fr + 20 * i + 16, i);
	}
	memcpy(fr + 20 * (size_t)nf, stack, 2 * (size_t)ns);
	memcpy(fr + 20 * (size_t)nf + 2 * (size_t)ns, strs, nstr);
	/* mutations: (position, value) pairs from the input's tail */
	for (size_t t = 25; t + 2 <= n && t < 33; t += 2)
		m[d[t] % len] = d[t + 1];
	*olen = len;
	return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	if (n == 0 || n > (64u << 10))
		return 0;
	uint8_t *made = NULL;
	size_t len;
	const uint8_t *p;
	if (d[0] == 'M') {
		/* a copy of exactly the map's bytes: ASan sees an overrun */
		len = n - 1;
		made = malloc(len ? len : 1);
		if (!made)
			abort();
		memcpy(made, d + 1, len);
	} else {
		made = from_recipe(d + 1, n - 1, &len);
	}
	p = made;
	struct map m;
	int valid = second(p, len, &m);
	uint32_t offs[3] = {0, UINT32_MAX, UINT32_MAX - 1};
	for (int i = 0; i < 3; i++)
		ask(p, len, valid, &m, offs[i]);
	if (valid) {
		for (uint32_t i = 0; i < m.nr; i++) {
			uint32_t lo = rd32(m.rg + 8 * (size_t)i);
			ask(p, len, 1, &m, lo);
			if (lo)
				ask(p, len, 1, &m, lo - 1);
			ask(p, len, 1, &m, lo + 1);
		}
	} else if (len >= 16 && rd16(p + 4)) {
		/* each range start the map claims, as far as it has them */
		for (uint32_t i = 0;
		     i < rd16(p + 4) && 16 + 8 * (size_t)i + 4 <= len; i++)
			ask(p, len, 0, &m, rd32(p + 16 + 8 * (size_t)i));
	}
	free(made);
	return 0;
}
