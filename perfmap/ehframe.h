/* SPDX-License-Identifier: MIT */
/* DWARF .eh_frame (+ .eh_frame_hdr) generated from jitsframe rows. */
#ifndef JSF_EHFRAME_H
#define JSF_EHFRAME_H

#include "jitsframe.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Write, for one function of `code_size` bytes described by `rows`, an
 * .eh_frame (CIE + FDE + terminator) followed by an .eh_frame_hdr with a
 * one-entry search table. `func_minus_eh` is the function's start address
 * minus the address the .eh_frame will have in memory (everything is
 * position-relative). Returns the total bytes (0 if `cap` is too small or a
 * row cannot be expressed) and the header's size in *hdr_size. The size
 * does not depend on func_minus_eh. Needs at most JSF_EH_MAX(nrows) bytes.
 */
#define JSF_EH_MAX(n) (128 + (size_t)(n)*24)
size_t jsf_ehframe(const struct jsf_row *rows, uint32_t nrows,
		   uint32_t code_size, int64_t func_minus_eh, uint8_t *out,
		   size_t cap, size_t *hdr_size);

/* One function's unwind rows at an absolute address. */
struct jsf_unwind_fn {
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
size_t jsf_ehframe_fns(const struct jsf_unwind_fn *fns, uint32_t nfns,
		       uint64_t eh_addr, uint8_t *out, size_t cap,
		       size_t *hdr_size);

#endif
