/* SPDX-License-Identifier: MIT */
/* The flame graph's tree for the HTML page (profint.h): a node per
 * (parent, display name), written as d3-flame-graph's nested JSON. */
#include "profint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The tree of the flame graph: a node per (parent, display name). */
struct tnode {
	uint32_t name;	      /* in the tree's own string table */
	uint32_t first, next; /* children: index + 1, 0 none */
	uint64_t value;
	int jit; /* 1: a trace frame, 2: a Lua frame */
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
	uint64_t h = pf_mix(par, (uint64_t)nm);
	struct slot *sl = pf_itab_find(&t->ix, h, tchild_eq, &c, &k);
	if (!sl)
		return -ENOMEM;
	if (sl->idx1)
		return sl->idx1 - 1;
	if (pf_grow_array((void **)&t->n, &t->cap, t->nn + 1, sizeof(*t->n)))
		return -ENOMEM;
	if (pf_grow_array((void **)parent, pcap, t->nn + 1, sizeof(**parent)))
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
	pf_strtab_free(&t->names);
	free(t->n);
	free(t->ix.s);
}

static int build_tree(const struct prof *p, struct tree *t)
{
	uint32_t *parent = NULL, *ids = NULL;
	size_t pcap = 0;
	memset(t, 0, sizeof(*t));
	int err = pf_frame_names(p, &t->names, &ids);
	int64_t all = err ? -ENOMEM : pf_strtab_add(&t->names, "all");
	if (all < 0 ||
	    pf_grow_array((void **)&t->n, &t->cap, 1, sizeof(*t->n)) ||
	    pf_grow_array((void **)&parent, &pcap, 1, sizeof(*parent))) {
		free(parent);
		free(ids);
		return -ENOMEM;
	}
	t->n[0] = (struct tnode){(uint32_t)all, 0, 0, p->total, 0};
	parent[0] = 0;
	t->nn = 1;
	for (size_t i = 0; i < p->nstacks && !err; i++) {
		const struct pstack *s = &p->stacks[i];
		char *comm = pf_comm_name(p->str.s[s->comm]);
		int64_t node = tree_child(
		    t, &parent, &pcap, 0,
		    comm ? pf_strtab_add(&t->names, comm) : -ENOMEM, 0);
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
					  p->frames[fid].kind == PF_JIT	  ? 1
					  : p->frames[fid].kind == PF_LUA ? 2
									  : 0);
		}
	}
	free(parent);
	free(ids);
	return err;
}

/* s as a JSON string, safe inside an HTML <script> element: '<', '>' and
 * '&' as \u escapes (no "</script>" can appear), U+2028/9 escaped. */
void pf_json_str(FILE *o, const char *s)
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
	if (t->nn == 0) /* no root: build_tree always makes one */
		return -EINVAL;
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
		pf_json_str(o, names->s[n->name]);
		fprintf(o, ",\"value\":%llu", (unsigned long long)n->value);
		if (n->jit == 1)
			fputs(",\"j\":1", o);
		else if (n->jit == 2)
			fputs(",\"l\":1", o);
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

int pf_write_tree_json(FILE *o, const struct prof *p)
{
	struct tree t;
	int err = build_tree(p, &t);
	if (!err)
		err = write_tree_json(o, &t);
	tree_free(&t);
	return err;
}
