/* SPDX-License-Identifier: MIT */
/*
 * Processes: a producer SIGKILLed mid-stream leaves a file that opens,
 * validates and holds every function whose add had returned; a producer
 * that died inside a rewrite is recovered from its log; another process
 * reads a live region mapped at its own address.
 */
#include "model.h"

#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NF 200000
enum { NONE, ADDING, ADDED, REMOVING, REMOVED };

struct shared {
	_Atomic int state[NF]; /* the child's progress, per function */
	_Atomic uint32_t progress;
};

static uint64_t fstart(uint32_t i)
{
	return 0x7fff00000000ull - (uint64_t)(i + 1) * 0x400; /* descending */
}

static uint32_t fsize(uint32_t i)
{
	return 16 + (i * 2654435761u) % 900;
}

static uint32_t frows(uint32_t i, struct jsf_row *rows)
{
	uint32_t n = 1 + i % 5, size = fsize(i);
	for (uint32_t k = 0; k < n; k++)
		rows[k] = (struct jsf_row){
		    .offset = k * (size / n),
		    .cfa_base = JSF_SP,
		    .cfa_offset = (int32_t)(96 + 16 * (i % 40) + k),
		    .has_fp = k & 1,
		    .fp_offset = -16};
	return n;
}

static void producer_until_killed(const char *path, struct shared *sh)
{
	struct jsf_region *r;
	struct jsf_region_opts o = {.sz = sizeof(o), .initial_funcs = 8};
	if (jsf_region_create(&r, path, &o))
		_exit(3);
	struct jsf_row rows[8];
	for (uint32_t i = 0; i < NF; i++) {
		atomic_store(&sh->state[i], ADDING);
		uint32_t n = frows(i, rows);
		if (jsf_region_add(r, fstart(i), fsize(i), rows, n, 0))
			_exit(4);
		atomic_store(&sh->state[i], ADDED);
		atomic_store(&sh->progress, i + 1);
		if (i % 3 ==
		    2) { /* remove an older one: out-of-order rewrites */
			uint32_t j = (i * 7919u) % i;
			if (atomic_load(&sh->state[j]) == ADDED) {
				atomic_store(&sh->state[j], REMOVING);
				if (jsf_region_remove(r, fstart(j), 0))
					_exit(5);
				atomic_store(&sh->state[j], REMOVED);
			}
		}
		if (i % 1000 == 999)
			jsf_region_compact(r);
	}
	pause(); /* finished before the kill: wait for it */
	_exit(0);
}

static int check_after_crash(const char *path, struct shared *sh,
			     int *recovered)
{
	struct jsf_view *v;
	int bad = 0, err = jsf_view_open(&v, path);
	CHECK(err == 0, "open after SIGKILL: %d %s", err, jsf_view_error());
	if (err)
		return 1;
	struct jsf_view_info info = {.sz = sizeof(info)};
	jsf_view_info(v, &info);
	CHECK(!info.live && !info.closed, "post-mortem, not closed");
	*recovered += info.recovered;
	char msg[512];
	err = jsf_validate_region(path, msg, sizeof(msg));
	CHECK(err == 0, "validate after SIGKILL: %s", msg);
	struct jsf_row rows[8];
	uint32_t added = 0;
	for (uint32_t i = 0; i < NF && bad < 5; i++) {
		int st = atomic_load(&sh->state[i]);
		if (st == NONE)
			break;
		uint64_t fs;
		uint32_t fz;
		struct jsf_row row;
		uint32_t n = frows(i, rows);
		uint32_t k = i % n;
		int rc = jsf_view_lookup(v, fstart(i) + rows[k].offset, 0, &fs,
					 &fz, &row);
		if (st == ADDED) {
			added++;
			bool ok = rc == 0 && fs == fstart(i) &&
				  fz == fsize(i) &&
				  row.cfa_offset == rows[k].cfa_offset &&
				  row.has_fp == rows[k].has_fp;
			CHECK(ok, "function %u (add returned) lost: rc %d", i,
			      rc);
			bad += !ok;
		} else if (st == REMOVED) {
			CHECK(rc == -ENOENT,
			      "function %u (removed) still found", i);
			bad += rc != -ENOENT;
		} else if (rc == 0) { /* in flight: either answer, but exact */
			bool ok = fs == fstart(i) &&
				  row.cfa_offset == rows[k].cfa_offset;
			CHECK(ok, "in-flight function %u has wrong data", i);
			bad += !ok;
		}
	}
	CHECK(added > 0, "the child made progress before the kill");
	jsf_view_close(v);
	return bad;
}

static void crash_loop(const char *dir)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int recovered = 0, runs = 30;
	CASE("SIGKILLed producer: file opens, validates, keeps every returned "
	     "add")
	{
		for (int run = 0; run < runs; run++) {
			char path[256];
			snprintf(path, sizeof(path), "%s/crash%d", dir, run);
			memset(sh, 0, sizeof(*sh));
			pid_t pid = fork();
			if (pid == 0)
				producer_until_killed(path, sh);
			/* wait until it is underway, then kill at a random time
			 */
			while (atomic_load(&sh->progress) == 0)
				usleep(100);
			struct timespec ts = {0, (long)(h_below(40000)) * 1000};
			nanosleep(&ts, NULL);
			kill(pid, SIGKILL);
			int status;
			waitpid(pid, &status, 0);
			CHECK(WIFSIGNALED(status), "child killed (status %#x)",
			      status);
			check_after_crash(path, sh, &recovered);
			unlink(path);
		}
		printf(
		    "# %d runs, %d killed inside a rewrite (recovered from the "
		    "log)\n",
		    runs, recovered);
	}
	munmap(sh, sizeof(*sh));
}

/* A producer that dies inside a rewrite: odd sequence, torn index. */
static void torn_index(const char *dir)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/torn", dir);
	CASE("death inside a rewrite: readers rebuild the index from the log")
	{
		pid_t pid = fork();
		if (pid == 0) {
			struct jsf_region *r;
			struct jsf_row rows[8];
			if (jsf_region_create(&r, path, NULL))
				_exit(3);
			for (uint32_t i = 0; i < 50; i++)
				jsf_region_add(r, fstart(i), fsize(i), rows,
					       frows(i, rows), 0);
			jsf_region_remove(r, fstart(10), 0);
			/* What a kill between seq_begin and seq_end leaves: an
			 * odd sequence and a half-shifted index (two slots
			 * swapped). */
			const void *sec;
			size_t len;
			jsf_region_section(r, &sec, &len);
			uint8_t *sf = (uint8_t *)sec;
			uint32_t fdeoff;
			memcpy(&fdeoff, sf + 20, 4);
			uint8_t *fde = sf + 28 + fdeoff;
			uint8_t tmp[16];
			memcpy(tmp, fde, 16);
			memcpy(fde, fde + 16, 16);
			memcpy(fde + 16, tmp, 16);
			/* the sequence counter: header offset 72 (docs/ABI.md)
			 */
			int fd = open(path, O_RDWR);
			uint64_t seq;
			if (fd < 0 || pread(fd, &seq, 8, 72) != 8)
				_exit(6);
			seq++;
			if (pwrite(fd, &seq, 8, 72) != 8)
				_exit(6);
			raise(SIGKILL);
		}
		int status;
		waitpid(pid, &status, 0);
		char msg[512];
		CHECK_EQ(jsf_validate_region(path, msg, sizeof(msg)), 0);
		CHECK(strstr(msg, "recovered"), "%s", msg);
		struct jsf_view *v;
		CHECK_EQ(jsf_view_open(&v, path), 0);
		struct jsf_view_info info = {.sz = sizeof(info)};
		jsf_view_info(v, &info);
		CHECK(info.recovered, "view says recovered");
		CHECK_EQ(info.live_funcs, 49);
		struct jsf_row rows[8];
		for (uint32_t i = 0; i < 50; i++) {
			uint64_t fs = 0;
			struct jsf_row row;
			uint32_t n = frows(i, rows);
			int rc =
			    jsf_view_lookup(v, fstart(i) + rows[n - 1].offset,
					    0, &fs, NULL, &row);
			if (i == 10)
				CHECK_EQ(rc, -ENOENT);
			else
				CHECK(rc == 0 && fs == fstart(i) &&
					  row.cfa_offset ==
					      rows[n - 1].cfa_offset,
				      "function %u: rc %d", i, rc);
		}
		/* the export is a valid section again */
		void *buf;
		size_t blen;
		struct jsf_export_opts eo = {.sz = sizeof(eo)};
		CHECK_EQ(jsf_view_export(v, &eo, &buf, &blen, NULL), 0);
		CHECK(jsf_validate_sframe(buf, blen, 0, 0, 0, msg,
					  sizeof(msg)) == 0,
		      "%s", msg);
		free(buf);
		jsf_view_close(v);
	}
	CASE("death between the two publishing steps of an add or a removal")
	{
		/* A dead producer's file; then what a kill between the log and
		 * the index step leaves, made by editing copies of it
		 * (docs/ABI.md sections 3 and 4): exactly one operation can be
		 * in flight, and only that is accepted. */
		unlink(path);
		pid_t pid = fork();
		if (pid == 0) {
			struct jsf_region *r;
			struct jsf_row rows[8];
			if (jsf_region_create(&r, path, NULL))
				_exit(3);
			/* ascending: each add is an append (log index j holds
			 * function 49 - j) */
			for (uint32_t i = 50; i-- > 0;)
				jsf_region_add(r, fstart(i), fsize(i), rows,
					       frows(i, rows), 0);
			raise(SIGKILL);
		}
		int status;
		waitpid(pid, &status, 0);
		char msg[512];
		CHECK_EQ(jsf_validate_region(path, msg, sizeof(msg)), 0);
		int fd = open(path, O_RDWR);
		uint64_t blk = 0, tmp64;
		uint32_t logoff = 0, nf = 0, tmp32;
		CHECK(fd >= 0 && pread(fd, &blk, 8, 80) == 8 &&
			  pread(fd, &logoff, 4, (off_t)blk + 32) == 4 &&
			  pread(fd, &nf, 4, (off_t)blk + 64 + 8) == 4,
		      "read the layout");
		CHECK_EQ(nf, 50u);
		off_t nf_at =
		    (off_t)blk + 64 + 8; /* the SFrame header's num_fdes */
		off_t le = (off_t)blk + logoff; /* log entry i at le + 32 * i */
		/* the last add's index entry unpublished: accepted */
		tmp32 = nf - 1;
		CHECK(pwrite(fd, &tmp32, 4, nf_at) == 4, "edit");
		CHECK_EQ(jsf_validate_region(path, msg, sizeof(msg)), 0);
		CHECK(strstr(msg, "inside an add"), "%s", msg);
		struct jsf_view *v;
		struct jsf_row rows[8], row;
		uint64_t fs = 0;
		CHECK_EQ(jsf_view_open(&v, path), 0);
		uint32_t n0 = frows(0, rows); /* the last add (log index 49) */
		CHECK_EQ(jsf_view_lookup(v, fstart(0) + rows[n0 - 1].offset, 0,
					 &fs, NULL, &row),
			 0);
		CHECK_EQ(fs, fstart(0));
		jsf_view_close(v);
		/* two adds missing cannot be one in flight: refused */
		tmp32 = nf - 2;
		CHECK(pwrite(fd, &tmp32, 4, nf_at) == 4, "edit");
		CHECK_EQ(jsf_validate_region(path, msg, sizeof(msg)), -EBADMSG);
		CHECK(pwrite(fd, &nf, 4, nf_at) == 4, "restore");
		CHECK_EQ(jsf_validate_region(path, msg, sizeof(msg)), 0);
		/* a removal whose tombstone is stored, index unchanged:
		 * accepted, and the function is gone for readers */
		uint64_t last_add = 0;
		CHECK(pread(fd, &last_add, 8, le + 32 * 49 + 8) == 8, "read");
		/* log index 10 holds function 39 */
		tmp64 = last_add + 2; /* after every add */
		CHECK(pwrite(fd, &tmp64, 8, le + 32 * 10 + 16) == 8, "edit");
		CHECK_EQ(jsf_validate_region(path, msg, sizeof(msg)), 0);
		CHECK(strstr(msg, "inside a removal"), "%s", msg);
		CHECK_EQ(jsf_view_open(&v, path), 0);
		uint32_t n39 = frows(39, rows);
		CHECK_EQ(jsf_view_lookup(v, fstart(39) + rows[n39 - 1].offset,
					 0, &fs, NULL, &row),
			 -ENOENT);
		jsf_view_close(v);
		/* ... with a second, earlier tombstone still indexed: refused
		 */
		tmp64 = last_add + 1;
		CHECK(pwrite(fd, &tmp64, 8, le + 32 * 20 + 16) == 8, "edit");
		CHECK_EQ(jsf_validate_region(path, msg, sizeof(msg)), -EBADMSG);
		/* remove_all in flight: every tombstone at one time */
		for (uint32_t i = 0; i < 50; i++)
			CHECK(pwrite(fd, &tmp64, 8, le + 32 * (off_t)i + 16) ==
				  8,
			      "edit");
		CHECK_EQ(jsf_validate_region(path, msg, sizeof(msg)), 0);
		close(fd);
	}
	unlink(path);
}

/* Another process maps the live region at its own address. */
static void cross_process(const char *dir)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/live", dir);
	int to_child[2], to_parent[2];
	if (pipe(to_child) || pipe(to_parent))
		abort();
	CASE("another process reads the live region, then post-mortem")
	{
		pid_t pid = fork();
		char c = 0;
		if (pid == 0) {
			struct jsf_region *r;
			struct jsf_row rows[8];
			/* a different address layout than the parent's */
			void *pad = mmap(NULL, 1 << 24, PROT_NONE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			(void)pad;
			if (jsf_region_create(&r, path, NULL))
				_exit(3);
			for (uint32_t i = 0; i < 300; i++)
				jsf_region_add(r, fstart(i), fsize(i), rows,
					       frows(i, rows), 0);
			if (write(to_parent[1], "a", 1) != 1 ||
			    read(to_child[0], &c, 1) != 1)
				_exit(4);
			for (uint32_t i = 0; i < 300; i += 2)
				jsf_region_remove(r, fstart(i), 0);
			jsf_region_compact(r);
			if (write(to_parent[1], "b", 1) != 1 ||
			    read(to_child[0], &c, 1) != 1)
				_exit(4);
			jsf_region_destroy(r);
			_exit(0);
		}
		struct jsf_view *v;
		struct jsf_row rows[8];
		CHECK(read(to_parent[0], &c, 1) == 1, "child ready");
		CHECK_EQ(jsf_view_open(&v, path), 0);
		struct jsf_view_info info = {.sz = sizeof(info)};
		jsf_view_info(v, &info);
		CHECK(info.live && info.producer_pid == (uint32_t)pid,
		      "live, pid");
		for (int phase = 0; phase < 3; phase++) {
			for (uint32_t i = 0; i < 300; i++) {
				uint64_t fs = 0;
				struct jsf_row row;
				uint32_t n = frows(i, rows);
				int rc = jsf_view_lookup(
				    v, fstart(i) + rows[n - 1].offset, 0, &fs,
				    NULL, &row);
				bool want = phase == 0 || i % 2;
				if (want)
					CHECK(rc == 0 && fs == fstart(i) &&
						  row.cfa_offset ==
						      rows[n - 1].cfa_offset,
					      "phase %d function %u: rc %d",
					      phase, i, rc);
				else
					CHECK(rc == -ENOENT,
					      "phase %d function %u removed",
					      phase, i);
			}
			if (phase < 2)
				CHECK(write(to_child[1], "c", 1) == 1,
				      "signal child");
			if (phase == 0)
				CHECK(read(to_parent[0], &c, 1) == 1,
				      "child removed");
			if (phase == 1) {
				int status;
				waitpid(pid, &status, 0);
				CHECK(WIFEXITED(status) &&
					  WEXITSTATUS(status) == 0,
				      "child exit %#x", status);
				jsf_view_close(v);
				CHECK_EQ(jsf_view_open(&v, path), 0);
				jsf_view_info(v, &info);
				CHECK(!info.live && info.closed,
				      "closed afterwards");
			}
		}
		jsf_view_close(v);
	}
	unlink(path);
}

int main(void)
{
	h_seed();
	char dir[] = "/tmp/jsf-t_crash-XXXXXX";
	if (!mkdtemp(dir))
		return 2;
	crash_loop(dir);
	torn_index(dir);
	cross_process(dir);
	rmdir(dir);
	return h_exit();
}
