/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the reader of DIR/vmprofile.json (profile/vmstates.c,
 * pf_vms_read: `jitsframe vmprofile DIR`): a record directory is a file
 * tree anyone could have written. The input is the file; "\x01" as its
 * first byte instead makes one in the writer's own shape from the rest
 * (numbers, names and lines taken from the input, some past 2^53), so that
 * mutations reach every field.
 *
 * Oracles, besides "no crash, no sanitizer report, no leak": a file read
 * is written (pf_vms_json), that text read back and written again gives
 * the same text (nothing the reader took is lost or changed: jpv_totals
 * were dropped before this target); a refused file leaves a message and
 * an empty table.
 */
#include "profile.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int read_bytes(struct pf_vms *v, const void *d, size_t n, char *msg,
		      size_t ml)
{
	int fd = memfd_create("fuzz_vmpjson", MFD_CLOEXEC);
	if (fd < 0 || (n && write(fd, d, n) != (ssize_t)n))
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int rc = pf_vms_read(v, path, msg, ml);
	close(fd);
	return rc;
}

static char *written(struct pf_vms *v, size_t *len)
{
	char *b = NULL;
	FILE *o = open_memstream(&b, len);
	if (!o)
		abort();
	pf_vms_json(v, o);
	fclose(o);
	return b;
}

struct rd {
	const uint8_t *d;
	size_t n, at;
};
static unsigned byte(struct rd *r)
{
	return r->at < r->n ? r->d[r->at++] : 0;
}
/* past 2^53 when the first byte is big: counts a double cannot hold */
static unsigned long long big(struct rd *r)
{
	unsigned long long x = (unsigned long long)byte(r) << 56;
	x |= (unsigned long long)byte(r) << 20;
	return x | byte(r);
}

/* What a recipe's file says, for the reader to give back. */
struct want {
	unsigned long long samples, st0, jc;
	unsigned hz, st1, jg, ms;
};

/* A file in the writer's shape from a recipe. */
static char *from_recipe(const uint8_t *d, size_t n, size_t *len,
			 struct want *w)
{
	char *b = NULL;
	FILE *o = open_memstream(&b, len);
	if (!o)
		abort();
	struct rd r = {d, n, 0};
	unsigned hz = byte(&r) * 100u, s1 = byte(&r), s2 = byte(&r) * 3u;
	unsigned long long samples = big(&r);
	unsigned nov = byte(&r);
	unsigned long long st0 = big(&r);
	unsigned st1 = byte(&r), st2 = byte(&r);
	unsigned long long jc = big(&r);
	unsigned jg = byte(&r), ms = byte(&r), mst = byte(&r);
	fprintf(o,
		"{\"format\":\"jitsframe-vmprofile\",\"version\":1,\"hz\":%u,"
		"\"seconds\":%u.%03u,\"samples\":%llu,\"no_vmstate\":%u,\n"
		"\"states\":[\"head\"],\"state_totals\":[%llu,%u,%u],\n"
		"\"totals\":{\"compiled\":1},\"jpv_totals\":{\"compiled\":%llu,"
		"\"gc\":%u,\"other\":[1,{\"a\":null}]},\n"
		"\"module_samples\":%u,\"module_state_totals\":[%u],\n"
		"\"traces\":[",
		hz, s1, s2, samples, nov, st0, st1, st2, jc, jg, ms, mst);
	*w = (struct want){samples, st0, jc, hz, st1, jg, ms};
	unsigned nt = byte(&r) % 6;
	for (unsigned t = 0; t < nt; t++) {
		unsigned pid = byte(&r) % 3, tr = byte(&r) % 4, k = byte(&r),
			 line = byte(&r);
		unsigned long long tot = big(&r);
		unsigned c0 = byte(&r), c1 = byte(&r);
		fprintf(
		    o,
		    "%s\n{\"pid\":%u,\"trace\":%u,\"name\":\"TRACE_%u::"
		    "a\\u00e9\\\"b\\\\.lua:%u\",\"samples\":%llu,\"counts\":"
		    "[%u,%u],\"lines\":[",
		    t ? "," : "", pid, tr, k, line, tot, c0, c1);
		unsigned nl = byte(&r) % 4;
		for (unsigned l = 0; l < nl; l++) {
			unsigned f = byte(&r) % 3, fl = byte(&r), c = byte(&r);
			fprintf(o, "%s[\"f%u.lua:%u\",%u]", l ? "," : "", f, fl,
				c);
		}
		fprintf(o, "],\"lines_other\":%u}", byte(&r));
	}
	fprintf(o, "]}\n");
	fclose(o);
	return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	if (n > (256u << 10))
		return 0;
	char *made = NULL;
	struct want w;
	if (n && d[0] == 1) {
		made = from_recipe(d + 1, n - 1, &n, &w);
		d = (const uint8_t *)made;
	}
	struct pf_vms v;
	char msg[600] = "";
	if (read_bytes(&v, d, n, msg, sizeof(msg))) {
		if (!msg[0] || v.rows || v.nrows) {
			fprintf(stderr, "oracle: refused without a message, or "
					"rows left\n");
			abort();
		}
		free(made);
		return 0;
	}
	/* a recipe's file: its numbers read back as written (counts past
	 * 2^53 exactly; the -jp=v totals too) */
	if (made && (v.samples != w.samples || v.state[0] != w.st0 ||
		     v.state[1] != w.st1 || v.hz != w.hz ||
		     v.jpv[PF_VT_COMPILED] != w.jc || v.jpv[PF_VT_GC] != w.jg ||
		     v.mod_samples != w.ms)) {
		fprintf(stderr,
			"oracle: a number read is not the file's:\n%s\n", made);
		abort();
	}
	size_t l1, l2;
	char *t1 = written(&v, &l1);
	pf_vms_free(&v);
	if (read_bytes(&v, t1, l1, msg, sizeof(msg))) {
		fprintf(stderr, "oracle: its own output refused: %s\n%s\n", msg,
			t1);
		abort();
	}
	char *t2 = written(&v, &l2);
	if (l1 != l2 || memcmp(t1, t2, l1)) {
		fprintf(stderr,
			"oracle: read back, the text changed:\n%s\n%s\n", t1,
			t2);
		abort();
	}
	pf_vms_free(&v);
	free(t1);
	free(t2);
	free(made);
	return 0;
}
