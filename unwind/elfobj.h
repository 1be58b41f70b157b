/* SPDX-License-Identifier: MIT */
/* Internal: the unwinder's row, and its ELF objects (elfcfi.c,
 * symbolize.c), cached per unwinder context. */
#ifndef JSF_ELFOBJ_H
#define JSF_ELFOBJ_H

#include "jitsframe.h"
#include "unwind.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>

/*
 * The one row the unwinder walks with, whatever its source (the region's
 * rows, an ELF .sframe section, .eh_frame/.debug_frame through libdw, a
 * PLT's DWARF expression), converted at lookup:
 *   CFA  by cfa_rule: SP|FP + cfa_off, a DWARF expression (ops), none (no
 *        row covers the pc), or a rule outside this form (why);
 *   RA   by ra_rule: at CFA + ra_off, or undefined (the outermost frame);
 *   FP   by fp_rule: unchanged, or saved at CFA + fp_off.
 * A zeroed row is "no row".
 */
enum uw_cfa_rule {
	UW_CFA_NONE = 0,
	UW_CFA_SP,
	UW_CFA_FP,
	UW_CFA_EXPR,
	UW_CFA_UNSUP,
};
enum uw_ra_rule { UW_RA_CFA = 0, UW_RA_UNDEF };
enum uw_fp_rule { UW_FP_SAME = 0, UW_FP_CFA };

struct uw_row {
	uint64_t lo, hi; /* the ELF vaddrs it holds for (the cache's key) */
	uint8_t cfa_rule, ra_rule, fp_rule;
	uint8_t signal;
	int32_t cfa_off, ra_off, fp_off;
	uint32_t nops; /* UW_CFA_EXPR: the expression (Dwarf_Op[nops]) */
	void *ops;
	const char *why; /* UW_CFA_UNSUP */
};

/* A region/SFrame row (struct jsf_row) in the unwinder's form. */
void uw_row_from_jsf(const struct jsf_row *j, struct uw_row *r);
/* Evaluate a UW_CFA_EXPR row's CFA with rsp, rbp, rip; false if
 * unsupported. */
bool uw_expr_eval(const struct uw_row *r, uint64_t sp, uint64_t bp, uint64_t ip,
		  uint64_t *cfa);

/* ---- ELF objects, cached by path in an elfcache (one per context) */

struct esym {
	uint64_t addr, size;
	uint32_t name; /* offset into strs */
};

struct elfobj {
	struct elfobj *next;
	char *path;
	int fd, dbg_fd;
	Elf *elf, *dbg;
	int dbg_tried, dcfi_tried, syms_loaded;
	Dwarf_CFI *cfi, *dcfi;
	Dwarf *dw, *dbg_dw;
	char bid[130];
	struct {
		uint64_t off, vaddr, filesz;
	} load[16];
	int nload;
	struct uw_row *rows, tmp;
	size_t nrows, cap;
	struct esym *syms;
	size_t nsyms;
	char *strs;
	char *image; /* [vdso]: our copy */
	/* .eh_frame_hdr's search table (initial locations) and the names
	 * "[file+0xSTART]" given to unnamed code by its FDE (symbolize.c) */
	int ehhdr_tried;
	const unsigned char *ehtab;
	size_t ehn;
	uint64_t ehaddr;
	struct fdename {
		uint64_t start;
		char *name;
	} * fdenames;
	size_t nfdenames, capfdenames;
	const unsigned char *sframe; /* the .sframe section, if any */
	size_t sframe_len;
	uint64_t sframe_addr;
	struct vmsubs *vms; /* vmsub.c's analyses of one-row FDEs */
};

struct elfcache {
	struct elfobj *head;
	bool no_sframe; /* ignore .sframe sections */
	uint64_t rows_sframe, rows_cfi;
};

/* Open (or get from the cache) the ELF file at path; NULL if unreadable. */
struct elfobj *elfobj_get(struct elfcache *c, const char *path);
/* File offset -> ELF vaddr through the PT_LOAD segments (false if none). */
bool elfobj_off2vaddr(const struct elfobj *o, uint64_t off, uint64_t *vaddr);
/* The row at vaddr (cached in o): .sframe first, else CFI. */
const struct uw_row *elfobj_row(struct elfcache *c, struct elfobj *o,
				uint64_t vaddr);
/* Symbol covering vaddr (NULL if none); *off gets vaddr - symbol start. */
const char *elfobj_sym(struct elfobj *o, uint64_t vaddr, uint64_t *off);
/* For code no symbol covers (a stripped binary's local functions, e.g.
 * LuaJIT's interpreter): "[file+0xSTART]", START the vaddr where the FDE
 * covering vaddr begins (from .eh_frame_hdr), so that the frames of one
 * function share a name; NULL if no FDE covers it. */
const char *elfobj_fde_name(struct elfobj *o, uint64_t vaddr);
/* The start (vaddr) of the .eh_frame_hdr entry that covers vaddr: the
 * function's entry when its FDE is its own; UINT64_MAX if none. */
uint64_t elfobj_fde_start(struct elfobj *o, uint64_t vaddr);
/* The start of the first .eh_frame_hdr FDE above vaddr; UINT64_MAX if
 * none or the object has no such table. */
uint64_t elfobj_next_fde(struct elfobj *o, uint64_t vaddr);
Elf *elfobj_debug(struct elfobj *o);
/* vmsub.c: r, the CFI row libdw gives at vaddr (its whole [lo, hi)), made
 * exact where it is one CFA = rsp + K row over a large FDE of code that
 * calls subroutines inside itself: r is clipped to the span of the pcs
 * around vaddr that share one rule, CFA = rsp + K + 8 in such a
 * subroutine, no row (why set) where a subroutine is refused. */
void vmsub_refine(struct elfcache *c, struct elfobj *o, uint64_t vaddr,
		  struct uw_row *r);
/* The row at vaddr from an FDE vmsub_refine analysed already (no libdw
 * lookup): true and *r as vmsub_refine makes it, else false. */
bool vmsub_cached(struct elfobj *o, uint64_t vaddr, struct uw_row *r);
void vmsub_free(struct elfobj *o);
void elfcache_free(struct elfcache *c);

#endif
