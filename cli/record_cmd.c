/* SPDX-License-Identifier: MIT */
/*
 * `jitsframe record [-o DIR] [--freq HZ] [--] CMD...`: the whole perf job.
 *   perf record -k 1 --call-graph dwarf -- CMD, with the environment of
 *   `jitsframe run` (region + jitdump into DIR)  ->  perf inject --jit  -> perf
 * script  ->  folded stacks and a flame graph, and one summary line.
 *   DIR keeps one copy of the samples (the injected perf.data: jitsframe
 *   report reads it as it reads the raw one) and, of perf's build-id cache,
 *   only the kernel symbols the report uses; it ends with its size.
 * `jitsframe record -p PID[,PID...] [-d S] [--service]`: the same on running
 *   processes, their regions found by the discovery convention
 *   (jsf_region_find, docs/ABI.md §8) and copied into DIR.
 */
#include "auditlog.h"
#include "cli.h"
#include "jitdump.h"
#include "jitsframe.h"
#include "jsfenv.h"
#include "profile.h"
#include "unwind.h"

#include <dirent.h>
#include <ftw.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "Usage: jitsframe record [-o DIR] [--freq HZ] [--stack BYTES] [--] CMD...\n"
    "       jitsframe record -p PID[,PID...] [--service] [-d SECONDS] [-o "
    "DIR]\n"
    "                        [--freq HZ] [--stack BYTES]\n"
    "\n"
    "Profile a LuaJIT program with perf, through its traces. Leaves in DIR\n"
    "(default ./jitsframe-record):\n"
    "  perf.data        the samples, injected with the traces: for `perf\n"
    "                   report -i` and `jitsframe report` (the one copy)\n"
    "  perf.data.raw    as recorded, instead, with --no-inject (also with\n"
    "                   --keep-all)\n"
    "  region           the unwind rows (jitsframe region dump)\n"
    "  region-PID       a forked child's (collected from its default\n"
    "                   directory where it could not write into DIR); for\n"
    "                   RaptorJIT, made from its auditlog after the run\n"
    "  auditlog         RaptorJIT's own log: CMD is given -a DIR/auditlog\n"
    "                   unless it names one itself (docs/RAPTORJIT.md)\n"
    "  jit-PID.dump     perf's jitdump; jitted-PID-N.so (perf inject)\n"
    "  .debug           the recorded kernel's symbols (perf's build-id\n"
    "                   cache): those the profiles' kernel frames name\n"
    "                   (all of them, and its copies of the binaries,\n"
    "                   with --keep-all)\n"
    "  stacks.folded    folded stacks, trace frames suffixed _[j], their\n"
    "                   Lua frames (chunk:line) _[l]\n"
    "  flamegraph.svg   a flame graph of them (and flamegraph.html,\n"
    "                   profile.pb.gz: pprof)\n"
    "made by `jitsframe report DIR` (jitsframe's own unwinder)\n"
    "and prints one summary line, then the directory's size. RaptorJIT\n"
    "(a program defining lj_auditlog_open) is run without the module and\n"
    "unwound from its auditlog instead. Needs perf\n"
    "(Debian: linux-perf) and kernel.perf_event_paranoid <= 2 (or root).\n"
    "\n"
    "  -o, --output DIR  where to put it all\n"
    "  -F, --freq HZ     sampling frequency (default 999)\n"
    "  --stack BYTES     user stack copied per sample (default 32768; traces\n"
    "                    in nested VM entries can sit >8 KB below main)\n"
    "  --perf-script     make the profile from `perf script` (perf's own\n"
    "                    unwinding of the injected perf.data) instead\n"
    "  --no-inject       skip `perf inject --jit` (no perf.data for perf\n"
    "                    report; it takes minutes when there are thousands\n"
    "                    of traces): the report reads perf.data.raw\n"
    "  --keep-all        keep perf.data.raw beside perf.data, and perf's\n"
    "                    build-id cache whole (copies of every sampled\n"
    "                    binary): about twice the disk\n"
    "  -p, --pid LIST    attach to running processes instead of running CMD\n"
    "                    (they must have started jitsframe themselves); then\n"
    "                    copy each one's region (found as docs/ABI.md 8\n"
    "                    says: its mappings, BASE/jitsframe-UID/PID.region,\n"
    "                    BASE $TMPDIR, else /dev/shm, /tmp) to\n"
    "                    DIR/region-PID, and its jitdump\n"
    "  --service         with -p MASTER: also every current child of MASTER\n"
    "                    (e.g. nginx's workers)\n"
    "  -d, --duration S  with -p: stop after S seconds (default: at ^C, or\n"
    "                    when all the processes have exited)\n"
    "\n"
    "Exit status: 0 recorded; 1 CMD failed (could not run, exited non-zero,\n"
    "crashed: what was recorded is still processed and kept) or the profile\n"
    "could not be made; 2 usage; 3 perf missing or not permitted.\n";

/* Run argv (with stdout/stderr as given, -1: inherit); wait; status. */
static int spawn(char *const argv[], int out_fd, int err_fd)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (out_fd >= 0)
			dup2(out_fd, 1);
		if (err_fd >= 0)
			dup2(err_fd, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	/* While perf runs, ^C goes to it (and to CMD): we wait for them. */
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_term;
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGTERM, &ign, &old_term);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return st;
}

static int find_in_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		const char *e = strchr(path, ':');
		size_t n = e ? (size_t)(e - path) : strlen(path);
		snprintf(out, len, "%.*s/%s", (int)n, path, name);
		if (n && access(out, X_OK) == 0)
			return 0;
		path += n + (e ? 1 : 0);
	}
	return -1;
}

static void tail_file(const char *path, const char *prefix)
{
	FILE *f = fopen(path, "r");
	char line[512];
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "%s%s", prefix, line);
	fclose(f);
}

static void add_load(const struct jd_load *l, void *ctx)
{
	folded_add_load(ctx, l->pid, l->index, l->ts, l->code_addr, l->lo,
			l->hi, l->name);
}

/* ------------------------------------------------ collecting the regions
 * A forked worker that switched to another user cannot write into DIR: the
 * module then publishes at its per-user default path (docs/ABI.md section
 * 8, BASE/jitsframe-UID/PID.region, its jitdump beside it).
 * After the recording, every sampled process whose region is not in DIR
 * gets it copied there as DIR/region-PID (and DIR/jit-PID.dump), so that
 * the report (and a later `jitsframe report DIR`) finds it. */

struct sampled {
	uint32_t *pid;
	char (*comm)[32];
	size_t n, cap;
};

static int sampled_ix(struct sampled *sp, uint32_t pid, int add)
{
	for (size_t i = 0; i < sp->n; i++)
		if (sp->pid[i] == pid)
			return (int)i;
	if (!add)
		return -1;
	if (sp->n == sp->cap) {
		size_t cap = sp->cap ? 2 * sp->cap : 16;
		uint32_t *p = realloc(sp->pid, cap * sizeof(*p));
		if (p)
			sp->pid = p;
		char(*c)[32] = realloc(sp->comm, cap * sizeof(*c));
		if (c)
			sp->comm = c;
		if (!p || !c || cap > 65536)
			return -1;
		sp->cap = cap;
	}
	sp->pid[sp->n] = pid;
	snprintf(sp->comm[sp->n], sizeof(sp->comm[0]), "?");
	return (int)sp->n++;
}

static int on_sampled(const struct pd_event *e, void *ctx)
{
	struct sampled *sp = ctx;
	int i;
	if (e->kind == PD_SAMPLE)
		sampled_ix(sp, e->u.s.pid, 1);
	else if (e->kind == PD_COMM &&
		 (i = sampled_ix(sp, e->u.comm.pid, 1)) >= 0)
		snprintf(sp->comm[i], sizeof(sp->comm[0]), "%s",
			 e->u.comm.comm);
	else if (e->kind == PD_FORK && e->u.fork.pid != e->u.fork.ppid &&
		 (i = sampled_ix(sp, e->u.fork.ppid, 0)) >= 0) {
		/* a child process has its parent's name until it execs */
		char comm[32];
		snprintf(comm, sizeof(comm), "%s", sp->comm[i]);
		if ((i = sampled_ix(sp, e->u.fork.pid, 1)) >= 0)
			snprintf(sp->comm[i], sizeof(sp->comm[0]), "%s", comm);
	}
	return 0;
}

/* The producer of the region at path, or 0 (none, unreadable). */
static uint32_t region_pid(const char *path, uint64_t *create_ns)
{
	struct jsf_view *v;
	struct jsf_view_info vi = {.sz = sizeof(vi)};
	if (jsf_view_open(&v, path))
		return 0;
	int err = jsf_view_info(v, &vi);
	jsf_view_close(v);
	if (create_ns)
		*create_ns = vi.create_ns;
	return err ? 0 : vi.producer_pid;
}

/* After the report: the processes that ran JIT code but published no
 * region, and why that is so in a host that embeds LuaJIT. */
static void noreg_note(const struct report_noreg *nr, size_t n)
{
	char moddir[PATH_MAX + 8];
	if (cli_lua_dir(moddir, sizeof(moddir), "jitsframe.so") < 0)
		snprintf(moddir, sizeof(moddir), "DIR");
	for (size_t k = 0; k < n; k++)
		printf("jitsframe record: pid %u (%s): trace code sampled, no "
		       "region: the module did not start in it. LUA_INIT "
		       "(set by record) is run by the luajit command only; "
		       "ngx_lua ignores LUA_INIT: call "
		       "require('jitsframe').start() in init_by_lua_block "
		       "(with lua_package_cpath \"%s/?.so;;\"); another host: "
		       "call it where the host first runs Lua\n",
		       nr[k].pid, nr[k].comm, moddir);
	fflush(stdout);
}

/* The pids of LIST ("1,2,3") into out (at most max); count, or -1. */
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

/* Read [0, size) of fd into buf (zeroed), only its data: a region's
 * capacity is mostly holes (docs/ABI.md 3.6). Where SEEK_DATA is not
 * supported, every byte. The bytes read, or -1. */
static ssize_t read_data(int fd, char *buf, off_t size)
{
	off_t at = 0;
	ssize_t got = 0;
	while (at < size) {
		off_t d = lseek(fd, at, SEEK_DATA), e;
		if (d < 0 && errno == ENXIO)
			break; /* a hole to the end */
		if (d < 0) {
			d = at; /* no SEEK_DATA here: all of it */
			e = size;
		} else if ((e = lseek(fd, d, SEEK_HOLE)) < 0 || e > size) {
			e = size;
		}
		if (d >= size)
			break;
		while (d < e) {
			ssize_t r = pread(fd, buf + d, (size_t)(e - d), d);
			if (r <= 0)
				return -1;
			d += r;
			got += r;
		}
		at = e;
	}
	return got;
}

/* Write buf[0, n) to fd with its all-zero 4 KiB pages left as holes. */
static int write_sparse(int fd, const char *buf, size_t n)
{
	static const char zero[4096];
	for (size_t o = 0; o < n; o += sizeof(zero)) {
		size_t l = n - o < sizeof(zero) ? n - o : sizeof(zero);
		if (!memcmp(buf + o, zero, l))
			continue;
		if (pwrite(fd, buf + o, l, (off_t)o) != (ssize_t)l)
			return -EIO;
	}
	return ftruncate(fd, (off_t)n) < 0 ? -errno : 0;
}

/* Copy a file, its holes kept; a region (seq_check) as one consistent
 * generation: the header's seq (docs/ABI.md: u64 at offset 72) even and
 * unchanged across the read, a few tries (a live producer may be
 * rewriting it). */
static int copy_file(const char *src, const char *dst, int seq_check)
{
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char *buf = NULL;
	off_t size = 0;
	ssize_t got = -1;
	for (int tries = 0; tries < 100; tries++) {
		uint64_t s1 = 1, s2 = 2;
		struct stat st;
		got = -1;
		if (seq_check && pread(fd, &s1, 8, 72) != 8)
			break;
		if (fstat(fd, &st) < 0)
			break;
		free(buf);
		size = st.st_size;
		buf = calloc((size_t)size + 1, 1);
		if (!buf)
			break;
		got = read_data(fd, buf, size);
		if (got < 0)
			break;
		if (!seq_check ||
		    (pread(fd, &s2, 8, 72) == 8 && s1 == s2 && !(s1 & 1)))
			break;
		struct timespec ts = {0, 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	close(fd);
	int err = got < 0 ? -EIO : 0;
	int out =
	    err ? -1
		: open(dst, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	if (!err && out < 0)
		err = -errno;
	if (!err)
		err = write_sparse(out, buf, (size_t)size);
	if (out >= 0)
		close(out);
	free(buf);
	return err;
}

/* The jitdump beside a collected region (src: its path), when it is P's
 * (header pid) and DIR has none: copied as DIR/jit-P.dump. */
static void collect_jitdump(const char *src_region, uint32_t pid,
			    const char *adir)
{
	char src[PATH_MAX + 64], dst[PATH_MAX + 64];
	const char *slash = strrchr(src_region, '/');
	struct stat sb;
	if (!slash || !strncmp(src_region, "/proc/", 6))
		return;
	snprintf(src, sizeof(src), "%.*s/jit-%u.dump",
		 (int)(slash - src_region), src_region, pid);
	snprintf(dst, sizeof(dst), "%s/jit-%u.dump", adir, pid);
	if (stat(dst, &sb) == 0 || lstat(src, &sb) < 0 || !S_ISREG(sb.st_mode))
		return;
	int fd = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	unsigned char h[24];
	uint32_t hp = 0;
	if (fd >= 0 && read(fd, h, sizeof(h)) == (ssize_t)sizeof(h))
		memcpy(&hp, h + 20, 4); /* jitdump header: pid at 20 */
	if (fd >= 0)
		close(fd);
	int err = hp == pid ? copy_file(src, dst, 0) : -ESRCH;
	if (err)
		printf("jitsframe record: pid %u: could not collect "
		       "its jitdump "
		       "%s: %s\n",
		       pid, src,
		       err == -ESRCH ? "another process's" : strerror(-err));
}

/* Every process of the recording whose region DIR lacks (the sampled
 * ones, and the attached ones), found by the convention of docs/ABI.md
 * section 8 (jsf_region_find: its mappings while it runs, else the
 * per-user default directories of every UID, producer_pid checked),
 * copied into DIR as region-PID, one consistent generation, with its
 * jitdump: DIR is then self-contained. With `after` (a recorded
 * command: its processes all started after it), a region created before
 * it is a reused pid's and is refused. Says what it collected and from
 * where, and what it could not, with the reason. */
static void collect_regions(const char *adir, const char *raw, const int *pids,
			    int npids, uint64_t after)
{
	struct sampled sp = {0};
	struct perfdata *pd;
	char err[256];
	if (pd_open(&pd, raw, err, sizeof(err)) == 0) {
		pd_each(pd, on_sampled, &sp, err, sizeof(err));
		pd_close(pd);
	}
	for (int i = 0; i < npids; i++)
		sampled_ix(&sp, (uint32_t)pids[i], 1);
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/region", adir);
	uint32_t main_pid = region_pid(p, NULL);
	char got[1024] = "";
	size_t gl = 0, ngot = 0;
	for (size_t i = 0; i < sp.n; i++) {
		uint32_t pid = sp.pid[i];
		struct stat sb;
		snprintf(p, sizeof(p), "%s/region-%u", adir, pid);
		if (pid == main_pid || stat(p, &sb) == 0)
			continue;
		char src[PATH_MAX], tmpd[PATH_MAX + 80];
		int e = jsf_region_find((int)pid, 0, src, sizeof(src));
		if (e == -ENOENT)
			continue; /* no region: report names it, with
				     the fix */
		const char *why = NULL;
		uint64_t cns = 0;
		snprintf(tmpd, sizeof(tmpd), "%s.collecting", p);
		if (e)
			why = jsf_strerror(e);
		else if ((e = copy_file(src, tmpd, 1)))
			why = strerror(-e);
		else if (region_pid(tmpd, &cns) != pid)
			why = "not that process's (producer pid differs)";
		else if (after && cns < after)
			why = "older than this recording (a reused pid)";
		else if (rename(tmpd, p) < 0)
			why = strerror(errno);
		unlink(tmpd);
		if (why) {
			printf("jitsframe record: pid %u (%s): could not "
			       "collect its region%s%s: %s\n",
			       pid, sp.comm[i], e ? "" : " ", e ? "" : src,
			       why);
			continue;
		}
		collect_jitdump(src, pid, adir);
		gl += (size_t)snprintf(got + gl, sizeof(got) - gl,
				       "%s pid %u (%s) from %s",
				       ngot ? "," : "", pid, sp.comm[i], src);
		if (gl >= sizeof(got))
			gl = sizeof(got) - 1;
		ngot++;
	}
	if (ngot)
		printf("jitsframe record: collected %zu region%s written "
		       "outside %s into it as region-PID:%s\n",
		       ngot, ngot > 1 ? "s" : "", adir, got);
	fflush(stdout);
	free(sp.pid);
	free(sp.comm);
}

/* perf record -p on running processes (with --service, also the current
 * children of each); *t0 gets the time the recording starts. perf's
 * status, or -1 (a message printed). */
static int attach(char *perf, char *bid, char *cg, char *freq_s, char *raw,
		  int *pids, int *npids, int max, int service,
		  uint64_t duration, uint64_t *t0)
{
	int n0 = *npids;
	for (int i = 0; service && i < n0; i++)
		cli_add_children(pids, npids, max, pids[i]);
	char list[256 * 12] = "";
	size_t len = 0;
	for (int i = 0; i < *npids; i++) {
		char pp[32];
		snprintf(pp, sizeof(pp), "/proc/%d", pids[i]);
		if (access(pp, F_OK) != 0) {
			fprintf(stderr,
				"jitsframe record: no process %d; "
				"nothing was "
				"recorded.\n",
				pids[i]);
			return -1;
		}
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d",
					i ? "," : "", pids[i]);
	}
	if (service && *npids > n0)
		fprintf(stderr, "jitsframe record: attaching to %s\n", list);
	/* -d: `sleep S` as perf's workload, so that the S seconds start
	 * once perf has attached (that takes a second or more); perf
	 * also stops when every process it follows has exited */
	char secs[32];
	snprintf(secs, sizeof(secs), "%llu", (unsigned long long)duration);
	char *av[] = {perf,    "--buildid-dir",
		      bid,     "record",
		      "-q",    "-k",
		      "1",     "--call-graph",
		      cg,      "-F",
		      freq_s,  "-o",
		      raw,     "-p",
		      list,    duration ? "--" : NULL,
		      "sleep", secs,
		      NULL};
	unlink(raw);
	*t0 = jsf_now_ns();
	return spawn(av, -1, -1);
}

/* RaptorJIT's region from its auditlog, after the run: DIR/region-PID for
 * the recording's first process that mapped the RaptorJIT binary (perf
 * started CMD: that is CMD's process, the one -a gave the log to), created
 * at the recording's start. An exit code (the report is made either way:
 * without the region its trace samples stop at the trace). */
static int rj_region(const char *adir, const char *raw, const char *exe,
		     const char *log, uint64_t t0)
{
	struct cli_rj_proc *p = malloc(sizeof(*p));
	char err[256] = "";
	int n = p ? cli_rj_procs(raw, exe, p, 1, NULL, err, sizeof(err)) : -1;
	if (n <= 0) {
		fprintf(stderr, "jitsframe record: %s: %s; no region from %s\n",
			raw,
			n < 0 ? err : "no process mapped the RaptorJIT program",
			log);
		free(p);
		return EX_FAIL;
	}
	char out[PATH_MAX + 32];
	snprintf(out, sizeof(out), "%s/region-%u", adir, p->pid);
	struct cli_rj_args a = {.who = "jitsframe record",
				.log = log,
				.binary = exe,
				.out = out,
				.jdir = adir,
				.pid = p->pid,
				.create_ns = t0};
	free(p);
	struct rj_log *l;
	int rc = cli_rj_open(a.who, log, &l);
	if (!rc)
		rc = cli_rj_region(&a, l, NULL);
	rj_log_close(l);
	return rc;
}

/* ------------------------------------------------ a lean directory
 * perf record fills the recording's build-id cache (DIR/.debug) with
 * copies of every sampled binary and its debug file (12 of the demo's
 * 39 MB), perf inject adds each jitted-PID-N.so again. Once the profile
 * is made nothing reads them: `perf report -i DIR/perf.data` uses the
 * binaries where perf.data names them (and ~/.debug), jitsframe report
 * only the recorded kernel's kallsyms, which report_run then reduces to
 * the symbols the profiles name (ksyms_trim). The rest of the cache goes. */
static const char *prune_keep; /* DIR/.debug/[kernel.kallsyms] */

static int prune_one(const char *p, const struct stat *sb, int flag,
		     struct FTW *ftw)
{
	(void)sb;
	size_t kl = strlen(prune_keep);
	if (ftw->level == 0 ||
	    (!strncmp(p, prune_keep, kl) && (!p[kl] || p[kl] == '/')))
		return 0;
	if (flag == FTW_DP)
		rmdir(p); /* not empty: it holds what is kept */
	else
		unlink(p);
	return 0;
}

static void prune_cache(const char *adir)
{
	char bid[PATH_MAX + 32], keep[PATH_MAX + 64];
	snprintf(bid, sizeof(bid), "%s/.debug", adir);
	snprintf(keep, sizeof(keep), "%s/[kernel.kallsyms]", bid);
	prune_keep = keep;
	nftw(bid, prune_one, 16, FTW_DEPTH | FTW_PHYS);
	prune_keep = NULL;
}

static uint64_t du_bytes;
static struct du_link {
	dev_t dev;
	ino_t ino;
	off_t size;
} * du_links; /* files with more names than one: counted once, as du does */
static size_t du_nlinks, du_cap;

static int du_one(const char *p, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)p, (void)flag, (void)ftw;
	if (!S_ISDIR(sb->st_mode) && sb->st_nlink > 1) {
		if (du_nlinks == du_cap) {
			size_t cap = du_cap ? 2 * du_cap : 256;
			struct du_link *l = realloc(du_links, cap * sizeof(*l));
			if (!l)
				return 1;
			du_links = l;
			du_cap = cap;
		}
		du_links[du_nlinks++] =
		    (struct du_link){sb->st_dev, sb->st_ino, sb->st_size};
		return 0;
	}
	du_bytes += (uint64_t)sb->st_size;
	return 0;
}

static int du_cmp(const void *a, const void *b)
{
	const struct du_link *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The last line: what DIR takes (apparent bytes of everything in it, as
 * `du -sb` counts them), and the samples' share. */
static void dir_size(const char *adir, const char *samples)
{
	struct stat sb;
	du_bytes = 0;
	du_nlinks = 0;
	nftw(adir, du_one, 16, FTW_PHYS);
	if (du_nlinks)
		qsort(du_links, du_nlinks, sizeof(*du_links), du_cmp);
	for (size_t i = 0; i < du_nlinks; i++)
		if (!i || du_cmp(&du_links[i - 1], &du_links[i]))
			du_bytes += (uint64_t)du_links[i].size;
	free(du_links);
	du_links = NULL;
	du_cap = 0;
	uint64_t s = stat(samples, &sb) == 0 ? (uint64_t)sb.st_size : 0;
	printf("jitsframe record: %s: %.1f MB (%llu bytes; %s %.1f MB)\n", adir,
	       (double)du_bytes / 1e6, (unsigned long long)du_bytes,
	       strrchr(samples, '/') + 1, (double)s / 1e6);
	fflush(stdout);
}

/* After the profile: the lean directory (unless --keep-all), its size. */
static int finish(const char *adir, const char *samples, int keep_all, int rc)
{
	if (!keep_all)
		prune_cache(adir);
	dir_size(adir, samples);
	return rc;
}

int cmd_record(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"output", required_argument, 0, 'o'},
	    {"freq", required_argument, 0, 'F'},
	    {"stack", required_argument, 0, 's'},
	    {"perf-script", no_argument, 0, 'P'},
	    {"no-inject", no_argument, 0, 'N'},
	    {"keep-all", no_argument, 0, 'K'},
	    {"pid", required_argument, 0, 'p'},
	    {"duration", required_argument, 0, 'd'},
	    {"service", no_argument, 0, 'S'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	const char *dir = "jitsframe-record";
	uint64_t freq = 999, stack = 32768;
	int c, perf_script = 0, no_inject = 0, service = 0, keep_all = 0;
	enum { MAXPIDS = 256 };
	int pids[MAXPIDS], npids = 0;
	uint64_t duration = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+o:F:p:d:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			npids = parse_pids(optarg, pids, MAXPIDS);
			if (npids <= 0) {
				fprintf(stderr,
					"jitsframe record: -p wants "
					"PID[,PID...], not '%s'\n",
					optarg);
				return EX_USAGE;
			}
			break;
		case 'd':
			if (!cli_u64(optarg, &duration) || !duration ||
			    duration > 86400 * 365) {
				fprintf(stderr,
					"jitsframe record: -d wants a "
					"number "
					"of seconds, not '%s'\n",
					optarg);
				return EX_USAGE;
			}
			break;
		case 'S':
			service = 1;
			break;
		case 'o':
			dir = optarg;
			break;
		case 'F':
			if (!cli_u64(optarg, &freq) || !freq || freq > 100000) {
				fprintf(stderr,
					"jitsframe record: --freq "
					"wants 1..100000, "
					"not '%s'\n",
					optarg);
				return EX_USAGE;
			}
			break;
		case 's':
			if (!cli_u64(optarg, &stack) || stack < 8 ||
			    stack > 65528 || stack % 8) {
				fprintf(stderr,
					"jitsframe record: --stack wants a "
					"multiple "
					"of 8 in 8..65528, not '%s'\n",
					optarg);
				return EX_USAGE;
			}
			break;
		case 'P':
			perf_script = 1;
			break;
		case 'N':
			no_inject = 1;
			break;
		case 'K':
			keep_all = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return EX_OK;
		default:
			return cli_bad_option("record", argv[optind - 1]);
		}
	}
	if (perf_script && no_inject) {
		fprintf(stderr, "jitsframe record: --perf-script reads "
				"the injected "
				"perf.data: not with --no-inject\n");
		return EX_USAGE;
	}
	if (npids && optind < argc) {
		fprintf(stderr, "jitsframe record: -p attaches to running "
				"processes: not with a command\n");
		return EX_USAGE;
	}
	if (!npids && (duration || service)) {
		fprintf(stderr, "jitsframe record: %s needs -p\n",
			duration ? "-d" : "--service");
		return EX_USAGE;
	}
	if (!npids && optind >= argc) {
		fprintf(stderr, "jitsframe record: no command given\n"
				"Try 'jitsframe record --help'.\n");
		return EX_USAGE;
	}
	char perf[PATH_MAX];
	if (find_in_path("perf", perf, sizeof(perf))) {
		fprintf(stderr,
			"jitsframe record: perf not found in PATH. Install "
			"it (Debian: apt-get install linux-perf).\n");
		return EX_INPUT;
	}
	FILE *pf = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int paranoid = 0;
	if (pf) {
		if (fscanf(pf, "%d", &paranoid) != 1)
			paranoid = 0;
		fclose(pf);
	}
	if (geteuid() != 0 && paranoid > 2) {
		fprintf(stderr,
			"jitsframe record: kernel.perf_event_paranoid "
			"is %d, "
			"which forbids profiling. Allow it with\n"
			"  sudo sysctl kernel.perf_event_paranoid=2\n"
			"or run as root.\n",
			paranoid);
		return EX_INPUT;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "jitsframe record: cannot create %s: %s\n", dir,
			strerror(errno));
		return EX_INPUT;
	}
	char adir[PATH_MAX];
	if (!realpath(dir, adir)) {
		fprintf(stderr, "jitsframe record: %s: %s\n", dir,
			strerror(errno));
		return EX_INPUT;
	}
	char raw[PATH_MAX + 32], data[PATH_MAX + 32], region[PATH_MAX + 32],
	    folded_p[PATH_MAX + 32], svg[PATH_MAX + 32], log[PATH_MAX + 32];
	snprintf(raw, sizeof(raw), "%s/perf.data.raw", adir);
	snprintf(data, sizeof(data), "%s/perf.data", adir);
	snprintf(region, sizeof(region), "%s/region", adir);
	snprintf(folded_p, sizeof(folded_p), "%s/stacks.folded", adir);
	snprintf(svg, sizeof(svg), "%s/flamegraph.svg", adir);
	snprintf(log, sizeof(log), "%s/perf.log", adir);
	setenv(JSF_ENV_JITDUMP, adir, 1);
	/* a profiling session: each trace's Lua frames and guard lines too
	 * (perf's srcline, report's Lua frames), unless the user said */
	setenv(JSF_ENV_LUAMAP, "1", 0);
	/* perf keeps a build-id cache (~/.debug) and prefers it to the
	 * files named in perf.data. The jitted-PID-N.so of other
	 * recordings can share build-ids with ours and would then be
	 * read instead (seen: whole runs unwinding through stale unwind
	 * data). Each recording gets its own cache. */
	char bid[PATH_MAX + 32];
	snprintf(bid, sizeof(bid), "%s/.debug", adir);
	char freq_s[32], cg[64];
	snprintf(freq_s, sizeof(freq_s), "%llu", (unsigned long long)freq);
	snprintf(cg, sizeof(cg), "dwarf,%llu", (unsigned long long)stack);
	/* 1. record. CMD runs directly under perf with the module's
	 * environment set here: were it exec'd through `jitsframe run`,
	 * perf would first see this program's image in the same pid,
	 * and its libunwind-based unwinder then fails, for a whole
	 * recording at a time, to look up libc's unwind table (seen:
	 * every FFI-callback chain through qsort stopping in
	 * msort_with_tmp, in 5 of 6 runs; 0 of 6 when launched
	 * directly). */
	int st;
	uint64_t t0 = 0;
	int rj = CLI_RJ_NO;
	char rjexe[PATH_MAX] = "", rjlog[2 * PATH_MAX + 32] = "";
	const char *user_log = NULL;
	if (npids) {
		st = attach(perf, bid, cg, freq_s, raw, pids, &npids, MAXPIDS,
			    service, duration, &t0);
		if (st < 0)
			return EX_INPUT;
		goto recorded;
	}
	char cmdpath[PATH_MAX];
	const char *cmd = argv[optind];
	if (strchr(cmd, '/')
		? access(cmd, X_OK) != 0
		: find_in_path(cmd, cmdpath, sizeof(cmdpath)) != 0) {
		fprintf(stderr,
			"jitsframe record: cannot run %s: %s; the command "
			"could not be run, nothing was recorded.\n",
			cmd,
			strchr(cmd, '/') ? strerror(errno)
					 : "not found in PATH");
		return EX_FAIL;
	}
	/* RaptorJIT (docs/RAPTORJIT.md): no module (it has no jit.attach
	 * nor jit.util); its own auditlog instead, the one its command line
	 * names, else DIR/auditlog (-a), and the region made from it after
	 * the run */
	int nargs = argc - optind;
	const char *exe_path = strchr(cmd, '/') ? cmd : cmdpath;
	rj = cli_rj_kind(exe_path);
	if (rj == CLI_RJ_EMBED) {
		fprintf(stderr,
			"jitsframe record: %s embeds RaptorJIT but is not its "
			"standalone command (no -a option to give it an "
			"auditlog): record it with `perf record -k 1 "
			"--call-graph dwarf -p PID` and make the profile with "
			"`jitsframe report --auditlog LOG DIR` "
			"(docs/RAPTORJIT.md)\n",
			cmd);
		return EX_USAGE;
	}
	if (rj == CLI_RJ_CLI) {
		char cwd[PATH_MAX];
		if (!realpath(exe_path, rjexe) || !getcwd(cwd, sizeof(cwd))) {
			fprintf(stderr, "jitsframe record: %s: %s\n", cmd,
				strerror(errno));
			return EX_INPUT;
		}
		user_log = cli_rj_user_log(argv + optind, nargs);
		if (user_log && user_log[0] == '/')
			snprintf(rjlog, sizeof(rjlog), "%s", user_log);
		else if (user_log)
			snprintf(rjlog, sizeof(rjlog), "%s/%s", cwd, user_log);
		else
			snprintf(rjlog, sizeof(rjlog), "%s/auditlog", adir);
		/* RaptorJIT crashes on a log it cannot open: DIR exists;
		 * a stale log of an earlier recording goes */
		if (!user_log)
			unlink(rjlog);
	} else {
		int erc = cli_vm_env("jitsframe record", NULL, region, 1, 0);
		if (erc)
			return erc;
	}
	char **av = calloc((size_t)nargs + 32, sizeof(*av));
	int k = 0;
	av[k++] = perf;
	av[k++] = "--buildid-dir";
	av[k++] = bid;
	av[k++] = "record";
	av[k++] = "-q";
	av[k++] = "-k";
	av[k++] = "1";
	av[k++] = "--call-graph";
	av[k++] = cg;
	av[k++] = "-F";
	av[k++] = freq_s;
	av[k++] = "-o";
	av[k++] = raw;
	av[k++] = "--";
	for (int i = 0; i < nargs; i++) {
		av[k++] = argv[optind + i];
		if (i == 0 && rj == CLI_RJ_CLI && !user_log) {
			av[k++] = "-a";
			av[k++] = rjlog;
		}
	}
	av[k] = NULL;
	unlink(raw);
	t0 = jsf_now_ns();
	st = spawn(av, -1, -1);
	free(av);
recorded:;
	struct stat sb;
	int have_data = stat(raw, &sb) == 0 && sb.st_size > 0;
	const char *cmd_note = NULL;
	char note[160];
	if (npids) {
		/* perf's status only: the processes are not ours */
	} else if (WIFSIGNALED(st)) {
		snprintf(note, sizeof(note),
			 "the command was killed by signal %d (%s)",
			 WTERMSIG(st), strsignal(WTERMSIG(st)));
		cmd_note = note;
	} else if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
		snprintf(note, sizeof(note),
			 "the command could not be run (exit 127)");
		cmd_note = note;
	} else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
		snprintf(note, sizeof(note),
			 "the command exited with status %d", WEXITSTATUS(st));
		cmd_note = note;
	}
	if (!have_data) {
		fprintf(stderr,
			"jitsframe record: perf recorded nothing%s%s.\n"
			"If perf said 'Permission denied' or 'No "
			"permission', "
			"lower kernel.perf_event_paranoid (sudo sysctl "
			"kernel.perf_event_paranoid=2) or run as root.\n",
			cmd_note ? ": " : "", cmd_note ? cmd_note : "");
		return EX_INPUT;
	}
	/* attached: the processes ran before the recording (no lower
	 * bound) */
	collect_regions(adir, raw, pids, npids, npids ? 0 : t0);
	int rj_rc =
	    rj == CLI_RJ_CLI ? rj_region(adir, raw, rjexe, rjlog, t0) : EX_OK;
	/* 2. inject the traces */
	int lfd = open(log, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	char *inj[] = {perf,	"--buildid-dir",
		       bid,	"inject",
		       "--jit", "-i",
		       raw,	"-o",
		       data,	NULL};
	if (!no_inject)
		st = spawn(inj, lfd, lfd);
	else
		st = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr,
			"jitsframe record: perf inject failed; the raw "
			"recording is kept in %s. perf said:\n",
			raw);
		tail_file(log, "  ");
		if (lfd >= 0)
			close(lfd);
		return EX_FAIL;
	}
	/* one copy of the samples: the injected perf.data reads for our
	 * unwinder as the raw one does (the jitted-PID-N.so mappings are
	 * trace code, through the region: unwind/unwind.c), profiles byte
	 * for byte the same (tests/t_recdir.sh) */
	const char *samples = no_inject ? raw : data;
	if (!no_inject && !keep_all)
		unlink(raw);
	if (!perf_script) {
		/* 3. jitsframe's own unwinder over the samples */
		if (lfd >= 0)
			close(lfd);
		struct report_noreg nr[8];
		size_t nnr = 0;
		struct report_opts ro = {.sz = sizeof(ro),
					 .dir = adir,
					 .noreg = nr,
					 .noreg_max = 8,
					 .noreg_n = &nnr,
					 .trim_kallsyms = !keep_all};
		fflush(stdout);
		int rrc = report_run(&ro);
		noreg_note(nr, nnr);
		if (rrc != EX_OK)
			return finish(adir, samples, keep_all,
				      rrc == EX_INPUT ? EX_FAIL : rrc);
		if (cmd_note) {
			fprintf(stderr,
				"jitsframe record: %s; the profile above "
				"covers what ran.\n",
				cmd_note);
			return finish(adir, samples, keep_all, EX_FAIL);
		}
		return finish(adir, samples, keep_all, rj_rc ? EX_FAIL : EX_OK);
	}
	/* 3. fold what perf script prints */
	int pipefd[2];
	if (pipe(pipefd) < 0)
		return EX_INPUT;
	pid_t pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		dup2(pipefd[1], 1);
		if (lfd >= 0)
			dup2(lfd, 2);
		execl(perf, "perf", "--buildid-dir", bid, "script", "--ns",
		      "-i", data, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	FILE *in = fdopen(pipefd[0], "r");
	struct folded *f = folded_new();
	/* names for the bytes of traces that perf's symbols do not
	 * cover */
	DIR *dd = f ? opendir(adir) : NULL;
	struct dirent *de;
	while (dd && (de = readdir(dd))) {
		if (strncmp(de->d_name, "jit-", 4) ||
		    !strstr(de->d_name, ".dump"))
			continue;
		char jp[PATH_MAX + 300];
		snprintf(jp, sizeof(jp), "%s/%s", adir, de->d_name);
		jd_loads(jp, add_load, f);
	}
	if (dd)
		closedir(dd);
	struct folded_stats fs;
	int err = in && f ? folded_read_perf_script(f, in, &fs) : -ENOMEM;
	if (in)
		fclose(in);
	waitpid(pid, &st, 0);
	if (lfd >= 0)
		close(lfd);
	if (err || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr,
			"jitsframe record: perf script failed; %s is kept. "
			"perf said:\n",
			data);
		tail_file(log, "  ");
		folded_free(f);
		return finish(adir, samples, 1, EX_FAIL);
	}
	FILE *fo = fopen(folded_p, "w");
	FILE *so = fopen(svg, "w");
	char title[256];
	snprintf(title, sizeof(title), "jitsframe: %s",
		 npids ? "attached processes" : argv[optind]);
	if (!fo || !so || folded_write(f, fo) || flame_svg(f, so, title)) {
		fprintf(stderr, "jitsframe record: cannot write %s or %s\n",
			folded_p, svg);
		err = 1;
	}
	if (fo)
		fclose(fo);
	if (so)
		fclose(so);
	folded_free(f);
	printf("jitsframe record: %llu samples, %llu in trace code, "
	       "%llu of them "
	       "(%.1f%%) unwound to main; %llu passed through traces; "
	       "perf report -i %s; flame graph %s\n",
	       (unsigned long long)fs.samples,
	       (unsigned long long)fs.trace_leaf,
	       (unsigned long long)fs.trace_leaf_main,
	       fs.trace_leaf
		   ? 100.0 * (double)fs.trace_leaf_main / (double)fs.trace_leaf
		   : 0.0,
	       (unsigned long long)fs.through_trace, data, svg);
	if (cmd_note) {
		fprintf(stderr,
			"jitsframe record: %s; the profile above covers "
			"what ran.\n",
			cmd_note);
		return finish(adir, samples, keep_all, EX_FAIL);
	}
	return finish(adir, samples, keep_all, err ? EX_FAIL : EX_OK);
}
