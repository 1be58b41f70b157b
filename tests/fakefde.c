/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for tests/t_vm.sh: an interpreter whose frame layout is
 * not the verified one, simulated without any hook in the product code.
 *
 * Wraps libgcc's _Unwind_Find_FDE. When the caller is the jitsframe module
 * (dladdr of our return address names jitsframe.so), it returns a copy of
 * the FDE (and its CIE) that libgcc found, changed as JSF_FAKEFDE says:
 *   cfa88   DW_CFA_def_cfa_offset 80 becomes 88 (a VM pushing one more
 *           register, e.g. a LJ_NO_UNWIND build)
 *   rbp24   DW_CFA_offset rbp at cfa-16 becomes cfa-24
 *   same    an unchanged copy (control: the copy itself is faithful)
 * The copy sits within ±2 GiB of the original so that its pc-relative
 * fields (FDE pc_begin, CIE personality) are rewritten to the same targets.
 * Every other caller (libgcc's own unwinding) gets the real FDE.
 * With JSF_FAKEFDE_LOG set, prints "fakefde: MODE served" to stderr.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

struct dwarf_eh_bases {
	void *tbase, *dbase, *func;
};
typedef const void *(*find_fn)(void *, struct dwarf_eh_bases *);
const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

static uint64_t uleb(const uint8_t **p)
{
	uint64_t v = 0;
	for (int s = 0; s < 64; s += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			break;
	}
	return v;
}

/* Size of a pointer with DW_EH_PE encoding enc (the x86-64 ones). */
static int enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x00:
		return 8;
	case 0x02:
	case 0x0a:
		return 2;
	case 0x03:
	case 0x0b:
		return 4;
	case 0x04:
	case 0x0c:
		return 8;
	}
	return -1;
}

/* Rewrite a pc-relative sdata4 field moved from `from` to `to`. */
static int move_pcrel4(uint8_t *to, const uint8_t *from)
{
	int32_t v;
	memcpy(&v, to, 4);
	int64_t target = (int64_t)(intptr_t)from + v;
	int64_t nv = target - (int64_t)(intptr_t)to;
	if (nv != (int32_t)nv)
		return -1;
	v = (int32_t)nv;
	memcpy(to, &v, 4);
	return 0;
}

static void *near_alloc(const void *at, size_t len)
{
	uintptr_t base = (uintptr_t)at & ~(uintptr_t)0xffff;
	for (uintptr_t d = 1u << 24; d < (1u << 30); d += 1u << 24) {
		for (int sign = -1; sign <= 1; sign += 2) {
			uintptr_t h = sign < 0 ? base - d : base + d;
			void *p = mmap((void *)h, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS |
					   MAP_FIXED_NOREPLACE,
				       -1, 0);
			if (p == (void *)h)
				return p;
			if (p != MAP_FAILED)
				munmap(p, len);
		}
	}
	return NULL;
}

static const void *fake(const uint8_t *fde, const char *mode)
{
	uint32_t flen, cptr, clen;
	memcpy(&flen, fde, 4);
	memcpy(&cptr, fde + 4, 4);
	const uint8_t *cie = fde + 4 - cptr;
	memcpy(&clen, cie, 4);
	if (flen == 0xffffffff || clen == 0xffffffff)
		return NULL;
	size_t ctot = clen + 4, ftot = flen + 4;
	uint8_t *buf = near_alloc(fde, 4096 + ctot + ftot);
	if (!buf)
		return NULL;
	uint8_t *ncie = buf, *nfde = buf + ctot;
	memcpy(ncie, cie, ctot);
	memcpy(nfde, fde, ftot);
	memset(nfde + ftot, 0, 4); /* terminator */
	uint32_t ncptr = (uint32_t)((nfde + 4) - ncie);
	memcpy(nfde + 4, &ncptr, 4);
	/* Walk the CIE: fix its pc-relative personality, learn the FDE
	 * pointer encoding. */
	const uint8_t *p = ncie + 9;
	const char *aug = (const char *)p;
	p += strlen(aug) + 1;
	uleb(&p); /* code alignment */
	uleb(&p); /* data alignment (sleb, skipped alike) */
	if (ncie[8] == 1)
		p++; /* return address column */
	else
		uleb(&p);
	uint8_t fenc = 0;
	if (aug[0] == 'z') {
		uleb(&p);
		for (const char *a = aug + 1; *a; a++) {
			if (*a == 'R') {
				fenc = *p++;
			} else if (*a == 'L') {
				p++;
			} else if (*a == 'P') {
				uint8_t penc = *p++;
				int n = enc_size(penc);
				if (n < 0)
					return NULL;
				if ((penc & 0x70) == 0x10 && n == 4 &&
				    move_pcrel4((uint8_t *)p, cie + (p - ncie)))
					return NULL;
				p += n;
			} else {
				return NULL;
			}
		}
	}
	if ((fenc & 0x70) == 0x10) {
		if (enc_size(fenc) != 4 || move_pcrel4(nfde + 8, fde + 8))
			return NULL;
	}
	/* The FDE's instructions: after pc_begin, pc_range, aug data. */
	int n = enc_size(fenc);
	if (n < 0)
		return NULL;
	const uint8_t *ins = nfde + 8 + 2 * n;
	if (aug[0] == 'z')
		ins += uleb(&ins);
	uint8_t *q = (uint8_t *)ins, *end = nfde + ftot;
	int done = !strcmp(mode, "same");
	for (; q < end && !done; q++) {
		if (!strcmp(mode, "cfa88") && q[0] == 0x0e && q + 1 < end &&
		    q[1] == 80) {
			q[1] = 88;
			done = 1;
		} else if (!strcmp(mode, "rbp24") && q[0] == 0x86 &&
			   q + 1 < end && q[1] == 2) {
			q[1] = 3;
			done = 1;
		}
	}
	if (!done)
		return NULL;
	mprotect(buf, 4096 + ctot + ftot, PROT_READ);
	return nfde;
}

const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases)
{
	static find_fn real;
	if (!real)
		real = (find_fn)dlsym(RTLD_NEXT, "_Unwind_Find_FDE");
	const void *fde = real(pc, bases);
	const char *mode = getenv("JSF_FAKEFDE");
	Dl_info di;
	if (!fde || !mode || !*mode ||
	    !dladdr(__builtin_return_address(0), &di) || !di.dli_fname ||
	    !strstr(di.dli_fname, "jitsframe.so"))
		return fde;
	const void *f = fake(fde, mode);
	if (!f) {
		fprintf(stderr, "fakefde: cannot make a %s copy\n", mode);
		return fde;
	}
	if (getenv("JSF_FAKEFDE_LOG"))
		fprintf(stderr, "fakefde: %s served\n", mode);
	return f;
}
