/* SPDX-License-Identifier: MIT */
/* Frame names in folded stacks and flame graphs (profint.h). */
#include "profint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A frame's name in folded stacks and flame graphs: the name with ';' and
 * control characters replaced by '_' (or "[0xADDR]" when unnamed), "_[j]"
 * appended for trace code, "_[l]" for Lua frames. In buf when it fits, else
 * malloc'ed; NULL when out of memory. */
static char *display_name(const struct prof *p, const struct pfrec *f,
			  char *buf, size_t size)
{
	const char *name = p->str.s[f->name];
	const char *suffix = f->kind == PF_JIT	 ? "_[j]"
			     : f->kind == PF_LUA ? "_[l]"
						 : "";
	char addr[32];
	if (!*name) {
		snprintf(addr, sizeof(addr), "[0x%llx]",
			 (unsigned long long)f->addr);
		name = addr;
	}
	size_t need = strlen(name) + strlen(suffix) + 1;
	char *o = need <= size ? buf : malloc(need);
	if (!o)
		return NULL;
	char *w = o;
	for (const char *c = name; *c; c++)
		*w++ = (*c == ';' || (unsigned char)*c < 0x20 || *c == 0x7f)
			   ? '_'
			   : *c;
	memcpy(w, suffix, strlen(suffix) + 1);
	return o;
}

/* The display name of every frame, interned in t: ids[frame]. */
int pf_frame_names(const struct prof *p, struct strtab *t, uint32_t **ids)
{
	char buf[512];
	memset(t, 0, sizeof(*t));
	*ids = malloc((p->nframes + 1) * sizeof(**ids));
	if (!*ids || pf_strtab_add(t, "") < 0)
		return -ENOMEM;
	for (size_t i = 0; i < p->nframes; i++) {
		char *nm = display_name(p, &p->frames[i], buf, sizeof(buf));
		int64_t id = nm ? pf_strtab_add(t, nm) : -ENOMEM;
		if (nm && nm != buf)
			free(nm);
		if (id < 0)
			return (int)id;
		(*ids)[i] = (uint32_t)id;
	}
	return 0;
}

/* The comm as the root frame: ';' and control characters as '_';
 * malloc'ed. */
char *pf_comm_name(const char *comm)
{
	char *c = strdup(comm);
	for (char *w = c; w && *w; w++)
		if (*w == ';' || (unsigned char)*w < 0x20 || *w == 0x7f)
			*w = '_';
	return c;
}
