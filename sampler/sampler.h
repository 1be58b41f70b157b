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
	int all;	     /* sample every process (else only watched ones) */
	uint32_t max_frames; /* 0: SMP_MAX_FRAMES */
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
 * SMP_STOP_NO_REGION). Call again to refresh (the user side does it by
 * itself when samples meet an unknown mapping). */
int smp_watch(struct smp *s, int pid, const char *region, char *msg,
	      size_t msglen);
/* Stop watching pid (its exit). */
void smp_unwatch(struct smp *s, int pid);

/* One sample as delivered: the record and, when flags has SMP_F_RAW, its
 * raw copy (NULL otherwise). Kernel frames resolved from the stack map. */
struct smp_event {
	const struct smp_sample *s;
	const struct smp_raw *raw;
	const uint64_t *kframes; /* kernel pcs, leaf first */
	uint32_t nkframes;
};
typedef int (*smp_event_fn)(const struct smp_event *e, void *ctx);

/* Deliver what has arrived (waiting up to timeout_ms): how many samples,
 * or a negative errno. A nonzero return from fn stops and is returned. */
int smp_poll(struct smp *s, int timeout_ms, smp_event_fn fn, void *ctx);

/* Counters of the program and the user side. */
struct smp_stats {
	uint64_t samples, lost;	    /* delivered; dropped (ring full) */
	uint64_t stop[SMP_STOP__N]; /* per reason */
	uint64_t raw;		    /* raw copies */
	uint64_t run_ns, run_cnt;   /* the kernel's bpf_stats for the program,
				       when enabled (else 0) */
	uint32_t objects, rows;	    /* ELF objects and rows loaded */
};
void smp_stats(const struct smp *s, struct smp_stats *st);

/* Detach and free. */
void smp_close(struct smp *s);

/* A printable name for a stop reason ("?" outside the enum). */
const char *smp_stop_name(unsigned stop);

#endif
