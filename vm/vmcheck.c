/* SPDX-License-Identifier: MIT */
/*
 * The frame constants come from the running VM, not from a table of
 * versions: its own .eh_frame FDE for the interpreter (found through
 * libgcc's _Unwind_Find_FDE, which reads .eh_frame_hdr) must say
 * CFA = rsp+80 with rbp at CFA-16 — the frame every VM entry builds — and
 * the trace-entry code must be exactly `sub rsp,16; mov [rsp+16],r12;
 * mov [rsp+8],r13; jmp rax`, found once. Anything else: refuse.
 */
#include "vmcheck.h"

#include <stddef.h>
#include <string.h>

struct dwarf_eh_bases {
	void *tbase, *dbase, *func;
};
extern const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

struct rd {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t uleb(struct rd *r)
{
	uint64_t v = 0;
	for (int s = 0; r->p < r->end && s < 64; s += 7) {
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}

static int64_t sleb(struct rd *r)
{
	uint64_t v = 0; /* unsigned: bits shifted to 63 are no overflow */
	int s = 0;
	uint8_t b = 0;
	do {
		if (r->p >= r->end || s >= 64) {
			r->bad = 1;
			return 0;
		}
		b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << s;
		s += 7;
	} while (b & 0x80);
	if (s < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << s;
	return (int64_t)v;
}

/* Read a pointer with DW_EH_PE encoding `enc` (only what GNU ld emits for
 * x86-64: absptr, udata4/sdata4 with pcrel or nothing). */
static int read_ptr(struct rd *r, uint8_t enc, uintptr_t *out)
{
	const uint8_t *at = r->p;
	int64_t v;
	switch (enc & 0x0f) {
	case 0x00: /* absptr */
		if (r->end - r->p < 8)
			return -1;
		memcpy(&v, r->p, 8);
		r->p += 8;
		break;
	case 0x03: { /* udata4 */
		uint32_t u;
		if (r->end - r->p < 4)
			return -1;
		memcpy(&u, r->p, 4);
		r->p += 4;
		v = u;
		break;
	}
	case 0x0b: { /* sdata4 */
		int32_t s;
		if (r->end - r->p < 4)
			return -1;
		memcpy(&s, r->p, 4);
		r->p += 4;
		v = s;
		break;
	}
	default:
		return -1;
	}
	if ((enc & 0x70) == 0x10)
		v += (intptr_t)at; /* pcrel */
	else if ((enc & 0x70) != 0)
		return -1;
	*out = (uintptr_t)v;
	return 0;
}

/* Register rules after running a CFA program (the subset the VM uses). */
struct cfa_state {
	int reg, off;
	int saved[17]; /* offset from CFA, 0 = not saved */
};

static int run_cfa(struct rd *r, int64_t daf, struct cfa_state *st)
{
	while (r->p < r->end && !r->bad) {
		uint8_t op = *r->p++;
		if (op == 0) /* nop */
			continue;
		if ((op & 0xc0) == 0x80) { /* offset: reg, uleb factored */
			uint64_t o = uleb(r);
			if ((op & 0x3f) > 16)
				return -1;
			st->saved[op & 0x3f] = (int)((int64_t)o * daf);
		} else if (op == 0x0c) { /* def_cfa reg, off */
			st->reg = (int)uleb(r);
			st->off = (int)uleb(r);
		} else if (op == 0x0e) { /* def_cfa_offset */
			st->off = (int)uleb(r);
		} else {
			return -1; /* advance_loc etc.: not the one-row FDE we
				      know */
		}
	}
	return r->bad ? -1 : 0;
}

int lj_check_layout(uintptr_t pc, struct lj_layout *out, const char **why)
{
	struct dwarf_eh_bases bases;
	const uint8_t *fde = _Unwind_Find_FDE((void *)(pc - 1), &bases);
	memset(out, 0, sizeof(*out));
	if (!fde) {
		*why = "no .eh_frame FDE covers the interpreter";
		return -1;
	}
	uint32_t flen, cie_ptr, clen, cie_id;
	memcpy(&flen, fde, 4);
	memcpy(&cie_ptr, fde + 4, 4);
	if (flen == 0 || flen == 0xffffffff || cie_ptr == 0) {
		*why = "unexpected FDE header";
		return -1;
	}
	const uint8_t *cie = fde + 4 - cie_ptr;
	memcpy(&clen, cie, 4);
	memcpy(&cie_id, cie + 4, 4);
	if (cie_id != 0 || clen == 0xffffffff) {
		*why = "unexpected CIE header";
		return -1;
	}
	struct rd c = {cie + 8, cie + 4 + clen, 0};
	uint8_t version = *c.p++;
	const char *aug = (const char *)c.p;
	c.p += strnlen(aug, (size_t)(c.end - c.p)) + 1;
	uint64_t caf = uleb(&c);
	int64_t daf = sleb(&c);
	uint64_t racol = version == 1 ? *c.p++ : uleb(&c);
	uint8_t fde_enc = 0;
	if (aug[0] == 'z') {
		uint64_t alen = uleb(&c);
		const uint8_t *aend = c.p + alen;
		for (const char *a = aug + 1; *a && !c.bad; a++) {
			uintptr_t dummy;
			if (*a == 'R')
				fde_enc = *c.p++;
			else if (*a == 'P') {
				uint8_t penc = *c.p++;
				if (read_ptr(&c, penc & 0x7f, &dummy))
					c.bad = 1;
			} else if (*a == 'L')
				c.p++;
			else
				c.bad = 1;
		}
		c.p = aend;
	}
	struct cfa_state st = {0};
	if (c.bad || caf != 1 || daf != -8 || racol != 16 ||
	    run_cfa(&c, daf, &st) || st.reg != 7 || st.off != 8 ||
	    st.saved[16] != -8) {
		*why = "the interpreter's CIE is not the x86-64 default";
		return -1;
	}
	struct rd f = {fde + 8, fde + 4 + flen, 0};
	uintptr_t start, range;
	if (read_ptr(&f, fde_enc, &start) ||
	    read_ptr(&f, fde_enc & 0x0f, &range)) {
		*why = "unsupported FDE pointer encoding";
		return -1;
	}
	if (aug[0] == 'z')
		f.p += uleb(&f);
	if (run_cfa(&f, daf, &st) || st.reg != 7 || st.off != 80 ||
	    st.saved[6] != -16 || st.saved[3] != -24 || st.saved[15] != -32 ||
	    st.saved[14] != -40) {
		*why = "the interpreter's FDE is not CFA=rsp+80 with "
		       "rbp/rbx/r15/r14 at CFA-16/-24/-32/-40";
		return -1;
	}
	if (pc < start || pc - start >= range) {
		*why = "the FDE does not cover the interpreter";
		return -1;
	}
	/* The VM entry prologue (push rbp, rbx, r15, r14; sub rsp,40) and the
	 * trace entry (sub rsp,16; save r12, r13; jmp rax). */
	static const uint8_t prologue[] = {0x55, 0x53, 0x41, 0x57, 0x41,
					   0x56, 0x48, 0x83, 0xec, 0x28};
	static const uint8_t jloop[] = {0x48, 0x83, 0xec, 0x10, 0x4c, 0x89,
					0x64, 0x24, 0x10, 0x4c, 0x89, 0x6c,
					0x24, 0x08, 0xff, 0xe0};
	const uint8_t *code = (const uint8_t *)start;
	int nprol = 0, njloop = 0;
	for (uintptr_t i = 0; i + sizeof(jloop) <= range; i++) {
		if (!memcmp(code + i, prologue, sizeof(prologue)))
			nprol++;
		if (!memcmp(code + i, jloop, sizeof(jloop)))
			njloop++;
	}
	if (nprol < 4) {
		*why = "fewer than 4 VM entry prologues (push rbp,rbx,r15,r14; "
		       "sub rsp,40) in the interpreter";
		return -1;
	}
	if (njloop != 1) {
		*why = njloop
			   ? "trace entry code found more than once"
			   : "trace entry code (sub rsp,16; save r12/r13; jmp "
			     "rax) not found";
		return -1;
	}
	out->vm_start = start;
	out->vm_end = start + range;
	out->cfa_interp = st.off;
	out->cfa_jit = st.off + 16;
	return 0;
}
