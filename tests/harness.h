/* SPDX-License-Identifier: MIT */
/*
 * Minimal TAP-style test harness: each CASE prints "ok"/"not ok"; the
 * process exits non-zero if any failed. scripts/run-tests adds them up.
 */
#ifndef JSF_HARNESS_H
#define JSF_HARNESS_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int h_failed_total, h_case_failed, h_cases;
static const char *h_case;

#define CHECK(cond, ...)                                                \
	do {                                                            \
		if (!(cond)) {                                          \
			if (h_case_failed++ < 5) {                      \
				printf("#   %s:%d: CHECK(%s) failed: ", \
				       __FILE__, __LINE__, #cond);      \
				printf(__VA_ARGS__);                    \
				printf("\n");                           \
			}                                               \
		}                                                       \
	} while (0)

#define CHECK_EQ(a, b)                                                       \
	do {                                                                 \
		long long h_a = (long long)(a), h_b = (long long)(b);        \
		CHECK(h_a == h_b, "%s = %lld, %s = %lld", #a, h_a, #b, h_b); \
	} while (0)

static inline void h_end(void);
static int h_open;

/* A case stays open until the next h_begin() or h_exit(), so that a `break`
 * out of a CASE body still reports it. */
static inline void h_begin(const char *name)
{
	if (h_open)
		h_end();
	h_case = name;
	h_case_failed = 0;
	h_open = 1;
	fflush(stdout);
}

static inline void h_end(void)
{
	if (!h_open)
		return;
	h_open = 0;
	h_cases++;
	if (h_case_failed) {
		h_failed_total++;
		printf("not ok %d - %s (%d failed checks)\n", h_cases, h_case,
		       h_case_failed);
	} else {
		printf("ok %d - %s\n", h_cases, h_case);
	}
	fflush(stdout);
}

#define CASE(name) \
	for (int h_once = (h_begin(name), 1); h_once; h_once = 0, h_end())

static inline int h_exit(void)
{
	h_end();
	printf("1..%d\n", h_cases);
	return h_failed_total ? 1 : 0;
}

/* The whole test cannot run here: "1..0 # SKIP why" (a visible skip,
 * returns 0), but under CI=true, where every capability must be present,
 * one failed case (returns 1). For main's return. */
static inline int h_skip_or_fail(const char *why)
{
	const char *ci = getenv("CI");
	if (ci && !strcmp(ci, "true")) {
		printf("not ok 1 - the test can run (CI=true: required): "
		       "%s\n1..1\n",
		       why);
		return 1;
	}
	printf("1..0 # SKIP %s\n", why);
	return 0;
}

/* Deterministic PRNG (xorshift64*), seeded from JSF_SEED or a default. */
static uint64_t h_rng_state = 0x9e3779b97f4a7c15ull;
static inline void h_seed(void)
{
	const char *s = getenv("JSF_SEED");
	if (s)
		h_rng_state = strtoull(s, NULL, 0) | 1;
	printf("# seed %#llx\n", (unsigned long long)h_rng_state);
}
static inline uint64_t h_rand(void)
{
	h_rng_state ^= h_rng_state >> 12;
	h_rng_state ^= h_rng_state << 25;
	h_rng_state ^= h_rng_state >> 27;
	return h_rng_state * 2685821657736338717ull;
}
static inline uint32_t h_below(uint32_t n)
{
	return n ? (uint32_t)(h_rand() % n) : 0;
}

#endif
