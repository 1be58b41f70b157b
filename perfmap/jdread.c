/* SPDX-License-Identifier: MIT */
/*
 * Reading a jitdump back (for consumers): every CODE_LOAD with its index
 * (the N of perf inject's jitted-PID-N.so), time, addresses and name. Every
 * length is checked against the file; a damaged file is read up to the damage.
 */
#include "jitdump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int jd_loads(const char *path, void (*cb)(const struct jd_load *l, void *ctx),
	     void *ctx)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	uint32_t h[4];
	uint64_t ts, flags;
	uint32_t pid = 0;
	int err = 0, n = 0;
	if (fread(h, 4, 4, f) != 4 || h[0] != 0x4A695444 || h[2] < 40 ||
	    fread(&pid, 4, 1, f) != 1 || fread(&ts, 8, 1, f) != 1 ||
	    fread(&flags, 8, 1, f) != 1) {
		fclose(f);
		return -EBADMSG;
	}
	if (fseek(f, (long)h[2], SEEK_SET)) {
		fclose(f);
		return -EBADMSG;
	}
	uint8_t *rec = NULL;
	uint64_t lo = 0, hi = 0; /* from the group's DEBUG_INFO */
	for (;;) {
		uint32_t rh[2];
		if (fread(rh, 4, 2, f) != 2)
			break; /* end (or a torn last record) */
		if (rh[1] < 16 || rh[1] > (64u << 20)) {
			err = -EBADMSG;
			break;
		}
		uint8_t *r = realloc(rec, rh[1]);
		if (!r) {
			err = -ENOMEM;
			break;
		}
		rec = r;
		if (fread(rec, 1, rh[1] - 8, f) != rh[1] - 8)
			break;
		/* DEBUG_INFO: ts, code_addr, nr, {addr, line, discrim, file} */
		if (rh[0] == 2 && rh[1] >= 8 + 24) {
			uint64_t nr;
			memcpy(&nr, rec + 16, 8);
			size_t off = 24;
			lo = hi = 0;
			for (uint64_t i = 0; i < nr && off + 16 < rh[1] - 8;
			     i++) {
				uint64_t a;
				memcpy(&a, rec + off, 8);
				if (i == 0)
					lo = a;
				hi = a + 1;
				const uint8_t *z = memchr(rec + off + 16, 0,
							  rh[1] - 8 - off - 16);
				if (!z)
					break;
				off = (size_t)(z - rec) + 1;
			}
		}
		/* CODE_LOAD: ts, pid, tid, vma, code_addr, size, index, name */
		if (rh[0] == 0 && rh[1] >= 8 + 8 + 8 + 3 * 8 + 8 + 1) {
			struct jd_load l;
			memcpy(&l.ts, rec, 8);
			memcpy(&l.pid, rec + 8, 4);
			memcpy(&l.code_addr, rec + 8 + 8 + 8, 8);
			memcpy(&l.code_size, rec + 8 + 8 + 16, 8);
			memcpy(&l.index, rec + 8 + 8 + 24, 8);
			l.name = (const char *)rec + 8 + 8 + 32;
			l.lo = lo ? lo : l.code_addr;
			l.hi = lo ? hi : l.code_addr + l.code_size;
			lo = hi = 0;
			size_t max = rh[1] - 8 - (8 + 8 + 32);
			if (memchr(l.name, 0, max)) {
				cb(&l, ctx);
				n++;
			}
		}
	}
	free(rec);
	fclose(f);
	return err ? err : n;
}
