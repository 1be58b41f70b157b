/* SPDX-License-Identifier: MIT */
/*
 * What the sampler's tests share (tests/t_sampler.c, t_sampler_procs.c):
 * a C call chain main -> chain_a -> chain_b -> chain_c -> spin whose
 * return addresses each function stores in `truth` (a page the parent
 * shares with the child: the ground truth of its stack), the TAP skip
 * rule (CI=true: a missing capability fails), and the clock.
 */
#ifndef T_SMP_CHILD_H
#define T_SMP_CHILD_H

#include "jitsframe.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile uint64_t *truth; /* shared: spin's, c's, b's, a's RAs */
static volatile unsigned long sink;

__attribute__((noinline)) static void spin(void)
{
	truth[0] = (uint64_t)__builtin_return_address(0);
	for (unsigned long i = 0; i < 2000000; i++)
		sink += i;
	__asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void chain_c(void)
{
	truth[1] = (uint64_t)__builtin_return_address(0);
	spin();
	sink++;
}
__attribute__((noinline)) static void chain_b(void)
{
	truth[2] = (uint64_t)__builtin_return_address(0);
	chain_c();
	sink++;
}
__attribute__((noinline)) static void chain_a(void)
{
	/* main may call it from more than one site (a rotated loop):
	 * the first two distinct ones kept */
	uint64_t ra = (uint64_t)__builtin_return_address(0);
	if (!truth[3])
		truth[3] = ra;
	else if (ra != truth[3])
		truth[4] = ra;
	chain_b();
	sink++;
}

static uint64_t mono_ns(void)
{
	return jsf_now_ns(); /* CLOCK_MONOTONIC, the samples' clock */
}

#endif
