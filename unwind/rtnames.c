/* SPDX-License-Identifier: MIT */
/*
 * rtnames.c: names for native code that a stripped binary leaves unnamed,
 * from a region's runtime area (docs/ABI.md 1.6): the LuaJIT module's
 * "LJVM" record gives the interpreter's code [vm_start, vm_end), its
 * "LJFF" records LuaJIT's builtins written in C (string.gsub at its C
 * address), its "LJCF" records the C functions of Lua modules (cjson.encode
 * at its C address), in the header page's area and in the runtime
 * extension after the page (1.7). The area is the producer's (a file anyone may
 * have written): every length is checked, names are kept only when made of
 * printable ASCII without ';' (the folded format's separator), and an address
 * given two different names is named by neither.
 */
#include "unwind.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* n bytes (2, 4, 8) at p, little-endian (the producer's, x86-64) */
static uint64_t ld(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

static int name_ok(const uint8_t *s, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || s[i] == ';')
			return 0;
	return 1;
}

static int by_addr(const void *a, const void *b)
{
	const struct uw_rtname *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

void uw_runtime_free(struct uw_runtime *rt)
{
	free(rt->n);
	free(rt->blob);
	memset(rt, 0, sizeof(*rt));
}

/* One area's records (a, alen bytes): LJVM's code range (on the first
 * pass), the LJFF and LJCF names, counted (pass 0: *cnt, *bytes) or kept
 * (pass 1). */
static void area(const uint8_t *a, uint32_t alen, int pass,
		 struct uw_runtime *rt, size_t *cnt, size_t *bytes)
{
	uint32_t o = 0;
	while (alen - o >= 8) {
		uint16_t ver = (uint16_t)ld(a + o + 4, 2),
			 sz = (uint16_t)ld(a + o + 6, 2);
		if (sz < 8 || sz > alen - o)
			break; /* (a damaged record ends the area) */
		const uint8_t *r = a + o;
		o += sz;
		if (!pass && !memcmp(r, "LJVM", 4) && ver == 1 && sz >= 32 &&
		    ld(r + 16, 8) < ld(r + 24, 8)) {
			rt->vm_start = ld(r + 16, 8);
			rt->vm_end = ld(r + 24, 8);
		}
		int cf = !memcmp(r, "LJCF", 4);
		if ((!cf && memcmp(r, "LJFF", 4)) || ver != 1 || sz < 20)
			continue;
		uint64_t base = ld(r + 8, 8);
		unsigned k = (uint16_t)ld(r + 16, 2);
		uint32_t p = 20;
		for (unsigned i = 0; i < k; i++) {
			if (sz - p < 5 || sz - p - 5 < r[p + 4])
				break;
			int32_t d = (int32_t)(uint32_t)ld(r + p, 4);
			uint8_t nl = r[p + 4];
			const uint8_t *nm = r + p + 5;
			p += 5 + nl;
			if (!name_ok(nm, nl))
				continue;
			if (pass) {
				char *s = rt->blob + *bytes;
				memcpy(s, nm, nl);
				s[nl] = 0;
				rt->n[rt->nn++] = (struct uw_rtname){
				    base + (uint64_t)(int64_t)d, s,
				    cf ? UW_RT_CFUNC : UW_RT_BUILTIN};
			} else {
				(*cnt)++;
			}
			*bytes += nl + 1u;
		}
	}
}

int uw_runtime_parse(const uint8_t *hdr, size_t len, struct uw_runtime *rt)
{
	memset(rt, 0, sizeof(*rt));
	if (len < 1024)
		return 0;
	uint32_t feat = (uint32_t)ld(hdr + 96, 4);
	uint32_t alen = (feat & 1) ? (uint32_t)ld(hdr + 100, 4) : 0;
	if (alen > 3072 || alen > len - 1024)
		return -1;
	/* the runtime extension (docs/ABI.md 1.7), where len reaches it */
	uint32_t xlen =
	    (feat & 2) && len >= 4096 ? (uint32_t)ld(hdr + 108, 4) : 0;
	if (xlen > ld(hdr + 104, 4) || xlen > len - 4096)
		return -1;
	size_t cnt = 0, bytes = 0;
	for (int pass = 0; pass < 2; pass++) {
		area(hdr + 1024, alen, pass, rt, &cnt, &bytes);
		if (xlen)
			area(hdr + 4096, xlen, pass, rt, &cnt, &bytes);
		if (pass || !cnt)
			break;
		rt->n = malloc(cnt * sizeof(*rt->n));
		rt->blob = malloc(bytes);
		if (!rt->n || !rt->blob) {
			uw_runtime_free(rt);
			return -1;
		}
		bytes = 0;
	}
	if (!rt->nn)
		return 0;
	qsort(rt->n, rt->nn, sizeof(*rt->n), by_addr);
	/* an address named twice the same: once; named two ways: not at all */
	size_t w = 0;
	for (size_t i = 0; i < rt->nn;) {
		size_t j = i + 1, differ = 0;
		for (; j < rt->nn && rt->n[j].addr == rt->n[i].addr; j++)
			differ |= strcmp(rt->n[j].name, rt->n[i].name) != 0;
		if (!differ)
			rt->n[w++] = rt->n[i];
		i = j;
	}
	rt->nn = w;
	return 0;
}

const char *uw_runtime_name(const struct uw_runtime *rt, uint64_t start)
{
	if (rt->vm_start && start == rt->vm_start)
		return UW_INTERP_NAME;
	size_t lo = 0, hi = rt->nn;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (rt->n[m].addr < start)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < rt->nn && rt->n[lo].addr == start ? rt->n[lo].name : NULL;
}

int uw_runtime_read(const char *path, struct uw_runtime *rt)
{
	uint8_t h[4096], *buf = h;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : pread(fd, h, sizeof(h), 0);
	size_t len = n == (ssize_t)sizeof(h) ? sizeof(h) : 0;
	/* the runtime extension after the page (docs/ABI.md 1.7): the bytes
	 * in use, read whole or not at all (at most 1 MiB) */
	uint32_t xl = len && (ld(h + 96, 4) & 2) ? (uint32_t)ld(h + 108, 4) : 0;
	if (xl && xl <= (1u << 20) && (buf = malloc(4096 + (size_t)xl))) {
		memcpy(buf, h, 4096);
		if (pread(fd, buf + 4096, xl, 4096) == (ssize_t)xl)
			len += xl;
		else
			buf[96] &= (uint8_t)~2; /* (the header's area alone) */
	} else if (xl) {
		buf = h;
		h[96] &= (uint8_t)~2;
	}
	if (fd >= 0)
		close(fd);
	int rc = -1;
	if (len)
		rc = uw_runtime_parse(buf, len, rt);
	else
		memset(rt, 0, sizeof(*rt));
	if (buf != h)
		free(buf);
	return rc;
}
