/* SPDX-License-Identifier: MIT */
/* Folded stacks (frame;frame;...;leaf COUNT) from `perf script` output. */
#ifndef JSF_FOLDED_H
#define JSF_FOLDED_H

#include <stdint.h>
#include <stdio.h>

struct folded_stats {
	uint64_t samples;
	uint64_t trace_leaf;	  /* leaf frame in trace code */
	uint64_t trace_leaf_main; /* ... whose chain reaches main */
	uint64_t through_trace;	  /* any frame in trace code */
	uint64_t through_main;	  /* ... whose chain reaches main */
};

struct folded;
struct folded *folded_new(void);
/* Read `perf script` text (default fields, callchains); 0 or -errno. */
int folded_read_perf_script(struct folded *f, FILE *in,
			    struct folded_stats *st);
/* Add one stack (root first, ';'-separated) with a count. */
int folded_add(struct folded *f, const char *stack, uint64_t count);
int folded_write(const struct folded *f, FILE *out);
/* Read folded text back (for the flame graph). */
int folded_read(struct folded *f, FILE *in);
/* Iterate stacks. */
void folded_each(const struct folded *f,
		 void (*cb)(const char *stack, uint64_t count, void *ctx),
		 void *ctx);
void folded_free(struct folded *f);
/*
 * A code load from the jitdump: frames in jitted-PID-N.so that perf left
 * unnamed are named by address and time (the latest load at or before the
 * sample whose code covers the address).
 */
int folded_add_load(struct folded *f, uint32_t pid, uint64_t index, uint64_t ts,
		    uint64_t code_addr, uint64_t lo, uint64_t hi,
		    const char *name);

/* An SVG flame graph of the stacks; 0 or -errno. */
int flame_svg(const struct folded *f, FILE *out, const char *title);

#endif
