/* SPDX-License-Identifier: MIT */
/*
 * Retention (jsf_region_prune, docs/ABI.md §8.1). Ground truth: which
 * producers the test itself let exit and which it keeps running, the order
 * it created them in, and the files it planted beside them.
 */
#include "harness.h"
#include "jitsframe.h"
#include "producer.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char g_dir[256];

/* A producer of g_dir/PID.region with nfuncs functions. stay: it keeps
 * running (its region live) until *hold_w is closed; else reaped here. */
static pid_t producer(unsigned nfuncs, int stay, int *hold_w)
{
	struct producer_opts o = {.dir = g_dir,
				  .nfuncs = nfuncs,
				  .stay = stay,
				  .flags = JSF_REGION_NO_MLOCK};
	pid_t pid = producer_start(&o, NULL, stay ? hold_w : NULL);
	if (pid > 0 && !stay)
		waitpid(pid, NULL, 0);
	return pid;
}

static bool exists(pid_t pid)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%d.region", g_dir, (int)pid);
	return lstat(p, &st) == 0;
}

static uint64_t allocated(pid_t pid)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%d.region", g_dir, (int)pid);
	return lstat(p, &st) == 0 ? (uint64_t)st.st_blocks * 512u : 0;
}

struct seen {
	unsigned n;
	uint64_t bytes;
	char names[64][32];
};

static void on_removed(const char *name, uint64_t bytes, void *ctx)
{
	struct seen *s = ctx;
	if (s->n < 64)
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name);
	s->n++;
	s->bytes += bytes;
}

static void plant(const char *name, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", g_dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd >= 0) {
		if (text && write(fd, text, strlen(text)) < 0)
			perror("write");
		close(fd);
	}
}

static bool planted(const char *name)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", g_dir, name);
	return lstat(p, &st) == 0;
}

int main(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/jsf-t_prune-%d", (int)getpid());
	if (mkdir(g_dir, 0700)) {
		perror("mkdir");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);

	/* 6 dead producers, oldest first, then a live one, then junk: a
	 * garbage file under a region's name (a file being created looks
	 * so: no magic yet), another name, a symlink to a dead region */
	pid_t dead[6];
	int hold = -1;
	for (int i = 0; i < 6; i++) {
		dead[i] = producer(i == 5 ? 2000 : 4, 0, NULL);
		struct timespec ts = {0, 2000000}; /* distinct create times */
		nanosleep(&ts, NULL);
	}
	pid_t live = producer(4, 1, &hold);
	plant("999999999.region", "not a region");
	plant("notes.txt", "keep me");
	char lnk[512], tgt[512];
	snprintf(lnk, sizeof(lnk), "%s/999999998.region", g_dir);
	snprintf(tgt, sizeof(tgt), "%s/%d.region", g_dir, (int)dead[0]);
	if (symlink(tgt, lnk))
		perror("symlink");

	h_begin("producers made their regions");
	for (int i = 0; i < 6; i++)
		CHECK(dead[i] > 0 && exists(dead[i]), "dead producer %d", i);
	CHECK(live > 0 && exists(live), "live producer");

	h_begin("a dry run removes nothing and names the 3 oldest dead ones");
	{
		struct seen s = {0};
		struct jsf_prune_opts o = {.sz = sizeof(o),
					   .keep = 3,
					   .flags = JSF_PRUNE_DRY_RUN,
					   .removed = on_removed,
					   .ctx = &s};
		CHECK_EQ(jsf_region_prune(g_dir, &o), 3);
		CHECK_EQ(s.n, 3);
		for (int i = 0; i < 6; i++)
			CHECK(exists(dead[i]), "dead %d removed in a dry run",
			      i);
		for (unsigned k = 0; k < s.n && k < 3; k++) {
			bool old = false;
			for (int i = 0; i < 3; i++) {
				char want[32];
				snprintf(want, sizeof(want), "%d.region",
					 (int)dead[i]);
				old |= !strcmp(s.names[k], want);
			}
			CHECK(old, "named %s, not one of the 3 oldest",
			      s.names[k]);
		}
	}

	h_begin("keep 4: the 2 oldest dead ones go; live, junk, symlink stay");
	{
		struct seen s = {0};
		struct jsf_prune_opts o = {.sz = sizeof(o),
					   .keep = 4,
					   .removed = on_removed,
					   .ctx = &s};
		uint64_t want = allocated(dead[0]) + allocated(dead[1]);
		CHECK_EQ(jsf_region_prune(g_dir, &o), 2);
		CHECK_EQ(s.bytes, want);
		CHECK(!exists(dead[0]) && !exists(dead[1]), "oldest kept");
		for (int i = 2; i < 6; i++)
			CHECK(exists(dead[i]), "dead %d (newer) removed", i);
		CHECK(exists(live), "the live producer's region removed");
		CHECK(planted("999999999.region") && planted("notes.txt") &&
			  planted("999999998.region"),
		      "a file that is not a dead region removed");
	}

	h_begin("max_bytes: the newest (big) one is kept whatever its size, "
		"then nothing older fits");
	{
		uint64_t big = allocated(dead[5]);
		CHECK(big > allocated(dead[4]) * 4, "sizes %llu vs %llu",
		      (unsigned long long)big,
		      (unsigned long long)allocated(dead[4]));
		struct jsf_prune_opts o = {
		    .sz = sizeof(o), .keep = 10, .max_bytes = big};
		CHECK_EQ(jsf_region_prune(g_dir, &o), 3);
		CHECK(exists(dead[5]), "the newest removed");
		for (int i = 2; i < 5; i++)
			CHECK(!exists(dead[i]), "dead %d kept over the budget",
			      i);
		CHECK(exists(live), "the live producer's region removed");
	}

	h_begin("JSF_PRUNE_ALL: every dead one goes, the live one stays");
	{
		CHECK_EQ(
		    jsf_region_prune(g_dir,
				     &(struct jsf_prune_opts){
					 .sz = sizeof(struct jsf_prune_opts),
					 .flags = JSF_PRUNE_ALL}),
		    1);
		CHECK(!exists(dead[5]), "the last dead one kept");
		CHECK(exists(live), "the live producer's region removed");
		CHECK_EQ(jsf_region_prune(g_dir, NULL), 0);
	}

	h_begin("the live one, once its producer is gone, is pruned");
	{
		close(hold);
		waitpid(live, NULL, 0);
		CHECK_EQ(jsf_region_prune(g_dir, NULL), 0); /* kept: newest */
		CHECK(exists(live), "kept under the default rule");
		struct jsf_prune_opts o = {.sz = sizeof(o),
					   .flags = JSF_PRUNE_ALL};
		CHECK_EQ(jsf_region_prune(g_dir, &o), 1);
		CHECK(!exists(live), "still there");
	}

	h_begin("a directory others may write to is refused, nothing removed");
	{
		pid_t d = producer(1, 0, NULL);
		chmod(g_dir, 0777);
		struct jsf_prune_opts o = {.sz = sizeof(o),
					   .flags = JSF_PRUNE_ALL};
		CHECK_EQ(jsf_region_prune(g_dir, &o), -EPERM);
		CHECK(strstr(jsf_strerror(-EPERM), "others") != NULL,
		      "message: %s", jsf_strerror(-EPERM));
		CHECK(exists(d), "removed from a shared directory");
		chmod(g_dir, 0700);
		CHECK_EQ(jsf_region_prune(g_dir, &o), 1);
		CHECK_EQ(jsf_region_prune("/nonexistent-jsf-dir", NULL),
			 -ENOENT);
		o.flags = 1u << 7;
		CHECK_EQ(jsf_region_prune(g_dir, &o), -EINVAL);
	}

	h_begin("on a tmpfs the default budget is a sixteenth of its size");
	{
		char top[200];
		snprintf(top, sizeof(top), "%.199s", g_dir);
		snprintf(g_dir, sizeof(g_dir), "%s/shm", top);
		mkdir(g_dir, 0700);
		if (mount("tmpfs", g_dir, "tmpfs", MS_NOSUID | MS_NODEV,
			  "size=2m,mode=0700") < 0) {
			const char *ci = getenv("CI");
			CHECK(!(ci && !strcmp(ci, "true")),
			      "mounting a 2 MiB tmpfs: %s (root; CI=true: "
			      "required)",
			      strerror(errno));
			printf("# SKIP the tmpfs case: mounting a 2 MiB tmpfs: "
			       "%s (root)\n",
			       strerror(errno));
		} else {
			pid_t p[8];
			for (int i = 0; i < 8; i++) {
				p[i] = producer(40, 0, NULL);
				struct timespec ts = {0, 2000000};
				nanosleep(&ts, NULL);
			}
			/* the budget from statfs, the sizes from stat: the
			 * newest that fit, by the rule */
			struct statfs fs;
			statfs(g_dir, &fs);
			uint64_t budget =
				     (uint64_t)fs.f_blocks * fs.f_bsize / 16,
				 sum = 0;
			int kept = 0;
			while (kept < 8 &&
			       (kept == 0 ||
				sum + allocated(p[7 - kept]) <= budget))
				sum += allocated(p[7 - kept++]);
			printf("# budget %llu bytes: %d of 8 regions of %llu "
			       "bytes kept\n",
			       (unsigned long long)budget, kept,
			       (unsigned long long)allocated(p[7]));
			CHECK(kept > 1 && kept < 8,
			      "the case means nothing: "
			      "%d kept",
			      kept);
			CHECK_EQ(jsf_region_prune(g_dir, NULL), 8 - kept);
			for (int i = 0; i < 8; i++)
				CHECK(exists(p[i]) == (i >= 8 - kept),
				      "region %d of 8: %s", i,
				      exists(p[i]) ? "kept" : "removed");
			umount(g_dir);
		}
		rmdir(g_dir);
		snprintf(g_dir, sizeof(g_dir), "%s", top);
	}

	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	if (system(cmd))
		perror("rm");
	return h_exit();
}
