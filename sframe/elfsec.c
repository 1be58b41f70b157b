/* SPDX-License-Identifier: MIT */
/*
 * jsf_sframe_find: the row of an ELF object's .sframe section (SFrame V1,
 * binutils 2.40's `as --gsframe`, and V2) at an address, decoded with the
 * region's FRE decoder (sfenc.c) into a struct jsf_row. Everything is
 * bounds-checked against the section: hostile input answers -EBADMSG.
 *
 * Layout (binutils include/sframe.h): a 28-byte header {u16 magic 0xdee2,
 * u8 version, u8 flags, u8 abi, i8 cfa_fixed_fp, i8 cfa_fixed_ra, u8
 * auxhdr_len, u32 num_fdes, num_fres, fre_len, fdeoff, freoff}, then
 * auxhdr_len bytes, then FDEs at fdeoff and FREs at freoff (both relative
 * to the end of the auxiliary header). FDE V1: {i32 start, u32 size, u32
 * fre_off, u32 num_fres, u8 info} (17 bytes); V2 adds {u8 rep_size, u16
 * pad} (20 bytes). start is relative to the section's start, or with flag
 * FDE_FUNC_START_PCREL to the FDE's own field. info: bits 0-3 the FRE
 * start-address width (1, 2, 4 bytes), bit 4 PC mask type (PLT entries: FRE
 * starts are matched against the offset modulo rep_size; V1: 16). An FRE
 * (start, info, offsets) has V3's form: sfenc.c decodes it.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>

#define SFRAME_V2 2
#define SFRAME_ABI_AMD64_LE 3
#define SFRAME_V2_FDE_SIZE 20
#define SFRAME_V1_PLT_REP 16

int jsf_sframe_find(const void *sec, size_t len, uint64_t sec_addr, uint64_t pc,
		    uint64_t *func_start, uint32_t *func_size,
		    uint32_t *row_end, struct jsf_row *row)
{
	const uint8_t *s = sec;
	if (!s || len < SFRAME_HDR_SIZE || ldu(s, 2) != SFRAME_MAGIC ||
	    (s[2] != SFRAME_V1 && s[2] != SFRAME_V2))
		return sf_fail(-EBADMSG, ".sframe: not an SFrame V1/V2 "
					 "section");
	if (s[4] != SFRAME_ABI_AMD64_LE)
		return sf_fail(-EBADMSG, ".sframe: ABI %u is not x86-64", s[4]);
	if ((int8_t)s[6] != SFRAME_RA_FIXED_X86_64)
		return sf_fail(-EOPNOTSUPP,
			       ".sframe: RA not at the fixed CFA-8");
	unsigned ver = s[2], flags = s[3];
	uint64_t aux = s[7], nfde = ldu(s + SH_NUM_FDES, 4),
		 fre_len = ldu(s + SH_FRE_LEN, 4),
		 fdeoff = ldu(s + SH_FDEOFF, 4), freoff = ldu(s + SH_FREOFF, 4);
	uint64_t base = SFRAME_HDR_SIZE + aux, fsz = ver == SFRAME_V1
							 ? SFRAME_V1_FDE_SIZE
							 : SFRAME_V2_FDE_SIZE;
	if (base > len || fdeoff > len - base ||
	    nfde > (len - base - fdeoff) / fsz || freoff > len - base ||
	    fre_len > len - base - freoff)
		return sf_fail(-EBADMSG, ".sframe: tables outside the "
					 "section");
	const uint8_t *fdes = s + base + fdeoff, *fres = s + base + freoff;
	/* the FDE covering pc: binary search when sorted, else a scan */
	const uint8_t *hit = NULL;
	uint64_t fstart = 0, lo = 0, hi = nfde;
	bool sorted = flags & SFRAME_F_FDE_SORTED;
	while (sorted ? lo < hi : lo < nfde) {
		uint64_t m = sorted ? (lo + hi) / 2 : lo;
		const uint8_t *f = fdes + m * fsz;
		uint64_t st = (uint64_t)(int64_t)lds(f, 4) +
			      (flags & SFRAME_F_FDE_FUNC_START_PCREL
				   ? sec_addr + (uint64_t)(f - s)
				   : sec_addr);
		uint64_t sz = ldu(f + 4, 4);
		if (pc >= st && pc - st < sz) {
			hit = f;
			fstart = st;
			break;
		}
		if (!sorted)
			lo++;
		else if (pc < st)
			hi = m;
		else
			lo = m + 1;
	}
	if (!hit)
		return -ENOENT;
	uint32_t fsize = ldu(hit + 4, 4), fre_off = ldu(hit + 8, 4),
		 nfre = ldu(hit + 12, 4);
	unsigned info = hit[16], fre_type = info & 0xf;
	bool pcmask = (info >> 4) & 1;
	uint32_t rep = ver == SFRAME_V2 ? hit[17] : SFRAME_V1_PLT_REP;
	if (fre_type > 2 || fre_off > fre_len || (pcmask && !rep))
		return sf_fail(-EBADMSG, ".sframe: bad FDE at %#llx",
			       (unsigned long long)fstart);
	unsigned aw = 1u << fre_type;
	uint64_t off = pc - fstart, key = pcmask ? off % rep : off;
	const uint8_t *p = fres + fre_off, *end = fres + fre_len;
	const uint8_t *best = NULL;
	uint64_t next = pcmask ? rep : fsize;
	for (uint32_t i = 0; i < nfre; i++) {
		if ((uint64_t)(end - p) < aw + 1)
			return sf_fail(-EBADMSG, ".sframe: FRE outside the "
						 "section");
		uint64_t st = ldu(p, aw);
		unsigned fi = p[aw], n = (fi >> 1) & 0xf, sc = (fi >> 5) & 3;
		if (sc > 2 || (uint64_t)(end - p) < aw + 1 + (n << sc))
			return sf_fail(-EBADMSG, ".sframe: FRE outside the "
						 "section");
		if (st > key) {
			next = st;
			break;
		}
		best = p;
		p += aw + 1 + (n << sc);
	}
	if (!best)
		return -ENOENT; /* the first row starts after pc */
	struct jsf_row r;
	unsigned fi = best[aw];
	if (((fi >> 1) & 0xf) > 2 || (fi & 0x80))
		return sf_fail(-EOPNOTSUPP,
			       ".sframe: row at %#llx outside the x86-64 "
			       "form (RA offset stored, or mangled RA)",
			       (unsigned long long)pc);
	if (!sf_decode_fre(best, (size_t)(end - best), fre_type, &r))
		return sf_fail(-EBADMSG, ".sframe: bad FRE");
	if (func_start)
		*func_start = fstart;
	if (func_size)
		*func_size = fsize;
	if (row_end) {
		/* a masked row repeats every rep bytes: it ends within the
		 * block that holds pc */
		uint64_t e = pcmask ? off - key + next : next;
		*row_end = (uint32_t)(e < fsize ? e : fsize);
	}
	if (row)
		*row = r;
	return 0;
}
