/* SPDX-License-Identifier: MIT */
/*
 * Export: the functions live at some time as a standalone SFrame section,
 * V3 (sorted, PC-relative starts) or V1 (what Debian 12's libsframe reads,
 * 32-bit starts relative to a base near the code).
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int jsf_view_export(const struct jsf_view *v, const struct jsf_export_opts *o,
		    void **out, size_t *out_len, uint64_t *out_base)
{
	struct jsf_export_opts opt = {0};
	if (!v || !out || !out_len)
		return -EINVAL;
	int oerr = sf_opts_in(&opt, sizeof(opt), o, "jsf_export_opts");
	if (oerr)
		return oerr;
	unsigned ver = opt.version ? opt.version : 3;
	if (ver != 1 && ver != 3)
		return -EINVAL;
	struct sf_snap tmp = {0};
	const struct sf_snap *s;
	int err = sf_view_snap(v, &tmp, &s);
	if (err)
		return err;
	/* Select, and size the output. */
	const struct sf_ent **sel =
	    calloc(s->log_n ? s->log_n : 1, sizeof(const struct sf_ent *));
	uint8_t *buf = NULL;
	if (!sel) {
		err = -ENOMEM;
		goto out;
	}
	uint32_t n = 0;
	uint64_t fre_bytes = 0, nfres = 0;
	for (uint32_t i = 0; i < s->log_n; i++) {
		const struct sf_ent *e = &s->e[i];
		if (!sf_alive(e, opt.at_ns))
			continue;
		if (n && sel[n - 1]->start + sel[n - 1]->size > e->start) {
			err = -EBADMSG; /* overlapping live functions */
			goto out;
		}
		sel[n++] = e;
		fre_bytes += SF_FUNC_ENC_MAX(e->nrows);
		nfres += e->nrows;
	}
	if (n == 0) {
		err = -ENOENT;
		goto out;
	}
	size_t fde_size = ver == 3 ? SFRAME_V3_FDE_SIZE : SFRAME_V1_FDE_SIZE;
	uint64_t base = opt.base;
	if (ver == 1 && !opt.has_base)
		base = sel[0]->start & ~(uint64_t)0xfff;
	if (ver == 1) {
		uint64_t end = sel[n - 1]->start + sel[n - 1]->size;
		if (sel[0]->start < base || end - base > INT32_MAX) {
			err = -ERANGE;
			goto out;
		}
	}
	size_t cap = SFRAME_HDR_SIZE + (size_t)n * fde_size + fre_bytes;
	buf = calloc(1, cap);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	uint8_t *fdes = buf + SFRAME_HDR_SIZE;
	uint8_t *fre = fdes + (size_t)n * fde_size;
	uint32_t fre_len = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct sf_ent *e = sel[i];
		const struct jsf_row *rows = s->rows + e->row0;
		uint8_t *p = fdes + (size_t)i * fde_size;
		if (ver == 3) {
			uint64_t field =
			    base + SFRAME_HDR_SIZE + (uint64_t)i * 16;
			uint64_t rel = e->start - field;
			for (int k = 0; k < 8; k++)
				p[k] = (uint8_t)(rel >> (8 * k));
			put32(p + 8, e->size);
			put32(p + 12, fre_len);
			fre_len += (uint32_t)sf_encode_func(
			    rows, e->nrows, e->size, fre + fre_len);
		} else {
			/* V1: {i32 start; u32 size; u32 first FRE; u32
			 * num_fres; u8 info}; info = FRE type, PC type
			 * increment. */
			unsigned t = sf_fre_type(e->size);
			put32(p, (uint32_t)(e->start - base));
			put32(p + 4, e->size);
			put32(p + 8, fre_len);
			put32(p + 12, e->nrows);
			p[16] = (uint8_t)t;
			fre_len += (uint32_t)sf_encode_fres(rows, e->nrows, t,
							    fre + fre_len);
		}
	}
	buf[0] = SFRAME_MAGIC & 0xff;
	buf[1] = SFRAME_MAGIC >> 8;
	buf[2] = (uint8_t)ver;
	buf[3] = ver == 3 ? SFRAME_F_FDE_SORTED | SFRAME_F_FDE_FUNC_START_PCREL
			  : SFRAME_F_FDE_SORTED;
	buf[4] = JSF_ARCH_X86_64;
	buf[5] = 0;
	buf[6] = (uint8_t)(int8_t)SFRAME_RA_FIXED_X86_64;
	buf[7] = 0;
	put32(buf + SH_NUM_FDES, n);
	put32(buf + SH_NUM_FRES, (uint32_t)nfres);
	put32(buf + SH_FRE_LEN, fre_len);
	put32(buf + SH_FDEOFF, 0);
	put32(buf + SH_FREOFF, (uint32_t)(n * fde_size));
	*out = buf;
	*out_len = SFRAME_HDR_SIZE + (size_t)n * fde_size + fre_len;
	if (out_base)
		*out_base = base;
	buf = NULL;
out:
	free(buf);
	free(sel);
	sf_snap_free(&tmp);
	return err;
}
