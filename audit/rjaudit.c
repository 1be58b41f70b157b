/* SPDX-License-Identifier: MIT */
/*
 * A RaptorJIT auditlog turned into our own auditlog's records
 * (docs/AUDITLOG.md, "Record schema"), so that `jitsframe audit replay`
 * runs LuaJIT's unmodified jit/dump.lua and jit/v.lua on it through the
 * existing replay driver (vm/replay.lua), unchanged. docs/RAPTORJIT.md,
 * "Replay", says what is answered and what the log does not hold.
 *
 * Everything is read from RaptorJIT's raw structs through the log's own
 * DWARF, by name (GCtrace, IRIns[], SnapShot[], SnapEntry[], MCode[],
 * GCproto, GCfunc, GCstr, jit_State). Numbers that jit.dump turns into
 * names (IR opcodes, IR call ids, IRFL fields, FPMATH ops, fast function
 * ids, link types) are mapped by NAME from the log's enums onto the
 * numbering of the host's jit.vmdef (struct rj_host, given by the caller):
 * an opcode the host does not have is refused, never shown under another
 * name. Numbers jit.dump decodes with constants of its own (IR types,
 * SLOAD/XLOAD/CONV flags, snapshot flags, REF_BIAS, register ids) must
 * equal LuaJIT 2.1's, which jit/dump.lua hard-codes: else the log is
 * refused.
 */
#include "auditfmt.h"
#include "rjlog.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NMAP 512

/* LuaJIT 2.1's IR types, in the order jit/dump.lua's irtype table has
 * them (its lj_ir.h IRTDEF) */
static const char *const lj_irt[] = {
    "NIL",  "FALSE", "TRUE",  "LIGHTUD", "STR",	  "P32",   "THREAD", "PROTO",
    "FUNC", "P64",   "CDATA", "TAB",	 "UDATA", "FLOAT", "NUM",    "I8",
    "U8",   "I16",   "U16",   "INT",	 "U32",	  "I64",   "U64",    "SOFTFP"};
#define NIRT (sizeof(lj_irt) / sizeof(lj_irt[0]))

/* LuaJIT 2.1's trace link names (lib_jit.c jit_trlinkname), by the
 * TraceLink enumerator (LJ_TRLINK_ dropped) */
static const char *const lj_link[][2] = {
    {"NONE", "none"},	       {"ROOT", "root"},
    {"LOOP", "loop"},	       {"TAILREC", "tail-recursion"},
    {"UPREC", "up-recursion"}, {"DOWNREC", "down-recursion"},
    {"INTERP", "interpreter"}, {"RETURN", "return"},
    {"STITCH", "stitch"}};

/* Macros whose value jit/dump.lua (or jit.util's encoding) hard-codes:
 * the log's must be these. */
static const struct {
	const char *name;
	int64_t val;
} lj_fixed[] = {
    {"SNAP_FRAME", 0x10000},	 {"SNAP_CONT", 0x20000},
    {"SNAP_NORESTORE", 0x40000}, {"SNAP_SOFTFPNUM", 0x80000},
    {"IRSLOAD_PARENT", 1},	 {"IRSLOAD_FRAME", 2},
    {"IRSLOAD_TYPECHECK", 4},	 {"IRSLOAD_CONVERT", 8},
    {"IRSLOAD_READONLY", 16},	 {"IRSLOAD_INHERIT", 32},
    {"IRXLOAD_READONLY", 1},	 {"IRXLOAD_VOLATILE", 2},
    {"IRXLOAD_UNALIGNED", 4},	 {"IRCONV_SEXT", 0x800},
    {"IRCONV_CSH", 12},		 {"IRBUFHDR_RESET", 0},
    {"IRBUFHDR_APPEND", 1},	 {"IRTOSTR_INT", 0},
    {"IRTOSTR_NUM", 1},		 {"IRTOSTR_CHAR", 2},
    {"RID_NONE", 0x80},		 {"RID_MASK", 0x7f},
    {"EXITSTUBS_PER_GROUP", 32}, {"EXITSTUB_SPACING", 4},
};

struct proto_id {
	const uint8_t *rec; /* the GCproto memory record's bytes */
	uint32_t id;
};

struct cv {
	const struct rj_log *log;
	const struct rj_host *host;
	FILE *out;
	char *msg;
	size_t msglen;
	int err;
	/* the log's numbering -> the host's (-1: the host has no such) */
	int ir[NMAP], call[NMAP], fld[NMAP], fpm[NMAP];
	uint8_t irmode[NMAP]; /* lj_ir_mode[], by the log's opcode */
	char irname[NMAP][RJ_ENUM_NAME];
	char linkname[16][RJ_ENUM_NAME];
	char trerr[128][RJ_ENUM_NAME];
	int nir, nfld;
	int ff[NMAP]; /* the log's fast function id -> the host's */
	int ffdone;
	int64_t ref_bias;
	uint32_t tsz, jsz, isz, ssz, esz, psz, strsz, fsz;
	/* IR opcodes used as numbers below */
	int op_kpri, op_kint, op_kgc, op_kptr, op_kkptr, op_knull, op_knum,
	    op_kint64, op_kslot, op_fload, op_fref, op_fpmath;
	struct proto_id *protos;
	size_t nprotos, capprotos;
	uint32_t nextid;
	uint32_t unknown_id; /* a func record with nothing known: "(?)" */
	uint32_t stubs_sent; /* shared exit stubs sent since the last flush */
	size_t ti;	     /* next trace (log order) */
	uint64_t nrec;
};

static void fail(struct cv *c, int err, const char *fmt, ...)
{
	if (c->err)
		return;
	c->err = err;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->msg, c->msglen, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------- msgpack out */

struct rec {
	msgpack_sbuffer sb;
	msgpack_packer pk;
};

static void rec_begin(struct rec *r)
{
	msgpack_sbuffer_init(&r->sb);
	msgpack_packer_init(&r->pk, &r->sb, msgpack_sbuffer_write);
}

static void rec_end(struct cv *c, struct rec *r)
{
	uint8_t fr[ALOG_FRAME];
	if (!c->err && r->sb.size > ALOG_MAX_RECORD)
		fail(c, -EFBIG, "a record of %zu bytes is too large",
		     r->sb.size);
	if (!c->err) {
		alog_frame(fr, r->sb.data, (uint32_t)r->sb.size);
		if (fwrite(fr, 1, sizeof(fr), c->out) != sizeof(fr) ||
		    fwrite(r->sb.data, 1, r->sb.size, c->out) != r->sb.size)
			fail(c, -EIO, "cannot write the converted log");
		c->nrec++;
	}
	msgpack_sbuffer_destroy(&r->sb);
}

static void key(struct rec *r, const char *k)
{
	msgpack_pack_str_with_body(&r->pk, k, strlen(k));
}

static void str(struct rec *r, const char *s)
{
	msgpack_pack_str_with_body(&r->pk, s, strlen(s));
}

static void kint(struct rec *r, const char *k, int64_t v)
{
	key(r, k);
	msgpack_pack_int64(&r->pk, v);
}

static void kstr(struct rec *r, const char *k, const char *v)
{
	key(r, k);
	str(r, v);
}

/* -------------------------------------------------------- raw reads */

static uint64_t rd_le(const uint8_t *p, uint32_t n)
{
	uint64_t v = 0;
	for (uint32_t i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

static int get(const struct cv *c, const char *type, const char *f,
	       const uint8_t *raw, size_t len, uint64_t *v)
{
	return rj_log_getf(c->log, type, f, raw, len, v);
}

/* A GCstr's bytes (not NUL-terminated) and length, logged before
 * `before`; NULL if the log has no such record. */
static const char *gcstr(const struct cv *c, uint64_t addr, size_t before,
			 size_t *len)
{
	if (!addr || !c->strsz)
		return NULL;
	const uint8_t *h = rj_log_memory(c->log, addr, c->strsz, NULL, before);
	uint64_t l;
	if (!h || get(c, "GCstr", "len", h, c->strsz, &l) || l > 1u << 24)
		return NULL;
	const uint8_t *s =
	    rj_log_memory(c->log, addr, c->strsz + l, NULL, before);
	if (!s)
		return NULL;
	*len = (size_t)l;
	return (const char *)s + c->strsz;
}

/* -------------------------------------------------------- the tables */

static int host_find(const struct rj_host *h, int kind, const char *name)
{
	for (uint32_t i = 0; i < h->n[kind]; i++)
		if (!strcmp(h->name[kind][i], name))
			return (int)i;
	return -1;
}

/* map[v] = the host's index of the log's enumerator v of `type` (its
 * name, after `strip`, turned into the host's spelling by `spell`) */
static int map_enum(struct cv *c, const char *type, const char *strip, int kind,
		    int *map, char (*names)[RJ_ENUM_NAME],
		    void (*spell)(char *))
{
	static char nm[NMAP][RJ_ENUM_NAME];
	char(*n)[RJ_ENUM_NAME] = names ? names : nm;
	int k = rj_log_enum(c->log, type, strip, n, NMAP);
	if (k < 0) {
		fail(c, -EINVAL, "the log's DWARF has no enum %s", type);
		return -1;
	}
	int max = 0;
	for (int v = 0; v < NMAP; v++) {
		map[v] = -1;
		if (!n[v][0] || n[v][0] == '_') /* IR__MAX, IRT_TYPE.. */
			continue;
		char s[RJ_ENUM_NAME];
		size_t l = strnlen(n[v], sizeof(s) - 1);
		memcpy(s, n[v], l);
		s[l] = 0;
		if (spell)
			spell(s);
		map[v] = host_find(c->host, kind, s);
		max = v + 1;
	}
	return max;
}

/* IRFL names: "STR_LEN" -> "str.len" (buildvm: lower case, the first
 * '_' a '.'); FPMATH: "FLOOR" -> "floor" */
static void spell_fld(char *s)
{
	int dot = 0;
	for (; *s; s++) {
		*s = (char)tolower((unsigned char)*s);
		if (*s == '_' && !dot) {
			*s = '.';
			dot = 1;
		}
	}
}

static void spell_lower(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

/* The IRDEF operand modes of each opcode: "_(LT, N , ref, ref) ..." */
static int irdef_modes(struct cv *c, const char *name, int *m)
{
	const char *s = rj_log_macro(c->log, "IRDEF");
	size_t nl = strlen(name);
	while (s && (s = strstr(s, "_("))) {
		s += 2;
		while (*s == ' ')
			s++;
		if (strncmp(s, name, nl) || (s[nl] != ',' && s[nl] != ' '))
			continue;
		const char *e = strchr(s, ')');
		if (!e)
			return -1;
		int f = 0, mm = 0;
		for (const char *p = s; p < e; f++) {
			const char *q = p;
			while (q < e && *q != ',')
				q++;
			while (p < q && *p == ' ')
				p++;
			int v = !strncmp(p, "ref", 3)	? 0
				: !strncmp(p, "lit", 3) ? 1
				: !strncmp(p, "cst", 3) ? 2
				: !strncmp(p, "___", 3) ? 3
							: -1;
			if (f == 2 || f == 3) {
				if (v < 0)
					return -1;
				mm |= v << (2 * (f - 2));
			}
			p = q + 1;
		}
		if (f != 4)
			return -1;
		*m = mm;
		return 0;
	}
	return -1;
}

static int opnum(struct cv *c, const char *name)
{
	for (int i = 0; i < c->nir; i++)
		if (!strcmp(c->irname[i], name))
			return i;
	return -1;
}

static int load(struct cv *c)
{
	const struct rj_log *log = c->log;
	c->tsz = rj_log_type_size(log, "GCtrace");
	c->jsz = rj_log_type_size(log, "jit_State");
	c->isz = rj_log_type_size(log, "IRIns");
	c->ssz = rj_log_type_size(log, "SnapShot");
	c->esz = rj_log_type_size(log, "SnapEntry");
	c->psz = rj_log_type_size(log, "GCproto");
	c->strsz = rj_log_type_size(log, "GCstr");
	c->fsz = rj_log_type_size(log, "GCfunc");
	if (!c->tsz || !c->jsz || c->isz != 8 || !c->ssz || c->esz != 4 ||
	    !c->psz || !c->strsz || !c->fsz) {
		fail(c, -EINVAL,
		     "the log's DWARF lacks GCtrace, jit_State, IRIns (8 "
		     "bytes), SnapShot, SnapEntry (4 bytes), GCproto, "
		     "GCstr or GCfunc");
		return -1;
	}
	if (rj_log_enumerator(log, "REF_BIAS", &c->ref_bias) ||
	    c->ref_bias != 0x8000) {
		fail(c, -EINVAL,
		     "the log's REF_BIAS is not LuaJIT's 0x8000, which "
		     "jit/dump.lua assumes");
		return -1;
	}
	for (size_t i = 0; i < sizeof(lj_fixed) / sizeof(lj_fixed[0]); i++) {
		int64_t v;
		if (rj_log_macro_int(log, lj_fixed[i].name, &v) ||
		    v != lj_fixed[i].val) {
			fail(c, -EINVAL,
			     "the log's %s is not LuaJIT 2.1's %" PRId64
			     " (jit/dump.lua decodes it so)",
			     lj_fixed[i].name, lj_fixed[i].val);
			return -1;
		}
	}
	/* IR types and their flag bits: the IRType enum must be LuaJIT
	 * 2.1's, which jit/dump.lua's irtype table and CONV decoding
	 * hard-code */
	static char tn[NMAP][RJ_ENUM_NAME];
	if (rj_log_enum(log, "IRType", "IRT_", tn, NMAP) < 0) {
		fail(c, -EINVAL, "the log's DWARF has no enum IRType");
		return -1;
	}
	for (size_t i = 0; i < NIRT; i++)
		if (strcmp(tn[i], lj_irt[i])) {
			fail(c, -EINVAL,
			     "the log's IR type %zu is %s, LuaJIT 2.1's "
			     "(jit/dump.lua's) is %s",
			     i, tn[i][0] ? tn[i] : "(none)", lj_irt[i]);
			return -1;
		}
	if (strcmp(tn[0x20], "MARK") || strcmp(tn[0x40], "ISPHI") ||
	    strcmp(tn[0x80], "GUARD") || tn[NIRT][0] != '_') {
		fail(c, -EINVAL,
		     "the log's IR type flags are not LuaJIT 2.1's (MARK "
		     "0x20, ISPHI 0x40, GUARD 0x80)");
		return -1;
	}
	/* registers: jit.dis_x64's regname takes hardware numbers */
	static const char *const gpr[] = {
	    "EAX", "ECX", "EDX",  "EBX",  "ESP",  "EBP",  "ESI",  "EDI",
	    "R8D", "R9D", "R10D", "R11D", "R12D", "R13D", "R14D", "R15D"};
	const char *g = rj_log_macro(log, "GPRDEF"), *p = g;
	for (size_t i = 0; p && i < 16; i++) {
		char want[16];
		snprintf(want, sizeof(want), "_(%s)", gpr[i]);
		p = strstr(p, want);
	}
	if (!p) {
		fail(c, -EINVAL,
		     "the log's GPRDEF is not x86-64's register order");
		return -1;
	}
	/* opcodes, by name */
	c->nir = map_enum(c, "IROp", "IR_", RJH_IR, c->ir, c->irname, NULL);
	if (c->nir <= 0)
		return -1;
	c->op_kpri = opnum(c, "KPRI");
	c->op_kint = opnum(c, "KINT");
	c->op_kgc = opnum(c, "KGC");
	c->op_kptr = opnum(c, "KPTR");
	c->op_kkptr = opnum(c, "KKPTR");
	c->op_knull = opnum(c, "KNULL");
	c->op_knum = opnum(c, "KNUM");
	c->op_kint64 = opnum(c, "KINT64");
	c->op_kslot = opnum(c, "KSLOT");
	c->op_fload = opnum(c, "FLOAD");
	c->op_fref = opnum(c, "FREF");
	c->op_fpmath = opnum(c, "FPMATH");
	if (c->op_kpri < 0 || c->op_kint < 0 || c->op_kgc < 0 ||
	    c->op_knum < 0 || c->op_kslot < 0 || c->op_kint64 < 0) {
		fail(c, -EINVAL, "the log's IROp lacks the constant opcodes");
		return -1;
	}
	if (map_enum(c, "IRCallID", "IRCALL_", RJH_IRCALL, c->call, NULL,
		     NULL) < 0 ||
	    (c->nfld = map_enum(c, "IRFieldID", "IRFL_", RJH_IRFIELD, c->fld,
				NULL, spell_fld)) < 0 ||
	    map_enum(c, "IRFPMathOp", "IRFPM_", RJH_IRFPM, c->fpm, NULL,
		     spell_lower) < 0)
		return -1;
	if (rj_log_enum(log, "TraceLink", "LJ_TRLINK_", c->linkname, 16) < 0) {
		fail(c, -EINVAL, "the log's DWARF has no enum TraceLink");
		return -1;
	}
	if (rj_log_enum(log, "TraceError", "LJ_TRERR_", c->trerr, 128) < 0)
		c->trerr[0][0] = 0;
	return 0;
}

/* lj_ir_mode[] (the log's first memory record, one byte per opcode):
 * each opcode's operand modes must agree with the IRDEF macro's text */
struct modefind {
	const uint8_t *data;
	size_t len;
};

static int find_mode(const struct rj_record *r, void *arg)
{
	struct modefind *m = arg;
	if (!strcmp(r->kind, "memory") && r->name &&
	    !strcmp(r->name, "lj_ir_mode")) {
		m->data = r->data;
		m->len = r->len;
		return 1;
	}
	return 0;
}

static int load_modes(struct cv *c)
{
	struct modefind m = {NULL, 0};
	rj_log_foreach(c->log, find_mode, &m);
	if (!m.data || m.len < (size_t)c->nir) {
		fail(c, -EINVAL,
		     "the log has no lj_ir_mode record for its %d IR "
		     "opcodes",
		     c->nir);
		return -1;
	}
	for (int o = 0; o < c->nir; o++) {
		int mm;
		if (!c->irname[o][0])
			continue;
		if (irdef_modes(c, c->irname[o], &mm) ||
		    (m.data[o] & 15) != mm) {
			fail(c, -EINVAL,
			     "IR opcode %s: lj_ir_mode (0x%02x) and the "
			     "IRDEF macro disagree on its operands",
			     c->irname[o], m.data[o]);
			return -1;
		}
		c->irmode[o] = m.data[o];
	}
	return 0;
}

/* The log's fast function ids -> the host's (FF_ enumerators, named as
 * the host's ffnames with '.' as '_') */
static void load_ff(struct cv *c)
{
	if (c->ffdone)
		return;
	c->ffdone = 1;
	for (int i = 0; i < NMAP; i++)
		c->ff[i] = -1;
	const struct rj_host *h = c->host;
	for (uint32_t i = 0; i < h->n[RJH_FF]; i++) {
		char e[64];
		snprintf(e, sizeof(e), "FF_%s", h->name[RJH_FF][i]);
		for (char *p = e; *p; p++)
			if (*p == '.')
				*p = '_';
		int64_t v;
		if (!rj_log_enumerator(c->log, e, &v) && v > 1 && v < NMAP)
			c->ff[v] = (int)i;
	}
}

/* ----------------------------------------------------- func records */

/* lj_debug_pushloc's chunk part, without ":line" */
static void locprefix(const char *s, size_t len, uint64_t pt, int builtin,
		      char *out, size_t cap)
{
	if (builtin) {
		snprintf(out, cap, "builtin:%.*s", (int)len, s);
	} else if (len && s[0] == '@') {
		s++, len--;
		for (size_t i = len; i > 0; i--)
			if (s[i - 1] == '/' || s[i - 1] == '\\') {
				s += i, len -= i;
				break;
			}
		snprintf(out, cap, "%.*s", (int)len, s);
	} else if (len > 40) {
		/* %p, as lj_strfmt_wptr prints it */
		snprintf(out, cap, "0x%0*" PRIx64,
			 pt >> 32
			     ? 8 + 2 +
				   2 * ((63 - __builtin_clzll(pt >> 32)) / 8)
			     : 8,
			 pt);
	} else if (len && s[0] == '=') {
		snprintf(out, cap, "%.*s", (int)len - 1, s + 1);
	} else {
		snprintf(out, cap, "\"%.*s\"", (int)len, s);
	}
}

/* The func record of the GCproto at `pt` as logged before `before`: its
 * id, 0 when the log has no such record. */
static uint32_t proto_func(struct cv *c, uint64_t pt, size_t before)
{
	const struct rj_log *log = c->log;
	const uint8_t *h =
	    pt ? rj_log_memory(log, pt, c->psz, "GCproto", before) : NULL;
	if (!h)
		return 0;
	for (size_t i = 0; i < c->nprotos; i++)
		if (c->protos[i].rec == h)
			return c->protos[i].id;
	uint64_t sizept, chunk, first, numline, lineinfo, sizebc,
	    np = 0, fs = 0, nuv = 0, nkn = 0, nkgc = 0, flags = 0;
	if (get(c, "GCproto", "sizept", h, c->psz, &sizept) ||
	    get(c, "GCproto", "chunkname", h, c->psz, &chunk) ||
	    get(c, "GCproto", "firstline", h, c->psz, &first) ||
	    get(c, "GCproto", "numline", h, c->psz, &numline) ||
	    get(c, "GCproto", "lineinfo", h, c->psz, &lineinfo) ||
	    get(c, "GCproto", "sizebc", h, c->psz, &sizebc) ||
	    sizebc > 1u << 24)
		return 0;
	get(c, "GCproto", "numparams", h, c->psz, &np);
	get(c, "GCproto", "framesize", h, c->psz, &fs);
	get(c, "GCproto", "sizeuv", h, c->psz, &nuv);
	get(c, "GCproto", "sizekn", h, c->psz, &nkn);
	get(c, "GCproto", "sizekgc", h, c->psz, &nkgc);
	get(c, "GCproto", "flags", h, c->psz, &flags);
	const uint8_t *all =
	    sizept >= c->psz
		? rj_log_memory(log, pt, (size_t)sizept, "GCproto", before)
		: NULL;
	/* RaptorJIT's line table: one absolute uint32_t line per bytecode,
	 * the header's (pc 0) included (audit/rjinfo.c) */
	const char *lim = rj_log_macro(log, "proto_lineinfo");
	int lines = all && lim && strstr(lim, "uint32_t") && lineinfo >= pt &&
		    lineinfo - pt <= sizept &&
		    (sizept - (lineinfo - pt)) / 4 >= sizebc;
	size_t cl = 0;
	const char *cn = gcstr(c, chunk, before, &cl);
	char pre[400];
	uint32_t first32 = (uint32_t)first;
	if (cn)
		locprefix(cn, cl, pt, first32 == UINT32_MAX, pre, sizeof(pre));
	else
		snprintf(pre, sizeof(pre), "?");
	if (c->nprotos == c->capprotos) {
		size_t n = c->capprotos ? 2 * c->capprotos : 256;
		struct proto_id *p = realloc(c->protos, n * sizeof(*p));
		if (!p) {
			fail(c, -ENOMEM, "out of memory");
			return 0;
		}
		c->protos = p;
		c->capprotos = n;
	}
	uint32_t id = ++c->nextid;
	c->protos[c->nprotos++] = (struct proto_id){h, id};

	struct rec r;
	rec_begin(&r);
	msgpack_pack_map(&r.pk, 5 + (lines ? 1 : 0));
	kstr(&r, "ev", "func");
	kint(&r, "ns", 0);
	kint(&r, "id", id);
	kstr(&r, "locprefix", pre);
	key(&r, "info");
	msgpack_pack_map(&r.pk, 10 + (cn ? 1 : 0));
	kint(&r, "linedefined", (int32_t)first32);
	kint(&r, "lastlinedefined",
	     (int64_t)(int32_t)first32 + (int64_t)numline);
	kint(&r, "bytecodes", (int64_t)sizebc);
	kint(&r, "params", (int64_t)np);
	kint(&r, "stackslots", (int64_t)fs);
	kint(&r, "upvalues", (int64_t)nuv);
	kint(&r, "nconsts", (int64_t)nkn);
	kint(&r, "gcconsts", (int64_t)nkgc);
	key(&r, "children");
	if (flags & 1)
		msgpack_pack_true(&r.pk);
	else
		msgpack_pack_false(&r.pk);
	key(&r, "isvararg");
	if (flags & 2)
		msgpack_pack_true(&r.pk);
	else
		msgpack_pack_false(&r.pk);
	if (cn) {
		key(&r, "source");
		msgpack_pack_str_with_body(&r.pk, cn, cl);
	}
	if (lines) {
		const uint8_t *li = all + (lineinfo - pt);
		key(&r, "lines");
		msgpack_pack_map(&r.pk, (size_t)sizebc);
		for (uint64_t i = 0; i < sizebc; i++) {
			msgpack_pack_uint64(&r.pk, i);
			msgpack_pack_uint64(&r.pk, rd_le(li + 4 * i, 4));
		}
	}
	rec_end(c, &r);
	return id;
}

/* A func record for a function of which the log tells nothing: jit.dump
 * and jit.v print "(?)" for it. */
static uint32_t unknown_func(struct cv *c)
{
	if (c->unknown_id)
		return c->unknown_id;
	c->unknown_id = ++c->nextid;
	struct rec r;
	rec_begin(&r);
	msgpack_pack_map(&r.pk, 4);
	kstr(&r, "ev", "func");
	kint(&r, "ns", 0);
	kint(&r, "id", c->unknown_id);
	key(&r, "info");
	msgpack_pack_map(&r.pk, 0);
	rec_end(c, &r);
	return c->unknown_id;
}

/* A func record for the GCfunc at `fn` (a Lua function: its prototype's;
 * a fast function: its ffid in the host's numbering; a C function: its
 * address), or 0 when the log does not have it. */
static uint32_t gcfunc_id(struct cv *c, uint64_t fn, size_t before)
{
	const uint8_t *f =
	    fn ? rj_log_memory(c->log, fn, c->fsz, NULL, before) : NULL;
	uint64_t ffid, pc, addr = 0, nuv = 0;
	if (!f || get(c, "GCfuncC", "ffid", f, c->fsz, &ffid))
		return 0;
	if (ffid == 0) { /* FF_LUA: funcproto(fn) = l.pc - sizeof(GCproto) */
		const char *fp = rj_log_macro(c->log, "funcproto");
		if (!fp || !strstr(fp, "-sizeof(GCproto)") ||
		    get(c, "GCfuncL", "pc", f, c->fsz, &pc) || pc < c->psz)
			return 0;
		return proto_func(c, pc - c->psz, before);
	}
	get(c, "GCfuncC", "f", f, c->fsz, &addr);
	get(c, "GCfuncC", "nupvalues", f, c->fsz, &nuv);
	int hff = -1;
	if (ffid > 1) {
		load_ff(c);
		hff = ffid < NMAP ? c->ff[ffid] : -1;
		if (hff < 0)
			return 0; /* a fast function the host does not have */
	}
	uint32_t id = ++c->nextid;
	struct rec r;
	rec_begin(&r);
	msgpack_pack_map(&r.pk, 4);
	kstr(&r, "ev", "func");
	kint(&r, "ns", 0);
	kint(&r, "id", id);
	key(&r, "info");
	msgpack_pack_map(&r.pk, hff >= 0 ? 3 : 2);
	if (hff >= 0)
		kint(&r, "ffid", hff);
	kint(&r, "addr", (int64_t)addr);
	kint(&r, "upvalues", (int64_t)nuv);
	rec_end(c, &r);
	return id;
}

/* ------------------------------------------------------------ traces */

struct ir {
	const uint8_t *b; /* IRIns[] from ref nk */
	uint64_t nk, nins;
};

static int irf(struct cv *c, const struct ir *v, uint64_t ref, const char *f,
	       uint64_t *val)
{
	*val = 0;
	if (ref < v->nk || ref >= v->nins)
		return -ERANGE;
	return get(c, "IRIns", f, v->b + (ref - v->nk) * c->isz, c->isz, val);
}

static uint64_t slot64(struct cv *c, const struct ir *v, uint64_t ref)
{
	if (ref + 1 < v->nk || ref + 1 >= v->nins)
		return 0;
	return rd_le(v->b + (ref + 1 - v->nk) * c->isz, 8);
}

static int is64(const struct cv *c, uint64_t o)
{
	return (int)o == c->op_knum || (int)o == c->op_kint64 ||
	       (int)o == c->op_kgc || (int)o == c->op_kptr ||
	       (int)o == c->op_kkptr;
}

/* %p text of an address (lj_strfmt_wptr) */
static void ptext(uint64_t a, char *out, size_t cap)
{
	if (!a) {
		snprintf(out, cap, "NULL");
		return;
	}
	int n = a >> 32 ? 8 + 2 + 2 * ((63 - __builtin_clzll(a >> 32)) / 8) : 8;
	snprintf(out, cap, "0x%0*" PRIx64, n, a);
}

static void pack_obj(struct rec *r, const char *obj, uint64_t addr,
		     const char *loc)
{
	char p[40], s[80];
	ptext(addr, p, sizeof(p));
	snprintf(s, sizeof(s), "%s: %s", obj, p);
	msgpack_pack_map(&r->pk, loc ? 4 : 3);
	kstr(r, "obj", obj);
	kint(r, "addr", (int64_t)addr);
	kstr(r, "str", s);
	if (loc)
		kstr(r, "loc", loc);
}

/* The Lua value of constant `ref` (lj_ir_kvalue's answer), as our
 * records write values (docs/AUDITLOG.md) */
static void pack_kvalue(struct cv *c, struct rec *r, const struct ir *v,
			uint64_t ref, size_t before)
{
	uint64_t o, t, i;
	irf(c, v, ref, "o", &o);
	irf(c, v, ref, "t", &t);
	irf(c, v, ref, "i", &i);
	t &= 31;
	uint64_t w = slot64(c, v, ref);
	int op = (int)o;
	if (op == c->op_kpri) {
		if (t == 1)
			msgpack_pack_false(&r->pk);
		else if (t == 2)
			msgpack_pack_true(&r->pk);
		else
			msgpack_pack_nil(&r->pk);
	} else if (op == c->op_kint) {
		msgpack_pack_int64(&r->pk, (int32_t)(uint32_t)i);
	} else if (op == c->op_knum) {
		double d;
		memcpy(&d, &w, sizeof(d));
		msgpack_pack_double(&r->pk, d);
	} else if (op == c->op_kptr || op == c->op_kkptr) {
		msgpack_pack_double(&r->pk, (double)w); /* a number in 2.1 */
	} else if (op == c->op_knull) {
		msgpack_pack_int64(&r->pk, 0);
	} else if (op == c->op_kint64) {
		char s[40];
		if (t == 22) /* U64 */
			snprintf(s, sizeof(s), "%" PRIu64 "ULL", w);
		else
			snprintf(s, sizeof(s), "%" PRId64 "LL", (int64_t)w);
		msgpack_pack_map(&r->pk, 4);
		kstr(r, "obj", "cdata");
		kint(r, "addr", 0);
		kstr(r, "str", s);
		kstr(r, "ctype", t == 22 ? "uint64_t" : "int64_t");
	} else if (op == c->op_kgc) {
		size_t len;
		const char *s;
		uint32_t id;
		switch (t) {
		case 4: /* STR */
			s = gcstr(c, w, before, &len);
			if (s)
				msgpack_pack_str_with_body(&r->pk, s, len);
			else
				pack_obj(r, "string", w, NULL);
			break;
		case 8: /* FUNC */
			id = gcfunc_id(c, w, before);
			if (!id)
				id = unknown_func(c);
			msgpack_pack_map(&r->pk, 1);
			kint(r, "fn", id);
			break;
		case 7: /* PROTO: funcinfo(proto).loc, at pc 0 */
		{
			const uint8_t *h =
			    rj_log_memory(c->log, w, c->psz, "GCproto", before);
			uint64_t ch, first;
			char pre[400], loc[420];
			const char *cn;
			if (h &&
			    !get(c, "GCproto", "chunkname", h, c->psz, &ch) &&
			    !get(c, "GCproto", "firstline", h, c->psz,
				 &first) &&
			    (cn = gcstr(c, ch, before, &len))) {
				locprefix(cn, len, w,
					  (uint32_t)first == UINT32_MAX, pre,
					  sizeof(pre));
				snprintf(loc, sizeof(loc), "%s:%u", pre,
					 (uint32_t)first);
				pack_obj(r, "proto", w, loc);
			} else {
				pack_obj(r, "proto", w, NULL);
			}
			break;
		}
		case 6:
			pack_obj(r, "thread", w, NULL);
			break;
		case 10: /* the ctype is not in the log */
			pack_obj(r, "cdata", w, NULL);
			break;
		case 11:
			pack_obj(r, "table", w, NULL);
			break;
		case 12:
			pack_obj(r, "userdata", w, NULL);
			break;
		default:
			pack_obj(r, "gcobject", w, NULL);
		}
	} else {
		msgpack_pack_nil(&r->pk);
	}
}

/* An IR instruction as traceir answers: m, ot, op1, op2, ridsp in the
 * host's numbering. -1 when the host has no such opcode. */
static int pack_ins(struct cv *c, struct rec *r, const struct ir *v,
		    uint64_t ref, uint32_t traceno)
{
	uint64_t o, t, op1, op2, rr, s;
	irf(c, v, ref, "o", &o);
	irf(c, v, ref, "t", &t);
	irf(c, v, ref, "op1", &op1);
	irf(c, v, ref, "op2", &op2);
	irf(c, v, ref, "r", &rr);
	irf(c, v, ref, "s", &s);
	int ho = o < (uint64_t)c->nir ? c->ir[o] : -1;
	if (ho < 0) {
		fail(c, -EINVAL,
		     "trace %u uses IR opcode %s (%" PRIu64
		     "), which the host's jit.vmdef does not have",
		     traceno, o < (uint64_t)c->nir ? c->irname[o] : "?", o);
		return -1;
	}
	int m = c->irmode[o];
	int64_t a = (int64_t)op1, b = (int64_t)op2;
	if ((m & 3) == 0)
		a -= c->ref_bias;
	if (((m >> 2) & 3) == 0)
		b -= c->ref_bias;
	if (((m >> 2) & 3) == 1) { /* lit: names jit.dump looks up */
		const char *n = c->irname[o];
		int *map = !strncmp(n, "CALL", 4) ? c->call
			   : (int)o == c->op_fload || (int)o == c->op_fref
			       ? c->fld
			   : (int)o == c->op_fpmath ? c->fpm
						    : NULL;
		/* FLOAD REF_NIL, ofs (lj_ir_ggfload): a GG_State offset
		 * beyond every field id, which jit.dump prints as a number
		 * when the host has no field of that number either */
		if (map == c->fld && op2 >= (uint64_t)c->nfld &&
		    op2 >= c->host->n[RJH_IRFIELD])
			map = NULL;
		if (map) {
			int h = op2 < NMAP ? map[op2] : -1;
			if (h < 0) {
				fail(c, -EINVAL,
				     "trace %u: %s's operand %" PRIu64
				     " has no name in the host's jit.vmdef",
				     traceno, n, op2);
				return -1;
			}
			b = h;
		}
	}
	msgpack_pack_array(&r->pk, 5);
	msgpack_pack_int64(&r->pk, m);
	msgpack_pack_int64(&r->pk, (int64_t)((uint64_t)ho << 8 | (t & 0xff)));
	msgpack_pack_int64(&r->pk, a);
	msgpack_pack_int64(&r->pk, b);
	msgpack_pack_int64(&r->pk, (int64_t)((rr & 0xff) | (s & 0xff) << 8));
	return 0;
}

static const char *host_link(const struct cv *c, uint32_t lt)
{
	const char *n = lt < 16 ? c->linkname[lt] : "";
	for (size_t i = 0; i < sizeof(lj_link) / sizeof(lj_link[0]); i++)
		if (!strcmp(n, lj_link[i][0]))
			return lj_link[i][1];
	return NULL;
}

/* the start record before a stop or an abort */
static void emit_start(struct cv *c, uint64_t ns, uint32_t tr, uint32_t func,
		       uint64_t pc, int64_t otr, int64_t oex)
{
	struct rec r;
	rec_begin(&r);
	msgpack_pack_map(&r.pk, 5 + (otr ? 2 : 0));
	kstr(&r, "ev", "start");
	kint(&r, "ns", (int64_t)ns);
	kint(&r, "tr", tr);
	kint(&r, "func", func);
	kint(&r, "pc", (int64_t)pc);
	if (otr) {
		kint(&r, "otr", otr);
		kint(&r, "oex", oex);
	}
	rec_end(c, &r);
}

/* the bytecode position of `pc` in the GCproto at pt (proto_bc(pt) is
 * (char *)pt + sizeof(GCproto)), or 0 */
static uint64_t bcpos(const struct cv *c, uint64_t pt, uint64_t pc)
{
	uint64_t bc = pt + c->psz;
	return pc >= bc && (pc - bc) % 4 == 0 ? (pc - bc) / 4 : 0;
}

static int do_stop(struct cv *c, const struct rj_trace *t, uint64_t ns)
{
	const struct rj_log *log = c->log;
	const uint8_t *g = t->raw;
	size_t before = (size_t)t->record_offset;
	uint64_t irp, nk, nins, nsnap, snapp, snapmap, nsnapmap, pt, pc;
	if (!g || get(c, "GCtrace", "ir", g, c->tsz, &irp) ||
	    get(c, "GCtrace", "nk", g, c->tsz, &nk) ||
	    get(c, "GCtrace", "nins", g, c->tsz, &nins) ||
	    get(c, "GCtrace", "nsnap", g, c->tsz, &nsnap) ||
	    get(c, "GCtrace", "snap", g, c->tsz, &snapp) ||
	    get(c, "GCtrace", "snapmap", g, c->tsz, &snapmap) ||
	    get(c, "GCtrace", "nsnapmap", g, c->tsz, &nsnapmap) ||
	    get(c, "GCtrace", "startpt", g, c->tsz, &pt) ||
	    get(c, "GCtrace", "startpc", g, c->tsz, &pc)) {
		fail(c, -EINVAL,
		     "trace %u: the log's DWARF lacks GCtrace's IR, "
		     "snapshot or start fields",
		     t->traceno);
		return -1;
	}
	nk &= 0xffffffffu;
	nins &= 0xffffffffu;
	uint64_t rb = (uint64_t)c->ref_bias;
	struct ir v = {NULL, nk, nins};
	if (nk <= rb && nins > rb && nins - nk < 1u << 20)
		v.b = rj_log_memory(log, irp + nk * c->isz,
				    (nins - nk) * c->isz, "IRIns[]", before);
	const uint8_t *S = nsnap < 65536
			       ? rj_log_memory(log, snapp, nsnap * c->ssz,
					       "SnapShot[]", before)
			       : NULL;
	const uint8_t *E = nsnapmap < 1u << 24
			       ? rj_log_memory(log, snapmap, nsnapmap * 4,
					       "SnapEntry[]", before)
			       : NULL;
	if (!nsnapmap)
		E = (const uint8_t *)"";
	if (!v.b || (nsnap && (!S || !E))) {
		fail(c, -EINVAL,
		     "trace %u (record at byte %" PRIu64
		     "): no IRIns[], SnapShot[] or SnapEntry[] record",
		     t->traceno, t->record_offset);
		return -1;
	}
	const char *lt = host_link(c, t->linktype);
	if (!lt) {
		fail(c, -EINVAL,
		     "trace %u: link type %u (%s) is not one of LuaJIT's",
		     t->traceno, t->linktype,
		     t->linktype < 16 ? c->linkname[t->linktype] : "?");
		return -1;
	}
	/* the start: func = its prototype, otr/oex as LuaJIT's trace_start
	 * sends them (a stitched trace: the stitching trace, -1) */
	uint32_t fid = proto_func(c, pt, before);
	if (!fid)
		fid = unknown_func(c);
	int64_t otr = 0, oex = 0;
	if (t->parent)
		otr = t->parent, oex = t->exitno;
	else if (t->exitno)
		otr = t->exitno, oex = -1;
	emit_start(c, ns, t->traceno, fid, pt ? bcpos(c, pt, pc) : 0, otr, oex);
	/* the stop's function: J->fn of the jit_State logged with it */
	uint32_t sfid = 0;
	const uint8_t *J =
	    rj_log_memory(log, t->jit_state, c->jsz, "jit_State", before);
	uint64_t fn = 0;
	if (J && !get(c, "jit_State", "fn", J, c->jsz, &fn))
		sfid = gcfunc_id(c, fn, before);
	if (!sfid)
		sfid = unknown_func(c);

	/* constants first: pack them into a separate buffer while the
	 * func records they need are written */
	struct rec kr;
	rec_begin(&kr);
	uint32_t nkrec = 0;
	for (uint64_t ref = nk; ref < rb; ref++) {
		uint64_t o;
		irf(c, &v, ref, "o", &o);
		nkrec++;
		if (is64(c, o))
			ref++;
	}
	msgpack_pack_map(&kr.pk, nkrec);
	for (uint64_t ref = nk; ref < rb; ref++) {
		uint64_t o, ty, op1, op2;
		irf(c, &v, ref, "o", &o);
		irf(c, &v, ref, "t", &ty);
		msgpack_pack_int64(&kr.pk, (int64_t)ref - (int64_t)rb);
		if ((int)o == c->op_kslot) {
			irf(c, &v, ref, "op1", &op1);
			irf(c, &v, ref, "op2", &op2);
			uint64_t kt = 0;
			irf(c, &v, op1, "t", &kt);
			msgpack_pack_array(&kr.pk, 3);
			pack_kvalue(c, &kr, &v, op1, before);
			msgpack_pack_int64(&kr.pk, (int64_t)(kt & 31));
			msgpack_pack_int64(&kr.pk, (int64_t)op2);
		} else {
			msgpack_pack_array(&kr.pk, 2);
			pack_kvalue(c, &kr, &v, ref, before);
			msgpack_pack_int64(&kr.pk, (int64_t)(ty & 31));
		}
		if (is64(c, o))
			ref++;
	}
	/* exit stubs: J->exitstubgroup[n / 32] + 4 * (n % 32), as
	 * exitstub_addr(J, n) (EXITSTUBS_PER_GROUP, EXITSTUB_SPACING
	 * checked in load()) */
	uint32_t eoff = 0, esize = 0;
	uint64_t stub_from = c->stubs_sent, stub_to = c->stubs_sent;
	if (J &&
	    !rj_log_field(log, "jit_State", "exitstubgroup", &eoff, &esize) &&
	    eoff <= c->jsz && c->jsz - eoff >= esize) {
		for (uint64_t n = stub_from; n < nsnap && n / 32 < esize / 8;
		     n++) {
			if (!rd_le(J + eoff + 8 * (n / 32), 8))
				break;
			stub_to = n + 1;
		}
	}

	struct rec r;
	rec_begin(&r);
	msgpack_pack_map(&r.pk, 12 + (stub_to > stub_from ? 1 : 0));
	kstr(&r, "ev", "stop");
	kint(&r, "ns", (int64_t)ns);
	kint(&r, "tr", t->traceno);
	kint(&r, "func", sfid);
	key(&r, "info");
	msgpack_pack_map(&r.pk, 5);
	kint(&r, "nins", (int64_t)(nins - rb - 1));
	kint(&r, "nk", (int64_t)(rb - nk));
	kint(&r, "link", t->link);
	kint(&r, "nexit", (int64_t)nsnap);
	kstr(&r, "linktype", lt);
	key(&r, "ir");
	msgpack_pack_map(&r.pk, (size_t)(nins - rb));
	for (uint64_t ref = rb; ref < nins; ref++) {
		msgpack_pack_int64(&r.pk, (int64_t)(ref - rb));
		if (pack_ins(c, &r, &v, ref, t->traceno))
			break;
	}
	key(&r, "k");
	msgpack_sbuffer_write(&r.sb, kr.sb.data, kr.sb.size);
	msgpack_sbuffer_destroy(&kr.sb);
	key(&r, "snap");
	msgpack_pack_map(&r.pk, (size_t)nsnap);
	for (uint64_t i = 0; i < nsnap; i++) {
		const uint8_t *sn = S + i * c->ssz;
		uint64_t mapofs = 0, ref = 0, nslots = 0, nent = 0;
		get(c, "SnapShot", "mapofs", sn, c->ssz, &mapofs);
		get(c, "SnapShot", "ref", sn, c->ssz, &ref);
		get(c, "SnapShot", "nslots", sn, c->ssz, &nslots);
		get(c, "SnapShot", "nent", sn, c->ssz, &nent);
		if (mapofs > nsnapmap || nent > nsnapmap - mapofs) {
			fail(c, -EINVAL,
			     "trace %u: snapshot %" PRIu64
			     " lies outside its SnapEntry[] record",
			     t->traceno, i);
			nent = 0;
		}
		msgpack_pack_int64(&r.pk, (int64_t)i);
		msgpack_pack_map(&r.pk, (size_t)nent + 3);
		msgpack_pack_int64(&r.pk, 0);
		msgpack_pack_int64(&r.pk, (int64_t)ref - (int64_t)rb);
		msgpack_pack_int64(&r.pk, 1);
		msgpack_pack_int64(&r.pk, (int64_t)nslots);
		for (uint64_t e = 0; e < nent; e++) {
			msgpack_pack_int64(&r.pk, (int64_t)e + 2);
			msgpack_pack_int64(&r.pk, (int32_t)(uint32_t)rd_le(
						      E + (mapofs + e) * 4, 4));
		}
		msgpack_pack_int64(&r.pk, (int64_t)nent + 2);
		msgpack_pack_int64(&r.pk, (int32_t)0xff000000u);
	}
	key(&r, "mc");
	if (t->mc) {
		msgpack_pack_bin(&r.pk, t->szmcode);
		msgpack_pack_bin_body(&r.pk, t->mc, t->szmcode);
	} else {
		msgpack_pack_nil(&r.pk);
	}
	kint(&r, "addr", (int64_t)t->mcode);
	kint(&r, "loop", t->mcloop);
	kint(&r, "spadj", t->spadjust);
	if (stub_to > stub_from) {
		key(&r, "gexitstub");
		msgpack_pack_map(&r.pk, (size_t)(stub_to - stub_from));
		for (uint64_t n = stub_from; n < stub_to; n++) {
			msgpack_pack_int64(&r.pk, (int64_t)n);
			msgpack_pack_int64(
			    &r.pk, (int64_t)(rd_le(J + eoff + 8 * (n / 32), 8) +
					     4 * (n % 32)));
		}
		c->stubs_sent = (uint32_t)stub_to;
	}
	rec_end(c, &r);
	return c->err ? -1 : 0;
}

/* An abort: its start from J->cur (startpt/startpc) and J->parent/exitno,
 * where it stopped from J->pt/J->pc, the reason as the TraceError's name
 * (the messages are not in the log). */
static void do_abort(struct cv *c, uint64_t off, uint64_t ns)
{
	const struct rj_log *log = c->log;
	uint64_t err = UINT64_MAX, js = 0;
	rj_log_event_u64(log, off, "TraceError", &err);
	rj_log_event_u64(log, off, "jit_State", &js);
	const uint8_t *J =
	    js ? rj_log_memory(log, js, c->jsz, "jit_State", off) : NULL;
	uint32_t curoff, cursz;
	uint64_t spt = 0, spc = 0, pt = 0, pc = 0, parent = 0, exitno = 0,
		 traceno = 0;
	if (J && !rj_log_field(log, "jit_State", "cur", &curoff, &cursz) &&
	    curoff <= c->jsz && c->jsz - curoff >= c->tsz) {
		get(c, "GCtrace", "startpt", J + curoff, c->tsz, &spt);
		get(c, "GCtrace", "startpc", J + curoff, c->tsz, &spc);
		get(c, "GCtrace", "traceno", J + curoff, c->tsz, &traceno);
		get(c, "jit_State", "pt", J, c->jsz, &pt);
		get(c, "jit_State", "pc", J, c->jsz, &pc);
		get(c, "jit_State", "parent", J, c->jsz, &parent);
		get(c, "jit_State", "exitno", J, c->jsz, &exitno);
	}
	uint32_t sid = proto_func(c, spt, off);
	if (!sid)
		sid = unknown_func(c);
	emit_start(c, ns, (uint32_t)traceno, sid, spt ? bcpos(c, spt, spc) : 0,
		   parent ? (int64_t)parent : 0, (int64_t)exitno);
	/* where recording stopped: J->pt/J->pc when pc lies in pt's
	 * bytecode, else the start (after a return J->pc is elsewhere) */
	uint32_t aid = 0;
	uint64_t apc = 0;
	const uint8_t *h =
	    pt ? rj_log_memory(log, pt, c->psz, "GCproto", off) : NULL;
	uint64_t sizebc = 0;
	if (h && !get(c, "GCproto", "sizebc", h, c->psz, &sizebc) &&
	    pc >= pt + c->psz && (pc - pt - c->psz) % 4 == 0 &&
	    (pc - pt - c->psz) / 4 < sizebc) {
		aid = proto_func(c, pt, off);
		apc = (pc - pt - c->psz) / 4;
	}
	if (!aid)
		aid = sid, apc = spt ? bcpos(c, spt, spc) : 0;
	char why[64];
	if (err < 128 && c->trerr[err][0])
		snprintf(why, sizeof(why), "%s", c->trerr[err]);
	else
		snprintf(why, sizeof(why), "TraceError %" PRIu64, err);
	struct rec r;
	rec_begin(&r);
	msgpack_pack_map(&r.pk, 7);
	kstr(&r, "ev", "abort");
	kint(&r, "ns", (int64_t)ns);
	kint(&r, "tr", (int64_t)traceno);
	kint(&r, "func", aid);
	kint(&r, "pc", (int64_t)apc);
	kstr(&r, "err", why);
	key(&r, "errinfo");
	msgpack_pack_nil(&r.pk);
	rec_end(c, &r);
}

static void do_flush(struct cv *c, uint64_t ns)
{
	struct rec r;
	rec_begin(&r);
	msgpack_pack_map(&r.pk, 2);
	kstr(&r, "ev", "flush");
	kint(&r, "ns", (int64_t)ns);
	rec_end(c, &r);
	c->stubs_sent = 0; /* the flush frees the exit stubs */
}

static int each(const struct rj_record *rr, void *arg)
{
	struct cv *c = arg;
	if (c->err)
		return 1;
	if (strcmp(rr->kind, "event") || !rr->name)
		return 0;
	if (!strcmp(rr->name, "trace_stop")) {
		size_t n = rj_log_ntraces(c->log);
		while (c->ti < n &&
		       rj_log_trace(c->log, c->ti)->record_offset < rr->offset)
			c->ti++;
		if (c->ti < n &&
		    rj_log_trace(c->log, c->ti)->record_offset == rr->offset)
			do_stop(c, rj_log_trace(c->log, c->ti), rr->nanotime);
	} else if (!strcmp(rr->name, "trace_abort")) {
		do_abort(c, rr->offset, rr->nanotime);
	} else if (!strcmp(rr->name, "trace_flushall")) {
		do_flush(c, rr->nanotime);
	}
	return c->err ? 1 : 0;
}

int rj_log_to_audit(const struct rj_log *log, const struct rj_host *host,
		    FILE *out, char *msg, size_t msglen)
{
	static struct cv c; /* big tables */
	memset(&c, 0, sizeof(c));
	c.log = log;
	c.host = host;
	c.out = out;
	c.msg = msg;
	c.msglen = msglen;
	if (msglen)
		msg[0] = 0;
	if (load(&c) || load_modes(&c))
		return c.err;
	uint8_t magic[ALOG_MAGIC_LEN];
	alog_magic(magic);
	if (fwrite(magic, 1, sizeof(magic), out) != sizeof(magic)) {
		fail(&c, -EIO, "cannot write the converted log");
		return c.err;
	}
	/* the header: no vmdef (the replay then uses its own luajit's, the
	 * host's, onto which the numbers are mapped); ircalladdr 0 for every
	 * call (the log has no addresses of the VM's C functions) */
	struct rec r;
	rec_begin(&r);
	msgpack_pack_map(&r.pk, 8);
	kstr(&r, "ev", "header");
	kint(&r, "ns", 0);
	kint(&r, "format", 2);
	kstr(&r, "producer",
	     "jitsframe audit replay, from a RaptorJIT auditlog");
	kstr(&r, "level", "default");
	kstr(&r, "clock", "CLOCK_MONOTONIC");
	key(&r, "vm");
	msgpack_pack_map(&r.pk, 3);
	kstr(&r, "version", "RaptorJIT");
	kstr(&r, "arch", "x64");
	kstr(&r, "os", "Linux");
	key(&r, "ircalladdr");
	msgpack_pack_map(&r.pk, host->n[RJH_IRCALL]);
	for (uint32_t i = 0; i < host->n[RJH_IRCALL]; i++) {
		msgpack_pack_int64(&r.pk, i);
		msgpack_pack_int64(&r.pk, 0);
	}
	rec_end(&c, &r);
	rj_log_foreach(log, each, &c);
	free(c.protos);
	if (!c.err && fflush(out))
		fail(&c, -EIO, "cannot write the converted log");
	return c.err;
}
