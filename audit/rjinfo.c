/* SPDX-License-Identifier: MIT */
/*
 * Names from a RaptorJIT auditlog for listings (audit/rjlog.h): where a
 * trace starts (chunk:line, as -jv prints it), and the enumerator names of
 * the VM's enums (TraceError, TraceLink, ...) from the log's own DWARF.
 * Everything through the log's DWARF and its memory records, by field
 * name; nothing here knows an offset.
 */
#include "rjdwarf.h"
#include "rjlog.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rd_le(const uint8_t *p, uint32_t n)
{
	uint64_t v = 0;
	for (uint32_t i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

int rj_log_getf(const struct rj_log *log, const char *type, const char *member,
		const uint8_t *raw, size_t rawlen, uint64_t *val)
{
	uint32_t off, size;
	if (rj_log_field(log, type, member, &off, &size))
		return -ENOENT;
	if (size == 0 || size > 8 || off > rawlen || rawlen - off < size)
		return -ERANGE;
	*val = rd_le(raw + off, size);
	return 0;
}

/* The bytes of the memory record `hint` at addr, `len` of them, logged
 * before `before`; NULL if none. */
static const uint8_t *mem(const struct rj_log *log, uint64_t addr, size_t len,
			  const char *hint, size_t before)
{
	if (!addr || !len)
		return NULL;
	return rj_log_memory(log, addr, len, hint, before);
}

/* A GCstr's text (a GCstr header, then len bytes): 0, or -ENOENT. */
static int gcstr(const struct rj_log *log, uint64_t addr, size_t before,
		 char *out, size_t cap)
{
	uint32_t hsz = rj_log_type_size(log, "GCstr");
	const uint8_t *h = mem(log, addr, hsz, NULL, before);
	uint64_t len;
	if (!h || rj_log_getf(log, "GCstr", "len", h, hsz, &len) ||
	    len > 1u << 20)
		return -ENOENT;
	const uint8_t *s = mem(log, addr, hsz + len, NULL, before);
	if (!s)
		return -ENOENT;
	size_t n = len < cap ? (size_t)len : cap - 1;
	memcpy(out, s + hsz, n);
	out[n] = 0;
	return 0;
}

int rj_log_proto_loc(const struct rj_log *log, uint64_t pt, uint64_t pc,
		     size_t before, char *out, size_t cap)
{
	snprintf(out, cap, "?");
	uint32_t hsz = rj_log_type_size(log, "GCproto");
	const uint8_t *h = mem(log, pt, hsz, "GCproto", before);
	uint64_t sizept, chunk, first, numline, lineinfo, sizebc;
	if (!h || rj_log_getf(log, "GCproto", "sizept", h, hsz, &sizept) ||
	    rj_log_getf(log, "GCproto", "chunkname", h, hsz, &chunk) ||
	    rj_log_getf(log, "GCproto", "firstline", h, hsz, &first) ||
	    rj_log_getf(log, "GCproto", "numline", h, hsz, &numline) ||
	    rj_log_getf(log, "GCproto", "lineinfo", h, hsz, &lineinfo) ||
	    rj_log_getf(log, "GCproto", "sizebc", h, hsz, &sizebc))
		return -ENOENT;
	char name[256];
	if (gcstr(log, chunk, before, name, sizeof(name)))
		snprintf(name, sizeof(name), "?");
	/* lj_debug_shortname: "@file" and "=name" lose their mark */
	const char *nm = name[0] == '@' || name[0] == '=' ? name + 1 : name;
	/* the bytecode follows the GCproto header (the log's macro
	 * proto_bc(pt): (char *)(pt) + sizeof(GCproto)). The line of a pc:
	 * RaptorJIT's proto_lineinfo(pt) is "mref((pt)->lineinfo, const
	 * uint32_t)", an absolute line per bytecode, the header's (pc 0)
	 * included, so lineinfo[pc]; LuaJIT's is "const void" (entries of 1,
	 * 2 or 4 bytes relative to firstline, the header's left out). Only
	 * the first is read, and a line outside [firstline, firstline +
	 * numline] is not believed. */
	uint32_t bcsz = rj_log_type_size(log, "BCIns");
	const char *lim = rj_log_macro(log, "proto_lineinfo");
	uint64_t bc = pt + hsz;
	int64_t line = -1;
	const uint8_t *all = mem(log, pt, sizept, "GCproto", before);
	if (bcsz && lim && strstr(lim, "uint32_t") && all && pc >= bc &&
	    (pc - bc) % bcsz == 0 && (pc - bc) / bcsz < sizebc &&
	    lineinfo >= pt && lineinfo - pt <= sizept &&
	    (sizept - (lineinfo - pt)) / 4 >= sizebc) {
		const uint8_t *li = all + (lineinfo - pt);
		uint64_t pos = (pc - bc) / bcsz;
		uint64_t l = rd_le(li + 4 * pos, 4);
		if (l >= first && l <= first + numline)
			line = (int64_t)l;
	}
	if (line < 0)
		snprintf(out, cap, "%s:?", nm);
	else
		snprintf(out, cap, "%s:%" PRId64, nm, line);
	return line < 0 ? -ENOENT : 0;
}

int rj_log_trace_loc(const struct rj_log *log, const struct rj_trace *t,
		     char *out, size_t cap)
{
	uint32_t sz = rj_log_type_size(log, "GCtrace");
	uint64_t pt, pc;
	char loc[320], ex[64] = "";
	int rc = -ENOENT;
	if (t->raw &&
	    !rj_log_getf(log, "GCtrace", "startpt", t->raw, sz, &pt) &&
	    !rj_log_getf(log, "GCtrace", "startpc", t->raw, sz, &pc))
		rc = rj_log_proto_loc(log, pt, pc, t->record_offset, loc,
				      sizeof(loc));
	else
		snprintf(loc, sizeof(loc), "?");
	/* -jv's "(parent/exit) ": a side trace; a trace after a stitching
	 * one has parent 0 and its exitno the stitching trace's number */
	if (t->parent)
		snprintf(ex, sizeof(ex), "(%u/%u) ", t->parent, t->exitno);
	else if (t->exitno)
		snprintf(ex, sizeof(ex), "(%u/stitch) ", t->exitno);
	snprintf(out, cap, "%s%s", ex, loc);
	return rc;
}

/* ------------------------------------------------------------ enums */

/* Every enumerator of the log's DWARF (rjd_enums, through the DWARF the
 * reader already opened). -ENOENT without DWARF. */
static int walk_enums(const struct rj_log *log, rjd_enum_fn fn, void *arg)
{
	struct rjd *d = rj_log_rjd(log);
	return d ? rjd_enums(d, fn, arg) : -ENOENT;
}

struct enum_table {
	const char *type, *strip;
	char (*names)[RJ_ENUM_NAME];
	size_t max;
	int n;
};

static int table_fn(const char *type, const char *name, int64_t val, void *arg)
{
	struct enum_table *e = arg;
	if (!type || strcmp(type, e->type) || val < 0 ||
	    (uint64_t)val >= e->max || e->names[val][0])
		return 0;
	size_t sl = e->strip ? strlen(e->strip) : 0;
	if (sl && !strncmp(name, e->strip, sl))
		name += sl;
	snprintf(e->names[val], RJ_ENUM_NAME, "%s", name);
	e->n++;
	return 0;
}

int rj_log_enum(const struct rj_log *log, const char *type, const char *strip,
		char (*names)[RJ_ENUM_NAME], size_t max)
{
	for (size_t i = 0; i < max; i++)
		names[i][0] = 0;
	struct enum_table e = {type, strip, names, max, 0};
	int rc = walk_enums(log, table_fn, &e);
	if (rc)
		return rc;
	return e.n ? e.n : -ENOENT;
}

struct enum_one {
	const char *name;
	int64_t val;
};

static int one_fn(const char *type, const char *name, int64_t val, void *arg)
{
	(void)type;
	struct enum_one *e = arg;
	if (strcmp(name, e->name))
		return 0;
	e->val = val;
	return 1;
}

int rj_log_enumerator(const struct rj_log *log, const char *name, int64_t *val)
{
	struct enum_one e = {name, 0};
	int rc = walk_enums(log, one_fn, &e);
	if (rc == 1) {
		*val = e.val;
		return 0;
	}
	return rc < 0 ? rc : -ENOENT;
}
