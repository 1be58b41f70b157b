/* SPDX-License-Identifier: MIT */
/*
 * The VM-state profile's table (struct pf_vms, cli/vmstate.c fills it)
 * and its file, DIR/vmprofile.json: written by `profile`, read back by
 * `vmprofile DIR`. The reader takes the file as hostile (a record
 * directory is anyone's): every number is range-checked, nesting is
 * bounded, the text is read within its bytes (tests/fuzz_vmpjson.c).
 */
#include "profint.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *const pf_vs_name[PF_VS__N] = {"head",   "loop", "ffi", "jgc",
					  "interp", "c",    "gc",  "exit",
					  "record", "opt",  "asm", "trace"};

struct pf_vms_row *pf_vms_rowof(struct pf_vms *v, uint32_t pid, uint32_t tr)
{
	for (size_t i = 0; i < v->nrows; i++)
		if (v->rows[i].pid == pid && v->rows[i].trace == tr)
			return &v->rows[i];
	if (pf_grow_array((void **)&v->rows, &v->caprows, v->nrows + 1,
			  sizeof(v->rows[0])))
		return NULL;
	struct pf_vms_row *r = &v->rows[v->nrows++];
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->trace = tr;
	return r;
}

void pf_vms_free(struct pf_vms *v)
{
	free(v->rows);
	memset(v, 0, sizeof(*v));
}

const int pf_vt_of[PF_VS__N] = {
    [PF_VS_HEAD] = PF_VT_COMPILED, [PF_VS_LOOP] = PF_VT_COMPILED,
    [PF_VS_FFI] = PF_VT_COMPILED,  [PF_VS_TRACE] = PF_VT_COMPILED,
    [PF_VS_JGC] = PF_VT_GC,	   [PF_VS_GC] = PF_VT_GC,
    [PF_VS_INTERP] = PF_VT_INTERP, [PF_VS_C] = PF_VT_C,
    [PF_VS_EXIT] = PF_VT_JIT,	   [PF_VS_RECORD] = PF_VT_JIT,
    [PF_VS_OPT] = PF_VT_JIT,	   [PF_VS_ASM] = PF_VT_JIT};

void pf_vms_totals(const struct pf_vms *v, uint64_t t[PF_VT__N])
{
	memset(t, 0, PF_VT__N * sizeof(t[0]));
	for (int s = 0; s < PF_VS__N; s++)
		t[pf_vt_of[s]] += v->state[s];
}

const char *const pf_vt_name[PF_VT__N] = {"compiled", "interpreted", "c", "gc",
					  "jit"};
/* ---- output */

static int by_total(const void *a, const void *b)
{
	const struct pf_vms_row *x = a, *y = b;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->trace < y->trace ? -1 : x->trace > y->trace;
}

static int by_n(const void *a, const void *b)
{
	const struct pf_vms_line *x = a, *y = b;
	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return strcmp(x->where, y->where);
}

void pf_vms_sort(struct pf_vms *v)
{
	if (v->nrows)
		qsort(v->rows, v->nrows, sizeof(v->rows[0]), by_total);
	for (size_t i = 0; i < v->nrows; i++)
		if (v->rows[i].nlines)
			qsort(v->rows[i].lines, (size_t)v->rows[i].nlines,
			      sizeof(v->rows[i].lines[0]), by_n);
}

/* n counts, comma-separated; the -jp=v totals as an object */
static void u64_list(FILE *o, const uint64_t *a, int n)
{
	for (int i = 0; i < n; i++)
		fprintf(o, "%s%" PRIu64, i ? "," : "", a[i]);
}
static void vt_object(FILE *o, const uint64_t t[PF_VT__N])
{
	for (int k = 0; k < PF_VT__N; k++)
		fprintf(o, "%s\"%s\":%" PRIu64, k ? "," : "", pf_vt_name[k],
			t[k]);
}

void pf_vms_json(struct pf_vms *v, FILE *o)
{
	pf_vms_sort(v);
	uint64_t t[PF_VT__N];
	pf_vms_totals(v, t);
	fprintf(o,
		"{\"format\":\"jitsframe-vmprofile\",\"version\":1,\"hz\":%u,"
		"\"seconds\":%.3f,\"samples\":%" PRIu64
		",\"no_vmstate\":%" PRIu64 ",\n\"states\":[",
		v->hz, v->seconds, v->samples, v->no_vmstate);
	for (int s = 0; s < PF_VS__N; s++)
		fprintf(o, "%s\"%s\"", s ? "," : "", pf_vs_name[s]);
	fprintf(o, "],\n\"state_totals\":[");
	u64_list(o, v->state, PF_VS__N);
	fprintf(o, "],\n\"totals\":{");
	vt_object(o, t);
	fprintf(o, "},\n\"jpv_totals\":{");
	vt_object(o, v->jpv);
	fprintf(o,
		"},\n\"module_samples\":%" PRIu64 ",\"module_state_totals\":[",
		v->mod_samples);
	u64_list(o, v->mod_state, PF_VS__N);
	fprintf(o, "],\n\"traces\":[");
	for (size_t i = 0; i < v->nrows; i++) {
		const struct pf_vms_row *r = &v->rows[i];
		fprintf(o,
			"%s\n{\"pid\":%u,\"trace\":%u,\"name\":", i ? "," : "",
			r->pid, r->trace);
		if (r->name[0])
			pf_json_str(o, r->name);
		else
			fprintf(o, "null");
		fprintf(o, ",\"samples\":%" PRIu64 ",\"counts\":[", r->total);
		u64_list(o, r->n, PF_VS__N);
		fprintf(o, "],\"lines\":[");
		for (int k = 0; k < r->nlines; k++) {
			fprintf(o, "%s[", k ? "," : "");
			pf_json_str(o, r->lines[k].where);
			fprintf(o, ",%" PRIu64 "]", r->lines[k].n);
		}
		fprintf(o, "],\"lines_other\":%" PRIu64 "}", r->lines_other);
	}
	fprintf(o, "]}\n");
}

/* ---- reading vmprofile.json back (the schema pf_vms_json writes) */

struct jp {
	const char *p, *e; /* the text, NUL-terminated at e */
	int err, depth;
};

static void ws(struct jp *j)
{
	while (j->p < j->e && (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' ||
			       *j->p == '\r'))
		j->p++;
}

static bool lit(struct jp *j, char c)
{
	ws(j);
	if (j->p < j->e && *j->p == c) {
		j->p++;
		return true;
	}
	return false;
}

static void need(struct jp *j, char c)
{
	if (!lit(j, c))
		j->err = 1;
}

/* a string into out (cap bytes, cut), or null (out "") */
static void str(struct jp *j, char *out, size_t cap)
{
	ws(j);
	size_t n = 0;
	if (j->e - j->p >= 4 && !memcmp(j->p, "null", 4)) {
		j->p += 4;
		if (cap)
			out[0] = 0;
		return;
	}
	if (!lit(j, '"')) {
		j->err = 1;
		return;
	}
	while (j->p < j->e && *j->p != '"') {
		char c = *j->p++;
		if (c == '\\' && j->p < j->e) {
			c = *j->p++;
			if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (c == 'u') {
				/* as UTF-8 (the writer escapes U+2028/9 and
				 * control characters so); a surrogate: '?' */
				unsigned x = 0;
				for (int k = 0; k < 4 && j->p < j->e; k++) {
					char h = *j->p++;
					x = x * 16 +
					    (unsigned)(h <= '9' ? h - '0'
								: (h | 32) -
								      'a' + 10);
				}
				x &= 0xffff;
				unsigned char u[3];
				int m = 0;
				if (x < 0x80)
					u[m++] = (unsigned char)x;
				else if (x < 0x800) {
					u[m++] = (unsigned char)(0xc0 | x >> 6);
					u[m++] =
					    (unsigned char)(0x80 | (x & 0x3f));
				} else if (x >= 0xd800 && x < 0xe000)
					u[m++] = '?';
				else {
					u[m++] =
					    (unsigned char)(0xe0 | x >> 12);
					u[m++] =
					    (unsigned char)(0x80 |
							    (x >> 6 & 0x3f));
					u[m++] =
					    (unsigned char)(0x80 | (x & 0x3f));
				}
				for (int k = 0; k < m; k++)
					if (n + 1 < cap)
						out[n++] = (char)u[k];
				continue;
			}
		}
		if (n + 1 < cap)
			out[n++] = c;
	}
	if (cap)
		out[n] = 0;
	if (!lit(j, '"'))
		j->err = 1;
}

static double num(struct jp *j)
{
	ws(j);
	char *end;
	double d = strtod(j->p, &end);
	if (end == j->p || end > j->e || !isfinite(d))
		j->err = 1;
	j->p = end;
	return d;
}

/* A count: digits, a whole number up to max, exact (not through a double:
 * counts go past 2^53, and a double out of range has no conversion). */
static uint64_t whole(struct jp *j, uint64_t max)
{
	ws(j);
	char *end;
	if (j->p >= j->e || *j->p < '0' || *j->p > '9') {
		j->err = 1;
		return 0;
	}
	errno = 0;
	unsigned long long x = strtoull(j->p, &end, 10);
	if (errno || end > j->e || x > max) {
		j->err = 1;
		return 0;
	}
	j->p = end;
	return x;
}
static uint64_t u64(struct jp *j)
{
	return whole(j, UINT64_MAX);
}
static uint32_t u32(struct jp *j)
{
	return (uint32_t)whole(j, UINT32_MAX);
}

static void skip_value(struct jp *j)
{
	ws(j);
	if (j->p >= j->e || j->depth >= 64) { /* nesting bounded: recursion */
		j->err = 1;
		return;
	}
	char c = *j->p;
	if (c == '"') {
		char b[1];
		str(j, b, 0);
	} else if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		j->p++;
		if (lit(j, close))
			return;
		j->depth++;
		do {
			if (c == '{') {
				char b[1];
				str(j, b, 0);
				need(j, ':');
			}
			skip_value(j);
		} while (!j->err && lit(j, ','));
		j->depth--;
		need(j, close);
	} else if (!strncmp(j->p, "null", 4) || !strncmp(j->p, "true", 4)) {
		j->p += 4;
	} else if (!strncmp(j->p, "false", 5)) {
		j->p += 5;
	} else {
		num(j);
	}
}

static void u64s(struct jp *j, uint64_t *out, int n)
{
	need(j, '[');
	int k = 0;
	if (lit(j, ']'))
		return;
	do {
		uint64_t x = u64(j);
		if (k < n)
			out[k] = x;
		k++;
	} while (!j->err && lit(j, ','));
	need(j, ']');
}

/* "jpv_totals": {"compiled": N, ...}, by pf_vt_name */
static void jpv(struct jp *j, uint64_t t[PF_VT__N])
{
	need(j, '{');
	if (lit(j, '}'))
		return;
	do {
		char k[32];
		str(j, k, sizeof(k));
		need(j, ':');
		int i = 0;
		while (i < PF_VT__N && strcmp(k, pf_vt_name[i]))
			i++;
		if (i < PF_VT__N)
			t[i] = u64(j);
		else
			skip_value(j);
	} while (!j->err && lit(j, ','));
	need(j, '}');
}

static void trace_obj(struct jp *j, struct pf_vms *v)
{
	struct pf_vms_row r;
	memset(&r, 0, sizeof(r));
	need(j, '{');
	if (!lit(j, '}'))
		do {
			char k[32];
			str(j, k, sizeof(k));
			need(j, ':');
			if (!strcmp(k, "pid"))
				r.pid = u32(j);
			else if (!strcmp(k, "trace"))
				r.trace = u32(j);
			else if (!strcmp(k, "name"))
				str(j, r.name, sizeof(r.name));
			else if (!strcmp(k, "samples"))
				r.total = u64(j);
			else if (!strcmp(k, "counts"))
				u64s(j, r.n, PF_VS__N);
			else if (!strcmp(k, "lines_other"))
				r.lines_other = u64(j);
			else if (!strcmp(k, "lines")) {
				need(j, '[');
				if (!lit(j, ']')) {
					do {
						struct pf_vms_line l;
						need(j, '[');
						str(j, l.where,
						    sizeof(l.where));
						need(j, ',');
						l.n = u64(j);
						need(j, ']');
						if (r.nlines < PF_VMS_LINES)
							r.lines[r.nlines++] = l;
					} while (!j->err && lit(j, ','));
					need(j, ']');
				}
			} else
				skip_value(j);
		} while (!j->err && lit(j, ','));
	need(j, '}');
	if (j->err)
		return;
	struct pf_vms_row *o = pf_vms_rowof(v, r.pid, r.trace);
	if (!o) {
		j->err = 1;
		return;
	}
	*o = r;
}

int pf_vms_read(struct pf_vms *v, const char *path, char *msg, size_t ml)
{
	memset(v, 0, sizeof(*v));
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(msg, ml, "%s: %s", path, strerror(errno));
		return -1;
	}
	size_t cap = 1 << 16, len = 0;
	char *b = malloc(cap);
	for (;;) {
		if (!b) {
			fclose(f);
			snprintf(msg, ml, "%s: out of memory", path);
			return -1;
		}
		size_t n = fread(b + len, 1, cap - len, f);
		len += n;
		if (len < cap)
			break;
		cap *= 2;
		char *nb = realloc(b, cap);
		if (!nb) {
			free(b);
			fclose(f);
			snprintf(msg, ml, "%s: out of memory", path);
			return -1;
		}
		b = nb;
	}
	fclose(f);
	b[len] = 0; /* len < cap: strtod and the keywords stop at it */
	struct jp j = {b, b + len, 0, 0};
	char fmt[64] = "";
	uint64_t version = 0;
	need(&j, '{');
	if (!lit(&j, '}'))
		do {
			char k[32];
			str(&j, k, sizeof(k));
			need(&j, ':');
			if (!strcmp(k, "format"))
				str(&j, fmt, sizeof(fmt));
			else if (!strcmp(k, "version"))
				version = u64(&j);
			else if (!strcmp(k, "hz"))
				v->hz = u32(&j);
			else if (!strcmp(k, "seconds"))
				v->seconds = num(&j);
			else if (!strcmp(k, "samples"))
				v->samples = u64(&j);
			else if (!strcmp(k, "no_vmstate"))
				v->no_vmstate = u64(&j);
			else if (!strcmp(k, "state_totals"))
				u64s(&j, v->state, PF_VS__N);
			else if (!strcmp(k, "module_samples"))
				v->mod_samples = u64(&j);
			else if (!strcmp(k, "module_state_totals"))
				u64s(&j, v->mod_state, PF_VS__N);
			else if (!strcmp(k, "jpv_totals"))
				jpv(&j, v->jpv);
			else if (!strcmp(k, "traces")) {
				need(&j, '[');
				if (!lit(&j, ']')) {
					do
						trace_obj(&j, v);
					while (!j.err && lit(&j, ','));
					need(&j, ']');
				}
			} else
				skip_value(&j);
		} while (!j.err && lit(&j, ','));
	need(&j, '}');
	free(b);
	if (j.err || strcmp(fmt, "jitsframe-vmprofile") || version != 1) {
		snprintf(msg, ml,
			 "%s: not a jitsframe vmprofile.json of version 1%s",
			 path, j.err ? " (malformed)" : "");
		pf_vms_free(v);
		return -1;
	}
	return 0;
}
