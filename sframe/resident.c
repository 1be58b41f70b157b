/* SPDX-License-Identifier: MIT */
/*
 * Resident pages (docs/ABI.md 3.6): an in-kernel reader (a BPF program's
 * bpf_probe_read_user) cannot fault a page in, so the pages it needs — the
 * region header and the current section block — are made present in the
 * producer's page tables when they come into use, and mlocked there so
 * that reclaim cannot unmap them, unless the region was created with
 * JSF_REGION_NO_MLOCK. A refused mlock (RLIMIT_MEMLOCK, no CAP_IPC_LOCK)
 * is counted, never fatal: the pages are still populated.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Present in the page tables, writable, without changing a byte (the
 * range is a shared file mapping we own): 0, or -errno when the file's
 * pages cannot be made (a full file system, a tmpfs at its size): a store
 * there would raise SIGBUS in the host. Before Linux 5.14 (no
 * MADV_POPULATE_WRITE) the file's blocks are allocated first
 * (fallocate), then every page is touched. */
static int populate(const struct sf_resid *rs, uint8_t *p, uint64_t len)
{
	if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
		return 0;
	if (errno == EFAULT) /* the file system could not give the page */
		return -ENOSPC;
	if (errno != EINVAL)
		return -errno;
	if (rs->fd >= 0 && rs->base &&
	    fallocate(rs->fd, FALLOC_FL_KEEP_SIZE, (off_t)(p - rs->base),
		      (off_t)len) < 0 &&
	    errno != EOPNOTSUPP)
		return -errno;
	long pg = sysconf(_SC_PAGESIZE);
	for (uint64_t o = 0; o < len; o += (uint64_t)pg)
		__atomic_fetch_or(p + o, 0, __ATOMIC_RELAXED);
	return 0;
}

/* The system calls themselves: sanitizer runtimes replace mlock(3) and
 * munlock(3) with no-ops that report success. */
static int do_mlock(void *p, uint64_t len)
{
	return (int)syscall(SYS_mlock, p, (size_t)len);
}

int sf_res_hold(struct sf_resid *rs, void *addr, uint64_t len, bool *locked)
{
	/* Writable in the page tables first: mlock of a shared mapping only
	 * read-faults its pages in, and then every first store to one of
	 * them took a write fault of its own (on ext4, page_mkwrite): some
	 * 2-5 us each, inside the producer's adds. One call for the range. */
	bool l = false;
	int err = populate(rs, addr, len);
	if (err)
		sf_fail(err, "no room for the region on its file system (%s)",
			strerror(-err));
	if (!err && !rs->off) {
		/* mlock faults every page in and keeps it mapped */
		if (do_mlock(addr, len) == 0) {
			rs->locked += len;
			l = true;
		} else {
			rs->failures++;
			rs->last_err = errno;
		}
	}
	if (locked)
		*locked = l;
	return err;
}

int sf_res_fill(struct sf_resid *rs, void *addr, uint64_t len)
{
	return populate(rs, addr, len);
}

void sf_res_release(struct sf_resid *rs, void *addr, uint64_t len,
		    uint64_t locked)
{
	if (!locked)
		return;
	syscall(SYS_munlock, addr, (size_t)len);
	rs->locked -= locked;
}
