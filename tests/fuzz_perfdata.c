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
 * pointers lie inside the input; frames come back within UW_MAX; the
 * input as a file (pd_open, pd_each_restart) gives the same events,
 * result and message as the buffer (pd_open_mem, pd_each).
 */
#include "jitsframe.h"
#include "perfdata.h"
#include "unwind.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* Oracle: the input as a file through pd_open (read with pread, in one
 * pass by pd_each_restart where it can, else pd_each's two) gives what
 * pd_open_mem's pd_each does: the same events (a digest of each, the
 * whole stack copy read through pd_stack_need), result and message. */
struct dig {
	uint64_t *h;
	size_t n, cap;
	int oom;
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ull;
	return h;
}

#define MIXV(h, v)                               \
	do {                                     \
		uint64_t v_ = (uint64_t)(v);     \
		(h) = mix((h), &v_, sizeof(v_)); \
	} while (0)

static int dcb(const struct pd_event *e, void *ctx)
{
	struct dig *d = ctx;
	uint64_t h = 0xcbf29ce484222325ull;
	MIXV(h, e->kind);
	MIXV(h, e->time);
	switch (e->kind) {
	case PD_SAMPLE: {
		const struct pd_sample *s = &e->u.s;
		MIXV(h, s->pid);
		MIXV(h, s->tid);
		MIXV(h, s->time);
		MIXV(h, s->ip);
		MIXV(h, s->nr_callchain);
		h = mix(h, s->callchain, s->nr_callchain * 8);
		MIXV(h, s->regs_abi);
		MIXV(h, s->regs_mask);
		if (s->regs_abi)
			h = mix(h, s->regs,
				8 * (size_t)__builtin_popcountll(s->regs_mask));
		MIXV(h, s->stack_size);
		if (s->stack_size && pd_stack_need(s, s->stack_size)) {
			fprintf(stderr, "oracle: stack copy not readable\n");
			abort();
		}
		h = mix(h, s->stack, s->stack_size);
		break;
	}
	case PD_MMAP: {
		const struct pd_mmap *m = &e->u.m;
		MIXV(h, m->pid);
		MIXV(h, m->tid);
		MIXV(h, m->start);
		MIXV(h, m->len);
		MIXV(h, m->pgoff);
		MIXV(h, m->prot);
		MIXV(h, m->has_build_id);
		MIXV(h, m->build_id_size);
		h = mix(h, m->build_id, sizeof(m->build_id));
		h = mix(h, m->filename, strlen(m->filename));
		MIXV(h, m->time);
		break;
	}
	case PD_COMM:
		MIXV(h, e->u.comm.pid);
		MIXV(h, e->u.comm.tid);
		MIXV(h, e->u.comm.exec);
		h = mix(h, e->u.comm.comm, strlen(e->u.comm.comm));
		break;
	case PD_FORK:
	case PD_EXIT:
		MIXV(h, e->u.fork.pid);
		MIXV(h, e->u.fork.ppid);
		MIXV(h, e->u.fork.tid);
		MIXV(h, e->u.fork.ptid);
		break;
	}
	if (d->n == d->cap) {
		size_t nc = d->cap ? 2 * d->cap : 64;
		uint64_t *nh = realloc(d->h, nc * sizeof(*nh));
		if (!nh) {
			d->oom = 1;
			return -ENOMEM;
		}
		d->h = nh;
		d->cap = nc;
	}
	d->h[d->n++] = h;
	return 0;
}

static void dreset(void *ctx)
{
	((struct dig *)ctx)->n = 0;
}

static void same_as_file(const unsigned char *buf, size_t blen)
{
	int fd = memfd_create("fuzz_perfdata", MFD_CLOEXEC);
	if (fd < 0)
		return;
	for (size_t o = 0; o < blen;) {
		ssize_t k = write(fd, buf + o, blen - o);
		if (k <= 0) {
			close(fd);
			return;
		}
		o += (size_t)k;
	}
	char path[64], e1[256] = "", e2[256] = "";
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct perfdata *pm, *pf;
	int om = pd_open_mem(&pm, buf, blen, e1, sizeof(e1));
	int of = pd_open(&pf, path, e2, sizeof(e2));
	if ((om == 0) != (of == 0) || (om && strcmp(e1, e2))) {
		fprintf(stderr,
			"oracle: pd_open %d (%s), pd_open_mem %d (%s)\n", of,
			e2, om, e1);
		abort();
	}
	if (!om) {
		struct dig d1 = {0}, d2 = {0};
		e1[0] = e2[0] = 0;
		int r1 = pd_each(pm, dcb, &d1, e1, sizeof(e1));
		int r2 = pd_each_restart(pf, dcb, dreset, &d2, e2, sizeof(e2));
		if (!d1.oom && !d2.oom &&
		    (r1 != r2 || strcmp(e1, e2) || d1.n != d2.n ||
		     (d1.n && memcmp(d1.h, d2.h, d1.n * sizeof(*d1.h))))) {
			fprintf(stderr,
				"oracle: pd_each_restart of the file: %d (%s), "
				"%zu events; pd_each of the buffer: %d (%s), "
				"%zu events\n",
				r2, e2, d2.n, r1, e1, d1.n);
			abort();
		}
		free(d1.h);
		free(d2.h);
		pd_close(pm);
		pd_close(pf);
	}
	close(fd);
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
	same_as_file(buf, blen);
	free(buf);
	return 0;
}
