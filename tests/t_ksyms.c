/* SPDX-License-Identifier: MIT */
/*
 * Kernel symbols (unwind/ksyms.c) from generated kallsyms files: one in
 * perf's layout, sorted (searched in place, through its line index), one
 * the same lines shuffled and one with a line out of order (both parsed
 * whole and sorted). Lines of every kind the parse must tell apart: text
 * symbols ('t', 'T'), data ('d', 'D', 'b', 'r'), zero addresses, module
 * symbols ("\t[mod]"), runs of one address (aliases), gaps.
 *
 * Ground truth is a linear scan here over the lines this test made (the
 * last text symbol, in address order and then file order of the sorted
 * file, at or below the address, its address not 0), not the code under
 * test; every address asked for is a symbol's, one below it, one above,
 * and the space before the first and after the last.
 */
#include "harness.h"
#include "ksyms.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { NL = 5000 };

struct line {
	uint64_t addr;
	char type;
	char name[40];
	int module;
};

static struct line L[NL];
static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void make_lines(void)
{
	uint64_t a = 0xffffffff81000000ull;
	static const char types[] = "tTtTTtdDbr";
	for (int i = 0; i < NL; i++) {
		uint64_t r = rnd();
		/* aliases (same address), small and large gaps */
		if (r % 7)
			a += r % 5 == 0 ? (r >> 8) % 0x100000
					: (r >> 8) % 0x400 + 1;
		L[i].addr = i < 3 ? 0 : a; /* perf's zero lines first */
		L[i].type = types[(r >> 40) % (sizeof(types) - 1)];
		snprintf(L[i].name, sizeof(L[i].name), "sym_%d_%llx", i,
			 (unsigned long long)(r >> 48));
		L[i].module = (r >> 20) % 9 == 0;
	}
}

static void write_lines(const char *path, const int *order)
{
	FILE *f = fopen(path, "w");
	for (int k = 0; f && k < NL; k++) {
		const struct line *l = &L[order[k]];
		fprintf(f, "%016llx %c %s%s\n", (unsigned long long)l->addr,
			l->type, l->name, l->module ? "\t[mod_x]" : "");
	}
	if (f)
		fclose(f);
}

/* the line of the expected symbol for addr (the last text line at or
 * below it, L sorted by address), or -1 */
static int expect(uint64_t addr)
{
	int best = -1;
	for (int i = 0; i < NL; i++)
		if (L[i].addr && L[i].addr <= addr &&
		    (L[i].type == 't' || L[i].type == 'T'))
			best = i;
	return best;
}

/* g is the symbol of line w, or (!strict: the file was not sorted, and
 * a sort need not keep the order of one address's aliases) of a text
 * line at its address */
static int right(const char *g, int w, int strict)
{
	if (w < 0 || !g)
		return w < 0 && !g;
	char want[64];
	for (int i = w; i >= 0 && L[i].addr == L[w].addr; i--) {
		if (L[i].type != 't' && L[i].type != 'T')
			continue;
		snprintf(want, sizeof(want), "%s_[k]", L[i].name);
		if (!strcmp(g, want))
			return 1;
		if (strict)
			return 0;
	}
	return 0;
}

static int check_file(const char *path, int strict)
{
	struct ksyms *k = ksyms_new(path);
	int bad = 0;
	uint64_t edge[3] = {0xffffffff80000000ull, L[NL - 1].addr + 0x1000000,
			    UINT64_MAX};
	for (int i = 0; i < NL + 1 && bad < 5; i++) {
		uint64_t as[3];
		if (i == NL)
			memcpy(as, edge, sizeof(as));
		else
			for (int j = 0; j < 3; j++)
				as[j] = L[i].addr - 1 + (uint64_t)j;
		for (int j = 0; j < 3; j++) {
			int w = expect(as[j]);
			const char *g = ksym_name(k, as[j]);
			if (!right(g, w, strict)) {
				printf("# %s: %016llx: %s, expected %s\n", path,
				       (unsigned long long)as[j],
				       g ? g : "NULL",
				       w >= 0 ? L[w].name : "NULL");
				bad++;
			}
		}
	}
	ksyms_free(k);
	return bad;
}

int main(void)
{
	char dir[] = "/tmp/t_ksyms_XXXXXX";
	if (!mkdtemp(dir)) {
		printf("1..0 # SKIP no temporary directory\n");
		return 0;
	}
	char p_sorted[64], p_shuf[64], p_one[64];
	snprintf(p_sorted, sizeof(p_sorted), "%s/sorted", dir);
	snprintf(p_shuf, sizeof(p_shuf), "%s/shuffled", dir);
	snprintf(p_one, sizeof(p_one), "%s/one_out", dir);
	make_lines();
	static int order[NL];
	for (int i = 0; i < NL; i++)
		order[i] = i;

	CASE("sorted kallsyms (in place, indexed): every address's symbol")
	{
		write_lines(p_sorted, order);
		CHECK(check_file(p_sorted, 1) == 0, "mismatches");
	}

	CASE("shuffled kallsyms (parsed whole): the same symbols")
	{
		static int sh[NL];
		memcpy(sh, order, sizeof(sh));
		for (int i = NL - 1; i > 0; i--) {
			int j = (int)(rnd() % (uint64_t)(i + 1));
			int t = sh[i];
			sh[i] = sh[j];
			sh[j] = t;
		}
		write_lines(p_shuf, sh);
		CHECK(check_file(p_shuf, 0) == 0, "mismatches");
	}

	CASE("one line out of order late in the file (parsed whole)")
	{
		static int one[NL];
		memcpy(one, order, sizeof(one));
		/* the last text line moved to the front of the last index
		 * step: the in-place search would miss it */
		int last = NL - 1;
		while (L[last].type != 't' && L[last].type != 'T')
			last--;
		int to = NL - 40;
		while (to > 3 && L[to].addr == L[last].addr)
			to--;
		int t = one[last];
		memmove(one + to + 1, one + to,
			(size_t)(last - to) * sizeof(*one));
		one[to] = t;
		write_lines(p_one, one);
		CHECK(check_file(p_one, 0) == 0, "mismatches");
	}

	CASE("sorted, but with lines of no type or name (parsed whole)")
	{
		/* a line of 16 digits alone, and one of fewer digits, among
		 * sorted lines: the whole file is parsed (they give no
		 * symbol), the in-place search (whose line check looks for
		 * the line's end 64 bytes at a time) is not used */
		snprintf(p_one, sizeof(p_one), "%s/short", dir);
		FILE *f = fopen(p_one, "w");
		for (int k = 0; f && k < NL; k++) {
			const struct line *l = &L[k];
			fprintf(f, "%016llx %c %s%s\n",
				(unsigned long long)l->addr, l->type, l->name,
				l->module ? "\t[mod_x]" : "");
			if (k == NL / 2)
				fprintf(f, "%016llx\n",
					(unsigned long long)l->addr);
			if (k == NL - 3)
				fprintf(f, "%08llx\n",
					(unsigned long long)l->addr);
		}
		if (f)
			fclose(f);
		CHECK(check_file(p_one, 1) == 0, "mismatches");
	}

	CASE("a trimmed copy (record's): the addresses asked name the same "
	     "symbols, every other its own or none")
	{
		/* ask a random third of the symbols' addresses (and one
		 * above each) of the sorted file, trim, then ask every
		 * address of check_file's kinds of both */
		char p_trim[80];
		snprintf(p_trim, sizeof(p_trim), "%s/trimmed", dir);
		struct ksyms *k = ksyms_new(p_sorted);
		static char asked[NL];
		for (int i = 0; i < NL; i++)
			if ((asked[i] = rnd() % 3 == 0)) {
				ksym_name(k, L[i].addr);
				ksym_name(k, L[i].addr + 1);
			}
		CHECK_EQ(ksyms_trim(k, p_trim), 0);

		ksyms_free(k);
		k = ksyms_new(p_sorted);
		struct ksyms *t = ksyms_new(p_trim);
		int same = 0, none = 0, wrong = 0, lost = 0;
		for (int i = 0; i < NL; i++)
			for (int j = 0; j < 3; j++) {
				uint64_t a = L[i].addr - 1 + (uint64_t)j;
				const char *g = ksym_name(k, a);
				const char *h = ksym_name(t, a);
				if (h && (!g || strcmp(g, h))) {
					if (wrong++ < 5)
						printf("# %016llx: %s in the "
						       "trimmed copy, %s in "
						       "the whole\n",
						       (unsigned long long)a, h,
						       g ? g : "NULL");
				} else if (!h && g && asked[i] && j) {
					if (lost++ < 3)
						printf("# lost %016llx %s\n",
						       (unsigned long long)a,
						       g);
				} else if (h) {
					same++;
				} else {
					none++;
				}
			}
		ksyms_free(k);
		ksyms_free(t);
		FILE *f = fopen(p_trim, "r");
		int lines = 0, c;
		while (f && (c = fgetc(f)) != EOF)
			lines += c == '\n';
		if (f)
			fclose(f);
		printf("# trimmed: %d lines of %d; %d addresses named as in "
		       "the whole file, %d not named\n",
		       lines, NL, same, none);
		CHECK_EQ(wrong, 0);
		CHECK_EQ(lost, 0);
		CHECK(none > 0 && same > 0 && lines < NL,
		      "the trimmed copy is the whole (%d lines)", lines);
	}

	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return h_exit();
}
