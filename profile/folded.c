/* SPDX-License-Identifier: MIT */
/*
 * perf script -> folded stacks. Frames are named as flame-graph tools do:
 * trace code (perf inject's jitted-*.so) gets `_[j]`, the kernel `_[k]`,
 * unknown symbols `[dso]`. The process name is the root frame.
 */
#include "profint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	char *key;
	uint64_t count;
};

struct jload {
	uint32_t pid;
	uint64_t index, ts, code_addr, lo, hi;
	char *name;
};

struct folded {
	struct entry *t; /* in the order added, indexed by ix */
	size_t cap, n;
	struct itab ix;
	struct jload *loads;
	size_t nloads, caploads;
};

int folded_add_load(struct folded *f, uint32_t pid, uint64_t index, uint64_t ts,
		    uint64_t code_addr, uint64_t lo, uint64_t hi,
		    const char *name)
{
	if (f->nloads == f->caploads) {
		size_t cap = f->caploads ? 2 * f->caploads : 256;
		struct jload *n = realloc(f->loads, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		f->loads = n;
		f->caploads = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	f->loads[f->nloads++] = (struct jload){.pid = pid,
					       .index = index,
					       .ts = ts,
					       .code_addr = code_addr,
					       .lo = lo,
					       .hi = hi,
					       .name = copy};
	return 0;
}

/* The trace at `rel` in jitted-PID-N.so at time ts, or NULL. */
static const char *jitted_name(const struct folded *f, const char *base,
			       uint64_t rel, uint64_t ts)
{
	unsigned pid;
	unsigned long long idx;
	const struct jload *self = NULL, *best = NULL;
	if (sscanf(base, "jitted-%u-%llu.so", &pid, &idx) != 2)
		return NULL;
	for (size_t i = 0; i < f->nloads; i++)
		if (f->loads[i].pid == pid && f->loads[i].index == idx)
			self = &f->loads[i];
	if (!self || rel < 0x80)
		return self ? self->name : NULL;
	uint64_t abs = self->code_addr + rel - 0x80; /* perf's text at 0x80 */
	for (size_t i = 0; i < f->nloads; i++) {
		const struct jload *l = &f->loads[i];
		if (l->pid == pid && l->lo <= abs && abs < l->hi &&
		    (!ts || l->ts <= ts) && (!best || l->ts > best->ts))
			best = l;
	}
	return best ? best->name : self->name;
}

struct folded *folded_new(void)
{
	return calloc(1, sizeof(struct folded));
}

static int key_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct folded *f = ctx;
	return !strcmp(f->t[idx].key, key);
}

int folded_add(struct folded *f, const char *stack, uint64_t count)
{
	uint64_t h = pf_hash_bytes(stack, strlen(stack));
	struct slot *sl = pf_itab_find(&f->ix, h, key_eq, f, stack);
	if (!sl)
		return -ENOMEM;
	if (!sl->idx1) {
		if (f->n >= UINT32_MAX - 1)
			return -E2BIG;
		if (pf_grow_array((void **)&f->t, &f->cap, f->n + 1,
				  sizeof(*f->t)))
			return -ENOMEM;
		char *key = strdup(stack);
		if (!key)
			return -ENOMEM;
		f->t[f->n++] = (struct entry){.key = key, .count = 0};
		sl->h = h;
		sl->idx1 = (uint32_t)f->n;
		f->ix.n++;
	}
	f->t[sl->idx1 - 1].count = pf_sat_add(f->t[sl->idx1 - 1].count, count);
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	return strcmp(x->key, y->key);
}

void folded_each(const struct folded *f,
		 void (*cb)(const char *stack, uint64_t count, void *ctx),
		 void *ctx)
{
	/* sorted, so that outputs are deterministic */
	struct entry *s = malloc((f->n ? f->n : 1) * sizeof(*s));
	size_t k = f->n;
	if (!s)
		return;
	if (k)
		memcpy(s, f->t, k * sizeof(*s));
	qsort(s, k, sizeof(*s), cmp_entry);
	for (size_t i = 0; i < k; i++)
		cb(s[i].key, s[i].count, ctx);
	free(s);
}

static void write_one(const char *stack, uint64_t count, void *ctx)
{
	fprintf(ctx, "%s %llu\n", stack, (unsigned long long)count);
}

int folded_write(const struct folded *f, FILE *out)
{
	folded_each(f, write_one, out);
	return ferror(out) ? -EIO : 0;
}

int folded_read(struct folded *f, FILE *in)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int err = 0;
	while (!err && (n = getline(&line, &cap, in)) > 0) {
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		char *sp = strrchr(line, ' ');
		if (!sp)
			continue;
		*sp = 0;
		char *end;
		unsigned long long c = strtoull(sp + 1, &end, 10);
		if (*end || !*line)
			continue;
		err = folded_add(f, line, c);
	}
	free(line);
	return err;
}

void folded_free(struct folded *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		free(f->t[i].key);
	free(f->ix.s);
	for (size_t i = 0; i < f->nloads; i++)
		free(f->loads[i].name);
	free(f->loads);
	free(f->t);
	free(f);
}

/* --------------------------------------------------- perf script input */

struct frame {
	char name[300];
	int jit, is_main;
};

/* "   ADDR SYM+0xOFF (DSO)" -> frame name. */
static void parse_frame(const struct folded *f, const char *l, uint64_t ts,
			struct frame *fr)
{
	while (*l == ' ' || *l == '\t')
		l++;
	uint64_t rel = strtoull(l, NULL, 16);
	const char *sym = strchr(l, ' ');
	sym = sym ? sym + 1 : l;
	const char *dso = strrchr(sym, '(');
	size_t slen = dso && dso > sym ? (size_t)(dso - sym - 1) : strlen(sym);
	char s[256], d[256] = "";
	if (slen >= sizeof(s))
		slen = sizeof(s) - 1;
	memcpy(s, sym, slen);
	s[slen] = 0;
	char *plus = strstr(s, "+0x");
	if (plus)
		*plus = 0;
	if (dso) {
		const char *e = strchr(dso, ')');
		size_t dl = e ? (size_t)(e - dso - 1) : strlen(dso + 1);
		if (dl >= sizeof(d))
			dl = sizeof(d) - 1;
		memcpy(d, dso + 1, dl);
		d[dl] = 0;
	}
	const char *base = strrchr(d, '/');
	base = base ? base + 1 : d;
	fr->jit = !strncmp(base, "jitted-", 7);
	fr->is_main =
	    !strcmp(s, "main") || !strcmp(s, "__libc_start_call_main");
	if (!*s) /* a frame line with no symbol */
		snprintf(s, sizeof(s), "[unknown]");
	const char *jn = fr->jit && !strcmp(s, "[unknown]")
			     ? jitted_name(f, base, rel, ts)
			     : NULL;
	if (fr->jit)
		snprintf(fr->name, sizeof(fr->name), "%.280s_[j]",
			 jn			  ? jn
			 : strcmp(s, "[unknown]") ? s
						  : "[trace code]");
	else if (!strcmp(d, "[kernel.kallsyms]"))
		snprintf(fr->name, sizeof(fr->name), "%s_[k]", s);
	else if (!strcmp(s, "[unknown]"))
		snprintf(fr->name, sizeof(fr->name), "[%s]",
			 *base ? base : "unknown");
	else
		snprintf(fr->name, sizeof(fr->name), "%s", s);
	/* ';' separates frames: none inside one (a symbol's, a DSO path's,
	 * a trace's name from a jitdump: our module's names have none, a
	 * file from elsewhere may) */
	for (char *c = fr->name; *c; c++)
		if (*c == ';' || *c == '\n')
			*c = '_';
}

static int flush_sample(struct folded *f, struct folded_stats *st,
			const char *comm, struct frame *fr, int n)
{
	if (n == 0 && !*comm)
		return 0;
	st->samples++;
	int any_jit = 0, main = 0;
	for (int i = 0; i < n; i++) {
		any_jit |= fr[i].jit;
		main |= fr[i].is_main;
	}
	if (n && fr[0].jit) {
		st->trace_leaf++;
		st->trace_leaf_main += main;
	}
	if (any_jit) {
		st->through_trace++;
		st->through_main += main;
	}
	size_t len = strlen(comm) + 1;
	for (int i = 0; i < n; i++)
		len += strlen(fr[i].name) + 1;
	char *stack = malloc(len + 1);
	if (!stack)
		return -ENOMEM;
	size_t at = strlen(comm);
	memcpy(stack, comm, at);
	for (int i = n - 1; i >= 0; i--) { /* root first */
		size_t l = strlen(fr[i].name);
		stack[at++] = ';';
		memcpy(stack + at, fr[i].name, l);
		at += l;
	}
	stack[at] = 0;
	int err = folded_add(f, stack, 1);
	free(stack);
	return err;
}

int folded_read_perf_script(struct folded *f, FILE *in, struct folded_stats *st)
{
	enum { MAXF = 1024 };
	static struct frame fr[MAXF];
	char comm[128] = "";
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int n = 0, err = 0, in_sample = 0;
	uint64_t ts = 0;
	memset(st, 0, sizeof(*st));
	while (!err && (len = getline(&line, &cap, in)) >= 0) {
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (len == 0) {
			if (in_sample)
				err = flush_sample(f, st, comm, fr, n);
			in_sample = 0;
			n = 0;
			continue;
		}
		if (line[0] != '\t' && line[0] != ' ') {
			if (in_sample) /* a sample without callchain */
				err = flush_sample(f, st, comm, fr, n);
			/* header: "comm pid/tid time: period event:" */
			char *sp = line;
			while (*sp && *sp != ' ' && *sp != '\t')
				sp++;
			size_t cl = (size_t)(sp - line);
			if (cl >= sizeof(comm))
				cl = sizeof(comm) - 1;
			memcpy(comm, line, cl);
			comm[cl] = 0;
			for (char *c = comm; *c; c++)
				if (*c == ';')
					*c = '_';
			/* the sample's time: "SECONDS.FRACTION:" */
			ts = 0;
			for (char *t = strchr(line, '.'); t;
			     t = strchr(t + 1, '.')) {
				char *b = t;
				while (b > line && b[-1] >= '0' && b[-1] <= '9')
					b--;
				char *e = t + 1;
				while (*e >= '0' && *e <= '9')
					e++;
				if (b < t && *e == ':' && e - t > 1) {
					uint64_t sec = strtoull(b, NULL, 10),
						 frac = 0;
					int digits = 0;
					for (char *d = t + 1;
					     d < e && digits < 9; d++, digits++)
						frac = frac * 10 +
						       (uint64_t)(*d - '0');
					for (; digits < 9; digits++)
						frac *= 10;
					ts = sec * 1000000000ull + frac;
					break;
				}
			}
			in_sample = 1;
			n = 0;
			continue;
		}
		if (in_sample && n < MAXF)
			parse_frame(f, line, ts, &fr[n++]);
	}
	if (!err && in_sample)
		err = flush_sample(f, st, comm, fr, n);
	free(line);
	return err;
}
