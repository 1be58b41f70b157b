/* SPDX-License-Identifier: MIT */
/*
 * mkregion PATH PID CREATE_NS: a post-mortem region at PATH written as
 * process PID's, created at CREATE_NS (CLOCK_MONOTONIC ns), holding one
 * named function; its producer then gone without closing it (as a killed
 * process leaves one). For tests/t_reusedpid.sh: a region of a reused pid.
 */
#include "jitsframe.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: mkregion PATH PID CREATE_NS\n");
		return 2;
	}
	struct jsf_region_opts o = {.sz = sizeof(o),
				    .flags = JSF_REGION_NAMED,
				    .producer_pid =
					(uint32_t)strtoul(argv[2], NULL, 10),
				    .create_ns = strtoull(argv[3], NULL, 10)};
	struct jsf_region *r;
	int err = jsf_region_create(&r, argv[1], &o);
	const struct jsf_row row = {
	    .offset = 0, .cfa_base = JSF_SP, .cfa_offset = 8};
	if (!err)
		err = jsf_region_add_named(r, 0x10000, 4096, &row, 1,
					   "TRACE_1::stale:1", o.create_ns);
	if (err) {
		fprintf(stderr, "mkregion: %s\n", jsf_strerror(err));
		return 1;
	}
	jsf_region_detach(r); /* no close: a producer gone */
	return 0;
}
