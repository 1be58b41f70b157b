/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the jitdump reader (perfmap/jdread.c, jd_loads): a
 * record directory's jit-PID.dump is a file anyone could have written, and
 * report and record read it back to name trace frames.
 *
 * Input modes (first byte):
 *  'W': the rest is the whole file;
 *  anything else: the rest is a recipe, so that mutations reach the
 *       records: a valid file header, then per 12 input bytes one record
 *       (a CODE_LOAD, a DEBUG_INFO with 0-3 entries, or another id; its
 *       total_size declared true, short, long or wild; names with or
 *       without their NUL) and the file cut at the end of a record or
 *       inside one.
 *
 * Oracles, besides "no crash, no sanitizer report, no leak": a second
 * reader written here from perf's jitdump specification
 * (tools/perf/Documentation/jitdump-specification.txt) as jdread.c
 * documents its choices (records up to the first torn one; a total_size
 * under 16 or over 64 MiB is damage, -EBADMSG after the loads before it;
 * a CODE_LOAD's name must end inside its record; a DEBUG_INFO's first and
 * last entry give the code's range to the CODE_LOAD that follows it)
 * reads the same bytes from memory: the two return the same value and see
 * the same loads in the same order, field by field.
 */
#include "jitdump.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct load {
	uint32_t pid;
	uint64_t index, ts, code_addr, code_size, lo, hi;
	char name[64]; /* the first 63 bytes: enough to tell them apart */
	size_t namelen;
};

struct loads {
	struct load v[512];
	int n, over;
};

static void keep(struct loads *s, uint32_t pid, uint64_t index, uint64_t ts,
		 uint64_t addr, uint64_t size, uint64_t lo, uint64_t hi,
		 const char *name)
{
	if (s->n == (int)(sizeof(s->v) / sizeof(s->v[0]))) {
		s->over++;
		return;
	}
	struct load *l = &s->v[s->n++];
	l->pid = pid;
	l->index = index;
	l->ts = ts;
	l->code_addr = addr;
	l->code_size = size;
	l->lo = lo;
	l->hi = hi;
	l->namelen = strlen(name); /* ASan: must end inside the record */
	snprintf(l->name, sizeof(l->name), "%s", name);
}

static void take(const struct jd_load *l, void *ctx)
{
	keep(ctx, l->pid, l->index, l->ts, l->code_addr, l->code_size, l->lo,
	     l->hi, l->name);
}

static uint64_t u64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint32_t u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* The second reader: the file's bytes in memory. */
static int second(const uint8_t *d, size_t n, struct loads *s)
{
	/* magic, version, total_size (>= 40), elf_mach, pad1, pid, timestamp
	 * (the fields jdread.c reads: 36 bytes; flags need not be there) */
	if (n < 36 || u32(d) != 0x4A695444 || u32(d + 8) < 40)
		return -EBADMSG;
	size_t at = u32(d + 8);
	int count = 0;
	uint64_t lo = 0, hi = 0;
	while (at <= n && n - at >= 8) {
		uint32_t id = u32(d + at), total = u32(d + at + 4);
		if (total < 16 || total > (64u << 20))
			return -EBADMSG;
		if (n - at < total)
			break;		       /* torn */
		const uint8_t *p = d + at + 8; /* the payload: timestamp on */
		size_t len = total - 8;
		if (id == 2 && total >= 8 + 24) {
			uint64_t nr = u64(p + 16);
			size_t off = 24;
			lo = hi = 0;
			for (uint64_t i = 0; i < nr && off + 16 < len; i++) {
				uint64_t a = u64(p + off);
				if (i == 0)
					lo = a;
				hi = a + 1;
				const uint8_t *z =
				    memchr(p + off + 16, 0, len - off - 16);
				if (!z)
					break;
				off = (size_t)(z - p) + 1;
			}
		}
		if (id == 0 && total >= 8 + 48 + 1) {
			uint64_t addr = u64(p + 24), size = u64(p + 32);
			uint64_t l0 = lo ? lo : addr,
				 h0 = lo ? hi : addr + size;
			lo = hi = 0;
			if (memchr(p + 48, 0, len - 48)) {
				keep(s, u32(p + 8), u64(p + 40), u64(p), addr,
				     size, l0, h0, (const char *)p + 48);
				count++;
			}
		}
		at += total;
	}
	return count;
}

/* The file a recipe describes (the input after its first byte). */
static uint8_t *from_recipe(const uint8_t *r, size_t n, size_t *flen)
{
	size_t cap = 40 + (n / 12 + 1) * 512; /* a record: 8 + 200 + 255 */
	uint8_t *f = calloc(1, cap);
	if (!f)
		abort();
	uint32_t hdr[10] = {0x4A695444, 1, 40, 62, 0, 4242, 0, 0, 0, 0};
	memcpy(f, hdr, 40);
	size_t o = 40, cut = 0;
	for (size_t i = 0; i + 12 <= n; i += 12) {
		const uint8_t *q = r + i;
		uint8_t rec[200] = {0};
		uint32_t id = q[0] % 5 == 0 ? 2 : q[0] % 5 == 1 ? 4 : 0;
		uint64_t ts = q[1], addr = 0x7f0000000000ull + q[2] * 0x100u;
		size_t len; /* payload bytes */
		memcpy(rec, &ts, 8);
		if (id == 2) { /* code_addr, nr_entry, entries */
			uint64_t nr = q[3] % 4;
			memcpy(rec + 8, &addr, 8);
			memcpy(rec + 16, &nr, 8);
			len = 24;
			for (uint64_t e = 0; e < nr; e++) {
				uint64_t a = addr + q[4 + e] % 64;
				uint32_t line = q[7 + e];
				memcpy(rec + len, &a, 8);
				memcpy(rec + len + 8, &line, 4);
				len += 16;
				len += (size_t)snprintf((char *)rec + len, 16,
							"f%u.lua", q[10] % 7);
				if (!(q[11] & 1 << e))
					len++; /* its NUL (else: none) */
			}
		} else { /* pid, tid, vma, code_addr, code_size, index, name */
			uint32_t pid = 4242;
			uint64_t size = q[3] % 200, index = q[4];
			memcpy(rec + 8, &pid, 4);
			memcpy(rec + 12, &pid, 4);
			memcpy(rec + 16, &addr, 8);
			memcpy(rec + 24, &addr, 8);
			memcpy(rec + 32, &size, 8);
			memcpy(rec + 40, &index, 8);
			len = 48 + (size_t)snprintf((char *)rec + 48, 64,
						    "TRACE_%u::f%u.lua:%u",
						    q[5], q[6] % 7, q[7]);
			if (!(q[11] & 1))
				len++;
			len += q[8] % 16; /* code bytes (zeros) */
		}
		uint32_t total = (uint32_t)(8 + len);
		switch (q[9] % 8) { /* the declared size */
		case 5:
			total = total > 4 ? total - 4 : 0;
			break;
		case 6:
			total += q[10];
			break;
		case 7:
			total = (uint32_t)q[10] << (q[11] % 32);
			break;
		default:
			break;
		}
		memcpy(f + o, &id, 4);
		memcpy(f + o + 4, &total, 4);
		memcpy(f + o + 8, rec, len);
		o += 8 + len;
		if (q[9] % 8 == 6)
			o += q[10]; /* the bytes it says it has (zeros) */
		if (q[10] == 0xff)
			cut = o - (q[11] % (8 + len)); /* cut in this record */
	}
	*flen = cut && cut < o ? cut : o;
	return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	if (n == 0 || n > (1u << 20))
		return 0;
	uint8_t *made = NULL;
	if (d[0] == 'W') {
		d++;
		n--;
	} else {
		made = from_recipe(d + 1, n - 1, &n);
		d = made;
	}
	int fd = memfd_create("fuzz_jitdump", MFD_CLOEXEC);
	if (fd < 0 || (n && write(fd, d, n) != (ssize_t)n))
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	static struct loads a, b;
	a.n = a.over = b.n = b.over = 0;
	int ra = jd_loads(path, take, &a);
	int rb = second(d, n, &b);
	if (ra != rb || a.n != b.n || a.over != b.over) {
		fprintf(stderr,
			"oracle: jd_loads %d (%d loads), second %d (%d)\n", ra,
			a.n, rb, b.n);
		abort();
	}
	for (int i = 0; i < a.n; i++) {
		const struct load *x = &a.v[i], *y = &b.v[i];
		if (x->pid != y->pid || x->index != y->index ||
		    x->ts != y->ts || x->code_addr != y->code_addr ||
		    x->code_size != y->code_size || x->lo != y->lo ||
		    x->hi != y->hi || x->namelen != y->namelen ||
		    strcmp(x->name, y->name)) {
			fprintf(stderr, "oracle: load %d differs: %s / %s\n", i,
				x->name, y->name);
			abort();
		}
	}
	close(fd);
	free(made);
	return 0;
}
