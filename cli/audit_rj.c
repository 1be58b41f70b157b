/* SPDX-License-Identifier: MIT */
/*
 * `jitsframe audit LOG` on a RaptorJIT auditlog (audit/rjlog.h; cli/
 * audit_cmd.c sends a log that rj_log_sniff recognises here):
 *   the listing   its traces like LuaJIT's -jv: [TRACE n (parent/exit)
 *                 chunk:line link], aborts with the TraceError's name
 *                 (the log's DWARF enum), flushes;
 *   --dump N      one trace: its IR named from the log's own IRDEF macro
 *                 and decoded from the IRIns[] record through the DWARF,
 *                 its snapshots, its machine code disassembled.
 * Everything is read through the log's DWARF, by name.
 */
#include "auditlog.h"
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NIR 256

struct rjc {
	struct rj_log *log;
	char trerr[128][RJ_ENUM_NAME];
	char trlink[16][RJ_ENUM_NAME];
	/* IRDEF: name, operand modes; IRTDEF: type names; GPRDEF, FPRDEF */
	char irname[NIR][12], irm1[NIR][4], irm2[NIR][4];
	char irt[32][8];
	char reg[64][8];
	int nir, nirt, nreg;
	int64_t ref_bias;
	size_t ti;  /* the next trace (log order) */
	size_t nfl; /* trace_flushall events seen */
	int json, first;
	uint64_t want, epoch_want;
	int64_t epoch;
	const struct rj_trace *sel;
	uint64_t sel_epoch;
};

/* "_(A, B, C) _(D, ...)" -> rows of up to 4 trimmed fields; their count */
static int parse_def(const char *s, char (*out)[4][12], int max)
{
	int n = 0;
	while (s && n < max && (s = strstr(s, "_("))) {
		s += 2;
		const char *e = strchr(s, ')');
		if (!e)
			break;
		int f = 0;
		memset(out[n], 0, sizeof(out[n]));
		for (const char *p = s; p < e && f < 4; f++) {
			while (p < e && isspace((unsigned char)*p))
				p++;
			const char *q = p;
			while (q < e && *q != ',')
				q++;
			const char *r = q;
			while (r > p && isspace((unsigned char)r[-1]))
				r--;
			size_t l = (size_t)(r - p) < 11 ? (size_t)(r - p) : 11;
			memcpy(out[n][f], p, l);
			p = q + 1;
		}
		n++;
		s = e + 1;
	}
	return n;
}

static void cpy(char *d, size_t n, const char *s)
{
	size_t l = strnlen(s, n - 1);
	memcpy(d, s, l);
	d[l] = 0;
}

static void lower(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

static void load_defs(struct rjc *c)
{
	static char rows[NIR][4][12];
	c->nir = parse_def(rj_log_macro(c->log, "IRDEF"), rows, NIR);
	for (int i = 0; i < c->nir; i++) {
		cpy(c->irname[i], sizeof(c->irname[i]), rows[i][0]);
		cpy(c->irm1[i], sizeof(c->irm1[i]), rows[i][2]);
		cpy(c->irm2[i], sizeof(c->irm2[i]), rows[i][3]);
	}
	c->nirt = parse_def(rj_log_macro(c->log, "IRTDEF"), rows, 32);
	for (int i = 0; i < c->nirt; i++) {
		cpy(c->irt[i], 4, rows[i][0]);
		lower(c->irt[i]);
	}
	int ng = parse_def(rj_log_macro(c->log, "GPRDEF"), rows, 32);
	for (int i = 0; i < ng; i++) {
		cpy(c->reg[i], sizeof(c->reg[i]), rows[i][0]);
		lower(c->reg[i]);
	}
	int nf = parse_def(rj_log_macro(c->log, "FPRDEF"), rows, 32);
	for (int i = 0; i < nf; i++) {
		cpy(c->reg[ng + i], sizeof(c->reg[0]), rows[i][0]);
		lower(c->reg[ng + i]);
	}
	c->nreg = ng + nf;
	if (rj_log_enum(c->log, "TraceError", "LJ_TRERR_", c->trerr, 128) < 0)
		c->trerr[0][0] = 0;
	if (rj_log_enum(c->log, "TraceLink", "LJ_TRLINK_", c->trlink, 16) > 0)
		for (int i = 0; i < 16; i++)
			lower(c->trlink[i]);
	if (rj_log_enumerator(c->log, "REF_BIAS", &c->ref_bias))
		c->ref_bias = -1;
}

static const char *linkname(struct rjc *c, uint32_t lt, char *buf, size_t n)
{
	if (lt < 16 && c->trlink[lt][0])
		return c->trlink[lt];
	snprintf(buf, n, "linktype%u", lt);
	return buf;
}

/* -jv's stop line */
static void list_stop(struct rjc *c, const struct rj_trace *t)
{
	char loc[400], lb[32];
	rj_log_trace_loc(c->log, t, loc, sizeof(loc));
	const char *lt = linkname(c, t->linktype, lb, sizeof(lb));
	if (c->json) {
		printf(
		    "%s{\"ev\":\"stop\",\"tr\":%u,\"parent\":%u,\"exitno\":%u,"
		    "\"link\":%u,\"linktype\":",
		    c->first ? "" : ",\n", t->traceno, t->parent, t->exitno,
		    t->link);
		json_str(stdout, lt);
		printf(",\"loc\":");
		json_str(stdout, loc);
		printf(",\"mcode\":\"0x%" PRIx64 "\",\"szmcode\":%u,\"epoch\":"
		       "%zu,\"offset\":%" PRIu64 "}",
		       t->mcode, t->szmcode, c->nfl, t->record_offset);
		c->first = 0;
	} else if (!strcmp(lt, "interp")) {
		printf("[TRACE %3u %s -- fallback to interpreter]\n",
		       t->traceno, loc);
	} else if (t->link == t->traceno || t->link == 0) {
		printf("[TRACE %3u %s %s]\n", t->traceno, loc, lt);
	} else if (!strcmp(lt, "root")) {
		printf("[TRACE %3u %s -> %u]\n", t->traceno, loc, t->link);
	} else {
		printf("[TRACE %3u %s -> %u %s]\n", t->traceno, loc, t->link,
		       lt);
	}
}

/* -jv's abort line, from the jit_State logged with the trace_abort */
static void list_abort(struct rjc *c, uint64_t off)
{
	uint64_t err = UINT64_MAX, js = 0;
	rj_log_event_u64(c->log, off, "TraceError", &err);
	rj_log_event_u64(c->log, off, "jit_State", &js);
	uint32_t jsz = rj_log_type_size(c->log, "jit_State"),
		 tsz = rj_log_type_size(c->log, "GCtrace"), curoff, cursz;
	const uint8_t *J =
	    jsz ? rj_log_memory(c->log, js, jsz, "jit_State", off) : NULL;
	char start[400] = "?", at[400] = "?", ex[64] = "", why[64];
	uint64_t pt, pc, parent = 0, exitno = 0;
	if (J && !rj_log_field(c->log, "jit_State", "cur", &curoff, &cursz) &&
	    curoff <= jsz && jsz - curoff >= tsz) {
		if (!rj_log_getf(c->log, "GCtrace", "startpt", J + curoff, tsz,
				 &pt) &&
		    !rj_log_getf(c->log, "GCtrace", "startpc", J + curoff, tsz,
				 &pc))
			rj_log_proto_loc(c->log, pt, pc, off, start,
					 sizeof(start));
		/* where recording stopped: not shown when unknown (J->pc
		 * outside J->pt after a return) */
		if (!rj_log_getf(c->log, "jit_State", "pt", J, jsz, &pt) &&
		    !rj_log_getf(c->log, "jit_State", "pc", J, jsz, &pc) &&
		    rj_log_proto_loc(c->log, pt, pc, off, at, sizeof(at)))
			snprintf(at, sizeof(at), "%s", start);
		rj_log_getf(c->log, "jit_State", "parent", J, jsz, &parent);
		rj_log_getf(c->log, "jit_State", "exitno", J, jsz, &exitno);
		if (parent)
			snprintf(ex, sizeof(ex), "(%" PRIu64 "/%" PRIu64 ") ",
				 parent, exitno);
	}
	if (err < 128 && c->trerr[err][0])
		snprintf(why, sizeof(why), "%s", c->trerr[err]);
	else
		snprintf(why, sizeof(why), "TraceError %" PRIu64, err);
	if (c->json) {
		printf("%s{\"ev\":\"abort\",\"why\":", c->first ? "" : ",\n");
		json_str(stdout, why);
		printf(",\"err\":%" PRIu64 ",\"parent\":%" PRIu64
		       ",\"exitno\":%" PRIu64 ",\"loc\":",
		       err, parent, exitno);
		json_str(stdout, start);
		printf(",\"at\":");
		json_str(stdout, at);
		printf(",\"offset\":%" PRIu64 "}", off);
		c->first = 0;
	} else if (strcmp(start, at)) {
		printf("[TRACE --- %s%s -- %s at %s]\n", ex, start, why, at);
	} else {
		printf("[TRACE --- %s%s -- %s]\n", ex, start, why);
	}
}

static int each_rec(const struct rj_record *r, void *arg)
{
	struct rjc *c = arg;
	if (strcmp(r->kind, "event") || !r->name)
		return 0;
	if (!strcmp(r->name, "trace_stop")) {
		size_t n = rj_log_ntraces(c->log);
		while (c->ti < n &&
		       rj_log_trace(c->log, c->ti)->record_offset < r->offset)
			c->ti++;
		if (c->ti < n &&
		    rj_log_trace(c->log, c->ti)->record_offset == r->offset) {
			const struct rj_trace *t = rj_log_trace(c->log, c->ti);
			if (c->want == UINT64_MAX)
				list_stop(c, t);
			else if (t->traceno == c->want && !c->sel &&
				 (c->epoch < 0 ||
				  (uint64_t)c->epoch == c->nfl)) {
				c->sel = t;
				c->sel_epoch = c->nfl;
			}
		}
	} else if (!strcmp(r->name, "trace_abort")) {
		if (c->want == UINT64_MAX)
			list_abort(c, r->offset);
	} else if (!strcmp(r->name, "trace_flushall")) {
		c->nfl++;
		if (c->want != UINT64_MAX)
			;
		else if (c->json)
			printf("%s{\"ev\":\"flush\",\"offset\":%" PRIu64 "}",
			       c->first ? "" : ",\n", r->offset),
			    c->first = 0;
		else
			printf("[TRACE flush]\n");
	}
	return 0;
}

/* ------------------------------------------------------------- dump */

struct irv {
	const uint8_t *ir; /* the IRIns[] bytes from ref nk */
	uint64_t nk, nins;
	uint32_t isz;
};

static int ins(struct rjc *c, const struct irv *v, uint64_t ref, const char *f,
	       uint64_t *val)
{
	if (ref < v->nk || ref >= v->nins)
		return -ERANGE;
	return rj_log_getf(c->log, "IRIns", f, v->ir + (ref - v->nk) * v->isz,
			   v->isz, val);
}

static const char *opname(struct rjc *c, uint64_t o)
{
	return o < (uint64_t)c->nir ? c->irname[o] : "?";
}

/* 64-bit constants take two slots (the value in the second) */
static int k64(const char *op)
{
	return !strcmp(op, "KNUM") || !strcmp(op, "KINT64") ||
	       !strcmp(op, "KGC") || !strcmp(op, "KPTR") ||
	       !strcmp(op, "KKPTR");
}

static void fmtk(struct rjc *c, const struct irv *v, uint64_t ref,
		 size_t before, char *out, size_t cap)
{
	uint64_t o = 0, t = 0, i = 0, op1 = 0, op2 = 0, w = 0;
	ins(c, v, ref, "o", &o);
	ins(c, v, ref, "t", &t);
	ins(c, v, ref, "i", &i);
	ins(c, v, ref, "op1", &op1);
	ins(c, v, ref, "op2", &op2);
	const char *op = opname(c, o);
	if (k64(op) && ref + 1 < v->nins)
		memcpy(&w, v->ir + (ref + 1 - v->nk) * v->isz, 8);
	if (!strcmp(op, "KPRI"))
		snprintf(out, cap, "%s", (t & 31) < 32 ? c->irt[t & 31] : "?");
	else if (!strcmp(op, "KINT"))
		snprintf(out, cap, "%+d", (int32_t)(uint32_t)i);
	else if (!strcmp(op, "KNUM")) {
		double d;
		memcpy(&d, &w, sizeof(d));
		snprintf(out, cap, "%.14g", d);
	} else if (!strcmp(op, "KINT64"))
		snprintf(out, cap, "%" PRId64, (int64_t)w);
	else if (!strcmp(op, "KGC") && !strcmp(c->irt[t & 31], "str")) {
		/* the string's text, when the log has its GCstr */
		uint32_t hsz = rj_log_type_size(c->log, "GCstr");
		const uint8_t *h = rj_log_memory(c->log, w, hsz, NULL, before);
		uint64_t len = 0;
		const uint8_t *s = NULL;
		if (h && !rj_log_getf(c->log, "GCstr", "len", h, hsz, &len) &&
		    len < 4096)
			s = rj_log_memory(c->log, w, hsz + len, NULL, before);
		if (s)
			snprintf(out, cap, "\"%.*s\"",
				 (int)(len > 40 ? 40 : len),
				 (const char *)s + hsz);
		else
			snprintf(out, cap, "[0x%" PRIx64 "]", w);
	} else if (k64(op))
		snprintf(out, cap, "[0x%" PRIx64 "]", w);
	else if (!strcmp(op, "KSLOT"))
		snprintf(out, cap, "%04" PRId64 " @%" PRIu64,
			 (int64_t)op1 - c->ref_bias, op2);
	else if (!strcmp(op, "KNULL"))
		snprintf(out, cap, "NULL");
	else
		snprintf(out, cap, "K%s", op);
}

static void operand(struct rjc *c, const struct irv *v, const char *mode,
		    uint64_t op, size_t before)
{
	char k[256];
	if (!strcmp(mode, "ref")) {
		if ((int64_t)op < c->ref_bias) {
			fmtk(c, v, op, before, k, sizeof(k));
			printf(" %s", k);
		} else {
			printf(" %04" PRId64, (int64_t)op - c->ref_bias);
		}
	} else if (!strcmp(mode, "lit") || !strcmp(mode, "cst")) {
		printf(" #%" PRIu64, op);
	}
}

static int dump(struct rjc *c, const struct rj_trace *t, int mcode)
{
	struct rj_log *log = c->log;
	uint32_t tsz = rj_log_type_size(log, "GCtrace");
	const uint8_t *g = t->raw;
	uint64_t ir, nk, nins, nsnap, snap, snapmap, nsnapmap;
	if (!g || rj_log_getf(log, "GCtrace", "ir", g, tsz, &ir) ||
	    rj_log_getf(log, "GCtrace", "nk", g, tsz, &nk) ||
	    rj_log_getf(log, "GCtrace", "nins", g, tsz, &nins) ||
	    rj_log_getf(log, "GCtrace", "nsnap", g, tsz, &nsnap) ||
	    rj_log_getf(log, "GCtrace", "snap", g, tsz, &snap) ||
	    rj_log_getf(log, "GCtrace", "snapmap", g, tsz, &snapmap) ||
	    rj_log_getf(log, "GCtrace", "nsnapmap", g, tsz, &nsnapmap) ||
	    c->ref_bias <= 0 || !c->nir) {
		fprintf(stderr,
			"jitsframe audit: trace %u: the log's DWARF "
			"lacks GCtrace's IR fields, REF_BIAS or "
			"IRDEF\n",
			t->traceno);
		return EX_FAIL;
	}
	nk &= 0xffffffffu; /* IRRef: 32 bits */
	char loc[400], lb[32];
	rj_log_trace_loc(log, t, loc, sizeof(loc));
	struct irv v = {NULL, nk, nins, rj_log_type_size(log, "IRIns")};
	uint64_t rb = (uint64_t)c->ref_bias;
	size_t before = (size_t)t->record_offset;
	if (v.isz && nk <= rb && nins > rb && nins - nk < 1u << 20)
		v.ir = rj_log_memory(log, ir + nk * v.isz, (nins - nk) * v.isz,
				     "IRIns[]", before);
	printf("---- TRACE %u %s link %u %s, epoch %" PRIu64 ": %" PRIu64
	       " IR instructions, %" PRIu64
	       " constant slots (nins-nk = %" PRIu64 "), %" PRIu64
	       " snapshots, stack adjustment %u\n",
	       t->traceno, loc, t->link,
	       linkname(c, t->linktype, lb, sizeof(lb)), c->sel_epoch,
	       nins - rb - 1, rb - nk, nins - nk, nsnap, t->spadjust);
	if (!v.ir) {
		printf("---- TRACE %u: no IRIns[] record in the log\n",
		       t->traceno);
	} else {
		printf("---- TRACE %u constants\n", t->traceno);
		for (uint64_t r = nk; r < rb; r++) {
			uint64_t o = 0, ty = 0;
			ins(c, &v, r, "o", &o);
			ins(c, &v, r, "t", &ty);
			char k[256];
			fmtk(c, &v, r, before, k, sizeof(k));
			printf("K%03" PRIu64 "    %s %-6s %s\n", rb - r,
			       c->irt[ty & 31], opname(c, o), k);
			if (k64(opname(c, o)))
				r++;
		}
		printf("---- TRACE %u IR\n", t->traceno);
		for (uint64_t r = rb + 1; r < nins; r++) {
			uint64_t o = 0, ty = 0, op1 = 0, op2 = 0, rr = 0, s = 0;
			ins(c, &v, r, "o", &o);
			ins(c, &v, r, "t", &ty);
			ins(c, &v, r, "op1", &op1);
			ins(c, &v, r, "op2", &op2);
			ins(c, &v, r, "r", &rr);
			ins(c, &v, r, "s", &s);
			char reg[16] = "";
			if (s)
				snprintf(reg, sizeof(reg), "[%" PRIx64 "]",
					 s * 4);
			else if (rr < (uint64_t)c->nreg)
				snprintf(reg, sizeof(reg), "%s", c->reg[rr]);
			printf("%04" PRIu64 " %-6s %s %s %-6s", r - rb, reg,
			       (ty & 0x80) ? ">" : " ", c->irt[ty & 31],
			       opname(c, o));
			if (o < (uint64_t)c->nir) {
				operand(c, &v, c->irm1[o], op1, before);
				operand(c, &v, c->irm2[o], op2, before);
			}
			putchar('\n');
		}
	}
	/* snapshots: SnapShot[] and SnapEntry[] (an entry is slot << 24 |
	 * flags | ref: the log's macros snap_slot and snap_ref) */
	uint32_t ssz = rj_log_type_size(log, "SnapShot"),
		 esz = rj_log_type_size(log, "SnapEntry");
	const char *mref = rj_log_macro(log, "snap_ref"),
		   *mslot = rj_log_macro(log, "snap_slot");
	const uint8_t *S =
	    ssz && nsnap < 65536
		? rj_log_memory(log, snap, nsnap * ssz, "SnapShot[]", before)
		: NULL;
	const uint8_t *E = esz == 4 && nsnapmap < 1u << 20
			       ? rj_log_memory(log, snapmap, nsnapmap * esz,
					       "SnapEntry[]", before)
			       : NULL;
	printf("---- TRACE %u snapshots: %" PRIu64 "\n", t->traceno, nsnap);
	if (!S || !E || !mref || !strstr(mref, "0xffff") || !mslot ||
	    !strstr(mslot, ">> 24"))
		printf("(no SnapShot[]/SnapEntry[] records, or an entry "
		       "encoding other than snap_slot >> 24, snap_ref & "
		       "0xffff)\n");
	for (uint64_t i = 0; S && E && i < nsnap; i++) {
		const uint8_t *sn = S + i * ssz;
		uint64_t mapofs = 0, ref = 0, nslots = 0, nent = 0, mcofs = 0;
		rj_log_getf(log, "SnapShot", "mapofs", sn, ssz, &mapofs);
		rj_log_getf(log, "SnapShot", "ref", sn, ssz, &ref);
		rj_log_getf(log, "SnapShot", "nslots", sn, ssz, &nslots);
		rj_log_getf(log, "SnapShot", "nent", sn, ssz, &nent);
		rj_log_getf(log, "SnapShot", "mcofs", sn, ssz, &mcofs);
		printf("SNAP #%-3" PRIu64 " [ ref %04" PRId64 " mcofs +%" PRIu64
		       " slots %" PRIu64 " ]",
		       i, (int64_t)ref - c->ref_bias, mcofs, nslots);
		for (uint64_t e = 0; e < nent && mapofs + e < nsnapmap; e++) {
			uint32_t x;
			memcpy(&x, E + (mapofs + e) * 4, 4);
			uint32_t r = x & 0xffff;
			if ((int64_t)r < c->ref_bias)
				printf(" %u=K%03" PRId64, x >> 24,
				       c->ref_bias - (int64_t)r);
			else
				printf(" %u=%04" PRId64, x >> 24,
				       (int64_t)r - c->ref_bias);
		}
		putchar('\n');
	}
	printf("---- TRACE %u mcode %u bytes at 0x%" PRIx64 ", loop at +%u\n",
	       t->traceno, t->mc ? t->szmcode : 0, t->mcode, t->mcloop);
	if (!t->mc) {
		printf("(no MCode[] record in the log)\n");
		return EX_OK;
	}
	return mcode ? audit_disasm("x64", t->mc, t->szmcode, t->mcode, true)
		     : EX_OK;
}

int audit_rj_main(const char *path, int64_t want, int64_t epoch, int json,
		  int mcode)
{
	static struct rjc c; /* big tables: not on the stack */
	memset(&c, 0, sizeof(c));
	char msg[512];
	if (rj_log_open(&c.log, path, msg, sizeof(msg))) {
		fprintf(stderr, "jitsframe audit: %s\n", msg);
		return EX_INPUT;
	}
	load_defs(&c);
	c.json = json;
	c.first = 1;
	c.want = want < 0 ? UINT64_MAX : (uint64_t)want;
	c.epoch = epoch;
	if (json && want < 0)
		printf("{\"format\":\"raptorjit\",\"records\":[\n");
	rj_log_foreach(c.log, each_rec, &c);
	const char *dmg = rj_log_damage(c.log);
	int rc = EX_OK;
	if (json && want < 0) {
		printf("],\"damage\":");
		if (dmg)
			json_str(stdout, dmg);
		else
			fputs("null", stdout);
		printf("}\n");
	}
	if (want >= 0) {
		if (!c.sel) {
			if (epoch >= 0)
				fprintf(stderr,
					"jitsframe audit: no trace %" PRId64
					" of epoch %" PRId64 " in %s\n",
					want, epoch, path);
			else
				fprintf(stderr,
					"jitsframe audit: no trace %" PRId64
					" in %s\n",
					want, path);
			rc = EX_FAIL;
		} else {
			rc = dump(&c, c.sel, mcode);
		}
	}
	if (dmg) {
		fprintf(stderr, "jitsframe audit: %s: %s\n", path, dmg);
		rc = EX_FAIL;
	}
	rj_log_close(c.log);
	return rc;
}
