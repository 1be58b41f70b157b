/* SPDX-License-Identifier: MIT */
/* Profiles: unwound samples aggregated by stack, written as folded stacks,
 * SVG and HTML flame graphs, and pprof. */
#ifndef JSF_PROFILE_H
#define JSF_PROFILE_H

#include "folded.h"

#include <stddef.h>
#include <stdint.h>

enum jsf_pframe_kind { JSF_PF_ELF = 0, JSF_PF_JIT = 1, JSF_PF_UNKNOWN = 2 };

struct jsf_pframe {
	const char *name; /* symbol, "TRACE_n::chunk:line", or NULL -> [addr] */
	const char *file; /* source file of the line, or NULL */
	uint32_t line;	  /* source line, 0 unknown */
	uint64_t addr;	  /* the frame's pc (callers: return address - 1) */
	const char *mapping;  /* ELF path, "[jit]" for traces, or NULL */
	const char *build_id; /* hex build-id of the mapping, or NULL */
	uint64_t map_start, map_end, map_pgoff; /* the mapping, 0 if unknown */
	enum jsf_pframe_kind kind;
};

struct jsf_profile;
/* period_ns: sampling period (1e9 / freq), for pprof's period and values */
struct jsf_profile *jsf_profile_new(uint64_t period_ns);
/* One sample (or count identical ones): frames[0] is the LEAF, frames[n-1]
 * the root (e.g. main / _start). Strings are copied. 0 or -errno. */
int jsf_profile_add(struct jsf_profile *p, const struct jsf_pframe *frames,
		    uint32_t n, uint64_t count, const char *comm);
/* Folded stacks: "comm;root;...;leaf count", trace frames suffixed "_[j]". */
int jsf_profile_write_folded(const struct jsf_profile *p, const char *path);
int jsf_profile_write_svg(const struct jsf_profile *p, const char *path,
			  const char *title);
int jsf_profile_write_html(const struct jsf_profile *p, const char *path,
			   const char *title);
int jsf_profile_write_pprof(const struct jsf_profile *p, const char *path);
void jsf_profile_free(struct jsf_profile *p);
#endif
