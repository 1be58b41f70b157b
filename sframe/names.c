/* SPDX-License-Identifier: MIT */
/*
 * Function names in a section block (docs/ABI.md 1.4): an append-only name
 * area after the function log and a name index parallel to the log (one
 * u32 per log entry: the offset of its name's record, 0 for none). Nothing
 * here is part of the SFrame section, and a reader that does not know the
 * feature bit never looks at it. Producer helpers (region.c calls them
 * under its mutex), the reader's jsf_view_name and the validator's check.
 */
#include "internal.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#define NAME_TRIES 4096 /* bounded retries of a live read, as lookups */

static uint32_t cut_len(const char *name)
{
	size_t n = strnlen(name, SF_NAME_MAX);
	return (uint32_t)n;
}

/* A record: u16 length, the bytes, a NUL; in a SRCMAP block then u32
 * map length and the map's bytes (docs/ABI.md 1.5). */
uint32_t sf_name_rec_len(const char *name, uint32_t maplen, bool srcmap)
{
	return name ? 2 + cut_len(name) + 1 + (srcmap ? 4 + maplen : 0) : 0;
}

static bool has_names(const uint8_t *blk)
{
	return LD32(blk + SB_FEATURES) & SB_F_NAMES;
}

static bool has_srcmap(const uint8_t *blk)
{
	return (LD32(blk + SB_FEATURES) & (SB_F_NAMES | SB_F_SRCMAP)) ==
	       (SB_F_NAMES | SB_F_SRCMAP);
}

/* Bytes of the name part of the record at o in a trusted (own) block. */
static uint32_t name_len_at(const uint8_t *area, uint32_t o)
{
	return o ? 2 + (uint32_t)ldu(area + o, 2) + 1 : 0;
}

/* Bytes of the whole record at o in a trusted (own) block. */
static uint32_t rec_len_at(const uint8_t *area, uint32_t o, bool srcmap)
{
	uint32_t n = name_len_at(area, o);
	return n && srcmap ? n + 4 + ldu(area + o + n, 4) : n;
}

uint64_t sf_names_kept(const uint8_t *blk, const uint32_t *remap, uint32_t ln,
		       bool srcmap)
{
	if (!blk || !has_names(blk))
		return 0;
	const uint8_t *nidx = blk + LD32(blk + SB_NIDX_OFF);
	const uint8_t *area = blk + LD32(blk + SB_NAMES_OFF);
	bool old = has_srcmap(blk);
	uint64_t n = 0;
	for (uint32_t i = 0; i < ln; i++)
		if (!remap || remap[i] != UINT32_MAX) {
			uint32_t o = LD32(nidx + 4 * (size_t)i);
			/* a record gains an empty map in a SRCMAP block */
			n += rec_len_at(area, o, old) +
			     (o && srcmap && !old ? 4 : 0);
		}
	return n;
}

uint64_t sf_names_layout(uint32_t log_off, uint32_t log_cap, uint64_t need,
			 struct sf_nlay *lay)
{
	return sf_names_layout_cap(log_off, log_cap,
				   2 * (need + SF_NAMES_FIRST) + 1024, lay);
}

uint64_t sf_names_layout_cap(uint32_t log_off, uint32_t log_cap, uint64_t cap,
			     struct sf_nlay *lay)
{
	uint64_t nidx =
	    (uint64_t)log_off + (uint64_t)log_cap * SF_LOG_ENTRY_SIZE;
	uint64_t names = (nidx + 4 * (uint64_t)log_cap + 7) / 8 * 8;
	cap = (cap + 63) / 64 * 64;
	if (cap > 0x7fffffff || names + cap > 0xffffffffu)
		return UINT64_MAX; /* does not fit the u32 offsets */
	lay->nidx_off = (uint32_t)nidx;
	lay->names_off = (uint32_t)names;
	lay->names_cap = (uint32_t)cap;
	return (names + cap + 4095) / 4096 * 4096;
}

void sf_names_carry(uint8_t *blk, const struct sf_nlay *lay, const uint8_t *old,
		    const uint32_t *remap, uint32_t ln, bool srcmap)
{
	uint8_t *nidx = blk + lay->nidx_off, *area = blk + lay->names_off;
	uint32_t used = SF_NAMES_FIRST;
	ST32(area, 0);
	bool osm = old && has_srcmap(old);
	bool whole = old && has_names(old) && osm == srcmap;
	for (uint32_t i = 0; whole && remap && i < ln; i++)
		whole = remap[i] == i;
	if (whole && LD32(old + SB_NAMES_OFF) % 8 == 0) {
		/* nothing dropped: the index and the used area as they are,
		 * the area word by word (both 8-aligned) */
		const uint8_t *onidx = old + LD32(old + SB_NIDX_OFF);
		const uint8_t *oarea = old + LD32(old + SB_NAMES_OFF);
		used = LD32(old + SB_NAMES_LEN);
		for (uint32_t i = 0; i < ln; i++)
			ST32(nidx + 4 * (size_t)i, LD32(onidx + 4 * (size_t)i));
		for (uint32_t b = 0; b < used; b += 8)
			ST64(area + b, LD64(oarea + b));
	} else if (old && has_names(old)) {
		const uint8_t *onidx = old + LD32(old + SB_NIDX_OFF);
		const uint8_t *oarea = old + LD32(old + SB_NAMES_OFF);
		for (uint32_t i = 0; i < ln; i++) {
			uint32_t to = remap ? remap[i] : i;
			if (to == UINT32_MAX)
				continue;
			uint32_t o = LD32(onidx + 4 * (size_t)i);
			uint32_t l = name_len_at(oarea, o);
			if (srcmap && osm) /* the map comes along */
				l = rec_len_at(oarea, o, true);
			else if (srcmap && l) /* gains an empty one */
				stu(area + used + l, 0, 4);
			ST32(nidx + 4 * (size_t)to, l ? used : 0);
			copy_out(area + used, oarea + o, l);
			used += l + (srcmap && !osm && l ? 4 : 0);
		}
	} else {
		for (uint32_t i = 0; i < ln; i++)
			if (!remap || remap[i] != UINT32_MAX)
				ST32(nidx + 4 * (size_t)(remap ? remap[i] : i),
				     0);
	}
	ST32(blk + SB_NIDX_OFF, lay->nidx_off);
	ST32(blk + SB_NAMES_OFF, lay->names_off);
	ST32(blk + SB_NAMES_CAP, lay->names_cap);
	ST32(blk + SB_NAMES_LEN, used);
	ST32(blk + SB_FEATURES, SB_F_NAMES | (srcmap ? SB_F_SRCMAP : 0));
}

void sf_names_init(uint8_t *blk, const struct sf_nlay *lay, bool srcmap)
{
	ST32(blk + lay->names_off, 0);
	ST32(blk + SB_NIDX_OFF, lay->nidx_off);
	ST32(blk + SB_NAMES_OFF, lay->names_off);
	ST32(blk + SB_NAMES_CAP, lay->names_cap);
	ST32(blk + SB_NAMES_LEN, SF_NAMES_FIRST);
	ST32(blk + SB_FEATURES, SB_F_NAMES | (srcmap ? SB_F_SRCMAP : 0));
}

uint32_t sf_names_rec1(const uint8_t *blk, uint32_t idx)
{
	if (!has_names(blk))
		return 0;
	uint32_t o = LD32(blk + LD32(blk + SB_NIDX_OFF) + 4 * (size_t)idx);
	return rec_len_at(blk + LD32(blk + SB_NAMES_OFF), o, has_srcmap(blk));
}

void sf_names_copy1(uint8_t *nblk, uint32_t nidx, const uint8_t *old,
		    uint32_t oidx, uint32_t len)
{
	if (!has_names(nblk))
		return;
	uint32_t o = 0;
	if (len) {
		const uint8_t *src =
		    old + LD32(old + SB_NAMES_OFF) +
		    LD32(old + LD32(old + SB_NIDX_OFF) + 4 * (size_t)oidx);
		uint8_t *area = nblk + LD32(nblk + SB_NAMES_OFF);
		o = LD32(nblk + SB_NAMES_LEN);
		copy_out(area + o, src, len); /* (old: the producer's own) */
		ST32(nblk + SB_NAMES_LEN, o + len);
	}
	ST32(nblk + LD32(nblk + SB_NIDX_OFF) + 4 * (size_t)nidx, o);
}

bool sf_names_room(const uint8_t *blk, const char *name, uint32_t maplen,
		   bool srcmap)
{
	if (!has_names(blk) || (srcmap && !has_srcmap(blk)))
		return false;
	return LD32(blk + SB_NAMES_CAP) - LD32(blk + SB_NAMES_LEN) >=
	       sf_name_rec_len(name, maplen, has_srcmap(blk));
}

void sf_names_put(uint8_t *blk, uint32_t idx, const char *name, const void *map,
		  uint32_t maplen)
{
	if (!has_names(blk))
		return;
	uint32_t o = 0;
	if (name) {
		uint8_t *area = blk + LD32(blk + SB_NAMES_OFF);
		uint32_t n = cut_len(name);
		o = LD32(blk + SB_NAMES_LEN);
		/* the record, beyond anything an index entry refers to... */
		stu(area + o, n, 2);
		copy_out(area + o + 2, (const uint8_t *)name, n);
		ST8(area + o + 2 + n, 0);
		uint32_t end = o + 2 + n + 1;
		if (has_srcmap(blk)) {
			stu(area + end, map ? maplen : 0, 4);
			if (map)
				copy_out(area + end + 4, map, maplen);
			end += 4 + (map ? maplen : 0);
		}
		ST32(blk + SB_NAMES_LEN, end);
	}
	/* ...then the entry's index slot; both before log_n counts it. */
	ST32(blk + LD32(blk + SB_NIDX_OFF) + 4 * (size_t)idx, o);
}

/* The name area of a block, bounds-checked against `avail` readable
 * bytes: 1 and *area, *alen (bytes in use), *nidx; 0 no names; -EBADMSG. */
static int area_of(const uint8_t *blk, uint64_t avail, uint32_t log_n,
		   const uint8_t **nidx, const uint8_t **area, uint32_t *alen)
{
	if (avail < SF_SHDR_SIZE)
		return -EBADMSG;
	if (!has_names(blk))
		return 0;
	uint64_t io = LD32(blk + SB_NIDX_OFF), ao = LD32(blk + SB_NAMES_OFF);
	uint64_t cap = LD32(blk + SB_NAMES_CAP), len = LD32(blk + SB_NAMES_LEN);
	uint64_t log_end = LD32(blk + SB_LOG_OFF) +
			   (uint64_t)LD32(blk + SB_LOG_CAP) * SF_LOG_ENTRY_SIZE;
	if (io % 4 || io < log_end || io + 4 * (uint64_t)log_n > ao ||
	    ao + cap > avail || len > cap || len < SF_NAMES_FIRST)
		return -EBADMSG;
	*nidx = blk + io;
	*area = blk + ao;
	*alen = (uint32_t)len;
	return 1;
}

/* The record at o of an area of alen bytes: its text length, or -1. */
static int rec_at(const uint8_t *area, uint32_t alen, uint32_t o)
{
	if (o < SF_NAMES_FIRST || o > alen || alen - o < 3)
		return -1;
	uint32_t n = ldu(area + o, 2);
	if (n > SF_NAME_MAX || n > alen - o - 3 || LD8(area + o + 2 + n) != 0)
		return -1;
	for (uint32_t i = 0; i < n; i++) /* a C string: no NUL inside */
		if (!LD8(area + o + 2 + i))
			return -1;
	return (int)n;
}

/* The map after the name record at o (its text n bytes): its length and
 * *at its offset in the area, -1 damaged. */
static int64_t map_at(const uint8_t *area, uint32_t alen, uint32_t o,
		      uint32_t n, uint32_t *at)
{
	uint64_t e = (uint64_t)o + 2 + n + 1;
	if (e + 4 > alen)
		return -1;
	uint32_t ml = ldu(area + e, 4);
	if (ml > alen - e - 4)
		return -1;
	*at = (uint32_t)e + 4;
	return ml;
}

int sf_srcmap_read(const uint8_t *blk, uint64_t avail, uint32_t log_n,
		   uint32_t idx, void *buf, size_t len)
{
	const uint8_t *nidx, *area;
	uint32_t alen, at;
	int rc = area_of(blk, avail, log_n, &nidx, &area, &alen);
	if (rc <= 0)
		return rc ? rc : -ENODATA;
	if (!has_srcmap(blk))
		return -ENODATA;
	if (idx >= log_n)
		return -EBADMSG;
	uint32_t o = LD32(nidx + 4 * (size_t)idx);
	if (!o)
		return -ENODATA;
	int n = rec_at(area, alen, o);
	int64_t ml = n < 0 ? -1 : map_at(area, alen, o, (uint32_t)n, &at);
	if (ml < 0 || ml > INT32_MAX)
		return -EBADMSG;
	if (!ml)
		return -ENODATA;
	uint8_t *d = buf;
	for (size_t i = 0; d && i < (size_t)ml && i < len; i++)
		d[i] = LD8(area + at + i);
	return (int)ml;
}

int sf_name_read(const uint8_t *blk, uint64_t avail, uint32_t log_n,
		 uint32_t idx, char *buf, size_t len)
{
	const uint8_t *nidx, *area;
	uint32_t alen;
	int rc = area_of(blk, avail, log_n, &nidx, &area, &alen);
	if (rc <= 0)
		return rc ? rc : -ENODATA;
	if (idx >= log_n)
		return -EBADMSG;
	uint32_t o = LD32(nidx + 4 * (size_t)idx);
	if (!o)
		return -ENODATA;
	int n = rec_at(area, alen, o);
	if (n < 0)
		return -EBADMSG;
	if (buf && len) {
		size_t c = (size_t)n < len - 1 ? (size_t)n : len - 1;
		for (size_t i = 0; i < c; i++)
			buf[i] = (char)LD8(area + o + 2 + i);
		buf[c] = 0;
	}
	return n;
}

int sf_names_check(const uint8_t *blk, uint64_t total, char *msg, size_t msglen)
{
	const uint8_t *nidx = NULL, *area = NULL;
	uint32_t alen = 0, log_n = LD32(blk + SB_LOG_N);
	uint32_t feat = LD32(blk + SB_FEATURES);
	if (!(feat & SB_F_NAMES))
		return 0; /* no name area (other bits: not ours to judge) */
	int rc = area_of(blk, total, log_n, &nidx, &area, &alen);
	if (rc == 0)
		return 0;
	if (rc < 0) {
		sf_msg(msg, msglen,
		       "name area: index at %u, area at %u (%u of %u bytes "
		       "used) outside the block or overlapping the log",
		       LD32(blk + SB_NIDX_OFF), LD32(blk + SB_NAMES_OFF),
		       LD32(blk + SB_NAMES_LEN), LD32(blk + SB_NAMES_CAP));
		return -EBADMSG;
	}
	uint64_t io = LD32(blk + SB_NIDX_OFF);
	if (io + 4 * (uint64_t)LD32(blk + SB_LOG_CAP) >
	    LD32(blk + SB_NAMES_OFF)) {
		sf_msg(msg, msglen,
		       "name area: the index of %u entries overlaps the names",
		       LD32(blk + SB_LOG_CAP));
		return -EBADMSG;
	}
	for (uint32_t i = 0; i < log_n; i++) {
		uint32_t o = LD32(nidx + 4 * (size_t)i);
		int n = o ? rec_at(area, alen, o) : 0;
		uint32_t at;
		if (n >= 0 && o && has_srcmap(blk) &&
		    map_at(area, alen, o, (uint32_t)n, &at) < 0) {
			sf_msg(msg, msglen,
			       "function log entry %u: its Lua frame map after "
			       "the name record at %u runs past the %u bytes "
			       "of the name area",
			       i, o, alen);
			return -EBADMSG;
		}
		if (n < 0) {
			sf_msg(msg, msglen,
			       "function log entry %u: name record at %u "
			       "outside the %u bytes of the name area, not "
			       "terminated or with a NUL inside",
			       i, o, alen);
			return -EBADMSG;
		}
	}
	return 0;
}

/* One attempt on a live block: the name (or map) of the function
 * covering pc at t (0: live now). hint: its log index by the view's index
 * of the log (sf_view_log_find), -1 none there, -2 none given (scan). */
static int live_name_once(const uint8_t *m, uint64_t limit, uint64_t pc,
			  uint64_t t, char *buf, size_t len, bool map,
			  uint64_t *start, int64_t hint)
{
	uint64_t off = LD64(m + RH_SEC_OFF);
	if (off < SF_RHDR_SIZE || off % 8 || off + SF_SHDR_SIZE > limit)
		return -EBADMSG;
	const uint8_t *blk = m + off;
	uint64_t total = LD64(blk + SB_TOTAL);
	uint64_t log_off = LD32(blk + SB_LOG_OFF),
		 log_cap = LD32(blk + SB_LOG_CAP);
	uint32_t log_n = LD32A(blk + SB_LOG_N);
	if (total > limit - off ||
	    log_off + log_cap * SF_LOG_ENTRY_SIZE > total || log_n > log_cap)
		return -EBADMSG;
	if (hint == -1)
		return -ENOENT;
	if (hint >= 0 && (uint64_t)hint >= log_n)
		return -EBADMSG; /* not this table's: the seq check says */
	/* the hint's entry (checked), else the log newest first */
	for (int64_t k = hint >= 0 ? -1 : 0; k < (int64_t)log_n; k++) {
		uint32_t i = k < 0 ? (uint32_t)hint : log_n - 1 - (uint32_t)k;
		const uint8_t *p =
		    blk + log_off + (size_t)i * SF_LOG_ENTRY_SIZE;
		if (sf_log_covers(p, pc, t)) {
			if (start)
				*start = LD64(p + LE_START);
			return map ? sf_srcmap_read(blk, total, log_n, i, buf,
						    len)
				   : sf_name_read(blk, total, log_n, i, buf,
						  len);
		}
	}
	return -ENOENT;
}

static int view_name(const struct jsf_view *v, uint64_t pc, uint64_t at_ns,
		     char *buf, size_t len, bool map, uint64_t *start)
{
	if (!v || (!buf && len))
		return -EINVAL;
	uint64_t limit;
	const uint8_t *m = sf_view_live(v, &limit);
	if (!m) {
		struct sf_snap tmp = {0};
		const struct sf_snap *s;
		int err = sf_view_snap(v, &tmp, &s); /* its own: no copy */
		if (err)
			return err;
		const struct sf_ent *f = sf_snap_find(s, pc, at_ns);
		if (f && start)
			*start = f->start;
		if (f && map)
			return sf_srcmap_read(s->blk, s->blk_len, s->log_n,
					      f->log_idx, buf, len);
		return f ? sf_name_read(s->blk, s->blk_len, s->log_n,
					f->log_idx, buf, len)
			 : -ENOENT;
	}
	for (int tries = 0; tries < NAME_TRIES; tries++) {
		uint64_t s1 = LD64A(m + RH_SEQ);
		if (s1 & 1) {
			if (tries > 64)
				sched_yield();
			continue;
		}
		if (tries)
			m = sf_view_live(v, &limit);
		int rc =
		    live_name_once(m, limit, pc, at_ns, buf, len, map, start,
				   sf_view_log_find(v, s1, pc, at_ns));
		if (LD64(m + RH_SEQ) != s1)
			continue; /* rewritten under us: what we read is void */
		return rc;
	}
	return -EAGAIN;
}

int jsf_view_name(const struct jsf_view *v, uint64_t pc, uint64_t at_ns,
		  char *buf, size_t len)
{
	return view_name(v, pc, at_ns, buf, len, false, NULL);
}

int jsf_view_srcmap(const struct jsf_view *v, uint64_t pc, uint64_t at_ns,
		    void *buf, size_t len, uint64_t *func_start)
{
	return view_name(v, pc, at_ns, buf, len, true, func_start);
}
