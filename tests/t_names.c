/* SPDX-License-Identifier: MIT */
/*
 * Function names in the region (docs/ABI.md 1.4): jsf_region_add_named and
 * jsf_view_name, live and post-mortem, against the test's own list of what
 * it added when (names made from the index, never read back from the
 * library to build the expectation); time-aware across remove and re-add at
 * one address; carried across compaction, growth and dropped history; the
 * layout of regions without names unchanged; the validator and the reader
 * on damaged name areas.
 */
#include "harness.h"
#include "jitsframe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static const char *tmp_path(const char *name)
{
	static char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static const struct jsf_row row0 = {
    .offset = 0, .cfa_base = JSF_SP, .cfa_offset = 8};

struct ent {
	uint64_t start, add, remove;
	uint32_t size;
	bool named;
	char name[64];
};

static struct jsf_region *mk(const char *name, uint32_t history_max)
{
	struct jsf_region_opts o = {.sz = sizeof(o),
				    .flags = JSF_REGION_REPLACE,
				    .history_max = history_max};
	struct jsf_region *r = NULL;
	int err = jsf_region_create(&r, tmp_path(name), &o);
	CHECK_EQ(err, 0);
	return r;
}

/* The name of the function covering pc at t, or the error. */
static int name_at(const struct jsf_view *v, uint64_t pc, uint64_t t, char *buf,
		   size_t len)
{
	int rc;
	do
		rc = jsf_view_name(v, pc, t, buf, len);
	while (rc == -EAGAIN);
	return rc;
}

/* Every entry at its own time (and live ones now): its name, or -ENODATA
 * if added unnamed; -ENOENT only for history the region may drop. */
static int check_ents(const struct jsf_view *v, const struct ent *e, uint32_t n,
		      bool may_drop)
{
	int bad = 0;
	char buf[128];
	for (uint32_t i = 0; i < n && bad < 5; i++) {
		uint64_t times[2] = {e[i].remove ? e[i].remove - 1 : 0,
				     e[i].add};
		for (int k = 0; k < 2; k++) {
			uint64_t pc = e[i].start + (k ? e[i].size - 1 : 0);
			int rc = name_at(v, pc, times[k], buf, sizeof(buf));
			if (rc == -ENOENT && may_drop && e[i].remove)
				continue;
			int want =
			    e[i].named ? (int)strlen(e[i].name) : -ENODATA;
			if (rc != want || (rc >= 0 && strcmp(buf, e[i].name))) {
				bad++;
				printf("#   entry %u (%#llx, t %llu): rc %d "
				       "'%s', want %d '%s'\n",
				       i, (unsigned long long)pc,
				       (unsigned long long)times[k], rc,
				       rc >= 0 ? buf : "", want, e[i].name);
			}
		}
	}
	return bad;
}

static int check_both(struct jsf_region *r, const struct ent *e, uint32_t n,
		      bool may_drop, const char *path)
{
	struct jsf_view *v = NULL;
	int bad = 0;
	CHECK_EQ(jsf_view_open(&v, path ? path : jsf_region_path(r)), 0);
	if (v)
		bad += check_ents(v, e, n, may_drop);
	jsf_view_close(v);
	return bad;
}

static uint64_t rd(int fd, uint64_t off, unsigned bytes)
{
	uint64_t v = 0;
	if (pread(fd, &v, bytes, (off_t)off) != (ssize_t)bytes)
		return UINT64_MAX;
	return v;
}

static void wr32(int fd, uint64_t off, uint32_t v)
{
	if (pwrite(fd, &v, 4, (off_t)off) != 4)
		abort();
}

int main(void)
{
	h_seed();
	snprintf(dir, sizeof(dir), "/tmp/jsf-t_names-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	char buf[2048];

	CASE("rebuilds that drop nothing (growth in the module's pattern: "
	     "descending adds, a remove of each older one) carry every name")
	{
		/* the region's fast rebuild moves the log as a block and passes
		 * no remap: the names must come along all the same */
		struct jsf_region *r = mk("grow", 0);
		enum { N = 3000 };
		static struct ent e[N];
		uint64_t t = 100;
		for (uint32_t i = 0; i < N; i++) {
			e[i].start = 0x40000000ull - 0x100ull * (i + 1);
			e[i].size = 0x80;
			e[i].add = t++;
			e[i].named = true;
			snprintf(e[i].name, sizeof(e[i].name),
				 "TRACE_%u::grow.lua:%u", i + 1, 7 + i % 50);
			CHECK_EQ(jsf_region_add_named(r, e[i].start, e[i].size,
						      &row0, 1, e[i].name,
						      e[i].add),
				 0);
			if (i % 3 == 2) { /* tombstones kept: history */
				CHECK_EQ(
				    jsf_region_remove(r, e[i - 1].start, t), 0);
				e[i - 1].remove = t++;
			}
		}
		struct jsf_region_stats st = {.sz = sizeof(st)};
		CHECK_EQ(jsf_region_stats(r, &st), 0);
		/* 3000 functions from an initial 256 slots: it grew (rebuilt),
		 * and kept everything */
		printf("# %u named adds, %u logged, %llu dropped, file %llu "
		       "bytes\n",
		       (unsigned)N, st.logged_funcs,
		       (unsigned long long)st.dropped_history,
		       (unsigned long long)st.file_size);
		CHECK_EQ(st.logged_funcs, N);
		CHECK_EQ(st.dropped_history, 0);
		CHECK_EQ(check_both(r, e, N, false, NULL), 0);
		jsf_region_destroy(r);
	}

	CASE("named adds read back live and post-mortem; unnamed ones "
	     "-ENODATA; any pc inside; lengths, truncation, the 1024 cut")
	{
		struct jsf_region *r = mk("basic", 0);
		struct ent e[3] = {
		    {0x10000, 5, 0, 100, true, "TRACE_1::x.lua:3"},
		    {0x10100, 6, 0, 50, false, ""},
		    {0x10200, 7, 0, 80, true, "TRACE_2::@/a/b.lua:10"}};
		for (int i = 0; i < 3; i++)
			CHECK_EQ(jsf_region_add_named(
				     r, e[i].start, e[i].size, &row0, 1,
				     e[i].named ? e[i].name : NULL, e[i].add),
				 0);
		char longname[1500];
		memset(longname, 'n', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = 0;
		CHECK_EQ(
		    jsf_region_add_named(r, 0x20000, 16, &row0, 1, longname, 8),
		    0);
		CHECK_EQ(check_both(r, e, 3, false, NULL), 0);
		struct jsf_view *v = NULL;
		CHECK_EQ(jsf_view_open(&v, jsf_region_path(r)), 0);
		CHECK_EQ(jsf_view_name(v, 0x10000 + 42, 0, buf, sizeof(buf)),
			 16);
		CHECK_EQ(jsf_view_name(v, 0x10000, 0, NULL, 0), 16);
		CHECK_EQ(jsf_view_name(v, 0x10000, 0, buf, 6), 16);
		CHECK(!strcmp(buf, "TRACE"), "cut: '%s'", buf);
		CHECK_EQ(jsf_view_name(v, 0x10000 + 100, 0, buf, sizeof(buf)),
			 -ENOENT);
		CHECK_EQ(jsf_view_name(v, 0x10000, 4, buf, sizeof(buf)),
			 -ENOENT); /* before it was added */
		CHECK_EQ(jsf_view_name(v, 0x20000, 0, buf, sizeof(buf)), 1024);
		CHECK_EQ(strlen(buf), 1024);
		CHECK_EQ(jsf_view_name(NULL, 0x10000, 0, buf, 1), -EINVAL);
		CHECK_EQ(jsf_view_name(v, 0x10000, 0, NULL, 4), -EINVAL);
		jsf_view_close(v);
		char msg[256];
		CHECK_EQ(
		    jsf_validate_region(jsf_region_path(r), msg, sizeof(msg)),
		    0);
		char path[512];
		snprintf(path, sizeof(path), "%s", jsf_region_path(r));
		jsf_region_destroy(r);
		CHECK_EQ(check_both(NULL, e, 3, false, path), 0);
		CHECK_EQ(jsf_view_open(&v, path), 0);
		CHECK_EQ(jsf_view_name(v, 0x20000 + 15, 0, buf, sizeof(buf)),
			 1024);
		jsf_view_close(v);
	}

	CASE("time-aware: removed and re-added at one address, each name "
	     "for its own time, live and post-mortem")
	{
		struct jsf_region *r = mk("reuse", 0);
		const uint64_t at = 0x7f0000001000ull;
		CHECK_EQ(jsf_region_add_named(r, at, 200, &row0, 1,
					      "TRACE_1::a.lua:1", 10),
			 0);
		CHECK_EQ(jsf_region_remove(r, at, 20), 0);
		CHECK_EQ(jsf_region_add_named(r, at + 64, 64, &row0, 1,
					      "TRACE_2::a.lua:2", 30),
			 0);
		CHECK_EQ(jsf_region_remove_all(r, 40), 0);
		CHECK_EQ(jsf_region_add_named(r, at, 100, &row0, 1,
					      "TRACE_1::b.lua:7", 50),
			 0);
		for (int pm = 0; pm < 2; pm++) {
			char path[512];
			snprintf(path, sizeof(path), "%s", jsf_region_path(r));
			if (pm)
				jsf_region_destroy(r);
			struct jsf_view *v = NULL;
			CHECK_EQ(jsf_view_open(&v, path), 0);
			struct {
				uint64_t pc, t;
				const char *want; /* NULL: -ENOENT */
			} q[] = {
			    {at + 70, 15, "TRACE_1::a.lua:1"},
			    {at + 70, 19, "TRACE_1::a.lua:1"},
			    {at + 70, 20, NULL},
			    {at + 70, 35, "TRACE_2::a.lua:2"},
			    {at + 10, 35, NULL},
			    {at + 70, 45, NULL},
			    {at + 70, 55, "TRACE_1::b.lua:7"},
			    {at + 70, 0, "TRACE_1::b.lua:7"},
			    {at + 150, 0, NULL},
			    {at + 150, 15, "TRACE_1::a.lua:1"},
			};
			for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
				int rc = name_at(v, q[i].pc, q[i].t, buf,
						 sizeof(buf));
				if (!q[i].want)
					CHECK(
					    rc == -ENOENT,
					    "%s: pc +%llu t %llu: rc %d '%s'",
					    pm ? "post-mortem" : "live",
					    (unsigned long long)(q[i].pc - at),
					    (unsigned long long)q[i].t, rc,
					    rc >= 0 ? buf : "");
				else
					CHECK(
					    rc >= 0 && !strcmp(buf, q[i].want),
					    "%s: pc +%llu t %llu: rc %d '%s', "
					    "want '%s'",
					    pm ? "post-mortem" : "live",
					    (unsigned long long)(q[i].pc - at),
					    (unsigned long long)q[i].t, rc,
					    rc >= 0 ? buf : "", q[i].want);
			}
			jsf_view_close(v);
		}
	}

	CASE("across growth, compaction and dropped history: every name "
	     "stays with its function (random order, removes, re-adds)")
	{
		enum { N = 6000 };
		struct ent *e = calloc(N, sizeof(*e));
		for (uint32_t hm = 0; hm < 2; hm++) {
			struct jsf_region *r = mk("churn", hm ? 300 : 0);
			uint64_t t = 100;
			uint32_t n = 0;
			int bad = 0;
			/* slots of 256 bytes at 2000 addresses, reused */
			uint32_t live[2000];
			memset(live, 0xff, sizeof(live));
			for (uint32_t i = 0; i < N && !bad; i++) {
				uint32_t slot = (uint32_t)h_below(2000);
				if (live[slot] != UINT32_MAX) {
					CHECK_EQ(
					    jsf_region_remove(
						r, e[live[slot]].start, ++t),
					    0);
					e[live[slot]].remove = t;
				}
				struct ent *f = &e[n];
				f->start = 0x40000000ull + slot * 256ull;
				f->size = 1 + (uint32_t)h_below(256);
				f->add = ++t;
				f->remove = 0;
				f->named = h_below(8) != 0;
				snprintf(f->name, sizeof(f->name),
					 "TRACE_%u::chunk%u.lua:%u", i,
					 (unsigned)h_below(50),
					 (unsigned)h_below(9999));
				int rc = jsf_region_add_named(
				    r, f->start, f->size, &row0, 1,
				    f->named ? f->name : NULL, f->add);
				CHECK_EQ(rc, 0);
				live[slot] = n++;
				if (i % 1500 == 1499) {
					CHECK_EQ(jsf_region_compact(r), 0);
					bad += check_both(r, e, n, hm, NULL);
				}
			}
			struct jsf_region_stats st = {.sz = sizeof(st)};
			jsf_region_stats(r, &st);
			CHECK(st.compactions > 4, "%llu rebuilds",
			      (unsigned long long)st.compactions);
			if (hm)
				CHECK(st.dropped_history > 0,
				      "history_max 300: nothing dropped");
			bad += check_both(r, e, n, hm, NULL);
			char msg[256], path[512];
			CHECK(jsf_validate_region(jsf_region_path(r), msg,
						  sizeof(msg)) == 0,
			      "%s", msg);
			snprintf(path, sizeof(path), "%s", jsf_region_path(r));
			jsf_region_destroy(r);
			bad += check_both(NULL, e, n, hm, path);
			CHECK_EQ(bad, 0);
		}
		free(e);
	}

	CASE("a region given no names: block reserved bytes 40..63 stay 0, "
	     "jsf_view_name says -ENODATA; the first named add adds the "
	     "area, earlier functions stay unnamed")
	{
		struct jsf_region *r = mk("plain", 0);
		CHECK_EQ(jsf_region_add(r, 0x1000, 10, &row0, 1, 5), 0);
		char path[512];
		snprintf(path, sizeof(path), "%s", jsf_region_path(r));
		int fd = open(path, O_RDONLY);
		uint64_t sec = rd(fd, 80, 8);
		for (unsigned o = 40; o < 64; o += 8)
			CHECK_EQ(rd(fd, sec + o, 8), 0);
		struct jsf_view *v = NULL;
		CHECK_EQ(jsf_view_open(&v, path), 0);
		CHECK_EQ(jsf_view_name(v, 0x1000, 0, buf, sizeof(buf)),
			 -ENODATA);
		jsf_view_close(v);
		CHECK_EQ(jsf_region_add_named(r, 0x2000, 10, &row0, 1,
					      "TRACE_9::z:1", 6),
			 0);
		CHECK_EQ(jsf_region_add(r, 0x3000, 10, &row0, 1, 7), 0);
		sec = rd(fd, 80, 8);
		CHECK_EQ(rd(fd, sec + 40, 4), 1); /* the feature bit */
		close(fd);
		struct ent e[3] = {{0x1000, 5, 0, 10, false, ""},
				   {0x2000, 6, 0, 10, true, "TRACE_9::z:1"},
				   {0x3000, 7, 0, 10, false, ""}};
		CHECK_EQ(check_both(r, e, 3, false, NULL), 0);
		jsf_region_destroy(r);
		CHECK_EQ(check_both(NULL, e, 3, false, path), 0);
	}

	CASE("damaged name areas: the validator names them, the reader "
	     "answers -EBADMSG for the name and still looks rows up")
	{
		struct jsf_region *r = mk("bad", 0);
		CHECK_EQ(jsf_region_add_named(r, 0x1000, 10, &row0, 1,
					      "TRACE_1::q:1", 5),
			 0);
		CHECK_EQ(jsf_region_add_named(r, 0x2000, 10, &row0, 1,
					      "TRACE_2::q:2", 6),
			 0);
		char path[512], msg[256];
		snprintf(path, sizeof(path), "%s", jsf_region_path(r));
		jsf_region_destroy(r);
		int fd = open(path, O_RDWR);
		uint64_t sec = rd(fd, 80, 8);
		uint32_t nidx = (uint32_t)rd(fd, sec + 44, 4);
		uint32_t ncap = (uint32_t)rd(fd, sec + 52, 4);
		uint32_t nlen = (uint32_t)rd(fd, sec + 56, 4);
		uint32_t o1 = (uint32_t)rd(fd, sec + nidx + 4, 4);
		CHECK_EQ(jsf_validate_region(path, msg, sizeof(msg)), 0);
		/* entry 1's record past the bytes in use */
		wr32(fd, sec + nidx + 4, nlen);
		CHECK_EQ(jsf_validate_region(path, msg, sizeof(msg)), -EBADMSG);
		CHECK(strstr(msg, "name"), "msg: %s", msg);
		struct jsf_view *v = NULL;
		CHECK_EQ(jsf_view_open(&v, path), 0);
		CHECK_EQ(jsf_view_name(v, 0x2000, 0, buf, sizeof(buf)),
			 -EBADMSG);
		CHECK_EQ(jsf_view_name(v, 0x1000, 0, buf, sizeof(buf)), 12);
		CHECK_EQ(jsf_view_lookup(v, 0x2005, 0, NULL, NULL, NULL), 0);
		jsf_view_close(v);
		wr32(fd, sec + nidx + 4, o1);
		/* bytes in use beyond the area */
		wr32(fd, sec + 56, ncap + 1);
		CHECK_EQ(jsf_validate_region(path, msg, sizeof(msg)), -EBADMSG);
		CHECK(strstr(msg, "name area"), "msg: %s", msg);
		CHECK_EQ(jsf_view_open(&v, path), 0);
		CHECK_EQ(jsf_view_name(v, 0x1000, 0, buf, sizeof(buf)),
			 -EBADMSG);
		jsf_view_close(v);
		wr32(fd, sec + 56, nlen);
		/* a record without its NUL */
		uint32_t names = (uint32_t)rd(fd, sec + 48, 4);
		wr32(fd, sec + names + o1 + 2 + 12, 0x41414141);
		CHECK_EQ(jsf_validate_region(path, msg, sizeof(msg)), -EBADMSG);
		close(fd);
	}

	CASE("JSF_REGION_MAPPED: the first adds with source maps rebuild "
	     "nothing (NAMED alone: the first map rebuilds the block); each "
	     "map reads back byte for byte")
	{
		for (int mapped = 0; mapped < 2; mapped++) {
			const char *path =
			    tmp_path(mapped ? "mapped" : "named");
			struct jsf_region *r = NULL;
			struct jsf_region_opts o = {
			    .sz = sizeof(o),
			    .flags =
				mapped ? JSF_REGION_MAPPED : JSF_REGION_NAMED};
			CHECK_EQ(jsf_region_create(&r, path, &o), 0);
			if (!r)
				break;
			uint8_t map[32];
			char name[32];
			for (uint32_t i = 0; i < 64; i++) {
				memset(map, (int)(i + 1), sizeof(map));
				snprintf(name, sizeof(name), "TRACE_%u::m:1",
					 i);
				CHECK_EQ(jsf_region_add_mapped(
					     r, 0x100000 - 64 * (uint64_t)i, 32,
					     &row0, 1, name, map,
					     (uint32_t)sizeof(map), 10 + i),
					 0);
			}
			struct jsf_region_stats st = {.sz = sizeof(st)};
			CHECK_EQ(jsf_region_stats(r, &st), 0);
			/* ground truth: the region's own count of rebuilds */
			if (mapped)
				CHECK(st.compactions == 0 &&
					  st.sync_rebuilds == 0,
				      "MAPPED: %llu rebuilds, %llu whole",
				      (unsigned long long)st.compactions,
				      (unsigned long long)st.sync_rebuilds);
			else
				CHECK(st.compactions >= 1,
				      "NAMED: the first map rebuilt nothing");
			struct jsf_view *v = NULL;
			CHECK_EQ(jsf_view_open(&v, path), 0);
			for (uint32_t i = 0; v && i < 64; i++) {
				uint8_t got[64];
				uint64_t fs = 0;
				int n = jsf_view_srcmap(
				    v, 0x100000 - 64 * (uint64_t)i + 5, 0, got,
				    sizeof(got), &fs);
				memset(map, (int)(i + 1), sizeof(map));
				CHECK(n == (int)sizeof(map) &&
					  fs == 0x100000 - 64 * (uint64_t)i &&
					  !memcmp(got, map, sizeof(map)),
				      "function %u: map %d bytes", i, n);
			}
			jsf_view_close(v);
			jsf_region_destroy(r);
		}
	}

	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return h_exit();
}
