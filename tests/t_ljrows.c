/* SPDX-License-Identifier: MIT */
/*
 * lj/ljrows.c on hand-assembled trace code: the head and tail patterns of
 * docs/VM.md, and the looping side trace whose head add is confirmed only
 * by decoding the head (lj/x86len.c): bytes that merely look like an add
 * (inside another instruction) or an instruction outside the decoded
 * subset must be refused.
 */
#include "harness.h"
#include "ljrows.h"

#include <string.h>

/* trace-number store for trace n: mov dword [r14-0xec8], n */
static size_t store(uint8_t *p, uint32_t n)
{
	static const uint8_t s[] = {0x41, 0xc7, 0x86, 0x38, 0xf1, 0xff, 0xff};
	memcpy(p, s, sizeof(s));
	memcpy(p + 7, &n, 4);
	return 11;
}

/* a body of `add ebp, 1` (83 C5 01), to length len */
static size_t body(uint8_t *p, size_t len)
{
	size_t i = 0;
	for (; i + 3 <= len; i += 3)
		memcpy(p + i, "\x83\xc5\x01", 3);
	for (; i < len; i++)
		p[i] = 0x90;
	return len;
}

int main(void)
{
	uint8_t mc[256];
	struct lj_trace_out o;
	CASE("looping side trace: a head add reached by decoding is taken")
	{
		size_t n = 0;
		memcpy(mc + n, "\x44\x8b\xcd", 3); /* mov r9d, ebp */
		n += 3;
		memcpy(mc + n, "\xf2\x0f\x10\x44\x24\x10",
		       6); /* movsd xmm0,[rsp+16] */
		n += 6;
		memcpy(mc + n, "\x48\x83\xc4\xe0", 4); /* add rsp, -32 */
		n += 4;
		size_t st = n;
		n += store(mc + n, 7);
		n += body(mc + n, 60);
		struct lj_trace_in in = {
		    mc, (uint32_t)n, (uint32_t)st + 11, 7, true, 16, 0};
		CHECK_EQ(lj_trace_rows(&in, &o), 0);
		CHECK_EQ(o.spadj, 48);
		CHECK_EQ(o.nrows, 2u);
		CHECK_EQ(o.rows[0].offset, 0u);
		CHECK_EQ(o.rows[0].cfa_offset, 96 + 16);
		CHECK_EQ(o.rows[1].offset, (uint32_t)st);
		CHECK_EQ(o.rows[1].cfa_offset, 96 + 48);
	}
	CASE("looping side trace: add bytes inside a displacement are refused")
	{
		size_t n = 0;
		/* mov rax, [rsp+0xf0c48348]: its disp32 reads 48 83 C4 F0 */
		memcpy(mc + n, "\x48\x8b\x84\x24\x48\x83\xc4\xf0", 8);
		n += 8;
		size_t st = n;
		n += store(mc + n, 9);
		n += body(mc + n, 40);
		struct lj_trace_in in = {
		    mc, (uint32_t)n, (uint32_t)st + 11, 9, true, 0, 0};
		CHECK_EQ(lj_trace_rows(&in, &o), -1);
		CHECK_EQ(o.nrows, 0u);
		CHECK(o.why && strstr(o.why, "decode"), "why: %s", o.why);
		/* the same bytes with the real add after the mov: taken */
		n = 8;
		memcpy(mc + n, "\x48\x83\xc4\xf0", 4);
		n += 4;
		st = n;
		n += store(mc + n, 9);
		n += body(mc + n, 40);
		in.len = (uint32_t)n;
		in.loop = (uint32_t)st + 11;
		CHECK_EQ(lj_trace_rows(&in, &o), 0);
		CHECK_EQ(o.spadj, 16);
	}
	CASE("looping side trace: an instruction outside the subset is refused")
	{
		size_t n = 0;
		memcpy(mc + n, "\x0f\x0b", 2); /* ud2: not decoded */
		n += 2;
		memcpy(mc + n, "\x48\x83\xc4\xf0", 4);
		n += 4;
		size_t st = n;
		n += store(mc + n, 3);
		n += body(mc + n, 40);
		struct lj_trace_in in = {
		    mc, (uint32_t)n, (uint32_t)st + 11, 3, true, 32, 0};
		CHECK_EQ(lj_trace_rows(&in, &o), -1);
		CHECK_EQ(o.nrows, 0u);
	}
	CASE("non-looping side trace: head add confirmed by the tail add")
	{
		size_t n = 0;
		memcpy(mc + n, "\x48\x83\xc4\xd0", 4); /* add rsp, -48 */
		n += 4;
		size_t st = n;
		n += store(mc + n, 2);
		n += body(mc + n, 30);
		memcpy(mc + n, "\x48\x81\xc4\x80\x00\x00\x00",
		       7); /* add rsp, 128 */
		n += 7;
		memcpy(mc + n, "\xe9\x00\x00\x00\x00", 5);
		n += 5;
		struct lj_trace_in in = {mc, (uint32_t)n, 0, 2, true, 80, 0};
		CHECK_EQ(lj_trace_rows(&in, &o), 0);
		CHECK_EQ(o.spadj, 128);
		CHECK_EQ(o.nrows, 3u);
		CHECK_EQ(o.rows[1].offset, (uint32_t)st);
		CHECK_EQ(o.rows[2].offset, (uint32_t)n - 5);
		CHECK_EQ(o.rows[2].cfa_offset, 96);
		/* a tail that restores something else: refused */
		mc[n - 8] = 0x70; /* add rsp, 112 */
		CHECK_EQ(lj_trace_rows(&in, &o), -1);
	}
	CASE("root trace: [add rsp] + store, nothing before")
	{
		size_t n = 0;
		memcpy(mc + n, "\x48\x83\xc4\xb0", 4); /* add rsp, -80 */
		n += 4;
		n += store(mc + n, 1);
		n += body(mc + n, 50);
		struct lj_trace_in in = {mc, (uint32_t)n, 20, 1, false, 0, 0};
		CHECK_EQ(lj_trace_rows(&in, &o), 0);
		CHECK_EQ(o.spadj, 80);
		/* an instruction before the add: not a root head */
		memmove(mc + 3, mc, n);
		memcpy(mc, "\x44\x8b\xcd", 3);
		in.len = (uint32_t)n + 3;
		CHECK_EQ(lj_trace_rows(&in, &o), -1);
	}
	return h_exit();
}
