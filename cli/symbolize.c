/* SPDX-License-Identifier: MIT */
/* ELF symbols for the unwinder's frames (libelf): the .symtab of the
 * object's build-id debug file when installed, else its own .symtab,
 * plus its .dynsym; function symbols sorted by address, loaded once per
 * object. */
#include "elfobj.h"

#include <stdlib.h>
#include <string.h>

static int sym_cmp(const void *a, const void *b)
{
	const struct esym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* sized symbols first */
	return (x->size == 0) - (y->size == 0);
}

static size_t strs_len, strs_cap;

static int add_table(struct elfobj *o, Elf *e, Elf64_Word type, size_t *cap)
{
	Elf_Scn *scn = NULL;
	int found = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type ||
		    sh.sh_entsize == 0)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s))
				break;
			int t = GELF_ST_TYPE(s.st_info);
			if (!s.st_value || s.st_shndx == SHN_UNDEF ||
			    s.st_shndx >= SHN_LORESERVE)
				continue;
			if (t == STT_NOTYPE) {
				/* labels in code (hand-written entry points
				 * such as ld.so's _start): only in executable
				 * sections */
				GElf_Shdr ts;
				Elf_Scn *tsc = elf_getscn(e, s.st_shndx);
				if (!tsc || !gelf_getshdr(tsc, &ts) ||
				    !(ts.sh_flags & SHF_EXECINSTR))
					continue;
			} else if (t != STT_FUNC && t != STT_GNU_IFUNC) {
				continue;
			}
			const char *nm = elf_strptr(e, sh.sh_link, s.st_name);
			if (!nm || !*nm)
				continue;
			size_t l = strlen(nm) + 1;
			if (strs_len + l > strs_cap) {
				size_t nc = (strs_cap + l) * 2;
				char *ns = realloc(o->strs, nc);
				if (!ns)
					return found;
				o->strs = ns;
				strs_cap = nc;
			}
			if (o->nsyms == *cap) {
				size_t nc = *cap ? *cap * 2 : 256;
				struct esym *ns =
				    realloc(o->syms, nc * sizeof(*ns));
				if (!ns)
					return found;
				o->syms = ns;
				*cap = nc;
			}
			memcpy(o->strs + strs_len, nm, l);
			o->syms[o->nsyms++] = (struct esym){
			    s.st_value, s.st_size, (uint32_t)strs_len};
			strs_len += l;
			found = 1;
		}
	}
	return found;
}

static void load_syms(struct elfobj *o)
{
	o->syms_loaded = 1;
	size_t cap = 0;
	strs_len = 0;
	strs_cap = 0;
	Elf *d = elfobj_debug(o);
	if (!(d && add_table(o, d, SHT_SYMTAB, &cap)))
		add_table(o, o->elf, SHT_SYMTAB, &cap);
	add_table(o, o->elf, SHT_DYNSYM, &cap);
	if (o->nsyms)
		qsort(o->syms, o->nsyms, sizeof(*o->syms), sym_cmp);
}

const char *elfobj_sym(struct elfobj *o, uint64_t vaddr, uint64_t *off)
{
	if (!o->syms_loaded)
		load_syms(o);
	size_t lo = 0, hi = o->nsyms;
	while (lo < hi) { /* first symbol with addr > vaddr */
		size_t m = (lo + hi) / 2;
		if (o->syms[m].addr <= vaddr)
			lo = m + 1;
		else
			hi = m;
	}
	/* the nearest symbols at or below vaddr that contain it */
	for (size_t k = lo, tries = 0; k > 0 && tries < 8; k--, tries++) {
		const struct esym *s = &o->syms[k - 1];
		if (vaddr - s->addr < s->size) {
			*off = vaddr - s->addr;
			return o->strs + s->name;
		}
	}
	/* else a symbol without a size (hand-written code, e.g. _start) just
	 * below, with no other symbol in between */
	if (lo > 0 && o->syms[lo - 1].size == 0 &&
	    vaddr - o->syms[lo - 1].addr < 4096) {
		*off = vaddr - o->syms[lo - 1].addr;
		return o->strs + o->syms[lo - 1].name;
	}
	return NULL;
}
