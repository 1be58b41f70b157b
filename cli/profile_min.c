/* SPDX-License-Identifier: MIT */
/*
 * A minimal stand-in for the profile writers (cli/profile.h), used only
 * while cli/profile.c (the full writers: folded, SVG, HTML, pprof) is not
 * in the tree: folded stacks and the SVG through cli/folded.c; HTML and
 * pprof are not written (-ENOSYS). The Makefile picks cli/profile.c when
 * it exists; this file can then be deleted.
 */
#include "cli.h"
#include "folded.h"
#include "profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jsf_profile {
	struct folded *f;
	char *buf;
	size_t cap;
};

struct jsf_profile *jsf_profile_new(uint64_t period_ns)
{
	(void)period_ns;
	struct jsf_profile *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->f = folded_new();
	if (!p->f) {
		free(p);
		return NULL;
	}
	return p;
}

static int put(struct jsf_profile *p, size_t *len, const char *s, size_t n,
	       int sep)
{
	if (*len + n + 1 > p->cap) {
		size_t nc = (*len + n + 1) * 2;
		char *b = realloc(p->buf, nc);
		if (!b)
			return -ENOMEM;
		p->buf = b;
		p->cap = nc;
	}
	for (size_t i = 0; i < n; i++) /* ';' separates frames */
		p->buf[(*len)++] =
		    !sep && (s[i] == ';' || s[i] == '\n') ? ':' : s[i];
	p->buf[*len] = 0;
	return 0;
}

int jsf_profile_add(struct jsf_profile *p, const struct jsf_pframe *frames,
		    uint32_t n, uint64_t count, const char *comm)
{
	size_t len = 0;
	char tmp[64];
	const char *c = comm && *comm ? comm : "[unknown]";
	if (put(p, &len, c, strlen(c), 0))
		return -ENOMEM;
	for (uint32_t i = n; i-- > 0;) {
		const struct jsf_pframe *f = &frames[i];
		const char *nm = f->name;
		if (!nm) {
			snprintf(tmp, sizeof(tmp), "[0x%llx]",
				 (unsigned long long)f->addr);
			nm = tmp;
		}
		if (put(p, &len, ";", 1, 1) ||
		    put(p, &len, nm, strlen(nm), 0) ||
		    (f->kind == JSF_PF_JIT && put(p, &len, "_[j]", 4, 0)))
			return -ENOMEM;
	}
	return folded_add(p->f, p->buf, count);
}

static int write_with(const struct jsf_profile *p, const char *path,
		      const char *title, int svg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return -ENOMEM;
	int r = svg ? flame_svg(p->f, m, title) : folded_write(p->f, m);
	if (fclose(m) || r) {
		free(buf);
		return r ? r : -EIO;
	}
	r = cli_write_file(path, buf, len);
	free(buf);
	return r;
}

int jsf_profile_write_folded(const struct jsf_profile *p, const char *path)
{
	return write_with(p, path, NULL, 0);
}

int jsf_profile_write_svg(const struct jsf_profile *p, const char *path,
			  const char *title)
{
	return write_with(p, path, title, 1);
}

int jsf_profile_write_html(const struct jsf_profile *p, const char *path,
			   const char *title)
{
	(void)p;
	(void)path;
	(void)title;
	return -ENOSYS;
}

int jsf_profile_write_pprof(const struct jsf_profile *p, const char *path)
{
	(void)p;
	(void)path;
	return -ENOSYS;
}

void jsf_profile_free(struct jsf_profile *p)
{
	if (!p)
		return;
	folded_free(p->f);
	free(p->buf);
	free(p);
}
