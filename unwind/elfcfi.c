/* SPDX-License-Identifier: MIT */
/* ELF objects for the unwinder: their PT_LOAD segments and CFI rows
 * derived with elfutils' libdw from .eh_frame (then, for the pcs it does
 * not cover, .debug_frame of the object or its build-id debug file) or
 * from its .sframe section (through
 * libjitsframe's jsf_sframe_find), converted at lookup to the unwinder's
 * one row (struct uw_row: CFA = rsp|rbp + off or an expression, RA at
 * CFA+off or undefined, rbp saved at CFA+off or unchanged). Rows are
 * computed once per address range and kept sorted per object; objects are
 * cached by path in the context's elfcache. */
#include "elfobj.h"

#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

static void find_sframe(struct elfobj *o)
{
	size_t shstr;
	if (elf_getshdrstrndx(o->elf, &shstr))
		return;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;
		const char *nm;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(nm = elf_strptr(o->elf, shstr, sh.sh_name)) ||
		    strcmp(nm, ".sframe"))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (d && d->d_buf && d->d_size >= 28) {
			o->sframe = d->d_buf;
			o->sframe_len = d->d_size;
			o->sframe_addr = sh.sh_addr;
		}
		return;
	}
}

static Elf *vdso_copy(struct elfobj *o)
{
	const unsigned char *v =
	    (const unsigned char *)(uintptr_t)getauxval(AT_SYSINFO_EHDR);
	if (!v || memcmp(v, ELFMAG, SELFMAG) || v[EI_CLASS] != ELFCLASS64)
		return NULL;
	Elf64_Ehdr eh;
	memcpy(&eh, v, sizeof(eh));
	uint64_t len = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
	if (len < sizeof(eh) || len > (1u << 20))
		return NULL;
	o->image = malloc(len);
	if (!o->image)
		return NULL;
	memcpy(o->image, v, len);
	return elf_memory(o->image, len);
}

static void load_bid(struct elfobj *o)
{
	const void *p;
	ssize_t n = dwelf_elf_gnu_build_id(o->elf, &p);
	if (n <= 0 || n > 64)
		return;
	const unsigned char *b = p;
	for (ssize_t i = 0; i < n; i++)
		snprintf(o->bid + 2 * i, 3, "%02x", b[i]);
}

struct elfobj *elfobj_get(struct elfcache *c, const char *path)
{
	for (struct elfobj *o = c->head; o; o = o->next)
		if (!strcmp(o->path, path))
			return o->elf ? o : NULL;
	struct elfobj *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->path = strdup(path);
	o->fd = -1;
	o->dbg_fd = -1;
	o->next = c->head;
	c->head = o;
	if (!o->path)
		return NULL;
	elf_version(EV_CURRENT);
	Elf *e;
	if (!strcmp(path, "[vdso]")) {
		/* the kernel's vDSO: the same image in every process of this
		 * kernel, so ours stands for the recorded one's */
		e = vdso_copy(o);
	} else {
		o->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (o->fd < 0)
			return NULL;
		e = elf_begin(o->fd, ELF_C_READ_MMAP, NULL);
	}
	GElf_Ehdr eh;
	size_t nph;
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) ||
	    elf_getphdrnum(e, &nph)) {
		if (e)
			elf_end(e);
		return NULL;
	}
	o->elf = e;
	for (size_t i = 0; i < nph && o->nload < 16; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			o->load[o->nload].off = ph.p_offset;
			o->load[o->nload].vaddr = ph.p_vaddr;
			o->load[o->nload].filesz = ph.p_filesz;
			o->nload++;
		}
	}
	load_bid(o);
	o->cfi = dwarf_getcfi_elf(e);
	if (!c->no_sframe)
		find_sframe(o);
	return o;
}

/* The separate debug file (/usr/lib/debug/.build-id/xx/yyyy.debug). */
Elf *elfobj_debug(struct elfobj *o)
{
	if (o->dbg_tried)
		return o->dbg;
	o->dbg_tried = 1;
	if (!o->bid[0] || strlen(o->bid) < 4)
		return NULL;
	char p[256];
	snprintf(p, sizeof(p), "/usr/lib/debug/.build-id/%.2s/%s.debug", o->bid,
		 o->bid + 2);
	o->dbg_fd = open(p, O_RDONLY | O_CLOEXEC);
	if (o->dbg_fd < 0)
		return NULL;
	o->dbg = elf_begin(o->dbg_fd, ELF_C_READ_MMAP, NULL);
	if (o->dbg && elf_kind(o->dbg) != ELF_K_ELF) {
		elf_end(o->dbg);
		o->dbg = NULL;
	}
	return o->dbg;
}

bool elfobj_off2vaddr(const struct elfobj *o, uint64_t off, uint64_t *vaddr)
{
	for (int i = 0; i < o->nload; i++)
		if (off >= o->load[i].off &&
		    off - o->load[i].off < o->load[i].filesz) {
			*vaddr = off - o->load[i].off + o->load[i].vaddr;
			return true;
		}
	return false;
}

const char *elfobj_build_id(const struct elfobj *o)
{
	return o->bid[0] ? o->bid : NULL;
}

const char *elfobj_path(const struct elfobj *o)
{
	return o->path;
}

enum { R_RBP = 6, R_RSP = 7, R_RIP = 16 };

static void unsup(struct uw_row *r, const char *why)
{
	r->cfa_rule = UW_CFA_UNSUP;
	r->why = why;
}

/* Fill r from a libdw frame. */
static void from_frame(Dwarf_Frame *f, struct uw_row *r)
{
	Dwarf_Addr s, e;
	bool sig = false;
	int ra = dwarf_frame_info(f, &s, &e, &sig);
	r->lo = s;
	r->hi = e;
	r->signal = sig;
	Dwarf_Op *ops, mem[3];
	size_t n;
	if (ra != R_RIP) {
		unsup(r, "return address column is not rip");
		return;
	}
	/* return address */
	if (dwarf_frame_register(f, ra, mem, &ops, &n)) {
		unsup(r, "RA rule unreadable");
		return;
	}
	if (n == 0 && ops == mem) {
		r->ra_rule = UW_RA_UNDEF;
		return;
	}
	if (n >= 1 && n <= 2 && ops[0].atom == DW_OP_call_frame_cfa &&
	    (n == 1 || ops[1].atom == DW_OP_plus_uconst)) {
		r->ra_rule = UW_RA_CFA;
		r->ra_off = n == 1 ? 0 : (int32_t)(int64_t)ops[1].number;
	} else {
		unsup(r, "RA rule outside the row form");
		return;
	}
	/* rbp */
	if (dwarf_frame_register(f, R_RBP, mem, &ops, &n)) {
		unsup(r, "rbp rule unreadable");
		return;
	}
	if (n == 0) {
		/* same value, or undefined (then unknown: treated as unchanged,
		 * like perf's unwinders; it is only used if a caller's CFA
		 * needs it) */
		r->fp_rule = UW_FP_SAME;
	} else if (n <= 2 && ops[0].atom == DW_OP_call_frame_cfa &&
		   (n == 1 || ops[1].atom == DW_OP_plus_uconst)) {
		r->fp_rule = UW_FP_CFA;
		r->fp_off = n == 1 ? 0 : (int32_t)(int64_t)ops[1].number;
	} else {
		unsup(r, "rbp rule outside the row form");
		return;
	}
	/* CFA */
	if (dwarf_frame_cfa(f, &ops, &n) || n == 0) {
		unsup(r, "no CFA rule");
		return;
	}
	if (n == 1 && ops[0].atom == DW_OP_bregx &&
	    (ops[0].number == R_RSP || ops[0].number == R_RBP)) {
		r->cfa_rule = ops[0].number == R_RBP ? UW_CFA_FP : UW_CFA_SP;
		r->cfa_off = (int32_t)(int64_t)ops[0].number2;
		return;
	}
	/* an expression (PLT entries): keep a copy, evaluated per sample */
	r->ops = malloc(n * sizeof(Dwarf_Op));
	if (!r->ops) {
		unsup(r, "out of memory");
		return;
	}
	memcpy(r->ops, ops, n * sizeof(Dwarf_Op));
	r->nops = (uint32_t)n;
	r->cfa_rule = UW_CFA_EXPR;
}

/* A region/SFrame row: CFA from SP or FP, RA and FP at CFA offsets. */
void uw_row_from_jsf(const struct jsf_row *j, struct uw_row *r)
{
	memset(r, 0, sizeof(*r));
	if (j->outermost) {
		r->ra_rule = UW_RA_UNDEF;
		return;
	}
	r->cfa_rule = j->cfa_base == JSF_FP ? UW_CFA_FP : UW_CFA_SP;
	r->cfa_off = j->cfa_offset;
	switch (j->ra_rule) {
	case JSF_RA_DEFAULT: /* x86-64 */
		r->ra_off = -8;
		break;
	case JSF_RA_CFA:
		r->ra_off = j->ra_offset;
		break;
	default:
		unsup(r, "RA in a register");
	}
	if (j->has_fp) {
		r->fp_rule = UW_FP_CFA;
		r->fp_off = j->fp_offset;
	}
}

bool uw_expr_eval(const struct uw_row *r, uint64_t sp, uint64_t bp, uint64_t ip,
		  uint64_t *cfa)
{
	const Dwarf_Op *op = r->ops;
	uint64_t st[16];
	int n = 0;
	for (uint32_t i = 0; i < r->nops; i++) {
		uint8_t a = op[i].atom;
		if (n >= 15)
			return false;
		if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
			st[n++] = a - DW_OP_lit0;
		} else if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
			int reg = a - DW_OP_breg0;
			uint64_t v = reg == R_RSP   ? sp
				     : reg == R_RBP ? bp
				     : reg == R_RIP ? ip
						    : UINT64_MAX;
			if (v == UINT64_MAX)
				return false;
			st[n++] = v + (uint64_t)(int64_t)op[i].number;
		} else if (a == DW_OP_const1u || a == DW_OP_const2u ||
			   a == DW_OP_const4u || a == DW_OP_const8u ||
			   a == DW_OP_constu || a == DW_OP_const1s ||
			   a == DW_OP_const2s || a == DW_OP_const4s ||
			   a == DW_OP_const8s || a == DW_OP_consts) {
			st[n++] = op[i].number;
		} else if (a == DW_OP_plus_uconst) {
			if (n < 1)
				return false;
			st[n - 1] += op[i].number;
		} else {
			if (n < 2)
				return false;
			uint64_t y = st[--n], x = st[n - 1], v;
			switch (a) {
			case DW_OP_and:
				v = x & y;
				break;
			case DW_OP_or:
				v = x | y;
				break;
			case DW_OP_plus:
				v = x + y;
				break;
			case DW_OP_minus:
				v = x - y;
				break;
			case DW_OP_mul:
				v = x * y;
				break;
			case DW_OP_shl:
				v = y < 64 ? x << y : 0;
				break;
			case DW_OP_shr:
				v = y < 64 ? x >> y : 0;
				break;
			case DW_OP_ge:
				v = (int64_t)x >= (int64_t)y;
				break;
			case DW_OP_gt:
				v = (int64_t)x > (int64_t)y;
				break;
			case DW_OP_le:
				v = (int64_t)x <= (int64_t)y;
				break;
			case DW_OP_lt:
				v = (int64_t)x < (int64_t)y;
				break;
			case DW_OP_eq:
				v = x == y;
				break;
			case DW_OP_ne:
				v = x != y;
				break;
			default:
				return false;
			}
			st[n - 1] = v;
		}
	}
	if (n < 1)
		return false;
	*cfa = st[n - 1];
	return true;
}

/* Whether e has a section that libdw's dwarf_getcfi could read: one named
 * like .debug_frame (.zdebug_frame, .debug_frame.dwo, ...). Without one
 * dwarf_getcfi gives NULL, and dwarf_begin_elf, which decompresses every
 * debug section first (milliseconds for a libc's debug file), is skipped. */
static bool has_debug_frame(Elf *e)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(e, &shstrndx) != 0)
		return true; /* let libdw decide */
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) ||
		    !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			return true;
		if (strstr(name, "debug_frame"))
			return true;
	}
	return false;
}

static Dwarf_CFI *debug_cfi(struct elfobj *o)
{
	if (o->dcfi_tried)
		return o->dcfi;
	o->dcfi_tried = 1;
	/* .debug_frame of the object itself, else of its debug file */
	if (has_debug_frame(o->elf))
		o->dw = dwarf_begin_elf(o->elf, DWARF_C_READ, NULL);
	if (o->dw)
		o->dcfi = dwarf_getcfi(o->dw);
	if (!o->dcfi && elfobj_debug(o) && has_debug_frame(o->dbg)) {
		o->dbg_dw = dwarf_begin_elf(o->dbg, DWARF_C_READ, NULL);
		if (o->dbg_dw)
			o->dcfi = dwarf_getcfi(o->dbg_dw);
	}
	return o->dcfi;
}

const struct uw_row *elfobj_row(struct elfcache *c, struct elfobj *o,
				uint64_t vaddr)
{
	/* binary search the cached rows */
	size_t lo = 0, hi = o->nrows;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (o->rows[m].hi <= vaddr)
			lo = m + 1;
		else
			hi = m;
	}
	if (lo < o->nrows && o->rows[lo].lo <= vaddr)
		return &o->rows[lo];
	struct uw_row r = {.lo = vaddr, .hi = vaddr + 1}; /* no row */
	Dwarf_Frame *f = NULL;
	/* the object's .sframe first, when it has one and covers vaddr (the
	 * library's SFrame decoder) */
	struct jsf_row jr;
	uint64_t fstart;
	uint32_t rend;
	int k = o->sframe
		    ? jsf_sframe_find(o->sframe, o->sframe_len, o->sframe_addr,
				      vaddr, &fstart, NULL, &rend, &jr)
		    : -ENOENT;
	if (k == 0 || k == -EOPNOTSUPP) {
		if (k == 0) {
			uw_row_from_jsf(&jr, &r);
			r.hi = fstart + rend;
		} else {
			unsup(&r, "SFrame row outside the AMD64 form");
		}
		r.lo = vaddr;
		if (r.hi <= vaddr)
			r.hi = vaddr + 1;
		c->rows_sframe++;
	}
	/* .eh_frame first; .debug_frame for the pcs .eh_frame does not
	 * cover (or all of them, for an object without one): hand-written
	 * code may describe itself there only (RaptorJIT's interpreter,
	 * docs/RAPTORJIT.md). The DWARF is opened on the first such pc, once
	 * per object (debug_cfi: opening a debug file's decompresses all of
	 * it, milliseconds), and the answer, a row or none, is cached like
	 * every other. */
	else if (vmsub_cached(o, vaddr, &r)) {
		/* a pc of an FDE vmsub.c split: its row, from the analysis */
		r.lo = vaddr;
		c->rows_cfi++;
	} else if ((o->cfi && dwarf_cfi_addrframe(o->cfi, vaddr, &f) == 0) ||
		   (debug_cfi(o) &&
		    dwarf_cfi_addrframe(o->dcfi, vaddr, &f) == 0)) {
		from_frame(f, &r);
		free(f);
		vmsub_refine(c, o, vaddr, &r);
		/* libdw's start is not the row's after DW_CFA_restore_state
		 * (the state restored carries the start of the remembered row);
		 * its end is right. The row holds from vaddr to end. */
		r.lo = vaddr;
		if (r.hi <= vaddr)
			r.hi = vaddr + 1;
		c->rows_cfi++;
	}
	/* insert at lo, clipped to its neighbours */
	if (lo > 0 && o->rows[lo - 1].hi > r.lo)
		r.lo = o->rows[lo - 1].hi;
	if (lo < o->nrows && o->rows[lo].lo < r.hi)
		r.hi = o->rows[lo].lo;
	if (o->nrows == o->cap) {
		size_t nc = o->cap ? 2 * o->cap : 64;
		struct uw_row *nr = realloc(o->rows, nc * sizeof(*nr));
		if (!nr) {
			free(r.ops);
			o->tmp = (struct uw_row){.lo = vaddr, .hi = vaddr + 1};
			unsup(&o->tmp, "out of memory");
			return &o->tmp;
		}
		o->rows = nr;
		o->cap = nc;
	}
	memmove(o->rows + lo + 1, o->rows + lo,
		(o->nrows - lo) * sizeof(*o->rows));
	o->rows[lo] = r;
	o->nrows++;
	return &o->rows[lo];
}

void elfcache_free(struct elfcache *c)
{
	while (c->head) {
		struct elfobj *o = c->head;
		c->head = o->next;
		for (size_t i = 0; i < o->nrows; i++)
			free(o->rows[i].ops);
		free(o->rows);
		free(o->syms);
		free(o->strs);
		for (size_t i = 0; i < o->nfdenames; i++)
			free(o->fdenames[i].name);
		free(o->fdenames);
		vmsub_free(o);
		if (o->dw)
			dwarf_end(o->dw);
		if (o->dbg_dw)
			dwarf_end(o->dbg_dw);
		if (o->cfi)
			dwarf_cfi_end(o->cfi);
		if (o->dbg)
			elf_end(o->dbg);
		if (o->elf)
			elf_end(o->elf);
		if (o->dbg_fd >= 0)
			close(o->dbg_fd);
		if (o->fd >= 0)
			close(o->fd);
		free(o->path);
		free(o->image);
		free(o);
	}
}

int uw_elf_sp_cfa(const char *path, uint64_t vaddr, int32_t *cfa_off)
{
	struct elfcache c = {.no_sframe = true};
	struct elfobj *o = elfobj_get(&c, path);
	int rc = -EINVAL;
	if (o) {
		const struct uw_row *r = elfobj_row(&c, o, vaddr);
		rc = r->cfa_rule == UW_CFA_NONE ? -ENOENT
		     : r->cfa_rule != UW_CFA_SP ? -EOPNOTSUPP
						: 0;
		if (!rc)
			*cfa_off = r->cfa_off;
	}
	elfcache_free(&c);
	return rc;
}

/* binutils' x86-64 PLT expression: rsp + 8 + ((rip & 15) >= K) << 3 */
static bool plt_expr(const struct uw_row *r, int32_t *off, uint8_t *k)
{
	const Dwarf_Op *op = r->ops;
	if (r->nops != 9 || op[0].atom != DW_OP_breg7 ||
	    op[1].atom != DW_OP_breg16 || op[1].number != 0 ||
	    op[2].atom != DW_OP_lit15 || op[3].atom != DW_OP_and ||
	    op[4].atom < DW_OP_lit0 || op[4].atom > DW_OP_lit15 ||
	    op[5].atom != DW_OP_ge || op[6].atom != DW_OP_lit3 ||
	    op[7].atom != DW_OP_shl || op[8].atom != DW_OP_plus)
		return false;
	*off = (int32_t)(int64_t)op[0].number;
	*k = (uint8_t)(op[4].atom - DW_OP_lit0);
	return true;
}

static void xrow_from(const struct uw_row *r, struct uw_xrow *x)
{
	memset(x, 0, sizeof(*x));
	x->lo = r->lo;
	x->hi = r->hi;
	switch (r->cfa_rule) {
	case UW_CFA_NONE:
		/* a zeroed row is "no row", unless it says outermost (an
		 * SFrame row with no CFA: RA undefined) */
		x->cfa = UW_XCFA_NONE;
		if (r->ra_rule == UW_RA_UNDEF)
			x->cfa = UW_XCFA_SP, x->ra_undef = 1;
		return;
	case UW_CFA_SP:
	case UW_CFA_FP:
		x->cfa = r->cfa_rule == UW_CFA_SP ? UW_XCFA_SP : UW_XCFA_FP;
		x->cfa_off = r->cfa_off;
		break;
	case UW_CFA_EXPR:
		if (!plt_expr(r, &x->cfa_off, &x->plt_k)) {
			x->cfa = UW_XCFA_UNSUP;
			return;
		}
		x->cfa = UW_XCFA_PLT;
		break;
	default:
		x->cfa = UW_XCFA_UNSUP;
		return;
	}
	x->ra_undef = r->ra_rule == UW_RA_UNDEF;
	x->ra_off = r->ra_off;
	x->fp_saved = r->fp_rule == UW_FP_CFA;
	x->fp_off = r->fp_off;
}

static bool xrow_same(const struct uw_xrow *a, const struct uw_xrow *b)
{
	return a->hi == b->lo && a->cfa == b->cfa &&
	       a->ra_undef == b->ra_undef && a->fp_saved == b->fp_saved &&
	       a->plt_k == b->plt_k && a->cfa_off == b->cfa_off &&
	       a->ra_off == b->ra_off && a->fp_off == b->fp_off;
}

static int xrow_push(struct uw_xrow **v, size_t *n, size_t *cap,
		     const struct uw_xrow *x)
{
	if (*n && xrow_same(&(*v)[*n - 1], x)) {
		(*v)[*n - 1].hi = x->hi;
		return 0;
	}
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 1024;
		struct uw_xrow *nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = *x;
	return 0;
}

int uw_elf_rows(const char *path, struct uw_xrow **rows, size_t *n,
		struct uw_elf_info *info)
{
	struct elfcache c = {0};
	struct elfobj *o = elfobj_get(&c, path);
	struct uw_xrow *v = NULL;
	size_t nv = 0, cap = 0;
	int rc = 0;
	if (!o) {
		elfcache_free(&c);
		return -EINVAL;
	}
	if (info) {
		memset(info, 0, sizeof(*info));
		memcpy(info->build_id, o->bid, sizeof(info->build_id));
		size_t nph;
		if (!elf_getphdrnum(o->elf, &nph))
			for (size_t i = 0; i < nph && info->nload < 16; i++) {
				GElf_Phdr ph;
				if (!gelf_getphdr(o->elf, (int)i, &ph) ||
				    ph.p_type != PT_LOAD)
					continue;
				info->load[info->nload].off = ph.p_offset;
				info->load[info->nload].vaddr = ph.p_vaddr;
				info->load[info->nload].filesz = ph.p_filesz;
				info->load[info->nload].flags = ph.p_flags;
				info->nload++;
			}
	}
	/* gaps are skipped to the next .eh_frame FDE only when no
	 * .debug_frame could cover them (else pc by pc) */
	bool jump = !debug_cfi(o);
	Elf_Scn *scn = NULL;
	while (!rc && (scn = elf_nextscn(o->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    (sh.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) !=
			(SHF_ALLOC | SHF_EXECINSTR) ||
		    !sh.sh_size)
			continue;
		uint64_t a = sh.sh_addr, end = sh.sh_addr + sh.sh_size;
		while (!rc && a < end) {
			const struct uw_row *r = elfobj_row(&c, o, a);
			struct uw_xrow x;
			xrow_from(r, &x);
			x.lo = a;
			if (x.hi <= a || x.hi > end)
				x.hi = end;
			if (x.cfa == UW_XCFA_NONE && jump && !r->why) {
				uint64_t nx = elfobj_next_fde(o, a);
				x.hi = nx > a && nx < end ? nx : end;
			}
			rc = xrow_push(&v, &nv, &cap, &x);
			a = x.hi;
		}
	}
	if (info) {
		info->rows_sframe = c.rows_sframe;
		info->rows_cfi = c.rows_cfi;
	}
	elfcache_free(&c);
	if (rc) {
		free(v);
		return rc;
	}
	*rows = v;
	*n = nv;
	return 0;
}
