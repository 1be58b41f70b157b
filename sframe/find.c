/* SPDX-License-Identifier: MIT */
/*
 * Discovery (docs/ABI.md §8, steps 1-2): the region of process P, from its
 * own mappings first, then the per-user default directories of every UID;
 * and where a producer given no path puts its own.
 */
#include "internal.h"
#include "jitsframe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

struct found {
	uint64_t create_ns;
	bool have, eacces;
};

/*
 * Is the file at `path` (opened as given, without following a last
 * symlink unless `follow`) a region whose producer is pid and, when
 * not_after is non-zero, created at or before it? 1 yes, 0 no, -1 it
 * cannot be opened (EACCES then noted in *f when f is not NULL).
 */
static int is_region_of(const char *path, bool follow, uint32_t pid,
			uint64_t not_after, uint64_t *create_ns,
			struct found *f)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK |
				(follow ? 0 : O_NOFOLLOW));
	if (fd < 0) {
		if (f && (errno == EACCES || errno == EPERM))
			f->eacces = true;
		return -1;
	}
	uint8_t hdr[SF_RHDR_SIZE];
	struct stat st;
	int ok = 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		ssize_t got = pread(fd, hdr, sizeof(hdr), 0);
		struct sf_rinfo ri;
		char msg[160];
		/* the size after the header: a live file grows (view.c) */
		if (got == (ssize_t)sizeof(hdr) && fstat(fd, &st) == 0 &&
		    sf_rhdr_parse(hdr, (uint64_t)st.st_size, &ri, msg,
				  sizeof(msg)) == 0 &&
		    ri.pid == pid &&
		    (!not_after || ri.create_ns <= not_after)) {
			*create_ns = ri.create_ns;
			ok = 1;
		}
	}
	close(fd);
	return ok;
}

/* /proc/P/fd/N whose link reads `target` (a memfd or a file gone), 0 if
 * found. */
static int fd_of(int pid, const char *target, char *out, size_t len)
{
	char dp[64];
	snprintf(dp, sizeof(dp), "/proc/%d/fd", pid);
	DIR *d = opendir(dp);
	struct dirent *de;
	int rc = -1;
	while (d && rc && (de = readdir(d))) {
		char lp[128], link[PATH_MAX];
		if (de->d_name[0] == '.')
			continue;
		if (snprintf(lp, sizeof(lp), "%s/%s", dp, de->d_name) >=
		    (int)sizeof(lp))
			continue;
		ssize_t n = readlink(lp, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (!strcmp(link, target)) {
			snprintf(out, len, "%s", lp);
			rc = 0;
		}
	}
	if (d)
		closedir(d);
	return rc;
}

/* Step 1: a MAP_SHARED file mapping of pid that is its region. */
static int from_maps(int pid, char *path, size_t len, struct found *f,
		     int *maps_errno)
{
	char mp[64], line[PATH_MAX + 256], last[PATH_MAX] = "";
	snprintf(mp, sizeof(mp), "/proc/%d/maps", pid);
	FILE *m = fopen(mp, "re");
	if (!m) {
		*maps_errno = errno;
		return 0;
	}
	int found = 0;
	while (!found && fgets(line, sizeof(line), m)) {
		unsigned long lo, hi;
		char perms[8];
		int off = 0;
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms,
			   &off) < 3 ||
		    !off || strlen(perms) < 4 || perms[3] != 's')
			continue;
		char *name = line + off;
		name[strcspn(name, "\n")] = 0;
		if (name[0] != '/' || !strcmp(name, last))
			continue;
		snprintf(last, sizeof(last), "%s", name);
		uint64_t cns;
		char alt[PATH_MAX];
		/* the path itself; else, where it cannot be opened (a file
		 * gone, a memfd, another mount namespace), the mapping, else
		 * an fd on it. A file named like a region that exists but
		 * cannot be read makes -EACCES. */
		const char *base = strrchr(name, '/') + 1;
		bool named = strstr(base, "region") != NULL;
		int r = is_region_of(name, true, (uint32_t)pid, 0, &cns,
				     named ? f : NULL);
		if (r > 0) {
			snprintf(path, len, "%s", name);
			found = 1;
			continue;
		}
		size_t nl = strlen(name);
		if (r == 0 &&
		    !(nl > 10 && !strcmp(name + nl - 10, " (deleted)")))
			continue;
		snprintf(alt, sizeof(alt), "/proc/%d/map_files/%lx-%lx", pid,
			 lo, hi);
		if (is_region_of(alt, true, (uint32_t)pid, 0, &cns, NULL) > 0) {
			snprintf(path, len, "%s", alt);
			found = 1;
			continue;
		}
		if (fd_of(pid, name, alt, sizeof(alt)) == 0 &&
		    is_region_of(alt, true, (uint32_t)pid, 0, &cns, NULL) > 0) {
			snprintf(path, len, "%s", alt);
			found = 1;
		}
	}
	fclose(m);
	return found;
}

/*
 * A lower bound, in CLOCK_MONOTONIC ns (the clock of create_ns), of when
 * the live process pid started; 0 when it is not alive or unreadable.
 * /proc/P/stat's starttime is in clock ticks of CLOCK_BOOTTIME; the two
 * clocks differ by the time suspended, which only grows, so subtracting
 * today's difference (and a tick) never puts the start after the truth.
 */
static uint64_t start_mono_lb(int pid)
{
	char sp[64], buf[1024];
	snprintf(sp, sizeof(sp), "/proc/%d/stat", pid);
	int fd = open(sp, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* after the ")" closing comm: state is field 3, starttime 22 */
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	p++;
	for (int field = 3; field < 22 && p; field++) /* to " starttime" */
		p = strchr(p + 1, ' ');
	if (!p)
		return 0;
	char *end;
	unsigned long long ticks = strtoull(p + 1, &end, 10);
	long hz = sysconf(_SC_CLK_TCK);
	if (end == p + 1 || hz <= 0)
		return 0;
	struct timespec b, m;
	if (clock_gettime(CLOCK_BOOTTIME, &b) ||
	    clock_gettime(CLOCK_MONOTONIC, &m))
		return 0;
	uint64_t boot =
	    (uint64_t)b.tv_sec * 1000000000ull + (uint64_t)b.tv_nsec;
	uint64_t mono =
	    (uint64_t)m.tv_sec * 1000000000ull + (uint64_t)m.tv_nsec;
	uint64_t tick = 1000000000ull / (uint64_t)hz;
	uint64_t start = ticks * tick, slack = (boot - mono) + tick;
	return start > slack ? start - slack : 0;
}

/* Is `d` (a directory name jitsframe-UID under tmp) a directory owned by
 * UID and closed to others? */
static bool good_dir(const char *tmp, const char *d)
{
	const char *u = d + strlen("jitsframe-");
	if (!*u || strspn(u, "0123456789") != strlen(u))
		return false;
	char p[PATH_MAX];
	struct stat st;
	if (snprintf(p, sizeof(p), "%s/%s", tmp, d) >= (int)sizeof(p))
		return false;
	return lstat(p, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_uid == (uid_t)strtoul(u, NULL, 10) && !(st.st_mode & 077);
}

/* Step 2, in one base (jsf_region_search_base): BASE/jitsframe-UID/P.region
 * for every UID (the newest one that qualifies). */
static int from_dirs(int pid, uint64_t not_after, char *path, size_t len,
		     struct found *f, const char *tmp)
{
	DIR *d = opendir(tmp);
	struct dirent *de;
	int found = 0;
	/* a region created before the live process P started was another
	 * process's of the same pid (pids are reused; regions outlive
	 * their producers) */
	uint64_t born = start_mono_lb(pid);
	if (not_after && born > not_after)
		born = 0; /* samples older than the live P: not its */
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "jitsframe-", 10) ||
		    !good_dir(tmp, de->d_name))
			continue;
		char p[PATH_MAX];
		uint64_t cns;
		if (snprintf(p, sizeof(p), "%s/%s/%d.region", tmp, de->d_name,
			     pid) >= (int)sizeof(p))
			continue;
		if (is_region_of(p, false, (uint32_t)pid, not_after, &cns, f) <=
			0 ||
		    cns < born)
			continue;
		if (!f->have || cns > f->create_ns) {
			f->have = true;
			f->create_ns = cns;
			snprintf(path, len, "%s", p);
			found = 1;
		}
	}
	if (d)
		closedir(d);
	return found;
}

/* /dev/shm qualifies as a default base when it is a tmpfs this process
 * can create files in, with room to spare (a container's is often 64 MiB,
 * shared with whatever else the program keeps there). */
#define SHM_BASE "/dev/shm"
#define SHM_MIN_FREE (256ull << 20)

static bool shm_usable(void)
{
	struct statfs fs;
	return statfs(SHM_BASE, &fs) == 0 && sf_is_tmpfs(&fs) &&
	       (uint64_t)fs.f_bavail * (uint64_t)fs.f_bsize >= SHM_MIN_FREE &&
	       access(SHM_BASE, W_OK | X_OK) == 0;
}

static const char *tmpdir_env(void)
{
	const char *t = getenv("TMPDIR");
	return t && *t ? t : NULL;
}

const char *jsf_region_search_base(unsigned i)
{
	const char *t = tmpdir_env();
	if (t) /* where a producer with this environment puts it */
		return i == 0 ? t : NULL;
	static const char *const b[] = {SHM_BASE, "/tmp"};
	return i < 2 ? b[i] : NULL;
}

int jsf_region_default_dir(char *buf, size_t len, bool create)
{
	if (!buf || !len)
		return -EINVAL;
	const char *base = tmpdir_env();
	if (!base)
		base = shm_usable() ? SHM_BASE : "/tmp";
	if (snprintf(buf, len, "%s/jitsframe-%u", base, (unsigned)getuid()) >=
	    (int)len)
		return -ENAMETOOLONG;
	if (create && mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	struct stat st;
	/* ours, a real directory, not writable by others: else refused */
	if (lstat(buf, &st) < 0)
		return -errno;
	if (!sf_dir_ours(&st))
		return -EPERM;
	return 0;
}

int jsf_region_find(int pid, uint64_t not_after_ns, char *path, size_t len)
{
	if (pid <= 0 || !path || len < 2)
		return sf_fail(-EINVAL, "jsf_region_find: bad pid or buffer");
	struct found f = {0};
	int maps_errno = 0;
	if (from_maps(pid, path, len, &f, &maps_errno))
		return 0;
	/* the newest that qualifies, in any of the bases */
	bool any = false;
	const char *b;
	for (unsigned i = 0; (b = jsf_region_search_base(i)); i++)
		any |= from_dirs(pid, not_after_ns, path, len, &f, b) != 0;
	if (any)
		return 0;
	path[0] = 0;
	char why[96] = "";
	if (maps_errno && maps_errno != ENOENT)
		snprintf(why, sizeof(why), " (cannot read /proc/%d/maps: %s)",
			 pid, strerror(maps_errno));
	else if (maps_errno == ENOENT)
		snprintf(why, sizeof(why), " (no such process)");
	if (f.eacces)
		return sf_fail(-EACCES,
			       "the region of pid %d exists but cannot be read "
			       "(permission denied): run as its user or root",
			       pid);
	char where[PATH_MAX + 64] = "";
	for (unsigned i = 0; (b = jsf_region_search_base(i)); i++) {
		size_t at = strlen(where);
		snprintf(where + at, sizeof(where) - at,
			 "%s%s/jitsframe-*/%d.region", i ? ", " : "", b, pid);
	}
	return sf_fail(-ENOENT,
		       "no region of pid %d: none mapped by it in "
		       "/proc/%d/maps%s, none in %s%s",
		       pid, pid, why, where,
		       not_after_ns ? " created before the samples" : "");
}
