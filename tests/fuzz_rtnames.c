/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the reader of a region's runtime area
 * (unwind/rtnames.c: the LJVM and LJFF records, docs/ABI.md 1.6) on
 * hostile input: a region file is a file anyone could have written. The
 * input is the header page from byte 96 on (features, the area's length,
 * then the area at 1024 - 96 = 928 bytes in), so that the length and the
 * records are both the fuzzer's. Oracles besides "no crash, no sanitizer
 * report, no leak": every name kept is printable ASCII without ';' and
 * NUL-terminated; the addresses are sorted, each once; uw_runtime_name
 * gives each address its own name back; the interpreter's range, when
 * kept, is not empty.
 */
#include "unwind.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	uint8_t h[4096] = {0};
	memcpy(h, "JSFREGN", 8);
	memcpy(h + 96, d, n < 4000 ? n : 4000);
	struct uw_runtime rt;
	if (uw_runtime_parse(h, sizeof(h), &rt))
		return 0;
	if (rt.vm_start && rt.vm_start >= rt.vm_end)
		abort();
	for (size_t i = 0; i < rt.nn; i++) {
		const char *s = rt.n[i].name;
		size_t l = strlen(s);
		if (!l || l > 255)
			abort();
		for (size_t k = 0; k < l; k++)
			if ((uint8_t)s[k] < 0x21 || (uint8_t)s[k] > 0x7e ||
			    s[k] == ';')
				abort();
		if (i && rt.n[i - 1].addr >= rt.n[i].addr)
			abort();
		const char *back = uw_runtime_name(&rt, rt.n[i].addr);
		if (!back ||
		    (strcmp(back, s) && !(rt.vm_start == rt.n[i].addr &&
					  !strcmp(back, UW_INTERP_NAME))))
			abort();
	}
	uw_runtime_free(&rt);
	return 0;
}
