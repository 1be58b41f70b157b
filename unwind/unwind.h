/* SPDX-License-Identifier: MIT */
/* jitsframe's own unwinder over perf samples, as a library: a context
 * (struct uwstate) owning processes and their mappings, ELF objects (rows
 * from .sframe and CFI, symbols: elfcfi.c / symbolize.c), kallsyms
 * (ksyms.c); trace code through the region (unwind.c). */
#ifndef JSF_UNWIND_H
#define JSF_UNWIND_H

#include "perfdata.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- ELF objects (cached by path in the unwinder's context) */
struct elfobj;
const char *elfobj_build_id(const struct elfobj *o); /* hex or NULL */
const char *elfobj_path(const struct elfobj *o);

/* ---- one ELF file, outside any context: for checks of a JIT's frame
 * facts against its binary (RaptorJIT: the CFA of its interpreter's
 * .debug_frame FDE, docs/RAPTORJIT.md) and for recognising a program */
/* The vaddr of symbol `name` (.symtab, its debug file's, .dynsym): 0, or
 * -ENOENT (no such symbol), -EINVAL (not a readable ELF file). */
int uw_elf_symbol(const char *path, const char *name, uint64_t *vaddr);
/* The CFI row at vaddr (.eh_frame, then .debug_frame; no .sframe): 0 and
 * *cfa_off when its CFA is rsp + *cfa_off; -ENOENT no row there;
 * -EOPNOTSUPP another CFA rule; -EINVAL not a readable ELF file. */
int uw_elf_sp_cfa(const char *path, uint64_t vaddr, int32_t *cfa_off);

/* ---- every row of one ELF file's code, for tables built ahead of time
 * (the in-kernel sampler, sampler/): the file's executable sections
 * walked from start to end in the rows the unwinder itself uses (.sframe
 * where it covers, else .eh_frame, then .debug_frame), each row with the
 * exact [lo, hi) range it holds for; the pcs no row covers as
 * UW_XCFA_NONE rows, so that the rows tile every executable section. */
enum uw_xcfa {
	UW_XCFA_NONE = 0, /* no row covers [lo, hi) */
	UW_XCFA_SP,	  /* CFA = rsp + cfa_off */
	UW_XCFA_FP,	  /* CFA = rbp + cfa_off */
	UW_XCFA_PLT,   /* CFA = rsp + cfa_off + ((rip & 15) >= plt_k ? 8 : 0),
			  the DWARF expression of binutils' x86-64 PLTs */
	UW_XCFA_UNSUP, /* another rule (an expression, a register) */
};
struct uw_xrow {
	uint64_t lo, hi;
	uint8_t cfa;	  /* enum uw_xcfa */
	uint8_t ra_undef; /* the outermost frame: no return address */
	uint8_t fp_saved; /* rbp saved at CFA + fp_off (else unchanged) */
	uint8_t plt_k;
	int32_t cfa_off, ra_off, fp_off; /* RA at CFA + ra_off */
};
struct uw_elf_info {
	char build_id[130]; /* hex, "" when the file has none */
	uint32_t nload;	    /* its PT_LOAD segments */
	struct {
		uint64_t off, vaddr, filesz;
		uint32_t flags; /* PF_* */
	} load[16];
	uint64_t rows_sframe, rows_cfi; /* rows taken from each source */
};
/* All rows of path's code, sorted and tiling its executable sections, in
 * a malloc'd array (*rows, *n; the caller frees it); info (may be NULL)
 * gets the build-id and segments. 0, -EINVAL (not a readable ELF file),
 * -ENOMEM. ("[vdso]": the running kernel's vDSO.) */
int uw_elf_rows(const char *path, struct uw_xrow **rows, size_t *n,
		struct uw_elf_info *info);

/* ---- trace code (from regions) and names (from jitdumps)
 * A set of regions, one per producer process (a record directory holds
 * DIR/region and, for forked children, DIR/region-PID). A sample's trace
 * frames come only from the region of its own process: the producer's pid,
 * within the region's lifetime (a pid may be reused); never from another
 * process's region, even where the same address holds code there. */
struct traces;
struct traces *traces_new(void);
/* Open one more region; 0, or a negative errno with a message in err. */
int traces_add_region(struct traces *t, const char *path, char *err,
		      size_t errlen);
/* Read the trace names of every DIR/jit-PID.dump (each named per pid). */
void traces_add_jitdumps(struct traces *t, const char *jitdump_dir);
/* Only jitdump_dir/jit-PID.dump: the jitdump of that process (a directory
 * such as the per-user default directory holds every process's). */
void traces_add_jitdump_of(struct traces *t, const char *jitdump_dir,
			   uint32_t pid);
/* traces_new + traces_add_region (region may be NULL) +
 * traces_add_jitdumps; NULL with a message in err. */
struct traces *traces_load(const char *region, const char *jitdump_dir,
			   char *err, size_t errlen);
size_t traces_regions(const struct traces *t);
void traces_free(struct traces *t);
/* Read each region's runtime area again (a live producer appends names:
 * libraries its program loaded after it started). */
void traces_refresh_runtime(struct traces *t);

/* ---- names from a region's runtime area (docs/ABI.md 1.6): native code
 * a stripped binary leaves unnamed, named by the producer. The LuaJIT
 * module's: its builtins written in C at their C addresses ("LJFF":
 * string.gsub, table.sort), and the interpreter's code ("LJVM"), named
 * UW_INTERP_NAME. A native frame whose function (its FDE) starts at such an
 * address gets the name where the binary's symbols give none. */
#define UW_INTERP_NAME "luajit_interpreter"
enum { UW_RT_BUILTIN, UW_RT_CFUNC }; /* an LJFF name, an LJCF name */
struct uw_rtname {
	uint64_t addr;
	const char *name;
	int kind; /* UW_RT_* */
};
struct uw_runtime {
	uint64_t vm_start, vm_end; /* 0: none */
	struct uw_rtname *n;	   /* sorted by address, each once */
	size_t nn;
	char *blob;
};
/* hdr: a region file's first len bytes (4096; more to reach the runtime
 * extension's bytes in use, docs/ABI.md 1.7). 0 (rt may hold nothing), -1
 * (a bad area length, or out of memory: nothing). */
int uw_runtime_parse(const uint8_t *hdr, size_t len, struct uw_runtime *rt);
/* The same from the region file at path: -1 also when its header page
 * cannot be read. */
int uw_runtime_read(const char *path, struct uw_runtime *rt);
void uw_runtime_free(struct uw_runtime *rt);
/* The name of the function that starts at start, or NULL. */
const char *uw_runtime_name(const struct uw_runtime *rt, uint64_t start);

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
	STOP_NO_REGION,	    /* pc in anonymous code of a process that has no
			       region (then): its JIT did not publish */
	STOP__N
};
/* A printable name for every reason ("?" outside the enum). */
const char *stop_name(enum stop_reason r);

#define UW_MAX 512
struct uframe {
	uint64_t pc; /* leaf: exact pc; callers: the return address */
	uint64_t sp; /* the stack pointer while it runs (callers: the CFA
			of the frame it called) */
	bool is_trace;
	bool jit_area;	  /* a trace, or anonymous code outside every trace */
	const char *name; /* symbol or trace name, NULL unknown */
	uint64_t symoff;
	struct elfobj *elf; /* NULL for traces */
	uint64_t vaddr;	    /* ELF vaddr of pc (ELF frames) */
	uint64_t map_start, map_end, map_pgoff;
	const char *map_name;
};

/*
 * The unwinder's context: processes and their mappings, the ELF objects
 * (rows and symbols), kallsyms, statistics and options. It owns all of
 * them (nothing is process-global): contexts are independent, each used
 * by one thread at a time. t (may be NULL: no trace code) is the caller's
 * and must outlive the context.
 */
struct uw_opts {
	bool no_sframe;	      /* ignore ELF .sframe sections (use CFI) */
	const char *kallsyms; /* kernel symbols from this file; NULL:
				 /proc/kallsyms (read on first use) */
};
struct uwstate;
struct uwstate *uw_new(struct traces *t, const struct uw_opts *o);
void uw_free(struct uwstate *u);
/* Feed one event (in time order). For samples, fills frames (leaf first)
 * and returns their count, with *why the reason the walk stopped; -1 for
 * other events. The frames' names and objects live as long as u. */
int uw_event(struct uwstate *u, const struct pd_event *e, struct uframe *fr,
	     enum stop_reason *why, const char **comm);
/* The path of the program process pid runs (its executable, from its
 * mappings: the first code mapped after its exec, else the first that is
 * an ELF program: ET_EXEC, or ET_DYN with PT_INTERP); NULL unknown. Valid
 * until the next event. */
const char *uw_exe(struct uwstate *u, uint32_t pid);
/* When the recording saw process pid start (its fork, or its last exec),
 * in the samples' clock; 0: it started before the recording (or is not
 * known). A region created before that is a reused pid's. */
uint64_t uw_born(struct uwstate *u, uint32_t pid);
/* The kernel symbol ("name_[k]") at or below addr, or NULL. */
const char *uw_ksym_name(struct uwstate *u, uint64_t addr);
/* Read kernel symbols from path instead; before the first uw_ksym_name. */
int uw_use_kallsyms(struct uwstate *u, const char *path);
/* The kallsyms file given to uw_use_kallsyms, rewritten with only the
 * lines that named a kernel frame so far (ksyms.h's ksyms_trim: every
 * address then gets the name it had, or none). 0, -ENOTSUP (none given,
 * not perf's layout, nothing named), -errno. */
int uw_trim_kallsyms(struct uwstate *u);

/* The stack copy's 64-byte lines (offsets from the sampled rsp, rounded
 * down) the last walk read, deepest last, at most max of them: for
 * pd_prefetch_stack (later samples' walks mostly read the same ones). */
size_t uw_stack_lines(const struct uwstate *u, uint32_t *off, size_t max);

/* ---- live processes (`jitsframe profile`: samples walked elsewhere, by
 * the in-kernel sampler, symbolized here; its oracle walks raw copies)
 * (Re)read process pid's mappings from its /proc/PID/maps (maps: another
 * file of that format, for tests; NULL: /proc/PID/maps) and its name from
 * /proc/PID/comm, replacing what the context had for pid: executable
 * file mappings are ELF code, anonymous executable ones JIT code (as
 * perf's //anon). 0, or -errno (the process is gone: -ENOENT). */
int uw_proc_maps(struct uwstate *u, uint32_t pid, const char *maps);
/* The frame at pc of process pid at time ts (CLOCK_MONOTONIC ns), as a
 * walk names it: caller (a return address): the code at pc - 1. ELF code
 * by its symbol, trace code by the region function that covered pc at ts
 * (never one that covered it before a flush or after), named by the
 * jitdump's load of that code at or before ts. *f is filled in every
 * case (f->pc = pc); true when pc is in a known mapping or trace, false
 * with *why (STOP_NO_MAPPING, STOP_NO_ELF, STOP_NO_TRACE, STOP_NO_REGION)
 * otherwise (STOP_NO_TRACE and STOP_NO_ELF still describe the mapping). */
bool uw_frame_at(struct uwstate *u, uint32_t pid, uint64_t pc, bool caller,
		 uint64_t ts, struct uframe *f, enum stop_reason *why);
/* A Lua function's label "file:first" (as luajit -jp=F names it; file
 * fl bytes long) into dst, which has room for fl + 12 bytes, with its NUL;
 * its length without the NUL. */
size_t uw_lua_label(char *dst, const char *file, size_t fl, uint32_t first);
/* The Lua frames a trace frame of process pid stands for at ts (f: a
 * frame uw_event, uw_unwind_regs or uw_frame_at gave, f->is_trace): from
 * the source map the producer published with the region function that
 * covered the frame's pc then (docs/ABI.md 1.5), at the frame's code
 * offset; INNERMOST first, at most max into out. Only frames the map marks
 * exact: 0 for a range without them, a function without a map, a region
 * without maps, a frame that is not a trace's. The strings live until the
 * next call with u. */
struct uw_luaframe {
	const char *file; /* the chunk ("@" or "=" dropped) */
	const char *name; /* the function's name, NULL unknown */
	uint32_t line;	  /* the line at this point (a caller: its call) */
	uint32_t first;	  /* the function's first line (0: a main chunk) */
	/* "file:first" (file NULL: "(null)"), as the profiles name the
	 * function, when these frames come from the memo of a region no
	 * producer writes any more: then it, file and name stay put as long
	 * as u; NULL otherwise (file and name go with the next call) */
	const char *func;
	uint32_t func_len, file_len; /* with func: their strlen */
};
int uw_lua_frames(struct uwstate *u, uint32_t pid, uint64_t ts,
		  const struct uframe *f, struct uw_luaframe *out, int max);
/* An exact key of what uw_lua_frames(u, pid, ts, f, ...) gives: the same
 * key (for as long as u) only where it gives the same frames, whose
 * strings then stay put as long as u (a region no producer writes any
 * more: its memo); NULL where no such key can be given (a live region). */
const void *uw_lua_key(struct uwstate *u, uint32_t pid, uint64_t ts,
		       const struct uframe *f);
/* Where in its trace a trace frame of process pid was at ts (f as for
 * uw_lua_frames): 1 in the trace's loop, 0 before it (its head, or a
 * trace without a loop), -1 not known (no source map, or one that does
 * not mark the loop: docs/ABI.md 1.5). (Added for issue 13: the
 * VM-state profile's head/loop.) */
int uw_trace_loop(struct uwstate *u, uint32_t pid, uint64_t ts,
		  const struct uframe *f);
/* Walk a stack from raw user registers and a copy of the stack from sp
 * (len bytes), as uw_event walks a perf sample of process pid at ts
 * (mappings from uw_proc_maps or perf's events): frames (fr: UW_MAX of
 * them) and their count, with *why the reason the walk stopped. One rule
 * more than uw_event's: an rbp save slot below the frame's sp (an
 * epilogue past its pop, the CFI still naming the slot) means rbp is
 * unchanged, as the in-kernel walk reads it. */
struct uw_regs {
	uint64_t ip, sp, bp;
};
int uw_unwind_regs(struct uwstate *u, uint32_t pid, uint32_t tid, uint64_t ts,
		   const struct uw_regs *r, const void *stack, size_t len,
		   struct uframe *fr, enum stop_reason *why);
/* The name of process pid (its comm), or NULL unknown. */
const char *uw_comm(struct uwstate *u, uint32_t pid);

struct uw_stats {
	uint64_t rows_sframe; /* rows looked up in .sframe sections */
	uint64_t rows_cfi;    /* rows looked up in CFI (libdw) */
	/* Stack copy bytes (from the sampled rsp) a walk read: the most any
	 * walk that reached the outermost frame read (the copy size that
	 * served them all), and the last sample's (for a walk that stopped
	 * as STOP_STACK_SHORT, up to the end of the slot it wanted). */
	uint64_t stack_need_max;
	uint64_t stack_need_last;
	uint64_t stack_copy_max; /* the largest copy a sample carried */
};
void uw_stats(const struct uwstate *u, struct uw_stats *st);

#endif
