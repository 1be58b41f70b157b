/* SPDX-License-Identifier: MIT */
/* Folded stacks from the profile: "comm;root;...;leaf N", sorted (the
 * folded.c table), written atomically. */
#include "profint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The folded line of stack s (without count), malloc'ed; root first. */
static char *folded_line(const struct prof *p, const struct pstack *s,
			 const struct strtab *t, const uint32_t *ids)
{
	char *comm = pf_comm_name(p->str.s[s->comm]);
	if (!comm)
		return NULL;
	size_t len = strlen(comm), cap = len + 1;
	for (uint32_t i = 0; i < s->n; i++)
		cap += strlen(t->s[ids[p->fids[s->off + i]]]) + 1;
	char *line = realloc(comm, cap);
	if (!line) {
		free(comm);
		return NULL;
	}
	for (uint32_t i = s->n; i-- > 0;) {
		const char *nm = t->s[ids[p->fids[s->off + i]]];
		size_t nl = strlen(nm);
		line[len++] = ';';
		memcpy(line + len, nm, nl + 1);
		len += nl;
	}
	return line;
}

/* The profile as folded lines (identical lines merged: frames that differ
 * only by address fold into one). */
struct folded *pf_to_folded(const struct prof *p)
{
	struct strtab t;
	uint32_t *ids = NULL;
	memset(&t, 0, sizeof(t));
	struct folded *f = folded_new();
	int err = !f || pf_frame_names(p, &t, &ids);
	for (size_t i = 0; i < p->nstacks && !err; i++) {
		char *line = folded_line(p, &p->stacks[i], &t, ids);
		err = !line || folded_add(f, line, p->stacks[i].count);
		free(line);
	}
	pf_strtab_free(&t);
	free(ids);
	if (err) {
		folded_free(f);
		return NULL;
	}
	return f;
}

static int write_with(const struct folded *f, const char *path,
		      int (*w)(const struct folded *f, FILE *o,
			       const char *title),
		      const char *title)
{
	struct afile a;
	int err = pf_af_open(&a, path);
	if (!err)
		err = w(f, a.f, title);
	return pf_af_close(&a, path, err, 0);
}

int pf_write_from_folded(const struct prof *p, const char *path,
			 int (*w)(const struct folded *f, FILE *o,
				  const char *title),
			 const char *title)
{
	if (!p || !path)
		return -EINVAL;
	struct folded *f = pf_to_folded(p);
	if (!f)
		return -ENOMEM;
	int err = write_with(f, path, w, title);
	folded_free(f);
	return err;
}

static int write_text(const struct folded *f, FILE *o, const char *title)
{
	(void)title;
	return folded_write(f, o);
}

int prof_write_folded_svg(const struct prof *p, const char *folded_path,
			  const char *svg_path, const char *title, int *svg_err)
{
	if (!p || !folded_path || !svg_path) {
		*svg_err = -EINVAL;
		return -EINVAL;
	}
	struct folded *f = pf_to_folded(p);
	if (!f) {
		*svg_err = -ENOMEM;
		return -ENOMEM;
	}
	int err = write_with(f, folded_path, write_text, NULL);
	*svg_err =
	    write_with(f, svg_path, flame_svg, title ? title : "jitsframe");
	folded_free(f);
	return err;
}

int prof_write_folded(const struct prof *p, const char *path)
{
	return pf_write_from_folded(p, path, write_text, NULL);
}
