/* SPDX-License-Identifier: MIT */
/*
 * The in-kernel stack sampler (issue 12, docs/PROFILE.md): a perf_event
 * BPF program on cpu-clock that unwinds each sampled user stack in the
 * kernel — trace code through the process's own live region (docs/ABI.md's
 * reader protocol, read with bpf_probe_read_user), ELF code through rows
 * of its objects loaded into BPF maps once per object (from unwind/), the
 * kernel part by the kernel's own walker — and streams one record per
 * sample to user space. This header is the library's face.
 *
 * Privileges: root, or CAP_BPF + CAP_PERFMON. Every call returns 0 or a
 * negative errno (libbpf style), with a message in the caller's buffer.
 */
#ifndef SMP_SAMPLER_H
#define SMP_SAMPLER_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "smp_abi.h"

struct smp;

struct smp_opts {
	size_t sz;	     /* sizeof(struct smp_opts) */
	uint32_t hz;	     /* samples per second per CPU; 0: 99 */
	uint32_t raw_every;  /* debug: also copy registers and stack of one
				sample in raw_every (0: never) */
	int all;	     /* sample every process (else only watched ones):
				each new process is watched as its first
				samples arrive (rate-limited; up to
				max_procs), its samples until then are the
				leaf alone (SMP_F_UNWATCHED) */
	uint32_t max_frames; /* 0: SMP_MAX_FRAMES */
	/* appended (sz tells): */
	int follow;		 /* watch the children (fork) of watched
				    processes: each with the parent's
				    mappings at once, then its own mappings
				    and its own region */
	uint32_t max_procs;	 /* watched processes at most (0: 1024; at
				    most 4096): smp_watch past it -ENOSPC,
				    counted in smp_stats' procs_full */
	uint32_t kstack_entries; /* the kernel stack map's size (0: 16384) */
	int no_lua; /* the Lua walk off: no process's VM layout given to the
		       program (no SMP_F_LUA records, no VM states); for
		       measuring what the walk costs */
};

/* Load, verify and attach the program (one cpu-clock perf event per CPU).
 * -EPERM: no privilege; -ENOSYS/-EOPNOTSUPP: no BPF or no BTF; msg says
 * which, in one line. */
int smp_open(struct smp **out, const struct smp_opts *o, char *msg,
	     size_t msglen);

/* Watch process pid: its executable mappings (from /proc/PID/maps) and
 * their objects' rows loaded, and its region (found by docs/ABI.md §8,
 * jsf_region_find; or `region` if not NULL) given to the program. A
 * process without a region is still sampled (its trace frames stop with
 * SMP_STOP_NO_REGION). Call again to refresh (NULL: the region given
 * before, else discovery).
 *
 * Lifecycle (the program's tracepoints, smp_abi.h's smp_proc_ev): the
 * user side re-reads the mappings by itself at exec (and drops a region
 * given for the old image), at the first unknown pc after an executable
 * mmap/mprotect (else at most every 250 ms), looks for the region again
 * while samples stop with "no region" (every 100 ms); at exit the entry is
 * freed (kernel and user side). A process is its pid and its start time
 * (/proc/PID/stat): a new process with an old pid is never walked through
 * the old one's tables nor matched with its region; it is not watched
 * unless watched anew (or picked up by opts.all / opts.follow). */
int smp_watch(struct smp *s, int pid, const char *region, char *msg,
	      size_t msglen);
/* Load the rows of the ELF object at path (and, with deps, of the program
 * interpreter and the libraries it needs, found as the dynamic loader's
 * default search would: DT_RUNPATH/DT_RPATH with $ORIGIN, then the system
 * directories) ahead of any process mapping it: a watch that meets them
 * later finds them loaded (keyed by device and inode) instead of reading
 * their tables then, while the process runs on an empty table (libc's
 * take ~200 ms here). How many objects were loaded; a file that is no ELF
 * object counts none. (Added for issue 12: `profile -- CMD`.) */
int smp_preload(struct smp *s, const char *path, int deps);

/* Stop watching pid (its exit). */
void smp_unwatch(struct smp *s, int pid);

/* The pids watched now (up to max of them in pids): how many there are. */
int smp_pids(const struct smp *s, int *pids, int max);

/* One sample as delivered: the record and, when flags has SMP_F_RAW, its
 * raw copy (NULL otherwise). Kernel frames resolved from the stack map. */
struct smp_event {
	const struct smp_sample *s;
	const struct smp_raw *raw;
	const uint64_t *kframes; /* kernel pcs, leaf first */
	uint32_t nkframes;
	/* appended: the VM state and Lua frames (SMP_F_LUA; NULL otherwise),
	 * for a process whose region publishes its VM's layout */
	const struct smp_lua *lua;
};
typedef int (*smp_event_fn)(const struct smp_event *e, void *ctx);

/* Deliver what has arrived (waiting up to timeout_ms): how many samples,
 * or a negative errno. A nonzero return from fn stops and is returned. */
int smp_poll(struct smp *s, int timeout_ms, smp_event_fn fn, void *ctx);

/* The Lua frames of an event (e->lua), innermost first, resolved through
 * /proc/PID/mem with the layout the region published. A frame is named
 * only from the prototype the kernel saw at the sample (smp_lframe.name
 * ..): as read now, or as kept from an earlier sample the kernel saw the
 * same; its memory may hold another prototype since. How many were
 * written to out (up to max), or a negative errno. Strings stay valid
 * until the next call on s. */
struct smp_luaframe {
	const char *chunk;  /* the chunk name ("@" and "=" stripped); NULL: a
			       C function or builtin */
	uint32_t line;	    /* the line at the frame's pc, 0 unknown */
	uint32_t firstline; /* the function's first line (0: a main chunk) */
	uint32_t seg;	    /* VM entry, 0 innermost (smp_lframe.seg) */
	uint32_t flags;	    /* SMP_LF_* */
	uint8_t ffid;	    /* C: the builtin id (0: a C function) */
	uint64_t pt;	    /* the prototype (Lua), or the GCfunc (C) */
	uint32_t at; /* the index in e->s->frames of the native frame its VM
			entry runs in (in the interpreter, or a trace: the
			frame goes leafward of an interpreter frame, rootward
			of a trace's), UINT32_MAX: not in the native walk */
	uint64_t cf; /* its VM entry's C frame (smp_lframe.cf), 0 unknown */
};
int smp_lua_frames(struct smp *s, const struct smp_event *e,
		   struct smp_luaframe *out, int max);
/* The same, placed on another native walk of the sample's stack (user
 * space's, from its stack copy, where the kernel's was cut short): nf
 * frames fr, each one's sp, complete to the outermost frame. Each frame
 * goes where the kernel would have put it (by its C frame's address: in
 * the stack of the VM entry's native frame, at or above its sp and below
 * the next frame's); one it cannot place is left out, and the frames
 * after it. */
int smp_lua_frames_on(struct smp *s, const struct smp_event *e,
		      const struct smp_frame *fr, const uint64_t *sp,
		      uint32_t nf, struct smp_luaframe *out, int max);

/* The per-trace VM-state counts of pid (smp_abi.h's smp_vmval by
 * smp_vmslot), for every trace seen: up to max rows, how many there are
 * (or a negative errno). */
struct smp_vmrow {
	uint32_t trace;
	uint64_t n[SMP_VM__N];
};
int smp_vmprof(const struct smp *s, int pid, struct smp_vmrow *rows, int max);

/* Counters of the program and the user side. */
struct smp_stats {
	uint64_t samples, lost;	    /* delivered; dropped (ring full) */
	uint64_t stop[SMP_STOP__N]; /* per reason */
	uint64_t raw;		    /* raw copies */
	uint64_t run_ns, run_cnt;   /* the kernel's bpf_stats for the program,
				       when enabled (else 0) */
	uint32_t objects, rows;	    /* ELF objects and rows loaded */
	/* appended: */
	uint64_t kstack_errors;	      /* in-kernel samples whose kernel stack
					 was not kept (bpf_get_stackid < 0) */
	uint64_t kstack_collisions;   /* of them: the stack map's bucket held
					 another stack (-EEXIST) */
	uint64_t execs, exits, forks; /* lifecycle of watched processes */
	uint64_t ev_lost;	      /* lifecycle records lost (ring full) */
	uint64_t reused;	      /* samples of a new process with a watched
					 pid (the old entry dropped) */
	uint64_t procs_full;	      /* processes not watched: max_procs or
					 the kernel table reached */
	uint64_t auto_watched;	      /* processes watched by opts.all or
					 opts.follow */
	uint64_t refreshes;	      /* mappings re-read by the user side */
	uint32_t procs, kprocs;	      /* watched: user side, kernel table */
	uint64_t lua_samples;	      /* samples with a Lua record */
	uint64_t lua_stop[SMP_LSTOP__N]; /* their Lua walks, per reason */
	uint32_t lua_procs;	 /* processes whose VM layout was given */
	uint32_t verified_insns; /* the verifier's processed instructions of
				    the sample program (bpf_prog_info; 0:
				    unknown), of its limit of 1,000,000 */
};
void smp_stats(const struct smp *s, struct smp_stats *st);

/* Detach and free. */
void smp_close(struct smp *s);

/* A printable name for a stop reason ("?" outside the enum). */
const char *smp_stop_name(unsigned stop);

#endif
