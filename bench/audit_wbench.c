/* SPDX-License-Identifier: MIT */
/*
 * audit_wbench: how to get an auditlog record into the file, per record,
 * for the record sizes the auditlog writes (bench/audit_bench.lua measured
 * ~700 B per record on flushstorm, ~5 KB per trace on sidetraces):
 *
 *   write    one writev(2) per record (frame + payload), O_APPEND
 *   mmap     memcpy into a MAP_SHARED mapping of the file, grown by
 *            fallocate + mremap in 1 MiB steps (no system call per record)
 *   io_uring one IORING_OP_WRITEV per record, submitted without waiting
 *            (completions reaped when the ring is full); a record whose
 *            request has not completed is NOT safe from a SIGKILL
 *   uring+w  io_uring, waiting for each completion (what SIGKILL safety
 *            costs with io_uring)
 *   writer   audit/auditw.c as shipped: memcpy into a shared mapping of a
 *            window of the file, fallocated and populated 1 MiB at a time,
 *            the frame stored last (what the auditlog does)
 *
 * All of them frame the payload (CRC32C) the same way as audit/auditw.c.
 * Output: ns per record, median of 5 runs of N records each, and the ratio
 * to write. Usage: audit_wbench [N] [DIR]
 */
#include "auditfmt.h"
#include "auditw.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static char path[4096];
static uint8_t *payload;

static int openf(void)
{
	unlink(path);
	int fd =
	    open(path, O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	return fd;
}

static uint64_t run_write(int n, const uint32_t *sz)
{
	int fd = openf();
	uint64_t t0 = now_ns();
	for (int i = 0; i < n; i++) {
		uint8_t fr[ALOG_FRAME];
		alog_frame(fr, payload, sz[i]);
		struct iovec iov[2] = {{fr, 8}, {payload, sz[i]}};
		if (writev(fd, iov, 2) != (ssize_t)(8 + sz[i]))
			exit(2);
	}
	uint64_t t = now_ns() - t0;
	close(fd);
	return t;
}

#define STEP (1u << 20)
static uint64_t run_mmap(int n, const uint32_t *sz)
{
	int fd = openf();
	uint64_t t0 = now_ns();
	size_t cap = STEP, off = 0;
	if (fallocate(fd, 0, 0, (off_t)cap))
		exit(3);
	uint8_t *m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		exit(3);
	for (int i = 0; i < n; i++) {
		size_t need = 8 + sz[i];
		if (off + need > cap) {
			size_t ncap = cap + (need > STEP ? need : STEP);
			ncap = (ncap + STEP - 1) / STEP * STEP;
			if (fallocate(fd, 0, (off_t)cap, (off_t)(ncap - cap)))
				exit(3);
			uint8_t *nm = mremap(m, cap, ncap, MREMAP_MAYMOVE);
			if (nm == MAP_FAILED)
				exit(3);
			m = nm;
			cap = ncap;
		}
		alog_frame(m + off, payload, sz[i]);
		memcpy(m + off + 8, payload, sz[i]);
		off += need;
	}
	munmap(m, cap);
	if (ftruncate(fd, (off_t)off))
		exit(3);
	uint64_t t = now_ns() - t0;
	close(fd);
	return t;
}

#define QD 256
static uint64_t run_uring(int n, const uint32_t *sz, int wait_each)
{
	int fd = openf();
	struct io_uring ring;
	if (io_uring_queue_init(QD, &ring, 0)) {
		fprintf(stderr, "io_uring unavailable\n");
		close(fd);
		return 0;
	}
	/* each in-flight record needs its own frame + payload copy */
	static uint8_t fr[QD][8];
	static struct iovec iov[QD][2];
	uint8_t **buf = calloc(QD, sizeof(*buf));
	for (int i = 0; i < QD; i++)
		buf[i] = malloc(65536);
	int inflight = 0, slot = 0;
	uint64_t t0 = now_ns();
	for (int i = 0; i < n; i++) {
		if (inflight == QD || wait_each) {
			struct io_uring_cqe *cqe;
			while (inflight) {
				if (io_uring_wait_cqe(&ring, &cqe))
					exit(4);
				if (cqe->res < 0)
					exit(4);
				io_uring_cqe_seen(&ring, cqe);
				inflight--;
				if (!wait_each)
					break;
			}
		}
		alog_frame(fr[slot], payload, sz[i]);
		memcpy(buf[slot], payload, sz[i]);
		iov[slot][0] = (struct iovec){fr[slot], 8};
		iov[slot][1] = (struct iovec){buf[slot], sz[i]};
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		io_uring_prep_writev(sqe, fd, iov[slot], 2, (uint64_t)-1);
		/* -1: the file position; with O_APPEND each write appends,
		 * ordered: IOSQE_IO_LINK keeps them in submission order */
		sqe->flags |= IOSQE_IO_LINK;
		io_uring_submit(&ring);
		inflight++;
		slot = (slot + 1) % QD;
	}
	while (inflight) {
		struct io_uring_cqe *cqe;
		if (io_uring_wait_cqe(&ring, &cqe))
			exit(4);
		io_uring_cqe_seen(&ring, cqe);
		inflight--;
	}
	uint64_t t = now_ns() - t0;
	io_uring_queue_exit(&ring);
	for (int i = 0; i < QD; i++)
		free(buf[i]);
	free(buf);
	close(fd);
	return t;
}

static uint64_t run_writer(int n, const uint32_t *sz)
{
	unlink(path);
	struct alogw_opts o = {path, 0, 0, 0, 0};
	struct alogw *w;
	uint64_t t0 = now_ns();
	if (alogw_open(&w, &o, payload, 64))
		exit(4);
	for (int i = 0; i < n; i++)
		if (alogw_write(w, payload, sz[i]))
			exit(4);
	alogw_close(w, NULL);
	return now_ns() - t0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 50000;
	const char *dir = argc > 2 ? argv[2] : getenv("TMPDIR");
	snprintf(path, sizeof(path), "%s/audit-wbench-%d.log",
		 dir && *dir ? dir : "/tmp", (int)getpid());
	payload = malloc(65536);
	for (int i = 0; i < 65536; i++)
		payload[i] = (uint8_t)(i * 131 + 7);
	static const uint32_t mean[] = {64, 700, 5000};
	printf("audit_wbench: %d records per run, median of 5 runs, ns per "
	       "record (ratio to write)\n",
	       n);
	printf("%-9s %10s %16s %16s %16s %16s\n", "size", "write", "mmap",
	       "io_uring", "uring+wait", "writer");
	uint32_t *sz = malloc(sizeof(*sz) * (size_t)n);
	for (int s = 0; s < 3; s++) {
		srand(1);
		for (int i = 0; i < n; i++) /* mean[s], uniform 0.5x..1.5x */
			sz[i] = mean[s] / 2 + (uint32_t)rand() % (mean[s] + 1);
		uint64_t t[5][5];
		for (int r = 0; r < 5; r++) {
			t[0][r] = run_write(n, sz);
			t[1][r] = run_mmap(n, sz);
			t[2][r] = run_uring(n, sz, 0);
			t[3][r] = run_uring(n, sz, 1);
			t[4][r] = run_writer(n, sz);
		}
		double med[5];
		for (int k = 0; k < 5; k++) {
			qsort(t[k], 5, sizeof(uint64_t), cmp);
			med[k] = (double)t[k][2] / n;
		}
		printf("%-9u %10.0f %9.0f (%4.2f) %9.0f (%4.2f) %9.0f (%4.2f) "
		       "%9.0f (%4.2f)\n",
		       mean[s], med[0], med[1], med[1] / med[0], med[2],
		       med[2] / med[0], med[3], med[3] / med[0], med[4],
		       med[4] / med[0]);
	}
	unlink(path);
	free(sz);
	free(payload);
	return 0;
}
