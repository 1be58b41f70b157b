/* SPDX-License-Identifier: MIT */
/*
 * The DWARF embedded in a RaptorJIT auditlog (audit/rjdwarf.h): types and
 * members through libdw, opened from memory (elf_memory, dwarf_begin_elf);
 * macros from .debug_macro.dwo, parsed here because the object is an
 * unlinked split-DWARF file: gcc emits one macro section per header group
 * with DW_MACRO_import offsets left unrelocated (0), and its string forms
 * are indexes into .debug_str_offsets.dwo. So every .debug_macro.dwo
 * section is read in section order (the main unit first), a later
 * definition of a name replacing an earlier one and an undef removing it.
 */
#include "rjdwarf.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rjd_type {
	const char *name; /* into the DWARF string section (libdw's) */
	Dwarf_Off off;
};

struct rjd_macro {
	char *name;
	const char *body; /* NULL: undefined here */
	size_t seq;
};

struct rjd {
	char *blob;
	size_t len;
	Elf *elf;
	Dwarf *dw;
	struct rjd_type *types;
	size_t ntypes;
	struct rjd_macro *macros;
	size_t nmacros, capmacros;
};

static int type_cmp(const void *a, const void *b)
{
	const struct rjd_type *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int macro_cmp(const void *a, const void *b)
{
	const struct rjd_macro *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* --- macros --- */

struct sec {
	const uint8_t *p;
	size_t n;
};

static int uleb(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	for (int shift = 0; *pp < end; shift += 7) {
		uint8_t b = *(*pp)++;
		if (shift < 64)
			r |= (uint64_t)(b & 0x7f) << shift;
		else if (b & 0x7f)
			return -1;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
		if (shift > 70)
			return -1;
	}
	return -1;
}

static int fixed(const uint8_t **pp, const uint8_t *end, unsigned n,
		 uint64_t *v)
{
	if ((size_t)(end - *pp) < n)
		return -1;
	uint64_t r = 0;
	for (unsigned i = 0; i < n; i++)
		r |= (uint64_t)(*pp)[i] << (8 * i);
	*pp += n;
	*v = r;
	return 0;
}

/* A NUL-terminated string at p within [p, end), or NULL. */
static const char *cstr(const uint8_t *p, const uint8_t *end)
{
	if (p >= end || !memchr(p, 0, (size_t)(end - p)))
		return NULL;
	return (const char *)p;
}

static const char *strx(const struct sec *so, const struct sec *str,
			uint64_t idx, unsigned osz)
{
	if (!so->p || !str->p || idx >= so->n / osz)
		return NULL;
	const uint8_t *q = so->p + idx * osz;
	uint64_t off;
	if (fixed(&q, so->p + so->n, osz, &off) || off >= str->n)
		return NULL;
	return cstr(str->p + off, str->p + str->n);
}

static int add_macro(struct rjd *d, const char *text, int define)
{
	size_t nl = 0;
	while (text[nl] && text[nl] != '(' && text[nl] != ' ' &&
	       text[nl] != '\t')
		nl++;
	if (!nl || nl > 256)
		return 0;
	const char *body = NULL;
	if (define) {
		const char *b = text + nl;
		if (*b == '(') {
			const char *close = strchr(b, ')');
			if (!close)
				return 0;
			b = close + 1;
		}
		while (*b == ' ' || *b == '\t')
			b++;
		body = b;
	}
	if (d->nmacros == d->capmacros) {
		size_t cap = d->capmacros ? 2 * d->capmacros : 256;
		void *m = realloc(d->macros, cap * sizeof(*d->macros));
		if (!m)
			return -1;
		d->macros = m;
		d->capmacros = cap;
	}
	char *name = malloc(nl + 1);
	if (!name)
		return -1;
	memcpy(name, text, nl);
	name[nl] = 0;
	d->macros[d->nmacros] =
	    (struct rjd_macro){.name = name, .body = body, .seq = d->nmacros};
	d->nmacros++;
	return 0;
}

/* One .debug_macro.dwo section: units of (header, ops, 0). Stops at the
 * first malformed or unknown op (what was read before it stays). */
static int parse_macro_sec(struct rjd *d, const struct sec *s,
			   const struct sec *so, const struct sec *str)
{
	const uint8_t *p = s->p, *end = s->p + s->n;
	while (p < end) {
		uint64_t ver, flags, v;
		if (fixed(&p, end, 2, &ver) || fixed(&p, end, 1, &flags))
			return 0;
		if ((ver != 4 && ver != 5) || (flags & ~3u))
			return 0;
		unsigned osz = (flags & 1) ? 8 : 4;
		if ((flags & 2) && fixed(&p, end, osz, &v))
			return 0;
		for (;;) {
			if (p >= end)
				return 0;
			uint8_t op = *p++;
			uint64_t line, idx, a;
			const char *t = NULL;
			if (op == 0)
				break;
			switch (op) {
			case DW_MACRO_define:
			case DW_MACRO_undef:
				if (uleb(&p, end, &line) || !(t = cstr(p, end)))
					return 0;
				p += strlen(t) + 1;
				if (add_macro(d, t, op == DW_MACRO_define))
					return -1;
				break;
			case DW_MACRO_start_file:
				if (uleb(&p, end, &line) || uleb(&p, end, &a))
					return 0;
				break;
			case DW_MACRO_end_file:
				break;
			case DW_MACRO_define_strp: /* in a .dwo: an index */
			case DW_MACRO_undef_strp:
			case DW_MACRO_define_strx:
			case DW_MACRO_undef_strx:
				if (uleb(&p, end, &line) || uleb(&p, end, &idx))
					return 0;
				t = strx(so, str, idx, osz);
				if (!t)
					return 0;
				if (add_macro(d, t,
					      op == DW_MACRO_define_strp ||
						  op == DW_MACRO_define_strx))
					return -1;
				break;
			case DW_MACRO_import: /* unrelocated in a .dwo */
			case DW_MACRO_import_sup:
				if (fixed(&p, end, osz, &a))
					return 0;
				break;
			default:
				return 0;
			}
		}
	}
	return 0;
}

static int read_macros(struct rjd *d)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(d->elf, &shstrndx))
		return 0;
	struct sec so = {0}, str = {0};
	Elf_Scn *scn = NULL;
	/* first the string sections, then the macro sections in order */
	while ((scn = elf_nextscn(d->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		const char *nm = elf_strptr(d->elf, shstrndx, sh.sh_name);
		if (!nm)
			continue;
		struct sec *t = !strcmp(nm, ".debug_str_offsets.dwo") ? &so
				: !strcmp(nm, ".debug_str.dwo")	      ? &str
								      : NULL;
		if (!t)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (data && data->d_buf)
			*t = (struct sec){data->d_buf, data->d_size};
	}
	scn = NULL;
	while ((scn = elf_nextscn(d->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		const char *nm = elf_strptr(d->elf, shstrndx, sh.sh_name);
		if (!nm || strcmp(nm, ".debug_macro.dwo"))
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			continue;
		struct sec s = {data->d_buf, data->d_size};
		if (parse_macro_sec(d, &s, &so, &str))
			return -1;
	}
	if (d->nmacros)
		qsort(d->macros, d->nmacros, sizeof(*d->macros), macro_cmp);
	return 0;
}

/* --- types --- */

static int read_types(struct rjd *d)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Half ver;
	uint8_t ut;
	Dwarf_Die cud, sub;
	size_t cap = 0;
	int units = 0;
	while (dwarf_get_units(d->dw, cu, &cu, &ver, &ut, &cud, &sub) == 0) {
		if (++units > 4096)
			break;
		Dwarf_Die c;
		if (dwarf_child(&cud, &c))
			continue;
		int steps = 0;
		do {
			if (++steps > (1 << 22))
				break;
			int tag = dwarf_tag(&c);
			if (tag != DW_TAG_structure_type &&
			    tag != DW_TAG_union_type && tag != DW_TAG_typedef &&
			    tag != DW_TAG_base_type)
				continue;
			if (dwarf_hasattr(&c, DW_AT_declaration))
				continue;
			const char *nm = dwarf_diename(&c);
			if (!nm)
				continue;
			if (d->ntypes == cap) {
				cap = cap ? 2 * cap : 256;
				void *t =
				    realloc(d->types, cap * sizeof(*d->types));
				if (!t)
					return -1;
				d->types = t;
			}
			d->types[d->ntypes++] =
			    (struct rjd_type){nm, dwarf_dieoffset(&c)};
		} while (dwarf_siblingof(&c, &c) == 0);
	}
	if (d->ntypes)
		qsort(d->types, d->ntypes, sizeof(*d->types), type_cmp);
	return 0;
}

int rjd_open(struct rjd **out, const uint8_t *blob, size_t len, char *msg,
	     size_t msglen)
{
	*out = NULL;
	struct rjd *d = calloc(1, sizeof(*d));
	if (!d || !(d->blob = malloc(len ? len : 1))) {
		free(d);
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	memcpy(d->blob, blob, len);
	d->len = len;
	elf_version(EV_CURRENT);
	d->elf = elf_memory(d->blob, len);
	if (!d->elf || elf_kind(d->elf) != ELF_K_ELF) {
		snprintf(msg, msglen, "the embedded lj_dwarf.dwo is not ELF");
		rjd_close(d);
		return -EINVAL;
	}
	d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
	if (!d->dw) {
		snprintf(msg, msglen,
			 "the embedded lj_dwarf.dwo has no DWARF: %s",
			 dwarf_errmsg(-1));
		rjd_close(d);
		return -EINVAL;
	}
	if (read_types(d) || read_macros(d)) {
		snprintf(msg, msglen, "out of memory");
		rjd_close(d);
		return -ENOMEM;
	}
	if (!d->ntypes) {
		snprintf(msg, msglen,
			 "the embedded lj_dwarf.dwo names no types");
		rjd_close(d);
		return -EINVAL;
	}
	*out = d;
	return 0;
}

void rjd_close(struct rjd *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nmacros; i++)
		free(d->macros[i].name);
	free(d->macros);
	free(d->types);
	if (d->dw)
		dwarf_end(d->dw);
	if (d->elf)
		elf_end(d->elf);
	free(d->blob);
	free(d);
}

/* The first definition named `name` (struct, union, typedef), or -1. */
static int find_type(struct rjd *d, const char *name, Dwarf_Die *die)
{
	size_t lo = 0, hi = d->ntypes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(d->types[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == d->ntypes || strcmp(d->types[lo].name, name))
		return -1;
	return dwarf_offdie(d->dw, d->types[lo].off, die) ? 0 : -1;
}

/* Follow typedefs and qualifiers to the underlying type. */
static int strip(Dwarf_Die *die)
{
	for (int i = 0; i < 32; i++) {
		int tag = dwarf_tag(die);
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type)
			return 0;
		Dwarf_Attribute a;
		if (!dwarf_attr(die, DW_AT_type, &a) ||
		    !dwarf_formref_die(&a, die))
			return -1;
	}
	return -1;
}

static int die_size(Dwarf_Die *die, uint64_t *size)
{
	Dwarf_Die t = *die;
	if (strip(&t))
		return -1;
	Dwarf_Word w;
	if (dwarf_aggregate_size(&t, &w) || w > UINT32_MAX)
		return -1;
	*size = w;
	return 0;
}

uint32_t rjd_type_size(struct rjd *d, const char *type)
{
	Dwarf_Die die;
	uint64_t size;
	if (!d || find_type(d, type, &die) || die_size(&die, &size))
		return 0;
	return (uint32_t)size;
}

static int member_in(Dwarf_Die *st, const char *member, uint64_t base,
		     uint64_t limit, int depth, uint32_t *off, uint32_t *size)
{
	if (depth > 8)
		return -ENOENT;
	int tag = dwarf_tag(st);
	if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type)
		return -ENOENT;
	Dwarf_Die m;
	if (dwarf_child(st, &m))
		return -ENOENT;
	int steps = 0;
	do {
		if (++steps > 65536)
			break;
		if (dwarf_tag(&m) != DW_TAG_member)
			continue;
		Dwarf_Attribute a;
		Dwarf_Word loc = 0;
		if (dwarf_attr(&m, DW_AT_data_member_location, &a) &&
		    dwarf_formudata(&a, &loc))
			continue; /* not a constant offset */
		if (dwarf_hasattr(&m, DW_AT_bit_size) ||
		    dwarf_hasattr(&m, DW_AT_data_bit_offset))
			continue;
		Dwarf_Die t;
		if (!dwarf_attr(&m, DW_AT_type, &a) ||
		    !dwarf_formref_die(&a, &t))
			continue;
		uint64_t sz;
		if (die_size(&t, &sz))
			continue;
		if (loc > limit || sz > limit - loc)
			continue; /* outside its struct: not trusted */
		const char *nm = dwarf_diename(&m);
		if (nm && !strcmp(nm, member)) {
			if (base + loc > UINT32_MAX)
				return -ENOENT;
			*off = (uint32_t)(base + loc);
			*size = (uint32_t)sz;
			return 0;
		}
		if (!nm && !strip(&t) &&
		    !member_in(&t, member, base + loc, sz, depth + 1, off,
			       size))
			return 0;
	} while (dwarf_siblingof(&m, &m) == 0);
	return -ENOENT;
}

int rjd_field(struct rjd *d, const char *type, const char *member,
	      uint32_t *off, uint32_t *size)
{
	Dwarf_Die die;
	uint64_t tsz;
	if (!d || find_type(d, type, &die) || die_size(&die, &tsz) ||
	    strip(&die))
		return -ENOENT;
	return member_in(&die, member, 0, tsz, 0, off, size);
}

const char *rjd_macro(struct rjd *d, const char *name)
{
	if (!d || !d->nmacros)
		return NULL;
	size_t lo = 0, hi = d->nmacros;
	while (lo < hi) { /* the first entry > name */
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(d->macros[mid].name, name) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || strcmp(d->macros[lo - 1].name, name))
		return NULL;
	return d->macros[lo - 1].body;
}

size_t rjd_nmacros(struct rjd *d)
{
	return d ? d->nmacros : 0;
}

/* ------------------------------------------------------------ enums */

static int each_enumerator(Dwarf_Die *en, const char *type, rjd_enum_fn fn,
			   void *arg)
{
	Dwarf_Die e, bt;
	Dwarf_Attribute a;
	Dwarf_Word enc = 0;
	/* an unsigned enum's values are unsigned (REF_BIAS = 0x8000 is a
	 * data2 that dwarf_formsdata would sign-extend) */
	Dwarf_Attribute *ea = dwarf_attr(en, DW_AT_encoding, &a);
	if (!ea && dwarf_attr(en, DW_AT_type, &a) && dwarf_formref_die(&a, &bt))
		ea = dwarf_attr(&bt, DW_AT_encoding, &a); /* the base type's */
	if (ea)
		dwarf_formudata(ea, &enc);
	int uns = enc == DW_ATE_unsigned || enc == DW_ATE_unsigned_char;
	if (dwarf_child(en, &e))
		return 0;
	do {
		Dwarf_Sword v;
		Dwarf_Word u;
		const char *nm = dwarf_diename(&e);
		if (dwarf_tag(&e) != DW_TAG_enumerator || !nm ||
		    !dwarf_attr(&e, DW_AT_const_value, &a))
			continue;
		if (uns ? dwarf_formudata(&a, &u) : dwarf_formsdata(&a, &v))
			continue;
		if (uns)
			v = (Dwarf_Sword)u;
		int rc = fn(type, nm, (int64_t)v, arg);
		if (rc)
			return rc;
	} while (dwarf_siblingof(&e, &e) == 0);
	return 0;
}

int rjd_enums(struct rjd *d, rjd_enum_fn fn, void *arg)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cud, sub, c, t;
	Dwarf_Half ver;
	uint8_t ut;
	int rc = 0;
	while (!rc &&
	       dwarf_get_units(d->dw, cu, &cu, &ver, &ut, &cud, &sub) == 0) {
		if (dwarf_child(&cud, &c))
			continue;
		do {
			int tag = dwarf_tag(&c);
			Dwarf_Attribute a;
			if (tag == DW_TAG_enumeration_type)
				rc = each_enumerator(&c, dwarf_diename(&c), fn,
						     arg);
			else if (tag == DW_TAG_typedef &&
				 dwarf_attr(&c, DW_AT_type, &a) &&
				 dwarf_formref_die(&a, &t) &&
				 dwarf_tag(&t) == DW_TAG_enumeration_type)
				rc = each_enumerator(&t, dwarf_diename(&c), fn,
						     arg);
		} while (!rc && dwarf_siblingof(&c, &c) == 0);
	}
	return rc; /* fn's nonzero, or 0 */
}
