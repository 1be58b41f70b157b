/* SPDX-License-Identifier: MIT */
/*
 * The auditlog's function records (format 2) carry a LuaJIT bytecode dump
 * (what lua_dump/string.dump write, unstripped) of the function's own
 * prototype. This is the one decoder of those bytes, used by the writer
 * (to find its patchable instructions and constants), the Lua reader
 * (jsf.audit_records) and the CLI. It parses untrusted bytes: every read
 * is bounds-checked and a damaged dump gives an error message, never a
 * crash (tests/fuzz_audit.c, mode 'F').
 *
 * Dump layout (LuaJIT's src/lj_bcdump.h describes it):
 *   dump   = ESC 'L' 'J' version flagsU [namelenU name] proto+ 0U
 *   proto  = lengthU flags numparams framesize numuv numkgcU numknU numbcU
 *            [debuglenU [firstlineU numlineU]] ins*numbc uvref*numuv kgc*
 *            knum* debug
 * The LAST proto is the function's own (children come first); the writer
 * keeps only that one.
 */
#ifndef ALOG_AUDITFUNC_H
#define ALOG_AUDITFUNC_H

#include <stddef.h>
#include <stdint.h>

/* GC constant kinds, as the dump codes them */
enum {
	ALOG_FK_CHILD,
	ALOG_FK_TAB,
	ALOG_FK_I64,
	ALOG_FK_U64,
	ALOG_FK_COMPLEX,
	ALOG_FK_STR
};

struct alog_fkgc {
	uint8_t kind;  /* ALOG_FK_* */
	const char *s; /* ALOG_FK_STR: the bytes (not 0-terminated) */
	uint32_t len;  /* ALOG_FK_STR: its length */
	uint64_t v[2]; /* I64/U64: v[0]; COMPLEX: re, im (double bits) */
};

struct alog_fproto {
	/* where the parts are in the input */
	size_t head_len;	     /* the dump header */
	size_t proto_off, proto_len; /* the last proto, length prefix
					included */
	uint32_t dflags;	     /* dump header flags */
	uint8_t pflags, numparams, framesize, numuv;
	uint32_t nkgc, nkn;
	uint32_t sizebc; /* funcinfo's "bytecodes": dump instructions + 1 */
	int has_debug;
	uint32_t firstline, numline;
	const uint8_t *ins;	 /* sizebc-1 instructions (pc 1..) */
	const uint8_t *lineinfo; /* sizebc-1 entries of 1 << lw bytes */
	unsigned lw;
	struct alog_fkgc
	    *kgc;   /* nkgc, in funck order: kgc[i] is funck(-nkgc+i) */
	double *kn; /* nkn numbers, funck(0..nkn-1) */
	const char **uvname; /* numuv names, 0-terminated (debug info) */
	char err[160];
};

/* Decode a dump: 0, or -1 with p->err. Pointers point into buf. */
int alog_fproto_decode(struct alog_fproto *p, const void *buf, size_t len);
void alog_fproto_free(struct alog_fproto *p);

/* The instruction at pc (1..sizebc-1) as the dump has it (host order
 * undone: the value funcbc answers, as uint32). */
uint32_t alog_fproto_ins(const struct alog_fproto *p, uint32_t pc);

/* funcinfo(f, pc).currentline's value, lj_debug_line's rules: pc 0 is the
 * first line, pc sizebc the last, no line info or pc > sizebc: 0. */
int64_t alog_fproto_line(const struct alog_fproto *p, uint32_t pc);

/* funcuvname(f, i): the name, "" when the dump has no debug info, NULL
 * when i is out of range. */
const char *alog_fproto_uvname(const struct alog_fproto *p, uint32_t i);

#endif
