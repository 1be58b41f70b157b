/* SPDX-License-Identifier: MIT */
/*
 * Source maps (docs/ABI.md 1.5): the decoder. A map is the producer's
 * bytes, stored beside a function's name; nothing in it is trusted: every
 * count and offset is checked against the map's length before use.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>

#define HDR 16
#define RANGE 8
#define FRAME 20

static uint32_t u16at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}
static uint32_t u32at(const uint8_t *p)
{
	return u16at(p) | u16at(p + 2) << 16;
}

/* The string at o of a string area of n bytes, NULL if not one. */
static const char *str_at(const uint8_t *s, uint32_t n, uint32_t o)
{
	if (o >= n || !memchr(s + o, 0, n - o))
		return NULL;
	return (const char *)s + o;
}

int jsf_srcmap_frames(const void *map, size_t len, uint32_t off,
		      struct jsf_srcframe *out, uint32_t max, uint32_t *flags)
{
	const uint8_t *p = map;
	if (flags)
		*flags = 0;
	if (!p || len < HDR || u16at(p) != 1 || (max && !out))
		return -EINVAL;
	uint32_t nr = u16at(p + 4), nf = u16at(p + 6), ns = u32at(p + 8),
		 nstr = u32at(p + 12);
	uint64_t need = HDR + (uint64_t)RANGE * nr + (uint64_t)FRAME * nf +
			2 * (uint64_t)ns + nstr;
	if (!nr || need > len)
		return -EINVAL;
	const uint8_t *rg = p + HDR, *fr = rg + (size_t)RANGE * nr,
		      *st = fr + (size_t)FRAME * nf, *str = st + 2 * (size_t)ns;
	if (u32at(rg) != 0)
		return -EINVAL;
	/* the last range starting at or below off (starts increase) */
	uint32_t lo = 0, hi = nr;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (u32at(rg + (size_t)RANGE * mid) <= off)
			lo = mid;
		else
			hi = mid;
	}
	const uint8_t *r = rg + (size_t)RANGE * lo;
	if (lo + 1 < nr && u32at(r + RANGE) <= u32at(r))
		return -EINVAL;
	uint32_t first = u16at(r + 4), depth = r[6];
	if ((uint64_t)first + depth > ns)
		return -EINVAL;
	if (flags)
		*flags = (r[7] & (JSF_SRCMAP_EXACT | JSF_SRCMAP_LOOP)) |
			 (u16at(p + 2) & 1 ? JSF_SRCMAP_LOOPS : 0);
	for (uint32_t k = 0; k < depth && k < max; k++) {
		/* stored outermost first; given innermost first */
		uint32_t fi = u16at(st + 2 * (size_t)(first + depth - 1 - k));
		if (fi >= nf)
			return -EINVAL;
		const uint8_t *f = fr + (size_t)FRAME * fi;
		uint32_t no = u32at(f + 4);
		out[k].file = str_at(str, nstr, u32at(f));
		out[k].name = no == UINT32_MAX ? NULL : str_at(str, nstr, no);
		if (!out[k].file || (no != UINT32_MAX && !out[k].name))
			return -EINVAL;
		out[k].line = u32at(f + 8);
		out[k].first = u32at(f + 12);
		out[k].pc = u32at(f + 16);
	}
	return (int)depth;
}
