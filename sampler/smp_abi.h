/* SPDX-License-Identifier: MIT */
/*
 * What the in-kernel sampler (sampler/sampler.bpf.c) and its user side
 * (sampler/sampler.c) share: the BPF maps' keys and values and the
 * records the program writes to its ring buffers. Fixed-width types only
 * (__u64 & co. come from vmlinux.h in the BPF program and from
 * <linux/types.h> in user space). docs/PROFILE.md describes the design.
 */
#ifndef SMP_ABI_H
#define SMP_ABI_H

#define SMP_MAX_FRAMES 128  /* user frames walked per sample (bpf_loop) */
#define SMP_MAX_MAPS 256    /* executable mappings per process */
#define SMP_RAW_STACK 16384 /* bytes of user stack in a raw copy */

/* Why a sample's user walk ended. */
enum smp_stop {
	SMP_STOP_OUTERMOST = 0, /* clean: the outermost frame (RA 0 / the
				   row says the caller is undefined) */
	SMP_STOP_NO_MAPPING,	/* pc in no known executable mapping */
	SMP_STOP_NO_ROWS,	/* the mapping's object has no table loaded */
	SMP_STOP_NO_ROW,	/* the object's table has no row for pc */
	SMP_STOP_UNSUP_RULE,	/* a row the program cannot follow */
	SMP_STOP_READ,		/* a stack read faulted (not resident) */
	SMP_STOP_BUSY,		/* the region was being rewritten (odd or
				   changing generation after the retries) */
	SMP_STOP_NOT_RESIDENT,	/* a region page was not present */
	SMP_STOP_NO_REGION,	/* anonymous code, and the process has no
				   region */
	SMP_STOP_NO_TRACE,	/* anonymous code in no live region function */
	SMP_STOP_CORRUPT,	/* a region bounds check failed */
	SMP_STOP_DEPTH,		/* SMP_MAX_FRAMES reached */
	SMP_STOP_LOOP,		/* the stack pointer did not grow */
	SMP_STOP_KERNEL_ONLY,	/* a kernel thread */
	SMP_STOP__N
};

/* Record kinds in the ring buffer. */
enum smp_kind {
	SMP_REC_SAMPLE = 1, /* struct smp_sample + nframes struct smp_frame */
	SMP_REC_RAW = 2,    /* struct smp_raw: registers and a stack copy of
			       the sample with the same id (debug mode, or a
			       sample whose walk met an unknown mapping) */
	SMP_REC_PROC = 3,   /* struct smp_proc_ev: a watched process
			       exec'd, exited or forked */
	SMP_REC_LUA = 4,    /* struct smp_lua + nlframes struct smp_lframe:
			       the VM state and Lua frames of the sample with
			       the same id (a process whose region publishes
			       the LuaJIT layout, docs/ABI.md 1.6) */
};

/* One user frame. fn_start != 0: pc is in trace code, in the region
 * function that starts there (the user side names it as of the sample's
 * time); 0: an ELF frame (or the last, unresolved pc). */
struct smp_frame {
	__u64 pc; /* leaf: the exact pc; callers: the return address */
	__u64 fn_start;
};

struct smp_sample {
	__u32 kind; /* SMP_REC_SAMPLE */
	__u32 cpu;
	__u64 id;      /* per-CPU counter << 8 | cpu: pairs a raw copy */
	__u64 time_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 pid, tid;
	__s32 kstack; /* bpf_get_stackid of the kernel stack, < 0 none */
	__u16 nframes;
	__u16 stop;    /* enum smp_stop */
	__u32 flags;   /* SMP_F_* */
	__u32 retries; /* region reads retried in this sample */
	struct smp_frame frames[SMP_MAX_FRAMES];
};
#define SMP_F_RAW                                                              \
	1		  /* a SMP_REC_RAW record of this id goes with it (the \
			     program writes it just before the sample; the     \
			     user side pairs them by id) */
#define SMP_F_IN_KERNEL 2 /* the sample interrupted kernel code */
#define SMP_F_MAPS_CHANGED                                              \
	4 /* the process mapped or mprotected code executable since its \
	     table was last written (a NO_MAPPING walk: re-read at once) */
#define SMP_F_UNWATCHED \
	8 /* an unwatched process's sample (opts.all): the leaf alone */
#define SMP_F_LUA                                                        \
	16 /* a SMP_REC_LUA record of this id goes with it (written just \
	      before the sample) */

/* ---- Lua frames (LuaJIT: the region's LJVM area, docs/ABI.md 1.6) */
#define SMP_MAX_LFRAMES 64
/* Why a Lua walk ended. */
enum smp_lstop {
	SMP_LSTOP_BOTTOM = 0, /* clean: the thread's first frame */
	SMP_LSTOP_NO_STATE,   /* no current thread (cur_L 0), or no base */
	SMP_LSTOP_READ,	      /* a read faulted */
	SMP_LSTOP_BAD_FUNC,   /* a frame's function slot is no function */
	SMP_LSTOP_BAD_LINK,   /* a link that does not go down the stack, or
				 a return pc outside its caller's bytecode */
	SMP_LSTOP_DEPTH,      /* SMP_MAX_LFRAMES reached */
	SMP_LSTOP__N
};
/* One Lua frame, innermost first. pt != 0: a Lua function's prototype
 * (GCproto address) and pc the bytecode address the frame is at (the
 * interpreter's PC or a callee's return pc: the instruction after the
 * one running), 0 when not known (inside a trace, a frame reached through
 * a pcall/C/continuation link, an unverified innermost pc); pt == 0: a C
 * function or builtin (pc: its GCfunc, ffid its builtin id, 0: C). seg:
 * which VM entry the frame runs in, 0 the innermost: segment k belongs
 * above the k-th native frame in the interpreter or a trace (with the C
 * frame offsets, cf_prev: the one whose stack holds the frame's C frame;
 * 0xffff: none known, the user side places it beyond the native walk). */
struct smp_lframe {
	__u64 pt, pc;
	__u32 seg;
	__u8 ffid, flags; /* SMP_LF_* */
	__u16 pad;
	/* the C frame of the frame's VM entry (0: not known): the address
	 * seg was placed by, so that user space can place the frame the
	 * same way on a native walk of its own (the kernel's cut short) */
	__u64 cf;
	/* (pt != 0) the prototype as it was at the sample: its chunk name
	 * (the GCstr, 0: not read), first line and sizebc, the name's hash
	 * (the 4 bytes before its length: LuaJIT's GCstr hash, of bytes
	 * across it; rewritten only when a string-table resize moves the
	 * string between LuaJIT's two hashes, a flood of collisions: its
	 * frame then goes unnamed, never misnamed) and length, and its
	 * first and last 8 bytes (as far as it goes). User space
	 * reads the name later, when the VM may have freed the prototype and
	 * put another in its place (a chunk loaded, run, collected, the next
	 * one of its size loaded), and names the frame only if what it
	 * reads is this (sampler.c, lua_frames). */
	__u64 name;
	__u32 firstline, sizebc, namehash, namelen; /* hash, len: one read */
	__u8 head[8], tail[8];
};
#define SMP_LF_TRACE 1 /* the frame a trace runs in (g->jit_base) */
/* The VM state (g->vmstate: < 0 ~LJ_VMST_*: -1 interpreted, -2 C, -3 GC,
 * -4 trace exit, -5 recording, -6 optimizing, -7 assembling; > 0 the
 * trace running) and the Lua frames. */
struct smp_lua {
	__u32 kind; /* SMP_REC_LUA */
	__u32 cpu;
	__u64 id;
	__s32 vmstate;
	__u16 nlframes, lstop; /* enum smp_lstop */
	__u64 L;	       /* the current lua_State */
	/* appended (issue 13, the VM-state profile): what the program
	 * counted this sample as in map vmprof — the trace charged (0:
	 * none, no trace has run on the thread yet) and the slot (enum
	 * smp_vmslot; SMP_VM__N: not counted) */
	__u32 vmtrace, vmslot;
	struct smp_lframe lf[SMP_MAX_LFRAMES];
};
/* The layout of a process's VM (map luavms, key tgid), from its region. */
struct smp_luavm {
	__u64 g, vm_start, vm_end;
	__u16 g_vmstate, g_cur_L, g_jit_base, L_base, L_stack, L_cframe, cf_pc,
	    fn_ffid, fn_pc, pt_size, pt_sizebc, pt_chunkname, pt_firstline,
	    pt_numline, pt_lineinfo, str_len, str_data, flags;
	/* appended: the C frame's previous one and its (int32) nres
	 * (CFRAME_OFS_PREV, CFRAME_OFS_NRES); 0: not given (an area of 72
	 * bytes), then no segment for frameless C frames */
	__u16 cf_prev, cf_nres;
};
/* Per trace and VM state (map vmprof, key {tgid, trace}): samples whose
 * vmstate was the trace (head/loop split by the pc against the trace's
 * loop offset is the user side's: the kernel counts in-trace vs. FFI,
 * and says per sample which it counted in smp_lua.vmtrace/vmslot), and
 * the interpreter/C/GC/exit/compiler samples after it last ran on that
 * thread. */
struct smp_vmkey {
	__u32 pid, trace;
};
enum smp_vmslot {
	SMP_VM_TRACE = 0, /* the pc in trace code (the region's function) */
	SMP_VM_FFI,	  /* vmstate the trace, the pc outside it: C called
			     from the trace */
	SMP_VM_INTERP,	  /* interpreted, charged to the last trace */
	SMP_VM_C,	  /* C functions, charged to the last trace */
	SMP_VM_GC,	  /* GC (the trace's own or after it) */
	SMP_VM_EXIT,	  /* trace exit handling */
	SMP_VM_JIT,	  /* recording/optimizing/assembling */
	SMP_VM_JGC,	  /* appended: GC entered from trace code (vmstate
			     GC, a trace frame on the native stack) */
	SMP_VM__N
};
struct smp_vmval {
	__u64 n[SMP_VM__N];
};

/* Process lifecycle (tracepoints sched_process_exec/exit/fork): written
 * for watched processes only (fork: with cfg_follow or cfg_all, and only
 * a new process, not a thread). The program has already acted when the
 * record arrives: at exec the process's mappings and region are cleared
 * (its samples stop NO_MAPPING until the user side has read the new
 * image's), at exit its entry is deleted, at fork the child's entry is
 * the parent's mappings without its region (a region serves its own
 * producer only). */
enum smp_proc_kind {
	SMP_EV_EXEC = 1,
	SMP_EV_EXIT = 2,
	SMP_EV_FORK = 3,
};
struct smp_proc_ev {
	__u32 kind; /* SMP_REC_PROC */
	__u32 ev;   /* enum smp_proc_kind */
	__u32 pid;  /* the process (fork: the child) */
	__u32 ppid; /* fork: the parent; exec: the exec'ing thread's old tid */
	__u64 time_ns;
	__u64 start_ticks; /* the process's start, as /proc/PID/stat's field
			      22 (clock ticks since boot): with pid, the
			      process's identity */
	char comm[16];
};

struct smp_raw {
	__u32 kind; /* SMP_REC_RAW */
	__u32 cpu;
	__u64 id;
	__u32 pid, tid;
	/* the sampled thread's user registers (bpf_task_pt_regs) */
	__u64 ip, sp, bp, bx, r12, r13, r14, r15;
	__u32 len; /* bytes of stack copied from regs' rsp */
	__u32 pad;
	__u8 stack[SMP_RAW_STACK];
};

/* ---- the program's maps (sampler.c fills them) ---- */

/* One executable mapping of a watched process: pc in [start, end); an
 * ELF object's vaddr is pc - bias. */
#define SMP_OBJ_ANON 0xffffffffu /* anonymous code: the region */
#define SMP_OBJ_NONE 0xfffffffeu /* a file without rows */
struct smp_map {
	__u64 start, end, bias;
	__u32 obj; /* index into the objs map, or SMP_OBJ_* */
	__u32 pad;
};
/* Per watched process (hash map procs, key tgid): its region (producer
 * address and mapped size; 0: none) and its sorted mappings. */
struct smp_proc {
	__u64 region_base, region_size;
	__u32 nmaps, flags; /* SMP_PROC_* */
	struct smp_map maps[SMP_MAX_MAPS];
	__u64 start_ticks; /* the process this entry describes (/proc/PID/stat
			      field 22; 0: unchecked): a sample of another
			      process with the same pid (pid reuse) is never
			      walked through it: the entry is deleted */
};
#define SMP_PROC_MAPS_CHANGED                                       \
	1		/* set by the program at an executable mmap \
			   or mprotect; cleared by a rewrite */
#define SMP_USER_HZ 100 /* /proc's clock ticks (USER_HZ) */
/* An ELF object's rows: the slice [first, first + n) of the rows map. */
struct smp_obj {
	__u32 first, n;
};
/* One row: it holds from pc (an ELF vaddr) to the next row's pc. */
enum smp_rule {
	SMP_RULE_NONE = 0, /* no row covers the pc */
	SMP_RULE_SP,	   /* CFA = rsp + cfa_off */
	SMP_RULE_FP,	   /* CFA = rbp + cfa_off */
	SMP_RULE_PLT,	   /* CFA = rsp + cfa_off + ((pc & 15) >= plt_k) * 8 */
	SMP_RULE_UNSUP,	   /* a rule the program cannot follow */
};
#define SMP_ROW_FP_SAVED 1 /* rbp saved at CFA + fp_off (else unchanged) */
#define SMP_ROW_RA_UNDEF 2 /* the outermost frame */
struct smp_row {
	__u32 pc;
	__s32 cfa_off;
	__s16 fp_off, ra_off; /* RA at CFA + ra_off */
	__u8 rule, flags, plt_k, pad;
};
#define SMP_MAX_OBJS 4096
#define SMP_MAX_ROWS (1u << 21)

/* The program's counters (a per-CPU array of one). */
struct smp_counters {
	__u64 samples; /* samples of watched processes */
	__u64 lost;    /* sample records the ring buffer had no room for */
	__u64 raw, raw_lost;
	__u64 retries;	  /* region lookups retried */
	__u64 kstack_err; /* bpf_get_stackid failures */
	__u64 stop[SMP_STOP__N];
	__u64 last_raw_ns;    /* rate limit of the raw copies of NO_MAPPING */
	__u64 seq;	      /* per-CPU sample counter */
	__u64 kstack_collide; /* of kstack_err: -EEXIST, the stack map's
				 bucket held another stack */
	__u64 execs, exits, forks; /* lifecycle records of watched processes */
	__u64 ev_lost;	 /* lifecycle records the ring had no room for */
	__u64 reused;	 /* samples of a pid whose entry described an
			    earlier process (entry deleted) */
	__u64 fork_full; /* children not entered: the table full */
};

#endif
