/* SPDX-License-Identifier: MIT */
/*
 * Retention (docs/ABI.md §8.1): in a per-user default directory, the
 * regions of producers that are gone, the newest kept, the rest removed.
 */
#include "internal.h"
#include "jitsframe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

/* The most entries one call looks at (bounded work in a producer's start). */
#define PRUNE_SCAN_MAX 4096

struct dead {
	char name[32];	  /* PID.region */
	uint64_t created; /* CLOCK_REALTIME ns, from the header */
	uint64_t bytes;	  /* allocated */
	dev_t dev;
	ino_t ino;
};

/* "<digits>.region": what a producer given no path creates. */
static bool region_name(const char *n)
{
	size_t d = strspn(n, "0123456789");
	return d > 0 && d < 11 && !strcmp(n + d, ".region");
}

/*
 * Is dir/name a region whose producer is gone? Then 1 and *e filled. The
 * producer holds flock(LOCK_EX) for its whole life (ABI.md §4) and takes
 * it before the magic is written, so a file with a valid header whose
 * lock we can take has no producer; a file being created has no magic yet.
 */
static int is_dead(int dfd, const char *name, struct dead *e)
{
	int fd =
	    openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int dead = 0;
	struct stat st;
	uint8_t hdr[SF_RHDR_SIZE];
	struct sf_rinfo ri;
	char msg[160];
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == getuid() &&
	    pread(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) &&
	    fstat(fd, &st) == 0 && /* the size after the header (view.c) */
	    sf_rhdr_parse(hdr, (uint64_t)st.st_size, &ri, msg, sizeof(msg)) ==
		0 &&
	    flock(fd, LOCK_EX | LOCK_NB) == 0) {
		snprintf(e->name, sizeof(e->name), "%s", name);
		memcpy(&e->created, hdr + RH_CREATE_REAL, 8); /* LE host */
		e->bytes = (uint64_t)st.st_blocks * 512u;
		e->dev = st.st_dev;
		e->ino = st.st_ino;
		dead = 1;
	}
	close(fd); /* drops the lock */
	return dead;
}

static int newest_first(const void *a, const void *b)
{
	const struct dead *x = a, *y = b;
	if (x->created != y->created)
		return x->created > y->created ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Remove dir/e->name if it is still the file found dead (a producer of a
 * reused pid may have replaced it since). 0 or -errno. */
static int remove_dead(int dfd, const struct dead *e)
{
	int fd = openat(dfd, e->name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int err = 0;
	if (fstat(fd, &st) < 0)
		err = -errno;
	else if (st.st_dev != e->dev || st.st_ino != e->ino)
		err = -ESTALE;
	else if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		err = -EBUSY; /* a producer took it since */
	/* unlinked while we hold the lock: a producer of the same pid
	 * creates a new file (O_EXCL), never reopens this one */
	if (!err && unlinkat(dfd, e->name, 0) < 0)
		err = -errno;
	close(fd);
	return err;
}

int jsf_region_prune(const char *dir, const struct jsf_prune_opts *opts)
{
	struct jsf_prune_opts o;
	int err = sf_opts_in(&o, sizeof(o), opts, "jsf_prune_opts");
	if (err)
		return err;
	if (!dir)
		return sf_fail(-EINVAL, "jsf_region_prune: no directory");
	if (o.flags & ~(uint32_t)(JSF_PRUNE_ALL | JSF_PRUNE_DRY_RUN))
		return sf_fail(
		    -EINVAL, "jsf_prune_opts.flags: unknown bits 0x%x",
		    o.flags & ~(uint32_t)(JSF_PRUNE_ALL | JSF_PRUNE_DRY_RUN));
	uint32_t keep = (o.flags & JSF_PRUNE_ALL) ? 0
			: o.keep		  ? o.keep
						  : JSF_PRUNE_KEEP_DEFAULT;
	uint64_t max_bytes =
	    o.max_bytes ? o.max_bytes : (uint64_t)JSF_PRUNE_BYTES_DEFAULT;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return sf_fail(-errno, "cannot open %s: %s", dir,
			       strerror(errno));
	/* on a tmpfs (memory) the default is a sixteenth of its size when
	 * that is less */
	struct statfs fs;
	if (!o.max_bytes && fstatfs(dfd, &fs) == 0 && sf_is_tmpfs(&fs) &&
	    (uint64_t)fs.f_blocks * (uint64_t)fs.f_bsize / 16 < max_bytes)
		max_bytes = (uint64_t)fs.f_blocks * (uint64_t)fs.f_bsize / 16;
	struct stat st;
	/* ours and closed to others' writes, like jsf_region_default_dir's */
	if (fstat(dfd, &st) < 0 || !sf_dir_ours(&st)) {
		close(dfd);
		return sf_fail(-EPERM,
			       "%s: not a directory of this user closed to "
			       "others' writes: nothing removed",
			       dir);
	}
	int dfd2 = dup(dfd);
	DIR *d = dfd2 >= 0 ? fdopendir(dfd2) : NULL;
	if (!d) {
		err = -errno;
		if (dfd2 >= 0)
			close(dfd2);
		close(dfd);
		return err;
	}
	struct dead *v = NULL;
	size_t n = 0, cap = 0, seen = 0;
	struct dirent *de;
	while ((de = readdir(d)) && seen < PRUNE_SCAN_MAX) {
		if (!region_name(de->d_name))
			continue;
		seen++;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 32;
			struct dead *nv = realloc(v, nc * sizeof(*v));
			if (!nv) {
				err = -ENOMEM;
				break;
			}
			v = nv;
			cap = nc;
		}
		n += (size_t)is_dead(dfd, de->d_name, &v[n]);
	}
	closedir(d);
	int removed = 0;
	if (!err && n) {
		qsort(v, n, sizeof(*v), newest_first);
		uint64_t kept_bytes = 0;
		uint32_t kept = 0;
		bool full = false;
		for (size_t i = 0; i < n; i++) {
			/* newest first, while they fit; the newest is kept
			 * whatever its size (the run just done is the one a
			 * report asks about) */
			full =
			    full || kept == keep ||
			    (kept > 0 && kept_bytes + v[i].bytes > max_bytes);
			if (!full) {
				kept++;
				kept_bytes += v[i].bytes;
				continue;
			}
			if (!(o.flags & JSF_PRUNE_DRY_RUN) &&
			    remove_dead(dfd, &v[i]) < 0)
				continue;
			removed++;
			if (o.removed)
				o.removed(v[i].name, v[i].bytes, o.ctx);
		}
	}
	free(v);
	close(dfd);
	return err ? err : removed;
}
