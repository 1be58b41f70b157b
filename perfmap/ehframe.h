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
 * one-entry search table, laid out as perf inject places them: the code at
 * address C, .eh_frame at C + ALIGN8(code_size), the header right after the
 * .eh_frame. Returns the total bytes (0 if `cap` is too small) and the
 * header's size in *hdr_size. Needs at most JSF_EH_MAX(nrows) bytes.
 */
#define JSF_EH_MAX(n) (128 + (size_t)(n)*24)
size_t jsf_ehframe(const struct jsf_row *rows, uint32_t nrows,
		   uint32_t code_size, uint8_t *out, size_t cap,
		   size_t *hdr_size);

#endif
