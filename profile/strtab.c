/* SPDX-License-Identifier: MIT */
/* Interned strings (profint.h): each string stored once, invalid UTF-8
 * replaced by U+FFFD so that every writer emits valid UTF-8; index 0 is
 * "" (as pprof's string table wants). */
#include "profint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct strkey {
	const char *s;
	size_t len;
};

static int str_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct strtab *t = ctx;
	const struct strkey *k = key;
	return strlen(t->s[idx]) == k->len && !memcmp(t->s[idx], k->s, k->len);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	size_t n;
	unsigned min;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, min = 0x10000;
	else
		return 0;
	unsigned cp = c & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* s with invalid UTF-8 bytes replaced by U+FFFD; malloc'ed. */
static char *utf8_clean(const char *s)
{
	size_t len = strlen(s), bad = 0;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_len((const unsigned char *)s + i);
		bad += !n;
		i += n ? n : 1;
	}
	char *o = malloc(len + 2 * bad + 1), *w = o;
	if (!o)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_len((const unsigned char *)s + i);
		if (n) {
			memcpy(w, s + i, n);
			w += n;
			i += n;
		} else {
			memcpy(w, "\xef\xbf\xbd", 3);
			w += 3;
			i++;
		}
	}
	*w = 0;
	return o;
}

void pf_strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->ix.s);
	memset(t, 0, sizeof(*t));
}

/* Index of s (NULL counts as ""), interned; -ENOMEM. Index 0 is "". */
int64_t pf_strtab_add(struct strtab *t, const char *s)
{
	if (!t->n) { /* "" first, as pprof wants */
		t->s = malloc(16 * sizeof(*t->s));
		if (!t->s || !(t->s[0] = strdup("")))
			return -ENOMEM;
		t->cap = 16;
		t->n = 1;
		struct strkey k0 = {"", 0};
		struct slot *sl =
		    pf_itab_find(&t->ix, pf_hash_bytes("", 0), str_eq, t, &k0);
		if (!sl)
			return -ENOMEM;
		sl->h = pf_hash_bytes("", 0);
		sl->idx1 = 1;
		t->ix.n++;
	}
	if (!s || !*s)
		return 0;
	char *clean = NULL;
	for (size_t i = 0; s[i];) {
		size_t n = utf8_len((const unsigned char *)s + i);
		if (!n) {
			if (!(clean = utf8_clean(s)))
				return -ENOMEM;
			s = clean;
			break;
		}
		i += n;
	}
	struct strkey k = {s, strlen(s)};
	uint64_t h = pf_hash_bytes(s, k.len);
	struct slot *sl = pf_itab_find(&t->ix, h, str_eq, t, &k);
	if (!sl) {
		free(clean);
		return -ENOMEM;
	}
	if (sl->idx1) {
		free(clean);
		return sl->idx1 - 1;
	}
	if (t->n == t->cap) {
		char **ns = realloc(t->s, 2 * t->cap * sizeof(*ns));
		if (!ns) {
			free(clean);
			return -ENOMEM;
		}
		t->s = ns;
		t->cap *= 2;
	}
	char *copy = clean ? clean : strdup(s);
	if (!copy)
		return -ENOMEM;
	if (t->n >= UINT32_MAX - 1) {
		free(copy);
		return -E2BIG;
	}
	t->s[t->n] = copy;
	sl->h = h;
	sl->idx1 = (uint32_t)++t->n;
	t->ix.n++;
	return (int64_t)t->n - 1;
}
