/* SPDX-License-Identifier: MIT */
/*
 * The library's one atomic-file writer (profint.h): a temp file next to
 * the destination ("path.tmpXXXXXX": same directory, so that the rename is
 * atomic), created O_EXCL | O_NOFOLLOW with mode 0600, renamed over the
 * destination when complete, removed otherwise. Every profile file and
 * `jitsframe region export` are written through it.
 */
#include "profint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int pf_af_open(struct afile *a, const char *path)
{
	size_t n = strlen(path);
	a->f = NULL;
	a->tmp = NULL;
	a->buf = NULL;
	if (!n)
		return -EINVAL;
	a->tmp = malloc(n + 16);
	if (!a->tmp)
		return -ENOMEM;
	snprintf(a->tmp, n + 16, "%s.tmpXXXXXX", path);
	/* mkostemp: O_CREAT | O_EXCL, mode 0600, a fresh name per try */
	int fd = mkostemp(a->tmp, O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		free(a->tmp);
		a->tmp = NULL;
		return -e;
	}
	a->f = fdopen(fd, "w");
	if (!a->f) {
		int e = errno;
		close(fd);
		unlink(a->tmp);
		free(a->tmp);
		a->tmp = NULL;
		return -e;
	}
	a->buf = malloc(PF_AF_BUF);
	if (a->buf && setvbuf(a->f, a->buf, _IOFBF, PF_AF_BUF)) {
		free(a->buf);
		a->buf = NULL;
	}
	return 0;
}

/* Without PF_AF_SYNC, no fsync: readers and a crash of this process never
 * see a partial file under the final name; after a power loss a profile
 * may be empty (it is derived data: run the report again). An fsync per
 * file cost ~20 ms of a ~100 ms report. */
int pf_af_close(struct afile *a, const char *path, int err, unsigned flags)
{
	if (!a->f)
		return err;
	if (!err && (fflush(a->f) || ferror(a->f)))
		err = errno ? -errno : -EIO;
	if (!err && (flags & PF_AF_SYNC) && fsync(fileno(a->f)) < 0)
		err = -errno;
	if (fclose(a->f) && !err)
		err = errno ? -errno : -EIO;
	free(a->buf);
	a->buf = NULL;
	if (!err && rename(a->tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(a->tmp);
	free(a->tmp);
	a->f = NULL;
	a->tmp = NULL;
	return err;
}

int prof_write_file(const char *path, const void *buf, size_t len)
{
	if (!*path) /* as open("") */
		return -ENOENT;
	struct afile a;
	int err = pf_af_open(&a, path);
	if (err)
		return err;
	if (len && fwrite(buf, 1, len, a.f) != len)
		err = errno ? -errno : -EIO;
	return pf_af_close(&a, path, err, PF_AF_SYNC);
}
