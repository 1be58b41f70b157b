/* SPDX-License-Identifier: MIT */
/*
 * Profiles (profile/profile.h): unwound samples aggregated by identical stack,
 * and their writers.
 *
 * Storage: every string is interned once (invalid UTF-8 replaced by U+FFFD,
 * so that every writer emits valid UTF-8); mappings and frames are interned
 * as small records of string indexes; a stack is a run of frame indexes
 * (leaf first) plus the comm, and identical stacks share one count.
 *
 * Outputs, all written to a temp file in the destination's directory and
 * renamed over it (never a half-written file under the final name):
 *   folded  "comm;root;...;leaf N", sorted, trace frames suffixed "_[j]",
 *           ';' and control characters in names replaced by '_', unnamed
 *           frames "[0xADDR]"
 *   SVG     profile/flame.c's static flame graph of those folded lines
 *   HTML    d3-flame-graph (npm, vendored by the build into build/viewer)
 *           inlined with the profile as JSON: works offline from file://
 *   pprof   profile.pb.gz: protobuf-c (profile/pprof.proto) + zlib's gzip
 */
#include "profile.h"
#include "pprof.pb-c.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>

/* ------------------------------------------------------------ hashing */

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
}

/* An open-addressing index: slots hold item index + 1 (0 = empty) and the
 * item's hash, so that growing never needs the items. */
struct slot {
	uint64_t h;
	uint32_t idx1;
};
struct itab {
	struct slot *s;
	size_t cap, n;
};

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

/* The slot of the item equal to key (eq), or the empty slot where it goes;
 * NULL when out of memory. */
static struct slot *itab_find(struct itab *t, uint64_t h,
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

/* ------------------------------------------------------------ strings */

struct strtab {
	char **s;
	size_t n, cap;
	struct itab ix;
};

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

static void strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->ix.s);
	memset(t, 0, sizeof(*t));
}

/* Index of s (NULL counts as ""), interned; -ENOMEM. Index 0 is "". */
static int64_t strtab_add(struct strtab *t, const char *s)
{
	if (!t->n) { /* "" first, as pprof wants */
		t->s = malloc(16 * sizeof(*t->s));
		if (!t->s || !(t->s[0] = strdup("")))
			return -ENOMEM;
		t->cap = 16;
		t->n = 1;
		struct strkey k0 = {"", 0};
		struct slot *sl =
		    itab_find(&t->ix, hash_bytes("", 0), str_eq, t, &k0);
		if (!sl)
			return -ENOMEM;
		sl->h = hash_bytes("", 0);
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
	uint64_t h = hash_bytes(s, k.len);
	struct slot *sl = itab_find(&t->ix, h, str_eq, t, &k);
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

/* ------------------------------------------------------------ profile */

struct pmap {
	uint32_t path, build_id;
	uint64_t start, end, pgoff;
};
struct pframe {
	uint32_t name, file, line, map; /* map: index + 1, 0 none */
	uint64_t addr;
	uint32_t kind, pad; /* no implicit padding: compared with memcmp */
};
struct pstack {
	uint32_t comm, n;
	size_t off; /* into fids */
	uint64_t count;
};

struct jsf_profile {
	uint64_t period_ns;
	struct strtab str;
	struct pmap *maps;
	size_t nmaps, capmaps;
	struct itab mapix;
	struct pframe *frames;
	size_t nframes, capframes;
	struct itab frameix;
	struct pstack *stacks;
	size_t nstacks, capstacks;
	struct itab stackix;
	uint32_t *fids;
	size_t nfids, capfids;
	uint64_t total;
	/* callers pass the same name pointers again and again: the last
	 * index seen for a pointer, checked with strcmp before use */
	struct {
		const char *s;
		uint32_t idx;
	} pcache[4096];
};

static int grow_array(void **a, size_t *cap, size_t need, size_t size)
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

static int map_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct jsf_profile *p = ctx;
	return !memcmp(&p->maps[idx], key, sizeof(struct pmap));
}

static int frame_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct jsf_profile *p = ctx;
	return !memcmp(&p->frames[idx], key, sizeof(struct pframe));
}

struct stackkey {
	uint32_t comm, n;
	const uint32_t *ids;
};

static int stack_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct jsf_profile *p = ctx;
	const struct stackkey *k = key;
	const struct pstack *s = &p->stacks[idx];
	return s->comm == k->comm && s->n == k->n &&
	       !memcmp(p->fids + s->off, k->ids, k->n * sizeof(*k->ids));
}

struct jsf_profile *jsf_profile_new(uint64_t period_ns)
{
	struct jsf_profile *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->period_ns = period_ns;
	if (strtab_add(&p->str, "") < 0) {
		jsf_profile_free(p);
		return NULL;
	}
	return p;
}

void jsf_profile_free(struct jsf_profile *p)
{
	if (!p)
		return;
	strtab_free(&p->str);
	free(p->maps);
	free(p->mapix.s);
	free(p->frames);
	free(p->frameix.s);
	free(p->stacks);
	free(p->stackix.s);
	free(p->fids);
	free(p);
}

/* Interned string index of s, or a negative errno. */
static int64_t pstr(struct jsf_profile *p, const char *s)
{
	if (!s || !*s)
		return 0;
	size_t h = ((uintptr_t)s >> 3 ^ (uintptr_t)s >> 15) & 4095;
	if (p->pcache[h].s == s && !strcmp(s, p->str.s[p->pcache[h].idx]))
		return p->pcache[h].idx;
	int64_t idx = strtab_add(&p->str, s);
	if (idx > 0) {
		p->pcache[h].s = s;
		p->pcache[h].idx = (uint32_t)idx;
	}
	return idx;
}

static int64_t add_map(struct jsf_profile *p, const struct jsf_pframe *f)
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
	    mix(mix(mix(mix(m.path, m.build_id), m.start), m.end), m.pgoff);
	struct slot *sl = itab_find(&p->mapix, h, map_eq, p, &m);
	if (!sl)
		return -ENOMEM;
	if (sl->idx1)
		return sl->idx1;
	if (grow_array((void **)&p->maps, &p->capmaps, p->nmaps + 1,
		       sizeof(*p->maps)))
		return -ENOMEM;
	p->maps[p->nmaps++] = m;
	sl->h = h;
	sl->idx1 = (uint32_t)p->nmaps;
	p->mapix.n++;
	return sl->idx1;
}

static int64_t add_frame(struct jsf_profile *p, const struct jsf_pframe *f)
{
	int64_t name = pstr(p, f->name), file = pstr(p, f->file),
		map = add_map(p, f);
	if (name < 0 || file < 0 || map < 0)
		return -ENOMEM;
	struct pframe k;
	memset(&k, 0, sizeof(k));
	k.name = (uint32_t)name;
	k.file = (uint32_t)file;
	k.line = f->line;
	k.map = (uint32_t)map;
	k.addr = f->addr;
	k.kind = f->kind;
	uint64_t h = mix(
	    mix(mix(mix(mix(k.name, k.file), k.line), k.map), k.addr), k.kind);
	struct slot *sl = itab_find(&p->frameix, h, frame_eq, p, &k);
	if (!sl)
		return -ENOMEM;
	if (sl->idx1)
		return sl->idx1 - 1;
	if (grow_array((void **)&p->frames, &p->capframes, p->nframes + 1,
		       sizeof(*p->frames)))
		return -ENOMEM;
	p->frames[p->nframes++] = k;
	sl->h = h;
	sl->idx1 = (uint32_t)p->nframes;
	p->frameix.n++;
	return sl->idx1 - 1;
}

int jsf_profile_add(struct jsf_profile *p, const struct jsf_pframe *frames,
		    uint32_t n, uint64_t count, const char *comm)
{
	if (!p || (n && !frames))
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		if ((unsigned)frames[i].kind > JSF_PF_UNKNOWN)
			return -EINVAL;
	if (!count)
		return 0;
	int64_t c = pstr(p, comm && *comm ? comm : "[unknown]");
	if (c < 0)
		return (int)c;
	/* the frame ids go at the end of fids; dropped again if the stack
	 * is already known */
	if (grow_array((void **)&p->fids, &p->capfids, p->nfids + n,
		       sizeof(*p->fids)))
		return -ENOMEM;
	uint32_t *ids = p->fids + p->nfids;
	uint64_t h = mix(0, (uint64_t)c);
	for (uint32_t i = 0; i < n; i++) {
		int64_t id = add_frame(p, &frames[i]);
		if (id < 0)
			return (int)id;
		ids = p->fids + p->nfids; /* add_frame does not move fids */
		ids[i] = (uint32_t)id;
		h = mix(h, (uint64_t)id);
	}
	struct stackkey k = {(uint32_t)c, n, ids};
	struct slot *sl = itab_find(&p->stackix, h, stack_eq, p, &k);
	if (!sl)
		return -ENOMEM;
	if (!sl->idx1) {
		if (grow_array((void **)&p->stacks, &p->capstacks,
			       p->nstacks + 1, sizeof(*p->stacks)))
			return -ENOMEM;
		p->stacks[p->nstacks++] =
		    (struct pstack){(uint32_t)c, n, p->nfids, 0};
		p->nfids += n;
		sl->h = h;
		sl->idx1 = (uint32_t)p->nstacks;
		p->stackix.n++;
	}
	struct pstack *s = &p->stacks[sl->idx1 - 1];
	s->count = s->count + count < s->count ? UINT64_MAX : s->count + count;
	p->total = p->total + count < p->total ? UINT64_MAX : p->total + count;
	return 0;
}

/* ------------------------------------------------------ atomic writes */

struct afile {
	FILE *f;
	char *tmp;
};

/* A temp file next to path ("path.tmpXXXXXX": same directory, so that the
 * rename is atomic; mkstemp: O_EXCL, mode 0600). */
static int af_open(struct afile *a, const char *path)
{
	size_t n = strlen(path);
	a->f = NULL;
	if (!n)
		return -EINVAL;
	a->tmp = malloc(n + 16);
	if (!a->tmp)
		return -ENOMEM;
	snprintf(a->tmp, n + 16, "%s.tmpXXXXXX", path);
	int fd = mkstemp(a->tmp);
	if (fd < 0) {
		int e = errno;
		free(a->tmp);
		a->tmp = NULL;
		return -e;
	}
	a->f = fdopen(fd, "w");
	if (!a->f) {
		int e = errno;
		close(fd);
		unlink(a->tmp);
		free(a->tmp);
		a->tmp = NULL;
		return -e;
	}
	return 0;
}

/* Finish: on success flush and rename over path; else remove the temp
 * file. Returns err, or the error of finishing. No fsync: readers and a
 * crash of this process never see a partial file under the final name;
 * after a power loss a profile may be empty (it is derived data: run the
 * report again). An fsync per file cost ~20 ms of a ~100 ms report. */
static int af_close(struct afile *a, const char *path, int err)
{
	if (!a->f)
		return err;
	if (!err && (fflush(a->f) || ferror(a->f)))
		err = errno ? -errno : -EIO;
	if (fclose(a->f) && !err)
		err = errno ? -errno : -EIO;
	if (!err && rename(a->tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(a->tmp);
	free(a->tmp);
	a->f = NULL;
	a->tmp = NULL;
	return err;
}

/* -------------------------------------------------------- frame names */

/* A frame's name in folded stacks and flame graphs: the name with ';' and
 * control characters replaced by '_' (or "[0xADDR]" when unnamed), "_[j]"
 * appended for trace code. In buf when it fits, else malloc'ed; NULL when
 * out of memory. */
static char *display_name(const struct jsf_profile *p, const struct pframe *f,
			  char *buf, size_t size)
{
	const char *name = p->str.s[f->name];
	const char *suffix = f->kind == JSF_PF_JIT ? "_[j]" : "";
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
	strcpy(w, suffix);
	return o;
}

/* The display name of every frame, interned in t: ids[frame]. */
static int frame_names(const struct jsf_profile *p, struct strtab *t,
		       uint32_t **ids)
{
	char buf[512];
	memset(t, 0, sizeof(*t));
	*ids = malloc((p->nframes + 1) * sizeof(**ids));
	if (!*ids || strtab_add(t, "") < 0)
		return -ENOMEM;
	for (size_t i = 0; i < p->nframes; i++) {
		char *nm = display_name(p, &p->frames[i], buf, sizeof(buf));
		int64_t id = nm ? strtab_add(t, nm) : -ENOMEM;
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
static char *comm_name(const char *comm)
{
	char *c = strdup(comm);
	for (char *w = c; w && *w; w++)
		if (*w == ';' || (unsigned char)*w < 0x20 || *w == 0x7f)
			*w = '_';
	return c;
}

/* The folded line of stack s (without count), malloc'ed; root first. */
static char *folded_line(const struct jsf_profile *p, const struct pstack *s,
			 const struct strtab *t, const uint32_t *ids)
{
	char *comm = comm_name(p->str.s[s->comm]);
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
static struct folded *to_folded(const struct jsf_profile *p)
{
	struct strtab t;
	uint32_t *ids = NULL;
	memset(&t, 0, sizeof(t));
	struct folded *f = folded_new();
	int err = !f || frame_names(p, &t, &ids);
	for (size_t i = 0; i < p->nstacks && !err; i++) {
		char *line = folded_line(p, &p->stacks[i], &t, ids);
		err = !line || folded_add(f, line, p->stacks[i].count);
		free(line);
	}
	strtab_free(&t);
	free(ids);
	if (err) {
		folded_free(f);
		return NULL;
	}
	return f;
}

int jsf_profile_write_folded(const struct jsf_profile *p, const char *path)
{
	if (!p || !path)
		return -EINVAL;
	struct folded *f = to_folded(p);
	if (!f)
		return -ENOMEM;
	struct afile a;
	int err = af_open(&a, path);
	if (!err)
		err = folded_write(f, a.f);
	err = af_close(&a, path, err);
	folded_free(f);
	return err;
}

int jsf_profile_write_svg(const struct jsf_profile *p, const char *path,
			  const char *title)
{
	if (!p || !path)
		return -EINVAL;
	struct folded *f = to_folded(p);
	if (!f)
		return -ENOMEM;
	struct afile a;
	int err = af_open(&a, path);
	if (!err)
		err = flame_svg(f, a.f, title ? title : "jitsframe");
	err = af_close(&a, path, err);
	folded_free(f);
	return err;
}

/* ---------------------------------------------------------------- HTML */

/* The tree of the flame graph: a node per (parent, display name). */
struct tnode {
	uint32_t name;	      /* in the tree's own string table */
	uint32_t first, next; /* children: index + 1, 0 none */
	uint64_t value;
	int jit;
};
struct tree {
	struct strtab names;
	struct tnode *n;
	size_t nn, cap;
	struct itab ix; /* (parent, name) -> node */
};
struct tkey {
	uint32_t parent, name;
};

/* parent of each node, kept beside the nodes for the index's equality */
struct tree_ctx {
	const struct tree *t;
	const uint32_t *parent;
};

static int tchild_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct tree_ctx *c = ctx;
	const struct tkey *k = key;
	return c->parent[idx] == k->parent && c->t->n[idx].name == k->name;
}

static int64_t tree_child(struct tree *t, uint32_t **parent, size_t *pcap,
			  uint32_t par, int64_t nm, int jit)
{
	if (nm < 0)
		return nm;
	struct tkey k = {par, (uint32_t)nm};
	struct tree_ctx c = {t, *parent};
	uint64_t h = mix(par, (uint64_t)nm);
	struct slot *sl = itab_find(&t->ix, h, tchild_eq, &c, &k);
	if (!sl)
		return -ENOMEM;
	if (sl->idx1)
		return sl->idx1 - 1;
	if (grow_array((void **)&t->n, &t->cap, t->nn + 1, sizeof(*t->n)))
		return -ENOMEM;
	if (grow_array((void **)parent, pcap, t->nn + 1, sizeof(**parent)))
		return -ENOMEM;
	uint32_t id = (uint32_t)t->nn++;
	t->n[id] = (struct tnode){(uint32_t)nm, 0, t->n[par].first, 0, jit};
	(*parent)[id] = par;
	t->n[par].first = id + 1;
	sl->h = h;
	sl->idx1 = id + 1;
	t->ix.n++;
	return id;
}

static void tree_free(struct tree *t)
{
	strtab_free(&t->names);
	free(t->n);
	free(t->ix.s);
}

static int build_tree(const struct jsf_profile *p, struct tree *t)
{
	uint32_t *parent = NULL, *ids = NULL;
	size_t pcap = 0;
	memset(t, 0, sizeof(*t));
	int err = frame_names(p, &t->names, &ids);
	int64_t all = err ? -ENOMEM : strtab_add(&t->names, "all");
	if (all < 0 || grow_array((void **)&t->n, &t->cap, 1, sizeof(*t->n)) ||
	    grow_array((void **)&parent, &pcap, 1, sizeof(*parent))) {
		free(parent);
		free(ids);
		return -ENOMEM;
	}
	t->n[0] = (struct tnode){(uint32_t)all, 0, 0, p->total, 0};
	parent[0] = 0;
	t->nn = 1;
	for (size_t i = 0; i < p->nstacks && !err; i++) {
		const struct pstack *s = &p->stacks[i];
		char *comm = comm_name(p->str.s[s->comm]);
		int64_t node =
		    tree_child(t, &parent, &pcap, 0,
			       comm ? strtab_add(&t->names, comm) : -ENOMEM, 0);
		free(comm);
		for (uint32_t j = s->n + 1; j-- > 0;) {
			if (node < 0) {
				err = (int)node;
				break;
			}
			t->n[node].value += s->count;
			if (!j)
				break;
			uint32_t fid = p->fids[s->off + j - 1];
			node = tree_child(t, &parent, &pcap, (uint32_t)node,
					  ids[fid],
					  p->frames[fid].kind == JSF_PF_JIT);
		}
	}
	free(parent);
	free(ids);
	return err;
}

/* s as a JSON string, safe inside an HTML <script> element: '<', '>' and
 * '&' as \u escapes (no "</script>" can appear), U+2028/9 escaped. */
static void json_html(FILE *o, const char *s)
{
	fputc('"', o);
	const unsigned char *c = (const unsigned char *)s, *run = c;
	for (; *c; c++) {
		int ls = c[0] == 0xe2 && c[1] == 0x80 &&
			 (c[2] == 0xa8 || c[2] == 0xa9);
		if (*c >= 0x20 && *c != '"' && *c != '\\' && *c != '<' &&
		    *c != '>' && *c != '&' && *c != 0x7f && !ls)
			continue;
		fwrite(run, 1, (size_t)(c - run), o);
		if (*c == '"' || *c == '\\')
			fprintf(o, "\\%c", *c);
		else if (ls) {
			fprintf(o, "\\u%04x", c[2] == 0xa8 ? 0x2028 : 0x2029);
			c += 2;
		} else
			fprintf(o, "\\u%04x", *c);
		run = c + 1;
	}
	fwrite(run, 1, (size_t)(c - run), o);
	fputc('"', o);
}

/* Nodes as nested JSON, without recursion (stacks can be deep): children
 * are written in name order. */
static int write_tree_json(FILE *o, const struct tree *t)
{
	/* sort each child list by name (insertion order is reversed) */
	size_t *stack = malloc((t->nn + 1) * sizeof(*stack));
	uint32_t *kids = malloc((t->nn + 1) * sizeof(*kids));
	uint32_t *next = malloc((t->nn + 1) * sizeof(*next));
	if (!stack || !kids || !next) {
		free(stack);
		free(kids);
		free(next);
		return -ENOMEM;
	}
	/* next[i]: the node after i among its siblings, in name order
	 * (index + 1, 0 = last); first[] reused from tnode after sorting */
	uint32_t *first = malloc((t->nn + 1) * sizeof(*first));
	if (!first) {
		free(stack);
		free(kids);
		free(next);
		return -ENOMEM;
	}
	const struct strtab *names = &t->names;
	for (size_t i = 0; i < t->nn; i++) {
		size_t k = 0;
		for (uint32_t c = t->n[i].first; c; c = t->n[c - 1].next)
			kids[k++] = c - 1;
		/* Shell sort (gaps 3x+1) by name: qsort has no context */
		size_t gap = 1;
		while (gap < k / 3)
			gap = 3 * gap + 1;
		for (; gap; gap /= 3)
			for (size_t a = gap; a < k; a++) {
				uint32_t v = kids[a];
				size_t b = a;
				while (
				    b >= gap &&
				    strcmp(names->s[t->n[kids[b - gap]].name],
					   names->s[t->n[v].name]) > 0) {
					kids[b] = kids[b - gap];
					b -= gap;
				}
				kids[b] = v;
			}
		first[i] = k ? kids[0] + 1 : 0;
		for (size_t a = 0; a < k; a++)
			next[kids[a]] = a + 1 < k ? kids[a + 1] + 1 : 0;
	}
	next[0] = 0;
	/* depth-first: open node, then its children, then close */
	size_t sp = 0;
	uint32_t cur = 0;
	for (;;) {
		const struct tnode *n = &t->n[cur];
		fputs("{\"name\":", o);
		json_html(o, names->s[n->name]);
		fprintf(o, ",\"value\":%llu", (unsigned long long)n->value);
		if (n->jit)
			fputs(",\"j\":1", o);
		if (first[cur]) {
			fputs(",\"children\":[", o);
			stack[sp++] = cur;
			cur = first[cur] - 1;
			continue;
		}
		fputc('}', o);
		/* climb until a node has a next sibling */
		while (sp && !next[cur]) {
			fputs("]}", o);
			cur = (uint32_t)stack[--sp];
		}
		if (!sp)
			break;
		fputc(',', o);
		cur = next[cur] - 1;
	}
	fputc('\n', o);
	free(stack);
	free(kids);
	free(next);
	free(first);
	return ferror(o) ? -EIO : 0;
}

/* The viewer's files: $JITSFRAME_VIEWER, else VIEWER next to the running
 * executable (build/viewer for build/jitsframe), else
 * ../share/jitsframe/viewer from it (an install). */
static const char *const viewer_files[] = {
    "node_modules/d3/dist/d3.min.js",
    "node_modules/d3-flame-graph/dist/d3-flamegraph.umd.min.js",
    "node_modules/d3-flame-graph/dist/d3-flamegraph.css",
};

static int viewer_has_files(const char *dir)
{
	for (size_t f = 0; f < sizeof(viewer_files) / sizeof(*viewer_files);
	     f++) {
		char path[PATH_MAX];
		int n =
		    snprintf(path, sizeof(path), "%s/%s", dir, viewer_files[f]);
		if (n < 0 || (size_t)n >= sizeof(path) || access(path, R_OK))
			return 0;
	}
	return 1;
}

static int find_viewer(char *dir, size_t size)
{
	char exe[PATH_MAX], cand[2][PATH_MAX];
	int nc = 0;
	const char *env = getenv("JITSFRAME_VIEWER");
	if (env && *env) {
		if (strlen(env) < sizeof(cand[0]))
			strcpy(cand[nc++], env);
	} else {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = 0;
			char *sl = strrchr(exe, '/');
			if (sl)
				*sl = 0;
			int a = snprintf(cand[nc], sizeof(cand[0]), "%s/viewer",
					 exe);
			nc += a > 0 && (size_t)a < sizeof(cand[0]);
			a = snprintf(cand[nc], sizeof(cand[0]),
				     "%s/../share/jitsframe/viewer", exe);
			nc += a > 0 && (size_t)a < sizeof(cand[0]);
		}
	}
	for (int i = 0; i < nc; i++) {
		if (viewer_has_files(cand[i]) && strlen(cand[i]) < size) {
			strcpy(dir, cand[i]);
			return 0;
		}
	}
	fprintf(
	    stderr,
	    "jitsframe: the HTML flame graph viewer (d3-flame-graph) is "
	    "missing: looked for %s in %s%s%s. `make` installs it into "
	    "build/viewer (npm ci); JITSFRAME_VIEWER=DIR points elsewhere.\n",
	    viewer_files[1], nc ? cand[0] : "(nowhere)", nc > 1 ? " and " : "",
	    nc > 1 ? cand[1] : "");
	return -ENOENT;
}

/* Copy a viewer asset into the page; "</script" (any case) becomes
 * "<\/script" (the same text inside a JS string or regexp), so that the
 * asset cannot end its <script> element. */
static int inline_asset(FILE *o, const char *dir, const char *file)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	FILE *in = fopen(path, "r");
	if (!in)
		return -errno;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int err = 0;
	for (;;) {
		if (len == cap) {
			char *b = realloc(buf, cap = cap ? 2 * cap : 1 << 19);
			if (!b) {
				err = -ENOMEM;
				break;
			}
			buf = b;
		}
		size_t got = fread(buf + len, 1, cap - len, in);
		len += got;
		if (got == 0) {
			if (ferror(in))
				err = -EIO;
			break;
		}
	}
	fclose(in);
	const char *p = buf, *end = buf + len;
	while (!err && p < end) {
		const char *lt = memchr(p, '<', (size_t)(end - p));
		if (!lt) {
			fwrite(p, 1, (size_t)(end - p), o);
			break;
		}
		fwrite(p, 1, (size_t)(lt - p), o);
		if (end - lt >= 8 && lt[1] == '/' &&
		    !strncasecmp(lt + 2, "script", 6)) {
			fputs("<\\/", o);
			p = lt + 2;
		} else {
			fputc('<', o);
			p = lt + 1;
		}
	}
	free(buf);
	return err;
}

static const char html_script[] =
    "(function () {\n"
    "  var data = JSON.parse("
    "document.getElementById('profile-data').textContent);\n"
    "  var el = document.getElementById('chart');\n"
    "  if (!data.value) {\n"
    "    el.textContent = 'No samples.';\n"
    "    return;\n"
    "  }\n"
    "  var w = Math.max(600, (el.clientWidth || 1200) - 4);\n"
    "  var chart = flamegraph.default().width(w).cellHeight(18)\n"
    "    .minFrameSize(1).sort(true)\n"
    "    .setColorMapper(function (d, c) {\n"
    "      return d.highlight ? c : d.data.j ? '#3fb8af' : c;\n"
    "    })\n"
    "    .setDetailsElement(document.getElementById('details'));\n"
    /* the first drawing is finished at once: d3-flame-graph animates
     * new frames in (rect widths, then labels), and printing or a
     * headless browser may never see the animation end; so stop it and
     * give each frame its final width and label (d3-flame-graph 5 keeps
     * both on the frame's <g>: width and name attributes) */
    "  chart.transitionDuration(0);\n"
    "  d3.select('#chart').datum(data).call(chart);\n"
    "  d3.selectAll('#chart g.frame').each(function () {\n"
    "    var g = d3.select(this);\n"
    "    g.interrupt();\n"
    "    g.select('rect').interrupt().attr('width', g.attr('width'));\n"
    "    g.select('foreignObject div').interrupt().text(g.attr('name'));\n"
    "  });\n"
    "  chart.transitionDuration(500);\n"
    "  document.getElementById('search').addEventListener('input',\n"
    "    function (e) { chart.search(e.target.value); });\n"
    "  document.getElementById('reset').addEventListener('click',\n"
    "    function () { document.getElementById('search').value = '';\n"
    "      chart.clear(); chart.resetZoom(); });\n"
    "})();\n";

int jsf_profile_write_html(const struct jsf_profile *p, const char *path,
			   const char *title)
{
	if (!p || !path)
		return -EINVAL;
	if (!title)
		title = "jitsframe";
	char dir[PATH_MAX];
	int err = find_viewer(dir, sizeof(dir));
	if (err)
		return err;
	struct tree t;
	err = build_tree(p, &t);
	if (err) {
		tree_free(&t);
		return err;
	}
	struct afile a;
	err = af_open(&a, path);
	if (err) {
		tree_free(&t);
		return err;
	}
	FILE *o = a.f;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
	      "<meta charset=\"utf-8\">\n<title>",
	      o);
	markup_text(o, title, SIZE_MAX);
	fputs("</title>\n<style>\n", o);
	err = inline_asset(o, dir, viewer_files[2]);
	fputs(
	    "</style>\n<style>\n"
	    "body{font-family:sans-serif;margin:12px}\n"
	    "h1{font-size:18px;margin:0 0 6px}\n"
	    "#bar{margin:6px 0;font-size:13px;color:#444}\n"
	    "#details{min-height:1.4em;font-family:monospace;font-size:12px}\n"
	    "</style>\n</head>\n<body>\n<h1>",
	    o);
	markup_text(o, title, SIZE_MAX);
	fprintf(o,
		"</h1>\n<div id=\"bar\">%llu samples; trace frames (suffix "
		"_[j]) in teal; click a frame to zoom. "
		"<input id=\"search\" placeholder=\"search\"> "
		"<button id=\"reset\">reset</button></div>\n"
		"<div id=\"chart\"></div>\n<div id=\"details\"></div>\n"
		"<script>\n",
		(unsigned long long)p->total);
	if (!err)
		err = inline_asset(o, dir, viewer_files[0]);
	fputs("\n</script>\n<script>\n", o);
	if (!err)
		err = inline_asset(o, dir, viewer_files[1]);
	fputs("\n</script>\n"
	      "<script id=\"profile-data\" type=\"application/json\">\n",
	      o);
	if (!err)
		err = write_tree_json(o, &t);
	fputs("</script>\n<script>\n", o);
	fputs(html_script, o);
	fputs("</script>\n</body>\n</html>\n", o);
	if (!err && ferror(o))
		err = -EIO;
	err = af_close(&a, path, err);
	tree_free(&t);
	return err;
}

/* --------------------------------------------------------------- pprof */

/* A function: (name, file) in the output string table. */
struct pfunc {
	uint32_t name, file;
};

static int func_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct pfunc *f = ctx;
	return !memcmp(&f[idx], key, sizeof(struct pfunc));
}

/* "TRACE_n::chunk:line" -> chunk (into buf) and line; NULL when the name
 * is not a trace's. */
static const char *trace_source(const char *name, char *buf, size_t size,
				uint32_t *line)
{
	if (strncmp(name, "TRACE_", 6))
		return NULL;
	const char *c = name + 6;
	while (*c >= '0' && *c <= '9')
		c++;
	if (c == name + 6 || strncmp(c, "::", 2))
		return NULL;
	c += 2;
	const char *colon = strrchr(c, ':');
	if (!colon || colon == c || !colon[1])
		return NULL;
	unsigned long v = 0;
	for (const char *d = colon + 1; *d; d++) {
		if (*d < '0' || *d > '9' || v > UINT32_MAX / 10)
			return NULL;
		v = v * 10 + (unsigned long)(*d - '0');
	}
	size_t n = (size_t)(colon - c);
	if (n >= size)
		n = size - 1;
	memcpy(buf, c, n);
	buf[n] = 0;
	*line = (uint32_t)v;
	return buf;
}

/* gzip buf into o */
static int gzip_to(FILE *o, const uint8_t *buf, size_t len)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	/* windowBits 15 + 16: a gzip wrapper */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	uint8_t out[65536];
	int err = 0, zr;
	size_t off = 0;
	do {
		size_t chunk = len - off > (1u << 30) ? (1u << 30) : len - off;
		z.next_in = (Bytef *)(uintptr_t)(buf + off);
		z.avail_in = (uInt)chunk;
		off += chunk;
		int flush = off == len ? Z_FINISH : Z_NO_FLUSH;
		do {
			z.next_out = out;
			z.avail_out = sizeof(out);
			zr = deflate(&z, flush);
			if (zr == Z_STREAM_ERROR) {
				err = -EIO;
				break;
			}
			size_t have = sizeof(out) - z.avail_out;
			if (have && fwrite(out, 1, have, o) != have)
				err = -EIO;
		} while (!err && z.avail_out == 0);
	} while (!err && off < len);
	if (!err && zr != Z_STREAM_END)
		err = -EIO;
	deflateEnd(&z);
	return err;
}

int jsf_profile_write_pprof(const struct jsf_profile *p, const char *path)
{
	if (!p || !path)
		return -EINVAL;
	int err = 0;
	struct strtab st;
	memset(&st, 0, sizeof(st));
	struct itab fix;
	memset(&fix, 0, sizeof(fix));
	struct pfunc *funcs = NULL;
	size_t nfuncs = 0, capfuncs = 0;
	uint32_t *loc_func = calloc(p->nframes + 1, sizeof(*loc_func));
	uint32_t *loc_line = calloc(p->nframes + 1, sizeof(*loc_line));
	uint32_t *map_str = calloc(2 * p->nmaps + 1, sizeof(*map_str));
	/* the messages: one block each, pointers into them */
	Perftools__Profiles__Mapping *maps =
	    calloc(p->nmaps + 1, sizeof(*maps));
	Perftools__Profiles__Mapping **mapp =
	    calloc(p->nmaps + 1, sizeof(*mapp));
	Perftools__Profiles__Location *locs =
	    calloc(p->nframes + 1, sizeof(*locs));
	Perftools__Profiles__Location **locp =
	    calloc(p->nframes + 1, sizeof(*locp));
	Perftools__Profiles__Line *lines =
	    calloc(p->nframes + 1, sizeof(*lines));
	Perftools__Profiles__Line **linep =
	    calloc(p->nframes + 1, sizeof(*linep));
	Perftools__Profiles__Sample *samples =
	    calloc(p->nstacks + 1, sizeof(*samples));
	Perftools__Profiles__Sample **samplep =
	    calloc(p->nstacks + 1, sizeof(*samplep));
	Perftools__Profiles__Label *labels =
	    calloc(p->nstacks + 1, sizeof(*labels));
	Perftools__Profiles__Label **labelp =
	    calloc(p->nstacks + 1, sizeof(*labelp));
	int64_t *values = calloc(2 * p->nstacks + 1, sizeof(*values));
	uint64_t *locids = calloc(p->nfids + 1, sizeof(*locids));
	Perftools__Profiles__Function *fn = NULL, **fnp = NULL;
	uint8_t *buf = NULL;
	if (!loc_func || !loc_line || !map_str || !maps || !mapp || !locs ||
	    !locp || !lines || !linep || !samples || !samplep || !labels ||
	    !labelp || !values || !locids) {
		err = -ENOMEM;
		goto out;
	}
	/* strings, in the order they are met */
	int64_t s_samples = strtab_add(&st, "samples"),
		s_count = strtab_add(&st, "count"),
		s_cpu = strtab_add(&st, "cpu"),
		s_ns = strtab_add(&st, "nanoseconds"),
		s_comm = strtab_add(&st, "comm");
	if (s_samples < 0 || s_count < 0 || s_cpu < 0 || s_ns < 0 ||
	    s_comm < 0) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < p->nmaps; i++) {
		int64_t a = strtab_add(&st, p->str.s[p->maps[i].path]),
			b = strtab_add(&st, p->str.s[p->maps[i].build_id]);
		if (a < 0 || b < 0) {
			err = -ENOMEM;
			goto out;
		}
		map_str[2 * i] = (uint32_t)a;
		map_str[2 * i + 1] = (uint32_t)b;
	}
	/* functions: one per (name, file); unnamed frames "[0xADDR]" */
	for (size_t i = 0; i < p->nframes; i++) {
		const struct pframe *f = &p->frames[i];
		char addr[32];
		const char *name = p->str.s[f->name];
		if (!*name) {
			snprintf(addr, sizeof(addr), "[0x%llx]",
				 (unsigned long long)f->addr);
			name = addr;
		}
		/* a trace frame without file or line: its name says them */
		const char *file = p->str.s[f->file];
		char chunk[512];
		uint32_t tline = 0;
		loc_line[i] = f->line;
		if (f->kind == JSF_PF_JIT && (!*file || !f->line) &&
		    trace_source(name, chunk, sizeof(chunk), &tline)) {
			if (!*file)
				file = chunk;
			if (!f->line)
				loc_line[i] = tline;
		}
		int64_t a = strtab_add(&st, name), b = strtab_add(&st, file);
		if (a < 0 || b < 0) {
			err = -ENOMEM;
			goto out;
		}
		struct pfunc k = {(uint32_t)a, (uint32_t)b};
		uint64_t h = mix(k.name, k.file);
		struct slot *sl = itab_find(&fix, h, func_eq, funcs, &k);
		if (!sl) {
			err = -ENOMEM;
			goto out;
		}
		if (!sl->idx1) {
			if (grow_array((void **)&funcs, &capfuncs, nfuncs + 1,
				       sizeof(*funcs))) {
				err = -ENOMEM;
				goto out;
			}
			funcs[nfuncs++] = k;
			sl->h = h;
			sl->idx1 = (uint32_t)nfuncs;
			fix.n++;
		}
		loc_func[i] = sl->idx1; /* function id */
	}
	uint32_t *comm_str = calloc(p->nstacks + 1, sizeof(*comm_str));
	if (!comm_str) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < p->nstacks; i++) {
		int64_t c = strtab_add(&st, p->str.s[p->stacks[i].comm]);
		if (c < 0) {
			free(comm_str);
			err = -ENOMEM;
			goto out;
		}
		comm_str[i] = (uint32_t)c;
	}
	fn = calloc(nfuncs + 1, sizeof(*fn));
	fnp = calloc(nfuncs + 1, sizeof(*fnp));
	if (!fn || !fnp) {
		free(comm_str);
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nfuncs; i++) {
		perftools__profiles__function__init(&fn[i]);
		fn[i].id = i + 1;
		fn[i].name = funcs[i].name;
		fn[i].system_name = funcs[i].name;
		fn[i].filename = funcs[i].file;
		fnp[i] = &fn[i];
	}
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct pmap *m = &p->maps[i];
		perftools__profiles__mapping__init(&maps[i]);
		maps[i].id = i + 1;
		maps[i].memory_start = m->start;
		maps[i].memory_limit = m->end;
		maps[i].file_offset = m->pgoff;
		maps[i].filename = map_str[2 * i];
		maps[i].build_id = map_str[2 * i + 1];
		mapp[i] = &maps[i];
	}
	for (size_t i = 0; i < p->nframes; i++) {
		const struct pframe *f = &p->frames[i];
		if (f->map) { /* what the mapping's frames resolve to */
			Perftools__Profiles__Mapping *m = &maps[f->map - 1];
			m->has_functions |= f->name != 0;
			m->has_filenames |= funcs[loc_func[i] - 1].file != 0;
			m->has_line_numbers |= loc_line[i] != 0;
		}
		perftools__profiles__line__init(&lines[i]);
		lines[i].function_id = loc_func[i];
		lines[i].line = loc_line[i];
		linep[i] = &lines[i];
		perftools__profiles__location__init(&locs[i]);
		locs[i].id = i + 1;
		locs[i].mapping_id = f->map;
		locs[i].address = f->addr;
		locs[i].n_line = 1;
		locs[i].line = &linep[i];
		locp[i] = &locs[i];
	}
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct pstack *s = &p->stacks[i];
		for (uint32_t j = 0; j < s->n; j++)
			locids[s->off + j] = (uint64_t)p->fids[s->off + j] + 1;
		uint64_t c = s->count > INT64_MAX ? INT64_MAX : s->count;
		values[2 * i] = (int64_t)c;
		values[2 * i + 1] =
		    p->period_ns && c > (uint64_t)INT64_MAX / p->period_ns
			? INT64_MAX
			: (int64_t)(c * p->period_ns);
		perftools__profiles__label__init(&labels[i]);
		labels[i].key = s_comm;
		labels[i].str = comm_str[i];
		labelp[i] = &labels[i];
		perftools__profiles__sample__init(&samples[i]);
		samples[i].n_location_id = s->n;
		samples[i].location_id = locids + s->off;
		samples[i].n_value = 2;
		samples[i].value = values + 2 * i;
		samples[i].n_label = 1;
		samples[i].label = &labelp[i];
		samplep[i] = &samples[i];
	}
	free(comm_str);
	Perftools__Profiles__ValueType vt[2], per;
	Perftools__Profiles__ValueType *vtp[2] = {&vt[0], &vt[1]};
	perftools__profiles__value_type__init(&vt[0]);
	perftools__profiles__value_type__init(&vt[1]);
	perftools__profiles__value_type__init(&per);
	vt[0].type = s_samples;
	vt[0].unit = s_count;
	vt[1].type = s_cpu;
	vt[1].unit = s_ns;
	per.type = s_cpu;
	per.unit = s_ns;
	Perftools__Profiles__Profile prof;
	perftools__profiles__profile__init(&prof);
	prof.n_sample_type = 2;
	prof.sample_type = vtp;
	prof.n_sample = p->nstacks;
	prof.sample = samplep;
	prof.n_mapping = p->nmaps;
	prof.mapping = mapp;
	prof.n_location = p->nframes;
	prof.location = locp;
	prof.n_function = nfuncs;
	prof.function = fnp;
	prof.n_string_table = st.n;
	prof.string_table = st.s;
	prof.period_type = &per;
	prof.period =
	    (int64_t)(p->period_ns > INT64_MAX ? INT64_MAX : p->period_ns);
	prof.default_sample_type = s_cpu;
	size_t len = perftools__profiles__profile__get_packed_size(&prof);
	buf = malloc(len ? len : 1);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	if (perftools__profiles__profile__pack(&prof, buf) != len) {
		err = -EIO;
		goto out;
	}
	struct afile a;
	err = af_open(&a, path);
	if (!err)
		err = gzip_to(a.f, buf, len);
	err = af_close(&a, path, err);
out:
	free(buf);
	free(fn);
	free(fnp);
	free(funcs);
	free(fix.s);
	strtab_free(&st);
	free(loc_func);
	free(loc_line);
	free(map_str);
	free(maps);
	free(mapp);
	free(locs);
	free(locp);
	free(lines);
	free(linep);
	free(samples);
	free(samplep);
	free(labels);
	free(labelp);
	free(values);
	free(locids);
	return err;
}
