/* SPDX-License-Identifier: MIT */
/* A set of interned byte strings (profile.h: prof_intern), on the profile
 * library's hash index: each stored once, NUL-terminated, at an address
 * that stays put until the set is freed. */
#include "profile.h"
#include "profint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct prof_intern {
	char **s;
	size_t *len;
	size_t n, cap, caplen;
	struct itab ix;
};

struct ikey {
	const char *s;
	size_t len;
};

static int bytes_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct prof_intern *t = ctx;
	const struct ikey *k = key;
	return t->len[idx] == k->len && !memcmp(t->s[idx], k->s, k->len);
}

struct prof_intern *prof_intern_new(void)
{
	return calloc(1, sizeof(struct prof_intern));
}

const char *prof_intern(struct prof_intern *t, const void *s, size_t n)
{
	struct ikey k = {s, n};
	uint64_t h = pf_hash_bytes(s, n);
	struct slot *sl = pf_itab_find(&t->ix, h, bytes_eq, t, &k);
	if (!sl)
		return NULL;
	if (sl->idx1)
		return t->s[sl->idx1 - 1];
	if (t->n >= UINT32_MAX - 1 ||
	    pf_grow_array((void **)&t->s, &t->cap, t->n + 1, sizeof(*t->s)) ||
	    pf_grow_array((void **)&t->len, &t->caplen, t->n + 1,
			  sizeof(*t->len)))
		return NULL;
	char *d = malloc(n + 1);
	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = 0;
	t->s[t->n] = d;
	t->len[t->n] = n;
	sl->h = h;
	sl->idx1 = (uint32_t)++t->n;
	t->ix.n++;
	return d;
}

void prof_intern_free(struct prof_intern *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->len);
	free(t->ix.s);
	free(t);
}
