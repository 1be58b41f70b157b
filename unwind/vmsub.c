/* SPDX-License-Identifier: MIT */
/*
 * Exact rows for the subroutines hand-written code calls inside its own
 * one-row FDE (LuaJIT's interpreter: one .eh_frame row, CFA = rsp + K, for
 * all of lj_vm, whose `%` handler calls its vm_mod, math.floor its
 * vm_floor...). Inside such a subroutine rsp is 8 lower than the row says:
 * the return address into the interpreter is on the stack. Nothing is keyed
 * on names: for an FDE that is ONE row CFA = rsp + K over at least
 * VMSUB_MIN bytes, its code is decoded from start to end (lj/'s
 * x86_insn_len; any byte it cannot decode, and the FDE is left as it is),
 * and from the target of each `call rel32` that lands inside the FDE the
 * control flow is walked (fall-through, jcc and jmp rel targets; a path
 * ends at `ret`, int3, ud2). A subroutine is ACCEPTED, its pcs getting
 * CFA = rsp + K + 8 (the rest of the row as the FDE says: RA at CFA - 8,
 * rbp's slot), only when it is sure: no instruction of it may write rsp
 * (push, pop, enter, leave, an rsp destination), none jumps indirectly,
 * calls inside the FDE or indirectly, or jumps out of it, every target is
 * an instruction start of the linear decode; and no other way in: no
 * instruction outside it falls through into it or jumps to it directly,
 * and no call into it comes from code a subroutine walk reached. A
 * subroutine that fails gets NO row for the pcs its walk reached (a
 * refused pc stops a walk; a wrong row would mislead it). The one thing a
 * static walk cannot see is an indirect jump (the interpreter's dispatch)
 * to a pc inside an accepted subroutine: tests/t_vmsubrows.sh checks
 * LuaJIT's dispatch table against the subroutines found. Nor a call from
 * JIT-compiled code: LuaJIT's traces call vm_floor/vm_ceil only on CPUs
 * without SSE4.1, where every subroutine is refused instead
 * (JITSFRAME_VMSUB_NOSSE41 set: as if this CPU were one).
 *
 * The same FDE's entries and exits (edges below: the pushes and sub rsp
 * that make the VM's C frame, the add rsp and pops that give it up,
 * BC_JLOOP's sub rsp before it jumps into a trace) get their exact rows
 * from the same decode, or none; so does any other code that moves rsp
 * away from the row (the trace exit handler, the unwinding entries).
 */
#include "elfobj.h"
#include "jsfenv.h"
#include "lj.h"

#include <stdlib.h>
#include <string.h>

enum { VMSUB_MIN = 1024, VMSUB_MAX = 1 << 22 };

/* an instruction's kind, for the walk */
enum ik {
	IK_SEQ,	  /* falls through, no rsp change, no transfer */
	IK_JCC,	  /* conditional rel8/rel32 */
	IK_JMP,	  /* unconditional rel8/rel32 */
	IK_CALL,  /* call rel32 */
	IK_RET,	  /* ret (C3) */
	IK_STOP,  /* int3, ud2: no fall-through */
	IK_IJMP,  /* indirect jmp */
	IK_ICALL, /* indirect call (falls through) */
	IK_RSP,	  /* may write rsp (falls through) */
};

struct insn {
	int len;
	enum ik k;
	int64_t tgt; /* IK_JCC, IK_JMP, IK_CALL: offset of the target */
};

/* 0F xx opcodes that write no general register (SSE moves and arithmetic
 * into xmm or memory, compares into flags): their ModRM fields name xmm
 * registers or memory, so "register 4" there is not rsp. */
static bool xmm_only(uint8_t op2)
{
	return (op2 >= 0x10 && op2 <= 0x17) || op2 == 0x28 || op2 == 0x29 ||
	       op2 == 0x2a || op2 == 0x2b || op2 == 0x2e || op2 == 0x2f ||
	       (op2 >= 0x51 && op2 <= 0x6f) || op2 == 0x70 ||
	       (op2 >= 0x74 && op2 <= 0x76) || op2 == 0x7f || op2 == 0xc2 ||
	       op2 == 0xc6 || op2 == 0xd6 || op2 >= 0xd8;
}

/* Decode and classify the instruction at p (avail bytes) at offset off. */
static bool decode(const uint8_t *p, size_t avail, int64_t off, struct insn *in)
{
	int len = x86_insn_len(p, avail);
	if (len <= 0)
		return false;
	in->len = len;
	in->k = IK_SEQ;
	in->tgt = 0;
	size_t i = 0;
	unsigned rex = 0;
	while (i < (size_t)len &&
	       (p[i] == 0x66 || p[i] == 0xf2 || p[i] == 0xf3 || p[i] == 0x2e ||
		p[i] == 0x3e || p[i] == 0x26 || p[i] == 0x36 || p[i] == 0x64 ||
		p[i] == 0x65 || p[i] == 0xf0))
		i++;
	if (i < (size_t)len && (p[i] & 0xf0) == 0x40)
		rex = p[i++];
	if (i >= (size_t)len)
		return false;
	uint8_t op = p[i++];
	int64_t end = off + len;
	if (op == 0xc4 || op == 0xc5) {
		/* VEX: BMI2 into a general register, AVX: refuse rather than
		 * decode its register fields */
		in->k = IK_RSP;
		return true;
	}
	if (op == 0x0f) {
		uint8_t op2 = p[i++];
		if (op2 >= 0x80 && op2 <= 0x8f) {
			int32_t d;
			memcpy(&d, p + i, 4);
			in->k = IK_JCC;
			in->tgt = end + d;
			return true;
		}
		if (op2 == 0x0b) {
			in->k = IK_STOP;
			return true;
		}
		if (op2 == 0xa2) /* cpuid: eax, ebx, ecx, edx */
			return true;
		if (op2 >= 0xc8 && op2 <= 0xcf) { /* bswap r */
			if ((op2 & 7) == 4 && !(rex & 1))
				in->k = IK_RSP;
			return true;
		}
		if (op2 == 0x38 || op2 == 0x3a) {
			in->k =
			    IK_RSP; /* not walked (pextr* write registers) */
			return true;
		}
		if (xmm_only(op2))
			return true;
		/* others (movzx, cmov, imul, bsf, cvttsd2si, movd to r/m...):
		 * either ModRM field naming rsp may be the destination */
		uint8_t m = p[i];
		if ((((m >> 3) & 7) == 4 && !(rex & 4)) ||
		    ((m >> 6) == 3 && (m & 7) == 4 && !(rex & 1)))
			in->k = IK_RSP;
		return true;
	}
	if ((op >= 0x70 && op <= 0x7f) || op == 0xeb) {
		in->k = op == 0xeb ? IK_JMP : IK_JCC;
		in->tgt = end + (int8_t)p[i];
		return true;
	}
	if (op == 0xe8 || op == 0xe9) {
		int32_t d;
		memcpy(&d, p + i, 4);
		in->k = op == 0xe8 ? IK_CALL : IK_JMP;
		in->tgt = end + d;
		return true;
	}
	if (op == 0xc3) {
		in->k = IK_RET;
		return true;
	}
	if (op == 0xcc) {
		in->k = IK_STOP;
		return true;
	}
	if ((op >= 0x50 && op <= 0x5f) || op == 0x68 || op == 0x6a ||
	    op == 0x8f || op == 0x9c || op == 0x9d || op == 0xc2 ||
	    op == 0xc8 || op == 0xc9) {
		in->k = IK_RSP; /* push, pop, pushf, popf, ret imm, enter,
				   leave */
		return true;
	}
	if (op == 0xff) {
		unsigned r = (p[i] >> 3) & 7;
		if (r == 2)
			in->k = IK_ICALL;
		else if (r == 4)
			in->k = IK_IJMP;
		else if ((r != 0 && r != 1) || /* far call/jmp, push r/m */
			 ((p[i] >> 6) == 3 && (p[i] & 7) == 4 &&
			  !(rex & 1))) /* inc/dec rsp */
			in->k = IK_RSP;
		return true;
	}
	if ((op >= 0xd8 && op <= 0xdf)) /* x87: no general register written
					   but ax (fnstsw) */
		return true;
	if (op >= 0xb0 && op <= 0xbf) { /* mov r, imm (b4/bc: ah/spl, rsp) */
		if ((op & 7) == 4 && !(rex & 1))
			in->k = IK_RSP;
		return true;
	}
	if (op >= 0x90 && op <= 0x97) { /* nop, xchg eax, r */
		if (op == 0x94 && !(rex & 1))
			in->k = IK_RSP;
		return true;
	}
	if (op == 0x98 || op == 0x99)
		return true;
	if ((op < 0x40 && (op & 7) >= 4) || op == 0xa8 || op == 0xa9)
		return true; /* alu al/eax, imm; test al/eax, imm */
	/* ModRM forms: either field naming rsp may be the destination (the
	 * reg field, or the r/m field as a register) */
	uint8_t m = p[i];
	if ((((m >> 3) & 7) == 4 && !(rex & 4)) ||
	    ((m >> 6) == 3 && (m & 7) == 4 && !(rex & 1)))
		in->k = IK_RSP;
	/* a group opcode's reg field is its operation, not a register: only
	 * the r/m field may be rsp there */
	if (op == 0x80 || op == 0x81 || op == 0x83 || op == 0xc0 ||
	    op == 0xc1 || op == 0xc6 || op == 0xc7 ||
	    (op >= 0xd0 && op <= 0xd3) || op == 0xf6 || op == 0xf7 ||
	    op == 0xfe)
		in->k = (m >> 6) == 3 && (m & 7) == 4 && !(rex & 1) ? IK_RSP
								    : IK_SEQ;
	return true;
}

static bool falls_through(enum ik k)
{
	return k != IK_JMP && k != IK_RET && k != IK_STOP && k != IK_IJMP;
}

/* the analysis of one FDE: spans (sorted, disjoint) of refined pcs */
struct vmspan {
	uint64_t lo, hi;
	bool none;   /* refused: no row; else CFA = rsp + K + 8, or: */
	int32_t cfa; /* nonzero: CFA = rsp + cfa (an entry or exit) */
	bool fpsame; /* with cfa: rbp not saved yet (or restored) */
};
struct vmsubs {
	struct vmsubs *next;
	uint64_t s, e;
	struct uw_row row; /* the FDE's one row */
	struct vmspan *sp;
	size_t n;
};

/* per byte offset of the FDE's code */
enum {
	B_START = 1,
	B_WALK = 2,
	B_ACC = 4,
	B_NONE = 8,
	B_TGT = 16, /* a direct jump's or call's target */
	B_CTGT = 32 /* a call's (and no jump's) */
};

static const uint8_t *code_at(struct elfobj *o, uint64_t s, uint64_t e)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || s < sh.sh_addr ||
		    e > sh.sh_addr + sh.sh_size)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != sh.sh_size)
			return NULL;
		return (const uint8_t *)d->d_buf + (s - sh.sh_addr);
	}
	return NULL;
}

static int add_span(struct vmsubs *v, size_t *cap, uint64_t lo, uint64_t hi,
		    bool none, int32_t cfa, bool fpsame)
{
	if (none)
		cfa = 0, fpsame = false;
	if (v->n && v->sp[v->n - 1].hi == lo && v->sp[v->n - 1].none == none &&
	    v->sp[v->n - 1].cfa == cfa && v->sp[v->n - 1].fpsame == fpsame) {
		v->sp[v->n - 1].hi = hi;
		return 0;
	}
	if (v->n == *cap) {
		size_t nc = *cap ? 2 * *cap : 8;
		struct vmspan *ns = realloc(v->sp, nc * sizeof(*ns));
		if (!ns)
			return -1;
		v->sp = ns;
		*cap = nc;
	}
	v->sp[v->n++] = (struct vmspan){lo, hi, none, cfa, fpsame};
	return 0;
}

/* Walk the subroutine at t: its pcs marked in mark (cleared first, the
 * list of them in lst); false when refused. */
static bool walk(const uint8_t *code, size_t n, const uint8_t *fl, uint32_t t,
		 uint8_t *mark, uint32_t *lst, size_t *nl, uint32_t *stk)
{
	size_t ns = 0;
	*nl = 0;
	bool ok = true;
	stk[ns++] = t;
	while (ns) {
		uint32_t a = stk[--ns];
		if (mark[a])
			continue;
		mark[a] = 1;
		lst[(*nl)++] = a;
		struct insn in;
		if (!(fl[a] & B_START) || !decode(code + a, n - a, a, &in)) {
			ok = false;
			break;
		}
		int64_t nx = a + in.len, tg = in.tgt;
		switch (in.k) {
		case IK_SEQ:
			break;
		case IK_CALL:
			if (tg >= 0 && (uint64_t)tg < n) {
				ok = false; /* a call inside: rsp 16 lower */
				break;
			}
			break;
		case IK_JCC:
		case IK_JMP:
			if (tg < 0 || (uint64_t)tg >= n ||
			    !(fl[tg] & B_START)) {
				ok = false;
				break;
			}
			stk[ns++] = (uint32_t)tg;
			break;
		case IK_RET:
		case IK_STOP:
			continue;
		default: /* IK_RSP, IK_IJMP, IK_ICALL */
			ok = false;
		}
		if (!ok)
			break;
		if (in.k == IK_JMP)
			continue;
		if ((uint64_t)nx >= n) {
			ok = false; /* runs off the FDE */
			break;
		}
		stk[ns++] = (uint32_t)nx;
	}
	return ok;
}

/* ---- the VM's entries and exits inside the one-row FDE: rsp moves
 * there, the row holds only once the C frame is made (LuaJIT's saveregs:
 * push rbp; push rbx; push r15; push r14; sub rsp, S, at lj_vm_call,
 * lj_vm_pcall, lj_vm_cpcall, lj_vm_resume; vm_ffi_callback the same
 * without the push of rbp, which the callback's trampoline made) and until
 * it is given up (restoreregs: add rsp, S; pop ...; pop rbp; then ret or
 * a tail jump out of the FDE), and BC_JLOOP's sub rsp, 16 before its
 * indirect jump into the trace. Each such sequence gets its exact rows
 * (CFA = rsp + the pushes so far; rbp's slot once it is pushed) when the
 * arithmetic closes on the row's K (an entry: 8 for the return address,
 * or 16 with rbp pushed before, + 8 per push + S == K; an exit: S + 8 per
 * pop + 8 == K, rbp the last popped), no direct jump lands inside it
 * and, for an entry, nothing falls into it; otherwise its pcs get no row.
 * Any other instruction that writes rsp (mov r, rsp: the unwinding
 * entries, the trace exit handler) gets no row, nor do the instructions
 * falling through to it. */
enum { E_NONE = -1 };

static bool is_push(const uint8_t *p, int len)
{
	return (len == 1 && p[0] >= 0x50 && p[0] <= 0x57) ||
	       (len == 2 && p[0] == 0x41 && p[1] >= 0x50 && p[1] <= 0x57);
}
static bool is_pop(const uint8_t *p, int len)
{
	return (len == 1 && p[0] >= 0x58 && p[0] <= 0x5f) ||
	       (len == 2 && p[0] == 0x41 && p[1] >= 0x58 && p[1] <= 0x5f);
}
static bool is_nop(const uint8_t *p, int len)
{
	int i = 0;
	while (i < len && (p[i] == 0x66 || p[i] == 0x2e))
		i++;
	return (i == len - 1 && p[i] == 0x90) ||
	       (i + 1 < len && p[i] == 0x0f && p[i + 1] == 0x1f);
}
/* sub rsp, imm (sub: 1) or add rsp, imm (0): imm > 0, else -1 */
static int64_t rsp_imm(const uint8_t *p, int len, int sub)
{
	uint8_t m = sub ? 0xec : 0xc4;
	if (len == 4 && p[0] == 0x48 && p[1] == 0x83 && p[2] == m &&
	    p[3] < 0x80 && p[3])
		return p[3];
	if (len == 7 && p[0] == 0x48 && p[1] == 0x81 && p[2] == m) {
		int32_t d;
		memcpy(&d, p + 3, 4);
		return d > 0 ? d : -1;
	}
	return -1;
}

/* an instruction that surely writes rsp (decode's IK_RSP is wider: any
 * ModRM field naming register 4): push, pop, and 64-bit ALU, mov and lea
 * forms with rsp the destination */
static bool writes_rsp(const uint8_t *p, int len)
{
	if (is_push(p, len) || is_pop(p, len))
		return true;
	if (len < 3 || (p[0] & 0xf8) != 0x48)
		return false;
	uint8_t op = p[1], m = p[2];
	bool rm4 = (m >> 6) == 3 && (m & 7) == 4 && !(p[0] & 1);
	bool reg4 = ((m >> 3) & 7) == 4 && !(p[0] & 4);
	switch (op) {
	case 0x01:
	case 0x09:
	case 0x21:
	case 0x29:
	case 0x31:
	case 0x89:
	case 0x81:
	case 0x83:
	case 0xc7:
	case 0xf7:
	case 0xff:
		return rm4;
	case 0x03:
	case 0x0b:
	case 0x23:
	case 0x2b:
	case 0x33:
	case 0x8b:
	case 0x8d:
		return reg4;
	default:
		return false;
	}
}

/* After an rsp change the row does not describe: no row from pc a on,
 * until the code jumps away (or returns) or sets rsp from a register
 * (LuaJIT's idiom for going back to the C frame), up to 256 instructions:
 * the return addresses of the calls in between among them (the trace
 * exit handler's call of lj_trace_exit) */
static void none_fwd(const uint8_t *code, size_t n, size_t a, int32_t *ec)
{
	for (int j = 0; a < n && j < 256; j++) {
		struct insn qi;
		if (!decode(code + a, n - a, (int64_t)a, &qi))
			return;
		if (ec[a] > 0)
			return; /* an entry's or exit's exact rows */
		ec[a] = E_NONE;
		if (!falls_through(qi.k))
			return;
		if (writes_rsp(code + a, qi.len) &&
		    !is_push(code + a, qi.len) && !is_pop(code + a, qi.len) &&
		    rsp_imm(code + a, qi.len, 0) < 0 &&
		    rsp_imm(code + a, qi.len, 1) < 0)
			return;
		a += (size_t)qi.len;
	}
}

/* mov rX, rsp at a after lea rX, [rsp + d] and loads into other
 * registers (LuaJIT's vm_exit_interp, where a trace returns to the
 * interpreter: lea RA, [rsp+16]; mov r13, [RA-8]; mov r12, [RA];
 * mov rsp, RA): the code itself says rsp + d is the row's rsp, so
 * CFA = rsp + K + d from the lea on, up to the first pc a jump lands on
 * (another path, another rsp: those keep no row) */
static void lea_back(const uint8_t *code, size_t n, const uint8_t *fl,
		     const uint32_t *prev, size_t a, int64_t K, bool rowok,
		     int32_t *ec)
{
	const uint8_t *p = code + a;
	if (!rowok || n - a < 3 || p[0] != 0x48 || p[1] != 0x89 ||
	    (p[2] >> 6) != 3 || (p[2] & 7) != 4)
		return;
	unsigned x = (p[2] >> 3) & 7;
	uint32_t seq[6];
	int k = 0;
	seq[k++] = (uint32_t)a;
	for (uint32_t q = prev[a]; q != UINT32_MAX && k < 6; q = prev[q]) {
		struct insn qi;
		if (!decode(code + q, n - q, q, &qi))
			return;
		const uint8_t *c = code + q;
		if (qi.len == 5 && c[0] == 0x48 && c[1] == 0x8d &&
		    c[2] == (0x44 | (x << 3)) && c[3] == 0x24 && c[4] < 0x80 &&
		    c[4]) {
			if (fl[q] & B_TGT)
				return;
			seq[k++] = q;
			for (int i = k - 1; i >= 0; i--) {
				if (fl[seq[i]] & B_TGT)
					return;
				ec[seq[i]] = (int32_t)(K + c[4]);
			}
			return;
		}
		/* a load into another register (not rX, not rsp) */
		if (qi.len < 3 || (c[0] != 0x48 && c[0] != 0x4c) ||
		    c[1] != 0x8b || (c[2] >> 6) == 3 || !falls_through(qi.k))
			return;
		unsigned dst = ((c[2] >> 3) & 7) + (c[0] & 4 ? 8 : 0);
		if (dst == x || dst == 4)
			return;
		seq[k++] = q;
	}
}

static void edges(const uint8_t *code, size_t n, const uint8_t *fl,
		  const uint32_t *prev, const struct uw_row *row, int32_t *ec,
		  uint8_t *efp)
{
	int64_t K = row->cfa_off;
	bool rowok = row->cfa_rule == UW_CFA_SP && row->ra_rule == UW_RA_CFA &&
		     row->ra_off == -8 && row->fp_rule == UW_FP_CFA &&
		     row->fp_off == -16 && K >= 16;
	for (size_t a = 0; a < n;) {
		struct insn in;
		if (!decode(code + a, n - a, (int64_t)a, &in))
			return;
		size_t next = a + (size_t)in.len;
		if (in.k != IK_RSP || ec[a]) {
			a = next;
			continue;
		}
		const uint8_t *p = code + a;
		int64_t S;
		if ((S = rsp_imm(p, in.len, 1)) > 0) {
			/* the pushes before it */
			uint32_t e = (uint32_t)a, seq[10];
			int np = 0;
			for (uint32_t q = prev[a]; q != UINT32_MAX && np < 8;
			     q = prev[q]) {
				struct insn qi;
				if (!decode(code + q, n - q, q, &qi) ||
				    !is_push(code + q, qi.len))
					break;
				e = q;
				np++;
			}
			if (np) {
				bool rbp = code[e] == 0x55;
				int64_t base = rbp ? 8 : 16;
				bool ok = rowok && base + 8 * np + S == K;
				/* nothing else in: no jump to it, nothing
				 * falling into it (padding aside) */
				int k = 0;
				for (uint32_t q = e; q <= a && k <= np;) {
					struct insn qi;
					decode(code + q, n - q, q, &qi);
					/* a call lands here as one from C does
					 * (lj_vm_resume from coroutine.resume's
					 * fast function): a jump does not */
					if ((fl[q] & B_TGT) &&
					    (q != e || !(fl[q] & B_CTGT)))
						ok = false;
					seq[k++] = q;
					q += (uint32_t)qi.len;
				}
				if (k != np + 1)
					ok = false;
				for (uint32_t q = prev[e];
				     ok && q != UINT32_MAX; q = prev[q]) {
					struct insn qi;
					if (!decode(code + q, n - q, q, &qi) ||
					    (fl[q] & B_TGT)) {
						ok = false;
						break;
					}
					if (is_nop(code + q, qi.len))
						continue;
					ok = !falls_through(qi.k);
					break;
				}
				/* not closing on the row (the trace exit
				 * handler's pushes and sub rsp, 128): no row
				 * until rsp is set again or the code jumps
				 * away, the return addresses of its calls
				 * (lj_trace_exit's) among them */
				if (!ok)
					none_fwd(code, n, next, ec);
				for (int i = 0; i < k; i++) {
					ec[seq[i]] =
					    ok ? (int32_t)(base + 8 * i)
					       : E_NONE;
					/* 1: rbp not pushed yet; 2: an entry,
					 * whose first pc the walk from a call
					 * to it refused (its push) */
					efp[seq[i]] =
					    (uint8_t)((ok && rbp && i == 0
							   ? 1
							   : 0) |
						      (ok ? 2 : 0));
				}
				a = next;
				continue;
			}
			/* BC_JLOOP: sub rsp, S; stores; jmp reg */
			size_t b = next;
			bool ok = rowok;
			int k = 0;
			for (; b < n && k < 12; k++) {
				struct insn bi;
				if (!decode(code + b, n - b, (int64_t)b, &bi) ||
				    (fl[b] & B_TGT)) {
					ok = false;
					break;
				}
				if (bi.k == IK_IJMP)
					break;
				if (bi.k != IK_SEQ) {
					ok = false;
					break;
				}
				b += (size_t)bi.len;
			}
			if (b >= n || k == 12)
				ok = false;
			for (size_t q = next; ok && q <= b;) {
				struct insn qi;
				decode(code + q, n - q, (int64_t)q, &qi);
				ec[q] = (int32_t)(K + S);
				q += (size_t)qi.len;
			}
			if (!ok)
				none_fwd(code, n, next, ec);
			a = next;
			continue;
		}
		if ((S = rsp_imm(p, in.len, 0)) > 0) {
			/* pops, then ret or a jump out of the FDE */
			size_t b = next, seq[10];
			int np = 0;
			bool ok = rowok, rbp = false;
			struct insn bi;
			while (b < n && np < 8 &&
			       decode(code + b, n - b, (int64_t)b, &bi) &&
			       is_pop(code + b, bi.len)) {
				if (fl[b] & B_TGT)
					ok = false;
				rbp = code[b] == 0x5d;
				seq[np++] = b;
				b += (size_t)bi.len;
			}
			ok = ok && np && rbp && b < n &&
			     decode(code + b, n - b, (int64_t)b, &bi) &&
			     !(fl[b] & B_TGT) &&
			     (bi.k == IK_RET ||
			      (bi.k == IK_JMP &&
			       (bi.tgt < 0 || (uint64_t)bi.tgt >= n))) &&
			     S + 8 * np + 8 == K;
			if (!ok) {
				none_fwd(code, n, next, ec);
				a = next;
				continue;
			}
			for (int i = 0; i < np; i++)
				ec[seq[i]] = (int32_t)(K - S - 8 * i);
			ec[b] = 8;
			efp[b] = 1;
			a = b;
			continue;
		}
		/* another write of rsp: a push or pop (none forward), or rsp
		 * set from a register: it and what falls through to it */
		if (!writes_rsp(p, in.len)) {
			a = next;
			continue;
		}
		if (is_push(p, in.len) || is_pop(p, in.len)) {
			a = next; /* the second pass */
			continue;
		}
		ec[a] = E_NONE;
		for (uint32_t q = prev[a], k = 0; q != UINT32_MAX && k < 16;
		     q = prev[q], k++) {
			struct insn qi;
			if (!decode(code + q, n - q, q, &qi) ||
			    !falls_through(qi.k))
				break;
			if (!ec[q])
				ec[q] = E_NONE;
		}
		lea_back(code, n, fl, prev, a, K, rowok, ec);
		a = next;
	}
	/* pushes and pops no entry or exit above explained. One exception:
	 * a pop at a call target (no jump's) whose every call comes from a
	 * pc at the row's rsp pops the return address the call pushed (the
	 * interpreter's hook/hotcall helpers: pop rbp, the return address
	 * kept in the C frame): rsp + K + 8 there, the row after it */
	for (size_t a = 0; a < n;) {
		struct insn in;
		if (!decode(code + a, n - a, (int64_t)a, &in))
			return;
		if (!ec[a] && is_pop(code + a, in.len) && rowok &&
		    (fl[a] & B_CTGT)) {
			bool ok = true;
			for (size_t c = 0; ok && c < n;) {
				struct insn ci;
				if (!decode(code + c, n - c, (int64_t)c, &ci))
					return;
				if (ci.k == IK_CALL && ci.tgt == (int64_t)a &&
				    (ec[c] || (fl[c] & B_WALK)))
					ok = false;
				c += (size_t)ci.len;
			}
			if (ok) {
				ec[a] = (int32_t)(K + 8);
				a += (size_t)in.len;
				continue;
			}
		}
		if (!ec[a] &&
		    (is_push(code + a, in.len) || is_pop(code + a, in.len)))
			none_fwd(code, n, a, ec);
		a += (size_t)in.len;
	}
}

/* Analyse [s, e): the spans of v (none when the FDE cannot be decoded or
 * has no call inside). */
static void analyse(struct elfobj *o, struct vmsubs *v)
{
	size_t n = v->e - v->s, cap = 0;
	const uint8_t *code = code_at(o, v->s, v->e);
	if (!code)
		return;
	uint8_t *fl = calloc(n, 1), *mark = calloc(n, 1);
	uint32_t *prev = malloc(n * sizeof(*prev)),
		 *lst = malloc(n * sizeof(*lst)),
		 *stk = malloc(2 * n * sizeof(*stk) + 8);
	uint32_t *tg = NULL;
	size_t ntg = 0;
	int32_t *ec = calloc(n, sizeof(*ec));
	uint8_t *efp = calloc(n, 1);
	if (!fl || !mark || !prev || !lst || !stk || !ec || !efp)
		goto out;
	/* the linear decode: every byte an instruction of it, or nothing */
	uint32_t last = UINT32_MAX;
	for (size_t a = 0; a < n;) {
		struct insn in;
		if (!decode(code + a, n - a, (int64_t)a, &in))
			goto out;
		fl[a] |= B_START;
		if ((in.k == IK_JCC || in.k == IK_JMP || in.k == IK_CALL) &&
		    in.tgt >= 0 && (uint64_t)in.tgt < n) {
			if (in.k == IK_CALL && !(fl[in.tgt] & B_TGT))
				fl[in.tgt] |= B_CTGT;
			else if (in.k != IK_CALL)
				fl[in.tgt] &= (uint8_t)~B_CTGT;
			fl[in.tgt] |= B_TGT;
		}
		prev[a] = last;
		last = (uint32_t)a;
		if (in.k == IK_CALL && in.tgt >= 0 && (uint64_t)in.tgt < n) {
			uint32_t *nt = realloc(tg, (ntg + 1) * sizeof(*tg));
			if (!nt)
				goto out;
			tg = nt;
			tg[ntg++] = (uint32_t)in.tgt;
		}
		a += (size_t)in.len;
	}
	/* each call target: walked; accepted or refused */
	for (size_t i = 0; i < ntg; i++) {
		uint32_t t = tg[i];
		if (fl[t] & (B_ACC | B_NONE))
			continue; /* walked already from another call */
		size_t nl;
		bool ok = walk(code, n, fl, t, mark, lst, &nl, stk);
		/* no other way in: a fall-through from outside it, a direct
		 * jump from outside it */
		for (size_t j = 0; ok && j < nl; j++) {
			uint32_t a = lst[j], p = prev[a];
			struct insn pin;
			if (p != UINT32_MAX && !mark[p] &&
			    (!decode(code + p, n - p, p, &pin) ||
			     falls_through(pin.k)))
				ok = false;
		}
		if (ok)
			for (size_t a = 0; a < n; a = a + 1) {
				struct insn in;
				if (!(fl[a] & B_START) || mark[a])
					continue;
				if (!decode(code + a, n - a, (int64_t)a, &in)) {
					ok = false;
					break;
				}
				if ((in.k == IK_JCC || in.k == IK_JMP) &&
				    in.tgt >= 0 && (uint64_t)in.tgt < n &&
				    mark[in.tgt]) {
					ok = false;
					break;
				}
			}
		for (size_t j = 0; j < nl; j++) {
			fl[lst[j]] |= B_WALK | (ok ? B_ACC : B_NONE);
			mark[lst[j]] = 0;
		}
	}
	/* a call into an accepted subroutine from code a walk reached (its
	 * rsp is not the row's): refuse the pcs reached from that target */
	for (size_t a = 0; a < n; a++) {
		struct insn in;
		if (!(fl[a] & B_START) || !(fl[a] & B_WALK) ||
		    !decode(code + a, n - a, (int64_t)a, &in) ||
		    in.k != IK_CALL || in.tgt < 0 || (uint64_t)in.tgt >= n)
			continue;
		size_t nl;
		walk(code, n, fl, (uint32_t)in.tgt, mark, lst, &nl, stk);
		for (size_t j = 0; j < nl; j++) {
			fl[lst[j]] |= B_NONE;
			mark[lst[j]] = 0;
		}
	}
	/* JIT-compiled code may call these subroutines too, at another rsp
	 * (LuaJIT's traces call its vm_floor/vm_ceil where the CPU lacks
	 * SSE4.1's roundsd): a call no static walk sees. Where this CPU
	 * lacks SSE4.1 no subroutine is accepted, every one refused. */
	bool sure =
	    __builtin_cpu_supports("sse4.1") && !getenv(JSF_ENV_VMSUB_NOSSE41);
	edges(code, n, fl, prev, &v->row, ec, efp);
	/* spans: an instruction's bytes take its mark; a refusal wins */
	for (size_t a = 0; a < n;) {
		struct insn in;
		decode(code + a, n - a, (int64_t)a, &in);
		bool sub = (fl[a] & (B_ACC | B_NONE)) && !(efp[a] & 2);
		if ((sub || ec[a]) &&
		    add_span(v, &cap, v->s + a, v->s + a + (size_t)in.len,
			     sub ? (fl[a] & B_NONE) || !sure : ec[a] == E_NONE,
			     sub ? 0 : ec[a], !sub && (efp[a] & 1))) {
			free(v->sp);
			v->sp = NULL;
			v->n = 0;
			goto out;
		}
		a += (size_t)in.len;
	}
out:
	free(fl);
	free(mark);
	free(prev);
	free(lst);
	free(stk);
	free(tg);
	free(ec);
	free(efp);
}

static void clip(const struct vmsubs *v, uint64_t vaddr, struct uw_row *r);

void vmsub_refine(struct elfcache *c, struct elfobj *o, uint64_t vaddr,
		  struct uw_row *r)
{
	(void)c;
	if (r->cfa_rule != UW_CFA_SP || r->hi - r->lo < VMSUB_MIN ||
	    r->hi - r->lo > VMSUB_MAX || vaddr < r->lo || vaddr >= r->hi)
		return;
	struct vmsubs *v;
	for (v = o->vms; v; v = v->next)
		if (v->s == r->lo && v->e == r->hi)
			break;
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v)
			return;
		v->s = r->lo;
		v->e = r->hi;
		v->row = *r;
		v->next = o->vms;
		o->vms = v;
		/* the row must be its FDE's only one: it starts an FDE,
		 * none starts inside it, and the pc after it is in another
		 * FDE or none (libdw gives no FDE bounds) */
		Dwarf_Frame *f = NULL;
		if (elfobj_next_fde(o, r->lo - 1) == r->lo &&
		    elfobj_next_fde(o, r->lo) >= r->hi &&
		    (elfobj_next_fde(o, r->hi - 1) == r->hi || !o->cfi ||
		     dwarf_cfi_addrframe(o->cfi, r->hi, &f) != 0))
			analyse(o, v);
		free(f);
	}
	clip(v, vaddr, r);
}

bool vmsub_cached(struct elfobj *o, uint64_t vaddr, struct uw_row *r)
{
	for (struct vmsubs *v = o->vms; v; v = v->next)
		/* only FDEs found to be one row and split (a libdw row's
		 * start may be a remembered row's, not this one's) */
		if (v->n && v->s <= vaddr && vaddr < v->e) {
			*r = v->row;
			clip(v, vaddr, r);
			return true;
		}
	return false;
}

static void clip(const struct vmsubs *v, uint64_t vaddr, struct uw_row *r)
{
	/* the span holding vaddr, or the gap around it */
	size_t lo = 0, hi = v->n;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (v->sp[m].hi <= vaddr)
			lo = m + 1;
		else
			hi = m;
	}
	if (lo < v->n && v->sp[lo].lo <= vaddr) {
		r->lo = v->sp[lo].lo;
		r->hi = v->sp[lo].hi;
		if (v->sp[lo].none) {
			memset(r, 0, sizeof(*r));
			r->lo = v->sp[lo].lo;
			r->hi = v->sp[lo].hi;
			r->why = "vm subroutine: refused";
		} else if (v->sp[lo].cfa) {
			r->cfa_off = v->sp[lo].cfa;
			if (v->sp[lo].fpsame) {
				r->fp_rule = UW_FP_SAME;
				r->fp_off = 0;
			}
		} else {
			r->cfa_off += 8;
		}
		return;
	}
	if (lo > 0)
		r->lo = v->sp[lo - 1].hi;
	if (lo < v->n)
		r->hi = v->sp[lo].lo;
}

void vmsub_free(struct elfobj *o)
{
	while (o->vms) {
		struct vmsubs *v = o->vms;
		o->vms = v->next;
		free(v->sp);
		free(v);
	}
}
