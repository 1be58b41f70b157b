/* SPDX-License-Identifier: MIT */
/*
 * Concurrency: reader threads look up random pcs non-stop while producers add
 * out of order, remove, flush and compact. Every answer must have been true
 * at some instant during that lookup (linearizability of single lookups).
 *
 * Ground truth: a global operation counter `ver`. Each producer operation
 * takes begin = ver++ before and end = ver++ after its library call, and
 * records both in a per-function table (written before it is needed).
 * ver++ records the value before the increment: a reader that loads
 * v <= begin loaded it before the call began, one that loads v > end after
 * the call ended (v == end may be either). A reader brackets each lookup
 * with v1 = ver, v2 = ver and checks:
 *  - found f: not (v2 <= add.begin) and not (v1 > remove.end), pc inside f,
 *    and the row is f's row at that offset (rows are a pure function of
 *    f's id);
 *  - -ENOENT: no function was certainly live over the whole lookup at pc,
 *    i.e. not (v1 > add.end and v2 <= remove.begin) for the slot's
 *    occupant. (Until session 10 this said v1 >= add.end: a lookup that
 *    began while the add was finishing was wrongly counted as a miss,
 *    about 1 in 10^7 lookups, 1 in 10^5 with a small history.)
 * Producers pass now_ns = the operation's begin counter, so time queries can
 * be checked too: a function found at time t has add_ns <= t < remove_ns.
 */
#include "harness.h"
#include "internal.h" /* sf_view_index_stats */
#include "jitsframe.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#define SLOTS 4096
#define SLOT_BYTES 4096u
#define BASE 0x7f1200000000ull
#define MAXF (1u << 21)
#define NEVER UINT64_MAX

struct fn {
	_Atomic uint64_t add_begin, add_end, rm_begin, rm_end;
	uint64_t start;
	uint32_t size;
};

static struct fn *fns;	      /* by id; id 0 unused */
static _Atomic uint32_t nfns; /* ids handed out */
static _Atomic uint64_t ver = 2;
static _Atomic uint32_t slot_id[SLOTS]; /* current occupant, 0: none */
static uint32_t nslots = SLOTS; /* slots in use (the dense case: fewer) */
static _Atomic bool stop;
static struct jsf_region *region;
static const char *path;
static uint64_t ops_target;
/* The third case: producers that pause between operations (so that readers
 * see stable tables and index them) and run ascending, not descending. */
static unsigned pace_us;
static bool ascending;
static _Atomic uint64_t ix_builds, ix_answers, tx_builds, tx_answers;
/* What a case needs to have happened before its producers stop, past
 * their ops_target (up to 8 times it): under load (ASan beside other
 * tests) a run can end first (CI: a reader's index of the log never built
 * in 213,232 lookups; here with both cores busy, 0-8 SIGPROF lookups).
 * NEED_TX: a reader's index of the log answered (tx_live) and the
 * readers found 10,000 functions (case 4 once found 9,705); NEED_SIG: the
 * SIGPROF handler looked up 80 times and found one. */
enum { NEED_NONE, NEED_TX, NEED_SIG };
static _Atomic int need;
static _Atomic bool tx_live;
static _Atomic uint64_t found_live; /* the readers' found so far */
static bool needs_met(void);
static _Atomic uint64_t bad, lookups, found, again, timeq;

/* Rows: a pure function of the id, so readers can recompute them. */
static uint32_t rows_of(uint32_t id, uint32_t size, struct jsf_row *rows)
{
	uint32_t n = 1 + id % 6;
	if (n > size)
		n = size;
	for (uint32_t k = 0; k < n; k++) {
		rows[k] = (struct jsf_row){0};
		rows[k].offset = k * (size / n);
		rows[k].cfa_base = (id + k) % 3 ? JSF_SP : JSF_FP;
		rows[k].cfa_offset = (int32_t)(id * 8 + k) + 8; /* encodes id */
		rows[k].has_fp = (id + k) & 1;
		rows[k].fp_offset = rows[k].has_fp ? -(int32_t)(16 + k) : 0;
	}
	return n;
}

static bool row_matches(uint32_t id, const struct fn *f, uint64_t pc,
			const struct jsf_row *got)
{
	struct jsf_row rows[8];
	uint32_t n = rows_of(id, f->size, rows),
		 off = (uint32_t)(pc - f->start);
	const struct jsf_row *w = &rows[0];
	for (uint32_t k = 0; k < n; k++)
		if (rows[k].offset <= off)
			w = &rows[k];
	return got->offset == w->offset && got->cfa_base == w->cfa_base &&
	       got->cfa_offset == w->cfa_offset && got->has_fp == w->has_fp &&
	       (!w->has_fp || got->fp_offset == w->fp_offset);
}

/* The id a found row claims (its CFA offset encodes it), checked against
 * the table: start, size and the row itself must all agree. */
static uint32_t id_of(uint64_t start, uint32_t size, const struct jsf_row *r,
		      uint64_t pc)
{
	if (r->cfa_offset < 8)
		return 0;
	uint32_t id = (uint32_t)(r->cfa_offset - 8) / 8;
	if (id == 0 || id > atomic_load(&nfns))
		return 0;
	const struct fn *f = &fns[id];
	if (f->start != start || f->size != size || !row_matches(id, f, pc, r))
		return 0;
	return id;
}

static struct {
	pthread_mutex_t mu; /* producers pick disjoint slots through it */
} P = {PTHREAD_MUTEX_INITIALIZER};

/* A call of the API that failed (a producer's, or a reader's open):
 * counted as an inconsistency, and said (the first five), so that a run
 * that fails shows which call and why */
static void call_failed(const char *call, int rc)
{
	if (atomic_fetch_add(&bad, 1) < 5)
		printf("#   %s failed: %s\n", call, jsf_strerror(rc));
}

static void *producer(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	struct jsf_row rows[8];
	/* past ops_target while the case's needs are not met (need) */
	for (uint64_t op = 0;
	     (op < ops_target || (!needs_met() && op < 8 * ops_target)) &&
	     !atomic_load(&stop);
	     op++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		uint32_t dice = (uint32_t)(seed % 1000);
		if (dice == 0) { /* a flush: every function at once */
			pthread_mutex_lock(&P.mu);
			uint64_t b = atomic_fetch_add(&ver, 1);
			for (uint32_t s = 0; s < SLOTS; s++) {
				uint32_t id = atomic_load(&slot_id[s]);
				if (id)
					atomic_store(&fns[id].rm_begin, b);
			}
			int rc = jsf_region_remove_all(region, b);
			uint64_t e = atomic_fetch_add(&ver, 1);
			for (uint32_t s = 0; s < SLOTS; s++) {
				uint32_t id = atomic_exchange(&slot_id[s], 0);
				if (id)
					atomic_store(&fns[id].rm_end, e);
			}
			pthread_mutex_unlock(&P.mu);
			if (rc)
				call_failed("jsf_region_remove_all", rc);
			continue;
		}
		if (dice < 3) {
			jsf_region_compact(region);
			continue;
		}
		/* Runs of descending slots (LuaJIT's order) and random ones. */
		uint32_t run = (uint32_t)(ascending ? op % nslots
						    : nslots - 1 - op % nslots);
		uint32_t s =
		    dice < 500 ? run : (uint32_t)((seed >> 20) % nslots);
		if (pace_us)
			usleep(pace_us);
		pthread_mutex_lock(&P.mu);
		uint32_t id = atomic_load(&slot_id[s]);
		if (id) {
			uint64_t b = atomic_fetch_add(&ver, 1);
			atomic_store(&fns[id].rm_begin, b);
			int rc = jsf_region_remove(region, fns[id].start, b);
			atomic_store(&slot_id[s], 0);
			atomic_store(&fns[id].rm_end,
				     atomic_fetch_add(&ver, 1));
			if (rc)
				call_failed("jsf_region_remove", rc);
		} else {
			id = atomic_load(&nfns) + 1;
			if (id >= MAXF) {
				pthread_mutex_unlock(&P.mu);
				break;
			}
			struct fn *f = &fns[id];
			uint32_t a = (uint32_t)((seed >> 8) % 64);
			f->size = 1 + (uint32_t)((seed >> 16) %
						 (SLOT_BYTES - 64 - 1));
			f->start = BASE + (uint64_t)s * SLOT_BYTES + a;
			atomic_store(&f->rm_begin, NEVER);
			atomic_store(&f->rm_end, NEVER);
			atomic_store(&f->add_end, NEVER);
			uint64_t b = atomic_fetch_add(&ver, 1);
			atomic_store(&f->add_begin, b);
			atomic_store(&nfns, id);
			uint32_t n = rows_of(id, f->size, rows);
			int rc = jsf_region_add(region, f->start, f->size, rows,
						n, b);
			atomic_store(&slot_id[s], id);
			atomic_store(&f->add_end, atomic_fetch_add(&ver, 1));
			if (rc)
				call_failed("jsf_region_add", rc);
		}
		pthread_mutex_unlock(&P.mu);
	}
	return NULL;
}

static void report(const char *what, uint64_t pc, uint64_t v1, uint64_t v2)
{
	if (atomic_fetch_add(&bad, 1) < 5)
		printf("#   inconsistent: %s pc %#llx window [%llu, %llu]\n",
		       what, (unsigned long long)pc, (unsigned long long)v1,
		       (unsigned long long)v2);
}

/*
 * jsf_view_lookup from a SIGPROF handler (its AS-safety): the profiling
 * timer interrupts the producers themselves, also while they hold the
 * region's mutex; every lookup must still answer, and answer right. Under
 * ThreadSanitizer a lock or an allocation inside the handler is reported
 * ("signal-unsafe call inside of a signal") and fails the run.
 */
static struct jsf_view *sig_view;
static _Atomic uint64_t sig_calls, sig_found, sig_bad, sig_seed = 12345;

static void on_prof(int sig)
{
	(void)sig;
	int saved = errno;
	uint64_t seed = atomic_fetch_add(&sig_seed, 0x9e3779b97f4a7c15ull);
	for (int i = 0; i < 8; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		uint64_t pc = BASE + (uint64_t)(seed % SLOTS) * SLOT_BYTES +
			      (seed >> 40) % SLOT_BYTES;
		uint64_t fs = 0;
		uint32_t fz = 0;
		struct jsf_row row;
		int rc = jsf_view_lookup(sig_view, pc, 0, &fs, &fz, &row);
		atomic_fetch_add(&sig_calls, 1);
		if (rc == 0) {
			atomic_fetch_add(&sig_found, 1);
			if (!id_of(fs, fz, &row, pc) || pc - fs >= fz)
				atomic_fetch_add(&sig_bad, 1);
		} else if (rc != -ENOENT && rc != -EAGAIN) {
			atomic_fetch_add(&sig_bad, 1);
		}
	}
	errno = saved;
}

static bool needs_met(void)
{
	switch (atomic_load(&need)) {
	case NEED_TX:
		return atomic_load(&tx_live) &&
		       atomic_load(&found_live) >= 10000;
	case NEED_SIG:
		return atomic_load(&sig_calls) >= 80 &&
		       atomic_load(&sig_found) > 0;
	default:
		return true;
	}
}

static void *reader(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg * 0xda942042e4dd58b5ull + 7;
	struct jsf_view *v;
	int oerr = jsf_view_open(&v, path);
	if (oerr) {
		call_failed("jsf_view_open", oerr);
		return NULL;
	}
	uint64_t n = 0, nf = 0, na = 0, nt = 0, nf_told = 0;
	while (!atomic_load(&stop)) {
		if (!(n & 4095)) { /* progress, for needs_met */
			uint64_t tb, ta;
			sf_view_tindex_stats(v, &tb, &ta);
			if (ta)
				atomic_store(&tx_live, true);
			atomic_fetch_add(&found_live, nf - nf_told);
			nf_told = nf;
		}
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		uint32_t s = (uint32_t)(seed % nslots);
		uint64_t pc =
		    BASE + (uint64_t)s * SLOT_BYTES + (seed >> 40) % SLOT_BYTES;
		bool past = (seed >> 12) % 64 == 0;
		uint64_t v1 = atomic_load(&ver);
		/* a past time, never 0 (which means "now"), never wrapped */
		uint64_t back = (seed >> 20) % 2000;
		uint64_t t = past ? (v1 > back + 1 ? v1 - back : 1) : 0;
		uint64_t fs = 0;
		uint32_t fz = 0;
		struct jsf_row row;
		int rc = jsf_view_lookup(v, pc, t, &fs, &fz, &row);
		uint64_t v2 = atomic_load(&ver);
		n++;
		if (rc == -EAGAIN) {
			na++;
			continue;
		}
		if (past) {
			nt++;
			if (rc == 0) {
				uint32_t id = id_of(fs, fz, &row, pc);
				if (!id)
					report("time query: unknown function",
					       pc, v1, v2);
				/* live at t: added by t, and removed after t
				 * (or its removal had not completed when the
				 * lookup began: then "live" was true then) */
				else if (!(atomic_load(&fns[id].add_begin) <=
					       t &&
					   (t < atomic_load(
						    &fns[id].rm_begin) ||
					    atomic_load(&fns[id].rm_end) > v1)))
					report("time query: function not live "
					       "at t",
					       pc, t, t);
			} else if (rc != -ENOENT) {
				report("time query: error", pc, v1, v2);
			}
			continue;
		}
		if (rc == 0) {
			nf++;
			uint32_t id = id_of(fs, fz, &row, pc);
			if (!id) {
				report("found an unknown function or wrong row",
				       pc, v1, v2);
				continue;
			}
			struct fn *f = &fns[id];
			if (pc < f->start || pc - f->start >= f->size)
				report("pc outside the function", pc, v1, v2);
			if (atomic_load(&f->add_begin) >= v2 ||
			    atomic_load(&f->rm_end) < v1)
				report("function not live during the lookup",
				       pc, v1, v2);
		} else if (rc == -ENOENT) {
			uint32_t id = atomic_load(&slot_id[s]);
			if (id) {
				struct fn *f = &fns[id];
				if (pc >= f->start && pc - f->start < f->size &&
				    atomic_load(&f->add_end) < v1 &&
				    atomic_load(&f->rm_begin) >= v2)
					report(
					    "missed a function live throughout",
					    pc, v1, v2);
			}
		} else {
			report("unexpected error", pc, v1, v2);
		}
	}
	atomic_fetch_add(&lookups, n);
	atomic_fetch_add(&found, nf);
	atomic_fetch_add(&again, na);
	atomic_fetch_add(&timeq, nt);
	uint64_t b, a;
	sf_view_index_stats(v, &b, &a);
	atomic_fetch_add(&ix_builds, b);
	atomic_fetch_add(&ix_answers, a);
	sf_view_tindex_stats(v, &b, &a);
	atomic_fetch_add(&tx_builds, b);
	atomic_fetch_add(&tx_answers, a);
	jsf_view_close(v);
	return NULL;
}

/* The functions, slots and readers' counts back to none. */
static void reset_counts(void)
{
	memset(fns, 0, MAXF * sizeof(*fns));
	memset(slot_id, 0, sizeof(slot_id));
	atomic_store(&nfns, 0);
	atomic_store(&stop, false);
	atomic_store(&lookups, 0);
	atomic_store(&found, 0);
	atomic_store(&again, 0);
	atomic_store(&timeq, 0);
	atomic_store(&tx_builds, 0);
	atomic_store(&tx_answers, 0);
	atomic_store(&tx_live, false);
	atomic_store(&found_live, 0);
	atomic_store(&bad, 0);
}

/* A region of history_max, 2 readers, 2 producers to their ops_target. */
static void run_threads(uint32_t history_max)
{
	struct jsf_region_opts o = {
	    .sz = sizeof(o), .initial_funcs = 16, .history_max = history_max};
	CHECK_EQ(jsf_region_create(&region, path, &o), 0);
	pthread_t pt[2], rt[2];
	for (uintptr_t i = 0; i < 2; i++)
		pthread_create(&rt[i], NULL, reader, (void *)(i + 1));
	for (uintptr_t i = 0; i < 2; i++)
		pthread_create(&pt[i], NULL, producer, (void *)(i + 1));
	for (int i = 0; i < 2; i++)
		pthread_join(pt[i], NULL);
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(rt[i], NULL);
}

/* Case 1's run: 2 producers over nslots slots, 2 readers, history_max. */
static void readers_case(uint32_t history_max)
{
	reset_counts();
	atomic_store(&need, NEED_TX);
	run_threads(history_max);
	atomic_store(&need, NEED_NONE);
	struct jsf_region_stats st = {.sz = sizeof(st)};
	jsf_region_stats(region, &st);
	printf("# %llu lookups (%llu found, %llu past-time, %llu EAGAIN), "
	       "%u functions, %llu compactions, seq %llu, %llu "
	       "inconsistencies; the log's index built %llu times, answered "
	       "%llu past-time lookups\n",
	       (unsigned long long)lookups, (unsigned long long)found,
	       (unsigned long long)timeq, (unsigned long long)again,
	       atomic_load(&nfns), (unsigned long long)st.compactions,
	       (unsigned long long)st.seq, (unsigned long long)bad,
	       (unsigned long long)tx_builds, (unsigned long long)tx_answers);
	CHECK_EQ(atomic_load(&bad), 0);
	/* enough found functions for the checks to mean something; not
	 * a ratio: under TSan the readers outrun the producers (4.9% of
	 * lookups found in one CI-like run, 6% in another) */
	CHECK(lookups > 1000 && found >= 10000,
	      "the readers did real work (%llu lookups, %llu found)",
	      (unsigned long long)lookups, (unsigned long long)found);
	CHECK(again * 1000 <= lookups, "bounded retries rarely give up");
	/* the past-time answers checked above came through the log's index
	 * too (view.c: 5,000-130,000 of them in rel, ASan and TSan runs) */
	CHECK(tx_builds > 0 && tx_answers > 0,
	      "the log's index answered past-time lookups (%llu builds, %llu "
	      "answers)",
	      (unsigned long long)tx_builds, (unsigned long long)tx_answers);
	char msg[256];
	CHECK(jsf_validate_region(path, msg, sizeof(msg)) == 0, "%s", msg);
	jsf_region_destroy(region);
}

/* Case 5's grower: the file grows as a producer grows it (ensure_file:
 * ftruncate, then the header's file_size), a page at a time, until
 * stopped or at max_size; the producer itself adds nothing meanwhile. */
static _Atomic bool grow_stop;
static _Atomic uint64_t grown;
static void *grower(void *arg)
{
	(void)arg;
	int fd = open(path, O_RDWR | O_CLOEXEC);
	uint64_t sz = 0, max = 0;
	if (fd < 0 || pread(fd, &sz, 8, RH_FILE_SIZE) != 8 ||
	    pread(fd, &max, 8, RH_MAX_SIZE) != 8) {
		call_failed("the grower's open or read", -errno);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while (!atomic_load(&grow_stop) && sz + 4096 <= max) {
		sz += 4096;
		if (ftruncate(fd, (off_t)sz) < 0 ||
		    pwrite(fd, &sz, 8, RH_FILE_SIZE) != 8) {
			call_failed("the grower's ftruncate or write", -errno);
			break;
		}
		atomic_fetch_add(&grown, 1);
	}
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	/* argv[1]: producer operations per producer (smaller under TSan). */
	ops_target = argc > 1 ? strtoull(argv[1], NULL, 0) : 400000;
	char dir[] = "/tmp/jsf-t_conc-XXXXXX";
	if (!mkdtemp(dir))
		return 2;
	static char p[64];
	snprintf(p, sizeof(p), "%s/region", dir);
	path = p;
	fns = calloc(MAXF, sizeof(*fns));
	CASE("readers never see a state that did not exist (2 producers, 2 "
	     "readers)")
	readers_case(5000);
	unlink(path);
	CASE("lookups from a SIGPROF handler interrupting the producers")
	{
		memset(fns, 0, MAXF * sizeof(*fns));
		atomic_store(&nfns, 0);
		atomic_store(&stop, false);
		struct jsf_region_opts o = {
		    .sz = sizeof(o), .initial_funcs = 16, .history_max = 5000};
		CHECK_EQ(jsf_region_create(&region, path, &o), 0);
		CHECK_EQ(jsf_view_open(&sig_view, path), 0);
		struct sigaction sa = {.sa_handler = on_prof,
				       .sa_flags = SA_RESTART};
		sigemptyset(&sa.sa_mask);
		sigaction(SIGPROF, &sa, NULL);
		struct itimerval it = {{0, 200}, {0, 200}};
		setitimer(ITIMER_PROF, &it, NULL);
		uint64_t target = ops_target;
		ops_target = target / 4 ? target / 4 : 1;
		pthread_t pt[2];
		atomic_store(&need, NEED_SIG);
		for (uintptr_t i = 0; i < 2; i++)
			pthread_create(&pt[i], NULL, producer, (void *)(i + 1));
		for (int i = 0; i < 2; i++)
			pthread_join(pt[i], NULL);
		atomic_store(&need, NEED_NONE);
		struct itimerval off = {{0, 0}, {0, 0}};
		setitimer(ITIMER_PROF, &off, NULL);
		signal(SIGPROF, SIG_IGN);
		ops_target = target;
		printf("# %llu lookups in a SIGPROF handler, %llu found\n",
		       (unsigned long long)atomic_load(&sig_calls),
		       (unsigned long long)atomic_load(&sig_found));
		CHECK_EQ(atomic_load(&sig_bad), 0);
		CHECK(atomic_load(&sig_calls) >= 80 &&
			  atomic_load(&sig_found) > 0,
		      "the handler ran (%llu lookups, %llu found)",
		      (unsigned long long)atomic_load(&sig_calls),
		      (unsigned long long)atomic_load(&sig_found));
		jsf_view_close(sig_view);
		jsf_region_destroy(region);
	}
	unlink(path);
	CASE("readers through the view's index (paced ascending producers)")
	{
		reset_counts(); /* bad too: case 2 checks sig_bad alone */
		atomic_store(&ix_builds, 0);
		atomic_store(&ix_answers, 0);
		pace_us = 200;
		ascending = true;
		uint64_t target = ops_target;
		ops_target = 3000; /* ~1 s at the pace, under TSan too */
		run_threads(5000);
		ops_target = target;
		pace_us = 0;
		ascending = false;
		printf("# %llu lookups (%llu found), %llu inconsistencies; the "
		       "index was built %llu times and answered %llu\n",
		       (unsigned long long)lookups, (unsigned long long)found,
		       (unsigned long long)bad, (unsigned long long)ix_builds,
		       (unsigned long long)ix_answers);
		CHECK_EQ(atomic_load(&bad), 0);
		CHECK(found >= 1000, "the readers found functions (%llu)",
		      (unsigned long long)found);
		CHECK(ix_builds >= 10 && ix_answers * 4 >= lookups,
		      "the index was built and answered a quarter of the "
		      "lookups (%llu builds, %llu of %llu)",
		      (unsigned long long)ix_builds,
		      (unsigned long long)ix_answers,
		      (unsigned long long)lookups);
		jsf_region_destroy(region);
	}
	unlink(path);
	/* Dense: an eighth of the slots (readers find a function 6 times as
	 * often) and a small history, so that most rebuilds drop history and
	 * re-map the log. The oracle's off-by-one (see the top) showed here
	 * in most runs, in case 1 once in some 10^7 lookups. */
	CASE("readers never see a state that did not exist (dense slots, "
	     "history_max 300)")
	{
		uint64_t target = ops_target;
		ops_target = target / 2 ? target / 2 : 1;
		nslots = SLOTS / 8;
		readers_case(300);
		nslots = SLOTS;
		ops_target = target;
	}
	unlink(path);
	/* A reader opening a live region while its file grows: the header
	 * read after the file's size could say more than that size showed,
	 * and the open failed with "file truncated" (one CI run of case 1,
	 * 1 in 40 runs here, before view.c read the size after the header) */
	CASE("views opened while the file grows see no truncation")
	{
		struct jsf_region_opts o = {.sz = sizeof(o),
					    .max_size = 1ull << 32};
		CHECK_EQ(jsf_region_create(&region, path, &o), 0);
		atomic_store(&grow_stop, false);
		pthread_t gt;
		pthread_create(&gt, NULL, grower, NULL);
		uint64_t opens = 0, fails = 0;
		while (opens < 20000 || atomic_load(&grown) < 1000) {
			struct jsf_view *v;
			int rc = jsf_view_open(&v, path);
			opens++;
			if (rc) {
				if (fails++ < 3)
					printf("#   open %llu: %s\n",
					       (unsigned long long)opens,
					       jsf_view_error());
				continue;
			}
			jsf_view_close(v);
			if (opens > 2000000)
				break;
		}
		atomic_store(&grow_stop, true);
		pthread_join(gt, NULL);
		printf("# %llu opens, %llu failed, while the file grew %llu "
		       "times\n",
		       (unsigned long long)opens, (unsigned long long)fails,
		       (unsigned long long)atomic_load(&grown));
		CHECK_EQ(fails, 0);
		CHECK(atomic_load(&grown) >= 1000,
		      "the file grew during the opens (%llu times)",
		      (unsigned long long)atomic_load(&grown));
		jsf_region_destroy(region);
	}
	unlink(path);
	rmdir(dir);
	free(fns);
	return h_exit();
}
