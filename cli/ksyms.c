/* SPDX-License-Identifier: MIT */
/* Kernel frames of perf's sample callchains, named from /proc/kallsyms
 * (read once, when readable with real addresses; this kernel's symbols, as
 * perf itself uses them without a recorded kcore). Names carry the folded
 * stacks' kernel suffix "_[k]". */
#include "ksyms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ksym {
	uint64_t addr;
	char *name;
};

static struct ksym *g_k;
static size_t g_n;
static int g_loaded;

static int kcmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void load(void)
{
	g_loaded = 1;
	FILE *f = fopen("/proc/kallsyms", "r");
	if (!f)
		return;
	char line[512], name[256], type;
	unsigned long long a;
	size_t cap = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3 || !a ||
		    (type != 't' && type != 'T'))
			continue;
		if (g_n == cap) {
			size_t nc = cap ? 2 * cap : 65536;
			struct ksym *n = realloc(g_k, nc * sizeof(*n));
			if (!n)
				break;
			g_k = n;
			cap = nc;
		}
		size_t l = strlen(name);
		char *s = malloc(l + 5);
		if (!s)
			break;
		memcpy(s, name, l);
		memcpy(s + l, "_[k]", 5);
		g_k[g_n++] = (struct ksym){a, s};
	}
	fclose(f);
	if (g_n)
		qsort(g_k, g_n, sizeof(*g_k), kcmp);
}

const char *ksym_name(uint64_t addr)
{
	if (!g_loaded)
		load();
	size_t lo = 0, hi = g_n;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (g_k[m].addr <= addr)
			lo = m + 1;
		else
			hi = m;
	}
	return lo ? g_k[lo - 1].name : NULL;
}

void ksym_free(void)
{
	for (size_t i = 0; i < g_n; i++)
		free(g_k[i].name);
	free(g_k);
	g_k = NULL;
	g_n = 0;
	g_loaded = 0;
}
