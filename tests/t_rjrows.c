/* SPDX-License-Identifier: MIT */
/*
 * Rows and regions from RaptorJIT's auditlog (audit/rjregion.c) against
 * the fixtures' ground truth (../shared/raptorjit/README.md), which was
 * made without this code: CFAs observed under gdb on a live RaptorJIT
 * (rowprobe.expect.tsv) and every trace's GCtrace fields decoded by an
 * independent decoder (WORKLOAD.traces.tsv).
 *
 *  - rowprobe: the row at each of 1764 return addresses into trace code
 *    gives CFA - rsp = cfa - rsp_at_call as gdb saw it, RA at CFA-8,
 *    rbp at CFA-16;
 *  - every trace of every fixture log is published, its rows imply the
 *    ground truth's spadjust (and its parent's in a side trace's head),
 *    and the region file validates;
 *  - flushstorm (5 epochs, trace numbers reused): each trace is found
 *    in its lifetime and not after its epoch's flush;
 *  - self-check: rows with a planted wrong frame (LuaJIT's 96) fail the
 *    rowprobe check at every return address.
 *
 * The fixtures are read where they are (never copied): $JITSFRAME_RAPTORJIT_
 * DATA, ../shared/raptorjit, /work/shared/raptorjit; else the test skips.
 */
#include "harness.h"
#include "jitsframe.h"
#include "lj.h"
#include "rjlog.h"

#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

static char data[512];
static char tmpdir[256];

static bool find_data(void)
{
	const char *cand[] = {getenv("JITSFRAME_RAPTORJIT_DATA"),
			      "../shared/raptorjit", "/work/shared/raptorjit"};
	for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]); i++) {
		if (!cand[i] || !*cand[i])
			continue;
		char p[600];
		snprintf(p, sizeof(p), "%s/rowprobe.auditlog", cand[i]);
		if (access(p, R_OK) == 0) {
			snprintf(data, sizeof(data), "%s", cand[i]);
			return true;
		}
	}
	return false;
}

/* --- a TSV file with a header line: cells by column name --- */
struct tsv {
	char **cells; /* nrows * ncols */
	char **head;
	size_t nrows, ncols;
	char *buf;
};

static bool tsv_load(struct tsv *t, const char *name)
{
	memset(t, 0, sizeof(*t));
	char p[600];
	snprintf(p, sizeof(p), "%s/%s", data, name);
	FILE *f = fopen(p, "rb");
	if (!f)
		return false;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	t->buf = malloc((size_t)n + 1);
	if (fread(t->buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		return false;
	}
	fclose(f);
	t->buf[n] = 0;
	size_t cap = 0, ncell = 0;
	char **cells = NULL;
	size_t cols = 0, lines = 0;
	for (char *line = t->buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		size_t c = 0;
		for (char *cell = line;; c++) {
			char *tab = strchr(cell, '\t');
			if (tab)
				*tab = 0;
			if (ncell == cap) {
				cap = cap ? cap * 2 : 1024;
				cells = realloc(cells, cap * sizeof(*cells));
			}
			cells[ncell++] = cell;
			if (!tab)
				break;
			cell = tab + 1;
		}
		if (lines == 0)
			cols = c + 1;
		else if (c + 1 != cols)
			return false;
		lines++;
		line = nl ? nl + 1 : NULL;
	}
	t->head = cells;
	t->ncols = cols;
	t->nrows = lines ? lines - 1 : 0;
	t->cells = cells + cols;
	return cols > 0;
}

static void tsv_free(struct tsv *t)
{
	free(t->head);
	free(t->buf);
}

static const char *cell(const struct tsv *t, size_t row, const char *col)
{
	for (size_t c = 0; c < t->ncols; c++)
		if (!strcmp(t->head[c], col))
			return t->cells[row * t->ncols + c];
	fprintf(stderr, "no column %s\n", col);
	abort();
}

static uint64_t num(const struct tsv *t, size_t row, const char *col)
{
	return strtoull(cell(t, row, col), NULL, 0);
}

/* --- building regions --- */
static struct rj_log *open_log(const char *name)
{
	char p[600], msg[256];
	snprintf(p, sizeof(p), "%s/%s.auditlog", data, name);
	struct rj_log *log = NULL;
	int rc = rj_log_open(&log, p, msg, sizeof(msg));
	CHECK(rc == 0, "%s: %s", p, msg);
	return log;
}

static const char *region_path(const char *name)
{
	static char p[512];
	snprintf(p, sizeof(p), "%s/%s.region", tmpdir, name);
	unlink(p);
	return p;
}

/* The log's region through rj_log_frame and rj_log_to_region; the region
 * file's path, or NULL. */
static const char *build(const struct rj_log *log, const char *name,
			 struct rj_region_stats *st)
{
	char msg[256];
	uint32_t cf = 0, cfj = 0;
	int rc = rj_log_frame(log, &cf, &cfj, msg, sizeof(msg));
	CHECK(rc == 0, "%s: rj_log_frame: %s", name, msg);
	if (rc)
		return NULL;
	CHECK_EQ(cf, 96);
	CHECK_EQ(cfj, 112);
	const char *path = region_path(name);
	struct jsf_region *r = NULL;
	rc = jsf_region_create(&r, path, NULL);
	CHECK(rc == 0, "create %s: %s", path, jsf_strerror(rc));
	if (rc)
		return NULL;
	rc = rj_log_to_region(log, cfj, r, st, msg, sizeof(msg));
	CHECK(rc == 0, "%s: rj_log_to_region: %s", name, msg);
	jsf_region_destroy(r);
	return rc ? NULL : path;
}

/* (a) the rows at rowprobe's return addresses against gdb's CFAs: the
 * number of mismatching stops (every one is checked). */
static size_t probe_check(const char *region, const struct tsv *ex,
			  const struct rj_log *log, bool quiet)
{
	struct jsf_view *v = NULL;
	int rc = jsf_view_open(&v, region);
	CHECK(rc == 0, "open %s: %s", region, jsf_strerror(rc));
	if (rc)
		return ex->nrows;
	size_t bad = 0;
	for (size_t i = 0; i < ex->nrows; i++) {
		uint64_t ra = num(ex, i, "return_address");
		uint64_t rsp = num(ex, i, "rsp_at_call");
		uint64_t cfa = num(ex, i, "cfa");
		uint64_t fstart = 0;
		uint32_t fsize = 0;
		struct jsf_row row;
		bool ok = jsf_view_lookup(v, ra, 0, &fstart, &fsize, &row) == 0;
		/* the function found is the trace the probe named */
		const struct rj_trace *t = NULL;
		for (size_t k = 0; ok && k < rj_log_ntraces(log); k++) {
			const struct rj_trace *c = rj_log_trace(log, k);
			if (c->mcode == fstart)
				t = c;
		}
		ok = ok && t && t->traceno == num(ex, i, "traceno") &&
		     fsize == t->szmcode;
		ok = ok && row.cfa_base == JSF_SP &&
		     row.cfa_offset == (int64_t)(cfa - rsp) &&
		     row.cfa_offset == (int64_t)num(ex, i, "cfa_offset_found");
		ok = ok && row.ra_rule == JSF_RA_CFA && row.ra_offset == -8 &&
		     row.has_fp && row.fp_offset == -16;
		if (!ok && bad++ < 5 && !quiet)
			printf(
			    "#   stop %s: ra %s: row cfa_offset %d, gdb %lld\n",
			    cell(ex, i, "stop"), cell(ex, i, "return_address"),
			    (int)row.cfa_offset, (long long)(cfa - rsp));
	}
	jsf_view_close(v);
	return bad;
}

/* (b) a published trace's rows against the ground truth's spadjust. */
struct trow {
	uint64_t mcode, born, dead;
	uint32_t sz, traceno, parent, spadjust, parent_spadj, mcloop;
	uint64_t jit_state;
};

static size_t load_traces(const struct tsv *tt, struct trow **out,
			  size_t *nflush)
{
	struct trow *v = calloc(tt->nrows + 1, sizeof(*v));
	size_t n = 0;
	*nflush = 0;
	for (size_t i = 0; i < tt->nrows; i++) {
		uint64_t js = num(tt, i, "jit_state");
		if (!strcmp(cell(tt, i, "event"), "trace_flushall")) {
			(*nflush)++;
			for (size_t k = 0; k < n; k++)
				if (v[k].jit_state == js && !v[k].dead)
					v[k].dead = num(tt, i, "nanotime");
			continue;
		}
		struct trow *t = &v[n++];
		t->jit_state = js;
		t->mcode = num(tt, i, "mcode");
		t->born = num(tt, i, "nanotime");
		t->sz = (uint32_t)num(tt, i, "szmcode");
		t->traceno = (uint32_t)num(tt, i, "traceno");
		t->parent = (uint32_t)num(tt, i, "parent");
		t->spadjust = (uint32_t)num(tt, i, "spadjust");
		t->mcloop = (uint32_t)num(tt, i, "mcloop");
		t->parent_spadj = UINT32_MAX;
		for (size_t k = n - 1; t->parent && k-- > 0;)
			if (v[k].jit_state == js && v[k].traceno == t->parent &&
			    !v[k].dead) {
				t->parent_spadj = v[k].spadjust;
				break;
			}
	}
	*out = v;
	return n;
}

struct found {
	const struct trow *tr;
	size_t ntr;
	size_t matched, bad;
};

static int check_func(const struct jsf_func *f, void *ctx)
{
	struct found *fd = ctx;
	const struct trow *t = NULL;
	for (size_t k = 0; k < fd->ntr; k++)
		if (fd->tr[k].mcode == f->start && fd->tr[k].born == f->add_ns)
			t = &fd->tr[k];
	bool ok =
	    t && f->size == t->sz && f->nrows >= 1 && f->remove_ns == t->dead;
	if (ok) {
		/* first row: the frame the trace is entered with */
		int32_t entry =
		    112 + (int32_t)(t->parent ? t->parent_spadj : 0);
		int32_t own = 112 + (int32_t)t->spadjust, max = 0;
		for (uint32_t i = 0; i < f->nrows; i++)
			if (f->rows[i].cfa_offset > max)
				max = f->rows[i].cfa_offset;
		ok = f->rows[0].cfa_offset == entry && max == own;
		/* the body (the loop, or before the tail) is the trace's own */
		uint32_t body = t->mcloop ? t->mcloop : t->sz - 6;
		const struct jsf_row *r = &f->rows[0];
		for (uint32_t i = 0; i < f->nrows; i++)
			if (f->rows[i].offset <= body)
				r = &f->rows[i];
		ok = ok && r->cfa_offset == own;
		/* a non-looping trace's last 5 bytes (jmp) run in the base
		 * frame */
		if (!t->mcloop)
			ok = ok && f->rows[f->nrows - 1].cfa_offset == 112 &&
			     (t->spadjust == 0 ||
			      f->rows[f->nrows - 1].offset == t->sz - 5);
	}
	if (ok)
		fd->matched++;
	else if (fd->bad++ < 5)
		printf("#   function %#llx (+%u, %u rows) disagrees with the "
		       "ground truth\n",
		       (unsigned long long)f->start, f->size, f->nrows);
	return 0;
}

static void case_log(const char *name, size_t *pub_total)
{
	struct rj_log *log = open_log(name);
	if (!log)
		return;
	struct tsv tt;
	char tn[64];
	snprintf(tn, sizeof(tn), "%s.traces.tsv", name);
	CHECK(tsv_load(&tt, tn), "%s", tn);
	struct trow *tr = NULL;
	size_t nflush = 0, ntr = load_traces(&tt, &tr, &nflush);
	struct rj_region_stats st;
	const char *path = build(log, name, &st);
	if (path) {
		printf("# %s: %u traces, %u published, %u refused, %u without "
		       "machine code, %u flushes\n",
		       name, st.traces, st.published, st.refused, st.no_mcode,
		       st.flushes);
		CHECK_EQ(st.traces, ntr);
		CHECK_EQ(st.published, ntr);
		CHECK_EQ(st.flushes, nflush);
		CHECK(st.refused == 0, "%s: %u refused, first: %s", name,
		      st.refused, st.first_refusal);
		CHECK_EQ(st.no_mcode, 0);
		*pub_total += st.published;
		/* list every trace not published, with the lj/ reason */
		struct jsf_view *v = NULL;
		CHECK_EQ(jsf_view_open(&v, path), 0);
		for (size_t i = 0; v && i < rj_log_ntraces(log); i++) {
			const struct rj_trace *t = rj_log_trace(log, i);
			uint64_t fs = 0;
			if (jsf_view_lookup(v, t->mcode, t->born_ns, &fs, NULL,
					    NULL) == 0 &&
			    fs == t->mcode)
				continue;
			CHECK(0, "%s: trace %u (event %llu) not published",
			      name, t->traceno,
			      (unsigned long long)t->event_index);
		}
		struct found fd = {tr, ntr, 0, 0};
		if (v)
			jsf_view_foreach(v, JSF_ALL, check_func, &fd);
		CHECK_EQ(fd.matched, ntr);
		CHECK_EQ(fd.bad, 0);
		jsf_view_close(v);
		char msg[256];
		int rc = jsf_validate_region(path, msg, sizeof(msg));
		CHECK(rc == 0, "validate %s: %s", path, msg);
		unlink(path);
	}
	free(tr);
	tsv_free(&tt);
	rj_log_close(log);
}

/* (c) lookups in time on flushstorm */
static void case_flushstorm(void)
{
	struct rj_log *log = open_log("flushstorm");
	if (!log)
		return;
	struct tsv tt;
	CHECK(tsv_load(&tt, "flushstorm.traces.tsv"), "flushstorm tsv");
	struct trow *tr = NULL;
	size_t nflush = 0, ntr = load_traces(&tt, &tr, &nflush);
	CHECK_EQ(nflush, 4);
	struct rj_region_stats st;
	const char *path = build(log, "flushstorm", &st);
	struct jsf_view *v = NULL;
	if (path)
		CHECK_EQ(jsf_view_open(&v, path), 0);
	size_t reused = 0, in_life = 0, gone = 0, later = 0;
	for (size_t i = 0; v && i < ntr; i++) {
		const struct trow *t = &tr[i];
		for (size_t k = 0; k < i; k++)
			if (tr[k].traceno == t->traceno) {
				reused++;
				break;
			}
		/* probe the body, its first and last byte */
		uint64_t pcs[3] = {t->mcode, t->mcode + t->sz / 2,
				   t->mcode + t->sz - 1};
		for (int p = 0; p < 3; p++) {
			uint64_t fs = 0;
			uint64_t times[2] = {t->born,
					     t->dead ? t->dead - 1 : 0};
			for (int k = 0; k < 2; k++) {
				int rc = jsf_view_lookup(v, pcs[p], times[k],
							 &fs, NULL, NULL);
				CHECK(rc == 0 && fs == t->mcode,
				      "trace %u (#%zu) at %#llx, t=%llu: rc %d",
				      t->traceno, i, (unsigned long long)pcs[p],
				      (unsigned long long)times[k], rc);
				in_life += rc == 0 && fs == t->mcode;
			}
			if (!t->dead)
				continue;
			/* at and after its flush: nothing, or a trace of a
			 * later epoch whose code covers the pc */
			uint64_t after[2] = {t->dead, 0};
			for (int k = 0; k < 2; k++) {
				int rc = jsf_view_lookup(v, pcs[p], after[k],
							 &fs, NULL, NULL);
				if (rc == -ENOENT) {
					gone++;
					continue;
				}
				bool ok = false;
				for (size_t j = i + 1; rc == 0 && j < ntr; j++)
					ok |= tr[j].mcode == fs &&
					      tr[j].born >= t->dead &&
					      pcs[p] - fs < tr[j].sz;
				CHECK(ok,
				      "trace %u (#%zu) still found at "
				      "%#llx after its flush (rc %d)",
				      t->traceno, i, (unsigned long long)pcs[p],
				      rc);
				later += ok;
			}
		}
	}
	printf("# flushstorm: %zu traces, %zu trace numbers reused, %zu "
	       "lookups in life found, %zu after the flush found none, %zu a "
	       "later trace\n",
	       ntr, reused, in_life, gone, later);
	CHECK_EQ(reused, 972);
	if (v)
		jsf_view_close(v);
	if (path)
		unlink(path);
	free(tr);
	tsv_free(&tt);
	rj_log_close(log);
}

/* (d) rows with LuaJIT's frame (96) in place of RaptorJIT's (112), built
 * here with lj/ directly since rj_log_to_region refuses that frame. */
static const char *build_planted(const struct rj_log *log, uint32_t cframe)
{
	const char *path = region_path("planted");
	struct jsf_region *r = NULL;
	if (jsf_region_create(&r, path, NULL))
		return NULL;
	for (size_t i = 0; i < rj_log_ntraces(log); i++) {
		const struct rj_trace *t = rj_log_trace(log, i);
		struct lj_trace_in in = {.mc = t->mc,
					 .len = t->szmcode,
					 .loop = t->mcloop,
					 .traceno = t->traceno,
					 .side = t->parent != 0,
					 .cframe_jit = cframe};
		const struct rj_trace *p =
		    t->parent ? rj_log_trace_at(log, t->jit_state, t->parent,
						t->born_ns)
			      : NULL;
		if (t->parent && !p)
			continue;
		if (p)
			in.parent_spadj = (int32_t)p->spadjust;
		struct lj_trace_out o;
		if (lj_trace_rows(&in, &o) == 0)
			jsf_region_add(r, t->mcode, t->szmcode, o.rows, o.nrows,
				       t->born_ns);
	}
	jsf_region_destroy(r);
	return path;
}

/* rj_log_frame on a copy of the rowprobe log whose macro text `from` is
 * replaced by `to` (same length): the error, and the message in msg. */
static int frame_of_tampered(const char *from, const char *to, char *msg,
			     size_t msglen)
{
	char p[600];
	snprintf(p, sizeof(p), "%s/rowprobe.auditlog", data);
	FILE *f = fopen(p, "rb");
	if (!f)
		return -ENOENT;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n);
	size_t got = fread(buf, 1, (size_t)n, f);
	fclose(f);
	char *at =
	    got == (size_t)n ? memmem(buf, got, from, strlen(from)) : NULL;
	CHECK(at != NULL, "no \"%s\" in the log", from);
	int rc = -ENOENT;
	if (at) {
		memcpy(at, to, strlen(to));
		struct rj_log *log = NULL;
		rc = rj_log_open_mem(&log, buf, got, msg, msglen);
		CHECK(rc == 0, "open tampered: %s", msg);
		if (log) {
			uint32_t cf = 0, cfj = 0;
			rc = rj_log_frame(log, &cf, &cfj, msg, msglen);
			rj_log_close(log);
		}
	}
	free(buf);
	return rc;
}

int main(void)
{
	if (!find_data()) {
		printf("1..0 # SKIP RaptorJIT fixtures not found (set "
		       "JITSFRAME_RAPTORJIT_DATA)\n");
		return 0;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/jsf-t_rjrows-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	printf("# fixtures: %s\n", data);
	struct tsv ex;
	bool have_ex = tsv_load(&ex, "rowprobe.expect.tsv");
	CASE("rowprobe: the row at each return address gives gdb's CFA")
	{
		CHECK(have_ex, "rowprobe.expect.tsv");
		CHECK_EQ(ex.nrows, 1764);
		struct rj_log *log = open_log("rowprobe");
		struct rj_region_stats st;
		const char *path = log ? build(log, "rowprobe", &st) : NULL;
		if (path) {
			CHECK_EQ(probe_check(path, &ex, log, false), 0);
			unlink(path);
		}
		if (log)
			rj_log_close(log);
	}
	CASE("self-check: a planted wrong frame (96) fails the rowprobe check")
	{
		struct rj_log *log = open_log("rowprobe");
		char msg[256];
		struct rj_region_stats st;
		struct jsf_region *r = NULL;
		CHECK_EQ(jsf_region_create(&r, region_path("refuse96"), NULL),
			 0);
		if (log && r)
			CHECK_EQ(
			    rj_log_to_region(log, 96, r, &st, msg, sizeof(msg)),
			    -EINVAL);
		if (r)
			jsf_region_destroy(r);
		unlink(region_path("refuse96"));
		const char *path = log ? build_planted(log, 96) : NULL;
		if (path) {
			size_t bad = probe_check(path, &ex, log, true);
			printf("#   with a frame of 96: %zu of %zu stops "
			       "mismatch (expected: all)\n",
			       bad, ex.nrows);
			CHECK_EQ(bad, ex.nrows);
			unlink(path);
		}
		/* and the right frame through the same path passes: the
		 * failure is the frame's, not the planted builder's */
		path = log ? build_planted(log, 112) : NULL;
		if (path) {
			CHECK_EQ(probe_check(path, &ex, log, false), 0);
			unlink(path);
		}
		if (log)
			rj_log_close(log);
	}
	CASE("rj_log_frame: a frame other than 96/112 in the log's macros is "
	     "refused with one message")
	{
		char msg[256] = "";
		CHECK_EQ(frame_of_tampered("CFRAME_SIZE (12*8)",
					   "CFRAME_SIZE (10*8)", msg,
					   sizeof(msg)),
			 -EINVAL);
		CHECK(strstr(msg, "CFRAME_SIZE 80") != NULL, "%s", msg);
		printf("#   %s\n", msg);
		CHECK_EQ(frame_of_tampered("CFRAME_SIZE_JIT (CFRAME_SIZE + 16)",
					   "CFRAME_SIZE_JIT (CFRAME_SIZE + 32)",
					   msg, sizeof(msg)),
			 -EINVAL);
		CHECK(strstr(msg, "CFRAME_SIZE_JIT 128") != NULL, "%s", msg);
		CHECK_EQ(frame_of_tampered("CFRAME_SIZE_JIT (CFRAME_SIZE + 16)",
					   "CFRAME_SIZE_JIX (CFRAME_SIZE + 16)",
					   msg, sizeof(msg)),
			 -EINVAL);
		CHECK(strstr(msg, "CFRAME_SIZE_JIT absent") != NULL, "%s", msg);
		printf("#   %s\n", msg);
		/* the untampered copy through the same path is accepted */
		CHECK_EQ(frame_of_tampered("CFRAME_SIZE (12*8)",
					   "CFRAME_SIZE (12*8)", msg,
					   sizeof(msg)),
			 0);
	}
	const char *logs[] = {"numeric",   "sidetraces", "flushstorm", "nested",
			      "openresty", "rowprobe",	 "cut"};
	size_t total = 0;
	for (size_t i = 0; i < sizeof(logs) / sizeof(logs[0]); i++) {
		char name[96];
		snprintf(name, sizeof(name),
			 "%s: every trace published, rows as the ground "
			 "truth's spadjust, region valid",
			 logs[i]);
		CASE(name)
		case_log(logs[i], &total);
	}
	printf("# %zu traces published in all\n", total);
	CASE("flushstorm: each trace found in its lifetime, gone after its "
	     "epoch's flush")
	case_flushstorm();
	if (have_ex)
		tsv_free(&ex);
	rmdir(tmpdir);
	return h_exit();
}
