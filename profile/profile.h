/* SPDX-License-Identifier: MIT */
/* Profiles: unwound samples aggregated by stack, written as folded stacks,
 * SVG and HTML flame graphs, and pprof; every file written atomically (a
 * temp file in the destination's directory, renamed over it). */
#ifndef JSF_PROFILE_H
#define JSF_PROFILE_H

#include "folded.h"

#include <stddef.h>
#include <stdint.h>

/* PF_LUA: a Lua function a trace stands for, named "chunk:first" (first:
 * the function's first line, 0 for a main chunk; pprof's
 * Function.start_line), file the chunk, line the current line, no
 * mapping; "_[l]" in folded stacks. */
enum pframe_kind { PF_ELF = 0, PF_JIT = 1, PF_UNKNOWN = 2, PF_LUA = 3 };

struct pframe {
	const char *name; /* symbol, "TRACE_n::chunk:line", or NULL -> [addr] */
	const char *file; /* source file of the line, or NULL */
	uint32_t line;	  /* source line, 0 unknown */
	uint64_t addr;	  /* the frame's pc (callers: return address - 1) */
	const char *mapping;  /* ELF path, "[jit]" for traces, or NULL */
	const char *build_id; /* hex build-id of the mapping, or NULL */
	uint64_t map_start, map_end, map_pgoff; /* the mapping, 0 if unknown */
	enum pframe_kind kind;
};

struct prof;
/* period_ns: sampling period (1e9 / freq), for pprof's period and values */
struct prof *prof_new(uint64_t period_ns);
/* One sample (or count identical ones): frames[0] is the LEAF, frames[n-1]
 * the root (e.g. main / _start). Strings are copied. 0 or -errno. */
int prof_add(struct prof *p, const struct pframe *frames, uint32_t n,
	     uint64_t count, const char *comm);
/* prof_add, with stable[i] (stable NULL: all 0) the PF_STABLE_* bits of
 * frames[i]: those of its strings that stay put (the same bytes at the
 * same address, never freed) for as long as the profile takes samples,
 * which prof_add then knows again by their address alone. */
enum {
	PF_STABLE_NAME = 1,
	PF_STABLE_FILE = 2,
	PF_STABLE_MAPPING = 4,
	PF_STABLE_BUILD_ID = 8,
	PF_STABLE_ALL = 15
};
int prof_add_stable(struct prof *p, const struct pframe *frames,
		    const uint8_t *stable, uint32_t n, uint64_t count,
		    const char *comm);
/* prof_add_stable, with *stack (not NULL) set to the stack's number (0:
 * none was added: count 0), for prof_add_again. */
int prof_add_stable_at(struct prof *p, const struct pframe *frames,
		       const uint8_t *stable, uint32_t n, uint64_t count,
		       const char *comm, uint32_t *stack);
/* count more of the stack numbered stack (from prof_add_stable_at on p):
 * as prof_add of the same frames and comm again. 0 or -EINVAL. */
int prof_add_again(struct prof *p, uint32_t stack, uint64_t count);
/* Folded stacks: "comm;root;...;leaf count", trace frames suffixed "_[j]",
 * Lua frames "_[l]". */
int prof_write_folded(const struct prof *p, const char *path);
int prof_write_svg(const struct prof *p, const char *path, const char *title);
/* Both, from one folding of the profile: prof_write_folded's result,
 * and prof_write_svg's in *svg_err. */
int prof_write_folded_svg(const struct prof *p, const char *folded_path,
			  const char *svg_path, const char *title,
			  int *svg_err);
/* The HTML flame graph, d3-flame-graph inlined with the profile (works
 * offline). The viewer's files are read from $JITSFRAME_VIEWER, else from
 * viewer/ next to the running executable, else ../share/jitsframe/viewer
 * from it; -ENOENT, and no file, when they are not there: write
 * prof_write_html_unavailable's page instead. */
int prof_write_html(const struct prof *p, const char *path, const char *title);
/* The HTML page for when the viewer is missing: it says that the
 * interactive flame graph is unavailable, where the viewer was looked for
 * and how to get it, and names the other profile files. */
int prof_write_html_unavailable(const struct prof *p, const char *path,
				const char *title);
/* Where prof_write_html finds the viewer: 0 and its directory in buf, or
 * -ENOENT and where it looked, as text for a message ("FILE in DIR and
 * DIR"). */
int prof_viewer_where(char *buf, size_t size);
/* pprof: mappings in the order their frames were first added, except that
 * the mappings of the file prof_set_main named come first (pprof shows the
 * first mapping as the main binary). */
int prof_write_pprof(const struct prof *p, const char *path);
/* The main binary's path (the recorded program's executable; NULL: none):
 * its mappings lead profile.pb.gz's. 0 or -ENOMEM. */
int prof_set_main(struct prof *p, const char *path);
void prof_free(struct prof *p);

/* Write buf to path atomically (the writer above, fsync'ed before the
 * rename; mode 0600); 0 or -errno. */
int prof_write_file(const char *path, const void *buf, size_t len);
/* RaptorJIT's vmprofile (-p FILE; profile/vmprof.c): a header u32 magic,
 * u16 major, u16 minor, then uint64_t count[4097][11] per trace number x
 * VM state; row 0 is the overflow/unattributed bucket. */
#define PF_VMP_MAGIC 0x1d50f007u
#define PF_VMP_MAJOR 4
#define PF_VMP_TRACES 4097
#define PF_VMP_STATES 11
#define PF_VMP_HEADER 8
#define PF_VMP_SIZE (PF_VMP_HEADER + PF_VMP_TRACES * PF_VMP_STATES * 8)
/* The states in the file's order (interp, c, gc, exit, record, opt, asm,
 * head, loop, jgc, ffi). */
extern const char *const pf_vmp_state[PF_VMP_STATES];
struct pf_vmprofile {
	uint16_t major, minor;
	uint64_t count[PF_VMP_TRACES][PF_VMP_STATES];
};
/* Parse a file's bytes / read a file: 0, or -EINVAL (a wrong magic, major
 * version or size; -errno for a file that cannot be read) with one
 * message in msg. */
int pf_vmprofile_parse(struct pf_vmprofile *out, const void *buf, size_t len,
		       char *msg, size_t msglen);
int pf_vmprofile_read(struct pf_vmprofile *out, const char *path, char *msg,
		      size_t msglen);
/* A set of interned byte strings (profile/intern.c): prof_intern returns
 * the one NUL-terminated copy of the n bytes at s (which may hold NULs of
 * their own), stable until prof_intern_free; NULL when out of memory. */
struct prof_intern;
struct prof_intern *prof_intern_new(void);
const char *prof_intern(struct prof_intern *t, const void *s, size_t n);
void prof_intern_free(struct prof_intern *t);
/* ---- the VM-state profile of LuaJIT (issue 13, docs/PROFILE.md "VM
 * states"): per (process, trace), the samples per state; the CLI fills it
 * (cli/vmstate.c), profile/vmstates.c keeps it and writes and reads its
 * file, DIR/vmprofile.json (a reader for hostile files) */
enum pf_vs {		     /* per trace: where its samples were */
	     PF_VS_HEAD = 0, /* in the trace's code before its loop */
	     PF_VS_LOOP,     /* in its loop */
	     PF_VS_FFI,	     /* vmstate the trace, pc outside it: C it called */
	     PF_VS_JGC,	     /* GC entered from the trace's code */
	     PF_VS_INTERP,   /* charged to the thread's last trace: */
	     PF_VS_C,
	     PF_VS_GC,
	     PF_VS_EXIT, /* trace exit handling */
	     PF_VS_RECORD,
	     PF_VS_OPT,
	     PF_VS_ASM,
	     PF_VS_TRACE, /* in the trace's code, head or loop not known */
	     PF_VS__N
};
extern const char *const pf_vs_name[PF_VS__N];
enum pf_vt { /* the VM's totals, as luajit -jp=v names them */
	     PF_VT_COMPILED = 0, /* head + loop + ffi + trace */
	     PF_VT_INTERP,	 /* interp */
	     PF_VT_C,		 /* c */
	     PF_VT_GC,		 /* gc + jgc */
	     PF_VT_JIT,		 /* exit + record + opt + asm */
	     PF_VT__N
};
extern const char *const pf_vt_name[PF_VT__N];
/* the total each state counts in (head, loop, ffi, trace: compiled; gc,
 * jgc: gc; exit, record, opt, asm: jit) */
extern const int pf_vt_of[PF_VS__N];
#define PF_VMS_LINES 8
struct pf_vms_line {
	char where[160]; /* chunk:line */
	uint64_t n;
};
struct pf_vms_row {
	uint32_t pid, trace; /* trace 0: before any trace ran */
	char name[200];	     /* TRACE_n::chunk:line, "" not seen */
	uint64_t n[PF_VS__N], total;
	struct pf_vms_line lines[PF_VMS_LINES]; /* in-trace samples' lines */
	int nlines;
	uint64_t lines_other;
};
struct pf_vms {
	struct pf_vms_row *rows;
	size_t nrows, caprows;
	uint64_t samples, no_vmstate, state[PF_VS__N];
	/* of them: samples in the jitsframe module's own code (its trace
	 * event handlers), per state */
	uint64_t mod_samples, mod_state[PF_VS__N];
	/* the totals as LuaJIT's own profiler (-jp=v) counts them: it cannot
	 * attribute a sample taken inside a VM event handler (the module's)
	 * and counts it with the next state it records; so here a module
	 * sample goes to the state of the process's next sample outside it */
	uint64_t jpv[PF_VT__N];
	struct {
		uint32_t pid;
		uint64_t n;
	} pend[16];
	int npend;
	uint32_t hz;
	double seconds;
};
/* The row of (pid, trace), added (zeroed) if new; NULL out of memory. */
struct pf_vms_row *pf_vms_rowof(struct pf_vms *v, uint32_t pid, uint32_t tr);
void pf_vms_free(struct pf_vms *v);
void pf_vms_totals(const struct pf_vms *v, uint64_t t[PF_VT__N]);
/* Rows by samples (most first), each row's lines by count. */
void pf_vms_sort(struct pf_vms *v);
/* DIR/vmprofile.json (version 1), sorted first. */
void pf_vms_json(struct pf_vms *v, FILE *o);
/* Read one back: 0, or -1 with one message in msg (not a version-1
 * file, malformed, a number out of range). */
int pf_vms_read(struct pf_vms *v, const char *path, char *msg, size_t ml);

#endif
