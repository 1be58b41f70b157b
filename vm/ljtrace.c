/* SPDX-License-Identifier: MIT */
/*
 * Raw reads of LuaJIT traces (see ljtrace.h). x86-64 with GC64 only: a
 * GCRef is 8 bytes, lua_State.glref is at offset 16 (GCHeader 10 bytes,
 * two u8, then the 8-byte MRef), and jit_State keeps `GCRef *trace;
 * TraceNo freetrace; MSize sizetrace;` together in every 2.1 version.
 */
#include "ljtrace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GCtrace's gct byte: (uint8_t)~LJ_TTRACE, LJ_TTRACE = ~9u */
#define GCT_TRACE 9u
#define SCAN_BYTES (64u << 10) /* from the global state onwards */

const struct jsf_ljt_layout jsf_ljt_layouts[] = {
    /* 2.1 since 2021 (a32aeadc): SnapShot gained mcofs */
    {"2.1-2021", 10, 12, 32, 40, 48, 56, 84, 88, 96, 104, 106, 116, 120, 12, 4,
     4, 8, 10},
    /* 2.1 2019-2021 (380e4409): u32 mapofs, nsnap moved to offset 10 */
    {"2.1-2019", 10, 12, 32, 40, 48, 56, 84, 88, 96, 104, 106, 116, 120, 12, 4,
     4, 6, 8},
    /* 2.1.0-beta3 and before 2019: u16 nsnap/nsnapmap at 44 */
    {"2.1-beta3", 44, 12, 32, 40, 48, 56, 84, 88, 96, 104, 106, 11, 120, 8, 2,
     2, 4, 6},
    {NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
};

uint32_t jsf_ljt_u16(const uint8_t *p, unsigned off)
{
	uint16_t v;
	memcpy(&v, p + off, 2);
	return v;
}

uint32_t jsf_ljt_u32(const uint8_t *p, unsigned off)
{
	uint32_t v;
	memcpy(&v, p + off, 4);
	return v;
}

uint64_t jsf_ljt_u64(const uint8_t *p, unsigned off)
{
	uint64_t v;
	memcpy(&v, p + off, 8);
	return v;
}

/* ------------------------------------------------- readable memory */

struct range {
	uintptr_t lo, hi;
};
struct maps {
	struct range *r;
	size_t n;
};

static int load_maps(struct maps *m)
{
	m->r = NULL;
	m->n = 0;
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -1;
	size_t cap = 0;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off, ino;
		char perms[8], dev[32];
		if (sscanf(line, "%lx-%lx %7s %lx %31s %lu", &lo, &hi, perms,
			   &off, dev, &ino) != 6)
			continue;
		/* readable anonymous memory only: a file mapping may end
		 * before its last page (SIGBUS) */
		if (perms[0] != 'r' || ino != 0)
			continue;
		if (m->n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct range *nr = realloc(m->r, nc * sizeof(*nr));
			if (!nr)
				break;
			m->r = nr;
			cap = nc;
		}
		m->r[m->n++] = (struct range){lo, hi};
	}
	fclose(f);
	return m->n ? 0 : -1;
}

static int readable(const struct maps *m, uintptr_t p, size_t len)
{
	if (!p || p + len < p)
		return 0;
	/* ranges are sorted and may be adjacent: walk across joins */
	for (size_t i = 0; i < m->n; i++) {
		if (p >= m->r[i].lo && p < m->r[i].hi) {
			uintptr_t end = p + len;
			for (size_t j = i; j < m->n; j++) {
				if (end <= m->r[j].hi)
					return 1;
				if (j + 1 < m->n &&
				    m->r[j + 1].lo != m->r[j].hi)
					return 0;
			}
			return 0;
		}
	}
	return 0;
}

/* ------------------------------------------------------- discovery */

static size_t g_trace_off; /* of `GCRef *trace` from the global state */
static int g_found;

int jsf_ljt_matches(const uint8_t *T, const struct jsf_ljt_layout *lay,
		    const struct jsf_ljt_known *k)
{
	return T[9] == GCT_TRACE && jsf_ljt_u16(T, lay->traceno) == k->tr &&
	       jsf_ljt_u64(T, lay->mcode) == (uint64_t)k->mcode &&
	       jsf_ljt_u32(T, lay->szmcode) == k->szmcode &&
	       jsf_ljt_u32(T, lay->mcloop) == k->mcloop &&
	       jsf_ljt_u32(T, lay->nins) == k->nins + JSF_LJT_REF_BIAS + 1 &&
	       jsf_ljt_u32(T, lay->nk) == JSF_LJT_REF_BIAS - k->nk &&
	       jsf_ljt_u16(T, lay->nsnap) == k->nexit &&
	       jsf_ljt_u16(T, lay->link) == k->link;
}

static const uint8_t *G_of(const void *L)
{
	return (const uint8_t *)(uintptr_t)jsf_ljt_u64(L, 16);
}

int jsf_ljt_discover(const void *L, const struct jsf_ljt_known *k,
		     unsigned *layouts, char *why, size_t whylen)
{
	struct maps m;
	int ret = -1;
	*layouts = 0;
	if (load_maps(&m)) {
		snprintf(why, whylen, "cannot read /proc/self/maps");
		return -1;
	}
	if (!k->tr || !k->mcode || !readable(&m, (uintptr_t)L, 24)) {
		snprintf(why, whylen, "no trace or no lua_State to start from");
		goto out;
	}
	const uint8_t *G = G_of(L);
	if (!readable(&m, (uintptr_t)G, 8)) {
		snprintf(why, whylen, "global state not readable");
		goto out;
	}
	size_t hits = 0, at = 0;
	unsigned mask = 0;
	for (size_t off = 0; off + 16 <= SCAN_BYTES; off += 8) {
		if (!readable(&m, (uintptr_t)G + off, 16))
			break;
		uint64_t arr = jsf_ljt_u64(G, (unsigned)off);
		uint32_t size = jsf_ljt_u32(G, (unsigned)off + 12);
		if (!arr || (arr & 7) || size <= k->tr ||
		    !readable(&m, arr + 8 * (uint64_t)k->tr, 8))
			continue;
		uint64_t t =
		    jsf_ljt_u64((const uint8_t *)(uintptr_t)arr, 8 * k->tr);
		if (!t || (t & 7) || !readable(&m, t, 128))
			continue;
		unsigned mk = 0;
		for (unsigned i = 0; jsf_ljt_layouts[i].name; i++)
			if (jsf_ljt_matches((const uint8_t *)(uintptr_t)t,
					    &jsf_ljt_layouts[i], k))
				mk |= 1u << i;
		if (mk) {
			hits++;
			at = off;
			mask = mk;
		}
	}
	if (hits != 1) {
		snprintf(why, whylen,
			 hits ? "trace array ambiguous (%zu candidates)"
			      : "trace array not found (unknown VM layout)",
			 hits);
		goto out;
	}
	g_trace_off = at;
	g_found = 1;
	*layouts = mask;
	ret = 0;
out:
	free(m.r);
	return ret;
}

const uint8_t *jsf_ljt_trace(const void *L, uint32_t tr,
			     const struct jsf_ljt_layout *lay)
{
	if (!g_found || !tr)
		return NULL;
	const uint8_t *G = G_of(L);
	if (!G)
		return NULL;
	uint64_t arr = jsf_ljt_u64(G, (unsigned)g_trace_off);
	if (!arr || tr >= jsf_ljt_u32(G, (unsigned)g_trace_off + 12))
		return NULL;
	const uint8_t *T = (const uint8_t *)(uintptr_t)jsf_ljt_u64(
	    (const uint8_t *)arr, 8 * tr);
	if (!T || T[9] != GCT_TRACE || jsf_ljt_u16(T, lay->traceno) != tr)
		return NULL;
	return T;
}
