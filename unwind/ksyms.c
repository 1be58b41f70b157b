/* SPDX-License-Identifier: MIT */
/* Kernel frames of perf's sample callchains, named from /proc/kallsyms
 * (read once; the recording's own copy that perf record keeps in the
 * record directory's build-id cache when there is one, else this
 * machine's, when readable with real addresses). Names carry the folded
 * stacks' kernel suffix "_[k]". */
#include "ksyms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ksym {
	uint64_t addr;
	uint32_t name; /* offset in names */
};

struct ksyms {
	struct ksym *k;
	size_t n;
	char *names; /* "name_[k]\0" strings, one arena */
	int loaded;
	char *path;
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

/* /proc/kallsyms, whole, parsed by hand: "ADDR TYPE NAME[\t[MODULE]]\n"
 * lines, ~200,000 of them (fscanf made this the report's largest cost). */
static void load(struct ksyms *ks)
{
	ks->loaded = 1;
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
		while (n1 < end && buf[n1] != '\t' && buf[n1] != ' ')
			n1++;
		if (n1 <= n0 || n1 - n0 > 255)
			continue;
		if (ks->n == kcap) {
			size_t nc = kcap ? 2 * kcap : 65536;
			struct ksym *k = realloc(ks->k, nc * sizeof(*k));
			if (!k)
				break;
			ks->k = k;
			kcap = nc;
		}
		ks->k[ks->n++] = (struct ksym){a, (uint32_t)nlen};
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

const char *ksym_name(struct ksyms *ks, uint64_t addr)
{
	if (!ks)
		return NULL;
	if (!ks->loaded)
		load(ks);
	size_t lo = 0, hi = ks->n;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (ks->k[m].addr <= addr)
			lo = m + 1;
		else
			hi = m;
	}
	return lo ? ks->names + ks->k[lo - 1].name : NULL;
}

void ksyms_free(struct ksyms *ks)
{
	if (!ks)
		return;
	free(ks->names);
	free(ks->k);
	free(ks->path);
	free(ks);
}
