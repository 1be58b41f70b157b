/* SPDX-License-Identifier: MIT */
/*
 * region_bench: what a JIT pays to publish code, and what a reader pays to
 * unwind through it, at 100, 1000 and 8000 live functions.
 *
 *  (a) jsf_region_add in ns per add, in ascending, descending (LuaJIT's
 *      mcode grows down) and random address order:
 *        build: mean over adding all N functions to an empty region
 *               (includes every growth rebuild);
 *        at N:  N functions live; a batch of K is removed (untimed) and
 *               re-added in that order (timed): the cost at N live,
 *               including the compactions the growing history causes.
 *  (b) jsf_view_lookup per second for random pcs inside the functions, on
 *      a live view (producer running) and post-mortem (destroyed, reopened);
 *  (c) the same pcs through the system libsframe's sframe_find_fre on the
 *      V1 export of the same functions, in the same run, and the ratios;
 *  (d) the LuaJIT module's pattern: traces added in descending order and
 *      flushed (jsf_region_remove_all) every FLUSH_EVERY adds, with the
 *      module's default options, so that the history grows and the region
 *      rebuilds: mean ns per add over TRACE_ADDS adds, rebuilds included.
 *  (e) the longest single add (no target; issue 16's bounded work per
 *      event): the pattern of (d) until 24,000, 200,000 and 1,000,000
 *      functions are logged, every add timed in thread CPU time (the
 *      add's work, not waits for a core); the longest add and the mean
 *      over the last quarter of the adds, wall clock, timer calls
 *      included (median of PAUSE_REPS).
 *      REGION_BENCH_ONLY=pause runs only this part.
 *
 * Targets (issue 16), each printed with its same-run baseline and MET or
 * MISSED: live lookups >= 2x libsframe at 100, 1,000 and 8,000 functions;
 * an add at 8,000 live functions <= 2 us in each order.
 *
 * Every figure is the median of several repetitions (CLOCK_MONOTONIC).
 */
#include "jitsframe.h"

#include <errno.h>
#include <sframe-api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUILD_REPS 9
#define CHURN_REPS 21
#define LOOKUP_REPS 9
#define NPCS 200000
#define MAXROWS 8
#define TRACE_REPS 5
#define TRACE_ADDS 100000
#define FLUSH_EVERY 2000

enum { ASC, DESC, RAND, NORDERS };
static const char *const order_name[NORDERS] = {"ascending", "descending",
						"random"};

struct fn {
	uint64_t start;
	uint32_t size, nrows;
	struct jsf_row rows[MAXROWS];
};

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static uint32_t below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "region_bench: %s: %s\n", what, jsf_strerror(rc));
	exit(1);
}

/*
 * n functions of 64..2047 bytes, ascending with small gaps, each with a
 * frame-pointer prologue, body rows (some with large frames) and an
 * epilogue row: 3..8 rows.
 */
static void make_funcs(struct fn *f, uint32_t n, uint64_t base)
{
	uint64_t at = base;
	for (uint32_t i = 0; i < n; i++) {
		struct fn *p = &f[i];
		at += 16 * below(4);
		p->start = at;
		p->size = 64 + below(1984);
		at += p->size;
		uint32_t k = 0;
		p->rows[k++] = (struct jsf_row){
		    .offset = 0, .cfa_base = JSF_SP, .cfa_offset = 8};
		p->rows[k++] = (struct jsf_row){.offset = 1,
						.cfa_base = JSF_SP,
						.cfa_offset = 16,
						.has_fp = true,
						.fp_offset = -16};
		p->rows[k++] = (struct jsf_row){.offset = 4,
						.cfa_base = JSF_FP,
						.cfa_offset = 16,
						.has_fp = true,
						.fp_offset = -16};
		uint32_t body = below(MAXROWS - 3);
		uint32_t off = 4;
		for (uint32_t j = 0; j < body; j++) {
			off += 1 + below((p->size - 8 - off) / (body - j + 1));
			int32_t frame = below(8) ? 16 + 8 * below(64)
						 : 40000 + 8 * below(1000);
			p->rows[k++] = (struct jsf_row){.offset = off,
							.cfa_base = JSF_SP,
							.cfa_offset = frame,
							.has_fp = true,
							.fp_offset = -16};
		}
		if (k < MAXROWS)
			p->rows[k++] = (struct jsf_row){.offset = p->size - 1,
							.cfa_base = JSF_SP,
							.cfa_offset = 8};
		p->nrows = k;
	}
}

static void order_perm(uint32_t *o, uint32_t n, int order)
{
	for (uint32_t i = 0; i < n; i++)
		o[i] = order == DESC ? n - 1 - i : i;
	if (order == RAND)
		for (uint32_t i = n; i > 1; i--) {
			uint32_t j = below(i), t = o[i - 1];
			o[i - 1] = o[j];
			o[j] = t;
		}
}

static char dir[128], path[256];

static struct jsf_region *fresh_region(void)
{
	struct jsf_region_opts o = {.sz = sizeof(o),
				    .flags = JSF_REGION_REPLACE};
	struct jsf_region *r;
	int rc = jsf_region_create(&r, path, &o);
	if (rc)
		die("jsf_region_create", rc);
	return r;
}

static void add(struct jsf_region *r, const struct fn *f, uint64_t t)
{
	int rc = jsf_region_add(r, f->start, f->size, f->rows, f->nrows, t);
	if (rc)
		die("jsf_region_add", rc);
}

/* (a) build: mean ns per add over filling an empty region in `order`. */
static double bench_build(const struct fn *f, uint32_t n, int order)
{
	uint32_t *o = malloc(n * sizeof(*o));
	double v[BUILD_REPS];
	for (int rep = 0; rep < BUILD_REPS; rep++) {
		order_perm(o, n, order);
		struct jsf_region *r = fresh_region();
		uint64_t t0 = now_ns();
		for (uint32_t i = 0; i < n; i++)
			add(r, &f[o[i]], 1 + i);
		v[rep] = (double)(now_ns() - t0) / n;
		jsf_region_destroy(r);
	}
	free(o);
	return median(v, BUILD_REPS);
}

/*
 * (a) at N: with all n live, remove K (the top K for ascending, the bottom
 * K for descending, K random ones otherwise) and time re-adding them in
 * that order.
 */
static double bench_churn(struct jsf_region *r, const struct fn *f, uint32_t n,
			  int order, uint64_t *now)
{
	uint32_t k = n / 4 < 512 ? n / 4 : 512;
	uint32_t *all = malloc(n * sizeof(*all)),
		 *sel = malloc(k * sizeof(*sel));
	double v[CHURN_REPS];
	for (int rep = 0; rep < CHURN_REPS; rep++) {
		if (order == RAND) {
			order_perm(all, n, RAND);
			memcpy(sel, all, k * sizeof(*sel));
		} else {
			for (uint32_t i = 0; i < k; i++)
				sel[i] = order == ASC ? n - k + i : k - 1 - i;
		}
		for (uint32_t i = 0; i < k; i++) {
			int rc = jsf_region_remove(r, f[sel[i]].start, ++*now);
			if (rc)
				die("jsf_region_remove", rc);
		}
		++*now;
		uint64_t t0 = now_ns();
		for (uint32_t i = 0; i < k; i++)
			add(r, &f[sel[i]], *now);
		v[rep] = (double)(now_ns() - t0) / k;
	}
	free(all);
	free(sel);
	return median(v, CHURN_REPS);
}

static uint64_t *make_pcs(const struct fn *f, uint32_t n)
{
	uint64_t *pc = malloc(NPCS * sizeof(*pc));
	for (uint32_t i = 0; i < NPCS; i++) {
		const struct fn *p = &f[below(n)];
		pc[i] = p->start + below(p->size);
	}
	return pc;
}

static volatile uint64_t sink;

/* (b) one rep of jsf_view_lookup over every pc: lookups per second. */
static double view_rep(const struct jsf_view *v, const uint64_t *pc,
		       uint64_t at)
{
	uint64_t sum = 0;
	uint32_t miss = 0;
	uint64_t t0 = now_ns();
	for (uint32_t i = 0; i < NPCS; i++) {
		uint64_t fs;
		struct jsf_row row;
		if (jsf_view_lookup(v, pc[i], at, &fs, NULL, &row))
			miss++;
		else
			sum += fs + (uint64_t)row.cfa_offset;
	}
	uint64_t dt = now_ns() - t0;
	if (miss)
		die("jsf_view_lookup missed", -ENOENT);
	sink += sum;
	return NPCS * 1e9 / (double)dt;
}

/* (c) one rep of sframe_find_fre over the same pcs (relative to base). */
static double lib_rep(sframe_decoder_ctx *ctx, const int32_t *rel)
{
	uint64_t sum = 0;
	uint32_t miss = 0;
	uint64_t t0 = now_ns();
	for (uint32_t i = 0; i < NPCS; i++) {
		sframe_frame_row_entry fre;
		if (sframe_find_fre(ctx, rel[i], &fre))
			miss++;
		else
			sum += fre.fre_start_addr;
	}
	uint64_t dt = now_ns() - t0;
	if (miss)
		die("sframe_find_fre missed", -ENOENT);
	sink += sum;
	return NPCS * 1e9 / (double)dt;
}

/*
 * (b, c) jsf_view_lookup and sframe_find_fre on the V1 export of the view's
 * functions, their reps alternating so that both see the same machine:
 * medians of each, and the median of the per-rep ratios.
 */
static void bench_lookups(const struct jsf_view *v, const uint64_t *pc,
			  double *ours, double *lib, double *ratio)
{
	struct jsf_export_opts o = {.sz = sizeof(o), .version = 1};
	void *buf;
	size_t len;
	uint64_t base;
	int rc = jsf_view_export(v, &o, &buf, &len, &base);
	if (rc)
		die("jsf_view_export V1", rc);
	int err = 0;
	sframe_decoder_ctx *ctx = sframe_decode(buf, len, &err);
	if (!ctx) {
		fprintf(stderr, "region_bench: sframe_decode: %s\n",
			sframe_errmsg(err));
		exit(1);
	}
	int32_t *rel = malloc(NPCS * sizeof(*rel));
	for (uint32_t i = 0; i < NPCS; i++)
		rel[i] = (int32_t)(pc[i] - base);
	double a[LOOKUP_REPS], b[LOOKUP_REPS], q[LOOKUP_REPS];
	for (int rep = 0; rep < LOOKUP_REPS; rep++) {
		a[rep] = view_rep(v, pc, 0);
		b[rep] = lib_rep(ctx, rel);
		q[rep] = a[rep] / b[rep];
	}
	*ours = median(a, LOOKUP_REPS);
	*lib = median(b, LOOKUP_REPS);
	*ratio = median(q, LOOKUP_REPS);
	free(rel);
	sframe_decoder_free(&ctx);
	free(buf);
}

/* (d) descending adds with a flush every FLUSH_EVERY: ns per add. */
static double bench_traces(const struct fn *f, uint32_t n, uint64_t *rebuilds)
{
	double v[TRACE_REPS];
	for (int rep = 0; rep < TRACE_REPS; rep++) {
		struct jsf_region *r = fresh_region();
		uint64_t t = 1, t0 = now_ns();
		for (uint32_t i = 0; i < TRACE_ADDS; i++) {
			if (i % FLUSH_EVERY == 0 && i)
				jsf_region_remove_all(r, ++t);
			add(r, &f[n - 1 - i % FLUSH_EVERY], ++t);
		}
		v[rep] = (double)(now_ns() - t0) / TRACE_ADDS;
		struct jsf_region_stats st = {.sz = sizeof(st)};
		jsf_region_stats(r, &st);
		*rebuilds = st.compactions;
		jsf_region_destroy(r);
	}
	unlink(path);
	return median(v, TRACE_REPS);
}

/* This thread's CPU time: an add's own work, not the time the thread
 * waited for a core (2 shared cores: preemptions of ~12 ms otherwise). */
static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* (e) the pattern of (d) up to `logged` functions: the longest add and
 * the mean ns per add over the last quarter (median of PAUSE_REPS). */
#define PAUSE_REPS 5
static void bench_pause(const struct fn *f, uint32_t logged, double *max,
			double *mean)
{
	double vm[PAUSE_REPS], va[PAUSE_REPS];
	for (int rep = 0; rep < PAUSE_REPS; rep++) {
		struct jsf_region *r = fresh_region();
		uint64_t t = 1, worst = 0, q0 = 0;
		for (uint32_t i = 0; i < logged; i++) {
			if (i % FLUSH_EVERY == 0 && i)
				jsf_region_remove_all(r, ++t);
			if (i == logged - logged / 4)
				q0 = now_ns();
			uint64_t a = cpu_ns();
			add(r, &f[FLUSH_EVERY - 1 - i % FLUSH_EVERY], ++t);
			uint64_t d = cpu_ns() - a;
			if (d > worst)
				worst = d;
		}
		va[rep] = (double)(now_ns() - q0) / (logged / 4.0);
		vm[rep] = (double)worst;
		jsf_region_destroy(r);
	}
	unlink(path);
	*max = median(vm, PAUSE_REPS);
	*mean = median(va, PAUSE_REPS);
}

static void print_pause(void)
{
	static const uint32_t logged[] = {24000, 200000, 1000000};
	struct fn *tf = calloc(FLUSH_EVERY, sizeof(*tf));
	make_funcs(tf, FLUSH_EVERY, 0x7f1234560000ull);
	printf("\n(e) the longest add (no target): (d)'s pattern until N "
	       "functions are logged, every add timed (thread CPU time; median "
	       "of %d)\n",
	       PAUSE_REPS);
	for (int i = 0; i < 3; i++) {
		double mx, mean;
		bench_pause(tf, logged[i], &mx, &mean);
		printf("  %7u logged: longest add %.1f us, mean %.0f ns per "
		       "add (last quarter, timer included)\n",
		       logged[i], mx / 1e3, mean);
	}
	free(tf);
}

struct result {
	uint32_t n;
	double build[NORDERS], churn[NORDERS];
	double live, post, lib_live, lib_post, q_live, q_post;
	double past_live, past_post; /* (f): lookups at a past time */
	uint32_t logged;
};

/* (f) lookups at a past time (every function live then): medians. */
static double bench_past(const struct jsf_view *v, const uint64_t *pc,
			 uint64_t at)
{
	double a[LOOKUP_REPS];
	for (int rep = 0; rep < LOOKUP_REPS; rep++)
		a[rep] = view_rep(v, pc, at);
	return median(a, LOOKUP_REPS);
}

static void run(uint32_t n, struct result *res)
{
	struct fn *f = calloc(n, sizeof(*f));
	make_funcs(f, n, 0x7f1234560000ull);
	res->n = n;
	for (int o = 0; o < NORDERS; o++)
		res->build[o] = bench_build(f, n, o);

	struct jsf_region *r = fresh_region();
	uint64_t now = 1;
	for (uint32_t i = 0; i < n; i++)
		add(r, &f[i], now);
	for (int o = 0; o < NORDERS; o++)
		res->churn[o] = bench_churn(r, f, n, o, &now);

	uint64_t *pc = make_pcs(f, n);
	struct jsf_view *v;
	int rc = jsf_view_open(&v, path);
	if (rc)
		die("jsf_view_open (live)", rc);
	struct jsf_view_info info = {.sz = sizeof(info)};
	jsf_view_info(v, &info);
	if (!info.live || info.live_funcs != n)
		die("live view is not live with every function", -EINVAL);
	bench_lookups(v, pc, &res->live, &res->lib_live, &res->q_live);
	res->past_live = bench_past(v, pc, now);
	jsf_view_close(v);
	struct jsf_region_stats st = {.sz = sizeof(st)};
	jsf_region_stats(r, &st);
	res->logged = st.logged_funcs;
	jsf_region_destroy(r);

	rc = jsf_view_open(&v, path);
	if (rc)
		die("jsf_view_open (post-mortem)", rc);
	jsf_view_info(v, &info);
	if (info.live || info.live_funcs != n)
		die("post-mortem view is live or incomplete", -EINVAL);
	bench_lookups(v, pc, &res->post, &res->lib_post, &res->q_post);
	res->past_post = bench_past(v, pc, now);
	jsf_view_close(v);
	unlink(path);
	free(pc);
	free(f);
}

int main(void)
{
	static const uint32_t sizes[] = {100, 1000, 8000};
	enum { NS = sizeof(sizes) / sizeof(sizes[0]) };
	struct result res[NS];
	snprintf(dir, sizeof(dir), "/tmp/jsf-bench-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/region", dir);
	const char *only = getenv("REGION_BENCH_ONLY");
	if (only && !strcmp(only, "pause")) {
		print_pause();
		rmdir(dir);
		return 0;
	}
	uint64_t t0 = now_ns();
	for (int i = 0; i < NS; i++)
		run(sizes[i], &res[i]);
	struct fn *tf = calloc(FLUSH_EVERY, sizeof(*tf));
	make_funcs(tf, FLUSH_EVERY, 0x7f1234560000ull);
	uint64_t rebuilds = 0;
	double traces = bench_traces(tf, FLUSH_EVERY, &rebuilds);
	free(tf);

	printf("jitsframe region_bench (medians; build %d reps, at-N %d "
	       "batches, lookups %d reps of %d pcs)\n\n",
	       BUILD_REPS, CHURN_REPS, LOOKUP_REPS, NPCS);
	printf("(a) jsf_region_add, ns per add\n");
	printf("%7s | %30s | %30s\n", "", "build 0 -> N (mean)",
	       "at N live (batch re-add)");
	printf("%7s | %9s %10s %9s | %9s %10s %9s\n", "funcs", order_name[0],
	       order_name[1], order_name[2], order_name[0], order_name[1],
	       order_name[2]);
	for (int i = 0; i < NS; i++)
		printf("%7u | %9.0f %10.0f %9.0f | %9.0f %10.0f %9.0f\n",
		       res[i].n, res[i].build[ASC], res[i].build[DESC],
		       res[i].build[RAND], res[i].churn[ASC],
		       res[i].churn[DESC], res[i].churn[RAND]);
	printf("\n(b, c) lookups, millions per second (random pcs inside "
	       "functions)\n");
	printf("%7s | %9s %9s | %9s %9s | %9s %9s\n", "", "jitsframe", "",
	       "libsframe", "", "ratio", "");
	printf("%7s | %9s %9s | %9s %9s | %9s %9s\n", "funcs", "live", "post",
	       "(live)", "(post)", "live/lib", "post/lib");
	for (int i = 0; i < NS; i++)
		printf("%7u | %9.2f %9.2f | %9.2f %9.2f | %9.2f %9.2f\n",
		       res[i].n, res[i].live / 1e6, res[i].post / 1e6,
		       res[i].lib_live / 1e6, res[i].lib_post / 1e6,
		       res[i].q_live, res[i].q_post);

	printf("\n(d) the module's pattern: %d descending adds, a flush every "
	       "%d, default options\n",
	       TRACE_ADDS, FLUSH_EVERY);
	printf("  %.0f ns per add, rebuilds included (%llu rebuilds)\n", traces,
	       (unsigned long long)rebuilds);
	print_pause();
	rmdir(dir);

	const struct result *big = &res[NS - 1];
	int missed = 0;
	printf("\ntargets (issue 16):\n");
	for (int i = 0; i < NS; i++) {
		double l = res[i].q_live;
		bool met = l >= 2;
		missed += !met;
		printf("  live lookups >= 2x libsframe at %5u functions: %.2f "
		       "M/s, libsframe %.2f M/s, ratio %.2fx -> %s\n",
		       res[i].n, res[i].live / 1e6, res[i].lib_live / 1e6, l,
		       met ? "MET" : "MISSED");
	}
	for (int o = 0; o < NORDERS; o++) {
		double w = big->churn[o];
		bool met = w <= 2000;
		missed += !met;
		printf("  add <= 2 us at %u live, %-10s: %.0f ns (same run: "
		       "build 0 -> %u %.0f ns/add, ascending append %.0f "
		       "ns) -> %s\n",
		       big->n, order_name[o], w, big->n, big->build[o],
		       big->churn[ASC], met ? "MET" : "MISSED");
	}
	printf("  (post-mortem lookups, no target: %.2fx, %.2fx, %.2fx "
	       "libsframe)\n",
	       res[0].q_post, res[1].q_post, res[2].q_post);
	printf("  (lookups at a past time, no target: live %.2f, %.2f, %.2f "
	       "M/s, post-mortem %.2f, %.2f, %.2f M/s at %u, %u, %u logged)\n",
	       res[0].past_live / 1e6, res[1].past_live / 1e6,
	       res[2].past_live / 1e6, res[0].past_post / 1e6,
	       res[1].past_post / 1e6, res[2].past_post / 1e6, res[0].logged,
	       res[1].logged, res[2].logged);
	printf("%s\n", missed ? "some targets MISSED" : "all targets MET");
	printf("(total %.1f s)\n", (double)(now_ns() - t0) / 1e9);
	return 0;
}
