/* SPDX-License-Identifier: MIT */
/*
 * The profile model (profile.h, profint.h): unwound samples aggregated by
 * identical stack. Strings are interned once (strtab.c); mappings and
 * frames are interned as small records of string indexes; a stack is a run
 * of frame indexes (leaf first) plus the comm, and identical stacks share
 * one count.
 */
#include "profint.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int map_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct prof *p = ctx;
	return !memcmp(&p->maps[idx], key, sizeof(struct pmap));
}

static int frame_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct prof *p = ctx;
	return !memcmp(&p->frames[idx], key, sizeof(struct pfrec));
}

struct stackkey {
	uint32_t comm, n;
	const uint32_t *ids;
};

static int stack_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct prof *p = ctx;
	const struct stackkey *k = key;
	const struct pstack *s = &p->stacks[idx];
	return s->comm == k->comm && s->n == k->n &&
	       !memcmp(p->fids + s->off, k->ids, k->n * sizeof(*k->ids));
}

struct prof *prof_new(uint64_t period_ns)
{
	struct prof *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->period_ns = period_ns;
	if (pf_strtab_add(&p->str, "") < 0) {
		prof_free(p);
		return NULL;
	}
	return p;
}

int prof_set_main(struct prof *p, const char *path)
{
	char *c = path ? strdup(path) : NULL;
	if (path && !c)
		return -ENOMEM;
	free(p->main_map);
	p->main_map = c;
	return 0;
}

void prof_free(struct prof *p)
{
	if (!p)
		return;
	pf_strtab_free(&p->str);
	free(p->main_map);
	free(p->maps);
	free(p->mapix.s);
	free(p->frames);
	free(p->frameix.s);
	free(p->stacks);
	free(p->stackix.s);
	free(p->fids);
	free(p->lastf);
	free(p->lastst);
	free(p->lastid);
	free(p);
}

/* Interned string index of s, or a negative errno. */
static int64_t pstr(struct prof *p, const char *s)
{
	if (!s || !*s)
		return 0;
	size_t h = ((uintptr_t)s >> 3 ^ (uintptr_t)s >> 15) & 4095;
	if (p->pcache[h].s == s && !strcmp(s, p->str.s[p->pcache[h].idx]))
		return p->pcache[h].idx;
	int64_t idx = pf_strtab_add(&p->str, s);
	if (idx > 0) {
		p->pcache[h].s = s;
		p->pcache[h].idx = (uint32_t)idx;
	}
	return idx;
}

static int64_t add_map(struct prof *p, const struct pframe *f)
{
	if (!f->mapping && !f->map_end && !f->map_start)
		return 0;
	int64_t path = pstr(p, f->mapping), bid = pstr(p, f->build_id);
	if (path < 0 || bid < 0)
		return -ENOMEM;
	struct pmap m;
	memset(&m, 0, sizeof(m)); /* padding: compared with memcmp */
	m.path = (uint32_t)path;
	m.build_id = (uint32_t)bid;
	m.start = f->map_start;
	m.end = f->map_end;
	m.pgoff = f->map_pgoff;
	uint64_t h =
	    pf_mix(pf_mix(pf_mix(pf_mix(m.path, m.build_id), m.start), m.end),
		   m.pgoff);
	struct slot *sl = pf_itab_find(&p->mapix, h, map_eq, p, &m);
	if (!sl)
		return -ENOMEM;
	if (sl->idx1)
		return sl->idx1;
	if (pf_grow_array((void **)&p->maps, &p->capmaps, p->nmaps + 1,
			  sizeof(*p->maps)))
		return -ENOMEM;
	p->maps[p->nmaps++] = m;
	sl->h = h;
	sl->idx1 = (uint32_t)p->nmaps;
	p->mapix.n++;
	return sl->idx1;
}

static int64_t add_frame(struct prof *p, const struct pframe *f)
{
	int64_t name = pstr(p, f->name), file = pstr(p, f->file),
		map = add_map(p, f);
	if (name < 0 || file < 0 || map < 0)
		return -ENOMEM;
	struct pfrec k;
	memset(&k, 0, sizeof(k));
	k.name = (uint32_t)name;
	k.file = (uint32_t)file;
	k.line = f->line;
	k.map = (uint32_t)map;
	k.addr = f->addr;
	k.kind = f->kind;
	uint64_t h =
	    pf_mix(pf_mix(pf_mix(pf_mix(pf_mix(k.name, k.file), k.line), k.map),
			  k.addr),
		   k.kind);
	struct slot *sl = pf_itab_find(&p->frameix, h, frame_eq, p, &k);
	if (!sl)
		return -ENOMEM;
	if (sl->idx1)
		return sl->idx1 - 1;
	if (pf_grow_array((void **)&p->frames, &p->capframes, p->nframes + 1,
			  sizeof(*p->frames)))
		return -ENOMEM;
	p->frames[p->nframes++] = k;
	sl->h = h;
	sl->idx1 = (uint32_t)p->nframes;
	p->frameix.n++;
	return sl->idx1 - 1;
}

/* s is what string index idx holds (NULL and "" are index 0)? */
static bool str_is(const struct prof *p, const char *s, uint32_t idx)
{
	if (!s || !*s)
		return idx == 0;
	return idx != 0 && !strcmp(s, p->str.s[idx]);
}

/* The strings of f not promised stable (st) read as frame id's? */
static bool strs_are(const struct prof *p, const struct pframe *f, unsigned st,
		     uint32_t id)
{
	const struct pfrec *r = &p->frames[id];
	if ((!(st & PF_STABLE_NAME) && !str_is(p, f->name, r->name)) ||
	    (!(st & PF_STABLE_FILE) && !str_is(p, f->file, r->file)))
		return false;
	if (r->map) {
		const struct pmap *m = &p->maps[r->map - 1];
		if ((!(st & PF_STABLE_MAPPING) &&
		     !str_is(p, f->mapping, m->path)) ||
		    (!(st & PF_STABLE_BUILD_ID) &&
		     !str_is(p, f->build_id, m->build_id)))
			return false;
	}
	return true;
}

/* Every field of k and f the same (the same pointers, not strings). */
static bool pframe_same(const struct pframe *k, const struct pframe *f)
{
	return k->name == f->name && k->addr == f->addr && k->file == f->file &&
	       k->line == f->line && k->mapping == f->mapping &&
	       k->build_id == f->build_id && k->map_start == f->map_start &&
	       k->map_end == f->map_end && k->map_pgoff == f->map_pgoff &&
	       k->kind == f->kind;
}

/* The frame index of f from the memo, or -1: where the slot holds a
 * pframe with f's fields (the same pointers) whose strings still read as
 * the ones its frame interned, add_frame would give that frame again. A
 * string that both promise stable (st: PF_STABLE_*) reads the same at the
 * same address: not compared again. */
static int64_t memo_frame(const struct prof *p, const struct pframe *f,
			  unsigned st, size_t slot)
{
	uint32_t id1 = p->fmemo[slot].id1;
	if (!id1 || !pframe_same(&p->fmemo[slot].k, f) ||
	    p->fmemo[slot].stable != st)
		return -1;
	return strs_are(p, f, st, id1 - 1) ? (int64_t)id1 - 1 : -1;
}

static size_t memo_slot(const struct pframe *f)
{
	uint64_t h = ((uint64_t)(uintptr_t)f->name ^ f->addr ^
		      (uint64_t)(uintptr_t)f->mapping << 7 ^ f->line ^
		      (uint64_t)(uintptr_t)f->file << 13) *
		     0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 54); /* PF_FMEMO: 10 bits */
}

int prof_add(struct prof *p, const struct pframe *frames, uint32_t n,
	     uint64_t count, const char *comm)
{
	return prof_add_stable(p, frames, NULL, n, count, comm);
}

int prof_add_stable(struct prof *p, const struct pframe *frames,
		    const uint8_t *stable, uint32_t n, uint64_t count,
		    const char *comm)
{
	uint32_t s;
	return prof_add_stable_at(p, frames, stable, n, count, comm, &s);
}

static void add_count(struct prof *p, struct pstack *s, uint64_t count)
{
	s->count = pf_sat_add(s->count, count);
	p->total = pf_sat_add(p->total, count);
}

int prof_add_again(struct prof *p, uint32_t stack, uint64_t count)
{
	if (!p || !stack || stack > p->nstacks)
		return -EINVAL;
	add_count(p, &p->stacks[stack - 1], count);
	return 0;
}

int prof_add_stable_at(struct prof *p, const struct pframe *frames,
		       const uint8_t *stable, uint32_t n, uint64_t count,
		       const char *comm, uint32_t *stack)
{
	*stack = 0;
	if (!p || (n && !frames))
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		if ((unsigned)frames[i].kind > PF_LUA)
			return -EINVAL;
	if (!count)
		return 0;
	int64_t c = pstr(p, comm && *comm ? comm : "[unknown]");
	if (c < 0)
		return (int)c;
	/* the frame ids go at the end of fids; dropped again if the stack
	 * is already known */
	if (pf_grow_array((void **)&p->fids, &p->capfids, p->nfids + n,
			  sizeof(*p->fids)))
		return -ENOMEM;
	uint32_t *ids = p->fids + p->nfids;
	uint64_t h = pf_mix(0, (uint64_t)c);
	/* a stack as deep as the last: it replaces the last's frames where
	 * they differ, here (each slot a frame, its bits and its id: one
	 * that matched holds them already) */
	bool in_place = n == p->nlast;
	for (uint32_t i = 0; i < n; i++) {
		unsigned st = stable ? stable[i] & PF_STABLE_ALL : 0;
		/* the last stack's frame as far from the root: the same
		 * fields, bits and strings give its frame */
		uint32_t back = n - 1 - i;
		int64_t id = -1;
		if (back < p->nlast) {
			uint32_t j = p->nlast - 1 - back;
			if (p->lastst[j] == st &&
			    pframe_same(&p->lastf[j], &frames[i]) &&
			    strs_are(p, &frames[i], st, p->lastid[j]))
				id = p->lastid[j];
		}
		bool kept = id >= 0;
		size_t slot = 0;
		if (id < 0) {
			slot = memo_slot(&frames[i]);
			id = memo_frame(p, &frames[i], st, slot);
		}
		if (id < 0) {
			id = add_frame(p, &frames[i]);
			if (id < 0)
				return (int)id;
			p->fmemo[slot].k = frames[i];
			p->fmemo[slot].id1 = (uint32_t)id + 1;
			p->fmemo[slot].stable = (uint8_t)st;
		}
		ids = p->fids + p->nfids; /* add_frame does not move fids */
		ids[i] = (uint32_t)id;
		h = pf_mix(h, (uint64_t)id);
		if (in_place && !kept) {
			p->lastf[i] = frames[i];
			p->lastst[i] = (uint8_t)st;
			p->lastid[i] = (uint32_t)id;
		}
	}
	/* kept for the next (none where there is no room: no harm) */
	if (!in_place && n > p->caplast) {
		struct pframe *nf = realloc(p->lastf, n * sizeof(*nf));
		if (nf)
			p->lastf = nf;
		uint8_t *ns = realloc(p->lastst, n);
		if (ns)
			p->lastst = ns;
		uint32_t *ni = realloc(p->lastid, n * sizeof(*ni));
		if (ni)
			p->lastid = ni;
		p->nlast = 0;
		if (nf && ns && ni)
			p->caplast = n;
	}
	if (!in_place && n <= p->caplast) {
		memcpy(p->lastf, frames, n * sizeof(*frames));
		for (uint32_t i = 0; i < n; i++)
			p->lastst[i] = stable ? stable[i] & PF_STABLE_ALL : 0;
		memcpy(p->lastid, ids, n * sizeof(*ids));
		p->nlast = n;
	}
	struct stackkey k = {(uint32_t)c, n, ids};
	struct slot *sl = pf_itab_find(&p->stackix, h, stack_eq, p, &k);
	if (!sl)
		return -ENOMEM;
	if (!sl->idx1) {
		if (pf_grow_array((void **)&p->stacks, &p->capstacks,
				  p->nstacks + 1, sizeof(*p->stacks)))
			return -ENOMEM;
		p->stacks[p->nstacks++] =
		    (struct pstack){(uint32_t)c, n, p->nfids, 0};
		p->nfids += n;
		sl->h = h;
		sl->idx1 = (uint32_t)p->nstacks;
		p->stackix.n++;
	}
	add_count(p, &p->stacks[sl->idx1 - 1], count);
	*stack = sl->idx1;
	return 0;
}
