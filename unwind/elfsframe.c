/* SPDX-License-Identifier: MIT */
/*
 * Rows from an ELF object's .sframe section (SFrame V1, binutils 2.40's
 * `as --gsframe`, and V2), for the unwinder: the row covering an ELF vaddr
 * in the same form as the region's and elfcfi.c's. Everything is
 * bounds-checked against the section; a damaged section answers "not
 * covered" and the caller falls back to .eh_frame.
 *
 * Layout (binutils include/sframe.h): a 28-byte header {u16 magic 0xdee2,
 * u8 version, u8 flags, u8 abi, i8 cfa_fixed_fp, i8 cfa_fixed_ra, u8
 * auxhdr_len, u32 num_fdes, num_fres, fre_len, fdeoff, freoff}, then
 * auxhdr_len bytes, then FDEs at fdeoff and FREs at freoff (both relative
 * to the end of the auxiliary header). FDE V1: {i32 start, u32 size, u32
 * fre_off, u32 num_fres, u8 info} (17 bytes); V2 adds {u8 rep_size, u16
 * pad} (20 bytes). start is relative to the section's start, or with flag
 * FDE_FUNC_START_PCREL (0x4) to the FDE's own field. info: bits 0-3 the FRE
 * start-address width (1, 2, 4 bytes), bit 4 PC mask type (PLT entries:
 * FRE starts are matched against pc modulo rep_size; V1: 16). FRE: start,
 * info (bit 0 CFA base 1 = SP, 0 = FP; bits 1-4 offset count; bits 5-6
 * offset size 1/2/4), then CFA offset and, on AMD64 (RA at a fixed
 * CFA-8), the FP offset.
 */
#include "elfobj.h"

#include <string.h>

static int64_t rds(const unsigned char *p, unsigned sz)
{
	switch (sz) {
	case 1:
		return (int8_t)p[0];
	case 2: {
		int16_t v;
		memcpy(&v, p, 2);
		return v;
	}
	default: {
		int32_t v;
		memcpy(&v, p, 4);
		return v;
	}
	}
}

static uint64_t rdu(const unsigned char *p, unsigned sz)
{
	uint64_t v = 0;
	memcpy(&v, p, sz);
	return v;
}

int sframe_row(const unsigned char *s, size_t len, uint64_t sec_vaddr,
	       uint64_t vaddr, struct crow *r)
{
	if (len < 28 || rdu(s, 2) != 0xdee2 || (s[2] != 1 && s[2] != 2) ||
	    s[4] != 3 /* AMD64 */)
		return -1;
	unsigned ver = s[2], flags = s[3];
	int ra_fixed = (int8_t)s[6];
	uint64_t aux = s[7], nfde = rdu(s + 8, 4), fre_len = rdu(s + 16, 4),
		 fdeoff = rdu(s + 20, 4), freoff = rdu(s + 24, 4);
	uint64_t base = 28 + aux, fsz = ver == 1 ? 17 : 20;
	if (base > len || fdeoff > len - base ||
	    nfde > (len - base - fdeoff) / fsz || freoff > len - base ||
	    fre_len > len - base - freoff)
		return -1;
	const unsigned char *fdes = s + base + fdeoff,
			    *fres = s + base + freoff;
	/* the FDE covering vaddr: binary search when sorted, else a scan */
	const unsigned char *hit = NULL;
	uint64_t fstart = 0;
	uint64_t lo = 0, hi = nfde;
	int sorted = flags & 1;
	while (sorted ? lo < hi : lo < nfde) {
		uint64_t m = sorted ? (lo + hi) / 2 : lo;
		const unsigned char *f = fdes + m * fsz;
		uint64_t st =
		    (uint64_t)rds(f, 4) +
		    (flags & 4 ? sec_vaddr + (uint64_t)(f - s) : sec_vaddr);
		uint64_t sz = rdu(f + 4, 4);
		if (vaddr >= st && vaddr - st < sz) {
			hit = f;
			fstart = st;
			break;
		}
		if (!sorted)
			lo++;
		else if (vaddr < st)
			hi = m;
		else
			lo = m + 1;
	}
	if (!hit)
		return 0;
	uint64_t fsize = rdu(hit + 4, 4), fre_off = rdu(hit + 8, 4),
		 nfre = rdu(hit + 12, 4);
	unsigned info = hit[16], asz = 1u << (info & 0xf);
	int pcmask = (info >> 4) & 1;
	uint64_t rep = ver == 2 ? hit[17] : 16;
	if ((info & 0xf) > 2 || fre_off > fre_len || (pcmask && !rep))
		return -1;
	uint64_t off = vaddr - fstart, key = pcmask ? off % rep : off;
	const unsigned char *p = fres + fre_off, *end = fres + fre_len;
	const unsigned char *best = NULL;
	uint64_t best_start = 0, next_start = pcmask ? rep : fsize;
	for (uint64_t i = 0; i < nfre; i++) {
		if ((uint64_t)(end - p) < asz + 1)
			return -1;
		uint64_t st = rdu(p, asz);
		unsigned fi = p[asz], n = (fi >> 1) & 0xf,
			 osz = 1u << ((fi >> 5) & 3);
		if (((fi >> 5) & 3) > 2 ||
		    (uint64_t)(end - p) < asz + 1 + n * osz)
			return -1;
		if (st <= key) {
			best = p;
			best_start = st;
		} else {
			next_start = st;
			break;
		}
		p += asz + 1 + n * osz;
	}
	if (!best)
		return 0;
	unsigned fi = best[asz], n = (fi >> 1) & 0xf,
		 osz = 1u << ((fi >> 5) & 3);
	const unsigned char *o = best + asz + 1;
	memset(r, 0, sizeof(*r));
	r->lo = vaddr;
	/* a masked row repeats: keep it to this address */
	r->hi = pcmask ? vaddr + 1
		       : fstart + (next_start < fsize ? next_start : fsize);
	if (r->hi <= vaddr)
		r->hi = vaddr + 1;
	(void)best_start;
	if (n == 0) {
		r->kind = CROW_OUTERMOST;
		return 1;
	}
	if (n > 2 || (fi >> 7)) { /* RA offset stored, or mangled RA */
		r->kind = CROW_UNSUP;
		r->why = "SFrame row outside the AMD64 form";
		return 1;
	}
	r->kind = CROW_OK;
	r->cfa_reg = (fi & 1) ? 7 : 6;
	r->cfa_off = (int32_t)rds(o, osz);
	r->ra_off = ra_fixed;
	if (n == 2) {
		r->rbp_saved = 1;
		r->rbp_off = (int32_t)rds(o + osz, osz);
	}
	return 1;
}
