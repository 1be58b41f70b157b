/* SPDX-License-Identifier: MIT */
/* DWARF .eh_frame (+ .eh_frame_hdr) generated from jitsframe rows. */
#ifndef JSF_EHFRAME_H
#define JSF_EHFRAME_H

#include "jitsframe.h"

#include <stddef.h>
#include <stdint.h>

/* Bytes the unwind data of a function with n rows needs at most. */
#define JSF_EH_MAX(n) (128 + (size_t)(n)*24)

/* One function's unwind rows at an absolute address. */
struct jd_unwind_fn {
	uint64_t start;
	uint32_t size;
	const struct jsf_row *rows;
	uint32_t nrows;
};

/*
 * The same for several functions (one CIE, one FDE each, a search table
 * sorted by start), the .eh_frame being at address eh_addr.
 */
#define JSF_EH_MAX_FNS 8
size_t eh_fns(const struct jd_unwind_fn *fns, uint32_t nfns, uint64_t eh_addr,
	      uint8_t *out, size_t cap, size_t *hdr_size);

#endif
