/* SPDX-License-Identifier: MIT */
/*
 * Reading a LuaJIT x86-64 trace's stack adjustment from its machine code.
 *
 * Patterns (LuaJIT 2.1 lj_asm_x86.h / lj_emit_x86.h, confirmed on Debian's
 * and OpenResty's binaries, docs/VM.md):
 *   add rsp, imm8   48 83 C4 ib     add rsp, imm32   48 81 C4 id
 *   trace-number store (vmstate): 41 C7 86 disp32 imm32 (imm32 = traceno)
 *   jmp rel32: E9 rel32
 * Root head: [add rsp,-spadj] store.  Side head: ... [add rsp,-(own-parent)]
 * store.  Non-looping tail: [add rsp,+spadj] jmp (the last 5 bytes).
 * Looping traces (root or side) never readjust rsp after the head; a
 * looping side trace's head add is confirmed by decoding the head
 * (lj/x86len.c) instead of by a tail.
 *
 * RaptorJIT 1.0.0 (a LuaJIT 2.1 fork) emits the same heads and tails: on
 * all 1905 distinct traces of its fixture logs (../shared/raptorjit, every
 * trace's logged MCode; spadjust up to 688, the imm32 form) these patterns give
 * exactly the GCtrace's logged spadjust, its vmstate store is the same
 * `41 C7 86` form, and a full disassembly finds no other write to rsp
 * (no push/pop; only the head and tail adds). Its frame is 16 bytes
 * larger (cframe_jit 112), so the caller passes it.
 */
#include "ljrows.h"
#include "x86len.h"

#include <string.h>

static int32_t le32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
			 (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* An `add rsp, imm` ending exactly at `end`: its length (4 or 7) and
 * immediate, or 0 if none. */
static uint32_t add_rsp_before(const uint8_t *mc, uint32_t end, int32_t *imm)
{
	if (end >= 7 && mc[end - 7] == 0x48 && mc[end - 6] == 0x81 &&
	    mc[end - 5] == 0xc4) {
		*imm = le32(mc + end - 4);
		return 7;
	}
	if (end >= 4 && mc[end - 4] == 0x48 && mc[end - 3] == 0x83 &&
	    mc[end - 2] == 0xc4) {
		*imm = (int32_t)(int8_t)mc[end - 1]; /* sign-extended */
		return 4;
	}
	return 0;
}

/* The head [0, store) decodes instruction by instruction to an add of
 * alen bytes that ends exactly at the store (at offset `store`). */
static int head_decodes(const uint8_t *mc, uint32_t store, uint32_t alen)
{
	uint32_t at = 0;
	while (at < store - alen) {
		int n = x86_insn_len(mc + at, store - at);
		if (n <= 0)
			return 0;
		at += (uint32_t)n;
	}
	return at == store - alen && x86_insn_len(mc + at, alen) == (int)alen;
}

static int refuse(struct lj_trace_out *out, const char *why)
{
	out->why = why;
	out->nrows = 0;
	return -1;
}

static void row(struct lj_trace_out *out, uint32_t cframe, uint32_t off,
		int32_t spadj)
{
	struct jsf_row *r = &out->rows[out->nrows++];
	memset(r, 0, sizeof(*r));
	r->offset = off;
	r->cfa_base = JSF_SP;
	r->cfa_offset = (int32_t)cframe + spadj;
	r->has_fp = true;
	r->fp_offset = -16; /* rbp saved by the VM entry (push rbp) */
}

int lj_trace_rows(const struct lj_trace_in *in, struct lj_trace_out *out)
{
	const uint8_t *mc = in->mc;
	uint32_t len = in->len;
	uint32_t cf = in->cframe_jit ? in->cframe_jit : LJ_CFRAME_JIT;
	memset(out, 0, sizeof(*out));
	if (cf % 16 || cf > 4096)
		return refuse(out, "frame size is not 16*k up to 4096");
	if (len < 11 + 5)
		return refuse(out, "trace too short");
	/* The head ends with the trace-number store: find its first instance.
	 */
	uint32_t p = 0;
	for (; p + 11 <= len; p++)
		if (mc[p] == 0x41 && mc[p + 1] == 0xc7 && mc[p + 2] == 0x86 &&
		    (uint32_t)le32(mc + p + 7) == in->traceno)
			break;
	if (p + 11 > len)
		return refuse(out, "no trace-number store in the head");
	int32_t imm = 0, head_delta = 0;
	uint32_t alen = add_rsp_before(mc, p, &imm);
	if (alen) {
		if (imm >= 0 || imm % 16)
			return refuse(out, "head add is not rsp -= 16*k");
		head_delta = -imm;
	}
	int32_t base = in->side ? in->parent_spadj : 0;
	if (!in->side && p != alen)
		return refuse(out, "root trace head is not [add rsp] + store");
	if (in->side && (in->parent_spadj < 0 || in->parent_spadj % 16))
		return refuse(out, "bad parent adjustment");
	int32_t own = base + head_delta;
	out->spadj = own;
	out->head_end = p;
	row(out, cf, 0, base);
	if (head_delta)
		row(out, cf, p, own); /* after the add: the trace's own frame */
	if (in->loop) {
		/* Looping traces never readjust rsp. A looping side trace has
		 * no tail to confirm a head add by: the add is taken only when
		 * the head decodes, instruction by instruction from offset 0,
		 * to exactly that add and then the store. */
		if (in->side && head_delta && !head_decodes(mc, p, alen))
			return refuse(out,
				      "looping side trace with a head add that "
				      "does not decode to it");
		if (in->loop >= len || in->loop < p + 11)
			return refuse(out, "loop offset outside the body");
		return 0;
	}
	/* Non-looping: the last 5 bytes jump on; before them, the tail add
	 * must restore exactly this trace's adjustment. */
	if (mc[len - 5] != 0xe9)
		return refuse(out,
			      "non-looping trace does not end in jmp rel32");
	int32_t timm = 0;
	uint32_t tlen = add_rsp_before(mc, len - 5, &timm);
	if (!tlen)
		timm = 0;
	if (timm != own) {
		/* No tail add is exactly own == 0; anything else means the head
		 * was not read right: refuse rather than guess. */
		return refuse(out,
			      "tail add does not match the head's adjustment");
	}
	if (own) {
		uint32_t at = len - 5;
		if (at - tlen < p + 11)
			return refuse(out, "tail add overlaps the head");
		row(out, cf, at, 0); /* after the tail add: base frame */
	}
	return 0;
}
