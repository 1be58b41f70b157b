/* SPDX-License-Identifier: MIT */
/* A reader for perf.data (file mode), from the documented format
 * (linux/perf_event.h, perf's Documentation/perf.data-file-format.txt).
 * Everything is bounds-checked: a damaged file gives an error message,
 * never a crash. */
#ifndef JSF_PERFDATA_H
#define JSF_PERFDATA_H

#include <stddef.h>
#include <stdint.h>

struct pd_sample {
	uint32_t pid, tid;
	uint64_t time, ip;
	uint64_t nr_callchain;
	const uint64_t *callchain; /* unaligned-safe: read with memcpy */
	uint64_t regs_abi;	   /* 0: no user registers */
	uint64_t regs_mask;
	const unsigned char *regs; /* popcount(mask) u64 in bit order */
	uint64_t stack_size;	   /* valid bytes of the stack copy */
	const unsigned char *stack;
	/* pd_open reads a stack copy only as far as asked: its first
	 * *stack_have bytes are at stack, pd_stack_need reads on. NULL (from
	 * pd_open_mem, or a sample made up): all stack_size are there. */
	const uint64_t *stack_have;
	struct perfdata *src;
};

struct pd_mmap {
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	uint32_t prot; /* 0 if unknown (MMAP) */
	int has_build_id;
	unsigned char build_id[20];
	uint8_t build_id_size;
	const char *filename; /* NUL-terminated inside the record */
	uint64_t time;
};

enum pd_kind { PD_SAMPLE, PD_MMAP, PD_COMM, PD_FORK, PD_EXIT };

struct pd_event {
	enum pd_kind kind;
	uint64_t time;
	union {
		struct pd_sample s;
		struct pd_mmap m;
		struct {
			uint32_t pid, tid;
			int exec;
			const char *comm;
		} comm;
		struct {
			uint32_t pid, ppid, tid, ptid;
		} fork;
	} u;
};

struct perfdata;

/* The events' pointers (names, callchain, registers, stack) are valid
 * until pd_close with pd_open_mem; with pd_open only during the callback
 * that gets them. */

/* Open and check the header and attributes; err gets a message. */
int pd_open(struct perfdata **out, const char *path, char *err, size_t errlen);
/* Parse a buffer (not copied; must outlive the handle). */
int pd_open_mem(struct perfdata **out, const void *buf, size_t len, char *err,
		size_t errlen);
/* Call cb for every event, in time order (perf's records are ordered only
 * within rounds). Returns 0, the cb's non-zero return, or -EBADMSG with a
 * message in err. */
int pd_each(struct perfdata *pd, int (*cb)(const struct pd_event *e, void *ctx),
	    void *ctx, char *err, size_t errlen);
/* pd_each, for a callback whose effects reset(ctx) undoes: a file of
 * pd_open in time order (as `perf inject` writes it) is then read in one
 * pass instead of two (pass 1 reads every record's header, before any
 * event, to sort them: here each record is passed on once the next one's
 * header shows that it comes first). What the callback gets is the same
 * as with pd_each, and so is the result: where the file is not in time
 * order, or is damaged, the events passed on are undone by reset and
 * pd_each does it all. */
int pd_each_restart(struct perfdata *pd,
		    int (*cb)(const struct pd_event *e, void *ctx),
		    void (*reset)(void *ctx), void *ctx, char *err,
		    size_t errlen);
/* Offsets into the stack copy (n <= PD_PREFETCH) that pd_each prefetches
 * in the samples a few ahead of the one its callback has: what the last
 * walk read (uw_stack_lines). Only a hint: no effect on what is read. */
enum { PD_PREFETCH = 16 };
void pd_prefetch_stack(struct perfdata *pd, const uint32_t *off, size_t n);
/* Make s->stack[0, end) readable (end <= s->stack_size): 0, or -1 (end
 * beyond the copy, or a read error). */
int pd_stack_need(const struct pd_sample *s, uint64_t end);
uint64_t pd_sample_period_ns(const struct perfdata *pd);
/* The user stack bytes asked for per sample (the attr's sample_stack_user,
 * what `perf record --call-graph dwarf,N` set); 0 without stack copies. */
uint32_t pd_sample_stack_user(const struct perfdata *pd);
/* The clock of the samples' times: the attr's clockid when perf was given
 * one (-k: CLOCK_MONOTONIC is 1), else -1 (perf's own clock). */
int pd_clockid(const struct perfdata *pd);
void pd_close(struct perfdata *pd);

/* x86-64 perf register numbers (bit index in sample_regs_user) */
enum { PD_REG_BP = 6, PD_REG_SP = 7, PD_REG_IP = 8 };
/* The value of register `reg` in a sample; 0 if absent (then *ok = 0). */
uint64_t pd_reg(const struct pd_sample *s, int reg, int *ok);

#endif
