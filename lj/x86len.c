/* SPDX-License-Identifier: MIT */
/*
 * Lengths of x86-64 instructions, for the subset a LuaJIT trace head can
 * hold (register moves, reloads, constants, the stack check, SSE moves and
 * arithmetic, BMI2 shifts), and of LuaJIT's interpreter (x87, cpuid: the
 * row refinement of unwind/vmsub.c walks it). Anything outside the subset is
 * "unknown" (-1), and callers refuse what they cannot decode: a wrong length
 * would mean a wrong row. Checked against objdump on real trace code by
 * tests/t_x86len.sh.
 */
#include "x86len.h"

/* One-byte opcodes that take a ModRM byte. */
static int has_modrm1(uint8_t op)
{
	if (op < 0x40) /* the eight ALU groups: 00-03, 08-0B, ... 38-3B */
		return (op & 7) < 4;
	switch (op) {
	case 0x63:
	case 0x69:
	case 0x6b:
	case 0x80:
	case 0x81:
	case 0x83:
	case 0x84:
	case 0x85:
	case 0x86:
	case 0x87:
	case 0x88:
	case 0x89:
	case 0x8a:
	case 0x8b:
	case 0x8d:
	case 0x8f:
	case 0xc0:
	case 0xc1:
	case 0xc6:
	case 0xc7:
	case 0xd0:
	case 0xd1:
	case 0xd2:
	case 0xd3:
	case 0xd8: /* x87 (the interpreter's vm_exp2/ldexp paths) */
	case 0xd9:
	case 0xda:
	case 0xdb:
	case 0xdc:
	case 0xdd:
	case 0xde:
	case 0xdf:
	case 0xf6:
	case 0xf7:
	case 0xfe:
	case 0xff:
		return 1;
	}
	return 0;
}

/* Two-byte (0F xx) opcodes that take a ModRM byte; 0 for unknown ones. */
static int has_modrm2(uint8_t op)
{
	if ((op >= 0x10 && op <= 0x17) || (op >= 0x28 && op <= 0x2f) ||
	    (op >= 0x40 && op <= 0x7f) || (op >= 0x90 && op <= 0x9f) ||
	    op >= 0xd0)
		return 1;
	switch (op) {
	case 0x1f:
	case 0xa3:
	case 0xa4:
	case 0xa5:
	case 0xab:
	case 0xac:
	case 0xad:
	case 0xaf:
	case 0xb0:
	case 0xb1:
	case 0xb3:
	case 0xb6:
	case 0xb7:
	case 0xba:
	case 0xbb:
	case 0xbc:
	case 0xbd:
	case 0xbe:
	case 0xbf:
	case 0xc0:
	case 0xc1:
	case 0xc2:
	case 0xc6:
		return 1;
	}
	return 0;
}

/* Bytes of ModRM + SIB + displacement starting at p[0]; -1 if short. */
static int modrm_len(const uint8_t *p, size_t avail)
{
	if (avail < 1)
		return -1;
	unsigned mod = p[0] >> 6, rm = p[0] & 7;
	int n = 1;
	if (mod == 3)
		return 1;
	if (rm == 4) {
		if (avail < 2)
			return -1;
		if (mod == 0 && (p[1] & 7) == 5)
			n += 4; /* SIB with no base: disp32 */
		n += 1;
	} else if (mod == 0 && rm == 5) {
		n += 4; /* rip + disp32 */
	}
	if (mod == 1)
		n += 1;
	else if (mod == 2)
		n += 4;
	return (size_t)n <= avail ? n : -1;
}

int x86_insn_len(const uint8_t *p, size_t avail)
{
	size_t i = 0;
	int opsize16 = 0, rexw = 0;
	/* legacy prefixes: operand size, rep/SSE, segment, lock */
	while (i < avail && i < 4) {
		uint8_t b = p[i];
		if (b == 0x66)
			opsize16 = 1;
		else if (b != 0xf2 && b != 0xf3 && b != 0x2e && b != 0x3e &&
			 b != 0x26 && b != 0x36 && b != 0x64 && b != 0x65 &&
			 b != 0xf0)
			break;
		i++;
	}
	if (i < avail && (p[i] & 0xf0) == 0x40) {
		rexw = (p[i] & 8) != 0;
		i++;
	}
	if (i >= avail)
		return -1;
	uint8_t op = p[i++];
	if ((op == 0xc4 || op == 0xc5) && i == 1) {
		/* VEX (BMI2 rorx/shlx/sarx/shrx, AVX): C5 R.vvvv.L.pp op or
		 * C4 RXB.map W.vvvv.L.pp op; then ModRM, and imm8 in map 0F3A
		 */
		size_t vlen = op == 0xc5 ? 1 : 2;
		if (i + vlen + 1 > avail)
			return -1;
		unsigned map = op == 0xc5 ? 1 : (p[i] & 0x1f);
		if (map < 1 || map > 3)
			return -1;
		i += vlen + 1; /* the VEX payload and the opcode */
		if (map == 1 && p[i - 1] == 0x77) /* vzeroupper, vzeroall */
			return (int)i;
		int m = modrm_len(p + i, avail - i);
		if (m < 0)
			return -1;
		i += (size_t)m + (map == 3 ? 1 : 0);
		return i <= avail && i <= 15 ? (int)i : -1;
	}
	int immz = opsize16 && !rexw ? 2 : 4; /* "Iz" immediates */
	int imm = 0, mr = 0;
	if (op == 0x0f) {
		if (i >= avail)
			return -1;
		uint8_t op2 = p[i++];
		if (op2 >= 0x80 && op2 <= 0x8f) { /* jcc rel32 */
			imm = 4;
		} else if ((op2 >= 0xc8 && op2 <= 0xcf) || op2 == 0xa2) {
			/* bswap, cpuid */
		} else if (op2 == 0x3a) { /* 0F 3A xx /r ib (roundsd...) */
			if (i >= avail)
				return -1;
			i++;
			mr = 1;
			imm = 1;
		} else if (op2 == 0x38) { /* 0F 38 xx /r */
			if (i >= avail)
				return -1;
			i++;
			mr = 1;
		} else if (has_modrm2(op2)) {
			mr = 1;
			if ((op2 >= 0x70 && op2 <= 0x73) || op2 == 0xa4 ||
			    op2 == 0xac || op2 == 0xba || op2 == 0xc2 ||
			    op2 == 0xc6)
				imm = 1;
		} else {
			return -1;
		}
	} else if (has_modrm1(op)) {
		mr = 1;
		if (op == 0x6b || op == 0x80 || op == 0x83 || op == 0xc0 ||
		    op == 0xc1 || op == 0xc6)
			imm = 1;
		else if (op == 0x69 || op == 0x81 || op == 0xc7)
			imm = immz;
		else if (op == 0xf6 || op == 0xf7) { /* test r/m, imm only */
			if (i >= avail)
				return -1;
			if (((p[i] >> 3) & 7) < 2)
				imm = op == 0xf6 ? 1 : immz;
		}
	} else if ((op < 0x40 && (op & 7) == 4) || /* alu al, ib */
		   (op >= 0x70 && op <= 0x7f) || op == 0xeb || op == 0x6a ||
		   op == 0xa8 || (op >= 0xb0 && op <= 0xb7)) {
		imm = 1;
	} else if ((op < 0x40 && (op & 7) == 5) || /* alu eax, iz */
		   op == 0x68 || op == 0xa9) {
		imm = immz;
	} else if ((op >= 0x50 && op <= 0x5f) || (op >= 0x90 && op <= 0x99) ||
		   op == 0xc3 || op == 0xcc) {
	} else if (op == 0xe8 || op == 0xe9) {
		imm = 4;
	} else if (op >= 0xb8 && op <= 0xbf) {
		imm = rexw ? 8 : immz;
	} else if (op == 0xc2) {
		imm = 2;
	} else {
		return -1;
	}
	if (mr) {
		int m = modrm_len(p + i, avail - i);
		if (m < 0)
			return -1;
		i += (size_t)m;
	}
	i += (size_t)imm;
	return i <= avail && i <= 15 ? (int)i : -1;
}
