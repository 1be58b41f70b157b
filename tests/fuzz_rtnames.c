/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the reader of a region's runtime area
 * (unwind/rtnames.c: the LJVM, LJFF and LJCF records, docs/ABI.md 1.6
 * and 1.7) on hostile input: a region file is a file anyone could have
 * written. The input is the header page from byte 96 on (features, the
 * area's length, the extension's capacity and length, then the area at
 * 1024 - 96 = 928 bytes in), its bytes past 4000 the runtime extension
 * (up to 4096 of them), so that the lengths and the records are all the
 * fuzzer's. Oracles besides "no crash, no sanitizer
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
	static uint8_t h[4096 + 4096];
	memset(h, 0, sizeof(h));
	memcpy(h, "JSFREGN", 8);
	memcpy(h + 96, d, n < 4000 ? n : 4000);
	size_t x = n > 4000 ? n - 4000 : 0; /* the extension's bytes */
	if (x > 4096)
		x = 4096;
	memcpy(h + 4096, d + 4000, x);
	struct uw_runtime rt;
	if (uw_runtime_parse(h, 4096 + x, &rt))
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
