/* SPDX-License-Identifier: MIT */
/*
 * A full file system under the region (docs/ABI.md 3.6): the producer
 * makes each page present before its first store there, so when the file
 * system cannot give a page (ENOSPC, a tmpfs at its size) the add, the
 * rebuild or the create fails with -ENOSPC, and never raises SIGBUS in
 * the host (a store to a hole of a shared file mapping that the file
 * system cannot fill does). What was published stays exact, and adds
 * work again once there is room.
 *
 * Ground truth: the kernel (a tmpfs mounted with size=, so the space runs
 * out for real) and the test's own list of what it added. Needs root (the
 * mount); skipped visibly otherwise, a failure under CI=true. Without the
 * populate's check the process dies of SIGBUS at the first page past the
 * limit (checked by hand: a crash fails the test).
 */
#include "harness.h"
#include "jitsframe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <unistd.h>

#define BASE 0x7f3400000000ull
#define MAXN 200000

static char dir[64];

static const char *in_dir(const char *name)
{
	static char p[128];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

/* Rows, name and map of function i: a pure function of i. */
static uint32_t rows_of(uint32_t i, struct jsf_row *rows)
{
	rows[0] =
	    (struct jsf_row){.offset = 0, .cfa_base = JSF_SP, .cfa_offset = 8};
	rows[1] = (struct jsf_row){.offset = 1 + i % 7,
				   .cfa_base = JSF_SP,
				   .cfa_offset = 16 + 8 * (int32_t)(i % 5)};
	return 2;
}

static int add(struct jsf_region *r, uint32_t i)
{
	struct jsf_row rows[2];
	char name[64], map[48];
	snprintf(name, sizeof(name), "TRACE_%u::fullfs.lua:%u", i, i % 977);
	memset(map, (int)(i & 0x7f), sizeof(map));
	return jsf_region_add_mapped(r, BASE + (uint64_t)i * 64, 32, rows,
				     rows_of(i, rows), name, map,
				     (uint32_t)sizeof(map), 1000 + i);
}

/* Every function in [0, n) that `live` marks is found with its rows and
 * name, every other one is not. */
static uint32_t check_view(const char *path, const bool *live, uint32_t n)
{
	struct jsf_view *v = NULL;
	if (jsf_view_open(&v, path))
		return n ? n : 1;
	uint32_t bad = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t fs = 0;
		uint32_t fz = 0;
		struct jsf_row row, want[2];
		rows_of(i, want);
		uint64_t pc = BASE + (uint64_t)i * 64 + 1 + i % 7;
		int rc = jsf_view_lookup(v, pc, 0, &fs, &fz, &row);
		char name[64], wname[64];
		snprintf(wname, sizeof(wname), "TRACE_%u::fullfs.lua:%u", i,
			 i % 977);
		if (live[i]) {
			if (rc || fs != BASE + (uint64_t)i * 64 || fz != 32 ||
			    row.cfa_offset != want[1].cfa_offset ||
			    jsf_view_name(v, pc, 0, name, sizeof(name)) < 0 ||
			    strcmp(name, wname))
				bad++;
		} else if (rc != -ENOENT) {
			bad++;
		}
	}
	jsf_view_close(v);
	return bad;
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/jsf-t_fullfs-XXXXXX");
	if (!mkdtemp(dir))
		return 2;
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") < 0) {
		char why[128];
		snprintf(why, sizeof(why), "mounting a 1 MiB tmpfs: %s (root)",
			 strerror(errno));
		rmdir(dir);
		return h_skip_or_fail(why);
	}
	bool *live = calloc(MAXN, sizeof(*live));
	uint32_t n = 0;
	CASE("a full file system: adds fail with -ENOSPC, no SIGBUS; what "
	     "was published stays exact")
	{
		/* a filler taking half the space, freed in the next case */
		int fd =
		    open(in_dir("filler"), O_WRONLY | O_CREAT | O_EXCL, 0600);
		CHECK(fd >= 0 && posix_fallocate(fd, 0, 512 << 10) == 0,
		      "the filler file");
		close(fd);
		struct jsf_region *r = NULL;
		struct jsf_region_opts o = {.sz = sizeof(o),
					    .initial_funcs = 16,
					    .flags = JSF_REGION_NAMED};
		CHECK_EQ(jsf_region_create(&r, in_dir("region"), &o), 0);
		int err = 0;
		while (n < MAXN && !(err = add(r, n)))
			live[n++] = true;
		CHECK(n > 100, "functions added before the space ran out (%u)",
		      n);
		CHECK_EQ(err, -ENOSPC);
		/* more adds: still refused cleanly, nothing half-written */
		for (uint32_t k = 0; k < 50; k++)
			CHECK_EQ(add(r, n + k), -ENOSPC);
		/* removes write only what exists (tombstones) */
		for (uint32_t i = 0; i < n; i += 3) {
			CHECK_EQ(jsf_region_remove(r, BASE + (uint64_t)i * 64,
						   5000000 + i),
				 0);
			live[i] = false;
		}
		char msg[256] = "";
		CHECK(jsf_validate_region(in_dir("region"), msg, sizeof(msg)) ==
			  0,
		      "validates: %s", msg);
		CHECK_EQ(check_view(in_dir("region"), live, n + 50), 0);
		printf("# %u functions added, then -ENOSPC\n", n);
		/* room again: the adds work again */
		CHECK_EQ(unlink(in_dir("filler")), 0);
		uint32_t m = n + 50, added = 0;
		for (; m < n + 2050 && !add(r, m); m++) {
			live[m] = true;
			added++;
		}
		CHECK(added == 2000, "with room again, 2000 adds (%u)", added);
		CHECK(jsf_validate_region(in_dir("region"), msg, sizeof(msg)) ==
			  0,
		      "validates: %s", msg);
		CHECK_EQ(check_view(in_dir("region"), live, m), 0);
		jsf_region_destroy(r);
		unlink(in_dir("region"));
	}
	CASE("a full file system at create: -ENOSPC, no SIGBUS")
	{
		int fd =
		    open(in_dir("filler"), O_WRONLY | O_CREAT | O_EXCL, 0600);
		/* all of it (a tmpfs's size is in pages) */
		off_t got = 0;
		while (posix_fallocate(fd, got, 4096) == 0)
			got += 4096;
		close(fd);
		struct jsf_region *r = NULL;
		struct jsf_region_opts o = {.sz = sizeof(o)};
		CHECK_EQ(jsf_region_create(&r, in_dir("region2"), &o), -ENOSPC);
		CHECK(r == NULL, "no region");
		unlink(in_dir("region2"));
		unlink(in_dir("filler"));
	}
	free(live);
	umount(dir);
	rmdir(dir);
	return h_exit();
}
