/* SPDX-License-Identifier: MIT */
/*
 * Discovery (jsf_region_find, docs/ABI.md §8 steps 1-2). Ground truth: the
 * paths and pids the test itself created the regions at and with.
 */
#include "harness.h"
#include "jitsframe.h"
#include "producer.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *g_udir; /* path NULL: g_udir/PID.region */

/* A producer of a region with one function at path (NULL: g_udir/PID.region)
 * that exits (stay 0) or waits; with fork_grandchild, a child of it maps
 * the same region and waits the same way. */
static pid_t producer(const char *path, int stay, int fork_grandchild,
		      pid_t *grandchild, int *hold_w)
{
	struct producer_opts o = {.path = path,
				  .dir = g_udir,
				  .stay = stay,
				  .fork_grandchild = fork_grandchild};
	return producer_start(&o, grandchild, hold_w);
}

static void reap(pid_t pid, int hold_w)
{
	if (hold_w >= 0)
		close(hold_w);
	int st;
	waitpid(pid, &st, 0);
}

int main(void)
{
	char base[64], tmpd[128], udir[192], p[512], got[512];
	snprintf(base, sizeof(base), "/tmp/jsf-t_find-XXXXXX");
	if (!mkdtemp(base))
		return 1;
	snprintf(tmpd, sizeof(tmpd), "%s/tmp", base);
	mkdir(tmpd, 0700);
	setenv("TMPDIR", tmpd, 1);
	snprintf(udir, sizeof(udir), "%s/jitsframe-%u", tmpd,
		 (unsigned)getuid());
	g_udir = udir;

	CASE("live: found through the process's own mappings")
	{
		snprintf(p, sizeof(p), "%s/anywhere.region", base);
		int hold = -1;
		pid_t g = 0;
		pid_t c = producer(p, 1, 1, &g, &hold);
		CHECK(c > 0, "producer failed");
		if (c <= 0)
			break;
		CHECK_EQ(jsf_region_find(c, 0, got, sizeof(got)), 0);
		CHECK(!strcmp(got, p), "found '%s', want '%s'", got, p);
		/* a forked child maps its parent's region: not its own */
		CHECK(g > 0, "no grandchild");
		if (g > 0) {
			CHECK_EQ(jsf_region_find(g, 0, got, sizeof(got)),
				 -ENOENT);
			const char *m = jsf_strerror(-ENOENT);
			CHECK(strstr(m, "/proc/") && strstr(m, tmpd),
			      "message names where it looked: %s", m);
		}
		/* a too-small buffer is refused, not overflowed */
		CHECK_EQ(jsf_region_find(c, 0, got, 1), -EINVAL);
		reap(c, hold);
		if (g > 0)
			waitpid(g, NULL, 0); /* not ours: reaped by init */
	}

	CASE("post-mortem: found at the default per-user path")
	{
		CHECK_EQ(mkdir(udir, 0700), 0);
		uint64_t before = jsf_now_ns();
		pid_t c = producer(NULL, 0, 0, NULL, NULL);
		CHECK(c > 0, "producer failed");
		if (c <= 0)
			break;
		reap(c, -1);
		uint64_t after = jsf_now_ns();
		char want[512];
		snprintf(want, sizeof(want), "%s/%d.region", udir, (int)c);
		CHECK_EQ(jsf_region_find(c, 0, got, sizeof(got)), 0);
		CHECK(!strcmp(got, want), "found '%s', want '%s'", got, want);
		CHECK_EQ(jsf_region_find(c, after, got, sizeof(got)), 0);
		CHECK(!strcmp(got, want), "found '%s', want '%s'", got, want);
		/* a stale file of a reused pid: created after the samples */
		CHECK_EQ(jsf_region_find(c, before, got, sizeof(got)), -ENOENT);
		/* another pid's file under this pid's name is not taken */
		char other[512];
		snprintf(other, sizeof(other), "%s/%d.region", udir,
			 (int)c + 1);
		CHECK_EQ(rename(want, other), 0);
		CHECK_EQ(jsf_region_find(c + 1, 0, got, sizeof(got)), -ENOENT);
		CHECK_EQ(jsf_region_find(c, 0, got, sizeof(got)), -ENOENT);
		CHECK_EQ(rename(other, want), 0);
		/* a directory open to others is refused */
		CHECK_EQ(chmod(udir, 0755), 0);
		CHECK_EQ(jsf_region_find(c, 0, got, sizeof(got)), -ENOENT);
		CHECK_EQ(chmod(udir, 0700), 0);
		CHECK_EQ(jsf_region_find(c, 0, got, sizeof(got)), 0);
		/* a file of that name that is no region */
		unlink(want);
		int fd = open(want, O_CREAT | O_WRONLY, 0600);
		CHECK(fd >= 0 && write(fd, "JSFREGN", 8) == 8, "write");
		if (fd >= 0)
			close(fd);
		CHECK_EQ(jsf_region_find(c, 0, got, sizeof(got)), -ENOENT);
		unlink(want);
	}

	CASE("pid reused: a dead producer's file is not the region of the "
	     "live process that now has its pid")
	{
		/* a region left by a producer that exited ... */
		pid_t d = producer(NULL, 0, 0, NULL, NULL);
		CHECK(d > 0, "producer failed");
		if (d <= 0)
			break;
		reap(d, -1);
		uint64_t t_dead = jsf_now_ns();
		usleep(30000); /* more than a clock tick of /proc/P/stat */
		/* ... and a live process without one, given that file
		 * under its pid as if the pid had come round again */
		int hold[2];
		CHECK_EQ(pipe(hold), 0);
		pid_t q = fork();
		if (q == 0) {
			char ch;
			close(hold[1]);
			while (read(hold[0], &ch, 1) > 0)
				;
			_exit(0);
		}
		close(hold[0]);
		char dead[512], live[512];
		snprintf(dead, sizeof(dead), "%s/%d.region", udir, (int)d);
		snprintf(live, sizeof(live), "%s/%d.region", udir, (int)q);
		CHECK_EQ(rename(dead, live), 0);
		int fd = open(live, O_RDWR);
		uint32_t qpid = (uint32_t)q;
		CHECK(fd >= 0 && pwrite(fd, &qpid, 4, 64) == 4, "patch pid");
		/* created before q started: not q's */
		CHECK_EQ(jsf_region_find(q, 0, got, sizeof(got)), -ENOENT);
		/* but it serves samples from before q (the old process's) */
		CHECK_EQ(jsf_region_find(q, t_dead, got, sizeof(got)), 0);
		/* the same file created after q started is q's */
		uint64_t now = jsf_now_ns();
		CHECK(fd >= 0 && pwrite(fd, &now, 8, 48) == 8, "patch time");
		CHECK_EQ(jsf_region_find(q, 0, got, sizeof(got)), 0);
		CHECK(!strcmp(got, live), "found '%s', want '%s'", got, live);
		if (fd >= 0)
			close(fd);
		unlink(live);
		reap(q, hold[1]);
	}

	CASE("the default directory: $TMPDIR when set, else /dev/shm (a tmpfs "
	     "with room), else /tmp; consumers search where producers put it")
	{
		char d[512], want[512], t2[256], u2[320];
		/* $TMPDIR set: there, made 0700 only when asked, and the only
		 * base searched */
		snprintf(t2, sizeof(t2), "%s/tmp2", base);
		mkdir(t2, 0700);
		setenv("TMPDIR", t2, 1);
		snprintf(u2, sizeof(u2), "%s/jitsframe-%u", t2,
			 (unsigned)getuid());
		CHECK_EQ(jsf_region_default_dir(d, sizeof(d), false), -ENOENT);
		CHECK(!strcmp(d, u2), "default dir '%s', want '%s'", d, u2);
		CHECK_EQ(jsf_region_default_dir(d, sizeof(d), true), 0);
		struct stat st;
		CHECK(lstat(u2, &st) == 0 && S_ISDIR(st.st_mode) &&
			  (st.st_mode & 0777) == 0700 && st.st_uid == getuid(),
		      "made 0700 and ours: mode %o", st.st_mode & 0777);
		const char *b0 = jsf_region_search_base(0);
		CHECK(b0 && !strcmp(b0, t2) && !jsf_region_search_base(1),
		      "searched: %s, then %s", b0 ? b0 : "(none)",
		      jsf_region_search_base(1) ? jsf_region_search_base(1)
						: "(none)");
		/* writable by others: refused */
		chmod(u2, 0777);
		CHECK_EQ(jsf_region_default_dir(d, sizeof(d), true), -EPERM);
		chmod(u2, 0700);
		CHECK_EQ(jsf_region_default_dir(d, 8, false), -ENAMETOOLONG);
		/* no $TMPDIR: the base by the rule, read here from statfs(2) */
		unsetenv("TMPDIR");
		struct statfs fs;
		bool shm = statfs("/dev/shm", &fs) == 0 &&
			   fs.f_type == 0x01021994 &&
			   (uint64_t)fs.f_bavail * fs.f_bsize >= 256ull << 20 &&
			   access("/dev/shm", W_OK | X_OK) == 0;
		snprintf(want, sizeof(want), "%s/jitsframe-%u",
			 shm ? "/dev/shm" : "/tmp", (unsigned)getuid());
		int rc = jsf_region_default_dir(d, sizeof(d), false);
		CHECK(rc == 0 || rc == -ENOENT, "rc %d", rc);
		CHECK(!strcmp(d, want), "default dir '%s', want '%s'", d, want);
		printf("# without TMPDIR: %s (/dev/shm %s)\n", d,
		       shm ? "a tmpfs with room" : "not used");
		b0 = jsf_region_search_base(0);
		const char *b1 = jsf_region_search_base(1);
		CHECK(b0 && b1 && !strcmp(b0, "/dev/shm") &&
			  !strcmp(b1, "/tmp") && !jsf_region_search_base(2),
		      "searched: %s, %s", b0 ? b0 : "-", b1 ? b1 : "-");
		setenv("TMPDIR", tmpd, 1);
	}

	CASE("bad arguments")
	{
		CHECK_EQ(jsf_region_default_dir(NULL, 0, false), -EINVAL);
		CHECK_EQ(jsf_region_find(0, 0, got, sizeof(got)), -EINVAL);
		CHECK_EQ(jsf_region_find(1, 0, NULL, 0), -EINVAL);
	}

	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	if (system(cmd))
		fprintf(stderr, "# could not remove %s\n", base);
	return h_exit();
}
