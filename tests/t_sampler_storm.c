/* SPDX-License-Identifier: MIT */
/*
 * The sampler's safety under a region storm (issue 12, "Safety"), as root
 * with BPF (skips visibly otherwise; fails under CI=true).
 *
 * A forked producer (libjitsframe, no VM) keeps a pool of lanes of
 * anonymous executable memory. Each lane holds at most one hand-written
 * x86-64 function at a time, of a layout known exactly (docs/PROFILE.md
 * "Safety"): `pre` NOPs, then
 *
 *   mov rax,[rsp]; movabs [truth_ra],rax      ; the caller's RA, for us
 *   sub rsp,N; mov esi,TAG; movabs rax,work; call rax; add rsp,N; ret
 *
 * published with its three rows. The driver calls a lane's function, which
 * calls work(x, TAG): work spins a little, checks nothing itself, and
 * then — with the lane's function on the stack — rewrites ANOTHER lane:
 * removes its function (jsf_region_remove), writes new code at a new start
 * inside the lane (another pre, N, TAG), adds it (jsf_region_add, in any
 * address order: odd-generation rewrites), and every few calls compacts
 * (jsf_region_compact). The samples that land inside the region's writer
 * therefore have a region function on their stack while the generation is
 * odd: the sampler must stop them as "busy", never follow a torn row. A
 * second thread rewrites free lanes and compacts non-stop meanwhile, so
 * that the program's reads also race writes running on the other CPU
 * (lanes are owned by one thread at a time: code is never rewritten
 * while it runs).
 *
 * Ground truth, independent of the sampler: the producer's own log of
 * every function's (start, size, add time taken before the add, remove
 * time taken after the remove returned), and the RA its code stored.
 * Asserted:
 *  - the producer's results stay correct (each call returns work's value
 *    for the lane's TAG: the code it ran was the code it published) and
 *    it never stalls (the longest call, the run's time, bounded);
 *  - zero wrong frames: every trace frame's fn_start is a function of the
 *    log live at the sample's time whose bytes hold the frame's pc; its
 *    caller frame (where the walk went on) is the driver's RA the code
 *    saw; no frame named when its walk stopped there for a region reason
 *    (a discarded read); no "no trace" or "corrupt" stops at the pool (its
 * function was live throughout its execution); and where the region's own
 * history still knows the time (jsf_view_lookup at the sample's time) it
 *    agrees;
 *  - the busy stops are counted and printed.
 */
#include "harness.h"
#include "jitsframe.h"
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LANES 256
#define LANE_BYTES 128
#define LOG_MAX (1u << 20)
#define RUN_NS 4000000000ull /* the producer's storm */
#define KEEP_FRAMES 24
#define MAX_SAMPLES 100000
#define COMPACT_EVERY 16
#define SPIN 3000

struct fnlog {
	uint64_t start, add_ns, rm_ns; /* rm_ns 0: still live */
	uint32_t size, tag;
};

/* shared with the producer (MAP_SHARED before fork) */
struct shared {
	volatile uint64_t truth_ra; /* written by the lanes' code */
	atomic_int ready, go, done;
	uint64_t iters, bad_results, max_call_ns, run_ns, compactions, adds,
	    removes, errors, seq, pool_lo, pool_hi, bops, bmax_ns;
	_Atomic uint64_t bcompactions;
	int first_err;
	char region[256];
	uint32_t nlog;
	struct fnlog log[LOG_MAX];
};
static struct shared *sh;

/* ---- the producer */
static struct jsf_region *preg;
static uint8_t *pool;
static struct {
	uint64_t start;
	uint32_t logi, tag;
} lane[LANES];
/* a lane's owner while its code runs or is rewritten: 0 free, 1 the
 * caller thread, 2 the rewriter thread */
static atomic_int own[LANES];
static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER; /* the log */
static atomic_int stop_rewriter;
static __thread uint64_t rng = 88172645463325252ull;
static uint64_t xs(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static volatile uint64_t sink;

static uint64_t expect(uint64_t x, uint32_t tag)
{
	return x * 0x9e3779b97f4a7c15ull ^ ((uint64_t)tag << 17) ^ SPIN;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void rewrite(uint32_t m);

/* Called from a lane's code: spins, then rewrites another lane. */
__attribute__((noinline, used)) static uint64_t work(uint64_t x, uint32_t tag)
{
	for (unsigned i = 0; i < SPIN; i++)
		sink += i;
	uint32_t self = tag & 0xffff;
	uint32_t m = (uint32_t)(xs() % (LANES - 1));
	if (m >= self)
		m++;
	int z = 0;
	if (atomic_compare_exchange_strong(&own[m], &z, 1)) {
		rewrite(m);
		atomic_store(&own[m], 0);
	}
	if (++sh->iters % COMPACT_EVERY == 0) {
		int err = jsf_region_compact(preg);
		if (err) {
			sh->errors++;
			sh->first_err = err;
		} else {
			sh->compactions++;
		}
	}
	return x * 0x9e3779b97f4a7c15ull ^ ((uint64_t)tag << 17) ^ SPIN;
}

static uint32_t emit(uint8_t *p, uint32_t pre, uint32_t n, uint32_t tag,
		     struct jsf_row rows[3])
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < pre; i++)
		p[k++] = 0x90;
	uint32_t r1 = k;
	p[k++] = 0x48, p[k++] = 0x8b, p[k++] = 0x04, p[k++] = 0x24;
	p[k++] = 0x48, p[k++] = 0xa3;
	uint64_t a = (uint64_t)(uintptr_t)&sh->truth_ra;
	memcpy(p + k, &a, 8), k += 8;
	p[k++] = 0x48, p[k++] = 0x83, p[k++] = 0xec, p[k++] = (uint8_t)n;
	uint32_t r2 = k;
	p[k++] = 0xbe;
	memcpy(p + k, &tag, 4), k += 4;
	p[k++] = 0x48, p[k++] = 0xb8;
	a = (uint64_t)(uintptr_t)&work;
	memcpy(p + k, &a, 8), k += 8;
	p[k++] = 0xff, p[k++] = 0xd0;
	p[k++] = 0x48, p[k++] = 0x83, p[k++] = 0xc4, p[k++] = (uint8_t)n;
	uint32_t r3 = k;
	p[k++] = 0xc3;
	(void)r1;
	rows[0] =
	    (struct jsf_row){.offset = 0, .cfa_base = JSF_SP, .cfa_offset = 8};
	rows[1] = (struct jsf_row){
	    .offset = r2, .cfa_base = JSF_SP, .cfa_offset = 8 + (int32_t)n};
	rows[2] =
	    (struct jsf_row){.offset = r3, .cfa_base = JSF_SP, .cfa_offset = 8};
	return k;
}

static void fail_op(int err)
{
	pthread_mutex_lock(&lk);
	sh->errors++;
	if (!sh->first_err)
		sh->first_err = err;
	pthread_mutex_unlock(&lk);
}

/* Lane m: remove its function, write a new one somewhere in the lane,
 * add it. The log's times bracket the changes. */
static void rewrite(uint32_t m)
{
	if (lane[m].start) {
		int err = jsf_region_remove(preg, lane[m].start, 0);
		uint64_t t1 = jsf_now_ns();
		if (err)
			fail_op(err);
		pthread_mutex_lock(&lk);
		sh->log[lane[m].logi].rm_ns = t1;
		sh->removes++;
		pthread_mutex_unlock(&lk);
		lane[m].start = 0;
	}
	if (sh->nlog + 4 >= LOG_MAX)
		return;
	uint64_t r = xs();
	uint32_t pre = (uint32_t)(r & 7), n = 8 + 16 * (uint32_t)((r >> 3) % 8);
	uint32_t at = 16 * (uint32_t)((r >> 6) % 5);
	uint32_t tag = m | (uint32_t)(r >> 32 & 0x7fff) << 16;
	uint8_t *p = pool + (size_t)m * LANE_BYTES + at;
	memset(pool + (size_t)m * LANE_BYTES, 0xcc, LANE_BYTES);
	struct jsf_row rows[3];
	uint32_t size = emit(p, pre, n, tag, rows);
	uint64_t start = (uint64_t)(uintptr_t)p;
	uint64_t t0 = jsf_now_ns();
	int err = jsf_region_add(preg, start, size, rows, 3, t0);
	if (err) {
		fail_op(err);
		return;
	}
	pthread_mutex_lock(&lk);
	uint32_t li = sh->nlog;
	sh->log[li] = (struct fnlog){
	    .start = start, .add_ns = t0, .size = size, .tag = tag};
	sh->nlog = li + 1;
	sh->adds++;
	pthread_mutex_unlock(&lk);
	lane[m].start = start;
	lane[m].logi = li;
	lane[m].tag = tag;
}

__attribute__((noinline)) static int drive(uint32_t l, uint64_t x)
{
	uint64_t (*fn)(uint64_t) =
	    (uint64_t(*)(uint64_t))(uintptr_t)lane[l].start;
	uint64_t v = fn(x);
	__asm__ volatile("" ::: "memory");
	return v == expect(x, lane[l].tag);
}

/* The second writer: rewrites free lanes and compacts, non-stop, on
 * the other CPU while the caller thread runs (and is sampled) in lane
 * code: the sampler's reads race real writes, not only a frozen one. */
static void *rewriter(void *arg)
{
	(void)arg;
	rng = 0x2545f4914f6cdd1dull;
	uint64_t k = 0;
	while (!atomic_load(&stop_rewriter)) {
		uint32_t m = (uint32_t)(xs() % LANES);
		int z = 0;
		uint64_t c0 = mono_ns();
		if (atomic_compare_exchange_strong(&own[m], &z, 2)) {
			rewrite(m);
			atomic_store(&own[m], 0);
		}
		if (++k % COMPACT_EVERY == 0) {
			int err = jsf_region_compact(preg);
			if (err)
				fail_op(err);
			else
				atomic_fetch_add(&sh->bcompactions, 1);
		}
		uint64_t d = mono_ns() - c0;
		if (d > sh->bmax_ns)
			sh->bmax_ns = d;
		sh->bops++;
		/* a breath outside the region's mutex: the caller thread
		 * gets it too (a mutex is not fair) */
		for (unsigned i = 0; i < SPIN; i++)
			sink += i;
	}
	return NULL;
}

static void producer(const char *path)
{
	struct jsf_region_opts o = {.sz = sizeof(o),
				    .flags = JSF_REGION_REPLACE,
				    .history_max = 4096,
				    .max_size = 64u << 20};
	int err = jsf_region_create(&preg, path, &o);
	if (err) {
		sh->first_err = err;
		atomic_store(&sh->ready, -1);
		_exit(1);
	}
	pool =
	    mmap(NULL, LANES * LANE_BYTES, PROT_READ | PROT_WRITE | PROT_EXEC,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pool == MAP_FAILED) {
		sh->first_err = -errno;
		atomic_store(&sh->ready, -1);
		_exit(1);
	}
	sh->pool_lo = (uint64_t)(uintptr_t)pool;
	sh->pool_hi = sh->pool_lo + LANES * LANE_BYTES;
	for (uint32_t m = 0; m < LANES; m++)
		rewrite(m);
	snprintf(sh->region, sizeof(sh->region), "%s", path);
	atomic_store(&sh->ready, 1);
	while (!atomic_load(&sh->go))
		usleep(1000);
	pthread_t bt;
	int two = pthread_create(&bt, NULL, rewriter, NULL) == 0;
	uint64_t t0 = mono_ns(), x = 1;
	while (mono_ns() - t0 < RUN_NS && sh->nlog + 8 < LOG_MAX) {
		uint32_t l = (uint32_t)(xs() % LANES);
		int z = 0;
		if (!atomic_compare_exchange_strong(&own[l], &z, 1))
			continue;    /* being rewritten */
		if (lane[l].start) { /* else its add failed: counted */
			uint64_t c0 = mono_ns();
			if (!drive(l, x++))
				sh->bad_results++;
			uint64_t d = mono_ns() - c0;
			if (d > sh->max_call_ns)
				sh->max_call_ns = d;
		}
		atomic_store(&own[l], 0);
	}
	sh->run_ns = mono_ns() - t0;
	atomic_store(&stop_rewriter, 1);
	if (two)
		pthread_join(bt, NULL);
	else
		fail_op(-EAGAIN);
	struct jsf_region_stats st = {.sz = sizeof(st)};
	if (!jsf_region_stats(preg, &st))
		sh->seq = st.seq;
	atomic_store(&sh->done, 1);
	/* keep the region live until the sampler has drained */
	while (atomic_load(&sh->done) != 2)
		usleep(1000);
	jsf_region_destroy(preg);
	_exit(0);
}

/* ---- the sampler side */
struct ksample {
	uint64_t time_ns;
	uint16_t nframes, stop;
	struct smp_frame f[KEEP_FRAMES];
};
struct acc {
	int pid;
	struct ksample *v;
	size_t n, dropped;
	/* the region's own history, asked as the samples arrive (it keeps
	 * the newest history_max functions only) */
	struct jsf_view *view;
	uint64_t view_ok, view_bad, view_gone;
};

static int on_event(const struct smp_event *e, void *ctx)
{
	struct acc *a = ctx;
	const struct smp_sample *s = e->s;
	if ((int)s->pid != a->pid)
		return 0;
	if (a->n >= MAX_SAMPLES) {
		a->dropped++;
		return 0;
	}
	struct ksample *k = &a->v[a->n++];
	k->time_ns = s->time_ns;
	k->nframes = s->nframes < KEEP_FRAMES ? s->nframes : KEEP_FRAMES;
	k->stop = s->nframes <= KEEP_FRAMES ? s->stop : SMP_STOP_DEPTH;
	memcpy(k->f, s->frames, k->nframes * sizeof(k->f[0]));
	for (unsigned j = 0; a->view && j < k->nframes; j++) {
		const struct smp_frame *f = &k->f[j];
		if (!f->fn_start)
			continue;
		uint64_t fs = 0;
		int rc = jsf_view_lookup(a->view, j ? f->pc - 1 : f->pc,
					 k->time_ns, &fs, NULL, NULL);
		if (rc)
			a->view_gone++;
		else if (fs == f->fn_start)
			a->view_ok++;
		else
			a->view_bad++;
	}
	return 0;
}

/* the log's function at start fs live at t (bracketed), or NULL; the
 * log is in add order, so its entries for one start are disjoint */
static const struct fnlog *live_at(uint64_t fs, uint64_t t)
{
	for (uint32_t i = sh->nlog; i-- > 0;) {
		const struct fnlog *l = &sh->log[i];
		if (l->start == fs && l->add_ns <= t &&
		    (!l->rm_ns || t <= l->rm_ns))
			return l;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	uint32_t hz = 4999;
	const char *eh = getenv("STORM_HZ");
	if (eh && atoi(eh) > 0)
		hz = (uint32_t)atoi(eh);
	char msg[512];
	struct smp *s = NULL;
	struct smp_opts so = {.sz = sizeof(so), .hz = hz};
	int err = smp_open(&s, &so, msg, sizeof(msg));
	if (err) {
		char why[600];
		snprintf(why, sizeof(why), "the sampler does not load: %s",
			 msg);
		return h_skip_or_fail(why);
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	char path[256];
	const char *td = getenv("TMPDIR");
	snprintf(path, sizeof(path), "%s/t_sampler_storm.%d.region",
		 td && *td ? td : "/tmp", (int)getpid());
	struct acc a = {.v = calloc(MAX_SAMPLES, sizeof(struct ksample))};
	if (!a.v)
		return 1;
	a.pid = fork();
	if (a.pid == 0)
		producer(path);
	while (!atomic_load(&sh->ready))
		usleep(1000);
	struct jsf_view *view = NULL;
	CASE("the producer's region and pool are up, the sampler watches it")
	{
		CHECK(atomic_load(&sh->ready) == 1, "producer: %d %s",
		      sh->first_err, jsf_strerror(sh->first_err));
		if (atomic_load(&sh->ready) != 1)
			break;
		err = smp_watch(s, a.pid, path, msg, sizeof(msg));
		CHECK(err == 0, "smp_watch: %d %s", err, msg);
		printf("# %s (%u Hz per CPU)\n", msg, hz);
		err = jsf_view_open(&view, path);
		CHECK(err == 0, "jsf_view_open: %d", err);
		a.view = view;
	}
	atomic_store(&sh->go, 1);
	uint64_t t0 = mono_ns();
	while (atomic_load(&sh->done) != 1 &&
	       mono_ns() - t0 < RUN_NS + 30000000000ull)
		smp_poll(s, 20, on_event, &a);
	uint64_t wall = mono_ns() - t0;
	for (int i = 0; i < 5; i++)
		smp_poll(s, 20, on_event, &a);
	struct smp_stats st;
	smp_stats(s, &st);

	CASE("the producer's results stay correct and it never stalls")
	{
		printf(
		    "# producer: %llu calls in %.2f s, %llu wrong results, "
		    "longest call %.3f ms; %llu adds, %llu removes, %llu "
		    "compactions, generation %llu; %llu failed calls "
		    "(first %d); the rewriter thread: %llu rewrites, %llu "
		    "compactions, longest %.3f ms\n",
		    (unsigned long long)sh->iters, (double)sh->run_ns / 1e9,
		    (unsigned long long)sh->bad_results,
		    (double)sh->max_call_ns / 1e6, (unsigned long long)sh->adds,
		    (unsigned long long)sh->removes,
		    (unsigned long long)sh->compactions,
		    (unsigned long long)sh->seq, (unsigned long long)sh->errors,
		    sh->first_err, (unsigned long long)sh->bops,
		    (unsigned long long)atomic_load(&sh->bcompactions),
		    (double)sh->bmax_ns / 1e6);
		CHECK(atomic_load(&sh->done) == 1,
		      "the producer did not finish "
		      "in %.1f s",
		      (double)wall / 1e9);
		CHECK(sh->iters >= 10000, "%llu calls",
		      (unsigned long long)sh->iters);
		CHECK(sh->bad_results == 0, "%llu wrong",
		      (unsigned long long)sh->bad_results);
		CHECK(sh->errors == 0, "%llu region calls failed (first %d)",
		      (unsigned long long)sh->errors, sh->first_err);
		CHECK(sh->compactions >= 100, "%llu compactions",
		      (unsigned long long)sh->compactions);
		/* bounded: a call is ~10 us of work and a rewrite; the
		 * sampler's share of it never waits on anything. 250 ms
		 * leaves room for the scheduler of a shared machine */
		CHECK(sh->max_call_ns < 250000000ull, "longest call %.1f ms",
		      (double)sh->max_call_ns / 1e6);
		CHECK(sh->bmax_ns < 250000000ull, "longest rewrite %.1f ms",
		      (double)sh->bmax_ns / 1e6);
		CHECK(sh->bops >= 10000, "%llu rewrites",
		      (unsigned long long)sh->bops);
		CHECK(sh->run_ns < RUN_NS + 1000000000ull, "run %.2f s",
		      (double)sh->run_ns / 1e9);
	}

	uint64_t lo = sh->pool_lo, hi = sh->pool_hi;
	uint64_t n_trace = 0, n_ok = 0, n_bad_fn = 0, n_bad_caller = 0,
		 n_caller_ok = 0, n_last = 0, n_unverified = 0,
		 n_pool_stop[SMP_STOP__N] = {0}, n_samples_pool = 0;
	uint64_t stops[SMP_STOP__N] = {0};
	char bad[512] = "";
	uint64_t *gaps = calloc(a.n + 1, sizeof(uint64_t));
	for (size_t i = 0; i < a.n; i++) {
		const struct ksample *k = &a.v[i];
		if (k->stop < SMP_STOP__N)
			stops[k->stop]++;
		int inpool = 0;
		for (unsigned j = 0; j < k->nframes; j++) {
			const struct smp_frame *f = &k->f[j];
			uint64_t look = j ? f->pc - 1 : f->pc;
			if (look >= lo && look < hi)
				inpool = 1;
			if (!f->fn_start) {
				if (look >= lo && look < hi &&
				    j + 1 == k->nframes &&
				    k->stop < SMP_STOP__N)
					n_pool_stop[k->stop]++;
				continue;
			}
			n_trace++;
			const struct fnlog *l =
			    live_at(f->fn_start, k->time_ns);
			if (!l || look < l->start ||
			    look >= l->start + l->size) {
				n_bad_fn++;
				if (!bad[0])
					snprintf(
					    bad, sizeof(bad),
					    "frame %u pc %#llx fn_start "
					    "%#llx at %llu: %s",
					    j, (unsigned long long)f->pc,
					    (unsigned long long)f->fn_start,
					    (unsigned long long)k->time_ns,
					    l ? "pc outside it"
					      : "no such function live");
				continue;
			}
			n_ok++;
			if (j + 1 < k->nframes) {
				if (k->f[j + 1].pc == sh->truth_ra)
					n_caller_ok++;
				else {
					n_bad_caller++;
					if (!bad[0])
						snprintf(
						    bad, sizeof(bad),
						    "frame %u's caller %#llx, "
						    "the code's %#llx",
						    j,
						    (unsigned long long)k
							->f[j + 1]
							.pc,
						    (unsigned long long)
							sh->truth_ra);
				}
			} else {
				n_last++;
				/* the walk stopped at this frame: only for a
				 * reason beyond the region's answer */
				if (k->stop == SMP_STOP_BUSY ||
				    k->stop == SMP_STOP_NOT_RESIDENT ||
				    k->stop == SMP_STOP_CORRUPT ||
				    k->stop == SMP_STOP_NO_TRACE ||
				    k->stop == SMP_STOP_UNSUP_RULE) {
					n_unverified++;
					if (!bad[0])
						snprintf(
						    bad, sizeof(bad),
						    "frame %u named %#llx "
						    "but stopped %s",
						    j,
						    (unsigned long long)
							f->fn_start,
						    smp_stop_name(k->stop));
				}
			}
		}
		n_samples_pool += inpool;
		if (i)
			gaps[i - 1] = k->time_ns - a.v[i - 1].time_ns;
	}
	uint64_t med_gap = 0;
	if (a.n > 2) {
		qsort(gaps, a.n - 1, sizeof(uint64_t), cmp_u64);
		med_gap = gaps[(a.n - 1) / 2];
	}
	free(gaps);

	CASE("samples of the storm arrive at the asked frequency")
	{
		printf("# %zu samples of the producer (%zu not kept), %llu "
		       "lost; median gap %.0f us; %zu with a pool frame\n",
		       a.n, a.dropped, (unsigned long long)st.lost,
		       (double)med_gap / 1e3, (size_t)n_samples_pool);
		printf("# stops:");
		for (int i = 0; i < SMP_STOP__N; i++)
			if (stops[i])
				printf(" %s %llu", smp_stop_name((unsigned)i),
				       (unsigned long long)stops[i]);
		printf("\n");
		CHECK(a.n >= 1000, "%zu samples", a.n);
		CHECK(n_samples_pool >= 1000, "%llu of %zu in the pool",
		      (unsigned long long)n_samples_pool, a.n);
	}
	CASE("zero wrong frames: each trace frame a function live at the "
	     "sample's time, holding its pc, its caller the code's RA")
	{
		printf("# %llu trace frames: %llu right (caller right in %llu, "
		       "last frame in %llu), %llu wrong function, %llu wrong "
		       "caller, %llu named from a discarded read%s%s\n",
		       (unsigned long long)n_trace, (unsigned long long)n_ok,
		       (unsigned long long)n_caller_ok,
		       (unsigned long long)n_last, (unsigned long long)n_bad_fn,
		       (unsigned long long)n_bad_caller,
		       (unsigned long long)n_unverified, bad[0] ? ": " : "",
		       bad);
		printf("# the region's history at the sample's time: %llu "
		       "agree, %llu disagree, %llu dropped (history_max)\n",
		       (unsigned long long)a.view_ok,
		       (unsigned long long)a.view_bad,
		       (unsigned long long)a.view_gone);
		CHECK(n_trace >= 500, "%llu trace frames",
		      (unsigned long long)n_trace);
		CHECK(n_bad_fn == 0 && n_bad_caller == 0, "%llu + %llu wrong",
		      (unsigned long long)n_bad_fn,
		      (unsigned long long)n_bad_caller);
		CHECK(n_unverified == 0,
		      "%llu frames named by a discarded "
		      "read",
		      (unsigned long long)n_unverified);
		CHECK(a.view_bad == 0, "%llu disagree",
		      (unsigned long long)a.view_bad);
		CHECK(a.view_ok > 0, "the region's history never answered");
		CHECK(n_caller_ok > 0, "no caller frame checked");
	}
	CASE("walks stopped at the pool: busy counted, never 'no trace' or "
	     "'corrupt' (the function was live)")
	{
		printf("# stopped at a pool frame:");
		for (int i = 0; i < SMP_STOP__N; i++)
			if (n_pool_stop[i])
				printf(" %s %llu", smp_stop_name((unsigned)i),
				       (unsigned long long)n_pool_stop[i]);
		printf("\n# BUSY: %llu samples stopped as region busy (%.2f%% "
		       "of the producer's), %llu in all by the program\n",
		       (unsigned long long)n_pool_stop[SMP_STOP_BUSY],
		       a.n ? 100.0 * (double)n_pool_stop[SMP_STOP_BUSY] /
				 (double)a.n
			   : 0.0,
		       (unsigned long long)st.stop[SMP_STOP_BUSY]);
		CHECK(n_pool_stop[SMP_STOP_NO_TRACE] == 0, "%llu no trace",
		      (unsigned long long)n_pool_stop[SMP_STOP_NO_TRACE]);
		CHECK(n_pool_stop[SMP_STOP_CORRUPT] == 0, "%llu corrupt",
		      (unsigned long long)n_pool_stop[SMP_STOP_CORRUPT]);
		CHECK(n_pool_stop[SMP_STOP_NO_REGION] == 0, "%llu no region",
		      (unsigned long long)n_pool_stop[SMP_STOP_NO_REGION]);
		CHECK(n_pool_stop[SMP_STOP_BUSY] > 0,
		      "no busy stop under a compaction storm");
	}
	a.view = NULL;
	if (view)
		jsf_view_close(view);
	atomic_store(&sh->done, 2);
	int status = 0;
	waitpid(a.pid, &status, 0);
	CASE("the producer exits cleanly")
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d",
	      status);
	smp_close(s);
	unlink(path);
	free(a.v);
	return h_exit();
}
