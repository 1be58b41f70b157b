/* SPDX-License-Identifier: MIT */
/*
 * The in-kernel sampler (sampler/), as root with BPF (skips visibly
 * otherwise; fails under CI=true). Ground truth independent of the
 * sampler:
 *  - a forked child runs a known C call chain (main -> chain_a -> chain_b
 *    -> chain_c -> spin) and writes its own return addresses
 *    (__builtin_return_address) to a shared page: the samples whose leaf
 *    is in spin must have exactly those callers, up to main and on to the
 *    outermost frame;
 *  - a LuaJIT child with the module started (its region): every trace
 *    frame's fn_start is the start of the region function that covered the
 *    frame's pc at the sample's time (jsf_view_lookup on the region,
 *    another reader of the same file);
 *  - with raw_every = 1 the raw copies' ip and sp are the sample's first
 *    frame (ip) and stack (the stack copy holds the return address of the
 *    leaf where the walk found it).
 * At the end: the BPF run time per sample (kernel.bpf_stats_enabled).
 */
#include "harness.h"
#include "jitsframe.h"
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "smp_child.h"

struct acc {
	int cpid, lpid;
	struct jsf_view *view;
	/* the C child */
	uint64_t c_samples, c_spin, c_exact, c_main, c_outer;
	uint64_t frames;
	/* the LuaJIT child */
	uint64_t l_samples, l_trace_samples, l_trace_frames, l_fn_ok, l_fn_bad,
	    l_fn_unknown, l_outer_through;
	uint64_t stop[SMP_STOP__N];
	/* raw copies */
	uint64_t raw, raw_ip_ok, raw_sp_ok, raw_empty;
	char bad[256], rawbad[160];
};

static int on_event(const struct smp_event *e, void *ctx)
{
	struct acc *a = ctx;
	const struct smp_sample *s = e->s;
	a->frames += s->nframes;
	if (s->stop < SMP_STOP__N)
		a->stop[s->stop]++;
	if (e->raw) {
		a->raw++;
		if (s->nframes && e->raw->ip == s->frames[0].pc)
			a->raw_ip_ok++;
		/* the caller's return address where the walk read it: in the
		 * copy of the stack from sp (anywhere in it: a frame of the
		 * dynamic loader's at the child's start is bigger than 4 KB).
		 * A copy of nothing is one the kernel could not read at all
		 * (the page of sp not resident: BPF cannot fault), counted
		 * apart. */
		int in = s->nframes < 2;
		for (uint32_t o = 0; !in && o + 8 <= e->raw->len; o += 8) {
			uint64_t v;
			memcpy(&v, e->raw->stack + o, 8);
			in = v == s->frames[1].pc;
		}
		if (e->raw->id == s->id && e->raw->pid == s->pid && in)
			a->raw_sp_ok++;
		else if (!e->raw->len)
			a->raw_empty++;
		else if (!a->rawbad[0])
			snprintf(
			    a->rawbad, sizeof(a->rawbad),
			    "a copy of %u bytes without the return address "
			    "0x%llx (pc 0x%llx, %u frames)",
			    e->raw->len,
			    (unsigned long long)(s->nframes > 1
						     ? s->frames[1].pc
						     : 0),
			    (unsigned long long)e->raw->ip, s->nframes);
	}
	if ((int)s->pid == a->cpid) {
		a->c_samples++;
		if (s->nframes >= 2 && s->frames[1].pc == truth[0]) {
			a->c_spin++;
			if (s->nframes >= 5 && s->frames[2].pc == truth[1] &&
			    s->frames[3].pc == truth[2] &&
			    (s->frames[4].pc == truth[3] ||
			     s->frames[4].pc == truth[4]))
				a->c_exact++;
			else if (!a->bad[0])
				snprintf(
				    a->bad, sizeof(a->bad),
				    "%u frames, stop %s: %#llx %#llx %#llx "
				    "%#llx %#llx, the child's %#llx %#llx "
				    "%#llx %#llx",
				    s->nframes, smp_stop_name(s->stop),
				    (unsigned long long)s->frames[0].pc,
				    (unsigned long long)s->frames[1].pc,
				    (unsigned long long)s->frames[2].pc,
				    (unsigned long long)s->frames[3].pc,
				    (unsigned long long)s->frames[4].pc,
				    (unsigned long long)truth[0],
				    (unsigned long long)truth[1],
				    (unsigned long long)truth[2],
				    (unsigned long long)truth[3]);
			if (s->nframes >= 5 &&
			    (s->frames[4].pc == truth[3] ||
			     s->frames[4].pc == truth[4]) &&
			    s->stop == SMP_STOP_OUTERMOST) {
				a->c_main++;
				a->c_outer++;
			}
		}
	} else if ((int)s->pid == a->lpid) {
		a->l_samples++;
		int through = 0;
		for (unsigned i = 0; i < s->nframes; i++) {
			const struct smp_frame *f = &s->frames[i];
			if (!f->fn_start)
				continue;
			through = 1;
			a->l_trace_frames++;
			uint64_t fs = 0;
			uint64_t look = i ? f->pc - 1 : f->pc;
			int rc =
			    a->view ? jsf_view_lookup(a->view, look, s->time_ns,
						      &fs, NULL, NULL)
				    : -ENOENT;
			if (rc)
				a->l_fn_unknown++;
			else if (fs == f->fn_start)
				a->l_fn_ok++;
			else
				a->l_fn_bad++;
		}
		if (through) {
			a->l_trace_samples++;
			if (s->stop == SMP_STOP_OUTERMOST)
				a->l_outer_through++;
		}
	}
	return 0;
}

static int open_sampler(struct smp **s, uint32_t raw_every, char *msg,
			size_t len)
{
	struct smp_opts o = {
	    .sz = sizeof(o), .hz = 999, .raw_every = raw_every};
	return smp_open(s, &o, msg, len);
}

static void run_for(struct smp *s, struct acc *a, uint64_t ms)
{
	uint64_t end = mono_ns() + ms * 1000000ull;
	while (mono_ns() < end)
		smp_poll(s, 50, on_event, a);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	int stats_fd = open("/proc/sys/kernel/bpf_stats_enabled", O_RDWR);
	char old_stats = '0';
	if (stats_fd >= 0) {
		if (pread(stats_fd, &old_stats, 1, 0) != 1)
			old_stats = '0';
		if (pwrite(stats_fd, "1", 1, 0) != 1)
			printf("# could not enable kernel.bpf_stats_enabled\n");
	}
	char msg[512];
	struct smp *s = NULL;
	int err = open_sampler(&s, 0, msg, sizeof(msg));
	if (err) {
		if (stats_fd >= 0 && pwrite(stats_fd, &old_stats, 1, 0) != 1)
			perror("bpf_stats_enabled");
		char why[600];
		snprintf(why, sizeof(why), "the sampler does not load: %s",
			 msg);
		return h_skip_or_fail(why);
	}
	truth = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (truth == MAP_FAILED)
		return 1;
	struct acc a = {0};
	a.cpid = fork();
	if (a.cpid == 0) {
		for (;;)
			chain_a();
	}
	while (!truth[3])
		usleep(1000);

	CASE("watch a C child: its mappings and objects' rows loaded")
	{
		err = smp_watch(s, a.cpid, NULL, msg, sizeof(msg));
		CHECK(err == 0, "smp_watch: %d %s", err, msg);
		printf("# %s\n", msg);
		struct smp_stats st;
		smp_stats(s, &st);
		CHECK(st.objects >= 2 && st.rows > 1000, "%u objects, %u rows",
		      st.objects, st.rows);
		printf("# %u objects, %u rows\n", st.objects, st.rows);
	}
	run_for(s, &a, 1500);
	CASE("C chain: samples arrive, every one in spin has the callers "
	     "the child saw, up to main, outermost beyond")
	{
		printf("# C child: %llu samples, %llu in spin, %llu exact, "
		       "%llu reached main and the outermost frame\n",
		       (unsigned long long)a.c_samples,
		       (unsigned long long)a.c_spin,
		       (unsigned long long)a.c_exact,
		       (unsigned long long)a.c_outer);
		CHECK(a.c_samples >= 100, "%llu samples",
		      (unsigned long long)a.c_samples);
		CHECK(a.c_spin >= a.c_samples / 2, "%llu of %llu in spin",
		      (unsigned long long)a.c_spin,
		      (unsigned long long)a.c_samples);
		CHECK(a.c_exact == a.c_spin,
		      "%llu of %llu exact (first bad: %s)",
		      (unsigned long long)a.c_exact,
		      (unsigned long long)a.c_spin, a.bad);
		CHECK(a.c_main == a.c_spin, "%llu of %llu reach main",
		      (unsigned long long)a.c_main,
		      (unsigned long long)a.c_spin);
	}
	smp_unwatch(s, a.cpid);

	/* the LuaJIT child, with the module and its region */
	int have_lua = access("build/lua/jitsframe.so", R_OK) == 0 &&
		       access("bench/workloads/numeric.lua", R_OK) == 0;
	if (!have_lua) {
		const char *ci = getenv("CI");
		if (ci && !strcmp(ci, "true")) {
			CASE("the LuaJIT child (build/lua/jitsframe.so)")
			CHECK(0, "build/lua/jitsframe.so missing");
		} else {
			printf(
			    "# SKIP the LuaJIT child: build/lua/jitsframe.so "
			    "missing (make build/lua/jitsframe.so)\n");
		}
	} else {
		int go[2];
		if (pipe(go))
			return 1;
		a.lpid = fork();
		if (a.lpid == 0) {
			char b;
			close(go[1]);
			if (read(go[0], &b, 1) != 1)
				_exit(1);
			setenv("LUA_CPATH", "build/lua/?.so;;", 1);
			execlp("luajit", "luajit", "-e",
			       "require('jitsframe').start{}",
			       "bench/workloads/numeric.lua", "2",
			       (char *)NULL);
			_exit(127);
		}
		close(go[0]);
		/* watch it from its start: the mappings are refreshed by the
		 * sampler when samples meet new ones, the region looked for
		 * until it exists */
		if (write(go[1], "g", 1) != 1)
			return 1;
		close(go[1]);
		char path[4096];
		int found = -1;
		uint64_t t0 = mono_ns();
		while (mono_ns() - t0 < 3000000000ull) {
			found = jsf_region_find(a.lpid, 0, path, sizeof(path));
			if (!found)
				break;
			usleep(2000);
		}
		CASE("the LuaJIT child's region is found and opened")
		{
			CHECK(found == 0, "jsf_region_find: %d", found);
			if (found)
				break;
			err = jsf_view_open(&a.view, path);
			CHECK(err == 0, "jsf_view_open %s: %d", path, err);
			err = smp_watch(s, a.lpid, NULL, msg, sizeof(msg));
			CHECK(err == 0, "smp_watch: %d %s", err, msg);
			printf("# %s\n", msg);
		}
		int st = 0;
		while (waitpid(a.lpid, &st, WNOHANG) == 0)
			smp_poll(s, 50, on_event, &a);
		run_for(s, &a, 100);
		CASE("LuaJIT: samples through trace code, each trace frame the "
		     "region function live at the sample's time")
		{
			printf("# LuaJIT child: %llu samples, %llu through "
			       "trace code (%llu of them outermost), %llu "
			       "trace frames: %llu fn_start right, %llu wrong, "
			       "%llu not found by the reader\n",
			       (unsigned long long)a.l_samples,
			       (unsigned long long)a.l_trace_samples,
			       (unsigned long long)a.l_outer_through,
			       (unsigned long long)a.l_trace_frames,
			       (unsigned long long)a.l_fn_ok,
			       (unsigned long long)a.l_fn_bad,
			       (unsigned long long)a.l_fn_unknown);
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			      "luajit status %d", st);
			CHECK(a.l_samples >= 50, "%llu samples",
			      (unsigned long long)a.l_samples);
			CHECK(a.l_trace_samples >= a.l_samples / 4,
			      "%llu of %llu through traces",
			      (unsigned long long)a.l_trace_samples,
			      (unsigned long long)a.l_samples);
			CHECK(a.l_fn_bad == 0 && a.l_fn_unknown == 0,
			      "%llu wrong, %llu unknown",
			      (unsigned long long)a.l_fn_bad,
			      (unsigned long long)a.l_fn_unknown);
		}
		if (a.view)
			jsf_view_close(a.view);
		a.view = NULL;
		smp_unwatch(s, a.lpid);
	}
	struct smp_stats st;
	smp_stats(s, &st);
	printf("# stops:");
	for (int i = 0; i < SMP_STOP__N; i++)
		if (st.stop[i])
			printf(" %s %llu", smp_stop_name((unsigned)i),
			       (unsigned long long)st.stop[i]);
	printf("\n# %llu samples, %llu lost, %.1f frames per sample\n",
	       (unsigned long long)st.samples, (unsigned long long)st.lost,
	       st.samples ? (double)a.frames / (double)st.samples : 0.0);
	if (st.run_cnt && st.samples)
		printf("# BPF run time (bpf_stats): %.2f us per walked sample "
		       "(%llu ns over %llu samples; %llu runs in all, "
		       "%.2f us each, the others' samples left at once)\n",
		       (double)st.run_ns / 1000.0 / (double)st.samples,
		       (unsigned long long)st.run_ns,
		       (unsigned long long)st.samples,
		       (unsigned long long)st.run_cnt,
		       (double)st.run_ns / 1000.0 / (double)st.run_cnt);
	else
		printf("# BPF run time: unknown (kernel.bpf_stats_enabled "
		       "off)\n");
	printf("# verifier: smp_on_sample %u processed instructions of "
	       "1000000\n",
	       st.verified_insns);
	smp_close(s);

	/* raw copies: a second load with raw_every = 1 */
	CASE("raw_every = 1: each sample's raw copy has its ip and stack")
	{
		err = open_sampler(&s, 1, msg, sizeof(msg));
		CHECK(err == 0, "smp_open: %s", msg);
		if (err)
			break;
		err = smp_watch(s, a.cpid, NULL, msg, sizeof(msg));
		CHECK(err == 0, "smp_watch: %s", msg);
		uint64_t before = a.c_samples;
		run_for(s, &a, 500);
		smp_stats(s, &st);
		printf("# %llu samples, %llu raw copies (%llu raw in the "
		       "kernel), ip equal in %llu, stack in %llu, %llu empty "
		       "(unreadable)\n",
		       (unsigned long long)(a.c_samples - before),
		       (unsigned long long)a.raw, (unsigned long long)st.raw,
		       (unsigned long long)a.raw_ip_ok,
		       (unsigned long long)a.raw_sp_ok,
		       (unsigned long long)a.raw_empty);
		printf("# verifier (raw_every = 1): smp_on_sample %u processed "
		       "instructions of 1000000\n",
		       st.verified_insns);
		CHECK(a.raw >= 20, "%llu raw", (unsigned long long)a.raw);
		CHECK(a.raw_ip_ok == a.raw, "%llu of %llu",
		      (unsigned long long)a.raw_ip_ok,
		      (unsigned long long)a.raw);
		CHECK(a.raw_sp_ok + a.raw_empty == a.raw &&
			  a.raw_empty * 100 <= a.raw,
		      "%llu of %llu, %llu empty: %s",
		      (unsigned long long)a.raw_sp_ok,
		      (unsigned long long)a.raw,
		      (unsigned long long)a.raw_empty, a.rawbad);
		smp_close(s);
	}
	kill(a.cpid, SIGKILL);
	waitpid(a.cpid, NULL, 0);
	if (stats_fd >= 0) {
		if (pwrite(stats_fd, &old_stats, 1, 0) != 1)
			perror("bpf_stats_enabled");
		close(stats_fd);
	}
	return h_exit();
}
