/* SPDX-License-Identifier: MIT */
/*
 * Reading a jitdump back (for consumers): the name of every CODE_LOAD by its
 * index, which is the N of perf inject's jitted-PID-N.so. Every length is
 * checked against the file; a damaged file is read up to the damage.
 */
#include "jitdump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int jsf_jitdump_names(const char *path,
		      void (*cb)(uint32_t pid, uint64_t index, const char *name,
				 void *ctx),
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
		/* CODE_LOAD: ts, pid, tid, vma, code_addr, size, index, name */
		if (rh[0] == 0 && rh[1] >= 8 + 8 + 8 + 3 * 8 + 8 + 1) {
			uint32_t rpid;
			uint64_t idx;
			memcpy(&rpid, rec + 8, 4);
			memcpy(&idx, rec + 8 + 8 + 24, 8);
			const char *name = (const char *)rec + 8 + 8 + 32;
			size_t max = rh[1] - 8 - (8 + 8 + 32);
			if (memchr(name, 0, max)) {
				cb(rpid, idx, name, ctx);
				n++;
			}
		}
	}
	free(rec);
	fclose(f);
	return err ? err : n;
}
