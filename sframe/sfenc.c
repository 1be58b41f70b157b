/* SPDX-License-Identifier: MIT */
/* SFrame FRE encoding and decoding (shared by producer, reader, exporter). */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
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

static const struct sf_arch arches[] = {
    {JSF_ARCH_X86_64, "x86-64", SF_X86_64_RA_FIXED, true},
    {JSF_ARCH_AARCH64, "AArch64", 0, false},
};

const struct sf_arch *sf_arch(uint32_t id)
{
	if (id == 0)
		id = JSF_ARCH_X86_64;
	for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++)
		if (arches[i].id == id)
			return &arches[i];
	return NULL;
}

/* The last failure's cause on this thread, for jsf_strerror. */
static __thread int last_err;
static __thread char last_msg[256];

int sf_fail(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
	va_end(ap);
	last_err = err;
	return err;
}

int sf_opts_in(void *dst, size_t dsz, const void *src, const char *what)
{
	memset(dst, 0, dsz);
	if (!src)
		return 0;
	size_t sz;
	memcpy(&sz, src, sizeof(sz));
	if (sz < sizeof(size_t))
		return sf_fail(-EINVAL,
			       "struct %s: sz %zu is smaller than "
			       "the sz field itself",
			       what, sz);
	for (size_t i = dsz; i < sz; i++)
		if (((const unsigned char *)src)[i])
			return sf_fail(-EINVAL,
				       "struct %s: sz %zu from a newer caller "
				       "sets byte %zu, a field this library "
				       "(%zu bytes) does not know",
				       what, sz, i, dsz);
	memcpy(dst, src, sz < dsz ? sz : dsz);
	*(size_t *)dst = dsz;
	return 0;
}

const char *jsf_strerror(int err)
{
	if (err && err == last_err && last_msg[0])
		return last_msg;
	switch (err) {
	case 0:
		return "success";
	case -ENOENT:
		return "no function covers that address";
	case -EEXIST:
		return "overlaps a live function (or the file exists)";
	case -EINVAL:
		return "invalid argument";
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

void sf_msg(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;
	if (!msg || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
}

int sf_check_rows(const struct sf_arch *a, const struct jsf_row *rows,
		  uint32_t nrows, uint32_t size)
{
	if (!rows || nrows == 0)
		return sf_fail(-EINVAL, "no rows");
	if (nrows > 0xffff || nrows > size)
		return sf_fail(-EINVAL,
			       "%u rows for a %u-byte function (at most one "
			       "a byte, 65535 in all)",
			       nrows, size);
	if (rows[0].offset != 0)
		return sf_fail(-EINVAL,
			       "row 0 starts at offset %u, not 0: every "
			       "address of the function needs a row",
			       rows[0].offset);
	for (uint32_t i = 0; i < nrows; i++) {
		const struct jsf_row *r = &rows[i];
		if (r->offset >= size)
			return sf_fail(-EINVAL,
				       "row %u: offset %u is outside the "
				       "%u-byte function",
				       i, r->offset, size);
		if (i && r->offset <= rows[i - 1].offset)
			return sf_fail(-EINVAL,
				       "row %u: offset %u does not follow "
				       "row %u's %u (offsets strictly "
				       "increase)",
				       i, r->offset, i - 1, rows[i - 1].offset);
		if (r->outermost)
			continue;
		if (r->cfa_base != JSF_SP && r->cfa_base != JSF_FP)
			return sf_fail(-EINVAL,
				       "row %u: CFA base %u is neither "
				       "JSF_SP nor JSF_FP",
				       i, r->cfa_base);
		bool ra_ok;
		switch (r->ra_rule) {
		case JSF_RA_DEFAULT:
			ra_ok = true;
			break;
		case JSF_RA_CFA:
			ra_ok = !a->ra_fixed || r->ra_offset == a->ra_fixed;
			break;
		default:
			ra_ok = false;
		}
		if (!ra_ok)
			return sf_fail(
			    -EINVAL,
			    "row %u: return-address rule %u (offset %d) "
			    "cannot be expressed on %s (RA always at CFA%+d)",
			    i, r->ra_rule, r->ra_offset, a->name, a->ra_fixed);
	}
	return 0;
}

unsigned sf_fre_type(uint32_t size)
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

size_t sf_encode_fres(const struct jsf_row *rows, uint32_t nrows,
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

size_t sf_encode_func(const struct jsf_row *rows, uint32_t nrows, uint32_t size,
		      uint8_t *out)
{
	unsigned t = sf_fre_type(size);
	out[0] = (uint8_t)nrows;
	out[1] = (uint8_t)(nrows >> 8);
	out[2] = (uint8_t)t; /* FDE type PCINC, no signal frame */
	out[3] = 0;	     /* info2: default FDE type */
	out[4] = 0;	     /* rep_size */
	return SFRAME_V3_ATTR_SIZE +
	       sf_encode_fres(rows, nrows, t, out + SFRAME_V3_ATTR_SIZE);
}

size_t sf_decode_fre(const uint8_t *p, size_t avail, unsigned fre_type,
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
	row->ra_rule = JSF_RA_CFA;
	row->ra_offset = SF_X86_64_RA_FIXED;
	if (n == 2) {
		row->has_fp = true;
		row->fp_offset = lds(p + aw + 1 + ws, ws);
	}
	return len;
}

/*
 * The lookup of sf_read_func: the same checks as its full walk, on each FRE
 * up to the first past `off`, but only the answer is decoded (the others
 * need their start and info byte alone), with the start-address width a
 * constant in each of the three loops.
 */
static inline int find_row_w(const uint8_t *p, size_t avail, unsigned aw,
			     uint32_t nfres, uint32_t func_size, uint32_t off,
			     const uint8_t **lastp)
{
	const uint8_t *last = NULL;
	uint32_t po = 0;
	for (uint32_t i = 0; i < nfres; i++) {
		if (avail < aw + 1)
			return -EBADMSG;
		unsigned fi = LD8(p + aw);
		unsigned n = (fi >> 1) & 0xf, sc = (fi >> 5) & 3;
		if (sc > 2 || n > 2 || (fi & 0x80))
			return -EBADMSG;
		size_t l = aw + 1 + ((size_t)n << sc);
		if (l > avail)
			return -EBADMSG;
		uint32_t o = ldu(p, aw);
		if (o >= func_size || (i && o <= po))
			return -EBADMSG;
		if (o > off)
			break; /* rows are sorted: done */
		last = p;
		po = o;
		p += l;
		avail -= l;
	}
	*lastp = last;
	return last ? (int)(avail + (size_t)(p - last)) : -EBADMSG;
}

static int find_row(const uint8_t *p, size_t avail, unsigned t, uint32_t nfres,
		    uint32_t func_size, uint32_t off, struct jsf_row *row)
{
	const uint8_t *last = NULL;
	int left;
	switch (t) {
	case 0:
		left = find_row_w(p, avail, 1, nfres, func_size, off, &last);
		break;
	case 1:
		left = find_row_w(p, avail, 2, nfres, func_size, off, &last);
		break;
	default:
		left = find_row_w(p, avail, 4, nfres, func_size, off, &last);
	}
	/* No row at or before off: the first row is not at 0. */
	if (left < 0 || !sf_decode_fre(last, (size_t)left, t, row))
		return -EBADMSG;
	return (int)nfres;
}

int sf_read_func(const uint8_t *fre_area, uint32_t fre_len, uint32_t attr_off,
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
	if (row && !all)
		return find_row(p, fre_len - attr_off - SFRAME_V3_ATTR_SIZE, t,
				nfres, func_size, off, row);
	bool found = false;
	uint32_t prev = 0;
	for (uint32_t i = 0; i < nfres; i++) {
		struct jsf_row r;
		size_t l = sf_decode_fre(p, avail, t, &r);
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

uint32_t sf_func_len(const uint8_t *fre_area, uint32_t fre_len, uint32_t attr)
{
	if (attr > fre_len || fre_len - attr < SFRAME_V3_ATTR_SIZE)
		return 0;
	uint32_t n = ldu(fre_area + attr, 2);
	unsigned t = LD8(fre_area + attr + 2) & 0xf;
	size_t off = attr + SFRAME_V3_ATTR_SIZE;
	for (uint32_t i = 0; i < n; i++) {
		struct jsf_row row;
		size_t l =
		    sf_decode_fre(fre_area + off, fre_len - off, t, &row);
		if (!l)
			return 0;
		off += l;
	}
	return (uint32_t)(off - attr);
}
