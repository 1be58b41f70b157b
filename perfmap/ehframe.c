/* SPDX-License-Identifier: MIT */
/*
 * .eh_frame from rows (DWARF CFI, x86-64: rsp = 7, rbp = 6, RA column 16).
 * One CIE (zR, FDE pointers pcrel sdata4, initial CFA rsp+8, RA at CFA-8),
 * one FDE whose program replays the rows, then .eh_frame_hdr.
 */
#include "ehframe.h"

#include <string.h>

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *src, size_t n)
{
	if (b->n + n <= b->cap)
		memcpy(b->p + b->n, src, n);
	b->n += n;
}
static void u8(struct buf *b, uint8_t v)
{
	put(b, &v, 1);
}
static void u32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}
static void uleb(struct buf *b, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;
		v >>= 7;
		u8(b, c | (v ? 0x80 : 0));
	} while (v);
}
static void sleb(struct buf *b, int64_t v)
{
	for (;;) {
		uint8_t c = v & 0x7f;
		/* an arithmetic shift, spelled out: >> of a negative value
		 * is implementation-defined */
		v = v < 0 ? ~(~v >> 7) : v >> 7;
		if ((v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40))) {
			u8(b, c);
			return;
		}
		u8(b, c | 0x80);
	}
}
static void set32(struct buf *b, size_t at, uint32_t v)
{
	if (at + 4 <= b->cap)
		memcpy(b->p + at, &v, 4);
}
/* Pad an entry that started at `start` (its length field) to 4 bytes (the
 * unwind data is placed in the trace's last bytes: every byte counts). */
static void close_entry(struct buf *b, size_t start)
{
	while ((b->n - start) % 4)
		u8(b, 0); /* DW_CFA_nop */
	set32(b, start, (uint32_t)(b->n - start - 4));
}

/* One FDE for fn, whose start is at fn_minus_eh from the .eh_frame start. */
static int put_fde(struct buf *b, size_t cie, const struct jd_unwind_fn *fn,
		   int64_t fn_minus_eh)
{
	size_t fde = b->n;
	u32(b, 0);			/* length, patched */
	u32(b, (uint32_t)(b->n - cie)); /* CIE pointer: back to the CIE */
	int64_t pc_begin = fn_minus_eh - (int64_t)b->n; /* pcrel */
	u32(b, (uint32_t)(int32_t)pc_begin);
	u32(b, fn->size); /* pc range */
	uleb(b, 0);	  /* augmentation data length */
	uint32_t at = 0;
	for (uint32_t i = 0; i < fn->nrows; i++) {
		const struct jsf_row *r = &fn->rows[i];
		uint32_t d = r->offset - at;
		if (d) {
			if (d < 0x40) {
				u8(b, 0x40 | (uint8_t)d); /* advance_loc */
			} else if (d <= 0xff) {
				u8(b, 0x02);
				u8(b, (uint8_t)d);
			} else if (d <= 0xffff) {
				u8(b, 0x03);
				uint16_t v = (uint16_t)d;
				put(b, &v, 2);
			} else {
				u8(b, 0x04);
				u32(b, d);
			}
			at = r->offset;
		}
		if (r->outermost) {
			u8(b, 0x07); /* DW_CFA_undefined RA: no caller */
			uleb(b, 16);
			continue;
		}
		/* CFA = reg + cfa_offset: DW_CFA_def_cfa_sf with a factored
		 * offset (data alignment -8), else the unfactored form. */
		unsigned reg = r->cfa_base == JSF_SP ? 7 : 6;
		if (r->cfa_offset % 8 == 0) {
			u8(b, 0x12);
			uleb(b, reg);
			sleb(b, -(int64_t)(r->cfa_offset / 8));
		} else if (r->cfa_offset >= 0) {
			u8(b, 0x0c);
			uleb(b, reg);
			uleb(b, (uint64_t)r->cfa_offset);
		} else {
			return -1;
		}
		if (i && fn->rows[i - 1].outermost) {
			u8(b, 0x80 | 16); /* RA at CFA-8 again */
			uleb(b, 1);
		}
		if (r->has_fp) {
			if (r->fp_offset % 8)
				return -1;
			if (r->fp_offset <= 0) {
				u8(b, 0x80 | 6); /* DW_CFA_offset rbp */
				uleb(b, (uint64_t)(-(r->fp_offset / 8)));
			} else {
				u8(b, 0x11); /* DW_CFA_offset_extended_sf */
				uleb(b, 6);
				sleb(b, -(int64_t)(r->fp_offset / 8));
			}
		} else {
			u8(b, 0x08); /* DW_CFA_same_value rbp */
			uleb(b, 6);
		}
	}
	close_entry(b, fde);
	return 0;
}

size_t eh_fns(const struct jd_unwind_fn *fns, uint32_t nfns, uint64_t eh_addr,
	      uint8_t *out, size_t cap, size_t *hdr_size)
{
	struct buf b = {out, 0, cap};
	size_t fde_at[JSF_EH_MAX_FNS];
	if (nfns == 0 || nfns > JSF_EH_MAX_FNS)
		return 0;
	/* CIE */
	size_t cie = b.n;
	u32(&b, 0); /* length, patched */
	u32(&b, 0); /* CIE id */
	u8(&b, 1);  /* version */
	put(&b, "zR", 3);
	uleb(&b, 1);	   /* code alignment */
	sleb(&b, -8);	   /* data alignment */
	u8(&b, 16);	   /* return address column */
	uleb(&b, 1);	   /* augmentation data length */
	u8(&b, 0x1b);	   /* FDE pointers: pcrel | sdata4 */
	u8(&b, 0x80 | 16); /* DW_CFA_offset r16 (RA), cfa-8: every row */
	uleb(&b, 1);
	close_entry(&b, cie);
	for (uint32_t i = 0; i < nfns; i++) {
		fde_at[i] = b.n;
		if (put_fde(&b, cie, &fns[i],
			    (int64_t)(fns[i].start - eh_addr)))
			return 0;
	}
	/* no zero terminator: readers find FDEs through the header */
	/* .eh_frame_hdr, right after .eh_frame; its table sorted by start */
	size_t hdr = b.n;
	u8(&b, 1);    /* version */
	u8(&b, 0x1b); /* eh_frame_ptr: pcrel sdata4 */
	u8(&b, 0x03); /* fde_count: udata4 */
	u8(&b, 0x3b); /* table: datarel sdata4 */
	u32(&b, (uint32_t)(int32_t)(0 - (int64_t)(b.n))); /* -> .eh_frame */
	u32(&b, nfns);
	uint32_t order[JSF_EH_MAX_FNS] = {0};
	for (uint32_t i = 0; i < nfns; i++) {
		uint32_t j = i;
		while (j && fns[order[j - 1]].start > fns[i].start) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	for (uint32_t k = 0; k < nfns; k++) {
		uint32_t i = order[k];
		/* datarel: relative to the header's start */
		u32(&b, (uint32_t)(int32_t)((int64_t)(fns[i].start - eh_addr) -
					    (int64_t)hdr));
		u32(&b, (uint32_t)(int32_t)((int64_t)fde_at[i] - (int64_t)hdr));
	}
	*hdr_size = b.n - hdr;
	return b.n <= cap ? b.n : 0;
}
