/* SPDX-License-Identifier: MIT */
/* Round trips: the region against the brute-force model (tests/model.h). */
#include "internal.h" /* sf_view_tindex_stats */
#include "model.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static const char *tmp_path(const char *name)
{
	static char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

/* Make n non-overlapping functions with random gaps, in ascending order. */
static void make_set(struct model *m, uint32_t n, uint64_t base, uint64_t t0)
{
	uint64_t at = base;
	for (uint32_t i = 0; i < n; i++) {
		at += h_below(3) ? h_below(64) : 0; /* gaps, sometimes none */
		uint32_t size =
		    1 + (h_below(8) ? h_below(600) : h_below(70000));
		m_add(m, at, size, t0);
		at += size;
	}
}

static void shuffle(uint32_t *o, uint32_t n)
{
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = h_below(i), t = o[i - 1];
		o[i - 1] = o[j];
		o[j] = t;
	}
}

/* Check every pc of every model function (and the bytes around). */
static int check_all(const struct model *m, const struct jsf_view *v,
		     uint64_t t, uint32_t stride)
{
	int bad = 0;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (uint32_t i = 0; i < m->n; i++) {
		if (m->f[i].start < lo)
			lo = m->f[i].start;
		if (m->f[i].start + m->f[i].size > hi)
			hi = m->f[i].start + m->f[i].size;
	}
	if (lo > 0)
		lo--;
	for (uint64_t pc = lo; pc <= hi && bad < 5; pc += stride)
		bad += m_check(m, v, pc, t);
	/* every function boundary exactly */
	for (uint32_t i = 0; i < m->n && bad < 5; i++) {
		const struct mfunc *f = &m->f[i];
		bad += m_check(m, v, f->start, t);
		bad += m_check(m, v, f->start + f->size - 1, t);
		bad += m_check(m, v, f->start + f->size, t);
		for (uint32_t k = 0; k < f->nrows; k++)
			bad += m_check(m, v, f->start + f->rows[k].offset, t);
	}
	return bad;
}

static int add_model(struct jsf_region *r, const struct mfunc *f)
{
	return jsf_region_add(r, f->start, f->size, f->rows, f->nrows, f->add);
}

/* Insert in a given order, check live and post-mortem, at all times. */
static void round_trip(const char *name, int order, uint32_t n,
		       uint32_t initial)
{
	struct model m = {0};
	make_set(&m, n, 0x7f0000100000ull, 1000);
	m_index(&m); /* the set is fixed from here on */
	uint32_t *o = calloc(n, sizeof(*o));
	for (uint32_t i = 0; i < n; i++)
		o[i] = order == 1 ? n - 1 - i : i; /* 1: descending (LuaJIT) */
	if (order == 2)
		shuffle(o, n);
	for (uint32_t i = 0; i < n; i++)
		m.f[o[i]].add = 1000 + i; /* add times follow insertion */
	struct jsf_region_opts opts = {.sz = sizeof(opts),
				       .initial_funcs = initial};
	struct jsf_region *r;
	const char *path = tmp_path(name);
	CASE(name)
	{
		int rc = jsf_region_create(&r, path, &opts);
		CHECK_EQ(rc, 0);
		if (rc)
			break;
		for (uint32_t i = 0; i < n; i++) {
			rc = add_model(r, &m.f[o[i]]);
			CHECK(rc == 0, "add %u: %d", i, rc);
		}
		struct jsf_view *v;
		CHECK_EQ(jsf_view_open(&v, path), 0);
		struct jsf_view_info info = {.sz = sizeof(info)};
		jsf_view_info(v, &info);
		CHECK(info.live, "view of a running producer is live");
		CHECK_EQ(info.live_funcs, n);
		check_all(&m, v, 0, 7);
		/* at a time when only the first half had been added */
		check_all(&m, v, 1000 + n / 2, 13);
		/* remove a random third, at later times */
		uint64_t now = 1000 + n;
		for (uint32_t i = 0; i < n; i++) {
			if (h_below(3))
				continue;
			m.f[i].remove = ++now;
			CHECK_EQ(
			    jsf_region_remove(r, m.f[i].start, m.f[i].remove),
			    0);
		}
		check_all(&m, v, 0, 7);
		check_all(&m, v, 1000 + n + n / 6, 11); /* mid-removals */
		check_all(&m, v, 1000 + n - 1, 11);	/* before removals */
		uint64_t before_compact = now;
		CHECK_EQ(jsf_region_compact(r), 0);
		check_all(&m, v, 0, 7);
		check_all(&m, v, before_compact - n / 10, 11);
		/* the past times above were answered through the log's index
		 * (view.c), not only by the scan of the log */
		uint64_t tb, ta;
		sf_view_tindex_stats(v, &tb, &ta);
		CHECK(tb >= 1 && ta >= 100000,
		      "the log's index was built (%llu) and answered (%llu)",
		      (unsigned long long)tb, (unsigned long long)ta);
		char msg[512];
		rc = jsf_validate_region(path, msg, sizeof(msg));
		CHECK(rc == 0, "validate: %s", msg);
		jsf_view_close(v);
		jsf_region_destroy(r);
		/* post-mortem: reopen the file */
		CHECK_EQ(jsf_view_open(&v, path), 0);
		jsf_view_info(v, &info);
		CHECK(!info.live && info.closed,
		      "closed region reads post-mortem");
		check_all(&m, v, 0, 5);
		check_all(&m, v, 1000 + n / 3, 9);
		check_all(&m, v, before_compact - n / 10, 9);
		rc = jsf_validate_region(path, msg, sizeof(msg));
		CHECK(rc == 0, "validate post-mortem: %s", msg);
		jsf_view_close(v);
	}
	unlink(path);
	free(o);
	m_free(&m);
}

/* Flush storms: everything removed, addresses reused, history kept. */
static void reuse(void)
{
	struct model m = {0};
	const char *path = tmp_path("reuse");
	struct jsf_region *r;
	CASE("flush storms: reused addresses resolve by time")
	{
		CHECK_EQ(jsf_region_create(&r, path, NULL), 0);
		uint64_t now = 10;
		for (int epoch = 0; epoch < 20; epoch++) {
			uint32_t first = m.n;
			/* LuaJIT-like: each epoch's traces top-down from the
			 * same area, with different sizes each time */
			uint64_t top = 0x10000000;
			for (int i = 0; i < 50; i++) {
				uint32_t size = 16 + h_below(300);
				top -= size + h_below(8);
				struct mfunc *f = m_add(&m, top, size, ++now);
				CHECK_EQ(add_model(r, f), 0);
			}
			now++;
			CHECK_EQ(jsf_region_remove_all(r, now), 0);
			for (uint32_t i = first; i < m.n; i++)
				m.f[i].remove = now;
			now++;
		}
		m_index(&m); /* over reused addresses: checked by m_find */
		struct jsf_view *v;
		CHECK_EQ(jsf_view_open(&v, path), 0);
		for (uint64_t t = 1; t <= now; t += 3)
			for (int k = 0; k < 200; k++)
				m_check(&m, v, 0x10000000 - 1 - h_below(20000),
					t);
		uint64_t tb, ta;
		sf_view_tindex_stats(v, &tb, &ta);
		CHECK(tb >= 1 && ta >= 500,
		      "reused addresses through the log's index (%llu builds, "
		      "%llu answers)",
		      (unsigned long long)tb, (unsigned long long)ta);
		check_all(&m, v, 0, 1); /* nothing live now */
		jsf_view_close(v);
		jsf_region_destroy(r);
		CHECK_EQ(jsf_view_open(&v, path), 0);
		for (uint64_t t = 1; t <= now; t += 3)
			for (int k = 0; k < 200; k++)
				m_check(&m, v, 0x10000000 - 1 - h_below(20000),
					t);
		jsf_view_close(v);
	}
	unlink(path);
	m_free(&m);
}

static void errors(void)
{
	const char *path = tmp_path("errors");
	struct jsf_region *r;
	struct jsf_row row = {.offset = 0, .cfa_base = JSF_SP, .cfa_offset = 8};
	struct jsf_row two[2] = {row, row};
	CASE("API errors are negative errnos, nothing half-written")
	{
		CHECK_EQ(jsf_region_create(&r, path, NULL), 0);
		struct stat st;
		CHECK_EQ(stat(path, &st), 0);
		CHECK((st.st_mode & 0777) == 0600, "mode %o",
		      st.st_mode & 0777);
		struct jsf_region *r2;
		CHECK_EQ(jsf_region_create(&r2, path, NULL), -EEXIST);
		CHECK_EQ(jsf_region_add(r, 0x1000, 16, &row, 1, 1), 0);
		CHECK_EQ(jsf_region_add(r, 0x1008, 16, &row, 1, 1), -EEXIST);
		CHECK_EQ(jsf_region_add(r, 0x0ff8, 9, &row, 1, 1), -EEXIST);
		CHECK_EQ(jsf_region_add(r, 0x0ff8, 8, &row, 1, 1), 0);
		CHECK_EQ(jsf_region_add(r, 0x2000, 0, &row, 1, 1), -EINVAL);
		CHECK_EQ(jsf_region_add(r, 0x2000, 16, &row, 0, 1), -EINVAL);
		two[1].offset = 0;
		CHECK_EQ(jsf_region_add(r, 0x2000, 16, two, 2, 1), -EINVAL);
		two[1].offset = 16;
		CHECK_EQ(jsf_region_add(r, 0x2000, 16, two, 2, 1), -EINVAL);
		two[0].offset = 1;
		two[1].offset = 2;
		CHECK_EQ(jsf_region_add(r, 0x2000, 16, two, 2, 1), -EINVAL);
		struct jsf_row badbase = row;
		badbase.cfa_base = 7;
		CHECK_EQ(jsf_region_add(r, 0x2000, 16, &badbase, 1, 1),
			 -EINVAL);
		CHECK_EQ(jsf_region_add(r, UINT64_MAX - 4, 16, &row, 1, 1),
			 -EINVAL);
		CHECK_EQ(jsf_region_remove(r, 0x1001, 2), -ENOENT);
		CHECK_EQ(jsf_region_remove(r, 0x1000, 2), 0);
		CHECK_EQ(jsf_region_remove(r, 0x1000, 3), -ENOENT);
		struct jsf_region_stats st2 = {.sz = sizeof(st2)};
		CHECK_EQ(jsf_region_stats(r, &st2), 0);
		CHECK_EQ(st2.live_funcs, 1);
		CHECK_EQ(st2.logged_funcs, 2);
		struct jsf_view *v;
		CHECK_EQ(jsf_view_open(&v, path), 0);
		uint64_t fs;
		CHECK_EQ(jsf_view_lookup(v, 0x1000, 0, &fs, NULL, NULL),
			 -ENOENT);
		CHECK_EQ(jsf_view_lookup(v, 0x1000, 1, &fs, NULL, NULL), 0);
		CHECK_EQ(jsf_view_lookup(v, 0x0fff, 0, &fs, NULL, NULL), 0);
		CHECK_EQ(fs, 0x0ff8);
		jsf_view_close(v);
		jsf_region_destroy(r);
		/* unknown non-zero option bytes are refused (libbpf rule) */
		struct {
			struct jsf_region_opts o;
			uint64_t future;
		} big = {{.sz = sizeof(big)}, 1};
		CHECK_EQ(jsf_region_create(&r, tmp_path("future"), &big.o),
			 -EINVAL);
		struct jsf_region_opts rep = {.sz = sizeof(rep),
					      .flags = JSF_REGION_REPLACE};
		CHECK_EQ(jsf_region_create(&r, path, &rep), 0);
		jsf_region_destroy(r);
		/* a symlink is never followed when creating */
		char target[600];
		snprintf(target, sizeof(target), "%s", tmp_path("target"));
		unlink(tmp_path("link"));
		CHECK_EQ(symlink(target, tmp_path("link")), 0);
		CHECK_EQ(jsf_region_create(&r, tmp_path("link"), NULL),
			 -EEXIST);
		CHECK(access(target, F_OK) != 0, "target not created");
		unlink(tmp_path("link"));
	}
	unlink(path);
}

/* Bounded space: churn with a small history keeps the file small. */
static void reclaim(void)
{
	const char *path = tmp_path("reclaim");
	struct jsf_region *r;
	struct jsf_region_opts o = {
	    .sz = sizeof(o), .history_max = 100, .max_size = 4 << 20};
	CASE("compaction reclaims dropped history; max_size is enforced")
	{
		CHECK_EQ(jsf_region_create(&r, path, &o), 0);
		struct model m = {0};
		uint64_t now = 1;
		for (int round = 0; round < 400; round++) {
			struct mfunc *f =
			    m_add(&m, 0x400000 + (uint64_t)(round % 7) * 0x1000,
				  1000, ++now);
			CHECK_EQ(add_model(r, f), 0);
			f->remove = ++now;
			CHECK_EQ(jsf_region_remove(r, f->start, f->remove), 0);
		}
		struct jsf_region_stats st = {.sz = sizeof(st)};
		jsf_region_stats(r, &st);
		CHECK(st.compactions > 0, "compacted %llu times",
		      (unsigned long long)st.compactions);
		CHECK_EQ(st.dropped_history + st.logged_funcs, 400);
		CHECK(st.logged_funcs <= 2 * 100 + 16, "kept %u",
		      st.logged_funcs);
		CHECK(st.file_size <= 1 << 20, "file %llu bytes",
		      (unsigned long long)st.file_size);
		/* the newest history is still answerable at its time */
		struct jsf_view *v;
		CHECK_EQ(jsf_view_open(&v, path), 0);
		const struct mfunc *last = &m.f[m.n - 1];
		m_check(&m, v, last->start + 5, last->add);
		jsf_view_close(v);
		/* a function too big for max_size fails cleanly */
		struct jsf_row *rows = calloc(60000, sizeof(*rows));
		for (uint32_t i = 0; i < 60000; i++)
			rows[i] = (struct jsf_row){.offset = i * 100,
						   .cfa_base = JSF_SP,
						   .cfa_offset = 1 << 20,
						   .has_fp = true,
						   .fp_offset = -(1 << 20)};
		int rc = 0;
		for (int i = 0; i < 10 && rc == 0; i++)
			rc = jsf_region_add(r,
					    0x10000000 + (uint64_t)i * 6000000,
					    6000000, rows, 60000, ++now);
		CHECK_EQ(rc, -ENOSPC);
		free(rows);
		char msg[256];
		CHECK(jsf_validate_region(path, msg, sizeof(msg)) == 0, "%s",
		      msg);
		jsf_region_destroy(r);
		m_free(&m);
	}
	unlink(path);
}

static void memfd(void)
{
	struct jsf_region *r;
	CASE("anonymous region (memfd) is readable through its path")
	{
		CHECK_EQ(jsf_region_create(&r, NULL, NULL), 0);
		struct jsf_row row = {
		    .offset = 0, .cfa_base = JSF_SP, .cfa_offset = 96};
		CHECK_EQ(jsf_region_add(r, 0x5000, 64, &row, 1, 0), 0);
		struct jsf_view *v;
		CHECK_EQ(jsf_view_open(&v, jsf_region_path(r)), 0);
		struct jsf_row got;
		CHECK_EQ(jsf_view_lookup(v, 0x5010, 0, NULL, NULL, &got), 0);
		CHECK_EQ(got.cfa_offset, 96);
		jsf_view_close(v);
		jsf_region_destroy(r);
	}
}

/* Bounds of the work of one add or remove, whatever the history (bytes
 * copied into a new block, pages populated): docs/ABI.md 3.3. */
#define WORK_COPIED (16 * 1024)
#define WORK_PAGES 256

/* One sampled lookup and name at a time the function was live. */
static int check_named(const struct model *m, const struct jsf_view *v,
		       uint32_t i, bool named)
{
	if (!m->f || i >= m->n)
		return 1;
	const struct mfunc *f = &m->f[i];
	uint64_t pc = f->start + h_below(f->size);
	uint64_t t = f->add + h_below((uint32_t)(f->remove - f->add));
	int bad = m_check(m, v, pc, t);
	if (!named)
		return bad;
	char want[32], got[64];
	const struct mfunc *g = m_find(m, pc, t);
	if (!g)
		return bad + 1;
	snprintf(want, sizeof(want), "T%u", (unsigned)(g - m->f));
	int rc = jsf_view_name(v, pc, t, got, sizeof(got));
	CHECK(rc > 0 && strcmp(got, want) == 0,
	      "pc %#llx t %llu: name %d '%s', want '%s'",
	      (unsigned long long)pc, (unsigned long long)t, rc,
	      rc > 0 ? got : "", want);
	return bad + !(rc > 0 && strcmp(got, want) == 0);
}

static int count_cb(const struct jsf_func *f, void *ctx)
{
	(void)f;
	(*(uint32_t *)ctx)++;
	return 0;
}

/* n named functions logged in flush epochs of 1000 (LuaJIT-like, top
 * down, a few single removes), history_max hmax, in a region of max_size
 * bytes (0: the default); the largest add's work is returned in *copied /
 * *pages. */
static void bounded(uint32_t n, uint32_t hmax, bool named, uint64_t max_size,
		    uint64_t *copied, uint64_t *pages)
{
	struct model m = {0};
	const char *path = tmp_path("bounded");
	struct jsf_region *r = NULL;
	struct jsf_region_opts o = {.sz = sizeof(o),
				    .flags = named ? JSF_REGION_NAMED : 0,
				    .history_max = hmax,
				    .max_size = max_size};
	CHECK_EQ(jsf_region_create(&r, path, &o), 0);
	uint64_t now = 10, keep_from = 0;
	uint32_t epochs = n / 1000;
	for (uint32_t e = 0; e < epochs && r; e++) {
		uint32_t first = m.n;
		if (e + 2 == epochs)
			keep_from = m.n; /* the last two epochs: retained */
		uint64_t top = 0x10000000;
		for (uint32_t i = 0; i < 1000; i++) {
			uint32_t size = 16 + h_below(300);
			top -= size + h_below(8);
			struct mfunc *f = m_add(&m, top, size, ++now);
			char name[32];
			snprintf(name, sizeof(name), "T%u", m.n - 1);
			int rc = jsf_region_add_named(
			    r, f->start, f->size, f->rows, f->nrows,
			    named ? name : NULL, f->add);
			if (rc)
				CHECK_EQ(rc, 0);
			if (i % 7 == 3) { /* a single remove */
				struct mfunc *g =
				    &m.f[first + h_below(m.n - first)];
				if (!g->remove) {
					g->remove = ++now;
					CHECK_EQ(jsf_region_remove(r, g->start,
								   g->remove),
						 0);
				}
			}
		}
		now++;
		CHECK_EQ(jsf_region_remove_all(r, now), 0);
		for (uint32_t i = first; i < m.n; i++)
			if (!m.f[i].remove)
				m.f[i].remove = now;
		now++;
	}
	struct jsf_region_stats st = {.sz = sizeof(st)};
	CHECK_EQ(jsf_region_stats(r, &st), 0);
	printf("# %u functions, history_max %u: %llu rebuilds (%llu whole), "
	       "%llu logged, %llu dropped; the largest add copied %llu "
	       "bytes, populated %llu pages; file %llu bytes\n",
	       n, hmax, (unsigned long long)st.compactions,
	       (unsigned long long)st.sync_rebuilds,
	       (unsigned long long)st.logged_funcs,
	       (unsigned long long)st.dropped_history,
	       (unsigned long long)st.max_op_copied,
	       (unsigned long long)st.max_op_pages,
	       (unsigned long long)st.file_size);
	CHECK(st.compactions >= 5, "%llu rebuilds",
	      (unsigned long long)st.compactions);
	CHECK_EQ(st.sync_rebuilds, 0);
	CHECK(st.max_op_copied <= WORK_COPIED, "%llu bytes copied in one add",
	      (unsigned long long)st.max_op_copied);
	CHECK(st.max_op_pages <= WORK_PAGES, "%llu pages in one add",
	      (unsigned long long)st.max_op_pages);
	CHECK_EQ(st.logged_funcs + st.dropped_history, m.n);
	if (!hmax || hmax >= n)
		CHECK_EQ(st.dropped_history, 0);
	else
		CHECK(st.dropped_history > 0 && st.logged_funcs >= hmax,
		      "%llu dropped, %llu logged",
		      (unsigned long long)st.dropped_history,
		      (unsigned long long)st.logged_funcs);
	*copied = st.max_op_copied;
	*pages = st.max_op_pages;
	uint32_t from = !hmax || hmax >= n ? 0 : (uint32_t)keep_from;
	for (int pass = 0; pass < 2; pass++) {
		struct jsf_view *v = NULL;
		CHECK_EQ(jsf_view_open(&v, path), 0);
		if (!v)
			break;
		int bad = 0;
		for (int k = 0; k < 300 && bad < 5; k++)
			bad += check_named(&m, v, from + h_below(m.n - from),
					   named);
		for (uint32_t i = 0; i < 20; i++) /* nothing live now */
			bad +=
			    m_check(&m, v, 0x10000000 - 1 - h_below(400000), 0);
		uint32_t all = 0;
		CHECK_EQ(jsf_view_foreach(v, JSF_ALL, count_cb, &all), 0);
		CHECK_EQ(all, st.logged_funcs);
		jsf_view_close(v);
		if (pass == 0) { /* then post mortem */
			jsf_region_destroy(r);
			r = NULL;
		}
	}
	unlink(path);
	m_free(&m);
}

static void bounded_work(void)
{
	uint64_t c = 0, p = 0;
	CASE("bounded work per add: 10,000 logged functions")
	bounded(10000, 0, true, 0, &c, &p);
	CASE("bounded work per add: 200,000 logged functions, the same bound")
	bounded(200000, 0, true, 0, &c, &p);
	CASE("bounded work per add: history dropped past history_max 3,000 "
	     "(60,000 functions)")
	bounded(60000, 3000, true, 0, &c, &p);
	CASE("bounded work per add: no names, 100,000 logged functions")
	bounded(100000, 0, false, 0, &c, &p);
	/* 60,000 functions with all history take some 27 MB of file with
	 * the rebuilds' 8x growth past 4,096 kept entries (41 MB unbounded)
	 * and 31 MB with 4x throughout: in 32 MiB a rebuild must fall back to
	 * 4x where 8x does not fit, or the region ends in a whole-block
	 * rebuild (unbounded work in one add) */
	CASE("bounded work per add near max_size: 60,000 functions in 32 MiB "
	     "(the rebuilds' growth falls back to 4x)")
	bounded(60000, 0, true, 32u << 20, &c, &p);
}

int main(void)
{
	h_seed();
	snprintf(dir, sizeof(dir), "/tmp/jsf-t_region-XXXXXX");
	if (!mkdtemp(dir))
		return 2;
	round_trip("ascending adds, 1500 functions", 0, 1500, 0);
	round_trip("descending adds (LuaJIT order), 1500 functions", 1, 1500,
		   0);
	round_trip("random-order adds, 1500 functions", 2, 1500, 0);
	round_trip("random-order adds, tiny initial capacity (growth)", 2, 700,
		   1);
	reuse();
	errors();
	reclaim();
	memfd();
	bounded_work();
	rmdir(dir);
	return h_exit();
}
