/* SPDX-License-Identifier: MIT */
/* Kernel frames of perf's sample callchains, named from /proc/kallsyms
 * (read once; the recording's own copy that perf record keeps in the
 * record directory's build-id cache when there is one, else this
 * machine's, when readable with real addresses). Names carry the folded
 * stacks' kernel suffix "_[k]".
 *
 * A regular file in perf's own layout (every line "16 lowercase hex
 * digits, a space, ...", addresses never decreasing: what perf record
 * copies) is mapped (populated in one go) and searched in place: one
 * pass checks the lines (their ends found from each 64-byte block's
 * newline bits, not by a memchr from each line's start, and read 2 KB
 * ahead: a 5.4 MB copy's load from cold caches 1.27 -> 0.90 ms, median
 * of 41),
 * keeping the address and start of every
 * KSYM_STEP-th (a ~2,000-entry index); a lookup bisects the index, goes
 * on line by line (KSYM_STEP at most) to the first line above the
 * address and walks back to the nearest text symbol, and the names asked
 * for are made once each. The same symbol as the full parse (which is
 * kept for /proc/kallsyms and any other layout) at a tenth of the cost.
 * (The lookups bisected the file's bytes before: ~23 steps into lines
 * that the report's reads have pushed out of the caches by then, each a
 * memrchr and a memcmp; ~630 lookups in the bench's recording.) */
#include "ksyms.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { KSYM_MEMO = 1024, KSYM_STEP = 64 };
#define KSYM_NONAME UINT32_MAX /* a stop marker's entry (full parse) */

/* in place: a line's address as hex16 reads it, and its start */
struct kidx {
	uint64_t v[2];
	size_t line;
};

struct ksym {
	uint64_t addr;
	uint32_t name; /* offset in names */
};

/* a name made for the in-place search, by its line */
struct kname {
	uint32_t line; /* its start's offset + 1; 0: empty slot */
	char *name;
};

struct ksyms {
	struct ksym *k;
	size_t n;
	char *names; /* "name_[k]\0" strings, one arena */
	int loaded;
	char *path;
	/* in place: the mapped file, the names made */
	const char *map;
	size_t map_len;
	struct kidx *ix; /* every KSYM_STEP-th line's start */
	size_t ix_n;
	struct kname *kn;
	size_t kn_cap, kn_n;
	/* the last answers, by address: a callchain's kernel frames are the
	 * same few return addresses sample after sample */
	struct {
		uint64_t addr;
		const char *name;
		int set;
	} memo[KSYM_MEMO];
};

struct ksyms *ksyms_new(const char *path)
{
	struct ksyms *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->path = strdup(path ? path : "/proc/kallsyms");
	if (!k->path) {
		free(k);
		return NULL;
	}
	return k;
}

static int kcmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* p[0..16) lowercase hex digits? Then *v is their big-endian value as
 * two words (compared as the text is: same width, '0' < ... < 'f').
 * Inlined: it is most of load_in_place's loop, and the lookups call it
 * too. */
static inline __attribute__((always_inline)) int hex16(const char *p,
						       uint64_t v[2])
{
	uint64_t x, y;
	memcpy(&x, p, 8);
	memcpy(&y, p + 8, 8);
	/* every byte in '0'..'9' or 'a'..'f', both words at once */
	const uint64_t ones = 0x0101010101010101ull,
		       high = 0x8080808080808080ull;
	uint64_t xh = x | high, yh = y | high;
	uint64_t okx = ((xh - ones * '0') & ~(xh - ones * ('9' + 1))) |
		       ((xh - ones * 'a') & ~(xh - ones * ('f' + 1)));
	uint64_t oky = ((yh - ones * '0') & ~(yh - ones * ('9' + 1))) |
		       ((yh - ones * 'a') & ~(yh - ones * ('f' + 1)));
	if (((okx & oky) & high) != high || ((x | y) & high))
		return 0;
	v[0] = __builtin_bswap64(x);
	v[1] = __builtin_bswap64(y);
	return 1;
}

/* a <= b, as hex16's values (the text's order) */
static int hex_le(const uint64_t a[2], const uint64_t b[2])
{
	return a[0] < b[0] || (a[0] == b[0] && a[1] <= b[1]);
}

/* The start of the line after the first '\n' in b[j, len) (len: none) */
static size_t next_line(const char *b, size_t j, size_t len)
{
	const char *p = memchr(b + j, '\n', len - j);
	return p ? (size_t)(p - b) + 1 : len;
}

#ifdef __SSE2__
/* The '\n' bytes of p[0, 64) as bits */
static inline uint64_t nl_bits(const char *p)
{
	const __m128i nl = _mm_set1_epi8('\n');
	uint64_t m = 0;
	for (int k = 0; k < 4; k++) {
		__m128i v = _mm_loadu_si128(
		    (const __m128i *)(const void *)(p + 16 * k));
		m |=
		    (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl))
		    << (16 * k);
	}
	return m;
}
#endif

/* The line at b + i (room bytes to its end or the file's): in perf's
 * layout (16 lowercase hex digits and a space), its address not below the
 * one before (prev, then its own); every KSYM_STEP-th line (*nl counts
 * them) goes into the index. 0 if it is not such a line. */
static inline __attribute__((always_inline)) int
take_line(struct ksyms *ks, const char *b, size_t i, size_t room,
	  uint64_t prev[2], size_t *nl, size_t ix_cap)
{
	uint64_t cur[2];
	if (room < 17 || b[i + 16] != ' ' || !hex16(b + i, cur) ||
	    !hex_le(prev, cur))
		return 0;
	prev[0] = cur[0];
	prev[1] = cur[1];
	if (*nl % KSYM_STEP == 0 && ks->ix_n < ix_cap)
		ks->ix[ks->ix_n++] = (struct kidx){{cur[0], cur[1]}, i};
	(*nl)++;
	return 1;
}

/* Map a regular file in perf's layout and index its lines; 0 if it is
 * not one (then the full parse reads it). */
static int load_in_place(struct ksyms *ks)
{
	int fd = open(ks->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat sb;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_size < 17 ||
	    (uint64_t)sb.st_size >= UINT32_MAX) {
		close(fd);
		return 0;
	}
	size_t len = (size_t)sb.st_size;
	void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return 0;
	const char *b = m;
	/* a line has >= 18 bytes ("16 digits, a space, \n" at the least) */
	size_t ix_cap = len / 18 / KSYM_STEP + 2, nl = 0;
	ks->ix = malloc(ix_cap * sizeof(*ks->ix));
	if (!ks->ix)
		goto no;
	ks->ix_n = 0;
	uint64_t prev[2] = {0, 0};
	size_t i = 0; /* the next line to check starts here */
#ifdef __SSE2__
	/* the lines that end in a whole 64-byte block, found through the
	 * block's newlines (its loads do not wait for the line before's
	 * end, as a memchr from each line's start does: that was most of
	 * the pass), checked by take_line, as the lines after them: a
	 * newline in a line's first 17 bytes is one take_line finds in its
	 * 16 digits or their space */
	for (size_t bb = 0; len - bb >= 64; bb += 64) {
		/* the file is in no cache by now: its lines 2 KB on asked
		 * for, across the pages the hardware's prefetch stops at (a
		 * cold load 1.00 -> 0.90 ms) */
		if (len - bb > 2048)
			__builtin_prefetch(b + bb + 2048);
		uint64_t nm = nl_bits(b + bb);
		while (nm) {
			size_t e = bb + (size_t)__builtin_ctzll(nm);
			nm &= nm - 1;
			if (!take_line(ks, b, i, e - i, prev, &nl, ix_cap))
				goto no;
			i = e + 1;
		}
	}
#endif
	while (i < len) {
		if (!take_line(ks, b, i, len - i, prev, &nl, ix_cap))
			goto no;
		i = next_line(b, i + 17, len);
	}
	ks->map = b;
	ks->map_len = len;
	return 1;
no:
	free(ks->ix);
	ks->ix = NULL;
	ks->ix_n = 0;
	munmap(m, len);
	return 0;
}

/* In place: the end of the line that starts at st (its '\n', or the end
 * of the file), and the start of the line before the one at st (> 0). */
static size_t line_end(const struct ksyms *ks, size_t st)
{
	const char *nl = memchr(ks->map + st, '\n', ks->map_len - st);
	return nl ? (size_t)(nl - ks->map) : ks->map_len;
}

static size_t line_before(const struct ksyms *ks, size_t st)
{
	const char *nl = memrchr(ks->map, '\n', st - 1);
	return nl ? (size_t)(nl - ks->map) + 1 : 0;
}

/* Is name[0, n) the name of a trimmed copy's stop marker? */
static int is_stop(const char *name, size_t n)
{
	return n == sizeof(KSYM_STOP) - 1 && !memcmp(name, KSYM_STOP, n);
}

/* The line at st as the full parse reads it: its name [*n0, *n1) if it
 * gives a symbol (1), a trimmed copy's stop marker (-1), else 0. */
static int line_sym(const struct ksyms *ks, size_t st, size_t *n0, size_t *n1)
{
	size_t end = line_end(ks, st);
	const char *b = ks->map;
	size_t i = st + 16;
	char type = i + 3 < end ? b[i + 1] : 0;
	if (!memcmp(b + st, "0000000000000000", 16) ||
	    (type != 't' && type != 'T'))
		return 0;
	size_t a = i + 3, e = a;
	while (e < end && b[e] != '\t' && b[e] != ' ' && b[e])
		e++; /* (a NUL ends a name too: it would end the string) */
	if (e <= a || e - a > 255)
		return 0;
	*n0 = a;
	*n1 = e;
	return is_stop(b + a, e - a) ? -1 : 1;
}

static const char *name_in_place(struct ksyms *ks, uint64_t addr)
{
	char key[17];
	snprintf(key, sizeof(key), "%016llx", (unsigned long long)addr);
	uint64_t kv[2] = {0, 0}; /* (hex16 reads any key: 16 digits) */
	hex16(key, kv);
	/* lo: the start of the first line above addr, or the end (the
	 * lines are sorted: load_in_place checked). The index's last line
	 * at or below addr (bisected: a few KB, not the file's scattered
	 * lines), then on from it, line by line: KSYM_STEP at most. */
	size_t a = 0, z = ks->ix_n;
	while (a < z) {
		size_t m = a + (z - a) / 2;
		if (hex_le(ks->ix[m].v, kv))
			a = m + 1;
		else
			z = m;
	}
	size_t lo = 0;
	if (a) {
		lo = ks->ix[a - 1].line;
		uint64_t v[2];
		while (lo < ks->map_len && hex16(ks->map + lo, v) &&
		       hex_le(v, kv))
			lo = next_line(ks->map, lo + 17, ks->map_len);
	}
	/* back from the first line above addr to a symbol's */
	size_t n0 = 0, n1 = 0, st = lo;
	int sym;
	do {
		if (!st)
			return NULL;
		st = line_before(ks, st);
	} while (!(sym = line_sym(ks, st, &n0, &n1)));
	if (sym < 0) /* beyond what a trimmed copy kept */
		return NULL;
	uint32_t id = (uint32_t)st + 1;
	if (2 * (ks->kn_n + 1) > ks->kn_cap) {
		size_t nc = ks->kn_cap ? 2 * ks->kn_cap : 256;
		struct kname *t = calloc(nc, sizeof(*t));
		if (!t)
			return NULL;
		for (size_t j = 0; j < ks->kn_cap; j++) {
			if (!ks->kn[j].line)
				continue;
			size_t h = (ks->kn[j].line * 2654435761u) & (nc - 1);
			while (t[h].line)
				h = (h + 1) & (nc - 1);
			t[h] = ks->kn[j];
		}
		free(ks->kn);
		ks->kn = t;
		ks->kn_cap = nc;
	}
	size_t h = (id * 2654435761u) & (ks->kn_cap - 1);
	while (ks->kn[h].line && ks->kn[h].line != id)
		h = (h + 1) & (ks->kn_cap - 1);
	if (ks->kn[h].line)
		return ks->kn[h].name;
	char *nm = malloc(n1 - n0 + 5);
	if (!nm)
		return NULL;
	memcpy(nm, ks->map + n0, n1 - n0);
	memcpy(nm + (n1 - n0), "_[k]", 5);
	ks->kn[h].line = id;
	ks->kn[h].name = nm;
	ks->kn_n++;
	return nm;
}

/* /proc/kallsyms, whole, parsed by hand: "ADDR TYPE NAME[\t[MODULE]]\n"
 * lines, ~200,000 of them (fscanf made this the report's largest cost). */
static void load(struct ksyms *ks)
{
	ks->loaded = 1;
	if (load_in_place(ks))
		return;
	FILE *f = fopen(ks->path, "r");
	if (!f)
		return;
	size_t len = 0, cap = 1 << 22;
	char *buf = malloc(cap);
	while (buf) {
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (len < cap)
			break;
		char *nb = realloc(buf, cap * 2);
		if (!nb) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = nb;
		cap *= 2;
	}
	fclose(f);
	if (!buf)
		return;
	/* the arena: a line of >= 5 bytes ("A t N\n") gives at most one
	 * more ("N_[k]\0"), so len + len / 2 always holds every name */
	size_t kcap = 0, nlen = 0;
	ks->names = malloc(len + len / 2 + 16);
	for (size_t i = 0; ks->names && i < len;) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - buf) : len, st = i;
		uint64_t a = 0;
		int h;
		while (i < end && (h = hexval(buf[i])) >= 0)
			a = a << 4 | (uint64_t)h, i++;
		char type = i + 3 < end && buf[i] == ' ' ? buf[i + 1] : 0;
		size_t n0 = i + 3, n1 = n0;
		i = end + 1;
		if (!a || (type != 't' && type != 'T') || n0 == st + 3)
			continue;
		while (n1 < end && buf[n1] != '\t' && buf[n1] != ' ' && buf[n1])
			n1++;
		if (n1 <= n0 || n1 - n0 > 255)
			continue;
		bool stop = is_stop(buf + n0, n1 - n0);
		if (ks->n == kcap) {
			size_t nc = kcap ? 2 * kcap : 65536;
			struct ksym *k = realloc(ks->k, nc * sizeof(*k));
			if (!k)
				break;
			ks->k = k;
			kcap = nc;
		}
		ks->k[ks->n++] =
		    (struct ksym){a, stop ? KSYM_NONAME : (uint32_t)nlen};
		if (stop)
			continue;
		memcpy(ks->names + nlen, buf + n0, n1 - n0);
		memcpy(ks->names + nlen + (n1 - n0), "_[k]", 5);
		nlen += n1 - n0 + 5;
	}
	free(buf);
	int sorted = 1;
	for (size_t i = 1; i < ks->n && sorted; i++)
		sorted = ks->k[i - 1].addr <= ks->k[i].addr;
	if (!sorted)
		qsort(ks->k, ks->n, sizeof(*ks->k), kcmp);
}

static const char *lookup(struct ksyms *ks, uint64_t addr)
{
	if (ks->map)
		return name_in_place(ks, addr);
	size_t lo = 0, hi = ks->n;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (ks->k[m].addr <= addr)
			lo = m + 1;
		else
			hi = m;
	}
	return lo && ks->k[lo - 1].name != KSYM_NONAME
		   ? ks->names + ks->k[lo - 1].name
		   : NULL;
}

const char *ksym_name(struct ksyms *ks, uint64_t addr)
{
	if (!ks)
		return NULL;
	if (!ks->loaded)
		load(ks);
	size_t h = (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 54); /* 10 bits */
	if (ks->memo[h].set && ks->memo[h].addr == addr)
		return ks->memo[h].name;
	const char *n = lookup(ks, addr);
	/* NULL from name_in_place may be out of memory: not kept */
	if (n || !ks->map) {
		ks->memo[h].addr = addr;
		ks->memo[h].name = n;
		ks->memo[h].set = 1;
	}
	return n;
}

void ksyms_free(struct ksyms *ks)
{
	if (!ks)
		return;
	for (size_t j = 0; j < ks->kn_cap; j++)
		free(ks->kn[j].name);
	free(ks->kn);
	if (ks->map)
		munmap((void *)ks->map, ks->map_len);
	free(ks->ix);
	free(ks->names);
	free(ks->k);
	free(ks->path);
	free(ks);
}

/* ksyms_trim's lines: a kept one, or a stop marker at the line at `at`
 * (its address) */
struct kline {
	size_t at;
	int marker;
};

static int kline_cmp(const void *a, const void *b)
{
	const struct kline *x = a, *y = b;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->marker - y->marker; /* the line before its marker */
}

/* The line of the text symbol `name` (perf's reference symbols), or -1 */
static long ref_line(const struct ksyms *ks, const char *name)
{
	char key[64];
	for (const char *t = "Tt"; *t; t++) {
		int n = snprintf(key, sizeof(key), " %c %s\n", *t, name);
		const char *p = memmem(ks->map, ks->map_len, key, (size_t)n);
		if (p && p - ks->map >= 16 &&
		    (p - ks->map == 16 || p[-17] == '\n'))
			return (long)(p - ks->map) - 16;
	}
	return -1;
}

/* The line at `at` kept, and a stop marker at the next text symbol with
 * a higher address (if any: what ends its range, other lines do not);
 * the new count of v. */
static size_t keep_line(const struct ksyms *ks, struct kline *v, size_t n,
			size_t at)
{
	const char *b = ks->map;
	size_t len = ks->map_len, nx = line_end(ks, at) + 1, n0, n1;
	v[n++] = (struct kline){at, 0};
	while (nx + 17 <= len &&
	       (!memcmp(b + nx, b + at, 16) || !line_sym(ks, nx, &n0, &n1)))
		nx = line_end(ks, nx) + 1;
	if (nx + 17 <= len)
		v[n++] = (struct kline){nx, 1};
	return n;
}

int ksyms_trim(struct ksyms *ks, const char *out)
{
	if (!ks || !ks->map || !ks->kn_n)
		return -ENOTSUP;
	size_t cap = 2 * (ks->kn_n + 2), n = 0;
	struct kline *v = malloc(cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	const char *b = ks->map;
	for (size_t j = 0; j < ks->kn_cap; j++)
		if (ks->kn[j].line)
			n = keep_line(ks, v, n, ks->kn[j].line - 1);
	long ref;
	if ((ref = ref_line(ks, "_text")) >= 0)
		n = keep_line(ks, v, n, (size_t)ref);
	if ((ref = ref_line(ks, "_stext")) >= 0)
		n = keep_line(ks, v, n, (size_t)ref);
	qsort(v, n, sizeof(*v), kline_cmp);
	struct stat sb;
	char tmp[4096];
	int err = 0;
	if (stat(ks->path, &sb) < 0)
		err = -errno;
	else if (snprintf(tmp, sizeof(tmp), "%s.tmp-%d", out, (int)getpid()) >=
		 (int)sizeof(tmp))
		err = -ENAMETOOLONG;
	int fd =
	    err ? -1
		: open(tmp,
		       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		       sb.st_mode & 0777);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!err && !f) {
		err = -errno;
		if (fd >= 0)
			close(fd);
	}
	for (size_t i = 0; f && i < n; i++) {
		/* once per line; a marker where its line is kept goes */
		if (i && v[i].at == v[i - 1].at)
			continue;
		size_t at = v[i].at;
		if (v[i].marker) {
			fprintf(f, "%.16s t " KSYM_STOP "\n", b + at);
		} else {
			fwrite(b + at, 1, line_end(ks, at) - at, f);
			fputc('\n', f);
		}
	}
	if (f) {
		int bad = ferror(f);
		bad |= fclose(f);
		if (bad && !err)
			err = -EIO;
	}
	if (!err && rename(tmp, out) < 0)
		err = -errno;
	if (err && fd >= 0)
		unlink(tmp);
	free(v);
	return err;
}
