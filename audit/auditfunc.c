/* SPDX-License-Identifier: MIT */
/*
 * Decoder of the LuaJIT bytecode dump in a func record (see auditfunc.h).
 * Written from the format description in LuaJIT's lj_bcdump.h; every read
 * goes through a cursor that knows where the input ends.
 */
#include "auditfunc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cur {
	const uint8_t *p, *end;
	struct alog_fproto *fp;
};

static int fail(struct cur *c, const char *fmt, ...)
{
	if (!c->fp->err[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->fp->err, sizeof(c->fp->err), fmt, ap);
		va_end(ap);
	}
	c->p = c->end;
	return -1;
}

static size_t left(const struct cur *c)
{
	return (size_t)(c->end - c->p);
}

/* A LEB128 of at most 5 bytes (35 bits). */
static int leb5(struct cur *c, uint64_t *out, const char *what)
{
	uint64_t v = 0;
	*out = 0;
	for (int i = 0; i < 5; i++) {
		if (c->p >= c->end)
			return fail(c, "%s: cut short", what);
		uint8_t b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return fail(c, "%s: LEB128 longer than 5 bytes", what);
}

/* An unsigned LEB128 of at most 32 bits. */
static int uleb(struct cur *c, uint32_t *out, const char *what)
{
	uint64_t v;
	*out = 0;
	if (leb5(c, &v, what))
		return -1;
	if (v > 0xffffffffu)
		return fail(c, "%s: too large", what);
	*out = (uint32_t)v;
	return 0;
}

/* A 33-bit LEB128 (flag in bit 0): the number constants. */
static int uleb33(struct cur *c, uint32_t *out, int *flag, const char *what)
{
	uint64_t v;
	*out = 0;
	*flag = 0;
	if (leb5(c, &v, what))
		return -1;
	*flag = (int)(v & 1);
	*out = (uint32_t)(v >> 1);
	return 0;
}

static int byte(struct cur *c, uint8_t *out, const char *what)
{
	if (c->p >= c->end)
		return fail(c, "%s: cut short", what);
	*out = *c->p++;
	return 0;
}

static int skip(struct cur *c, size_t n, const char *what)
{
	if (n > left(c))
		return fail(c, "%s: %zu bytes past the end", what, n - left(c));
	c->p += n;
	return 0;
}

static uint32_t rd32(const uint8_t *q, int be)
{
	return be ? (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 |
			(uint32_t)q[2] << 8 | q[3]
		  : (uint32_t)q[3] << 24 | (uint32_t)q[2] << 16 |
			(uint32_t)q[1] << 8 | q[0];
}

static uint32_t rdn(const uint8_t *q, unsigned lw, int be)
{
	if (lw == 0)
		return q[0];
	if (lw == 1)
		return be ? (uint32_t)q[0] << 8 | q[1]
			  : (uint32_t)q[1] << 8 | q[0];
	return rd32(q, be);
}

static double bits2d(uint32_t lo, uint32_t hi)
{
	uint64_t u = (uint64_t)hi << 32 | lo;
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

/* A template table's key or value: skipped (the record carries the table
 * itself as a logged object). */
static int ktabk(struct cur *c)
{
	uint32_t t, v;
	if (uleb(c, &t, "table constant"))
		return -1;
	if (t >= 5)
		return skip(c, t - 5, "table constant string");
	if (t == 3)
		return uleb(c, &v, "table constant int");
	if (t == 4)
		return uleb(c, &v, "table constant number") ||
		       uleb(c, &v, "table constant number");
	return 0;
}

static int kgc(struct cur *c, struct alog_fkgc *k)
{
	uint32_t t, lo, hi;
	if (uleb(c, &t, "GC constant type"))
		return -1;
	memset(k, 0, sizeof(*k));
	if (t >= ALOG_FK_STR) {
		k->kind = ALOG_FK_STR;
		k->len = t - ALOG_FK_STR;
		k->s = (const char *)c->p;
		return skip(c, k->len, "string constant");
	}
	k->kind = (uint8_t)t;
	switch (t) {
	case ALOG_FK_CHILD:
		return 0;
	case ALOG_FK_TAB: {
		uint32_t na, nh;
		if (uleb(c, &na, "table constant") ||
		    uleb(c, &nh, "table constant"))
			return -1;
		/* each entry takes at least one byte (two for a pair) */
		if (na > left(c) || nh > left(c) / 2)
			return fail(c,
				    "table constant: %u+%u entries in %zu "
				    "bytes",
				    na, nh, left(c));
		for (uint32_t i = 0; i < na; i++)
			if (ktabk(c))
				return -1;
		for (uint32_t i = 0; i < 2 * nh; i++)
			if (ktabk(c))
				return -1;
		return 0;
	}
	case ALOG_FK_I64:
	case ALOG_FK_U64:
	case ALOG_FK_COMPLEX:
		for (int i = 0; i < (t == ALOG_FK_COMPLEX ? 2 : 1); i++) {
			if (uleb(c, &lo, "cdata constant") ||
			    uleb(c, &hi, "cdata constant"))
				return -1;
			k->v[i] = (uint64_t)hi << 32 | lo;
		}
		return 0;
	}
	return fail(c, "unknown GC constant type %u", t);
}

static int proto(struct cur *c, struct alog_fproto *p)
{
	uint32_t sizedbg = 0, nbc;
	if (byte(c, &p->pflags, "proto flags") ||
	    byte(c, &p->numparams, "proto params") ||
	    byte(c, &p->framesize, "proto framesize") ||
	    byte(c, &p->numuv, "proto upvalues") ||
	    uleb(c, &p->nkgc, "proto GC constants") ||
	    uleb(c, &p->nkn, "proto number constants") ||
	    uleb(c, &nbc, "proto bytecodes"))
		return -1;
	if (!(p->dflags & 2) && uleb(c, &sizedbg, "proto debug length"))
		return -1;
	if (sizedbg && (uleb(c, &p->firstline, "proto first line") ||
			uleb(c, &p->numline, "proto line count")))
		return -1;
	if (nbc > left(c) / 4)
		return fail(c, "%u instructions in %zu bytes", nbc, left(c));
	p->sizebc = nbc + 1;
	p->ins = c->p;
	c->p += (size_t)nbc * 4;
	if (skip(c, (size_t)p->numuv * 2, "upvalue refs"))
		return -1;
	/* every constant takes at least one byte */
	if (p->nkgc > left(c) || p->nkn > left(c) - p->nkgc)
		return fail(c, "%u+%u constants in %zu bytes", p->nkgc, p->nkn,
			    left(c));
	p->kgc = calloc(p->nkgc ? p->nkgc : 1, sizeof(*p->kgc));
	p->kn = calloc(p->nkn ? p->nkn : 1, sizeof(*p->kn));
	p->uvname = calloc(p->numuv ? p->numuv : 1, sizeof(*p->uvname));
	if (!p->kgc || !p->kn || !p->uvname)
		return fail(c, "out of memory");
	for (uint32_t i = 0; i < p->nkgc; i++)
		if (kgc(c, &p->kgc[i]))
			return -1;
	for (uint32_t i = 0; i < p->nkn; i++) {
		uint32_t lo = 0, hi = 0;
		int isnum = 0;
		if (uleb33(c, &lo, &isnum, "number constant"))
			return -1;
		if (isnum) {
			if (uleb(c, &hi, "number constant"))
				return -1;
			p->kn[i] = bits2d(lo, hi);
		} else {
			p->kn[i] = (double)(int32_t)lo;
		}
	}
	if (left(c) != sizedbg)
		return fail(c, "debug info: %zu bytes where %u were announced",
			    left(c), sizedbg);
	if (!sizedbg)
		return 0;
	p->has_debug = 1;
	p->lw = p->numline < 256 ? 0 : p->numline < 65536 ? 1 : 2;
	size_t li = (size_t)nbc << p->lw;
	if (li > left(c))
		return fail(c, "line info: %zu bytes, %zu left", li, left(c));
	p->lineinfo = c->p;
	c->p += li;
	for (uint32_t i = 0; i < p->numuv; i++) {
		const uint8_t *z = memchr(c->p, 0, left(c));
		if (!z)
			return fail(c, "upvalue name %u not terminated", i);
		p->uvname[i] = (const char *)c->p;
		c->p = z + 1;
	}
	return 0; /* the rest: local variable info, not needed */
}

int alog_fproto_decode(struct alog_fproto *p, const void *buf, size_t len)
{
	memset(p, 0, sizeof(*p));
	struct cur c = {buf, (const uint8_t *)buf + len, p};
	if (len < 5 || memcmp(buf, "\x1bLJ", 3))
		return fail(&c, "not a LuaJIT bytecode dump");
	c.p += 3;
	uint8_t ver = 0;
	(void)byte(&c, &ver, "version");
	if (ver != 1 && ver != 2)
		return fail(&c, "bytecode dump version %u", ver);
	if (uleb(&c, &p->dflags, "dump flags"))
		return -1;
	if (!(p->dflags & 2)) { /* not stripped: the chunk name */
		uint32_t n;
		if (uleb(&c, &n, "chunk name") || skip(&c, n, "chunk name"))
			return -1;
	}
	p->head_len = (size_t)(c.p - (const uint8_t *)buf);
	/* protos until the 0 that ends the dump; the last one is ours */
	const uint8_t *last = NULL, *lastend = NULL;
	uint32_t lastlen = 0;
	for (;;) {
		const uint8_t *at = c.p;
		uint32_t n;
		if (uleb(&c, &n, "proto length"))
			return -1;
		if (n == 0)
			break;
		if (skip(&c, n, "proto"))
			return -1;
		last = at;
		lastend = c.p;
		lastlen = n;
	}
	if (c.p != c.end)
		return fail(&c, "%zu bytes after the end of the dump",
			    left(&c));
	if (!last)
		return fail(&c, "no prototype in the dump");
	p->proto_off = (size_t)(last - (const uint8_t *)buf);
	p->proto_len = (size_t)(lastend - last);
	struct cur pc = {lastend - lastlen, lastend, p};
	if (proto(&pc, p)) {
		char e[sizeof(p->err)];
		int n = snprintf(e, sizeof(e),
				 "prototype at byte %zu: ", p->proto_off);
		if (n > 0 && (size_t)n < sizeof(e)) {
			snprintf(e + n, sizeof(e) - (size_t)n, "%.*s",
				 (int)(sizeof(e) - (size_t)n - 1), p->err);
			memcpy(p->err, e, sizeof(e));
		}
		return -1;
	}
	return 0;
}

void alog_fproto_free(struct alog_fproto *p)
{
	free(p->kgc);
	free(p->kn);
	free(p->uvname);
	p->kgc = NULL;
	p->kn = NULL;
	p->uvname = NULL;
}

uint32_t alog_fproto_ins(const struct alog_fproto *p, uint32_t pc)
{
	if (pc == 0 || pc >= p->sizebc)
		return 0;
	return rd32(p->ins + (size_t)(pc - 1) * 4, p->dflags & 1);
}

int64_t alog_fproto_line(const struct alog_fproto *p, uint32_t pc)
{
	if (!p->has_debug || pc > p->sizebc)
		return 0;
	uint32_t first = p->firstline;
	if (pc == p->sizebc)
		return (int32_t)(first + p->numline);
	if (pc == 0)
		return (int32_t)first;
	uint32_t d = rdn(p->lineinfo + ((size_t)(pc - 1) << p->lw), p->lw,
			 p->dflags & 1);
	return (int32_t)(first + d);
}

const char *alog_fproto_uvname(const struct alog_fproto *p, uint32_t i)
{
	if (i >= p->numuv)
		return NULL;
	return p->has_debug ? p->uvname[i] : "";
}
