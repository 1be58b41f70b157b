/* SPDX-License-Identifier: MIT */
/* elfrows_dump FILE...: every row uw_elf_rows gives for each FILE, one a
 * line ("lo hi rule cfa_off ra_off fp"), for tests/t_vmsubrows.sh. */
#include "unwind.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	static const char *rule[] = {"none", "sp", "fp", "plt", "unsup"};
	for (int i = 1; i < argc; i++) {
		struct uw_xrow *r;
		size_t n;
		int rc = uw_elf_rows(argv[i], &r, &n, NULL);
		if (rc) {
			fprintf(stderr, "%s: %d\n", argv[i], rc);
			return 1;
		}
		for (size_t j = 0; j < n; j++)
			printf("%" PRIx64 " %" PRIx64 " %s %d %d %s%d%s\n",
			       r[j].lo, r[j].hi,
			       r[j].cfa < 5 ? rule[r[j].cfa] : "?",
			       r[j].cfa_off, r[j].ra_off,
			       r[j].fp_saved ? "fp@" : "fp=", r[j].fp_off,
			       r[j].ra_undef ? " outermost" : "");
		free(r);
	}
	return 0;
}
