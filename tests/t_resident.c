/* SPDX-License-Identifier: MIT */
/*
 * Resident pages (docs/ABI.md 3.6), checked against the kernel's own
 * accounts, not the library's: /proc/self/pagemap (is each page of the
 * header and of the current section block present in this process's page
 * tables — what an in-kernel reader's bpf_probe_read_user needs) and
 * VmLck of /proc/self/status (bytes mlocked). The block's place and size
 * are read from the region file. Cases: default (locked: header + current
 * block, old blocks unlocked as rebuilds retire them), JSF_REGION_NO_MLOCK
 * (present, nothing locked), and a small RLIMIT_MEMLOCK in a child without
 * CAP_IPC_LOCK (the region still works and validates, the refusals are
 * counted, the pages are still present); and the pages of blocks retired
 * before the last one freed (no data there, lseek's SEEK_DATA says).
 */
#include "harness.h"
#include "internal.h"
#include "jitsframe.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static const char *tmp_path(const char *name)
{
	static char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static const struct jsf_row rows[2] = {
    {.offset = 0, .cfa_base = JSF_SP, .cfa_offset = 8},
    {.offset = 4, .cfa_base = JSF_SP, .cfa_offset = 24}};

static uint64_t vmlck(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long kb = UINT64_MAX;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb == UINT64_MAX ? UINT64_MAX : kb * 1024;
}

/* Pages of [addr, addr+len) not present in this process's page tables. */
static uint64_t not_present(uint64_t addr, uint64_t len)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	uint64_t miss = 0;
	for (uint64_t a = addr & ~4095ull; a < addr + len; a += 4096) {
		uint64_t e = 0;
		if (pread(fd, &e, 8, (off_t)(a / 4096 * 8)) != 8 ||
		    !(e >> 63 & 1))
			miss++;
	}
	close(fd);
	return miss;
}

/* The current block (producer address and size) from the file. */
static void cur_block(const char *path, uint64_t *addr, uint64_t *total)
{
	int fd = open(path, O_RDONLY);
	uint64_t base = 0, sec = 0, tot = 0;
	if (pread(fd, &base, 8, 40) != 8 || pread(fd, &sec, 8, 80) != 8 ||
	    pread(fd, &tot, 8, (off_t)sec + 8) != 8)
		tot = 0;
	close(fd);
	*addr = base + sec;
	*total = tot;
}

static uint32_t rd32(int fd, uint64_t off)
{
	uint32_t v = 0;
	if (pread(fd, &v, 4, (off_t)off) != 4)
		v = 0;
	return v;
}

/* Pages of the current block a reader can reach (docs/ABI.md 3.6) not
 * present: the block and SFrame headers and every FDE slot, the FRE bytes
 * in use, the published log entries, their name index slots and the name
 * bytes in use. *pages: how many pages that is. */
static uint64_t reach_missing(const char *path, uint64_t blk, uint64_t *pages)
{
	int fd = open(path, O_RDONLY);
	uint64_t sec = 0;
	if (pread(fd, &sec, 8, 80) != 8)
		sec = 0;
	uint64_t sf = sec + SF_SHDR_SIZE;
	uint64_t fre =
	    SF_SHDR_SIZE + rd32(fd, sf + SH_FREOFF) + SFRAME_HDR_SIZE;
	uint64_t log_n = rd32(fd, sec + SB_LOG_N);
	uint64_t r[4][2] = {
	    {0, fre},
	    {fre, rd32(fd, sf + SH_FRE_LEN)},
	    {rd32(fd, sec + SB_LOG_OFF), log_n * SF_LOG_ENTRY_SIZE},
	    {0, 0}};
	uint64_t miss = 0, n = 0;
	if (rd32(fd, sec + SB_FEATURES) & SB_F_NAMES) {
		r[3][0] = rd32(fd, sec + SB_NAMES_OFF);
		r[3][1] = rd32(fd, sec + SB_NAMES_LEN);
		miss +=
		    not_present(blk + rd32(fd, sec + SB_NIDX_OFF), 4 * log_n);
	}
	close(fd);
	for (int i = 0; i < 4; i++) {
		if (!r[i][1])
			continue;
		uint64_t a = (blk + r[i][0]) & ~4095ull;
		uint64_t e = (blk + r[i][0] + r[i][1] + 4095) & ~4095ull;
		miss += not_present(a, e - a);
		n += (e - a) / 4096;
	}
	*pages = n;
	return miss;
}

static uint64_t region_base(const char *path)
{
	int fd = open(path, O_RDONLY);
	uint64_t base = 0;
	if (pread(fd, &base, 8, 40) != 8)
		base = 0;
	close(fd);
	return base;
}

/* Add n two-row functions in descending order (LuaJIT's), from `at`. */
static int add_many(struct jsf_region *r, uint64_t at, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		int rc = jsf_region_add(r, at - (uint64_t)i * 64, 48, rows, 2,
					1000 + i);
		if (rc)
			return rc;
	}
	return 0;
}

static int all_found(const char *path, uint64_t at, uint32_t n)
{
	struct jsf_view *v = NULL;
	int bad = 0;
	if (jsf_view_open(&v, path))
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		struct jsf_row row;
		uint64_t fs = 0;
		if (jsf_view_lookup(v, at - (uint64_t)i * 64 + 5, 0, &fs, NULL,
				    &row) ||
		    fs != at - (uint64_t)i * 64 || row.cfa_offset != 24)
			bad++;
	}
	jsf_view_close(v);
	return bad;
}

/* Drop CAP_IPC_LOCK (root ignores RLIMIT_MEMLOCK with it). */
static int drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	d[CAP_IPC_LOCK / 32].permitted &= ~(1u << (CAP_IPC_LOCK % 32));
	d[CAP_IPC_LOCK / 32].inheritable &= ~(1u << (CAP_IPC_LOCK % 32));
	if (syscall(SYS_capset, &h, d))
		return -errno;
	return 0;
}

int main(void)
{
	h_seed();
	snprintf(dir, sizeof(dir), "/tmp/jsf-t_resident-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	const uint64_t at = 0x7f0000000000ull;

	CASE("default: header and current block present and mlocked (VmLck "
	     "= 4096 + block), through growth and compaction; retired "
	     "blocks unlocked")
	{
		uint64_t before = vmlck();
		struct jsf_region_opts o = {.sz = sizeof(o)};
		struct jsf_region *r = NULL;
		CHECK_EQ(jsf_region_create(&r, tmp_path("dflt"), &o), 0);
		const char *p = jsf_region_path(r);
		uint64_t base = region_base(p), blk, total;
		for (int step = 0; step < 4 && r; step++) {
			if (step == 1)
				CHECK_EQ(add_many(r, at, 3000), 0);
			if (step == 2)
				CHECK_EQ(jsf_region_compact(r), 0);
			if (step == 3) {
				CHECK_EQ(jsf_region_remove_all(r, 99999), 0);
				CHECK_EQ(jsf_region_compact(r), 0);
			}
			cur_block(p, &blk, &total);
			struct jsf_region_stats st = {.sz = sizeof(st)};
			CHECK_EQ(jsf_region_stats(r, &st), 0);
			CHECK(total >= 4096, "step %d: block of %llu", step,
			      (unsigned long long)total);
			uint64_t pages = 0;
			CHECK_EQ(not_present(base, 4096), 0);
			CHECK_EQ(reach_missing(p, blk, &pages), 0);
			/* what is locked: the header and the held chunks of
			 * the block, at least every page a reader can reach */
			CHECK_EQ(vmlck() - before, st.locked_bytes);
			CHECK(st.locked_bytes >= 4096 + pages * 4096 &&
				  st.locked_bytes <= 4096 + total,
			      "step %d: %llu locked, %llu reachable pages, "
			      "block of %llu",
			      step, (unsigned long long)st.locked_bytes,
			      (unsigned long long)pages,
			      (unsigned long long)total);
			CHECK_EQ(st.lock_failures, 0);
			if (step == 1)
				CHECK(st.compactions >= 3, "%llu rebuilds",
				      (unsigned long long)st.compactions);
		}
		jsf_region_destroy(r);
		CHECK_EQ(vmlck(), before);
	}

	CASE("JSF_REGION_NO_MLOCK: nothing locked, the pages still present")
	{
		uint64_t before = vmlck();
		struct jsf_region_opts o = {.sz = sizeof(o),
					    .flags = JSF_REGION_NO_MLOCK};
		struct jsf_region *r = NULL;
		CHECK_EQ(jsf_region_create(&r, tmp_path("nolock"), &o), 0);
		CHECK_EQ(add_many(r, at, 3000), 0);
		const char *p = jsf_region_path(r);
		uint64_t blk, total;
		cur_block(p, &blk, &total);
		uint64_t pages = 0;
		CHECK_EQ(not_present(region_base(p), 4096), 0);
		CHECK_EQ(reach_missing(p, blk, &pages), 0);
		CHECK(pages > 0 && pages <= total / 4096, "%llu pages",
		      (unsigned long long)pages);
		CHECK_EQ(vmlck(), before);
		struct jsf_region_stats st = {.sz = sizeof(st)};
		CHECK_EQ(jsf_region_stats(r, &st), 0);
		CHECK_EQ(st.locked_bytes, 0);
		CHECK_EQ(st.lock_failures, 0);
		jsf_region_destroy(r);
	}

	CASE("RLIMIT_MEMLOCK 64 KiB, no CAP_IPC_LOCK (a child): the region "
	     "works and validates, refusals counted with their errno, what "
	     "is locked stays under the limit, the pages still present")
	{
		int pfd[2];
		if (pipe(pfd))
			abort();
		pid_t pid = fork();
		if (pid == 0) {
			close(pfd[0]);
			char out[512];
			int bad = 0;
			int cap = drop_ipc_lock();
			struct rlimit rl = {64 * 1024, 64 * 1024};
			if (setrlimit(RLIMIT_MEMLOCK, &rl))
				bad |= 1;
			struct jsf_region_opts o = {.sz = sizeof(o)};
			struct jsf_region *r = NULL;
			if (jsf_region_create(&r, tmp_path("small"), &o))
				_exit(99);
			struct jsf_region_stats s0 = {.sz = sizeof(s0)};
			jsf_region_stats(r, &s0);
			int add = add_many(r, at, 3000);
			const char *p = jsf_region_path(r);
			uint64_t blk, total;
			cur_block(p, &blk, &total);
			struct jsf_region_stats st = {.sz = sizeof(st)};
			jsf_region_stats(r, &st);
			char msg[256];
			int val = jsf_validate_region(p, msg, sizeof(msg));
			int found = all_found(p, at, 3000);
			uint64_t pages = 0;
			uint64_t miss = not_present(region_base(p), 4096) +
					reach_missing(p, blk, &pages);
			uint64_t lck = vmlck();
			snprintf(out, sizeof(out),
				 "cap %d add %d valid %d found-bad %d miss "
				 "%llu block %llu locked %llu vmlck %llu "
				 "failures %llu errno %d first %llu/%llu",
				 cap, add, val, found, (unsigned long long)miss,
				 (unsigned long long)total,
				 (unsigned long long)st.locked_bytes,
				 (unsigned long long)lck,
				 (unsigned long long)st.lock_failures,
				 st.lock_errno,
				 (unsigned long long)s0.locked_bytes,
				 (unsigned long long)s0.lock_failures);
			bad |= (cap || add || val || found || miss) << 1;
			bad |= (total <= 64 * 1024) << 2; /* the limit bites */
			bad |= (st.lock_failures == 0) << 3;
			bad |=
			    (st.lock_errno != ENOMEM && st.lock_errno != EPERM)
			    << 4;
			bad |= (lck > 64 * 1024 || lck != st.locked_bytes) << 5;
			bad |= (s0.locked_bytes == 0 || s0.lock_failures) << 6;
			if (write(pfd[1], out, strlen(out) + 1) < 0)
				bad |= 1 << 7;
			jsf_region_destroy(r);
			_exit(bad);
		}
		close(pfd[1]);
		char out[512] = "";
		if (read(pfd[0], out, sizeof(out) - 1) < 0)
			out[0] = 0;
		close(pfd[0]);
		int status = 0;
		waitpid(pid, &status, 0);
		printf("# %s\n", out);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child status %#x: %s", status, out);
	}

	CASE("retired blocks: a block retired before the last one holds no "
	     "data any more (its pages freed), through growth, flushes and "
	     "history dropped")
	{
		struct jsf_region_opts o = {.sz = sizeof(o),
					    .history_max = 2000};
		struct jsf_region *r = NULL;
		CHECK_EQ(jsf_region_create(&r, tmp_path("retire"), &o), 0);
		const char *p = jsf_region_path(r);
		int fd = r ? open(p, O_RDONLY) : -1;
		uint64_t blk[64][2], nb = 0, base = r ? region_base(p) : 0;
		uint32_t checked = 0, bad = 0;
		for (int round = 0; round < 8 && r && fd >= 0; round++) {
			for (uint32_t i = 0; i < 3000; i++) {
				CHECK_EQ(jsf_region_add(r,
							at - (uint64_t)i * 64 -
							    (uint64_t)round *
								(1u << 20),
							48, rows, 2, 1000 + i),
					 0);
				uint64_t a, t;
				cur_block(p, &a, &t);
				if (nb && blk[nb - 1][0] == a - base)
					continue;
				if (nb < 64)
					blk[nb][0] = a - base, blk[nb][1] = t,
					nb++;
				/* every block before the last two: no data in
				 * what neither of those covers */
				for (uint64_t k = 0; k + 2 < nb; k++) {
					uint64_t lo = blk[k][0],
						 hi = lo + blk[k][1];
					for (uint64_t q = nb - 2; q < nb; q++) {
						uint64_t l2 = blk[q][0],
							 h2 = l2 + blk[q][1];
						if (l2 <= lo && h2 > lo)
							lo = h2;
						if (l2 < hi && h2 >= hi)
							hi = l2;
					}
					if (lo >= hi)
						continue;
					off_t d =
					    lseek(fd, (off_t)lo, SEEK_DATA);
					checked++;
					if (d >= 0 && (uint64_t)d < hi) {
						bad++;
						printf("# block %llu [%llu, "
						       "+%llu): data "
						       "at %lld\n",
						       (unsigned long long)k,
						       (unsigned long long)
							   blk[k][0],
						       (unsigned long long)
							   blk[k][1],
						       (long long)d);
					}
				}
			}
			CHECK_EQ(jsf_region_remove_all(r, 900000 + round), 0);
		}
		printf("# %llu blocks, %u checks of retired ones\n",
		       (unsigned long long)nb, checked);
		CHECK(nb >= 5 && checked >= 5, "%llu blocks, %u checks",
		      (unsigned long long)nb, checked);
		CHECK_EQ(bad, 0);
		char msg[256] = "";
		CHECK(r && jsf_validate_region(p, msg, sizeof(msg)) == 0,
		      "validates: %s", msg);
		if (fd >= 0)
			close(fd);
		jsf_region_destroy(r);
	}

	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return h_exit();
}
