/* SPDX-License-Identifier: MIT */
/*
 * A static SVG flame graph from folded stacks: root at the bottom, one row
 * per stack depth, widths proportional to sample counts, a <title> on every
 * frame (hover shows name and count). Trace frames (`_[j]`) are blue-green,
 * Lua frames (`_[l]`) violet, kernel frames (`_[k]`) orange, the rest warm.
 */
#include "profint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct node {
	char *name;
	uint64_t count;
	struct node *child, *next; /* children sorted by name */
};

static struct node *child(struct node *p, const char *name, size_t len)
{
	struct node **pp = &p->child;
	for (; *pp; pp = &(*pp)->next) {
		int c = strncmp((*pp)->name, name, len);
		if (c == 0 && (*pp)->name[len] == 0)
			return *pp;
		if (c > 0 || (c == 0 && (*pp)->name[len]))
			break;
	}
	struct node *n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strndup(name, len))) {
		free(n);
		return NULL;
	}
	n->next = *pp;
	*pp = n;
	return n;
}

struct build {
	struct node root;
	int depth, oom;
};

static void add_stack(const char *stack, uint64_t count, void *ctx)
{
	struct build *b = ctx;
	struct node *n = &b->root;
	int d = 0;
	/* saturating: a sum past 2^64 must not make a frame wider than its
	 * parent */
	n->count = pf_sat_add(n->count, count);
	for (const char *p = stack; *p && n;) {
		const char *e = strchr(p, ';');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		n = child(n, p, len);
		if (!n) {
			b->oom = 1;
			return;
		}
		n->count = pf_sat_add(n->count, count);
		d++;
		p = e ? e + 1 : p + len;
	}
	if (d > b->depth)
		b->depth = d;
}

/* Characters (not bytes: a UTF-8 sequence is never cut) of s. */
static size_t chars(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* s as XML/HTML text, at most max characters (UTF-8 sequences kept
 * whole); markup characters escaped, control characters dropped. */
void pf_markup_text(FILE *o, const char *s, size_t max)
{
	for (size_t i = 0, n = 0; s[i]; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80 && n++ == max)
			break;
		switch (s[i]) {
		case '<':
			fputs("&lt;", o);
			break;
		case '>':
			fputs("&gt;", o);
			break;
		case '&':
			fputs("&amp;", o);
			break;
		case '"':
			fputs("&quot;", o);
			break;
		case '\'':
			fputs("&#39;", o);
			break;
		default:
			if ((unsigned char)s[i] >= 0x20 && s[i] != 0x7f)
				fputc(s[i], o);
		}
	}
}

enum { W = 1200, ROW = 16, PAD = 10, TOP = 40 };

struct draw {
	FILE *o;
	double scale;
	int height;
	uint64_t total;
};

static void color(const char *name, unsigned *r, unsigned *g, unsigned *b)
{
	size_t n = strlen(name);
	unsigned h = 0;
	for (const char *c = name; *c; c++)
		h = h * 31 + (unsigned char)*c;
	unsigned v = h % 55;
	if (n > 4 && !strcmp(name + n - 4, "_[j]")) {
		*r = 50 + v;
		*g = 170 + v;
		*b = 170 + v / 2;
	} else if (n > 4 && !strcmp(name + n - 4, "_[l]")) {
		*r = 150 + v;
		*g = 110 + v;
		*b = 200 + v / 2;
	} else if (n > 4 && !strcmp(name + n - 4, "_[k]")) {
		*r = 230;
		*g = 140 + v;
		*b = 40;
	} else {
		*r = 200 + v;
		*g = 90 + v * 2;
		*b = 50;
	}
}

static void draw(struct draw *d, const struct node *n, double x, int depth)
{
	for (const struct node *c = n->child; c; c = c->next) {
		double w = (double)c->count * d->scale;
		if (w >= 0.5) {
			int y = d->height - PAD - (depth + 1) * ROW;
			unsigned r, g, b;
			color(c->name, &r, &g, &b);
			fprintf(d->o, "<g><title>");
			pf_markup_text(d->o, c->name, 4096);
			fprintf(d->o, " (%llu samples, %.2f%%)</title>",
				(unsigned long long)c->count,
				100.0 * (double)c->count / (double)d->total);
			fprintf(
			    d->o,
			    "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
			    "height=\"%d\" fill=\"rgb(%u,%u,%u)\" rx=\"2\"/>",
			    x, y, w, ROW - 1, r, g, b);
			size_t fit = (size_t)(w / 7);
			if (fit >= 3) {
				fprintf(d->o, "<text x=\"%.1f\" y=\"%d\">",
					x + 3, y + ROW - 4);
				size_t len = chars(c->name);
				pf_markup_text(d->o, c->name,
					       fit - (len > fit ? 2 : 0));
				if (len > fit)
					fputs("..", d->o);
				fputs("</text>", d->o);
			}
			fputs("</g>\n", d->o);
			draw(d, c, x, depth + 1);
		}
		x += w;
	}
}

static void free_tree(struct node *n)
{
	struct node *c = n->child;
	while (c) {
		struct node *next = c->next;
		free_tree(c);
		free(c->name);
		free(c);
		c = next;
	}
}

int flame_svg(const struct folded *f, FILE *o, const char *title)
{
	struct build b = {0};
	folded_each(f, add_stack, &b);
	if (b.oom) {
		free_tree(&b.root);
		return -ENOMEM;
	}
	int height = TOP + b.depth * ROW + 2 * PAD;
	fprintf(
	    o,
	    "<?xml version=\"1.0\" standalone=\"no\"?>\n"
	    "<svg version=\"1.1\" width=\"%d\" height=\"%d\" "
	    "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">\n"
	    "<style>text{font-family:monospace;font-size:11px;"
	    "fill:#000;pointer-events:none}rect:hover{stroke:#000}</style>\n"
	    "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f8\"/>\n"
	    "<text x=\"%d\" y=\"24\" style=\"font-size:16px\">",
	    W, height, W, height, W / 2 - 200);
	pf_markup_text(o, title, 200);
	fprintf(o, " (%llu samples)</text>\n",
		(unsigned long long)b.root.count);
	struct draw d = {
	    o, b.root.count ? (double)(W - 2 * PAD) / (double)b.root.count : 0,
	    height, b.root.count ? b.root.count : 1};
	draw(&d, &b.root, PAD, 0);
	fputs("</svg>\n", o);
	free_tree(&b.root);
	return ferror(o) ? -EIO : 0;
}
