/* SPDX-License-Identifier: MIT */
/*
 * The per-trace VM-state profile of unmodified LuaJIT (issue 13, docs/
 * PROFILE.md "VM states"): what the sampler's kernel side counted each
 * sample as (smp_lua: the VM's own g->vmstate, the trace charged — the
 * one running, or for the interpreter, C, GC, exit and compiler the one
 * that last ran on the thread — and whether the pc was in the trace's
 * code), split here into head / loop by the pc's offset in the trace
 * against the trace's loop offset (the region's source map marks it,
 * docs/ABI.md 1.5), named TRACE_n::chunk:line with the Lua lines the
 * samples were at. Written as DIR/vmprofile.json by `profile`, read back
 * by `vmprofile DIR`, sampled live by `vmprofile -p` and `top -p`.
 */
#include "cli.h"
#include "jitsframe.h"
#include "jsfenv.h"
#include "sampler.h"
#include "unwind.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void add_line(struct pf_vms_row *r, const char *file, uint32_t line,
		     uint64_t n)
{
	char b[sizeof(r->lines[0].where)];
	snprintf(b, sizeof(b), "%s:%u", file, line);
	for (int i = 0; i < r->nlines; i++)
		if (!strcmp(r->lines[i].where, b)) {
			r->lines[i].n += n;
			return;
		}
	if (r->nlines < PF_VMS_LINES) {
		memcpy(r->lines[r->nlines].where, b, sizeof(b));
		r->lines[r->nlines++].n = n;
	} else {
		r->lines_other += n;
	}
}

static void set_name(struct pf_vms_row *r, const char *name)
{
	if (!name || r->name[0])
		return;
	unsigned k;
	if (sscanf(name, "TRACE_%u::", &k) == 1 && k == r->trace)
		snprintf(r->name, sizeof(r->name), "%s", name);
}

int cli_vmp_add(struct pf_vms *v, struct uwstate *u,
		const struct cli_vmsample *s)
{
	int st = -1;
	uint32_t tr = 0;
	struct uframe f;
	bool have = false;
	if (s->tidx != UINT32_MAX) {
		enum stop_reason why;
		uw_frame_at(u, s->pid, s->tpc, s->tidx > 0, s->time, &f, &why);
		have = f.is_trace && f.map_start == s->tfs;
	}
	if (s->vmstate > 0) {
		tr = (uint32_t)s->vmstate;
		if (s->tidx == 0 && have) {
			int l = uw_trace_loop(u, s->pid, s->time, &f);
			st = l < 0 ? PF_VS_TRACE : l ? PF_VS_LOOP : PF_VS_HEAD;
		} else if (s->tidx == 0 || s->slot == SMP_VM_TRACE) {
			st = PF_VS_TRACE;
		} else {
			st = PF_VS_FFI;
		}
	} else {
		tr = s->slot < SMP_VM__N ? s->trace : 0;
		switch (s->vmstate) {
		case -1:
			st = PF_VS_INTERP;
			break;
		case -2:
			st = PF_VS_C;
			break;
		case -3:
			st = s->slot == SMP_VM_JGC ? PF_VS_JGC : PF_VS_GC;
			break;
		case -4:
			st = PF_VS_EXIT;
			break;
		case -5:
			st = PF_VS_RECORD;
			break;
		case -6:
			st = PF_VS_OPT;
			break;
		case -7:
			st = PF_VS_ASM;
			break;
		}
	}
	if (st < 0) {
		v->no_vmstate++;
		return 0;
	}
	struct pf_vms_row *r = pf_vms_rowof(v, s->pid, tr);
	if (!r)
		return -ENOMEM;
	r->n[st]++;
	r->total++;
	v->samples++;
	v->state[st]++;
	int pk = 0;
	while (pk < v->npend && v->pend[pk].pid != s->pid)
		pk++;
	if (s->inmod) {
		v->mod_samples++;
		v->mod_state[st]++;
		if (pk == v->npend && v->npend < 16) {
			v->pend[pk].pid = s->pid;
			v->pend[pk].n = 0;
			v->npend++;
		}
		if (pk < v->npend)
			v->pend[pk].n++;
		else
			v->jpv[pf_vt_of[st]]++;
	} else {
		v->jpv[pf_vt_of[st]]++;
		if (pk < v->npend) {
			v->jpv[pf_vt_of[st]] += v->pend[pk].n;
			v->pend[pk].n = 0;
		}
	}
	if (have) {
		if (f.name) {
			unsigned k;
			if (sscanf(f.name, "TRACE_%u::", &k) == 1 && k != tr) {
				struct pf_vms_row *o =
				    pf_vms_rowof(v, s->pid, k);
				if (o)
					set_name(o, f.name);
				r = pf_vms_rowof(v, s->pid, tr); /* moved? */
			} else {
				set_name(r, f.name);
			}
		}
		struct uw_luaframe lf[1];
		if (r && uw_lua_frames(u, s->pid, s->time, &f, lf, 1) > 0 &&
		    lf[0].file)
			add_line(r, lf[0].file, lf[0].line, 1);
	}
	return 0;
}

int cli_vmp_event(struct pf_vms *v, struct uwstate *u,
		  const struct smp_event *e)
{
	if (!e->lua) {
		v->no_vmstate++;
		return 0;
	}
	const struct smp_sample *s = e->s;
	struct cli_vmsample x = {.pid = s->pid,
				 .time = s->time_ns,
				 .vmstate = e->lua->vmstate,
				 .trace = e->lua->vmtrace,
				 .slot = e->lua->vmslot,
				 .tidx = UINT32_MAX};
	uint32_t nf = s->nframes < SMP_MAX_FRAMES ? s->nframes : SMP_MAX_FRAMES;
	for (uint32_t i = 0; i < nf; i++)
		if (s->frames[i].fn_start) {
			x.tidx = i;
			x.tpc = s->frames[i].pc;
			x.tfs = s->frames[i].fn_start;
			break;
		}
	return cli_vmp_add(v, u, &x);
}

static const char *const vt_label[PF_VT__N] = {
    "Compiled", "Interpreted", "C code", "Garbage Collector", "JIT Compiler"};

static void pct(uint64_t part, uint64_t whole, char *out, size_t cap)
{
	if (!part || !whole)
		snprintf(out, cap, ".");
	else
		snprintf(out, cap, "%.1f%%",
			 100.0 * (double)part / (double)whole);
}

void cli_vmp_print(struct pf_vms *v, FILE *o, size_t top, const char *title)
{
	pf_vms_sort(v);
	int cols[PF_VS__N] = {0}, nc = 0, multi = 0;
	for (int s = 0; s < PF_VS__N; s++)
		if (s != PF_VS_TRACE || v->state[s])
			cols[nc++] = s;
	for (size_t i = 1; i < v->nrows; i++)
		if (v->rows[i].pid != v->rows[0].pid)
			multi = 1;
	size_t shown = top && top < v->nrows ? top : v->nrows;
	fprintf(o,
		"%s: %" PRIu64 " samples with a VM state (%u Hz, %.1f s), "
		"%zu traces%s",
		title, v->samples, v->hz, v->seconds, v->nrows,
		shown < v->nrows ? "" : " (all shown)");
	if (v->no_vmstate)
		fprintf(o, "; %" PRIu64 " more without one", v->no_vmstate);
	fputc('\n', o);
	if (multi)
		fprintf(o, "%7s ", "pid");
	fprintf(o, "%6s %8s %6s", "trace", "samples", "share");
	for (int c = 0; c < nc; c++)
		fprintf(o, " %6s", pf_vs_name[cols[c]]);
	fprintf(o, "  name; Lua lines\n");
	char cell[32];
	for (size_t i = 0; i < shown; i++) {
		const struct pf_vms_row *r = &v->rows[i];
		if (multi)
			fprintf(o, "%7u ", r->pid);
		if (r->trace)
			fprintf(o, "%6u", r->trace);
		else
			fprintf(o, "%6s", "-");
		pct(r->total, v->samples, cell, sizeof(cell));
		fprintf(o, " %8" PRIu64 " %6s", r->total, cell);
		for (int c = 0; c < nc; c++) {
			pct(r->n[cols[c]], r->total, cell, sizeof(cell));
			fprintf(o, " %6s", cell);
		}
		if (!r->trace)
			fprintf(o, "  (before any trace ran on the thread)");
		else if (r->name[0])
			fprintf(o, "  %s", r->name);
		else
			fprintf(o, "  TRACE_%u", r->trace);
		uint64_t nl = r->lines_other;
		for (int k = 0; k < r->nlines; k++)
			nl += r->lines[k].n;
		for (int k = 0; k < r->nlines && k < 3; k++) {
			pct(r->lines[k].n, nl, cell, sizeof(cell));
			fprintf(o, "%s%s %s", k ? ", " : "; ",
				r->lines[k].where, cell);
		}
		fputc('\n', o);
	}
	if (shown < v->nrows)
		fprintf(o, "%6s %8s (%zu more traces; -n 0 shows all)\n", "...",
			"", v->nrows - shown);
	if (multi)
		fprintf(o, "%7s ", "");
	fprintf(o, "%6s %8" PRIu64 " %6s", "VM", v->samples,
		v->samples ? "100%" : ".");
	for (int c = 0; c < nc; c++) {
		pct(v->state[cols[c]], v->samples, cell, sizeof(cell));
		fprintf(o, " %6s", cell);
	}
	fputc('\n', o);
	uint64_t t[PF_VT__N];
	pf_vms_totals(v, t);
	fprintf(o, "VM states (as luajit -jp=v):");
	for (int k = 0; k < PF_VT__N; k++) {
		pct(t[k], v->samples, cell, sizeof(cell));
		fprintf(o, "%s %s %s", k ? "," : "", cell, vt_label[k]);
	}
	fputc('\n', o);
	if (v->mod_samples) {
		pct(v->mod_samples, v->samples, cell, sizeof(cell));
		fprintf(o,
			"of them in the jitsframe module's own code (its trace "
			"event handlers): %s (%" PRIu64 " samples)\n",
			cell, v->mod_samples);
	}
}

/* ---- a live session: sample running processes */

struct live {
	struct pf_vms *v;
	struct uwstate *u;
	struct traces *t;
	struct smp *s;
	int *pids, npids;
	bool *found;
	uint64_t *next; /* earliest time to look for the region again */
};

static void live_find(struct live *l, int i)
{
	char path[4096], err[512], msg[256];
	uint64_t now = jsf_now_ns();
	if (l->found[i] || now < l->next[i])
		return;
	l->next[i] = now + 100000000ull;
	if (jsf_region_find(l->pids[i], 0, path, sizeof(path)))
		return;
	if (traces_add_region(l->t, path, err, sizeof(err)))
		return;
	l->found[i] = true;
	smp_watch(l->s, l->pids[i], path, msg, sizeof(msg));
}

static int live_ev(const struct smp_event *e, void *ctx)
{
	struct live *l = ctx;
	for (int i = 0; i < l->npids; i++)
		if ((uint32_t)l->pids[i] == e->s->pid && !l->found[i])
			live_find(l, i);
	return cli_vmp_event(l->v, l->u, e) ? 1 : 0;
}

int cli_vmp_live(const char *who, int *pids, int npids, uint32_t hz,
		 uint64_t interval_ms, uint64_t iters, cli_vmp_fn fn, void *ctx)
{
	char msg[512] = "";
	struct smp_opts so = {.sz = sizeof(so), .hz = hz};
	struct live l = {.pids = pids, .npids = npids};
	int rc = smp_open(&l.s, &so, msg, sizeof(msg));
	if (rc) {
		fprintf(stderr, "%s: cannot sample: %s%s\n", who,
			msg[0] ? msg : strerror(-rc),
			(rc == -EPERM || rc == -EACCES) && !strstr(msg, "CAP_")
			    ? " (run as root, or with CAP_BPF and "
			      "CAP_PERFMON)"
			    : "");
		return 4;
	}
	l.t = traces_new();
	l.u = l.t ? uw_new(l.t, NULL) : NULL;
	l.found = calloc((size_t)npids, sizeof(*l.found));
	l.next = calloc((size_t)npids, sizeof(*l.next));
	struct pf_vms v;
	memset(&v, 0, sizeof(v));
	v.hz = hz;
	l.v = &v;
	rc = EX_OK;
	if (!l.u || !l.found || !l.next) {
		fprintf(stderr, "%s: out of memory\n", who);
		rc = EX_INPUT;
		goto out;
	}
	for (int i = 0; i < npids; i++) {
		if (smp_watch(l.s, pids[i], NULL, msg, sizeof(msg))) {
			fprintf(stderr, "%s: pid %d: %s\n", who, pids[i], msg);
			rc = EX_INPUT;
			goto out;
		}
		uw_proc_maps(l.u, (uint32_t)pids[i], NULL);
		live_find(&l, i);
	}
	for (uint64_t it = 0; !iters || it < iters; it++) {
		uint64_t t0 = jsf_now_ns(), end = t0 + interval_ms * 1000000ull;
		int alive = 0;
		for (;;) {
			uint64_t now = jsf_now_ns();
			if (now >= end)
				break;
			uint64_t left = (end - now) / 1000000ull;
			int pr = smp_poll(l.s, left > 100 ? 100 : (int)left + 1,
					  live_ev, &l);
			if (pr < 0 && pr != -EINTR) {
				fprintf(stderr, "%s: %s\n", who, strerror(-pr));
				rc = EX_FAIL;
				goto out;
			}
			alive = 0;
			for (int i = 0; i < npids; i++)
				alive +=
				    kill(pids[i], 0) == 0 || errno != ESRCH;
			if (!alive)
				break;
		}
		while (smp_poll(l.s, 0, live_ev, &l) > 0)
			;
		v.seconds = (double)(jsf_now_ns() - t0) / 1e9;
		int r = fn(&v, ctx, !alive || (iters && it + 1 == iters));
		if (r || !alive)
			break;
		if (interval_ms && iters != 1) { /* top: each interval anew */
			pf_vms_free(&v);
			v.hz = hz;
		}
	}
out:
	pf_vms_free(&v);
	smp_close(l.s);
	uw_free(l.u);
	traces_free(l.t);
	free(l.found);
	free(l.next);
	return rc;
}
