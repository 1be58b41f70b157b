/* SPDX-License-Identifier: MIT */
/*
 * The tests' ground truth: a brute-force model of which function covered
 * which address when, written independently of the library's data
 * structures (a flat list scanned linearly). m_index() adds a sorted
 * index that answers the same question faster (for the tests that ask it
 * millions of times); m_find() checks it against the linear scan on every
 * 61st question, so a wrong index fails the test rather than the model
 * going wrong silently.
 */
#ifndef JSF_MODEL_H
#define JSF_MODEL_H

#include "harness.h"
#include "jitsframe.h"

#include <errno.h>
#include <stdbool.h>

struct mfunc {
	uint64_t start;
	uint32_t size, nrows;
	uint64_t add, remove; /* remove 0: live */
	struct jsf_row *rows;
};

struct model {
	struct mfunc *f;
	uint32_t n, cap;
	/* m_index(): the functions by start, valid while ix_n == n */
	uint32_t *by_start, ix_n, max_size;
	uint32_t asked;
};

static inline void m_rows(struct mfunc *f)
{
	uint32_t max = f->size < 24 ? f->size : 24;
	uint32_t n = 1 + h_below(max);
	f->rows = calloc(n, sizeof(*f->rows));
	/* distinct sorted offsets, the first 0 */
	uint32_t k = 0;
	for (uint32_t off = 0; off < f->size && k < n; off++) {
		uint32_t left = f->size - off, need = n - k;
		if (off == 0 || h_below(left) < need) {
			struct jsf_row *r = &f->rows[k++];
			r->offset = off;
			if (h_below(10) == 0) {
				r->outermost = true;
				continue;
			}
			r->cfa_base = h_below(3) ? JSF_SP : JSF_FP;
			static const int32_t mags[] = {127, 32767, 1 << 30};
			int32_t mag = mags[h_below(3)];
			r->cfa_offset = (int32_t)(h_rand() % (uint32_t)mag) + 8;
			if (h_below(2)) {
				r->has_fp = true;
				r->fp_offset =
				    -(int32_t)(h_rand() %
					       (uint32_t)mags[h_below(3)]);
			}
		}
	}
	f->nrows = k;
}

static inline struct mfunc *m_add(struct model *m, uint64_t start,
				  uint32_t size, uint64_t add)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 256;
		m->f = realloc(m->f, m->cap * sizeof(*m->f));
	}
	struct mfunc *f = &m->f[m->n++];
	memset(f, 0, sizeof(*f));
	f->start = start;
	f->size = size;
	f->add = add;
	m_rows(f);
	return f;
}

static inline bool m_alive(const struct mfunc *f, uint64_t t)
{
	if (t == 0)
		return f->remove == 0;
	return f->add <= t && (f->remove == 0 || t < f->remove);
}

static inline const struct mfunc *m_find_linear(const struct model *m,
						uint64_t pc, uint64_t t)
{
	for (uint32_t i = 0; i < m->n; i++) {
		const struct mfunc *f = &m->f[i];
		if (pc >= f->start && pc < f->start + f->size && m_alive(f, t))
			return f;
	}
	return NULL;
}

static const struct model *m_sorting; /* qsort has no context argument */
static inline int m_by_start(const void *a, const void *b)
{
	uint64_t x = m_sorting->f[*(const uint32_t *)a].start;
	uint64_t y = m_sorting->f[*(const uint32_t *)b].start;
	return x < y ? -1 : x > y;
}

/* Index the functions added so far (their starts must not change). */
static inline void m_index(struct model *m)
{
	free(m->by_start);
	m->by_start = calloc(m->n ? m->n : 1, sizeof(*m->by_start));
	m->max_size = 0;
	for (uint32_t i = 0; i < m->n; i++) {
		m->by_start[i] = i;
		if (m->f[i].size > m->max_size)
			m->max_size = m->f[i].size;
	}
	m_sorting = m;
	qsort(m->by_start, m->n, sizeof(*m->by_start), m_by_start);
	m->ix_n = m->n;
}

/* The first function in the list that covers pc at time t (0: now). */
static inline const struct mfunc *m_find(const struct model *m, uint64_t pc,
					 uint64_t t)
{
	if (!m->by_start || m->ix_n != m->n)
		return m_find_linear(m, pc, t);
	/* the functions that start in (pc - max_size, pc] */
	uint32_t lo = 0, hi = m->n;
	while (lo < hi) { /* first start > pc */
		uint32_t mid = lo + (hi - lo) / 2;
		if (m->f[m->by_start[mid]].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct mfunc *best = NULL;
	for (uint32_t k = lo; k-- > 0;) {
		const struct mfunc *f = &m->f[m->by_start[k]];
		if (pc - f->start >= m->max_size)
			break;
		if (pc < f->start + f->size && m_alive(f, t) &&
		    (!best || f < best))
			best = f;
	}
	struct model *w = (struct model *)m; /* the check's counter only */
	if (++w->asked % 61 == 0) {
		const struct mfunc *lin = m_find_linear(m, pc, t);
		CHECK(lin == best,
		      "model index: pc %#llx t %llu: %p, linear %p",
		      (unsigned long long)pc, (unsigned long long)t,
		      (const void *)best, (const void *)lin);
	}
	return best;
}

static inline struct jsf_row m_row(const struct mfunc *f, uint64_t pc)
{
	struct jsf_row r = f->rows[0];
	for (uint32_t i = 0; i < f->nrows; i++)
		if (f->rows[i].offset <= pc - f->start)
			r = f->rows[i];
	return r;
}

static inline bool row_eq(const struct jsf_row *a, const struct jsf_row *b)
{
	if (a->offset != b->offset || a->outermost != b->outermost)
		return false;
	if (a->outermost)
		return true;
	return a->cfa_base == b->cfa_base && a->cfa_offset == b->cfa_offset &&
	       a->has_fp == b->has_fp &&
	       (!a->has_fp || a->fp_offset == b->fp_offset);
}

static inline void m_free(struct model *m)
{
	for (uint32_t i = 0; i < m->n; i++)
		free(m->f[i].rows);
	free(m->f);
	free(m->by_start);
	memset(m, 0, sizeof(*m));
}

/*
 * Compare one lookup with the model; returns the number of mismatches (0/1)
 * and prints the first few.
 */
static inline int m_check(const struct model *m, const struct jsf_view *v,
			  uint64_t pc, uint64_t t)
{
	const struct mfunc *f = m_find(m, pc, t);
	uint64_t fs = 0;
	uint32_t fz = 0;
	struct jsf_row r;
	int rc = jsf_view_lookup(v, pc, t, &fs, &fz, &r);
	if (!f) {
		CHECK(rc == -ENOENT,
		      "pc %#llx t %llu: expected ENOENT, got %d (start %#llx)",
		      (unsigned long long)pc, (unsigned long long)t, rc,
		      (unsigned long long)fs);
		return rc != -ENOENT;
	}
	struct jsf_row want = m_row(f, pc);
	/* (x86-64's return address: at CFA - 8, the SFrame header's fixed
	 * offset, which a row of a frame states) */
	bool ok =
	    rc == 0 && fs == f->start && fz == f->size && row_eq(&r, &want) &&
	    (r.outermost || (r.ra_rule == JSF_RA_CFA && r.ra_offset == -8));
	CHECK(
	    ok,
	    "pc %#llx t %llu: rc %d start %#llx/%#llx size %u/%u row off %u/%u",
	    (unsigned long long)pc, (unsigned long long)t, rc,
	    (unsigned long long)fs, (unsigned long long)f->start, fz, f->size,
	    r.offset, want.offset);
	return !ok;
}

#endif
