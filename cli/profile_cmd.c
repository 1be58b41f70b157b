/* SPDX-License-Identifier: MIT */
/*
 * `jitsframe profile [-p PID[,PID...] | -a] [-F HZ] [-d S] [-o DIR]
 * [--check N] [-- CMD...]`: stack sampling in the kernel (sampler/, the
 * eBPF program that unwinds each sampled stack through the process's live
 * region), symbolized here: ELF frames by symbol from each process's
 * mappings (/proc/PID/maps), kernel frames from kallsyms, trace frames by
 * the region function live at the sample's time, named by the process's
 * jitdump (unwind/: uw_proc_maps, uw_frame_at). The profiles of `report`
 * (cli/profout.c) and a summary line of report's shape. --check N: the
 * sampler also copies the registers and stack of one sample in N, which
 * jitsframe's own unwinder walks (uw_unwind_regs) and compares frame for
 * frame with the kernel's walk: the oracle.
 */
#include "cli.h"
#include "jitsframe.h"
#include "jsfenv.h"
#include "profile.h"
#include "sampler.h"
#include "unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char usage[] =
    "Usage: jitsframe profile [-o DIR] [-F HZ] [-d SECONDS] [--check N]\n"
    "                         -- CMD [ARGS...]\n"
    "       jitsframe profile -p PID[,PID...] [-d SECONDS] [-o DIR] [-F HZ]\n"
    "                         [--check N]\n"
    "       jitsframe profile -a [-d SECONDS] [-o DIR] [-F HZ] [--check N]\n"
    "\n"
    "Sample stacks in the kernel (eBPF, docs/PROFILE.md): each sampled user\n"
    "stack is unwound there, trace code through the process's own live\n"
    "region, ELF code through rows of its objects; symbolized here (trace\n"
    "frames TRACE_n::chunk:line as of the sample's time). Writes into DIR\n"
    "(default ./jitsframe-profile) stacks.folded, flamegraph.svg,\n"
    "flamegraph.html and profile.pb.gz, as `jitsframe report` does, and\n"
    "prints one summary line of report's shape (samples, through trace\n"
    "code, of them unwound from main, why the rest stopped). Stops at -d,\n"
    "when CMD (or every process of -p) has exited, or at ^C. Needs root,\n"
    "or CAP_BPF and CAP_PERFMON, and a kernel with BPF and BTF.\n"
    "\n"
    "  -o, --output DIR   where to write the profiles\n"
    "  -F, --freq HZ      samples per second per CPU (default 999)\n"
    "  -d, --duration S   stop after S seconds\n"
    "  -p, --pid LIST     sample these running processes (each one's region\n"
    "                     found as docs/ABI.md 8 says: its mappings,\n"
    "                     BASE/jitsframe-UID/PID.region, BASE $TMPDIR when\n"
    "                     set, else /dev/shm and /tmp)\n"
    "  -a, --all          sample every process\n"
    "  --dump FILE        every sample's user frames as symbolized, one\n"
    "                     'S TIME PID TID STOP N main|- VM m|-' line\n"
    "                     and N 'F PC START KIND NAME MAPPING' lines\n"
    "                     (KIND j trace, e ELF, u unknown; STOP the\n"
    "                     sampler's; VM the VM's g->vmstate, - if none;\n"
    "                     m: in the module's VM event handler), then\n"
    "                     'L CHUNK:FIRSTLINE LINE' per Lua frame (leaf\n"
    "                     first, as the profiles have them)\n"
    "  --check N          the oracle: copy the registers and stack of one\n"
    "                     sample in N, unwind the copies with jitsframe's\n"
    "                     own unwinder and compare them frame for frame with\n"
    "                     the kernel's walk; prints the agreement and the\n"
    "                     first differences\n"
    "  --frames MODE      the profiles' stacks: mixed (default: every frame,\n"
    "                     each trace frame with the Lua frames it stands\n"
    "                     for above it, `chunk:line_[l]`, line the\n"
    "                     function's first), lua (Lua frames alone, a trace\n"
    "                     frame only where its code has none; no native or\n"
    "                     kernel frames), native (no Lua frames)\n"
    "  -- CMD [ARGS...]   run CMD with the VM module started (as `jitsframe\n"
    "                     run` does; its region DIR/region) and sample it\n"
    "                     and its children\n"
    "\n"
    "Exit status: 0 done; 1 CMD failed (could not run, exited non-zero,\n"
    "crashed: what was sampled is still written) or a profile could not be\n"
    "written; 2 usage; 3 DIR cannot be made, or no such process; 4 cannot\n"
    "sample: no privilege (root, or CAP_BPF and CAP_PERFMON), or no BPF or\n"
    "BTF in the kernel (one message says which).\n";

#define WHO "jitsframe profile"
enum { EX_NOSAMPLE = 4 }; /* cannot sample (privilege, BPF, BTF) */
enum { MAXPIDS = 256, KMAX = 256 };

static volatile sig_atomic_t stop_now;
static void on_sigint(int sig)
{
	(void)sig;
	stop_now = 1;
}

/* A sample kept for symbolization after the run (when the jitdumps are
 * complete): header, then nframes (pc, fn_start) pairs, then nk kernel
 * pcs. */
struct kept {
	uint32_t pid, tid;
	uint64_t time;
	uint16_t nframes, nk;
	uint16_t stop;
	uint16_t nl;	 /* Lua frames (struct klua) after the kernel pcs */
	int32_t vmstate; /* the VM's g->vmstate at the sample (has_vm) */
	uint8_t has_vm, inmod; /* a VM state read; a frame in the module */
};
/* A Lua frame kept: its label ("chunk:firstline" + NUL + chunk, interned),
 * line, and the native frame it goes beside (smp_luaframe.at, trace or not). */
struct klua {
	const char *label;
	uint32_t line, at;
	uint32_t trace_at; /* 1: `at` is a trace frame (Lua frames rootward) */
};

/* What is known of a sampled process on this side. */
struct pinfo {
	uint32_t pid;
	bool region;		   /* found and added to the traces */
	uint64_t next_maps;	   /* earliest time to reread its maps */
	uint64_t exe_ino, exe_dev; /* its program when its maps were read */
	uint64_t next_exe;	   /* earliest time to look at it again */
	uint64_t next_find;	   /* earliest time to look for its region */
	uint64_t next_watch;	   /* earliest time to refresh the sampler's */
	uint64_t n;		   /* samples */
};

struct pctx {
	struct smp *s;
	struct uwstate *u;
	struct traces *t;
	bool all;
	int frames; /* --frames: enum cli_frames */
	/* processes */
	struct pinfo *p;
	size_t np, capp;
	/* kept samples (an arena of struct kept + frames) */
	unsigned char *a;
	size_t alen, acap;
	uint64_t nkept;
	/* the directories of the jitdumps (besides DIR) */
	char jdirs[8][PATH_MAX];
	size_t njdirs;
	/* the oracle */
	uint64_t raw, agree, undecided, differ;
	uint64_t fallback;    /* samples unwound here from their raw copy */
	uint64_t short_walks; /* raw copies whose kernel walk stopped short */
	uint64_t nomaps; /* raw copies this side could not place (no maps) */
	char diffs[5][480];
	size_t ndiffs;
	FILE *dump; /* --dump: every sample's user frames as symbolized */
	int err;
	/* Lua frames: interned labels */
	struct prof_intern *labels;
	uint64_t lua_samples, lua_frames;
	/* the VM-state profile (cli/vmstate.c): each sample's VM state,
	 * classified after the run */
	struct cli_vmsample *vs;
	size_t nvs, capvs;
	uint64_t no_vmstate;
};

/* A sample's VM state kept (its Lua record; the first trace frame of the
 * walk as kept). */
static int keep_vm(struct pctx *c, const struct smp_event *e,
		   const struct smp_frame *frames, uint16_t nf, bool inmod)
{
	if (!e->lua) {
		c->no_vmstate++;
		return 0;
	}
	if (c->nvs == c->capvs) {
		size_t cap = c->capvs ? 2 * c->capvs : 4096;
		struct cli_vmsample *n = realloc(c->vs, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->vs = n;
		c->capvs = cap;
	}
	struct cli_vmsample *x = &c->vs[c->nvs++];
	*x = (struct cli_vmsample){.pid = e->s->pid,
				   .time = e->s->time_ns,
				   .vmstate = e->lua->vmstate,
				   .trace = e->lua->vmtrace,
				   .slot = e->lua->vmslot,
				   .tidx = UINT32_MAX,
				   .inmod = inmod};
	for (uint16_t i = 0; i < nf; i++)
		if (frames[i].fn_start) {
			x->tidx = i;
			x->tpc = frames[i].pc;
			x->tfs = frames[i].fn_start;
			break;
		}
	return 0;
}

/* A Lua frame's label "chunk:first" (the function's first line, as
 * luajit -jp=F names it; the profile writers add "_[l]"), with its chunk
 * after the NUL (the frame's file), interned. */
static const char *intern(struct pctx *c, const char *chunk, uint32_t first)
{
	char b[1200];
	int w = snprintf(b, sizeof(b), "%s:%u", chunk, first);
	size_t cl = strlen(chunk);
	if (w < 0 || (size_t)w + 1 + cl + 1 > sizeof(b))
		return NULL;
	memcpy(b + w + 1, chunk, cl + 1);
	if (!c->labels && !(c->labels = prof_intern_new()))
		return NULL;
	return prof_intern(c->labels, b, (size_t)w + 1 + cl);
}

static struct pinfo *pinfo_of(struct pctx *c, uint32_t pid)
{
	for (size_t i = 0; i < c->np; i++)
		if (c->p[i].pid == pid)
			return &c->p[i];
	if (c->np == c->capp) {
		size_t cap = c->capp ? 2 * c->capp : 64;
		struct pinfo *n = realloc(c->p, cap * sizeof(*n));
		if (!n)
			return NULL;
		c->p = n;
		c->capp = cap;
	}
	struct pinfo *q = &c->p[c->np++];
	memset(q, 0, sizeof(*q));
	q->pid = pid;
	return q;
}

/* The directory of a region found outside /proc (its jitdump is written
 * beside it), once. */
static void note_jdir(struct pctx *c, const char *path)
{
	char d[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (!slash || !strncmp(path, "/proc/", 6))
		return;
	snprintf(d, sizeof(d), "%.*s", (int)(slash - path), path);
	for (size_t i = 0; i < c->njdirs; i++)
		if (!strcmp(c->jdirs[i], d))
			return;
	if (c->njdirs < sizeof(c->jdirs) / sizeof(c->jdirs[0]))
		snprintf(c->jdirs[c->njdirs++], PATH_MAX, "%s", d);
}

/* Look for pid's region (docs/ABI.md 8) unless known or looked for in the
 * last 100 ms; once found, to the traces and to the sampler. */
static void find_region(struct pctx *c, struct pinfo *q, uint64_t now)
{
	if (q->region || now < q->next_find)
		return;
	/* every 10 ms for its first 2 s (a command starting: its module
	 * creates the region at once), then every 100 ms */
	q->next_find = now + (q->n < 2000 ? 10000000ull : 100000000ull);
	char path[PATH_MAX], err[512], msg[256];
	if (jsf_region_find((int)q->pid, 0, path, sizeof(path)))
		return;
	if (traces_add_region(c->t, path, err, sizeof(err)))
		return;
	q->region = true;
	note_jdir(c, path);
	smp_watch(c->s, (int)q->pid, path, msg, sizeof(msg));
}

/* A process first seen, or a pc it runs that its mappings lack: read its
 * mappings again (at most every 50 ms). */
static void refresh_maps(struct pctx *c, struct pinfo *q, uint64_t now)
{
	if (now < q->next_maps)
		return;
	q->next_maps = now + 50000000ull;
	uw_proc_maps(c->u, q->pid, NULL);
}

static bool trace_stop(unsigned stop)
{
	return stop == SMP_STOP_BUSY || stop == SMP_STOP_NOT_RESIDENT ||
	       stop == SMP_STOP_CORRUPT;
}

/* The oracle on one raw copy: jitsframe's unwinder over the registers and
 * stack, frame for frame against the kernel's walk. */
static void check_raw(struct pctx *c, const struct smp_event *e)
{
	static struct uframe fr[UW_MAX];
	const struct smp_sample *s = e->s;
	const struct smp_raw *r = e->raw;
	enum stop_reason why;
	struct uw_regs regs = {.ip = r->ip, .sp = r->sp, .bp = r->bp};
	size_t len = r->len < SMP_RAW_STACK ? r->len : SMP_RAW_STACK;
	int n = uw_unwind_regs(c->u, s->pid, s->tid, s->time_ns, &regs,
			       r->stack, len, fr, &why);
	if (n < s->nframes && why == STOP_NO_MAPPING &&
	    !uw_proc_maps(c->u, s->pid, NULL)) /* this side's maps were old */
		n = uw_unwind_regs(c->u, s->pid, s->tid, s->time_ns, &regs,
				   r->stack, len, fr, &why);
	int nk = s->nframes;
	c->raw++;
	if (n <= 1 && nk > 1 && why == STOP_NO_MAPPING) {
		/* this side cannot place even the leaf (the process's maps
		 * are gone: it exited before its samples were read): no
		 * oracle for this copy */
		c->nomaps++;
		return;
	}
	int k = 0;
	for (int i = 0; i < n && i < nk; i++)
		if (s->frames[i].fn_start && fr[i].jit_area &&
		    !fr[i].is_trace) {
			/* the kernel named a region function this side's view
			 * does not hold at that time: no oracle for it */
			c->nomaps++;
			return;
		}
	for (; k < n && k < nk; k++) {
		const struct smp_frame *sf = &s->frames[k];
		bool tr = sf->fn_start != 0;
		if (sf->pc != fr[k].pc || tr != fr[k].is_trace ||
		    (tr && fr[k].map_start != sf->fn_start))
			break;
	}
	const char *reason = NULL;
	char buf[320];
	if (k == n && k == nk) {
		c->agree++;
		return;
	}
	if (k == n && why == STOP_STACK_SHORT) {
		/* the copy ended where the kernel read on */
		c->undecided++;
		return;
	}
	if (k == nk && s->stop == SMP_STOP_DEPTH) {
		c->agree++; /* the kernel's walk is bounded; the same so far */
		return;
	}
	if (k == n && nk == n + 1 && why == STOP_NO_MAPPING) {
		c->agree++; /* both end at the same unresolved pc */
		return;
	}
	if (k + 1 >= nk && k < n &&
	    (s->stop == SMP_STOP_NO_MAPPING || s->stop == SMP_STOP_NO_ROWS ||
	     s->stop == SMP_STOP_NO_REGION)) {
		/* the kernel's walk agreed up to a pc its tables did not
		 * know yet (its last frame) and stopped there: not a wrong
		 * frame, a short walk (this side unwinds the copy) */
		c->short_walks++;
		return;
	}
	if (k < n && k < nk) {
		const struct smp_frame *sf = &s->frames[k];
		snprintf(buf, sizeof(buf),
			 "frame %d: kernel %#llx (%s %#llx), user %#llx (%s "
			 "%#llx, %s)",
			 k, (unsigned long long)sf->pc,
			 sf->fn_start ? "trace" : "elf",
			 (unsigned long long)sf->fn_start,
			 (unsigned long long)fr[k].pc,
			 fr[k].is_trace ? "trace" : "elf",
			 (unsigned long long)fr[k].map_start,
			 fr[k].name ? fr[k].name : "?");
		reason = buf;
	} else {
		/* where they part: the first frame one walk lacks */
		const struct uframe *u0 = k < n ? &fr[k] : NULL;
		snprintf(buf, sizeof(buf),
			 "kernel %d frames (%s), user %d frames (%s); frame "
			 "%d: %#llx %s in %s",
			 nk, smp_stop_name(s->stop), n, stop_name(why), k,
			 (unsigned long long)(u0 ? u0->pc : 0),
			 u0 && u0->name ? u0->name : "?",
			 u0 && u0->map_name ? u0->map_name : "?");
		reason = buf;
	}
	c->differ++;
	if (c->ndiffs < sizeof(c->diffs) / sizeof(c->diffs[0]))
		snprintf(c->diffs[c->ndiffs++], sizeof(c->diffs[0]),
			 "pid %u sample %llu: %s", s->pid,
			 (unsigned long long)s->id, reason);
}

/* A raw copy unwound on this side (its process's mappings read again
 * first: that they changed is why the kernel's walk stopped): the frames
 * as the kernel's walk gives them (trace frames with their function's
 * start), and the stop. How many frames. */
static uint16_t user_walk(struct pctx *c, const struct smp_event *e,
			  struct smp_frame *out, uint64_t *sp, uint16_t *stop)
{
	static struct uframe fr[UW_MAX];
	const struct smp_sample *s = e->s;
	const struct smp_raw *r = e->raw;
	enum stop_reason why;
	uw_proc_maps(c->u, s->pid, NULL);
	struct uw_regs regs = {.ip = r->ip, .sp = r->sp, .bp = r->bp};
	size_t len = r->len < SMP_RAW_STACK ? r->len : SMP_RAW_STACK;
	int n = uw_unwind_regs(c->u, s->pid, s->tid, s->time_ns, &regs,
			       r->stack, len, fr, &why);
	if (n <= 0)
		return 0;
	if (n > SMP_MAX_FRAMES)
		n = SMP_MAX_FRAMES;
	for (int i = 0; i < n; i++) {
		out[i].pc = fr[i].pc;
		out[i].fn_start = fr[i].is_trace ? fr[i].map_start : 0;
		sp[i] = fr[i].sp;
	}
	*stop = why == STOP_OUTERMOST	 ? SMP_STOP_OUTERMOST
		: why == STOP_NO_MAPPING ? SMP_STOP_NO_MAPPING
		: why == STOP_DEPTH	 ? SMP_STOP_DEPTH
		: why == STOP_NO_TRACE	 ? SMP_STOP_NO_TRACE
		: why == STOP_NO_REGION	 ? SMP_STOP_NO_REGION
		: why == STOP_NO_ROW	 ? SMP_STOP_NO_ROW
		: why == STOP_UNSUP_RULE ? SMP_STOP_UNSUP_RULE
		: why == STOP_LOOP	 ? SMP_STOP_LOOP
					 : SMP_STOP_READ;
	return (uint16_t)n;
}

static int on_sample(const struct smp_event *e, void *ctx)
{
	struct pctx *c = ctx;
	const struct smp_sample *s = e->s;
	uint64_t now = jsf_now_ns();
	struct pinfo *q = pinfo_of(c, s->pid);
	if (!q) {
		c->err = -ENOMEM;
		return 1;
	}
	/* its program changed (CMD's exec, after its first samples): its
	 * mappings are another program's from then on; read them again.
	 * /proc/PID/exe at most every 10 ms */
	if (q->n && now >= q->next_exe) {
		char ep[64];
		struct stat st;
		q->next_exe = now + 10000000ull;
		snprintf(ep, sizeof(ep), "/proc/%u/exe", q->pid);
		if (stat(ep, &st) == 0 && ((uint64_t)st.st_ino != q->exe_ino ||
					   (uint64_t)st.st_dev != q->exe_dev)) {
			q->exe_ino = (uint64_t)st.st_ino;
			q->exe_dev = (uint64_t)st.st_dev;
			uw_proc_maps(c->u, q->pid, NULL);
		}
	}
	if (!q->n++) {
		char ep[64];
		struct stat st;
		snprintf(ep, sizeof(ep), "/proc/%u/exe", q->pid);
		if (stat(ep, &st) == 0) {
			q->exe_ino = (uint64_t)st.st_ino;
			q->exe_dev = (uint64_t)st.st_dev;
		}
		q->next_exe = now + 10000000ull;
		uw_proc_maps(c->u, q->pid, NULL);
		if (c->all) {
			char msg[256];
			smp_watch(c->s, (int)s->pid, NULL, msg, sizeof(msg));
		}
	}
	bool jit = trace_stop(s->stop) || s->stop == SMP_STOP_NO_REGION ||
		   s->stop == SMP_STOP_NO_TRACE;
	uint16_t nf = s->nframes < SMP_MAX_FRAMES ? s->nframes : SMP_MAX_FRAMES;
	bool inmod = false; /* a frame in the VM module (VM-state profile) */
	for (uint16_t i = 0; i < nf; i++) {
		struct uframe f;
		enum stop_reason why;
		jit |= s->frames[i].fn_start != 0;
		if (s->frames[i].fn_start)
			continue;
		bool at = uw_frame_at(c->u, s->pid, s->frames[i].pc, i > 0,
				      s->time_ns, &f, &why);
		if (!at && why == STOP_NO_MAPPING) {
			refresh_maps(c, q, now);
			break;
		}
		if (e->lua && f.map_name) {
			const char *b = strrchr(f.map_name, '/');
			inmod |=
			    !strcmp(b ? b + 1 : f.map_name, "jitsframe.so");
		}
	}
	if (e->raw &&
	    (s->stop == SMP_STOP_NO_REGION || s->stop == SMP_STOP_NO_MAPPING)) {
		/* a copy this side unwinds below: its pc may be JIT code
		 * that only the region knows; look for it now */
		q->next_find = 0;
		jit = true;
	}
	/* its region: for trace code, and for the Lua-stack walk (whose
	 * VM layout the region carries) in any sample until it is found */
	if (jit || !q->region)
		find_region(c, q, now);
	if (s->stop == SMP_STOP_NO_MAPPING && now >= q->next_watch) {
		/* the program's mappings changed (CMD's exec, a dlopen):
		 * the sampler's tables again, at most every 20 ms */
		char msg[256];
		q->next_watch = now + 20000000ull;
		smp_watch(c->s, (int)q->pid, NULL, msg, sizeof(msg));
	}
	if (e->raw)
		check_raw(c, e);
	/* The kernel's walk met a pc its tables did not know yet (CMD just
	 * exec'd, a library or code area mapped since the tables were read;
	 * or trace code before the sampler was given the region this side
	 * has just found) and the sampler sent the stack with it: this side
	 * unwinds the copy itself, over mappings read now, with the same
	 * unwinder as report — the sample is exact instead of cut short. */
	static struct smp_frame uf[SMP_MAX_FRAMES];
	static uint64_t usp[SMP_MAX_FRAMES];
	const struct smp_frame *frames = s->frames;
	uint16_t stop = s->stop;
	if (e->raw &&
	    (s->stop == SMP_STOP_NO_MAPPING || s->stop == SMP_STOP_NO_ROWS ||
	     (s->stop == SMP_STOP_NO_REGION && q->region))) {
		uint16_t ustop = stop;
		uint16_t n = user_walk(c, e, uf, usp, &ustop);
		/* only a complete walk replaces the kernel's: one that stops
		 * early here too (this side's view incomplete) does not */
		if (ustop == SMP_STOP_OUTERMOST && n >= nf) {
			frames = uf;
			nf = n;
			stop = ustop;
			c->fallback++;
		}
	}
	if (keep_vm(c, e, frames, nf, inmod)) {
		c->err = -ENOMEM;
		return 1;
	}
	/* its Lua frames, resolved now (the process may be gone later) */
	static struct smp_luaframe lf[SMP_MAX_LFRAMES];
	static struct klua kl[SMP_MAX_LFRAMES];
	uint16_t nl = 0;
	/* (on this side's walk where it replaced the kernel's: placed by
	 * their C frames' addresses on it) */
	int nlf = !e->lua	 ? 0
		  : frames == uf ? smp_lua_frames_on(c->s, e, uf, usp, nf, lf,
						     SMP_MAX_LFRAMES)
				 : smp_lua_frames(c->s, e, lf, SMP_MAX_LFRAMES);
	for (int i = 0; i < nlf; i++) {
		/* C functions are their native frames; a trace's own
		 * function is its trace frame, where the native walk has
		 * one there (not in the VM's code the trace called or exited
		 * to, vmstate still the trace's) */
		uint32_t at = lf[i].at;
		if (!lf[i].chunk || ((lf[i].flags & SMP_LF_TRACE) && at < nf &&
				     frames[at].fn_start))
			continue;
		const char *lab = intern(c, lf[i].chunk, lf[i].firstline);
		if (!lab)
			continue;
		kl[nl++] = (struct klua){lab, lf[i].line, at,
					 at < nf && frames[at].fn_start != 0};
	}
	if (nl) {
		c->lua_samples++;
		c->lua_frames += nl;
	}
	/* keep it */
	uint32_t nk = e->nkframes < KMAX ? e->nkframes : KMAX;
	size_t need = sizeof(struct kept) + 16 * (size_t)nf + 8 * (size_t)nk +
		      sizeof(struct klua) * (size_t)nl;
	if (c->alen + need > c->acap) {
		size_t cap = c->acap ? 2 * c->acap : 1 << 20;
		while (cap < c->alen + need)
			cap *= 2;
		unsigned char *na = realloc(c->a, cap);
		if (!na) {
			c->err = -ENOMEM;
			return 1;
		}
		c->a = na;
		c->acap = cap;
	}
	struct kept k = {.pid = s->pid,
			 .tid = s->tid,
			 .time = s->time_ns,
			 .nframes = nf,
			 .nk = (uint16_t)nk,
			 .stop = stop,
			 .nl = nl,
			 .vmstate = e->lua ? e->lua->vmstate : 0,
			 .has_vm = e->lua != NULL,
			 .inmod = inmod};
	unsigned char *p = c->a + c->alen;
	memcpy(p, &k, sizeof(k));
	p += sizeof(k);
	for (uint16_t i = 0; i < nf; i++, p += 16) {
		memcpy(p, &frames[i].pc, 8);
		memcpy(p + 8, &frames[i].fn_start, 8);
	}
	if (nk)
		memcpy(p, e->kframes, 8 * (size_t)nk);
	if (nl)
		memcpy(p + 8 * (size_t)nk, kl, sizeof(struct klua) * nl);
	c->alen += need;
	c->nkept++;
	return 0;
}

/* ------------------------------------------------ after the run */

struct sumr {
	uint64_t samples, through, through_main, complete, unpub, unnamed;
	uint64_t stop[SMP_STOP__N], stop_through[SMP_STOP__N];
	struct cli_exes exes; /* profile.pb.gz's main binary */
};

static void lua_pframe(const struct klua *l, struct pframe *p)
{
	memset(p, 0, sizeof(*p));
	p->name = l->label;
	p->file = l->label + strlen(l->label) + 1; /* its chunk */
	p->line = l->line;
	p->kind = PF_LUA;
}

/* Every kept sample symbolized (now that the jitdumps are complete) into
 * the profile, counted into the summary. */
static int symbolize_all(struct pctx *c, struct prof *prof, struct sumr *m)
{
	static struct uframe fr[SMP_MAX_FRAMES];
	/* kernel, then user frames with both kinds of Lua frames */
	static struct pframe all[KMAX + 2 * SMP_MAX_FRAMES + SMP_MAX_LFRAMES];
	static struct cli_extra ex[SMP_MAX_LFRAMES];
	static char tname[SMP_MAX_FRAMES][32];
	size_t off = 0;
	/* the builtins' names as the producers' runtime areas give them
	 * now: libraries loaded since their regions were found */
	traces_refresh_runtime(c->t);
	while (off < c->alen) {
		struct kept k;
		memcpy(&k, c->a + off, sizeof(k));
		const unsigned char *p = c->a + off + sizeof(k);
		off += sizeof(k) + 16 * (size_t)k.nframes + 8 * (size_t)k.nk +
		       sizeof(struct klua) * (size_t)k.nl;
		const struct klua *kl =
		    (const struct klua *)(p + 16 * (size_t)k.nframes +
					  8 * (size_t)k.nk);
		m->samples++;
		bool trace = false, main_ = false, anon = false;
		unsigned stop =
		    k.stop < SMP_STOP__N ? k.stop : SMP_STOP_CORRUPT;
		for (uint32_t i = 0; i < k.nk; i++) {
			uint64_t ip;
			memcpy(&ip, p + 16 * (size_t)k.nframes + 8 * i, 8);
			cli_kframe(c->u, ip, (int)i, &all[i]);
		}
		for (uint16_t i = 0; i < k.nframes; i++) {
			uint64_t pc, fs;
			memcpy(&pc, p + 16 * (size_t)i, 8);
			memcpy(&fs, p + 16 * (size_t)i + 8, 8);
			struct uframe *f = &fr[i];
			enum stop_reason why;
			uw_frame_at(c->u, k.pid, pc, i > 0, k.time, f, &why);
			if (fs && (!f->is_trace || f->map_start != fs)) {
				/* the kernel's region function, which this
				 * side's region view does not hold then */
				memset(f, 0, sizeof(*f));
				f->pc = pc;
				f->is_trace = f->jit_area = true;
				f->map_start = fs;
				f->map_end = fs + 1;
				f->map_name = "[jit]";
				m->unnamed++;
			}
			if (f->is_trace && !f->name) {
				snprintf(tname[i], sizeof(tname[i]),
					 "TRACE@%#llx",
					 (unsigned long long)f->map_start);
				f->name = tname[i];
			}
			trace |= f->is_trace;
			anon |= f->jit_area && !f->is_trace;
			if (!f->is_trace && f->name && !strcmp(f->name, "main"))
				main_ = true;
		}
		if (c->dump) {
			char vm[16] = "-";
			if (k.has_vm)
				snprintf(vm, sizeof(vm), "%d", (int)k.vmstate);
			fprintf(c->dump, "S %llu %u %u %u %u %s %s %s\n",
				(unsigned long long)k.time, k.pid, k.tid, stop,
				k.nframes, main_ ? "main" : "-", vm,
				k.inmod ? "m" : "-");
			for (uint16_t i = 0; i < k.nframes; i++) {
				const struct uframe *f = &fr[i];
				fprintf(c->dump, "F %llx %llx %c %s %s\n",
					(unsigned long long)f->pc,
					(unsigned long long)(f->is_trace
								 ? f->map_start
								 : f->pc),
					f->is_trace ? 'j'
					: f->elf    ? 'e'
						    : 'u',
					f->name ? f->name : "-",
					f->map_name ? f->map_name : "-");
			}
		}
		/* the interpreter's Lua frames (the sampler's walk) beside the
		 * native frame each VM entry runs in: leafward of an
		 * interpreter frame, rootward of a trace's */
		uint32_t nex = 0;
		for (uint32_t j = 0; j < k.nl && nex < SMP_MAX_LFRAMES; j++) {
			ex[nex].at = kl[j].at;
			ex[nex].after = kl[j].trace_at != 0;
			lua_pframe(&kl[j], &ex[nex].f);
			nex++;
		}
		/* --frames lua: no kernel frames */
		uint32_t nk = c->frames == CLI_FRAMES_LUA ? 0 : k.nk;
		uint32_t nu = cli_user_frames(
		    c->u, k.pid, k.time, c->frames, fr, k.nframes, ex, nex,
		    all + nk, 2 * SMP_MAX_FRAMES + SMP_MAX_LFRAMES);
		if (k.nframes)
			cli_exes_add(&m->exes, uw_exe(c->u, k.pid));
		m->stop[stop]++;
		if (stop == SMP_STOP_OUTERMOST)
			m->complete++;
		trace |= trace_stop(stop); /* stopped at a trace's lookup */
		if (anon && !trace)
			m->unpub++;
		if (trace) {
			m->through++;
			if (main_)
				m->through_main++;
			else
				m->stop_through[stop]++;
		}
		if (c->dump) /* the Lua frames as the profiles have them */
			for (uint32_t i = nk; i < nk + nu; i++)
				if (all[i].kind == PF_LUA)
					fprintf(c->dump, "L %s %u\n",
						all[i].name ? all[i].name : "-",
						all[i].line);
		const char *comm = uw_comm(c->u, k.pid);
		uint32_t n = nk + nu;
		if ((n || k.nk + k.nframes) &&
		    prof_add(prof, all, n, 1, comm ? comm : "[unknown]"))
			return -ENOMEM;
	}
	return 0;
}

/* The VM-state profile (cli/vmstate.c) into DIR/vmprofile.json: each
 * kept sample's state, head/loop by the region's source map at its time,
 * traces named by their functions then. 0, or -1 after a message. */
static int write_vmprof(struct pctx *c, const char *adir, uint32_t hz,
			double secs)
{
	struct pf_vms v;
	memset(&v, 0, sizeof(v));
	v.hz = hz;
	v.seconds = secs;
	v.no_vmstate = c->no_vmstate;
	for (size_t i = 0; i < c->nvs; i++)
		if (cli_vmp_add(&v, c->u, &c->vs[i])) {
			fprintf(stderr, WHO ": out of memory\n");
			pf_vms_free(&v);
			return -1;
		}
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int rc = -1;
	if (m) {
		pf_vms_json(&v, m);
		if (!fclose(m)) {
			char path[PATH_MAX + 32];
			snprintf(path, sizeof(path), "%s/vmprofile.json", adir);
			int e = prof_write_file(path, buf, len);
			if (e)
				fprintf(stderr, WHO ": cannot write %s: %s\n",
					path, strerror(-e));
			rc = e ? -1 : 0;
		}
	}
	free(buf);
	pf_vms_free(&v);
	return rc;
}

/* ------------------------------------------------ running CMD */

/* Fork CMD with the module's environment (cli_vm_env, as `run` sets it;
 * its region DIR/region): it waits on *go until the sampler watches it,
 * then execs. Its pid, or -1. */
static pid_t spawn_cmd(char **argv, const char *adir, int *go, int *sync_r,
		       int *sync_w)
{
	char region[PATH_MAX + 16];
	snprintf(region, sizeof(region), "%s/region", adir);
	/* no jitdump: the region names every trace (docs/ABI.md 1.4), and
	 * a jitdump copies each trace's code to disk (flushstorm.lua at
	 * scale 5: 136 MB, the program 1.2x slower) */
	if (cli_vm_env(WHO, NULL, region, 1, 0) ||
	    setenv(JSF_ENV_LUAMAP, "1", 0)) /* as record: Lua frames */
		return -1;
	int fds[2], up[2] = {-1, -1}, down[2] = {-1, -1};
	if (pipe(fds))
		return -1;
	/* the module's word that it published the VM's layout (up), and
	 * this side's that the sampler has it (down): JSF_ENV_PROFILE_SYNC */
	char sync[32];
	if (!pipe(up) && !pipe(down)) {
		snprintf(sync, sizeof(sync), "%d,%d", up[1], down[0]);
		setenv(JSF_ENV_PROFILE_SYNC, sync, 1);
	}
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char b;
		if (up[0] >= 0)
			close(up[0]);
		if (down[1] >= 0)
			close(down[1]);
		close(fds[1]);
		if (read(fds[0], &b, 1) != 1)
			_exit(127);
		close(fds[0]);
		execvp(argv[0], argv);
		fprintf(stderr, WHO ": cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(fds[0]);
	*go = fds[1];
	unsetenv(JSF_ENV_PROFILE_SYNC);
	if (up[1] >= 0)
		close(up[1]);
	if (down[0] >= 0)
		close(down[0]);
	*sync_r = up[0];
	*sync_w = down[1];
	if (up[0] >= 0) {
		fcntl(up[0], F_SETFL, O_NONBLOCK);
		fcntl(up[0], F_SETFD, FD_CLOEXEC);
	}
	if (down[1] >= 0)
		fcntl(down[1], F_SETFD, FD_CLOEXEC);
	return pid;
}

/* CMD's objects' rows loaded before it runs: its program as execvp finds
 * it, what that needs, and the VM module. Read at its exec instead, its
 * samples would meet an empty table meanwhile (libc's rows alone take
 * ~200 ms to read here). */
static void preload_cmd(struct smp *s, const char *prog)
{
	char p[PATH_MAX];
	if (strchr(prog, '/')) {
		smp_preload(s, prog, 1);
	} else {
		const char *path = getenv("PATH");
		for (const char *d = path ? path : "/usr/bin:/bin"; *d;) {
			size_t n = strcspn(d, ":");
			snprintf(p, sizeof(p), "%.*s/%s", (int)n, d, prog);
			if (n && access(p, X_OK) == 0) {
				smp_preload(s, p, 1);
				break;
			}
			d += n + (d[n] == ':');
		}
	}
	if (cli_lua_dir(p, sizeof(p), "jitsframe.so") == 0) {
		size_t l = strlen(p);
		snprintf(p + l, sizeof(p) - l, "/jitsframe.so");
		smp_preload(s, p, 1);
	}
}

static int parse_pids(const char *list, int *out, int max)
{
	int n = 0;
	const char *p = list;
	while (*p) {
		char *e;
		long v = strtol(p, &e, 10);
		if (e == p || v <= 0 || v > INT32_MAX || (*e && *e != ',') ||
		    n == max)
			return -1;
		out[n++] = (int)v;
		p = *e ? e + 1 : e;
	}
	return n;
}

int cmd_profile(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"output", required_argument, 0, 'o'},
	    {"freq", required_argument, 0, 'F'},
	    {"duration", required_argument, 0, 'd'},
	    {"pid", required_argument, 0, 'p'},
	    {"all", no_argument, 0, 'a'},
	    {"check", required_argument, 0, 'c'},
	    {"frames", required_argument, 0, 'f'},
	    {"dump", required_argument, 0, 'D'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	const char *dir = "jitsframe-profile", *dumpf = NULL;
	uint64_t freq = 999, duration = 0, check = 0;
	int pids[MAXPIDS], npids = 0, all = 0, c, frames = CLI_FRAMES_MIXED;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+o:F:d:p:ah", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			dir = optarg;
			break;
		case 'F':
			if (!cli_u64(optarg, &freq) || !freq || freq > 100000) {
				fprintf(stderr,
					WHO ": -F wants 1..100000, not '%s'\n",
					optarg);
				return EX_USAGE;
			}
			break;
		case 'd':
			if (!cli_u64(optarg, &duration) || !duration ||
			    duration > 86400 * 365) {
				fprintf(stderr,
					WHO ": -d wants a number of seconds, "
					    "not '%s'\n",
					optarg);
				return EX_USAGE;
			}
			break;
		case 'p':
			npids = parse_pids(optarg, pids, MAXPIDS);
			if (npids <= 0) {
				fprintf(stderr,
					WHO ": -p wants PID[,PID...], not "
					    "'%s'\n",
					optarg);
				return EX_USAGE;
			}
			break;
		case 'a':
			all = 1;
			break;
		case 'D':
			dumpf = optarg;
			break;
		case 'c':
			if (!cli_u64(optarg, &check) || !check ||
			    check > UINT32_MAX) {
				fprintf(stderr,
					WHO ": --check wants N >= 1 (one "
					    "sample in N), not '%s'\n",
					optarg);
				return EX_USAGE;
			}
			break;
		case 'f':
			if ((frames = cli_frames_arg(optarg)) < 0) {
				fprintf(stderr,
					WHO ": --frames wants mixed, lua or "
					    "native, not '%s'\n",
					optarg);
				return EX_USAGE;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return EX_OK;
		default:
			return cli_bad_option("profile", argv[optind - 1]);
		}
	}
	int ncmd = argc - optind;
	if ((npids > 0) + all + (ncmd > 0) != 1) {
		fprintf(stderr,
			WHO ": give one of -p PID[,PID...], -a, or -- CMD\n"
			    "Try 'jitsframe profile --help'.\n");
		return EX_USAGE;
	}
	for (int i = 0; i < npids; i++) {
		char pp[32];
		snprintf(pp, sizeof(pp), "/proc/%d", pids[i]);
		if (access(pp, F_OK) != 0) {
			fprintf(stderr, WHO ": no process %d\n", pids[i]);
			return EX_INPUT;
		}
	}
	/* the sampler first: without it nothing runs, nothing is made */
	char msg[512] = "";
	struct smp_opts so = {.sz = sizeof(so),
			      .hz = (uint32_t)freq,
			      .raw_every = (uint32_t)check,
			      .all = all};
	struct pctx *cx = calloc(1, sizeof(*cx));
	if (!cx)
		return EX_INPUT;
	int rc = smp_open(&cx->s, &so, msg, sizeof(msg));
	if (rc) {
		fprintf(stderr, WHO ": cannot sample: %s%s\n",
			msg[0] ? msg : strerror(-rc),
			(rc == -EPERM || rc == -EACCES) && !strstr(msg, "CAP_")
			    ? " (run as root, or with CAP_BPF and "
			      "CAP_PERFMON)"
			    : "");
		free(cx);
		return EX_NOSAMPLE;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, WHO ": cannot create %s: %s\n", dir,
			strerror(errno));
		smp_close(cx->s);
		free(cx);
		return EX_INPUT;
	}
	char adir[PATH_MAX];
	if (!realpath(dir, adir)) {
		fprintf(stderr, WHO ": %s: %s\n", dir, strerror(errno));
		smp_close(cx->s);
		free(cx);
		return EX_INPUT;
	}
	cx->all = all;
	cx->frames = frames;
	cx->t = traces_new();
	cx->u = cx->t ? uw_new(cx->t, NULL) : NULL;
	if (!cx->u) {
		fprintf(stderr, WHO ": out of memory\n");
		smp_close(cx->s);
		traces_free(cx->t);
		free(cx);
		return EX_INPUT;
	}
	pid_t child = -1;
	int go = -1, sync_r = -1, sync_w = -1;
	if (ncmd)
		preload_cmd(cx->s, argv[optind]);
	if (ncmd) {
		char jd[PATH_MAX + 32];
		snprintf(jd, sizeof(jd), "%s/region", adir);
		unlink(jd);
		child = spawn_cmd(argv + optind, adir, &go, &sync_r, &sync_w);
		if (child < 0) {
			fprintf(stderr, WHO ": cannot run %s: %s\n",
				argv[optind], strerror(errno));
			rc = EX_FAIL;
			goto out;
		}
		pids[npids++] = (int)child;
	}
	for (int i = 0; i < npids; i++) {
		struct pinfo *q = pinfo_of(cx, (uint32_t)pids[i]);
		/* CMD: watched once it has exec'd (below) */
		int w = pids[i] == (int)child
			    ? 0
			    : smp_watch(cx->s, pids[i], NULL, msg, sizeof(msg));
		if (w && ncmd == 0) {
			fprintf(stderr, WHO ": pid %d: %s\n", pids[i], msg);
			rc = EX_INPUT;
			goto out;
		}
		if (q) {
			uw_proc_maps(cx->u, q->pid, NULL);
			find_region(cx, q, 0);
		}
	}
	struct sigaction sa = {.sa_handler = on_sigint}, old_int, old_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	uint64_t t0 = jsf_now_ns(), next_kids = 0;
	uint64_t end = duration ? t0 + duration * 1000000000ull : 0;
	if (go >= 0) {			    /* CMD may run now */
		if (write(go, "g", 1) != 1) /* it then exits at once */
			fprintf(stderr, WHO ": cannot start the command: %s\n",
				strerror(errno));
		close(go);
		go = -1;
		/* its exec: then the sampler's tables of the program itself
		 * (not of this one, which the child was until then) */
		char self[PATH_MAX], pe[64], exe[PATH_MAX];
		ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
		snprintf(pe, sizeof(pe), "/proc/%d/exe", (int)child);
		for (int i = 0; sl > 0 && i < 2000; i++) {
			ssize_t el = readlink(pe, exe, sizeof(exe) - 1);
			if (el < 0 || el != sl || memcmp(exe, self, (size_t)sl))
				break;
			usleep(500);
		}
		smp_watch(cx->s, (int)child, NULL, msg, sizeof(msg));
		uw_proc_maps(cx->u, (uint32_t)child, NULL);
	}
	int st = 0;
	bool exited = false;
	while (!stop_now && !cx->err) {
		/* the first 2 s drained every 10 ms (a new image's mappings,
		 * its region, a library mapped late: the samples that tell
		 * this side are read soon, and the sampler's tables made
		 * current for the next ones), then every 100 ms; every 1 ms
		 * while CMD's module waits for its word (below) */
		bool early = jsf_now_ns() - t0 < 2000000000ull;
		/* CMD's module started (its region made, the VM's layout
		 * published) and waits: the region now (the sampler then has
		 * the layout: the script's first samples get Lua frames;
		 * looked for on samples alone, it was found some 10 ms late,
		 * up to ~50 on a loaded machine), then its word */
		char sb[16];
		ssize_t sn = sync_r >= 0 ? read(sync_r, sb, sizeof(sb)) : -1;
		if (sn > 0 && child > 0) {
			struct pinfo *q = pinfo_of(cx, (uint32_t)child);
			if (q && !q->region) {
				q->next_find = 0;
				find_region(cx, q, jsf_now_ns());
			}
			if (write(sync_w, sb, (size_t)sn) != sn)
				sn = 0;
		}
		if (sn == 0) { /* the module's end closed */
			close(sync_r);
			close(sync_w);
			sync_r = sync_w = -1;
		}
		int pr = smp_poll(cx->s,
				  sync_r >= 0 ? 1
				  : early     ? 10
					      : 100,
				  on_sample, cx);
		if (pr < 0 && pr != -EINTR) {
			fprintf(stderr, WHO ": %s\n", strerror(-pr));
			break;
		}
		uint64_t now = jsf_now_ns();
		if (end && now >= end)
			break;
		/* CMD's exit, not reaped yet: its last samples are still to
		 * be read, and the sampler keeps a process it can see (its
		 * Lua frames need its layout and prototypes) */
		siginfo_t si = {0};
		if (child > 0 &&
		    !waitid(P_PID, (id_t)child, &si,
			    WEXITED | WNOHANG | WNOWAIT) &&
		    si.si_pid == child) {
			exited = true;
			break;
		}
		if (!all && !ncmd) { /* -p: stop when all are gone */
			int alive = 0;
			for (int i = 0; i < npids; i++)
				alive +=
				    kill(pids[i], 0) == 0 || errno != ESRCH;
			if (!alive)
				break;
		}
		if (ncmd && now >= next_kids) { /* CMD's children */
			next_kids = now + 250000000ull;
			int n0 = npids;
			for (int i = 0; i < n0; i++)
				cli_add_children(pids, &npids, MAXPIDS,
						 pids[i]);
			for (int i = n0; i < npids; i++)
				smp_watch(cx->s, pids[i], NULL, msg,
					  sizeof(msg));
		}
	}
	/* what is still in the ring */
	while (smp_poll(cx->s, 0, on_sample, cx) > 0 && !cx->err)
		;
	double run_s = (double)(jsf_now_ns() - t0) / 1e9;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (child > 0) {
		if (!exited && !stop_now && end)
			kill(child, SIGINT); /* -d ended it */
		while (waitpid(child, &st, 0) < 0 && errno == EINTR)
			;
	}
	struct smp_stats ss;
	smp_stats(cx->s, &ss);
	smp_close(cx->s);
	cx->s = NULL;
	/* names a region lacks (a producer before library 1.1): the
	 * jitdump of each process with a region, in DIR or beside its
	 * region; only its own (jitsframe-UID holds every process's, DIR an
	 * earlier run's) */
	for (size_t i = 0; i <= cx->njdirs; i++) {
		const char *d = i ? cx->jdirs[i - 1] : adir;
		char a[PATH_MAX];
		if (i && realpath(d, a) && !strcmp(a, adir))
			continue; /* DIR itself, read first */
		for (size_t k = 0; k < cx->np; k++)
			if (cx->p[k].region)
				traces_add_jitdump_of(cx->t, d, cx->p[k].pid);
	}
	if (dumpf && !(cx->dump = fopen(dumpf, "w")))
		fprintf(stderr, WHO ": cannot write %s: %s\n", dumpf,
			strerror(errno));
	struct prof *prof = prof_new(1000000000ull / freq);
	struct sumr *m = calloc(1, sizeof(*m));
	if (!prof || !m || symbolize_all(cx, prof, m)) {
		fprintf(stderr, WHO ": out of memory\n");
		rc = EX_FAIL;
		prof_free(prof);
		free(m);
		goto out;
	}
	if (m->exes.n)
		prof_set_main(prof, cli_exes_top(&m->exes));
	char wrote[1024] = "";
	rc = cli_write_profiles(prof, adir, WHO, wrote, sizeof(wrote));
	if (cx->nvs && write_vmprof(cx, adir, (uint32_t)freq, run_s))
		rc = EX_FAIL;
	else if (cx->nvs) {
		size_t wl = strlen(wrote);
		snprintf(wrote + wl, sizeof(wrote) - wl, " vmprofile.json");
	}
	printf(WHO ": %llu samples, %llu through trace code, %llu of them "
		   "(%.2f%%) unwound from main",
	       (unsigned long long)m->samples, (unsigned long long)m->through,
	       (unsigned long long)m->through_main,
	       m->through ? 100.0 * (double)m->through_main / (double)m->through
			  : 0.0);
	const char *sep = "; the rest stopped: ";
	for (int k = 0; k < SMP_STOP__N; k++)
		if (m->stop_through[k]) {
			printf("%s%s %llu", sep, smp_stop_name((unsigned)k),
			       (unsigned long long)m->stop_through[k]);
			sep = ", ";
		}
	if (m->unpub)
		printf(
		    "; %llu more in JIT code that no published trace covered",
		    (unsigned long long)m->unpub);
	if (m->unnamed)
		printf("; %llu trace frames this side's region view did not "
		       "hold (named TRACE@ADDR)",
		       (unsigned long long)m->unnamed);
	printf("; all samples: %llu complete to the outermost frame",
	       (unsigned long long)m->complete);
	if (ss.lost)
		printf(", %llu lost (ring full)", (unsigned long long)ss.lost);
	if (cx->fallback)
		printf("; %llu unwound here from their stack copy (the kernel "
		       "met a mapping or region it did not know yet)",
		       (unsigned long long)cx->fallback);
	if (wrote[0])
		printf("; wrote%s in %s", wrote, adir);
	printf("\n");
	if (check) {
		uint64_t dec = cx->agree + cx->differ;
		printf(WHO ": check: %llu of %llu raw copies (%.2f%%) agree "
			   "frame for frame with jitsframe's unwinder",
		       (unsigned long long)cx->agree, (unsigned long long)dec,
		       dec ? 100.0 * (double)cx->agree / (double)dec : 0.0);
		if (cx->undecided)
			printf("; %llu more undecided (the %u-byte copy ended "
			       "before the kernel's walk)",
			       (unsigned long long)cx->undecided,
			       (unsigned)SMP_RAW_STACK);
		if (cx->nomaps)
			printf("; %llu more this side could not place (the "
			       "process's mappings or region function were not "
			       "in its view)",
			       (unsigned long long)cx->nomaps);
		if (cx->short_walks)
			printf("; %llu more where the kernel's walk agreed up "
			       "to a mapping or region it did not know yet "
			       "and stopped (those samples unwound here)",
			       (unsigned long long)cx->short_walks);
		printf("\n");
		for (size_t i = 0; i < cx->ndiffs; i++)
			printf(WHO ": check: differs: %s\n", cx->diffs[i]);
	}
	fflush(stdout);
	if (cx->dump && fclose(cx->dump) && rc == EX_OK)
		rc = EX_FAIL;
	cx->dump = NULL;
	cli_exes_free(&m->exes);
	free(m);
	prof_free(prof);
	if (child > 0 && exited && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
		if (WIFSIGNALED(st))
			fprintf(stderr,
				WHO ": the command was killed by signal %d "
				    "(%s); the profile above covers what ran\n",
				WTERMSIG(st), strsignal(WTERMSIG(st)));
		else
			fprintf(stderr,
				WHO ": the command exited with status %d; "
				    "the profile above covers what ran\n",
				WEXITSTATUS(st));
		rc = EX_FAIL;
	}
out:
	if (go >= 0 && child > 0 && rc != EX_OK) {
		close(go); /* a CMD that never started: it exits */
		waitpid(child, NULL, 0);
	}
	if (cx->s)
		smp_close(cx->s);
	if (cx->dump)
		fclose(cx->dump);
	uw_free(cx->u);
	traces_free(cx->t);
	free(cx->p);
	free(cx->a);
	free(cx->vs);
	prof_intern_free(cx->labels);
	free(cx);
	return rc;
}
