/* SPDX-License-Identifier: MIT */
/*
 * A producer process for the discovery and retention tests (t_find.c,
 * t_prune.c): a child that creates a region and adds functions to it,
 * then exits (as a crash leaves it: no destroy) or stays alive until the
 * test closes its end of a pipe.
 */
#ifndef JSF_TEST_PRODUCER_H
#define JSF_TEST_PRODUCER_H

#include "jitsframe.h"

#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

struct producer_opts {
	const char *path;    /* NULL: dir/PID.region */
	const char *dir;     /* with path NULL */
	unsigned nfuncs;     /* functions of 16 bytes, 64 apart; 0: 1 */
	int stay;	     /* alive until *hold_w is closed */
	int fork_grandchild; /* a child of it maps the region, waits too */
	uint32_t flags;	     /* jsf_region_opts.flags */
};

/* Its pid (-1 if the region could not be made); *grandchild the
 * grandchild's (fork_grandchild), *hold_w the pipe end that keeps both
 * alive (NULL: closed now). The caller reaps. */
static pid_t producer_start(const struct producer_opts *o, pid_t *grandchild,
			    int *hold_w)
{
	static const struct jsf_row sp8 = {
	    .offset = 0, .cfa_base = JSF_SP, .cfa_offset = 8};
	int ready[2], hold[2];
	if (pipe(ready) || pipe(hold))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(ready[0]);
		close(hold[1]);
		struct jsf_region *r = NULL;
		struct jsf_region_opts ro = {.sz = sizeof(ro),
					     .flags = o->flags};
		char ok = 1, own[512];
		const char *path = o->path;
		if (!path) {
			snprintf(own, sizeof(own), "%s/%d.region", o->dir,
				 (int)getpid());
			path = own;
		}
		if (jsf_region_create(&r, path, &ro))
			ok = 0;
		for (unsigned i = 0; ok && i < (o->nfuncs ? o->nfuncs : 1); i++)
			if (jsf_region_add(r, 0x10000 + 64ull * i, 16, &sp8, 1,
					   0))
				ok = 0;
		pid_t g = 0;
		if (ok && o->fork_grandchild && (g = fork()) == 0) {
			char c;
			while (read(hold[0], &c, 1) > 0)
				;
			_exit(0);
		}
		if (write(ready[1], &ok, 1) != 1 ||
		    write(ready[1], &g, sizeof(g)) != sizeof(g))
			_exit(2);
		if (o->stay) {
			char c;
			while (read(hold[0], &c, 1) > 0)
				;
		}
		_exit(0); /* no destroy: the region stays as left */
	}
	close(ready[1]);
	close(hold[0]);
	char ok = 0;
	pid_t g = 0;
	if (read(ready[0], &ok, 1) != 1 ||
	    read(ready[0], &g, sizeof(g)) != sizeof(g))
		ok = 0;
	close(ready[0]);
	if (grandchild)
		*grandchild = g;
	if (hold_w)
		*hold_w = hold[1];
	else
		close(hold[1]);
	return ok ? pid : -1;
}

#endif
