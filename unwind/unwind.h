/* SPDX-License-Identifier: MIT */
/* jitsframe's own unwinder over perf samples: ELF objects (CFI rows and
 * symbols, elfcfi.c / symbolize.c), processes and their mappings, trace
 * code through the region (unwind.c). */
#ifndef JSF_UNWIND_H
#define JSF_UNWIND_H

#include "ksyms.h"
#include "perfdata.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- ELF objects (cached by path and build-id) */

/* A CFI row in the region's form, for ELF vaddrs [lo, hi). */
enum crow_kind {
	CROW_OK = 0,
	CROW_OUTERMOST, /* RA undefined: the outermost frame */
	CROW_NONE,	/* no CFI covers the address */
	CROW_UNSUP,	/* a rule outside the row form (reason in why) */
	CROW_EXPR,	/* CFA by a DWARF expression we evaluate (PLT) */
};

struct crow {
	uint64_t lo, hi;
	uint8_t kind;
	uint8_t cfa_reg;   /* DWARF: 6 rbp, 7 rsp */
	uint8_t rbp_saved; /* rbp at CFA + rbp_off, else unchanged */
	uint8_t signal;
	int32_t cfa_off, rbp_off;
	int32_t ra_off; /* RA at CFA + ra_off (-8) */
	uint32_t nops;	/* CROW_EXPR: the expression */
	void *ops;
	const char *why;
};

struct elfobj;

/* Open (or get from the cache) the ELF file at path; NULL if unreadable. */
struct elfobj *elfobj_get(const char *path);
/* File offset -> ELF vaddr through the PT_LOAD segments (false if none). */
bool elfobj_off2vaddr(const struct elfobj *o, uint64_t off, uint64_t *vaddr);
/* The CFI row at vaddr (cached). */
const struct crow *elfobj_row(struct elfobj *o, uint64_t vaddr);
/* Symbol covering vaddr (NULL if none); *off gets vaddr - symbol start. */
const char *elfobj_sym(struct elfobj *o, uint64_t vaddr, uint64_t *off);
/* For code no symbol covers (a stripped binary's local functions, e.g.
 * LuaJIT's interpreter): "[file+0xSTART]", START the vaddr where the FDE
 * covering vaddr begins (from .eh_frame_hdr), so that the frames of one
 * function share a name; NULL if no FDE covers it. */
const char *elfobj_fde_name(struct elfobj *o, uint64_t vaddr);
const char *elfobj_build_id(const struct elfobj *o); /* hex or NULL */
const char *elfobj_path(const struct elfobj *o);
void elfobj_free_all(void);
/* How many rows came from .sframe sections and from CFI (libdw). */
void elfobj_row_stats(uint64_t *sframe, uint64_t *cfi);

/* Evaluate a CFA expression with rsp, rbp, rip; false if unsupported. */
bool crow_eval(const struct crow *r, uint64_t sp, uint64_t bp, uint64_t ip,
	       uint64_t *cfa);

/* ---- trace code (from the region) and names (from the jitdump) */
struct traces;
struct traces *traces_load(const char *region, const char *jitdump_dir,
			   char *err, size_t errlen);
void traces_free(struct traces *t);

/* ---- the unwinder */
enum stop_reason {
	STOP_OUTERMOST = 0, /* clean: RA undefined at the outermost frame */
	STOP_NO_MAPPING,    /* pc in no mapping and no trace */
	STOP_NO_ELF,	    /* the mapping's file cannot be read */
	STOP_NO_ROW,	    /* no CFI row for the pc */
	STOP_UNSUP_RULE,    /* CFI rule outside the row form */
	STOP_STACK_SHORT,   /* the stack copy does not reach the slot */
	STOP_NO_BP,	    /* rbp needed but unknown */
	STOP_LOOP,	    /* the stack pointer did not grow */
	STOP_DEPTH,	    /* too many frames */
	STOP_NO_REGS,	    /* the sample has no user registers */
	STOP_KERNEL_ONLY,   /* kernel thread: no user part */
	STOP_NULL_RA,	    /* return address 0 */
	STOP_NO_TRACE,	    /* pc in anonymous code but in no trace then */
	STOP__N
};
const char *stop_name(enum stop_reason r);

#define UW_MAX 512
struct uframe {
	uint64_t pc; /* leaf: exact pc; callers: the return address */
	bool is_trace;
	bool jit_area;	  /* a trace, or anonymous code outside every trace */
	const char *name; /* symbol or trace name, NULL unknown */
	uint64_t symoff;
	struct elfobj *elf; /* NULL for traces */
	uint64_t vaddr;	    /* ELF vaddr of pc (ELF frames) */
	uint64_t map_start, map_end, map_pgoff;
	const char *map_name;
};

struct uwstate;
struct uwstate *uw_new(struct traces *t);
void uw_free(struct uwstate *u);
/* Feed one event (in time order). For samples, fills frames (leaf first)
 * and returns their count, with *why the reason the walk stopped; -1 for
 * other events. */
int uw_event(struct uwstate *u, const struct pd_event *e, struct uframe *fr,
	     enum stop_reason *why, const char **comm);

#endif
