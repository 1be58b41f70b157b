/* SPDX-License-Identifier: MIT */
/*
 * wlrun OUT CMD...: bench/sampler_bench.sh's workload launcher. It becomes
 * CMD (exec: the same process, the one the profiler was told to watch, so
 * every sample of the workload is taken from its first instruction), with
 * JSFB_T0 (CLOCK_MONOTONIC ns, just before the exec) in the environment:
 * bench/wl_timed.lua writes the workload's own wall (from JSFB_T0) and CPU
 * time (CLOCK_PROCESS_CPUTIME_ID: its own threads only, with the sampling
 * interrupts that ran in it) to OUT.
 * A forked helper reads the in-kernel sampler's bpf_stats (the newest
 * program named smp_on_sample; kernel.bpf_stats_enabled set by the caller)
 * before the exec and as soon as the process has exited (a pidfd), and
 * writes "run_ns run_cnt" over the workload's life to OUT.bpf ("0 0"
 * without a sampler).
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void prog_stats(uint32_t *id, uint64_t *ns, uint64_t *cnt)
{
	uint32_t cur = 0, best = 0;
	*ns = *cnt = 0;
	while (!bpf_prog_get_next_id(cur, &cur)) {
		if (*id && cur != *id)
			continue;
		int fd = bpf_prog_get_fd_by_id(cur);
		if (fd < 0)
			continue;
		struct bpf_prog_info pi;
		uint32_t len = sizeof(pi);
		memset(&pi, 0, sizeof(pi));
		if (!bpf_obj_get_info_by_fd(fd, &pi, &len) &&
		    !strcmp(pi.name, "smp_on_sample") && cur >= best) {
			best = cur;
			*ns = pi.run_time_ns;
			*cnt = pi.run_cnt;
		}
		close(fd);
	}
	*id = best;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: wlrun OUT CMD...\n");
		return 2;
	}
	int go[2];
	if (pipe(go))
		return 1;
	pid_t self = getpid(), h = fork();
	if (h < 0)
		return 1;
	if (h == 0) {
		close(go[0]);
		int pfd = (int)syscall(SYS_pidfd_open, self, 0);
		uint32_t id = 0;
		uint64_t ns0, c0, ns1, c1;
		prog_stats(&id, &ns0, &c0);
		if (write(go[1], "g", 1) != 1)
			_exit(1);
		close(go[1]);
		struct pollfd p = {.fd = pfd, .events = POLLIN};
		while (pfd >= 0 && poll(&p, 1, -1) < 0 && errno == EINTR)
			;
		if (id)
			prog_stats(&id, &ns1, &c1);
		else
			ns1 = ns0, c1 = c0;
		char path[4096];
		snprintf(path, sizeof(path), "%s.bpf", argv[1]);
		FILE *f = fopen(path, "w");
		if (f) {
			fprintf(f, "%llu %llu\n",
				(unsigned long long)(ns1 - ns0),
				(unsigned long long)(c1 - c0));
			fclose(f);
		}
		_exit(0);
	}
	close(go[1]);
	char b;
	if (read(go[0], &b, 1) != 1)
		return 1;
	close(go[0]);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	char t0[32];
	snprintf(t0, sizeof(t0), "%lld",
		 (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec);
	setenv("JSFB_T0", t0, 1);
	setenv("JSFB_OUT", argv[1], 1);
	execvp(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
}
