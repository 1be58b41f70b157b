/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the kallsyms reader (unwind/ksyms.c) on hostile
 * input: a kallsyms copy in a record directory is a file anyone could
 * have written. The input is the file, or (first byte 0xff) the recipe
 * of one in perf's layout: each 4 input bytes a line (an address step, a
 * type, a name's length, a module suffix or a stray byte), so that files
 * of hundreds of lines, whose in-place search runs through its line
 * index, are common. It is read twice, by the two ways
 * ksyms.c has: as a regular file (a memfd: searched in place through its
 * line index when it is in perf's layout, else parsed whole) and as a
 * pipe (not a regular file: always parsed whole and sorted). Oracles
 * besides "no crash, no sanitizer report, no leak": both answer every
 * address alike (the same name or none), the addresses asked being each
 * line's own (its first 16 bytes as hex, when they are), one below and
 * one above, and the ends of the address space; a name is "symbol_[k]".
 * Then, searched in place, the file trimmed to what was asked (ksyms_trim,
 * as record does) answers every one of those addresses alike too.
 */
#include "ksyms.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int hexv(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* A ksyms on a fresh file of the input: a memfd (regular) or a pipe. */
static struct ksyms *open_as(const uint8_t *d, size_t n, int pipe_, int *fd_out)
{
	char path[64];
	int fd;
	if (pipe_) {
		int p[2];
		if (pipe2(p, O_CLOEXEC))
			abort();
		/* the whole input must fit in the pipe: no writer thread */
		if (fcntl(p[1], F_SETPIPE_SZ, 1 << 20) < (int)n + 1 ||
		    write(p[1], d, n) != (ssize_t)n)
			abort();
		close(p[1]);
		fd = p[0];
	} else {
		fd = memfd_create("fuzz_ksyms", MFD_CLOEXEC);
		if (fd < 0 || write(fd, d, n) != (ssize_t)n)
			abort();
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	*fd_out = fd;
	struct ksyms *k = ksyms_new(path);
	if (!k)
		abort();
	return k;
}

static void same(struct ksyms *a, struct ksyms *b, uint64_t addr)
{
	const char *x = ksym_name(a, addr), *y = ksym_name(b, addr);
	if (!x != !y || (x && strcmp(x, y))) {
		fprintf(stderr, "oracle: 0x%llx: %s (first), %s (second)\n",
			(unsigned long long)addr, x ? x : "(none)",
			y ? y : "(none)");
		abort();
	}
	size_t l = x ? strlen(x) : 0;
	if (x && (l < 4 || strcmp(x + l - 4, "_[k]"))) {
		fprintf(stderr, "oracle: 0x%llx: name %s\n",
			(unsigned long long)addr, x);
		abort();
	}
}

/* Both answer alike every line's own address (its first 16 bytes as hex,
 * when they are), one below and one above (4,096 lines at most). */
static void ask_all(struct ksyms *a, struct ksyms *b, const uint8_t *d,
		    size_t n)
{
	unsigned asked = 0;
	for (size_t i = 0; i + 16 <= n && asked < 4096; i++) {
		if (i && d[i - 1] != '\n')
			continue;
		uint64_t v = 0;
		size_t j = 0;
		for (; j < 16 && hexv(d[i + j]) >= 0; j++)
			v = v << 4 | (uint64_t)hexv(d[i + j]);
		if (j < 16)
			continue;
		same(a, b, v);
		same(a, b, v - 1);
		same(a, b, v + 1);
		asked++;
	}
}

/* The file a recipe (the input after its 0xff) describes; *len its size. */
static uint8_t *from_recipe(const uint8_t *r, size_t n, size_t *len)
{
	static const char types[] = "tTtTtTdDbrA";
	size_t cap = n / 4 * 64 + 1;
	char *f = malloc(cap);
	if (!f)
		abort();
	size_t o = 0;
	uint64_t a = 0xffffffff81000000ull;
	for (size_t i = 0; i + 4 <= n; i += 4) {
		const uint8_t *q = r + i;
		a += q[0] & 0x80 ? 0 : (uint64_t)q[0] << (q[1] >> 6 << 2);
		int w = snprintf(f + o, cap - o, "%016llx %c s%zu_%.*s%s",
				 (unsigned long long)(q[3] == 0xfe ? 0 : a),
				 types[(q[1] & 0x3f) % (sizeof(types) - 1)],
				 i / 4, q[2] % 24, "abcdefghijklmnopqrstuvwx",
				 q[3] % 13 == 0 ? "\t[mod]" : "");
		o += (size_t)w;
		if (q[3] == 0xfd && o) /* a stray byte where the line ends */
			f[o - 1] = (char)q[2];
		f[o++] = '\n';
	}
	*len = o;
	return (uint8_t *)f;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	if (n > (512u << 10))
		return 0;
	uint8_t *made = NULL;
	if (n && d[0] == 0xff) {
		made = from_recipe(d + 1, n - 1, &n);
		d = made;
	}
	int fa, fb;
	struct ksyms *a = open_as(d, n, 0, &fa), *b = open_as(d, n, 1, &fb);
	same(a, b, 0);
	same(a, b, UINT64_MAX);
	ask_all(a, b, d, n);
	/* the trimmed copy (in place only): every address asked gives what
	 * the whole file gave (kept, or none then and now) */
	static char out[64];
	if (!out[0]) {
		char dir[] = "/tmp/fuzz_ksyms-XXXXXX";
		if (!mkdtemp(dir))
			abort();
		snprintf(out, sizeof(out), "%s/trimmed", dir);
	}
	if (ksyms_trim(a, out) == 0) {
		struct ksyms *t = ksyms_new(out);
		if (!t)
			abort();
		same(a, t, 0);
		same(a, t, UINT64_MAX);
		ask_all(a, t, d, n);
		ksyms_free(t);
	}
	ksyms_free(a);
	ksyms_free(b);
	close(fa);
	close(fb);
	free(made);
	return 0;
}
