/* SPDX-License-Identifier: MIT */
/* ELF symbols for the unwinder's frames (libelf): the .symtab of the
 * object's build-id debug file when installed, else its own .symtab,
 * plus its .dynsym; function symbols sorted by address, loaded once per
 * object. */
#include "elfobj.h"

#include <errno.h>
#include <stdio.h>
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

/* Sort by sym_cmp, stably: a radix sort (least significant digit
 * first, each pass stable: sized symbols first, then the address a byte
 * at a time, skipping the bytes where every address agrees), so the
 * order a stable sort by sym_cmp gives (ties keep the table's order,
 * which decides which of two names at one address a frame gets; the
 * order glibc's qsort gave), in a few passes without a comparison to
 * mispredict (a merge sort's were most of loading a debug file's
 * symbols); qsort where the buffer cannot be had. */
static void sort_syms(struct esym *v, size_t n)
{
	struct esym *tmp = malloc(n * sizeof(*v));
	if (!tmp) {
		qsort(v, n, sizeof(*v), sym_cmp);
		return;
	}
	struct esym *a = v, *b = tmp, *t;
	size_t sized = 0;
	uint64_t diff = 0;
	for (size_t i = 0; i < n; i++) {
		sized += v[i].size != 0;
		diff |= v[i].addr ^ v[0].addr;
	}
	for (size_t i = 0, p = 0, q = sized; i < n; i++) {
		if (a[i].size)
			b[p++] = a[i];
		else
			b[q++] = a[i];
	}
	t = a, a = b, b = t;
	for (unsigned sh = 0; sh < 64; sh += 8) {
		if (!((diff >> sh) & 0xff))
			continue;
		size_t at[257];
		memset(at, 0, sizeof(at));
		for (size_t i = 0; i < n; i++)
			at[((a[i].addr >> sh) & 0xff) + 1]++;
		for (size_t d = 1; d < 257; d++)
			at[d] += at[d - 1];
		for (size_t i = 0; i < n; i++)
			b[at[(a[i].addr >> sh) & 0xff]++] = a[i];
		t = a, a = b, b = t;
	}
	if (a != v)
		memcpy(v, a, n * sizeof(*v));
	free(tmp);
}

/* Capacities while loading one object's symbols. */
struct symload {
	size_t cap, strs_len, strs_cap;
};

static int add_table(struct elfobj *o, Elf *e, Elf64_Word type,
		     struct symload *L)
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
			if (L->strs_len + l > L->strs_cap) {
				size_t nc = (L->strs_cap + l) * 2;
				char *ns = realloc(o->strs, nc);
				if (!ns)
					return found;
				o->strs = ns;
				L->strs_cap = nc;
			}
			if (o->nsyms == L->cap) {
				size_t nc = L->cap ? L->cap * 2 : 256;
				struct esym *ns =
				    realloc(o->syms, nc * sizeof(*ns));
				if (!ns)
					return found;
				o->syms = ns;
				L->cap = nc;
			}
			memcpy(o->strs + L->strs_len, nm, l);
			o->syms[o->nsyms++] = (struct esym){
			    s.st_value, s.st_size, (uint32_t)L->strs_len};
			L->strs_len += l;
			found = 1;
		}
	}
	return found;
}

static void load_syms(struct elfobj *o)
{
	o->syms_loaded = 1;
	struct symload L = {0, 0, 0};
	Elf *d = elfobj_debug(o);
	if (!(d && add_table(o, d, SHT_SYMTAB, &L)))
		add_table(o, o->elf, SHT_SYMTAB, &L);
	add_table(o, o->elf, SHT_DYNSYM, &L);
	if (o->nsyms)
		sort_syms(o->syms, o->nsyms);
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

/* .eh_frame_hdr: version 1, eh_frame_ptr_enc, fde_count_enc, table_enc,
 * eh_frame_ptr, fde_count, then the sorted (initial_loc, fde) table. Only
 * the encodings every toolchain emits here are read: a udata4 count and a
 * datarel sdata4 table (0x3b), relative to the section's address. */
static void load_ehhdr(struct elfobj *o)
{
	o->ehhdr_tried = 1;
	size_t shstrndx;
	if (elf_getshdrstrndx(o->elf, &shstrndx))
		return;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;
		const char *nm;
		if (!gelf_getshdr(scn, &sh) ||
		    !(nm = elf_strptr(o->elf, shstrndx, sh.sh_name)) ||
		    strcmp(nm, ".eh_frame_hdr") || sh.sh_type != SHT_PROGBITS)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < 12)
			return;
		const unsigned char *p = d->d_buf;
		if (p[0] != 1 || p[2] != 0x03 || p[3] != 0x3b)
			return;
		size_t ptrlen; /* eh_frame_ptr: 4 bytes for the sdata4/udata4
				  encodings, 8 for udata8/sdata8 */
		switch (p[1] & 0x0f) {
		case 0x03:
		case 0x0b:
			ptrlen = 4;
			break;
		case 0x04:
		case 0x0c:
			ptrlen = 8;
			break;
		default:
			return;
		}
		if (4 + ptrlen + 4 > d->d_size)
			return;
		uint32_t n;
		memcpy(&n, p + 4 + ptrlen, 4);
		size_t tab = 4 + ptrlen + 4;
		if (n > (d->d_size - tab) / 8)
			return;
		o->ehtab = p + tab;
		o->ehn = n;
		o->ehaddr = sh.sh_addr;
		return;
	}
}

uint64_t elfobj_next_fde(struct elfobj *o, uint64_t vaddr)
{
	if (!o->ehhdr_tried)
		load_ehhdr(o);
	size_t lo = 0, hi = o->ehn; /* first entry with start > vaddr */
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		int32_t rel;
		memcpy(&rel, o->ehtab + 8 * m, 4);
		if (o->ehaddr + (uint64_t)(int64_t)rel <= vaddr)
			lo = m + 1;
		else
			hi = m;
	}
	if (lo >= o->ehn)
		return UINT64_MAX;
	int32_t rel;
	memcpy(&rel, o->ehtab + 8 * lo, 4);
	return o->ehaddr + (uint64_t)(int64_t)rel;
}

uint64_t elfobj_fde_start(struct elfobj *o, uint64_t vaddr)
{
	if (!o->ehhdr_tried)
		load_ehhdr(o);
	size_t lo = 0, hi = o->ehn; /* first entry with start > vaddr */
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		int32_t rel;
		memcpy(&rel, o->ehtab + 8 * m, 4);
		if (o->ehaddr + (uint64_t)(int64_t)rel <= vaddr)
			lo = m + 1;
		else
			hi = m;
	}
	if (!lo)
		return UINT64_MAX;
	int32_t rel;
	memcpy(&rel, o->ehtab + 8 * (lo - 1), 4);
	return o->ehaddr + (uint64_t)(int64_t)rel;
}

const char *elfobj_fde_name(struct elfobj *o, uint64_t vaddr)
{
	uint64_t start = elfobj_fde_start(o, vaddr);
	if (start == UINT64_MAX)
		return NULL;
	/* (the FDE's length is not checked: a pc past its end but before the
	 * next FDE has no row either, and the walk stops there anyway) */
	for (size_t i = 0; i < o->nfdenames; i++)
		if (o->fdenames[i].start == start)
			return o->fdenames[i].name;
	if (o->nfdenames == o->capfdenames) {
		size_t nc = o->capfdenames ? 2 * o->capfdenames : 16;
		struct fdename *nf = realloc(o->fdenames, nc * sizeof(*nf));
		if (!nf)
			return NULL;
		o->fdenames = nf;
		o->capfdenames = nc;
	}
	const char *base = strrchr(o->path, '/');
	base = base ? base + 1 : o->path;
	size_t len = strlen(base) + 32;
	char *name = malloc(len);
	if (!name)
		return NULL;
	snprintf(name, len, "[%s+0x%llx]", base, (unsigned long long)start);
	o->fdenames[o->nfdenames++] = (struct fdename){start, name};
	return name;
}

/* A defined symbol of any type named `name` in e's tables of `type`. */
static int find_named(Elf *e, Elf64_Word type, const char *name,
		      uint64_t *vaddr)
{
	Elf_Scn *scn = NULL;
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sy;
			const char *nm;
			if (!gelf_getsym(d, (int)i, &sy))
				break;
			if (sy.st_shndx != SHN_UNDEF && sy.st_value &&
			    (nm = elf_strptr(e, sh.sh_link, sy.st_name)) &&
			    !strcmp(nm, name)) {
				*vaddr = sy.st_value;
				return 0;
			}
		}
	}
	return -ENOENT;
}

int uw_elf_symbol(const char *path, const char *name, uint64_t *vaddr)
{
	/* any symbol type: RaptorJIT's lj_vm_asm_begin is an OBJECT label
	 * in .text, which the frames' table (functions only) leaves out */
	struct elfcache c = {.no_sframe = true};
	struct elfobj *o = elfobj_get(&c, path);
	int rc = -EINVAL;
	if (o) {
		rc = find_named(o->elf, SHT_SYMTAB, name, vaddr);
		if (rc)
			rc = find_named(elfobj_debug(o), SHT_SYMTAB, name,
					vaddr);
		if (rc)
			rc = find_named(o->elf, SHT_DYNSYM, name, vaddr);
	}
	elfcache_free(&c);
	return rc;
}
