/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the perf.data reader (unwind/perfdata.c) and the
 * unwinder's bookkeeping and walk (unwind/unwind.c) on hostile input.
 *
 * Input modes:
 *  - starts with "SFRM": the rest is an ELF .sframe section, looked up
 *    (jsf_sframe_find, the unwinder's decoder of ELF .sframe sections) at
 *    addresses around its functions;
 *  - starts with "PERFILE2": the whole input is the file;
 *  - anything else: a valid file header and one attribute (the sample
 *    format `jitsframe record` uses: IP|TID|TIME|CALLCHAIN|REGS_USER|
 *    STACK_USER, sample_id_all, all user registers) are made up, and the
 *    input is the data section (the records), so that mutations reach the
 *    record parsers. The first input byte picks a few format variations.
 *
 * MMAP file names are replaced by "//anon" before the unwinder sees them
 * (no files are opened). Oracles besides "no crash, no sanitizer report,
 * no leak": pd_each returns 0 or -EBADMSG with a message; every event's
 * pointers lie inside the input; frames come back within UW_MAX.
 */
#include "jitsframe.h"
#include "perfdata.h"
#include "unwind.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char *g_lo, *g_hi;

static void in_input(const void *p, uint64_t n, const char *what)
{
	const unsigned char *c = p;
	if (!n)
		return;
	if (c < g_lo || c > g_hi || n > (uint64_t)(g_hi - c)) {
		fprintf(stderr, "oracle: %s outside the input\n", what);
		abort();
	}
}

struct fctx {
	struct uwstate *u;
	struct uframe fr[UW_MAX];
	uint64_t sum;
};

static int cb(const struct pd_event *e, void *ctx)
{
	struct fctx *f = ctx;
	struct pd_event c = *e;
	switch (e->kind) {
	case PD_SAMPLE: {
		const struct pd_sample *s = &e->u.s;
		in_input(s->callchain, s->nr_callchain * 8, "callchain");
		in_input(s->stack, s->stack_size, "stack");
		if (s->regs_abi)
			in_input(
			    s->regs,
			    8 * (uint64_t)__builtin_popcountll(s->regs_mask),
			    "regs");
		for (uint64_t i = 0; i < s->stack_size; i++)
			f->sum += s->stack[i];
		break;
	}
	case PD_MMAP:
		in_input(e->u.m.filename, strlen(e->u.m.filename) + 1,
			 "filename");
		c.u.m.filename = "//anon";
		break;
	case PD_COMM:
		in_input(e->u.comm.comm, strlen(e->u.comm.comm) + 1, "comm");
		break;
	default:
		break;
	}
	enum stop_reason why;
	const char *comm;
	int n = uw_event(f->u, &c, f->fr, &why, &comm);
	if (n > UW_MAX || (e->kind == PD_SAMPLE && (n < 0 || why >= STOP__N))) {
		fprintf(stderr, "oracle: uw_event returned %d\n", n);
		abort();
	}
	return 0;
}

static void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	unsigned char *buf;
	size_t blen;
	if (len >= 4 && !memcmp(data, "SFRM", 4)) {
		/* a copy of exactly the section, so ASan sees any overread */
		unsigned char *sec = malloc(len - 4 ? len - 4 : 1);
		if (!sec)
			return 0;
		memcpy(sec, data + 4, len - 4);
		for (uint64_t va = 0x1000; va < 0x1000 + 4 * 256; va += 7) {
			struct jsf_row r;
			uint64_t fs = 0;
			uint32_t fsz = 0, rend = 0;
			int k = jsf_sframe_find(sec, len - 4, 0x1000, va, &fs,
						&fsz, &rend, &r);
			if (k == 0 && (fs > va || va - fs >= fsz ||
				       rend <= va - fs || rend > fsz)) {
				fprintf(stderr,
					"oracle: sframe row does not cover\n");
				abort();
			}
		}
		free(sec);
		return 0;
	}
	if (len >= 8 && !memcmp(data, "PERFILE2", 8)) {
		buf = malloc(len ? len : 1);
		if (!buf)
			return 0;
		memcpy(buf, data, len);
		blen = len;
	} else {
		uint8_t v = len ? data[0] : 0;
		if (len)
			data++, len--;
		size_t hsz = 104, asz = 128 + 16;
		blen = hsz + asz + len;
		buf = calloc(1, blen);
		if (!buf)
			return 0;
		memcpy(buf, "PERFILE2", 8);
		put64(buf + 8, hsz);
		put64(buf + 16, asz);
		put64(buf + 24, hsz);
		put64(buf + 32, asz);
		put64(buf + 40, hsz + asz);
		put64(buf + 48, len);
		unsigned char *a = buf + hsz;
		uint32_t t = 1, s = 128;
		memcpy(a, &t, 4);
		memcpy(a + 4, &s, 4);
		uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			      PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |
			      PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		if (v & 1)
			st |= PERF_SAMPLE_ID | PERF_SAMPLE_CPU |
			      PERF_SAMPLE_PERIOD;
		if (v & 2)
			st |= PERF_SAMPLE_READ | PERF_SAMPLE_RAW;
		if (v & 4)
			st |= PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_BRANCH_STACK;
		put64(a + 16, 999);
		put64(a + 24, st);
		put64(a + 32, v & 8 ? PERF_FORMAT_GROUP | PERF_FORMAT_ID : 0);
		put64(a + 40, (1ull << 18) | (1ull << 10));
		put64(a + 80, v & 16 ? 0x1c0 : 0xff0fff);
		memcpy(buf + hsz + asz, data, len);
	}
	g_lo = buf;
	g_hi = buf + blen;
	struct perfdata *pd;
	char err[256];
	if (pd_open_mem(&pd, buf, blen, err, sizeof(err)) == 0) {
		struct fctx *f = calloc(1, sizeof(*f));
		if (f && (f->u = uw_new(NULL, NULL))) {
			err[0] = 0;
			int r = pd_each(pd, cb, f, err, sizeof(err));
			if (r && (r != -EBADMSG || !err[0]) && r != -ENOMEM) {
				fprintf(stderr, "oracle: pd_each returned %d\n",
					r);
				abort();
			}
			uw_free(f->u);
		}
		free(f);
		pd_close(pd);
	}
	free(buf);
	return 0;
}
