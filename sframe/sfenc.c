/* SPDX-License-Identifier: MIT */
/* SFrame FRE encoding and decoding (shared by producer, reader, exporter). */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

uint32_t jsf_version(void)
{
	return (uint32_t)JSF_VERSION_MAJOR << 16 | JSF_VERSION_MINOR << 8 |
	       JSF_VERSION_PATCH;
}

const char *jsf_version_string(void)
{
	return JSF_VERSION_STRING;
}

uint64_t jsf_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *jsf_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -ENOENT:
		return "no function covers that address";
	case -EEXIST:
		return "overlaps a live function (or the file exists)";
	case -EINVAL:
		return "invalid argument (rows must start at offset 0, "
		       "strictly "
		       "increase and stay inside the function)";
	case -ENOSPC:
		return "region full: max_size reached even without history";
	case -EAGAIN:
		return "the producer kept rewriting the table; try again";
	case -EBADMSG:
		return "malformed region or SFrame data";
	case -ERANGE:
		return "addresses out of range for the chosen encoding";
	default:
		return strerror(err < 0 ? -err : err);
	}
}

void jsf__msg(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;
	if (!msg || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
}

int jsf__check_rows(const struct jsf_row *rows, uint32_t nrows, uint32_t size)
{
	if (!rows || nrows == 0 || nrows > 0xffff || nrows > size)
		return -EINVAL;
	if (rows[0].offset != 0)
		return -EINVAL;
	for (uint32_t i = 0; i < nrows; i++) {
		const struct jsf_row *r = &rows[i];
		if (r->offset >= size)
			return -EINVAL;
		if (i && r->offset <= rows[i - 1].offset)
			return -EINVAL;
		if (!r->outermost && r->cfa_base != JSF_SP &&
		    r->cfa_base != JSF_FP)
			return -EINVAL;
	}
	return 0;
}

unsigned jsf__fre_type(uint32_t size)
{
	/* Start offsets are < size, so this width always fits them. */
	if (size <= 0x100)
		return 0;
	if (size <= 0x10000)
		return 1;
	return 2;
}

static unsigned word_size_code(int32_t v)
{
	if (v >= -128 && v <= 127)
		return 0;
	if (v >= -32768 && v <= 32767)
		return 1;
	return 2;
}

size_t jsf__encode_fres(const struct jsf_row *rows, uint32_t nrows,
			unsigned fre_type, uint8_t *out)
{
	unsigned aw = 1u << fre_type;
	uint8_t *p = out;
	for (uint32_t i = 0; i < nrows; i++) {
		const struct jsf_row *r = &rows[i];
		unsigned n = 0, sc = 0, base = 1;
		int32_t w[2];
		if (!r->outermost) {
			base = r->cfa_base == JSF_SP ? 1 : 0;
			w[n++] = r->cfa_offset;
			if (r->has_fp)
				w[n++] = r->fp_offset;
			for (unsigned k = 0; k < n; k++)
				if (word_size_code(w[k]) > sc)
					sc = word_size_code(w[k]);
		}
		for (unsigned k = 0; k < aw; k++)
			*p++ = (uint8_t)(r->offset >> (8 * k));
		*p++ = (uint8_t)((sc << 5) | (n << 1) | base);
		for (unsigned k = 0; k < n; k++)
			for (unsigned b = 0; b < (1u << sc); b++)
				*p++ = (uint8_t)((uint32_t)w[k] >> (8 * b));
	}
	return (size_t)(p - out);
}

size_t jsf__encode_func(const struct jsf_row *rows, uint32_t nrows,
			uint32_t size, uint8_t *out)
{
	unsigned t = jsf__fre_type(size);
	out[0] = (uint8_t)nrows;
	out[1] = (uint8_t)(nrows >> 8);
	out[2] = (uint8_t)t; /* FDE type PCINC, no signal frame */
	out[3] = 0;	     /* info2: default FDE type */
	out[4] = 0;	     /* rep_size */
	return SFRAME_V3_ATTR_SIZE +
	       jsf__encode_fres(rows, nrows, t, out + SFRAME_V3_ATTR_SIZE);
}

size_t jsf__decode_fre(const uint8_t *p, size_t avail, unsigned fre_type,
		       struct jsf_row *row)
{
	unsigned aw = 1u << fre_type;
	if (fre_type > 2 || avail < aw + 1)
		return 0;
	uint8_t info = LD8(p + aw);
	unsigned base = info & 1, n = (info >> 1) & 0xf, sc = (info >> 5) & 3;
	if (sc > 2 || n > 2 || (info & 0x80))
		return 0;
	unsigned ws = 1u << sc;
	size_t len = aw + 1 + (size_t)n * ws;
	if (len > avail)
		return 0;
	memset(row, 0, sizeof(*row));
	row->offset = ldu(p, aw);
	if (n == 0) {
		row->outermost = true;
		return len;
	}
	row->cfa_base = base ? JSF_SP : JSF_FP;
	row->cfa_offset = lds(p + aw + 1, ws);
	if (n == 2) {
		row->has_fp = true;
		row->fp_offset = lds(p + aw + 1 + ws, ws);
	}
	return len;
}

int jsf__read_func(const uint8_t *fre_area, uint32_t fre_len, uint32_t attr_off,
		   uint32_t func_size, uint32_t off, struct jsf_row *row,
		   struct jsf_row *all, uint32_t allcap)
{
	if (attr_off > fre_len || fre_len - attr_off < SFRAME_V3_ATTR_SIZE)
		return -EBADMSG;
	const uint8_t *a = fre_area + attr_off;
	uint32_t nfres = ldu(a, 2);
	uint8_t info = LD8(a + 2), info2 = LD8(a + 3);
	unsigned t = info & 0xf;
	/* PC type increment only, no AArch64 key, default FDE type. */
	if (t > 2 || (info & 0x70) || (info2 & 0x0f) || nfres == 0 ||
	    nfres > func_size)
		return -EBADMSG;
	const uint8_t *p = a + SFRAME_V3_ATTR_SIZE;
	size_t avail = fre_len - attr_off - SFRAME_V3_ATTR_SIZE;
	bool found = false;
	uint32_t prev = 0;
	for (uint32_t i = 0; i < nfres; i++) {
		struct jsf_row r;
		size_t l = jsf__decode_fre(p, avail, t, &r);
		if (!l || r.offset >= func_size || (i && r.offset <= prev))
			return -EBADMSG;
		prev = r.offset;
		if (row) {
			if (r.offset <= off) {
				*row = r;
				found = true;
			} else if (!all) {
				break; /* rows are sorted: done */
			}
		}
		if (all && i < allcap)
			all[i] = r;
		p += l;
		avail -= l;
	}
	if (row && !found)
		return -EBADMSG; /* first row is not at 0 */
	return (int)nfres;
}

uint32_t jsf__func_len(const uint8_t *fre_area, uint32_t fre_len, uint32_t attr)
{
	if (attr > fre_len || fre_len - attr < SFRAME_V3_ATTR_SIZE)
		return 0;
	uint32_t n = ldu(fre_area + attr, 2);
	unsigned t = LD8(fre_area + attr + 2) & 0xf;
	size_t off = attr + SFRAME_V3_ATTR_SIZE;
	for (uint32_t i = 0; i < n; i++) {
		struct jsf_row row;
		size_t l =
		    jsf__decode_fre(fre_area + off, fre_len - off, t, &row);
		if (!l)
			return 0;
		off += l;
	}
	return (uint32_t)(off - attr);
}
