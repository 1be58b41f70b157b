/* SPDX-License-Identifier: MIT */
/* The profiles of `report` and `profile` (cli.h): unwound frames as
 * profile frames, and the four files written into a directory. */
#include "cli.h"
#include "jsfenv.h"
#include "profile.h"
#include "unwind.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_pframe(const struct uframe *f, int i, struct pframe *p)
{
	memset(p, 0, sizeof(*p));
	p->name = f->name;
	p->addr = i ? f->pc - 1 : f->pc;
	p->kind = f->is_trace ? PF_JIT : f->elf ? PF_ELF : PF_UNKNOWN;
	/* an ELF object's path: the mapping's name (the object was found by
	 * it), in a string that stays put as long as the unwinder */
	p->mapping = f->elf ? elfobj_path(f->elf) : f->map_name;
	p->map_start = f->map_start;
	p->map_end = f->map_end;
	p->map_pgoff = f->map_pgoff;
	if (f->elf)
		p->build_id = elfobj_build_id(f->elf);
	if (f->is_trace && f->name) {
		/* TRACE_n::chunk:line -> file chunk, line */
		const char *c = strstr(f->name, "::");
		const char *l = strrchr(f->name, ':');
		if (c && l && l > c + 2)
			p->line = (uint32_t)strtoul(l + 1, NULL, 10);
	}
}

int cli_frames_arg(const char *arg)
{
	return !strcmp(arg, "mixed")	? CLI_FRAMES_MIXED
	       : !strcmp(arg, "lua")	? CLI_FRAMES_LUA
	       : !strcmp(arg, "native") ? CLI_FRAMES_NATIVE
					: -1;
}

/* the names of one sample's Lua frames ("chunk:first") */
static char lua_names[1 << 18];

uint32_t cli_user_frames(struct uwstate *u, uint32_t pid, uint64_t ts, int mode,
			 const struct uframe *fr, int n,
			 const struct cli_extra *ex, uint32_t nex,
			 struct pframe *out, uint32_t max)
{
	return cli_user_frames_st(u, pid, ts, mode, fr, n, ex, nex, out, NULL,
				  max);
}

uint32_t cli_user_frames_st(struct uwstate *u, uint32_t pid, uint64_t ts,
			    int mode, const struct uframe *fr, int n,
			    const struct cli_extra *ex, uint32_t nex,
			    struct pframe *out, uint8_t *stable, uint32_t max)
{
	uint32_t k = 0, x = 0;
	if (stable)
		memset(stable, 0, max);
	size_t used = 0;
	if (mode == CLI_FRAMES_NATIVE)
		nex = 0;
	for (int i = 0; i < n && k < max; i++) {
		const struct uframe *f = &fr[i];
		while (x < nex && ex[x].at == (uint32_t)i && !ex[x].after &&
		       k < max)
			out[k++] = ex[x++].f;
		struct uw_luaframe lf[64];
		int nl = 0;
		if (f->is_trace && mode != CLI_FRAMES_NATIVE)
			nl = uw_lua_frames(u, pid, ts, f, lf, 64);
		for (int j = 0; j < nl && k < max; j++) {
			/* "chunk:first" (as luajit -jp=F names a function)
			 * and "chunk": the map's strings go with the next
			 * uw_lua_frames */
			char *nm = lua_names + used;
			size_t room = sizeof(lua_names) - used;
			/* "%s:%u" NUL "%s" (snprintf was a tenth of the
			 * profile side) */
			const char *file = lf[j].file ? lf[j].file : "(null)";
			if (lf[j].func) { /* made once, staying put */
				size_t w =
				    (size_t)lf[j].func_len + 1 + lf[j].file_len;
				if (w >= room)
					break;
				used += w + 1;
				if (stable)
					stable[k] = PF_STABLE_ALL;
				struct pframe *p = &out[k++];
				memset(p, 0, sizeof(*p));
				p->name = lf[j].func;
				p->file = file;
				p->line = lf[j].line;
				p->kind = PF_LUA;
				continue;
			}
			size_t fl = strlen(file), nd = 1;
			for (uint32_t v = lf[j].first; v >= 10; v /= 10)
				nd++;
			if (fl + 1 + nd + 1 + fl >= room)
				break;
			size_t lw = uw_lua_label(nm, file, fl, lf[j].first);
			memcpy(nm + lw + 1, file, fl + 1);
			used += lw + 1 + fl + 1;
			struct pframe *p = &out[k++];
			memset(p, 0, sizeof(*p));
			p->name = nm;
			p->file = nm + strlen(nm) + 1;
			p->line = lf[j].line;
			p->kind = PF_LUA;
		}
		if (!(mode == CLI_FRAMES_LUA && (!f->is_trace || nl > 0)) &&
		    k < max)
			cli_pframe(f, i, &out[k++]);
		while (x < nex && ex[x].at == (uint32_t)i && ex[x].after &&
		       k < max)
			out[k++] = ex[x++].f;
		while (x < nex && ex[x].at == (uint32_t)i && k < max)
			out[k++] = ex[x++].f; /* (unsorted: kept anyway) */
	}
	while (x < nex && k < max) /* beyond the native walk */
		out[k++] = ex[x++].f;
	return k;
}

void cli_kframe(struct uwstate *u, uint64_t ip, int i, struct pframe *k)
{
	memset(k, 0, sizeof(*k));
	k->name = uw_ksym_name(u, ip);
	k->addr = i ? ip - 1 : ip;
	k->mapping = "[kernel.kallsyms]";
	k->kind = PF_ELF;
}

/* The HTML flame graph; without the viewer's files (a build without npm
 * or the npm registry) the page that says so, and *note set: the note
 * to print, where the viewer was looked for in where. */
static int write_html(const struct prof *prof, const char *path,
		      const char *who, bool *note, char *where, size_t wsize)
{
	*note = false;
	int w = prof_write_html(prof, path, who);
	if (w != -ENOENT)
		return w;
	prof_viewer_where(where, wsize);
	w = prof_write_html_unavailable(prof, path, who);
	*note = !w;
	return w;
}

/* One of cli_write_profiles' writers: stacks.folded with flamegraph.svg
 * (one folding), flamegraph.html or profile.pb.gz; profile.pb.gz in a
 * thread of its own (the profile is only read), so that its encoding and
 * compression, and the renames over the last run's files (which free
 * their blocks: a discard the filesystem may wait for), overlap the
 * others' */
struct wjob {
	const struct prof *prof;
	const char *who;
	int k;
	char path[PATH_MAX], path2[PATH_MAX];
	int w, w2;
	bool note;
	char where[3 * PATH_MAX + 128];
	pthread_t th;
	bool threaded;
};

static void *wjob_run(void *arg)
{
	struct wjob *j = arg;
	if (j->k == 0)
		j->w = prof_write_folded_svg(j->prof, j->path, j->path2, j->who,
					     &j->w2);
	else if (j->k == 2)
		j->w = write_html(j->prof, j->path, j->who, &j->note, j->where,
				  sizeof(j->where));
	else
		j->w = prof_write_pprof(j->prof, j->path);
	return NULL;
}

int cli_write_profiles(const struct prof *prof, const char *dir,
		       const char *who, char *wrote, size_t wlen)
{
	static const char *const files[] = {"stacks.folded", "flamegraph.svg",
					    "flamegraph.html", "profile.pb.gz"};
	static const int jobk[3] = {0, 2, 3};
	struct wjob *jobs = calloc(3, sizeof(*jobs));
	if (!jobs) {
		fprintf(stderr, "%s: cannot write the profiles: %s\n", who,
			strerror(ENOMEM));
		return EX_FAIL;
	}
	for (int i = 0; i < 3; i++) {
		struct wjob *j = &jobs[i];
		j->prof = prof;
		j->who = who;
		j->k = jobk[i];
		snprintf(j->path, sizeof(j->path), "%s/%s", dir, files[j->k]);
		if (j->k == 0)
			snprintf(j->path2, sizeof(j->path2), "%s/%s", dir,
				 files[1]);
	}
	/* profile.pb.gz (the longest) in a thread of its own, the others in
	 * this one meanwhile (all here where a thread cannot be had) */
	jobs[2].threaded =
	    !pthread_create(&jobs[2].th, NULL, wjob_run, &jobs[2]);
	for (int i = 0; i < 3; i++)
		if (!jobs[i].threaded)
			wjob_run(&jobs[i]);
	if (jobs[2].threaded)
		pthread_join(jobs[2].th, NULL);
	/* what they did, in the files' order */
	size_t wl = strlen(wrote);
	int rc = EX_OK;
	for (int k = 0; k < 4; k++) {
		const struct wjob *j = &jobs[k == 0 ? 0 : k - 1];
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", dir, files[k]);
		int w = k == 1 ? j->w2 : j->w;
		if (k == 2 && j->note)
			fprintf(stderr,
				"%s: note: the HTML flame graph's viewer "
				"(d3-flame-graph) is missing (looked for %s), "
				"so %s says the interactive viewer is "
				"unavailable; the other files hold the "
				"profile. To get it, run `make` with npm "
				"installed and the npm registry reachable, or "
				"set " JSF_ENV_VIEWER "=DIR.\n",
				who, j->where, p);
		if (w == -ENOSYS)
			continue;
		if (w) {
			fprintf(stderr, "%s: cannot write %s: %s\n", who, p,
				strerror(-w));
			rc = EX_FAIL;
			continue;
		}
		wl += (size_t)snprintf(wrote + wl, wlen - wl, " %s", files[k]);
		if (wl >= wlen)
			wl = wlen - 1;
	}
	free(jobs);
	return rc;
}
