/* SPDX-License-Identifier: MIT */
/*
 * Snapshots: a private copy of a region's section block, checked and decoded
 * once. Post-mortem views, iteration, export and the validator work on these;
 * only live "now" lookups read the shared mapping directly (view.c).
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmp_sent(const void *a, const void *b)
{
	const struct sf_ent *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->log_idx < y->log_idx ? -1 : x->log_idx > y->log_idx;
}

void sf_snap_free(struct sf_snap *s)
{
	free(s->blk);
	free(s->e);
	free(s->rows);
	memset(s, 0, sizeof(*s));
}

int sf_snap_parse(struct sf_snap *s, uint8_t *blk, uint64_t len,
		  uint64_t blk_addr, char *msg, size_t msglen)
{
	memset(s, 0, sizeof(*s));
	s->blk = blk;
	s->blk_len = len;
	s->blk_addr = blk_addr;
#define BAD(...)                                  \
	do {                                      \
		sf_msg(msg, msglen, __VA_ARGS__); \
		sf_snap_free(s);                  \
		return -EBADMSG;                  \
	} while (0)
	if (len < SF_SHDR_SIZE + SFRAME_HDR_SIZE + 4)
		BAD("section block truncated (%llu bytes)",
		    (unsigned long long)len);
	if (memcmp(blk, SF_SECTION_MAGIC, 8))
		BAD("section block: bad magic");
	if (LD64(blk + SB_TOTAL) != len)
		BAD("section block: size %llu does not match %llu",
		    (unsigned long long)LD64(blk + SB_TOTAL),
		    (unsigned long long)len);
	s->fde_cap = LD32(blk + SB_FDE_CAP);
	s->fre_cap = LD32(blk + SB_FRE_CAP);
	s->log_cap = LD32(blk + SB_LOG_CAP);
	s->log_n = LD32(blk + SB_LOG_N);
	uint32_t log_off = LD32(blk + SB_LOG_OFF);
	uint64_t sec_cap =
	    SFRAME_HDR_SIZE + 4 + (uint64_t)s->fde_cap * 16 + s->fre_cap;
	if (LD32(blk + SB_SEC_LEN) != sec_cap ||
	    SF_SHDR_SIZE + sec_cap > log_off ||
	    log_off + (uint64_t)s->log_cap * SF_LOG_ENTRY_SIZE > len)
		BAD("section block: capacities exceed the block");
	if (s->log_n > s->log_cap)
		BAD("function log: %u entries published, capacity %u", s->log_n,
		    s->log_cap);
	const uint8_t *sf = blk + SF_SHDR_SIZE;
	s->sf = sf;
	if (LD16(sf) != SFRAME_MAGIC || LD8(sf + 2) != SFRAME_V3)
		BAD("SFrame header: bad magic or version");
	uint32_t freoff = LD32(sf + SH_FREOFF), fre_len = LD32(sf + SH_FRE_LEN);
	if (freoff != 4 + s->fde_cap * 16u || fre_len > s->fre_cap)
		BAD("SFrame header: FRE sub-section (off %u, len %u) outside "
		    "capacity",
		    freoff, fre_len);
	s->sec_len = SFRAME_HDR_SIZE + freoff + fre_len;
	const uint8_t *fre = sf + SFRAME_HDR_SIZE + freoff;
	s->e = calloc(s->log_n ? s->log_n : 1, sizeof(*s->e));
	if (!s->e)
		BAD("out of memory");
	/* Rows: counted first so that one allocation holds them all. */
	uint64_t total_rows = 0, fre_bytes = 0;
	for (uint32_t i = 0; i < s->log_n; i++) {
		const uint8_t *p =
		    blk + log_off + (size_t)i * SF_LOG_ENTRY_SIZE;
		struct sf_ent *e = &s->e[i];
		e->start = LD64(p + LE_START);
		e->add = LD64(p + LE_ADD);
		e->remove = LD64(p + LE_REMOVE);
		e->size = LD32(p + LE_SIZE);
		e->attr = LD32(p + LE_ATTR);
		e->log_idx = i;
		if (e->size == 0 || e->start + e->size < e->start)
			BAD("function log entry %u: bad range", i);
		if (e->remove && e->remove < e->add)
			BAD("function log entry %u: removed before it was "
			    "added",
			    i);
		/* Each function owns its record: together they cannot need
		 * more bytes than the FRE sub-section holds (this also bounds
		 * the work and memory a hostile file can cause). */
		uint32_t flen = sf_func_len(fre, fre_len, e->attr);
		fre_bytes += flen;
		if (flen && fre_bytes > fre_len)
			BAD("function log: entries share or overlap FRE "
			    "records "
			    "(%llu bytes referenced, %u exist)",
			    (unsigned long long)fre_bytes, fre_len);
		int n = sf_read_func(fre, fre_len, e->attr, e->size, 0, NULL,
				     NULL, 0);
		if (n < 0)
			BAD("function log entry %u (start %#llx): malformed "
			    "rows at "
			    "FRE offset %u",
			    i, (unsigned long long)e->start, e->attr);
		e->nrows = (uint32_t)n;
		e->row0 = (uint32_t)total_rows;
		total_rows += (uint32_t)n;
		if (total_rows > (1u << 26))
			BAD("function log: more than %u rows in all", 1u << 26);
		if (e->size > s->maxsize)
			s->maxsize = e->size;
		if (!e->remove)
			s->nlive++;
	}
	s->rows = calloc(total_rows ? total_rows : 1, sizeof(*s->rows));
	if (!s->rows)
		BAD("out of memory");
	for (uint32_t i = 0; i < s->log_n; i++) {
		struct sf_ent *e = &s->e[i];
		sf_read_func(fre, fre_len, e->attr, e->size, 0, NULL,
			     s->rows + e->row0, e->nrows);
		if (s->rows[e->row0].offset != 0)
			BAD("function log entry %u: first row not at offset 0",
			    i);
	}
	qsort(s->e, s->log_n, sizeof(*s->e), cmp_sent);
#undef BAD
	return 0;
}

const struct sf_ent *sf_snap_find(const struct sf_snap *s, uint64_t pc,
				  uint64_t t)
{
	uint32_t a = 0, b = s->log_n; /* first entry with start > pc */
	while (a < b) {
		uint32_t m = a + (b - a) / 2;
		if (s->e[m].start <= pc)
			a = m + 1;
		else
			b = m;
	}
	/* Walk back over every function that could still cover pc. */
	while (a-- > 0) {
		const struct sf_ent *f = &s->e[a];
		if (pc - f->start >= s->maxsize)
			break;
		if (pc - f->start < f->size && sf_alive(f, t))
			return f;
	}
	return NULL;
}

struct jsf_row sf_snap_row(const struct sf_snap *s, const struct sf_ent *f,
			   uint64_t pc)
{
	const struct jsf_row *r = s->rows + f->row0;
	uint32_t off = (uint32_t)(pc - f->start), a = 0, b = f->nrows;
	while (a < b) { /* first row with offset > off */
		uint32_t m = a + (b - a) / 2;
		if (r[m].offset <= off)
			a = m + 1;
		else
			b = m;
	}
	return r[a ? a - 1 : 0];
}
