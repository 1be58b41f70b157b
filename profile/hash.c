/* SPDX-License-Identifier: MIT */
/* The one hash index of the profile library (profint.h): open addressing
 * over item indexes, linear probing, grown at half full. */
#include "profint.h"

#include <errno.h>
#include <stdlib.h>

uint64_t pf_hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
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
