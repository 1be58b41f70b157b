/* SPDX-License-Identifier: MIT */
/*
 * `jitsframe audit FILE`: read an auditlog (docs/AUDITLOG.md) offline.
 *   audit FILE              list traces and aborts like -jv
 *   audit FILE --dump N     one trace: IR named from the log's own vmdef,
 *                           constants, snapshots, machine code (objdump)
 *   --json                  the same as JSON for tools
 *   audit replay FILE ...   LuaJIT's own jit.dump / jit.v on the log
 *                           (cli/audit_replay.c)
 */
#include "auditlog.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Written by the replay side (cli/audit_replay.c); weak so that this file
 * links without it. */
__attribute__((weak)) int audit_replay_main(int argc, char **argv);

static const char usage[] =
    "Usage: jitsframe audit FILE [--json]\n"
    "       jitsframe audit FILE --dump N [--json] [--no-mcode]\n"
    "       jitsframe audit RJLOG --dump N [--epoch E] [--no-mcode]\n"
    "       jitsframe audit replay FILE -jdump[=MODE] | -jv\n"
    "\n"
    "Read an auditlog written by start{auditlog=PATH} or `jitsframe run -a`,\n"
    "or one RaptorJIT wrote (RJLOG: raptorjit -a FILE; recognised by its\n"
    "first bytes): its traces like -jv, aborts named by the log's own\n"
    "TraceError, --dump N with IR named by its own IRDEF.\n"
    "\n"
    "  (no option)   list the traces and aborts, like -jv:\n"
    "                [TRACE n chunk:line link] / [TRACE --- ... -- why]\n"
    "  --dump N      trace N (its last stop in the log): IR named from\n"
    "                the log's own vmdef tables, constants, snapshots and\n"
    "                the machine code disassembled by objdump\n"
    "  --no-mcode    with --dump: no disassembly\n"
    "  --epoch E     with --dump on a RaptorJIT log: trace N after E of\n"
    "                its flushes (default: the first trace N in the log)\n"
    "  --json        machine-readable output (one JSON document)\n"
    "\n"
    "A damaged or truncated log is read up to its last good record; the\n"
    "reason goes to stderr: \"damaged at byte N: <why>; K records decoded\".\n"
    "\n"
    "Exit status: 0 ok; 1 the log is damaged (what precedes the damage is\n"
    "shown) or trace N is not in it; 2 usage; 3 cannot read FILE or run\n"
    "objdump.\n";

/* ----------------------------------------------------------- helpers */

static int64_t geti(const msgpack_object *m, const char *k, int64_t dflt)
{
	int64_t v;
	return alog_mp_int(alog_mp_get(m, k), &v) ? v : dflt;
}

/* a str field as a NUL-terminated copy in buf */
static const char *gets_(const msgpack_object *o, char *buf, size_t cap)
{
	uint32_t n;
	const char *s = alog_mp_str(o, &n);
	if (!s)
		return NULL;
	if (n >= cap)
		n = (uint32_t)cap - 1;
	memcpy(buf, s, n);
	buf[n] = 0;
	return buf;
}

static int ev_is(const msgpack_object *r, const char *ev)
{
	uint32_t n;
	const char *s = alog_mp_str(alog_mp_get(r, "ev"), &n);
	return s && n == strlen(ev) && !memcmp(s, ev, n);
}

static void json_obj(FILE *f, const msgpack_object *o, int depth)
{
	if (depth > 64) {
		fputs("null", f);
		return;
	}
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		fputs("null", f);
		break;
	case MSGPACK_OBJECT_BOOLEAN:
		fputs(o->via.boolean ? "true" : "false", f);
		break;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		fprintf(f, "%" PRIu64, o->via.u64);
		break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		fprintf(f, "%" PRId64, o->via.i64);
		break;
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		if (!isfinite(o->via.f64)) /* NaN, inf: no JSON */
			fprintf(f, "\"%g\"", o->via.f64);
		else
			fprintf(f, "%.17g", o->via.f64);
		break;
	case MSGPACK_OBJECT_STR: {
		fputc('"', f);
		for (uint32_t i = 0; i < o->via.str.size; i++) {
			unsigned char c = (unsigned char)o->via.str.ptr[i];
			if (c == '"' || c == '\\')
				fprintf(f, "\\%c", c);
			else if (c < 0x20 || c >= 0x7f)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
		}
		fputc('"', f);
		break;
	}
	case MSGPACK_OBJECT_BIN:
		fputc('"', f);
		for (uint32_t i = 0; i < o->via.bin.size; i++)
			fprintf(f, "%02x", (unsigned char)o->via.bin.ptr[i]);
		fputc('"', f);
		break;
	case MSGPACK_OBJECT_ARRAY:
		fputc('[', f);
		for (uint32_t i = 0; i < o->via.array.size; i++) {
			if (i)
				fputc(',', f);
			json_obj(f, &o->via.array.ptr[i], depth + 1);
		}
		fputc(']', f);
		break;
	case MSGPACK_OBJECT_MAP:
		fputc('{', f);
		for (uint32_t i = 0; i < o->via.map.size; i++) {
			const msgpack_object *k = &o->via.map.ptr[i].key;
			if (i)
				fputc(',', f);
			if (k->type == MSGPACK_OBJECT_STR) {
				json_obj(f, k, depth + 1);
			} else {
				fputc('"', f);
				int64_t v;
				if (alog_mp_int(k, &v))
					fprintf(f, "%" PRId64, v);
				fputc('"', f);
			}
			fputc(':', f);
			json_obj(f, &o->via.map.ptr[i].val, depth + 1);
		}
		fputc('}', f);
		break;
	default:
		fputs("null", f);
		break;
	}
}

/* ------------------------------------------------- functions and names */

/* What we keep of a func record: enough to name a (func, pc). */
struct fn {
	uint64_t id;
	char prefix[256]; /* locprefix, or a fast function's name */
	int32_t *lines;
	uint32_t nlines;
	int64_t ffid;
	uint64_t addr;
};

struct log {
	struct fn *fns;
	size_t nfn, cap;
	char *bcnames; /* vmdef.irnames etc.: copies from the header */
	char *irnames;
	char traceerr[128][128];
	char ffnames[256][32];
	char arch[16];
	/* -jv's state: where the current trace started */
	char startloc[320], startex[64];
};

static struct fn *find_fn(struct log *lg, uint64_t id)
{
	/* ids are handed out in increasing order; records of a rotated log
	 * repeat them: take the last */
	for (size_t i = lg->nfn; i-- > 0;)
		if (lg->fns[i].id == id)
			return &lg->fns[i];
	return NULL;
}

/* 0, or -1 with why in err (a format-2 func record whose bytecode dump
 * does not decode) */
static int add_fn(struct log *lg, const msgpack_object *r, char *err,
		  size_t errlen)
{
	if (lg->nfn == lg->cap) {
		size_t cap = lg->cap ? lg->cap * 2 : 64;
		struct fn *n = realloc(lg->fns, cap * sizeof(*n));
		if (!n)
			return 0;
		lg->fns = n;
		lg->cap = cap;
	}
	struct fn *f = &lg->fns[lg->nfn];
	memset(f, 0, sizeof(*f));
	f->id = (uint64_t)geti(r, "id", 0);
	const msgpack_object *info = alog_mp_get(r, "info");
	f->ffid = geti(info, "ffid", -1);
	f->addr = (uint64_t)geti(info, "addr", 0);
	if (!gets_(alog_mp_get(r, "locprefix"), f->prefix, sizeof(f->prefix)))
		f->prefix[0] = 0;
	uint32_t dl;
	const char *d = alog_mp_str(alog_mp_get(r, "dump"), &dl);
	const msgpack_object *lines = alog_mp_get(r, "lines");
	if (d) { /* format 2: the lines are in the bytecode dump */
		struct alog_fproto fp;
		if (alog_fproto_decode(&fp, d, dl)) {
			snprintf(err, errlen,
				 "func record %" PRIu64
				 ": bad bytecode dump: %s",
				 f->id, fp.err);
			alog_fproto_free(&fp);
			return -1;
		}
		f->lines = calloc(fp.sizebc, sizeof(*f->lines));
		if (f->lines) {
			f->nlines = fp.sizebc;
			for (uint32_t pc = 0; pc < fp.sizebc; pc++)
				f->lines[pc] =
				    (int32_t)alog_fproto_line(&fp, pc);
		}
		alog_fproto_free(&fp);
	} else if (lines && lines->type == MSGPACK_OBJECT_MAP &&
		   lines->via.map.size) { /* format 1 */
		uint32_t n = lines->via.map.size;
		f->lines = calloc(n, sizeof(*f->lines));
		if (f->lines) {
			f->nlines = n;
			for (uint32_t i = 0; i < n; i++) {
				int64_t pc, ln;
				if (alog_mp_int(&lines->via.map.ptr[i].key,
						&pc) &&
				    alog_mp_int(&lines->via.map.ptr[i].val,
						&ln) &&
				    pc >= 0 && pc < n)
					f->lines[pc] = (int32_t)ln;
			}
		}
	}
	lg->nfn++;
	return 0;
}

/* -jv's fmtfunc: chunk:line, a fast function's name, or C:addr */
static void fmtfunc(struct log *lg, uint64_t id, int64_t pc, char *out,
		    size_t cap)
{
	struct fn *f = find_fn(lg, id);
	if (!f) {
		snprintf(out, cap, "?");
	} else if (f->nlines || f->prefix[0]) {
		int64_t line = pc >= 0 && pc < f->nlines ? f->lines[pc] : 0;
		snprintf(out, cap, "%s:%" PRId64, f->prefix, line);
	} else if (f->ffid >= 0 && f->ffid < 256 && lg->ffnames[f->ffid][0]) {
		snprintf(out, cap, "%s", lg->ffnames[f->ffid]);
	} else {
		snprintf(out, cap, "C:%" PRIx64, f->addr);
	}
}

static void read_header(struct log *lg, const msgpack_object *r)
{
	const msgpack_object *vmdef = alog_mp_get(r, "vmdef");
	uint32_t n;
	const char *s = alog_mp_str(alog_mp_get(vmdef, "irnames"), &n);
	free(lg->irnames);
	lg->irnames = s ? strndup(s, n) : NULL;
	const msgpack_object *te = alog_mp_get(vmdef, "traceerr");
	for (int i = 0; i < 128; i++)
		if (!gets_(alog_mp_geti(te, i), lg->traceerr[i],
			   sizeof(lg->traceerr[i])))
			lg->traceerr[i][0] = 0;
	const msgpack_object *ff = alog_mp_get(vmdef, "ffnames");
	for (int i = 0; i < 256; i++)
		if (!gets_(alog_mp_geti(ff, i), lg->ffnames[i],
			   sizeof(lg->ffnames[i])))
			lg->ffnames[i][0] = 0;
	if (!gets_(alog_mp_get(alog_mp_get(r, "vm"), "arch"), lg->arch,
		   sizeof(lg->arch)))
		lg->arch[0] = 0;
}

/* A Lua value from the log, short (for errinfo, constants). */
static void fmtval(struct log *lg, const msgpack_object *o, char *out,
		   size_t cap)
{
	int64_t i;
	double d;
	uint32_t n;
	const char *s;
	if (!o || o->type == MSGPACK_OBJECT_NIL)
		snprintf(out, cap, "nil");
	else if (o->type == MSGPACK_OBJECT_BOOLEAN)
		snprintf(out, cap, "%s", o->via.boolean ? "true" : "false");
	else if (alog_mp_int(o, &i))
		snprintf(out, cap, "%" PRId64, i);
	else if (alog_mp_num(o, &d))
		snprintf(out, cap, "%.14g", d);
	else if ((s = alog_mp_str(o, &n)))
		snprintf(out, cap, "\"%.*s\"", (int)(n > 40 ? 40 : n), s);
	else if (alog_mp_int(alog_mp_get(o, "fn"), &i))
		fmtfunc(lg, (uint64_t)i, 0, out, cap);
	else if ((s = alog_mp_str(alog_mp_get(o, "str"), &n)))
		snprintf(out, cap, "%.*s", (int)n, s);
	else
		snprintf(out, cap, "?");
}

/* -jv's fmterr: vmdef.traceerr[err] with its one %s/%d filled in */
static void fmterr(struct log *lg, const msgpack_object *err,
		   const msgpack_object *info, char *out, size_t cap)
{
	int64_t e;
	if (!alog_mp_int(err, &e) || e < 0 || e >= 128 || !lg->traceerr[e][0]) {
		fmtval(lg, err, out, cap);
		return;
	}
	char arg[256];
	int64_t fid;
	if (info && alog_mp_int(alog_mp_get(info, "fn"), &fid))
		fmtfunc(lg, (uint64_t)fid, 0, arg, sizeof(arg));
	else if (info && info->type == MSGPACK_OBJECT_STR)
		snprintf(arg, sizeof(arg), "%.*s", (int)info->via.str.size,
			 info->via.str.ptr);
	else
		fmtval(lg, info, arg, sizeof(arg));
	const char *fmt = lg->traceerr[e];
	size_t o = 0;
	for (const char *p = fmt; *p && o + 1 < cap; p++) {
		if (p[0] == '%' && (p[1] == 's' || p[1] == 'd')) {
			o += (size_t)snprintf(out + o, cap - o, "%s", arg);
			if (o >= cap)
				o = cap - 1;
			p++;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = 0;
}

/* ------------------------------------------------------------ listing */

static void list_event(struct log *lg, const msgpack_object *r, int json,
		       int *first)
{
	char loc[320];
	if (ev_is(r, "start")) {
		fmtfunc(lg, (uint64_t)geti(r, "func", 0), geti(r, "pc", 0),
			lg->startloc, sizeof(lg->startloc));
		const msgpack_object *otr = alog_mp_get(r, "otr");
		int64_t o, x;
		if (alog_mp_int(otr, &o) &&
		    alog_mp_int(alog_mp_get(r, "oex"), &x)) {
			if (x == -1)
				snprintf(lg->startex, sizeof(lg->startex),
					 "(%" PRId64 "/stitch) ", o);
			else
				snprintf(lg->startex, sizeof(lg->startex),
					 "(%" PRId64 "/%" PRId64 ") ", o, x);
		} else {
			lg->startex[0] = 0;
		}
	} else if (ev_is(r, "stop")) {
		int64_t tr = geti(r, "tr", 0);
		const msgpack_object *info = alog_mp_get(r, "info");
		int64_t link = geti(info, "link", 0);
		char lt[32];
		if (!gets_(alog_mp_get(info, "linktype"), lt, sizeof(lt)))
			snprintf(lt, sizeof(lt), "?");
		if (json) {
			printf("%s{\"ev\":\"stop\",\"tr\":%" PRId64 ",\"loc\":",
			       *first ? "" : ",", tr);
			json_str(stdout, lg->startloc);
			printf(",\"parent\":\"%s\",\"link\":%" PRId64
			       ",\"linktype\":",
			       lg->startex, link);
			json_str(stdout, lt);
			printf(",\"nins\":%" PRId64 ",\"addr\":%" PRId64
			       ",\"ns\":%" PRId64 "}\n",
			       geti(info, "nins", 0), geti(r, "addr", 0),
			       geti(r, "ns", 0));
			*first = 0;
		} else if (!strcmp(lt, "interpreter")) {
			printf("[TRACE %3" PRId64
			       " %s%s -- fallback to interpreter]\n",
			       tr, lg->startex, lg->startloc);
		} else if (!strcmp(lt, "stitch")) {
			fmtfunc(lg, (uint64_t)geti(r, "func", 0), 0, loc,
				sizeof(loc));
			printf("[TRACE %3" PRId64 " %s%s %s %s]\n", tr,
			       lg->startex, lg->startloc, lt, loc);
		} else if (link == tr || link == 0) {
			printf("[TRACE %3" PRId64 " %s%s %s]\n", tr,
			       lg->startex, lg->startloc, lt);
		} else if (!strcmp(lt, "root")) {
			printf("[TRACE %3" PRId64 " %s%s -> %" PRId64 "]\n", tr,
			       lg->startex, lg->startloc, link);
		} else {
			printf("[TRACE %3" PRId64 " %s%s -> %" PRId64 " %s]\n",
			       tr, lg->startex, lg->startloc, link, lt);
		}
	} else if (ev_is(r, "abort")) {
		char why[512];
		fmtfunc(lg, (uint64_t)geti(r, "func", 0), geti(r, "pc", 0), loc,
			sizeof(loc));
		fmterr(lg, alog_mp_get(r, "err"), alog_mp_get(r, "errinfo"),
		       why, sizeof(why));
		if (json) {
			printf("%s{\"ev\":\"abort\",\"tr\":%" PRId64
			       ",\"loc\":",
			       *first ? "" : ",", geti(r, "tr", 0));
			json_str(stdout, lg->startloc);
			printf(",\"at\":");
			json_str(stdout, loc);
			printf(",\"why\":");
			json_str(stdout, why);
			printf(",\"ns\":%" PRId64 "}\n", geti(r, "ns", 0));
			*first = 0;
		} else if (strcmp(loc, lg->startloc)) {
			printf("[TRACE --- %s%s -- %s at %s]\n", lg->startex,
			       lg->startloc, why, loc);
		} else {
			printf("[TRACE --- %s%s -- %s]\n", lg->startex,
			       lg->startloc, why);
		}
	} else if (ev_is(r, "flush") && !json) {
		printf("[TRACE flush]\n");
	} else if (ev_is(r, "note")) {
		char t[512];
		if (gets_(alog_mp_get(r, "text"), t, sizeof(t)) && !json)
			printf("[note: %s]\n", t);
	}
}

/* -------------------------------------------------------------- dump */

static const char *const irt[] = {"nil", "fal", "tru", "lud", "str", "p32",
				  "thr", "pro", "fun", "p64", "cdt", "tab",
				  "udt", "flt", "num", "i8 ", "u8 ", "i16",
				  "u16", "int", "u32", "i64", "u64", "sfp"};
static const char *const gpr64[] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp",
				    "rsi", "rdi", "r8",	 "r9",	"r10", "r11",
				    "r12", "r13", "r14", "r15"};

static void regname(const char *arch, int64_t rid, char *out, size_t cap)
{
	if (!strcmp(arch, "x64") && rid < 16)
		snprintf(out, cap, "%s", gpr64[rid]);
	else if (!strcmp(arch, "x64") && rid < 32)
		snprintf(out, cap, "xmm%d", (int)(rid - 16));
	else
		snprintf(out, cap, "r%" PRId64, rid);
}

static void fmtk(struct log *lg, const msgpack_object *k, int64_t ref,
		 char *out, size_t cap)
{
	const msgpack_object *e = alog_mp_geti(k, ref);
	if (!e || e->type != MSGPACK_OBJECT_ARRAY || !e->via.array.size) {
		snprintf(out, cap, "K%" PRId64, ref);
		return;
	}
	fmtval(lg, &e->via.array.ptr[0], out, cap);
}

int audit_disasm(const char *arch, const void *mcv, uint32_t len, uint64_t addr,
		 bool raw)
{
	const char *mc = mcv;
	const char *tmp = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/jitsframe-mcode-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	int fd = mkstemp(path); /* O_EXCL, mode 0600 */
	if (fd < 0) {
		fprintf(stderr, "jitsframe audit: cannot create %s: %s\n", path,
			strerror(errno));
		return EX_INPUT;
	}
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(fd, mc + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	close(fd);
	const char *m = !strcmp(arch, "x64")	 ? "i386:x86-64"
			: !strcmp(arch, "x86")	 ? "i386"
			: !strcmp(arch, "arm64") ? "aarch64"
						 : NULL;
	int rc = EX_INPUT;
	if (!m) {
		fprintf(stderr,
			"jitsframe audit: no disassembler for arch %s\n", arch);
	} else if (done == len) {
		char vma[32];
		snprintf(vma, sizeof(vma), "--adjust-vma=0x%" PRIx64, addr);
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			execlp("objdump", "objdump", "-D", "-b", "binary", "-m",
			       m, "-M", "intel", vma,
			       raw ? "--show-raw-insn" : "--no-show-raw-insn",
			       path, (char *)NULL);
			_exit(127);
		}
		int st = 0;
		if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		    WEXITSTATUS(st) == 0)
			rc = EX_OK;
		else if (pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 127)
			fprintf(stderr, "jitsframe audit: objdump is missing "
					"(Debian: binutils): no disassembly\n");
		else
			fprintf(stderr, "jitsframe audit: objdump failed\n");
	}
	unlink(path);
	return rc;
}

static int dump_trace(struct log *lg, const msgpack_object *r, int json,
		      int mcode)
{
	if (json) {
		json_obj(stdout, r, 0);
		putchar('\n');
		return EX_OK;
	}
	int64_t tr = geti(r, "tr", 0);
	const msgpack_object *info = alog_mp_get(r, "info");
	const msgpack_object *ir = alog_mp_get(r, "ir"),
			     *k = alog_mp_get(r, "k");
	int64_t nins = geti(info, "nins", 0), nk = geti(info, "nk", 0);
	char lt[32];
	if (!gets_(alog_mp_get(info, "linktype"), lt, sizeof(lt)))
		lt[0] = 0;
	printf("---- TRACE %" PRId64 " (%s%s) link %" PRId64 " %s, %" PRId64
	       " IR, %" PRId64 " constants, %" PRId64 " exits",
	       tr, lg->startex, lg->startloc, geti(info, "link", 0), lt, nins,
	       nk, geti(info, "nexit", 0));
	if (alog_mp_get(r, "spadj"))
		printf(", stack adjustment %" PRId64, geti(r, "spadj", 0));
	printf("\n---- TRACE %" PRId64 " constants\n", tr);
	for (int64_t i = -nk; i < 0; i++) {
		char v[256];
		const msgpack_object *e = alog_mp_geti(k, i);
		if (!e)
			continue;
		fmtk(lg, k, i, v, sizeof(v));
		int64_t t = 0;
		if (e->type == MSGPACK_OBJECT_ARRAY && e->via.array.size > 1)
			alog_mp_int(&e->via.array.ptr[1], &t);
		printf("K%03" PRId64 " %s %s\n", -i,
		       t >= 0 && t < 24 ? irt[t] : "???", v);
	}
	printf("---- TRACE %" PRId64 " IR\n", tr);
	size_t irlen = lg->irnames ? strlen(lg->irnames) : 0;
	for (int64_t i = 1; i <= nins; i++) {
		const msgpack_object *e = alog_mp_geti(ir, i);
		if (!e || e->type != MSGPACK_OBJECT_ARRAY ||
		    e->via.array.size < 5)
			continue;
		int64_t m, ot, op1, op2, ridsp;
		const msgpack_object *a = e->via.array.ptr;
		if (!alog_mp_int(&a[0], &m) || !alog_mp_int(&a[1], &ot) ||
		    !alog_mp_int(&a[2], &op1) || !alog_mp_int(&a[3], &op2) ||
		    !alog_mp_int(&a[4], &ridsp))
			continue;
		char op[8] = "??????", reg[16] = "";
		uint64_t oi = 6 * ((uint64_t)ot >> 8);
		if (oi + 6 <= irlen) {
			memcpy(op, lg->irnames + oi, 6);
			op[6] = 0;
		}
		int64_t rid = ridsp & 255, slot = ridsp >> 8;
		if (slot)
			snprintf(reg, sizeof(reg), "[%" PRIx64 "]", slot * 4);
		else if (rid < 128)
			regname(lg->arch, rid, reg, sizeof(reg));
		int t = (int)(ot & 31);
		printf("%04" PRId64 " %-6s %s %s %s", i, reg,
		       (ot & 128) ? ">" : " ", t < 24 ? irt[t] : "???", op);
		char v[256];
		if ((m & 3) != 3) {
			if (op1 < 0) {
				fmtk(lg, k, op1, v, sizeof(v));
				printf(" %s", v);
			} else {
				printf(" %04" PRId64, op1);
			}
			if ((m & 12) == 4)
				printf(" #%" PRId64, op2);
			else if ((m & 12) != 12 && op2 < 0) {
				fmtk(lg, k, op2, v, sizeof(v));
				printf(" %s", v);
			} else if ((m & 12) != 12)
				printf(" %04" PRId64, op2);
		}
		putchar('\n');
	}
	const msgpack_object *snap = alog_mp_get(r, "snap");
	if (snap && snap->type == MSGPACK_OBJECT_MAP) {
		printf("---- TRACE %" PRId64 " snapshots: %u\n", tr,
		       snap->via.map.size);
		for (uint32_t s = 0; s < snap->via.map.size; s++) {
			const msgpack_object *sn = alog_mp_geti(snap, s);
			if (!sn)
				continue;
			printf("SNAP #%u [ ref %04" PRId64 " slots %" PRId64
			       " ]\n",
			       s, geti(sn, "ref", 0) - 0x8000,
			       geti(sn, "nslots", 0));
		}
	}
	uint32_t len;
	const char *mc = alog_mp_str(alog_mp_get(r, "mc"), &len);
	printf("---- TRACE %" PRId64 " mcode %u bytes at 0x%" PRIx64
	       ", loop at +%" PRId64 "\n",
	       tr, mc ? len : 0, (uint64_t)geti(r, "addr", 0),
	       geti(r, "loop", 0));
	if (mc && mcode)
		return audit_disasm(lg->arch, mc, len,
				    (uint64_t)geti(r, "addr", 0), false);
	return EX_OK;
}

/* ------------------------------------------------------------- main */

int cmd_audit(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "replay")) {
		if (!audit_replay_main) {
			fprintf(stderr,
				"jitsframe audit replay: not built in\n");
			return EX_USAGE;
		}
		return audit_replay_main(argc - 1, argv + 1);
	}
	static const struct option lo[] = {
	    {"dump", required_argument, 0, 'd'},
	    {"json", no_argument, 0, 'j'},
	    {"no-mcode", no_argument, 0, 'n'},
	    {"epoch", required_argument, 0, 'e'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	int json = 0, mcode = 1, c;
	int64_t want = -1, epoch = -1;
	uint64_t u;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (!cli_u64(optarg, &u) || u > 1u << 30) {
				fprintf(stderr,
					"jitsframe audit: bad trace number "
					"'%s'\n",
					optarg);
				return EX_USAGE;
			}
			want = (int64_t)u;
			break;
		case 'e':
			if (!cli_u64(optarg, &u) || u > 1u << 30) {
				fprintf(stderr,
					"jitsframe audit: bad epoch '%s'\n",
					optarg);
				return EX_USAGE;
			}
			epoch = (int64_t)u;
			break;
		case 'j':
			json = 1;
			break;
		case 'n':
			mcode = 0;
			break;
		case 'h':
			fputs(usage, stdout);
			return EX_OK;
		default:
			return cli_bad_option("audit", argv[optind - 1]);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr,
			"jitsframe audit: give one FILE\nTry 'jitsframe "
			"audit --help'.\n");
		return EX_USAGE;
	}
	const char *path = argv[optind];
	/* a RaptorJIT auditlog (cli/audit_rj.c) */
	uint8_t head[16];
	ssize_t hn = -1;
	int hfd = open(path, O_RDONLY | O_CLOEXEC);
	if (hfd >= 0) {
		hn = read(hfd, head, sizeof(head));
		close(hfd);
	}
	if (hn > 0 && rj_log_sniff(head, (size_t)hn))
		return audit_rj_main(path, want, epoch, json, mcode);
	if (epoch >= 0) {
		fprintf(stderr, "jitsframe audit: --epoch is for RaptorJIT "
				"auditlogs\n");
		return EX_USAGE;
	}
	struct alog_reader rd;
	if (alog_read_file(&rd, path)) {
		fprintf(stderr, "jitsframe audit: %s\n", rd.msg);
		alog_reader_free(&rd);
		return EX_INPUT;
	}
	struct log lg;
	memset(&lg, 0, sizeof(lg));
	const msgpack_object *r;
	int ret, first = 1, rc = EX_OK;
	size_t found = 0; /* offset of the last stop of trace `want` + 1 */
	char floc[320] = "", fex[64] = "";
	if (json && want < 0)
		printf("{\"records\":[\n");
	while ((ret = alog_next(&rd, &r)) == 1) {
		if (ev_is(r, "header"))
			read_header(&lg, r);
		else if (ev_is(r, "func")) {
			char fe[200];
			if (add_fn(&lg, r, fe, sizeof(fe))) {
				/* damage, as the record layer reports it */
				rd.nrec--;
				snprintf(rd.msg, sizeof(rd.msg),
					 "damaged at byte %zu: %.180s; %llu "
					 "records decoded",
					 rd.rec_off, fe,
					 (unsigned long long)rd.nrec);
				ret = -1;
				break;
			}
		}
		if (want < 0) {
			list_event(&lg, r, json, &first);
		} else {
			if (ev_is(r, "start"))
				list_event(&lg, r, 1, &first);
			if (ev_is(r, "stop") && geti(r, "tr", -1) == want) {
				found = rd.rec_off + 1;
				snprintf(floc, sizeof(floc), "%s", lg.startloc);
				snprintf(fex, sizeof(fex), "%s", lg.startex);
			}
		}
	}
	if (json && want < 0) {
		printf("],\"damage\":");
		if (ret < 0)
			json_str(stdout, rd.msg);
		else
			fputs("null", stdout);
		printf(",\"records_decoded\":%llu}\n",
		       (unsigned long long)rd.nrec);
	}
	if (ret < 0) {
		fprintf(stderr, "jitsframe audit: %s: %s\n", path, rd.msg);
		rc = EX_FAIL;
	} else if (rd.msg[0]) { /* a clean end with a note */
		fprintf(stderr, "jitsframe audit: %s: note: %s\n", path,
			rd.msg);
	}
	if (want >= 0) {
		if (!found) {
			fprintf(stderr,
				"jitsframe audit: no trace %" PRId64 " in %s\n",
				want, path);
			rc = EX_FAIL;
		} else {
			/* decode that record again */
			struct alog_reader one;
			alog_reader_init(&one, rd.buf, rd.len);
			one.off = found - 1;
			one.nrec = 1; /* not a header check */
			if (alog_next(&one, &r) == 1) {
				snprintf(lg.startloc, sizeof(lg.startloc), "%s",
					 floc);
				snprintf(lg.startex, sizeof(lg.startex), "%s",
					 fex);
				int drc = dump_trace(&lg, r, json, mcode);
				if (drc != EX_OK)
					rc = drc;
			}
			alog_reader_free(&one);
		}
	}
	alog_reader_free(&rd);
	for (size_t i = 0; i < lg.nfn; i++)
		free(lg.fns[i].lines);
	free(lg.fns);
	free(lg.irnames);
	free(lg.bcnames);
	return rc;
}
