/* SPDX-License-Identifier: MIT */
/*
 * The validator: the rules the proposed kernel SFrame unwinder applies before
 * trusting a section (docs/ABI.md, "Validation"), plus the region's own
 * invariants. Every check names the first violation it finds.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The section being checked is private memory, possibly unaligned. */
static uint16_t rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}
static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}
static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

#define BAD(...)                                  \
	do {                                      \
		sf_msg(msg, msglen, __VA_ARGS__); \
		return -EBADMSG;                  \
	} while (0)

int sf_validate_sframe(const void *buf, size_t len, uint64_t sec_addr,
		       uint64_t text_start, uint64_t text_size,
		       bool allow_empty, char *msg, size_t msglen)
{
	const uint8_t *b = buf;
	if (!buf || len < SFRAME_HDR_SIZE)
		BAD("section shorter than the %d-byte SFrame header",
		    SFRAME_HDR_SIZE);
	if (rd16(b) != SFRAME_MAGIC)
		BAD("bad magic %#x", rd16(b));
	if (b[2] != SFRAME_V3)
		BAD("version %u (the kernel accepts 3 only)", b[2]);
	uint8_t flags = b[3];
	if (flags & ~(SFRAME_F_FDE_SORTED | SFRAME_F_FDE_FUNC_START_PCREL))
		BAD("unknown or V1/V2-only flags %#x", flags);
	if (!(flags & SFRAME_F_FDE_SORTED))
		BAD("FDE_SORTED flag not set");
	if (!(flags & SFRAME_F_FDE_FUNC_START_PCREL))
		BAD("FDE_FUNC_START_PCREL flag not set");
	if (b[4] != JSF_ARCH_X86_64)
		BAD("ABI/arch %u, expected %d (AMD64 little-endian)", b[4],
		    JSF_ARCH_X86_64);
	if ((int8_t)b[5] != 0)
		BAD("cfa_fixed_fp_offset %d, must be 0 on AMD64", (int8_t)b[5]);
	if ((int8_t)b[6] != SFRAME_RA_FIXED_X86_64)
		BAD("cfa_fixed_ra_offset %d, must be -8 on AMD64",
		    (int8_t)b[6]);
	if (b[7] != 0)
		BAD("auxhdr_len %u, must be 0", b[7]);
	uint32_t nf = rd32(b + SH_NUM_FDES), nfres = rd32(b + SH_NUM_FRES);
	uint32_t fre_len = rd32(b + SH_FRE_LEN), fdeoff = rd32(b + SH_FDEOFF);
	uint32_t freoff = rd32(b + SH_FREOFF);
	if (!allow_empty && nf == 0)
		BAD("num_fdes is 0");
	if (!allow_empty && nfres == 0)
		BAD("num_fres is 0");
	uint64_t body = len - SFRAME_HDR_SIZE;
	if ((uint64_t)fdeoff + (uint64_t)nf * SFRAME_V3_FDE_SIZE > body)
		BAD("FDE sub-section [%u, +%u*16) outside the section (%llu)",
		    fdeoff, nf, (unsigned long long)body);
	if ((uint64_t)freoff <
	    (uint64_t)fdeoff + (uint64_t)nf * SFRAME_V3_FDE_SIZE)
		BAD("inconsistent fde/fre offsets: FRE sub-section at %u "
		    "starts "
		    "inside or before the FDE sub-section [%u, +%u*16)",
		    freoff, fdeoff, nf);
	if ((uint64_t)freoff + fre_len > body)
		BAD("FRE sub-section [%u, +%u) outside the section (%llu)",
		    freoff, fre_len, (unsigned long long)body);
	const uint8_t *fdes = b + SFRAME_HDR_SIZE + fdeoff;
	const uint8_t *fre = b + SFRAME_HDR_SIZE + freoff;
	uint64_t prev_start = 0, prev_end = 0, seen_fres = 0;
	for (uint32_t i = 0; i < nf; i++) {
		const uint8_t *p = fdes + (size_t)i * SFRAME_V3_FDE_SIZE;
		uint64_t field = sec_addr + (uint64_t)(p - b);
		uint64_t start = field + rd64(p);
		uint32_t size = rd32(p + 8), attr = rd32(p + 12);
		if (text_size &&
		    (start < text_start || start - text_start >= text_size ||
		     size > text_size - (start - text_start)))
			BAD("FDE %u: function [%#llx, +%u) outside the text "
			    "[%#llx, +%#llx)",
			    i, (unsigned long long)start, size,
			    (unsigned long long)text_start,
			    (unsigned long long)text_size);
		if (i && start <= prev_start)
			BAD("FDE %u: start %#llx does not increase (previous "
			    "%#llx)",
			    i, (unsigned long long)start,
			    (unsigned long long)prev_start);
		if (i && start < prev_end)
			BAD("FDE %u: start %#llx overlaps the previous "
			    "function "
			    "ending at %#llx",
			    i, (unsigned long long)start,
			    (unsigned long long)prev_end);
		if (start + size < start)
			BAD("FDE %u: function wraps the address space", i);
		prev_start = start;
		prev_end = start + size;
		if (attr > fre_len || fre_len - attr < SFRAME_V3_ATTR_SIZE)
			BAD("FDE %u: attribute record at %u outside the FRE "
			    "sub-section (%u bytes)",
			    i, attr, fre_len);
		const uint8_t *a = fre + attr;
		uint32_t n = ldu(a, 2);
		uint8_t info = a[2], info2 = a[3], rep = a[4];
		unsigned t = info & 0xf, pctype = (info >> 4) & 1;
		if (n == 0)
			BAD("FDE %u: no FREs", i);
		if (n > size)
			BAD("FDE %u: %u FREs for a %u-byte function", i, n,
			    size);
		if (t > 2)
			BAD("FDE %u: FRE type %u", i, t);
		if (pctype == 1 && rep == 0)
			BAD("FDE %u: PC-mask FDE with rep_size 0", i);
		if ((info2 & 0x0f) != 0)
			BAD("FDE %u: FDE type %u (only the default type is "
			    "supported)",
			    i, info2 & 0x0f);
		size_t off = attr + SFRAME_V3_ATTR_SIZE;
		uint32_t prev = 0;
		for (uint32_t k = 0; k < n; k++) {
			struct jsf_row r;
			unsigned aw = 1u << t;
			if (off + aw + 1 > fre_len)
				BAD("FDE %u FRE %u: runs past the FRE "
				    "sub-section",
				    i, k);
			uint8_t finfo = fre[off + aw];
			unsigned nw = (finfo >> 1) & 0xf, ws = (finfo >> 5) & 3;
			if (ws > 2)
				BAD("FDE %u FRE %u: data-word size code %u", i,
				    k, ws);
			if (nw > 2)
				BAD("FDE %u FRE %u: %u data words (AMD64 has "
				    "CFA and FP "
				    "only)",
				    i, k, nw);
			if (finfo & 0x80)
				BAD("FDE %u FRE %u: mangled-RA bit on AMD64", i,
				    k);
			size_t l =
			    sf_decode_fre(fre + off, fre_len - off, t, &r);
			if (!l)
				BAD("FDE %u FRE %u: data words run past the "
				    "FRE "
				    "sub-section",
				    i, k);
			if (r.offset >= size)
				BAD("FDE %u FRE %u: start offset %u >= "
				    "function size %u",
				    i, k, r.offset, size);
			if (k && r.offset <= prev)
				BAD("FDE %u FRE %u: start offset %u does not "
				    "increase",
				    i, k, r.offset);
			if (k == 0 && r.offset != 0)
				BAD("FDE %u: first FRE starts at %u, not 0", i,
				    r.offset);
			prev = r.offset;
			off += l;
		}
		seen_fres += n;
	}
	if (seen_fres > nfres)
		BAD("FDEs reference %llu FREs, header num_fres is %u",
		    (unsigned long long)seen_fres, nfres);
	sf_msg(msg, msglen, "valid SFrame V3 section: %u functions, %u FREs",
	       nf, nfres);
	return 0;
}

int jsf_validate_sframe(const void *buf, size_t len, uint64_t sec_addr,
			uint64_t text_start, uint64_t text_size, char *msg,
			size_t msglen)
{
	return sf_validate_sframe(buf, len, sec_addr, text_start, text_size,
				  false, msg, msglen);
}

/* The SFrame index (nf entries at fdes) holds exactly the log's live
 * functions, in order; with skip, without the entry of that log index (an
 * add in flight); with tmax, also the entries removed at tmax (a removal
 * in flight). Sets why on a mismatch. */
static int index_matches(const struct sf_snap *s, const uint8_t *fdes,
			 uint32_t nf, uint32_t skip, uint64_t tmax, char *why,
			 size_t whylen)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < s->log_n; i++) {
		const struct sf_ent *e = &s->e[i];
		bool in = e->remove ? (tmax && e->remove == tmax)
				    : e->log_idx != skip;
		if (!in)
			continue;
		if (k == nf) {
			sf_msg(why, whylen,
			       "live function %#llx is missing from the index",
			       (unsigned long long)e->start);
			return 0;
		}
		const uint8_t *p = fdes + (size_t)k * 16;
		uint64_t start = s->blk_addr + (uint64_t)(p - s->blk) + rd64(p);
		if (start != e->start || rd32(p + 8) != e->size ||
		    rd32(p + 12) != e->attr) {
			sf_msg(why, whylen,
			       "index entry %u (%#llx) does not match live "
			       "function "
			       "%#llx of the log",
			       k, (unsigned long long)start,
			       (unsigned long long)e->start);
			return 0;
		}
		k++;
	}
	if (k != nf) {
		sf_msg(why, whylen,
		       "index has %u entries, the log %u live functions", nf,
		       k);
		return 0;
	}
	return 1;
}

/* Records of a tag, a version and a size of at least 8 tiling len bytes
 * at a (what: the area's name for the message). 0 or -1. */
static int records_check(const uint8_t *a, uint32_t len, const char *what,
			 char *msg, size_t msglen)
{
	uint32_t o = 0;
	while (o < len) {
		uint16_t sz = 0;
		if (len - o >= 8)
			memcpy(&sz, a + o + 6, 2);
		if (len - o < 8 || sz < 8 || sz > len - o) {
			sf_msg(msg, msglen,
			       "%s: the record at %u (%u bytes) does not fit "
			       "its %u bytes",
			       what, o, len - o < 8 ? len - o : sz, len);
			return -1;
		}
		o += sz;
	}
	return 0;
}

/* The runtime area (docs/ABI.md 1.6): within its 3072 bytes, tiled by
 * records; the runtime extension (1.7): a whole number of pages, at most
 * 1 MiB, below the first block, in use no more than it has, tiled the
 * same. 0, or -1 with the reason in msg. */
static int runtime_check(const char *path, uint64_t sec_off, char *msg,
			 size_t msglen)
{
	uint8_t h[SF_RHDR_SIZE];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : pread(fd, h, sizeof(h), 0);
	int rc = 0;
	if (n != (ssize_t)sizeof(h))
		goto out; /* (the header was read and checked by sf_load) */
	uint32_t feat = rd32(h + RH_FEATURES);
	uint32_t len = rd32(h + RH_RT_LEN);
	if ((feat & RH_F_RUNTIME) && len > RH_RT_MAX) {
		sf_msg(msg, msglen, "runtime area of %u bytes (at most %d)",
		       len, RH_RT_MAX);
		rc = -1;
	} else if (feat & RH_F_RUNTIME) {
		rc = records_check(h + RH_RT_OFF, len, "runtime area", msg,
				   msglen);
	}
	if (rc || !(feat & RH_F_RTX))
		goto out;
	uint32_t cap = rd32(h + RH_RTX_CAP), xl = rd32(h + RH_RTX_LEN);
	if (cap % 4096 || cap > RH_RTX_MAX || xl > cap ||
	    sec_off < (uint64_t)RH_RTX_OFF + cap) {
		sf_msg(msg, msglen,
		       "runtime extension of %u bytes, %u in use, the block "
		       "at %llu (a whole number of pages up to 1 MiB, below "
		       "the block)",
		       cap, xl, (unsigned long long)sec_off);
		rc = -1;
		goto out;
	}
	uint8_t *x = xl ? malloc(xl) : NULL;
	if (xl && (!x || pread(fd, x, xl, RH_RTX_OFF) != (ssize_t)xl)) {
		sf_msg(msg, msglen, "runtime extension: cannot read %u bytes",
		       xl);
		rc = -1;
	} else {
		rc = records_check(x, xl, "runtime extension", msg, msglen);
	}
	free(x);
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

int jsf_validate_region(const char *path, char *msg, size_t msglen)
{
	struct sf_rinfo ri;
	struct sf_snap s;
	bool live, recovered;
	char sub[400];
	int err = sf_load(path, &ri, &s, &live, &recovered, sub, sizeof(sub));
	if (err) {
		sf_msg(msg, msglen, "%s", sub);
		return err == -ENOMEM ? err : -EBADMSG;
	}
	if (runtime_check(path, ri.sec_off, sub, sizeof(sub))) {
		sf_msg(msg, msglen, "%s", sub);
		goto bad;
	}
	/* The name area (docs/ABI.md 1.4), when the block has one. */
	if (sf_names_check(s.blk, s.blk_len, sub, sizeof(sub))) {
		sf_msg(msg, msglen, "%s", sub);
		goto bad;
	}
	/* Live functions never overlap (the log is sorted by start). */
	const struct sf_ent *prev = NULL;
	for (uint32_t i = 0; i < s.log_n; i++) {
		const struct sf_ent *e = &s.e[i];
		if (e->remove)
			continue;
		if (prev && prev->start + prev->size > e->start) {
			sf_msg(msg, msglen,
			       "live functions overlap: %#llx+%u and %#llx",
			       (unsigned long long)prev->start, prev->size,
			       (unsigned long long)e->start);
			goto bad;
		}
		prev = e;
	}
	if (recovered) {
		/* The producer died inside a rewrite: the index may be torn;
		 * the log (authoritative, crash-consistent) was checked above
		 * and readers rebuild the index from it (docs/ABI.md,
		 * "Crashes"). */
		sf_msg(msg, msglen,
		       "valid (recovered): producer died mid-update; %u live "
		       "functions rebuilt from the log of %u",
		       s.nlive, s.log_n);
		sf_snap_free(&s);
		return 0;
	}
	err = sf_validate_sframe(s.sf, s.sec_len, s.blk_addr + SF_SHDR_SIZE, 0,
				 0, true, sub, sizeof(sub));
	if (err) {
		sf_msg(msg, msglen, "SFrame section: %s", sub);
		goto bad;
	}
	/* The SFrame index holds exactly the live functions of the log, in
	 * a window of the FDE slots (docs/ABI.md section 2). */
	uint32_t nf = rd32(s.sf + SH_NUM_FDES);
	uint32_t fdeoff = rd32(s.sf + SH_FDEOFF);
	if (fdeoff % 16 != 4 || (fdeoff - 4) / 16 + (uint64_t)nf > s.fde_cap) {
		sf_msg(
		    msg, msglen,
		    "FDE window (fdeoff %u, %u entries) is not a run of the %u "
		    "slots",
		    fdeoff, nf, s.fde_cap);
		goto bad;
	}
	const uint8_t *fdes = s.sf + SFRAME_HDR_SIZE + fdeoff;
	char why[160];
	int match =
	    index_matches(&s, fdes, nf, UINT32_MAX, 0, why, sizeof(why));
	const char *inflight = NULL;
	if (!match && !live && ri.state != SF_STATE_CLOSED) {
		/* A producer killed between the two publishing steps of one
		 * operation (docs/ABI.md section 4): an add whose log entry is
		 * published but not yet its index entry, or a removal whose
		 * tombstone is stored but the index not yet changed. Exactly
		 * one operation can be in flight; the log is authoritative. */
		uint32_t last = UINT32_MAX;
		uint64_t tmax = 0;
		for (uint32_t i = 0; i < s.log_n; i++) {
			if (last == UINT32_MAX ||
			    s.e[i].log_idx > s.e[last].log_idx)
				last = i;
			if (s.e[i].remove > tmax)
				tmax = s.e[i].remove;
		}
		if (last != UINT32_MAX && !s.e[last].remove &&
		    index_matches(&s, fdes, nf, s.e[last].log_idx, 0, NULL, 0))
			inflight = "an add";
		else if (tmax &&
			 index_matches(&s, fdes, nf, UINT32_MAX, tmax, NULL, 0))
			inflight = "a removal";
		match = inflight != NULL;
	}
	if (!match) {
		sf_msg(msg, msglen, "%s", why);
		goto bad;
	}
	if (inflight) {
		sf_msg(msg, msglen,
		       "valid (producer died inside %s: the log is "
		       "authoritative): "
		       "%u live functions, %u logged",
		       inflight, s.nlive, s.log_n);
		sf_snap_free(&s);
		return 0;
	}
	sf_msg(msg, msglen, "valid: %u live functions, %u logged, %s, seq %llu",
	       s.nlive, s.log_n,
	       live
		   ? "live"
		   : (ri.state == SF_STATE_CLOSED ? "closed" : "producer gone"),
	       (unsigned long long)ri.seq);
	sf_snap_free(&s);
	return 0;
bad:
	sf_snap_free(&s);
	return -EBADMSG;
}
