/* SPDX-License-Identifier: MIT */
/* The one hash index of the profile library (profint.h): open addressing
 * over item indexes, linear probing, grown at half full. */
#include "profint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* 8 bytes a step (a byte a step, FNV-1a's multiply on every byte, was
 * most of folding a report's stacks: their lines run to kilobytes); the
 * hash only places items in the index (every probe compares the bytes),
 * so no output depends on it. */
uint64_t pf_hash_bytes(const char *s, size_t n)
{
	const uint64_t k = 0xff51afd7ed558ccdull;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
	size_t i = 0;
	for (; n - i >= 8; i += 8) {
		memcpy(&w, s + i, 8);
		h = (h ^ w) * k;
		h ^= h >> 29;
	}
	w = 0;
	if (n > i)
		memcpy(&w, s + i, n - i);
	h = (h ^ w) * k;
	h ^= h >> 32;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 29);
}

static int itab_grow(struct itab *t)
{
	size_t cap = t->cap ? 2 * t->cap : 256;
	struct slot *s = calloc(cap, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->s[i].idx1)
			continue;
		size_t j = t->s[i].h & (cap - 1);
		while (s[j].idx1)
			j = (j + 1) & (cap - 1);
		s[j] = t->s[i];
	}
	free(t->s);
	t->s = s;
	t->cap = cap;
	return 0;
}

struct slot *pf_itab_find(struct itab *t, uint64_t h,
			  int (*eq)(const void *ctx, uint32_t idx,
				    const void *key),
			  const void *ctx, const void *key)
{
	if (2 * (t->n + 1) > t->cap && itab_grow(t))
		return NULL;
	size_t j = h & (t->cap - 1);
	for (;; j = (j + 1) & (t->cap - 1)) {
		struct slot *s = &t->s[j];
		if (!s->idx1)
			return s;
		if (s->h == h && eq(ctx, s->idx1 - 1, key))
			return s;
	}
}

int pf_grow_array(void **a, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void *n = realloc(*a, c * size);
	if (!n)
		return -ENOMEM;
	*a = n;
	*cap = c;
	return 0;
}
