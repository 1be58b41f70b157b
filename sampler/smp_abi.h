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

#define SMP_MAX_FRAMES 128 /* user frames walked per sample (bpf_loop) */
#define SMP_MAX_MAPS 256   /* executable mappings per process */
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
	__u16 stop;  /* enum smp_stop */
	__u32 flags; /* SMP_F_* */
	__u32 retries; /* region reads retried in this sample */
	struct smp_frame frames[SMP_MAX_FRAMES];
};
#define SMP_F_RAW 1	/* a SMP_REC_RAW record of this id follows */
#define SMP_F_IN_KERNEL 2 /* the sample interrupted kernel code */

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

#endif
