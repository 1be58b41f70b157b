/* SPDX-License-Identifier: MIT */
/* x86len_walk FILE...: decode each file of raw x86-64 code from offset 0
 * with lj/x86len.c and print "FILE OFFSET LENGTH" per instruction, then
 * "FILE END OFFSET" where decoding stopped (the file's size, or the first
 * instruction outside the subset).
 * x86len_walk -a FILE: read offsets from stdin, print "OFFSET LENGTH" for
 * each (-1: outside the subset). For tests/t_x86len.sh. */
#include "x86len.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	static uint8_t buf[1 << 24];
	if (argc == 3 && argv[1][0] == '-' && argv[1][1] == 'a') {
		FILE *f = fopen(argv[2], "rb");
		if (!f) {
			perror(argv[2]);
			return 2;
		}
		size_t n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		unsigned long off;
		while (scanf("%lu", &off) == 1)
			if (off < n)
				printf("%lu %d\n", off,
				       x86_insn_len(buf + off, n - off));
		return 0;
	}
	for (int a = 1; a < argc; a++) {
		FILE *f = fopen(argv[a], "rb");
		if (!f) {
			perror(argv[a]);
			return 2;
		}
		size_t n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		size_t at = 0;
		while (at < n) {
			int len = x86_insn_len(buf + at, n - at);
			if (len <= 0)
				break;
			printf("%s %zu %d\n", argv[a], at, len);
			at += (size_t)len;
		}
		printf("%s END %zu\n", argv[a], at);
	}
	return 0;
}
