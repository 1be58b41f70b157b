/* SPDX-License-Identifier: MIT */
/*
 * The module's sinks (vm.h): the region (libjitsframe; one per process,
 * a fork child makes its own), perf's jitdump and perf map (perfmap/).
 * Every call here runs with m->mu held.
 */
#include "jitdump.h"
#include "jitsframe.h"
#include "vm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The per-user default directory (docs/ABI.md section 8: $TMPDIR, else
 * /dev/shm when it is a tmpfs with room, else /tmp, then jitsframe-UID),
 * created 0700 when missing; 0 or -errno. */
static int default_dir(char *dir, size_t len)
{
	return jsf_region_default_dir(dir, len, true);
}

static int default_path(char *buf, size_t len)
{
	char dir[2048];
	int err = default_dir(dir, sizeof(dir));
	if (err)
		return err;
	snprintf(buf, len, "%s/%d.region", dir, (int)getpid());
	return 0;
}

/* A directory this process may not write into (a worker that switched to
 * an unprivileged user, given its root parent's path). */
static int not_ours(int err)
{
	return err == -EACCES || err == -EPERM;
}

/* The region at the configured path could not be created for want of
 * permission: create it at the default path instead (where record and
 * report look, docs/ABI.md section 8) and say so once. 0 or -errno. */
static int region_fallback(struct vmod *m, int why)
{
	char want[sizeof(m->path)];
	struct jsf_region_opts o = {
	    .sz = sizeof(o),
	    .runtime_ext = VM_RTX,
	    .history_max = m->history,
	    .flags = JSF_REGION_REPLACE | JSF_REGION_MAPPED |
		     (m->no_mlock ? (uint32_t)JSF_REGION_NO_MLOCK : 0)};
	snprintf(want, sizeof(want), "%s", m->path);
	int err = default_path(m->path, sizeof(m->path));
	if (err) {
		vm_log(m,
		       "cannot create region %s: %s; nor prepare the default "
		       "region directory: %s",
		       want, strerror(-why), strerror(-err));
		return why;
	}
	err = jsf_region_create(&m->region, m->path, &o);
	if (err) {
		vm_log(m, "cannot create region %s: %s; nor %s: %s", want,
		       strerror(-why), m->path, jsf_strerror(err));
		snprintf(m->path, sizeof(m->path), "%s", want);
		return why;
	}
	vm_log(m, "cannot create region %s: %s; publishing to %s instead", want,
	       strerror(-why), m->path);
	return 0;
}

/* This process's jitdump in m->jd_dir, else (no permission there) in the
 * default directory, next to a fallen-back region; said once. */
static void open_jitdump(struct vmod *m)
{
	int err = jd_open(&m->jd, m->jd_dir);
	if (!err)
		return;
	char dir[2048];
	if (not_ours(err) && default_dir(dir, sizeof(dir)) == 0) {
		char stale[2100];
		/* ours alone: a stale file of a reused pid */
		snprintf(stale, sizeof(stale), "%s/jit-%d.dump", dir,
			 (int)getpid());
		unlink(stale);
		if (jd_open(&m->jd, dir) == 0) {
			vm_log(m,
			       "cannot create %s/jit-%d.dump: %s; writing %s "
			       "instead",
			       m->jd_dir, (int)getpid(), strerror(-err), stale);
			return;
		}
	}
	vm_log(m, "cannot create %s/jit-%d.dump: %s", m->jd_dir, (int)getpid(),
	       strerror(-err));
}

/* Create this process's region (m->mu held). */
static int open_region(struct vmod *m)
{
	int err;
	struct jsf_region_opts o = {
	    .sz = sizeof(o), .runtime_ext = VM_RTX, .history_max = m->history};
	if (m->base_path[0]) {
		if (m->pid && m->pid != getpid()) /* a forked child: own file */
			snprintf(m->path, sizeof(m->path), "%s-%d",
				 m->base_path, (int)getpid());
		else
			snprintf(m->path, sizeof(m->path), "%s", m->base_path);
	} else {
		err = default_path(m->path, sizeof(m->path));
		if (err) {
			vm_log(
			    m,
			    "cannot prepare the default region directory: %s",
			    strerror(-err));
			return err;
		}
		o.flags = JSF_REGION_REPLACE; /* stale file of a reused pid */
	}
	if (m->replace)
		o.flags = JSF_REGION_REPLACE;
	if (m->no_mlock)
		o.flags |= JSF_REGION_NO_MLOCK;
	/* every trace is named and mapped (its Lua frames, or its loop
	 * alone): the first block is made with its name area carrying maps
	 * now, not rebuilt in the first trace's stop (a new block populated
	 * whole: some 150-200 us) */
	o.flags |= JSF_REGION_MAPPED;
	err = jsf_region_create(&m->region, m->path, &o);
	if (err && m->base_path[0] && not_ours(err))
		err = region_fallback(m, err);
	else if (err)
		vm_log(m, "cannot create region %s: %s", m->path,
		       jsf_strerror(err));
	if (err)
		return err;
	m->pid = getpid();
	m->epoch++;
	m->nlive = 0; /* every state republishes into the new region */
	vm_luavm_publish(m);
	vm_ff_publish(m);
	if (m->jd_dir[0])
		open_jitdump(m);
	if (m->want_perfmap) {
		err = pmap_open(&m->pm);
		if (err)
			vm_log(m, "cannot create /tmp/perf-%d.map: %s",
			       (int)getpid(), strerror(-err));
	}
	return 0;
}

/* Make sure the region belongs to this process (fork), m->mu held. */
VM_HOT int vm_ensure_region(struct vmod *m)
{
	if (m->region && m->pid != vm_self_pid()) {
		jsf_region_detach(m->region); /* the parent's: leave it alone */
		m->region = NULL;
		/* the parent's jitdump and perf map are its own too */
		if (m->jd)
			jd_close(m->jd);
		if (m->pm)
			pmap_close(m->pm);
		m->jd = NULL;
		m->pm = NULL;
	}
	if (!m->region)
		return open_region(m);
	return 0;
}

void vm_stop_publishing(struct vmod *m, const char *what, int err)
{
	if (!m->failed)
		vm_log(m, "%s failed (%s): no more rows will be published",
		       what, jsf_strerror(err));
	/* The rows published so far are withdrawn too: no event (a flush,
	 * a trace's number reused) would remove them now, and their machine
	 * code is freed and reused later. Tombstones only: nothing new is
	 * written (the file system may be full). */
	if (!m->failed && m->region && m->pid == vm_self_pid())
		jsf_region_remove_all(m->region, jsf_now_ns());
	m->failed = 1;
}

/* Decimal digits of v at p; the end. */
VM_HOT static char *put_u32(char *p, uint32_t v)
{
	char d[10];
	int n = 0;
	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*p++ = d[--n];
	return p;
}

/* The name perf shows: TRACE_n::chunk:line, as snprintf("TRACE_%u::%s:%u")
 * would write it (every stop names its trace: snprintf took some 200 ns of
 * a stop's 600). It always fits: ti->file is at most 95 bytes. */
_Static_assert(sizeof(((struct tinfo *)0)->file) + 6 + 10 + 2 + 1 + 10 < 160,
	       "a trace name fits its buffer");
VM_HOT static void trace_name(const struct tinfo *ti, uint32_t tr, char *buf)
{
	char *p = buf;
	memcpy(p, "TRACE_", 6);
	p = put_u32(p + 6, tr);
	*p++ = ':';
	*p++ = ':';
	const char *f = ti->file[0] ? ti->file : "?";
	size_t n = strnlen(f, sizeof(ti->file) - 1);
	memcpy(p, f, n);
	p += n;
	*p++ = ':';
	p = put_u32(p, ti->line);
	*p = 0;
}

/* Published traces of state ctx overlapping [lo, hi) (jitdump layout). */
VM_HOT static uint32_t neighbours(uint64_t lo, uint64_t hi,
				  struct jd_code_info *out, uint32_t max,
				  void *ctx)
{
	struct lstate *s = ctx;
	uint32_t n = 0;
	for (uint32_t i = 0; s && i < s->used && n < max; i++) {
		const struct tinfo *t = &s->t[i];
		uint64_t a = t->start,
			 e = t->map_hi > a + t->size ? t->map_hi : a + t->size;
		if (!t->live || e <= lo || a >= hi)
			continue;
		out[n++] = (struct jd_code_info){t->start, t->size,  t->rows,
						 t->nrows, t->eh_lo, t->map_hi};
	}
	return n;
}

/* The jitdump's line table from trace ti's Lua frame map (docs/ABI.md
 * 1.5): one entry per range (its innermost frame's line; a range the map
 * is not sure of: the trace's own line), one for the last byte. NULL when
 * there is no map (*n untouched). */
VM_HOT static struct jd_line *map_lines(const struct tinfo *ti,
					const char *file, uint32_t *n)
{
	if (!ti->lmap || ti->lmap_len < 16)
		return NULL;
	uint32_t nr = (uint32_t)ti->lmap[4] | (uint32_t)ti->lmap[5] << 8;
	struct jd_line *l = calloc((size_t)nr + 1, sizeof(*l));
	if (!l)
		return NULL;
	const uint8_t *rg = ti->lmap + 16;
	uint32_t k = 0;
	for (uint32_t r = 0; r < nr; r++) {
		uint32_t lo = (uint32_t)rg[8 * r] |
			      (uint32_t)rg[8 * r + 1] << 8 |
			      (uint32_t)rg[8 * r + 2] << 16 |
			      (uint32_t)rg[8 * r + 3] << 24;
		struct jsf_srcframe f;
		uint32_t fl;
		int d =
		    jsf_srcmap_frames(ti->lmap, ti->lmap_len, lo, &f, 1, &fl);
		if (d > 0 && (fl & JSF_SRCMAP_EXACT))
			l[k] = (struct jd_line){ti->start + lo, f.line, f.file};
		else if (ti->line)
			l[k] = (struct jd_line){ti->start + lo, ti->line, file};
		else
			continue;
		if (k && l[k].line == l[k - 1].line &&
		    !strcmp(l[k].file, l[k - 1].file))
			continue; /* the same line on */
		k++;
	}
	if (!k) {
		free(l);
		return NULL;
	}
	l[k] = l[k - 1];
	l[k].addr = ti->start + ti->size - 1;
	if (l[k].addr > l[k - 1].addr)
		k++;
	*n = k;
	return l;
}

/* The perf sinks: code (read from the trace's own memory), rows, line. */
VM_HOT static void publish_perf(struct vmod *m, struct lstate *s,
				struct tinfo *ti, uint32_t tr, uint64_t now)
{
	char name[160];
	if (!m->jd && !m->pm)
		return;
	trace_name(ti, tr, name);
	if (m->jd) {
		/* perf's line table ends at the last entry: give the trace's
		 * line to its first and its last byte; with a Lua frame map,
		 * each range's innermost line from its start on (the guards'
		 * lines), the last range's to the last byte too. */
		const char *file = ti->file[0] ? ti->file : "?";
		struct jd_placed placed;
		struct jd_line two[2] = {
		    {ti->start, ti->line, file},
		    {ti->start + ti->size - 1, ti->line, file}};
		struct jd_line *line = two;
		uint32_t nl = ti->line ? 2 : 0;
		struct jd_line *ml = map_lines(ti, file, &nl);
		if (ml)
			line = ml;
		int err = jd_code(m->jd, ti->start,
				  (const void *)(uintptr_t)ti->start, ti->size,
				  name, ti->rows, ti->nrows, line, nl, now,
				  neighbours, s, &placed);
		free(ml);
		ti->eh_lo = placed.eh_lo;
		ti->map_hi = placed.map_hi;
		if (err) {
			vm_log(m,
			       "writing the jitdump failed (%s); it stops here",
			       strerror(-err));
			jd_close(m->jd);
			m->jd = NULL;
		}
	}
	if (m->pm && pmap_add(m->pm, ti->start, ti->size, name)) {
		vm_log(m, "writing the perf map failed; it stops here");
		pmap_close(m->pm);
		m->pm = NULL;
	}
}

VM_HOT void vm_publish(struct vmod *m, struct lstate *s, struct tinfo *ti,
		       uint32_t tr, uint64_t now)
{
	/* The rows with the trace's name, for readers outside the process
	 * (jitsframe profile -p, report without a jitdump; docs/ABI.md 1.4) */
	char name[160];
	trace_name(ti, tr, name);
	/* without a map of its Lua frames, one of its loop alone */
	uint8_t loopmap[VM_LOOPMAP_MAX];
	const uint8_t *map = ti->lmap;
	uint32_t maplen = ti->lmap_len;
	if (!map) {
		maplen = vm_loop_map(ti, loopmap);
		map = loopmap;
	}
#if VM_BENCH_CUT == 3 /* bench-only builds: see vm.h */
	__asm__ volatile("" : : "r"(map), "r"(maplen), "r"(name) : "memory");
	(void)publish_perf, (void)now;
	m->published++;
	return;
#endif
	int err =
	    jsf_region_add_mapped(m->region, ti->start, ti->size, ti->rows,
				  ti->nrows, name, map, maplen, now);
	if (err == 0) {
		ti->live = 1;
		m->nlive++;
		s->nlive++;
		m->published++;
		publish_perf(m, s, ti, tr, now);
	} else if (err == -EEXIST) {
		m->skipped++;
		snprintf(m->last_skip, sizeof(m->last_skip),
			 "overlaps a published trace");
	} else {
		vm_stop_publishing(m, "adding a trace", err);
	}
}

VM_HOT void vm_unpublish(struct vmod *m, struct lstate *s, struct tinfo *ti,
			 uint64_t now)
{
	if (!ti->live)
		return;
	ti->live = 0;
	m->nlive--;
	s->nlive--;
	int err = jsf_region_remove(m->region, ti->start, now);
	if (err == 0)
		m->removed++;
	else if (err != -ENOENT)
		vm_stop_publishing(m, "removing a trace", err);
}
