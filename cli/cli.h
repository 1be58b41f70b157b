/* SPDX-License-Identifier: MIT */
/* Shared by the jitsframe CLI's commands: exit codes, small helpers
 * (util.c), and the commands' entry points. */
#ifndef JSF_CLI_H
#define JSF_CLI_H

#include "profile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes (documented in `jitsframe --help` and docs/CLI.md). */
enum {
	EX_OK = 0,    /* success */
	EX_FAIL = 1,  /* the check failed / nothing matched */
	EX_USAGE = 2, /* bad command line */
	EX_INPUT = 3, /* cannot read the input or write the output */
};

/* Parse an unsigned number (decimal or 0x hex); false if malformed. */
bool cli_u64(const char *s, uint64_t *out);

/* getopt's '?' for `jitsframe CMD`: "jitsframe CMD: unknown or incomplete
 * option 'ARG'" and where --help is, on stderr; returns EX_USAGE. */
int cli_bad_option(const char *cmd, const char *arg);

/* Print s as a JSON string literal. */
void json_str(FILE *f, const char *s);

/* The directory of this program (readlink /proc/self/exe); 0 or -1. */
int cli_exe_dir(char *buf, size_t len);

/* The directory that holds `name` (jitsframe.so, jitsframe_replay.lua):
 * DIR/lua beside this program (the build tree), else DIR/../lib/lua/5.1
 * or DIR/../share/lua/5.1 (as installed). 0 found; 1 not found (out gets
 * the first candidate, for a message); -1 cannot find this program. */
int cli_lua_dir(char *out, size_t len, const char *name);

/* The fields of /proc/PID/stat after the command (" STATE PPID ..."),
 * read into buf; NULL if unreadable. */
const char *cli_proc_stat(int pid, char *buf, size_t len);

/* Add the current children of process `master` to pids[*n] (at most
 * max; those there already once): /proc/M/task/T/children, else a scan
 * of every process's parent. */
void cli_add_children(int *pids, int *n, int max, int master);

/* LUA_CPATH = DIR/?.so;<the old one, else ";" (Lua's default)>; 0 or
 * -errno. */
int cli_prepend_cpath(const char *dir);

/* The environment that makes a LuaJIT command run with the VM side on
 * (cli/run_cmd.c); 0 or an exit code, after a message naming `who`. */
int cli_vm_env(const char *who, const char *moddir, const char *region,
	       int replace, int quiet);

/* ---- RaptorJIT (cli/rjcli.c, docs/RAPTORJIT.md) */
enum {
	CLI_RJ_NO = 0,	/* not RaptorJIT */
	CLI_RJ_CLI = 1, /* RaptorJIT's standalone command: takes -a PATH */
	CLI_RJ_EMBED,	/* a program embedding RaptorJIT (Snabb) */
};
/* What the ELF program at exe is: RaptorJIT if it defines
 * lj_auditlog_open (its auditlog, in no LuaJIT), its standalone command if
 * it also holds that command's usage line for -a. */
int cli_rj_kind(const char *exe);
/* The auditlog path a RaptorJIT command line (args[0] the program) already
 * gives with -a, or NULL. */
const char *cli_rj_user_log(char *const *args, int nargs);
/* The processes of perf.data `data` that mapped the program exe (NULL:
 * any RaptorJIT program), in the order of their first such mapping; how
 * many (at most max), or -1 with a message in err. *clockid (if not NULL):
 * the samples' clock (pd_clockid: 1 CLOCK_MONOTONIC, -1 perf's own). */
struct cli_rj_proc {
	uint32_t pid;
	char exe[4096];
};
int cli_rj_procs(const char *data, const char *exe, struct cli_rj_proc *out,
		 int max, int *clockid, char *err, size_t errlen);
/* Open a RaptorJIT auditlog (rj_log_open); a damaged one with a note on
 * stderr, one that cannot be used with one message. An exit code. */
struct rj_log;
int cli_rj_open(const char *who, const char *path, struct rj_log **out);
/* A region from a RaptorJIT auditlog (a->log names it in messages): its
 * frame size checked against
 * binary (unless NULL), written to out (NULL: a memfd, kept open in
 * *keep) for process pid, created at create_ns (0: the log's first
 * event). Says what it made on stdout; refusals on stderr, one message.
 * An exit code. */
struct jsf_region;
struct cli_rj_args {
	const char *who, *log, *binary, *out;
	const char *jdir; /* write the traces' jitdump (names) here, or NULL */
	uint32_t pid;
	uint64_t create_ns;
};
int cli_rj_region(const struct cli_rj_args *a, struct rj_log *log,
		  struct jsf_region **keep);

int cmd_region(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_profile(int argc, char **argv);

/* `jitsframe report`'s work, for `report` and `record`: unwind the record
 * directory's samples, write its profiles, print the summary line.
 * Returns an exit code. */
struct report_opts {
	size_t sz;	    /* sizeof(struct report_opts) */
	const char *dir;    /* the record directory */
	const char *input;  /* perf.data; NULL: DIR/perf.data.raw, else
			       DIR/perf.data */
	const char *region; /* one region; NULL (and nregions 0): DIR/region
			       and DIR/region-PID, those there */
	const char *dump;   /* write every sample's frames here, or NULL */
	bool no_write;	    /* unwind and summarise only */
	const char *const *regions; /* more regions (each used for its own
				       process's samples only) */
	size_t nregions;
	/* out (optional): the processes with samples in JIT code but no
	 * region, up to noreg_max of them; *noreg_n their count */
	struct report_noreg {
		uint32_t pid;
		char comm[32];
	} * noreg;
	size_t noreg_max, *noreg_n;
	/* more regions, besides the default or named ones (a region made
	 * from a RaptorJIT auditlog: report --auditlog) */
	const char *const *extra_regions;
	size_t nextra;
	/* one more directory of jitdumps (jit-PID.dump) to name traces by */
	const char *jitdump_dir;
	int frames; /* enum cli_frames: which frames the profiles show */
	/* record: once the profiles are written, DIR's kallsyms copy reduced
	 * to the symbols they name (uw_trim_kallsyms) */
	bool trim_kallsyms;
};
int report_run(const struct report_opts *o);
/* The profiles of `report` and `profile` (cli/profout.c): an unwound
 * frame (i: its index, 0 the leaf) and a kernel pc as profile frames; the
 * four files (stacks.folded, flamegraph.svg, flamegraph.html,
 * profile.pb.gz) written into dir, titled `who` (messages too), the names
 * of those written appended to wrote (" name" each). EX_OK, or EX_FAIL
 * after a message per file that could not be written. */
struct uframe;
struct pframe;
struct prof;
struct uwstate;
void cli_pframe(const struct uframe *f, int i, struct pframe *p);
void cli_kframe(struct uwstate *u, uint64_t ip, int i, struct pframe *k);
/* --frames (report, profile): mixed (the default) every frame, each trace
 * frame with the Lua frames it stands for above it; lua: the Lua frames
 * alone (a trace frame only where its code has no exact Lua frames; no
 * native or kernel frames); native: no Lua frames (the output before
 * Lua frames). */
enum cli_frames { CLI_FRAMES_MIXED = 0, CLI_FRAMES_LUA, CLI_FRAMES_NATIVE };
/* The mode an argument names, or -1. */
int cli_frames_arg(const char *arg);
/* A sample's user frames fr[0..n) (leaf first) of process pid at ts as
 * profile frames into out (room for max), by mode: Lua frames from each
 * trace frame's source map (uw_lua_frames), innermost first, leaf side of
 * their trace frame, named "chunk:first" (the function's first line, as
 * `luajit -jp=F`). Their count. The names live until the next call. */
/* Frames to insert among them (the sampler's Lua frames of the
 * interpreter, profile_cmd.c): ex[i].f goes beside native frame ex[i].at,
 * leafward of it (after = false: the Lua function an interpreter frame
 * runs) or rootward (after = true: the Lua caller of a trace's VM entry);
 * ex sorted by at; at >= n: after the last frame. --frames native drops
 * them, lua keeps them. */
struct cli_extra {
	uint32_t at;
	bool after;
	struct pframe f;
};
uint32_t cli_user_frames(struct uwstate *u, uint32_t pid, uint64_t ts, int mode,
			 const struct uframe *fr, int n,
			 const struct cli_extra *ex, uint32_t nex,
			 struct pframe *out, uint32_t max);
/* The same, and in stable[k] (max of them) PF_STABLE_ALL for each Lua
 * frame out[k] whose strings stay put as long as u (uw_luaframe's func),
 * 0 for every other */
uint32_t cli_user_frames_st(struct uwstate *u, uint32_t pid, uint64_t ts,
			    int mode, const struct uframe *fr, int n,
			    const struct cli_extra *ex, uint32_t nex,
			    struct pframe *out, uint8_t *stable, uint32_t max);
/* The programs the samples' processes run (uw_exe), counted: the most
 * sampled is profile.pb.gz's main binary (report and profile). */
struct cli_exes {
	struct {
		char *path;
		uint64_t n;
	} e[16];
	size_t n;
};
void cli_exes_add(struct cli_exes *x, const char *path);
/* The most sampled program, or NULL if none was counted. */
const char *cli_exes_top(const struct cli_exes *x);
void cli_exes_free(struct cli_exes *x);
int cli_write_profiles(const struct prof *prof, const char *dir,
		       const char *who, char *wrote, size_t wlen);
/* `audit replay ...`, argv[0] = "replay" (cli/audit_replay.c) */
int audit_replay_main(int argc, char **argv);
int cmd_audit(int argc, char **argv);
/* Disassemble len bytes of machine code at addr with objdump (arch "x64",
 * "x86", "arm64"; raw: with the instruction bytes) from a temporary file
 * of mode 0600: EX_OK, or EX_INPUT after a message (objdump missing or
 * failed). */
int audit_disasm(const char *arch, const void *mc, uint32_t len, uint64_t addr,
		 bool raw);
/* `audit FILE ...` on a RaptorJIT auditlog (cli/audit_rj.c): the listing,
 * or with want >= 0 trace `want` (of epoch `epoch`, the count of
 * trace_flushall events before it; -1: its first). An exit code. */
int audit_rj_main(const char *path, int64_t want, int64_t epoch, int json,
		  int mcode);
/* ---- the VM-state profile of LuaJIT (cli/vmstate.c, issue 13; its table
 * and vmprofile.json: profile/vmstates.c, struct pf_vms) */
/* One sample as kept: the VM state and the kernel's charge (smp_lua),
 * the first trace frame of its native walk (tidx UINT32_MAX: none). */
struct cli_vmsample {
	uint32_t pid;
	int32_t vmstate;
	uint64_t time, tpc, tfs;
	uint32_t trace, slot, tidx;
	bool inmod; /* a native frame in the jitsframe module */
};
struct uwstate;
struct smp_event;
int cli_vmp_add(struct pf_vms *v, struct uwstate *u,
		const struct cli_vmsample *s);
int cli_vmp_event(struct pf_vms *v, struct uwstate *u,
		  const struct smp_event *e);
void cli_vmp_print(struct pf_vms *v, FILE *o, size_t top, const char *title);
/* Sample pids for iters intervals of interval_ms (iters 0: until they
 * exit), fn after each (last: the processes are gone or it was the last;
 * nonzero stops). An exit code (4: cannot sample). */
typedef int (*cli_vmp_fn)(struct pf_vms *v, void *ctx, int last);
int cli_vmp_live(const char *who, int *pids, int npids, uint32_t hz,
		 uint64_t interval_ms, uint64_t iters, cli_vmp_fn fn,
		 void *ctx);
/* -p LIST of processes that exist: how many, or -(an exit code) after a
 * message naming who */
int cli_pids_arg(const char *who, const char *list, int *pids, int max);
/* `top -p PID` (cli/top_cmd.c) */
int cmd_top(int argc, char **argv);

/* `vmprofile FILE ...` (cli/vmprofile_cmd.c) */
int cmd_vmprofile(int argc, char **argv);

#endif
