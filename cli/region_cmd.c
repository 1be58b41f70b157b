/* SPDX-License-Identifier: MIT */
/* `jitsframe region dump | validate | export | ls | find | prune | import`. */
#include "auditlog.h"
#include "cli.h"
#include "jitsframe.h"
#include "profile.h"
#include "unwind.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "Usage:\n"
    "  jitsframe region dump FILE [--json] [--at NS | --all]\n"
    "      List the functions of a region (live now by default; --at NS:\n"
    "      those live at CLOCK_MONOTONIC time NS; --all: every logged one,\n"
    "      removed ones too) with their unwind rows.\n"
    "  jitsframe region dump FILE --builtins [--json]\n"
    "      Instead, the names the producer gave native code that a\n"
    "      stripped binary leaves unnamed (the LuaJIT module: its builtins\n"
    "      written in C, e.g. string.gsub, the C functions of Lua modules,\n"
    "      e.g. cjson.encode, and its interpreter), which report and\n"
    "      profile give such frames.\n"
    "  jitsframe region validate FILE [--json]\n"
    "      Check a region: the kernel SFrame unwinder's rules on its live\n"
    "      section and the region's own invariants. Exit 1 if invalid.\n"
    "  jitsframe region validate --sframe FILE [--addr A] [--text S:N] "
    "[--json]\n"
    "      Check a raw SFrame V3 section loaded at address A (default 0)\n"
    "      for text [S, S+N) (default: any address).\n"
    "  jitsframe region export FILE -o OUT [--v1] [--at NS] [--base A] "
    "[--json]\n"
    "      Write the live functions (or those live at NS) to OUT (-o,\n"
    "      --output) as a standalone sorted SFrame section: V3 with\n"
    "      PC-relative starts laid out for address A (default 0), or V1\n"
    "      (--v1, for binutils 2.40's libsframe, `objdump --sframe`) with\n"
    "      32-bit starts relative to A (default: the first function's\n"
    "      page, reported).\n"
    "  jitsframe region ls [--json]\n"
    "      List the regions found by the discovery convention: those mapped\n"
    "      by running processes (/proc/*/maps) and those left in\n"
    "      BASE/jitsframe-UID/PID.region for every UID (BASE: $TMPDIR when\n"
    "      set, else /dev/shm and /tmp). One line\n"
    "      per region: pid, command (\"(exited)\" if its process is gone),\n"
    "      live and logged functions, file size, age, whether its producer\n"
    "      is alive, path.\n"
    "  jitsframe region find PID\n"
    "      Print the path of the region of process PID as the discovery\n"
    "      convention finds it (what report, profile and gdb use); exit 1,\n"
    "      saying where it looked, when there is none.\n"
    "  jitsframe region prune [DIR] [--keep N] [--max-size BYTES] "
    "[--dry-run] [--json]\n"
    "      Remove the regions of processes that are gone from DIR (default:\n"
    "      this user's directories BASE/jitsframe-$UID, BASE as for ls)\n"
    "      but the newest N (--keep, default 16; 0: none) while they take\n"
    "      at most BYTES (--max-size, default 268435456, on a tmpfs a\n"
    "      sixteenth of its size if less; the newest is kept whatever its\n"
    "      size). A producer given no path does the same in its default\n"
    "      directory when it starts (JITSFRAME_REGION_KEEP). Regions of\n"
    "      running processes and files that are not regions are never\n"
    "      touched. One line per region removed (--dry-run: that would be);\n"
    "      --json: an array, an object per directory.\n"
    "  jitsframe region import LOG -o FILE [--pid PID] [--binary PROG]\n"
    "      Write a region to FILE (-o, --output; replaced if it exists)\n"
    "      from a RaptorJIT auditlog (`raptorjit -a LOG`): its traces with\n"
    "      exact rows, each live from its trace_stop to the next flush\n"
    "      (docs/RAPTORJIT.md). --pid: the process it names as its\n"
    "      producer (default: this command's); --binary: check the log's\n"
    "      frame size against that RaptorJIT program's interpreter CFI\n"
    "      first (default: the log's own facts only).\n"
    "\n"
    "A region is read live (while its producer runs) or post-mortem.\n"
    "Exit status: 0 ok, 1 invalid or nothing selected, 2 usage, 3 I/O.\n";

struct ropts {
	bool json, all, v1, has_at, has_base, has_addr, has_text;
	bool dry_run, has_keep, builtins;
	uint64_t at, base, addr, text_start, text_size, pid, keep, max_size;
	const char *out, *sframe, *binary;
};

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "jitsframe region: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'jitsframe region --help'.\n");
	return EX_USAGE;
}

static int parse(int argc, char **argv, struct ropts *o, int *first)
{
	static const struct option lo[] = {
	    {"json", no_argument, 0, 'j'},
	    {"all", no_argument, 0, 'A'},
	    {"v1", no_argument, 0, '1'},
	    {"at", required_argument, 0, 't'},
	    {"base", required_argument, 0, 'b'},
	    {"addr", required_argument, 0, 'a'},
	    {"text", required_argument, 0, 'T'},
	    {"sframe", required_argument, 0, 's'},
	    {"output", required_argument, 0, 'o'},
	    {"pid", required_argument, 0, 'p'},
	    {"binary", required_argument, 0, 'B'},
	    {"keep", required_argument, 0, 'k'},
	    {"max-size", required_argument, 0, 'm'},
	    {"dry-run", no_argument, 0, 'n'},
	    {"builtins", no_argument, 0, 'F'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'A':
			o->all = true;
			break;
		case '1':
			o->v1 = true;
			break;
		case 'o':
			o->out = optarg;
			break;
		case 's':
			o->sframe = optarg;
			break;
		case 'B':
			o->binary = optarg;
			break;
		case 'p':
			if (!cli_u64(optarg, &o->pid) || !o->pid ||
			    o->pid > INT32_MAX)
				return bad_usage(
				    "--pid wants a process id, not '%s'",
				    optarg);
			break;
		case 'k':
			if (!cli_u64(optarg, &o->keep) || o->keep > UINT32_MAX)
				return bad_usage(
				    "--keep wants a count, not '%s'", optarg);
			o->has_keep = true;
			break;
		case 'm':
			if (!cli_u64(optarg, &o->max_size) || !o->max_size)
				return bad_usage("--max-size wants a non-zero "
						 "size in bytes, not '%s'",
						 optarg);
			break;
		case 'n':
			o->dry_run = true;
			break;
		case 'F':
			o->builtins = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		case 't':
			if (!cli_u64(optarg, &o->at) || !o->at)
				return bad_usage("--at wants a non-zero time "
						 "in ns, not '%s'",
						 optarg);
			o->has_at = true;
			break;
		case 'b':
			if (!cli_u64(optarg, &o->base))
				return bad_usage(
				    "--base wants an address, not '%s'",
				    optarg);
			o->has_base = true;
			break;
		case 'a':
			if (!cli_u64(optarg, &o->addr))
				return bad_usage(
				    "--addr wants an address, not '%s'",
				    optarg);
			o->has_addr = true;
			break;
		case 'T': {
			char *colon = strchr(optarg, ':');
			if (!colon)
				return bad_usage(
				    "--text wants START:SIZE, not '%s'",
				    optarg);
			*colon = 0;
			bool ok = cli_u64(optarg, &o->text_start) &&
				  cli_u64(colon + 1, &o->text_size) &&
				  o->text_size;
			*colon = ':';
			if (!ok)
				return bad_usage(
				    "--text wants START:SIZE, not '%s'",
				    optarg);
			o->has_text = true;
			break;
		}
		case '?':
		default:
			return bad_usage("unknown or incomplete option '%s'",
					 argv[optind - 1]);
		}
	}
	*first = optind;
	return 0;
}

static void print_row(FILE *f, const struct jsf_row *r, bool json)
{
	if (json) {
		fprintf(f, "{\"offset\":%u", r->offset);
		if (r->outermost)
			fprintf(f, ",\"outermost\":true}");
		else {
			fprintf(f, ",\"cfa\":\"%s\",\"cfa_offset\":%d",
				r->cfa_base == JSF_SP ? "sp" : "fp",
				r->cfa_offset);
			if (r->has_fp)
				fprintf(f, ",\"fp_offset\":%d", r->fp_offset);
			fprintf(f, "}");
		}
		return;
	}
	if (r->outermost)
		fprintf(f, "    +%-6u outermost (no caller)\n", r->offset);
	else if (r->has_fp)
		fprintf(f, "    +%-6u cfa=%s%+d  fp=c%+d  ra=c-8\n", r->offset,
			r->cfa_base == JSF_SP ? "sp" : "fp", r->cfa_offset,
			r->fp_offset);
	else
		fprintf(f, "    +%-6u cfa=%s%+d  fp=u  ra=c-8\n", r->offset,
			r->cfa_base == JSF_SP ? "sp" : "fp", r->cfa_offset);
}

struct dump_ctx {
	bool json;
	unsigned n;
	const struct jsf_view *v;
};

static int dump_one(const struct jsf_func *f, void *arg)
{
	struct dump_ctx *d = arg;
	/* its name, if the producer published one (the instance added then) */
	char name[1040];
	bool named = d->v && jsf_view_name(d->v, f->start, f->add_ns, name,
					   sizeof(name)) > 0;
	if (d->json) {
		printf("%s{\"start\":%" PRIu64
		       ",\"size\":%u,\"added_ns\":%" PRIu64
		       ",\"removed_ns\":%" PRIu64,
		       d->n ? "," : "", f->start, f->size, f->add_ns,
		       f->remove_ns);
		if (named) {
			printf(",\"name\":");
			json_str(stdout, name);
		}
		printf(",\"rows\":[");
		for (uint32_t i = 0; i < f->nrows; i++) {
			if (i)
				putchar(',');
			print_row(stdout, &f->rows[i], true);
		}
		printf("]}");
	} else {
		printf("%#" PRIx64 "-%#" PRIx64 " size %u, added %" PRIu64,
		       f->start, f->start + f->size, f->size, f->add_ns);
		if (f->remove_ns)
			printf(", removed %" PRIu64, f->remove_ns);
		printf(", %u rows", f->nrows);
		if (named)
			printf(", %s", name);
		putchar('\n');
		for (uint32_t i = 0; i < f->nrows; i++)
			print_row(stdout, &f->rows[i], false);
	}
	d->n++;
	return 0;
}

static int open_view(const char *path, struct jsf_view **v)
{
	int err = jsf_view_open(v, path);
	if (err) {
		fprintf(stderr, "jitsframe: %s: %s\n", path,
			*jsf_view_error() ? jsf_view_error()
					  : jsf_strerror(err));
		return err == -EBADMSG ? EX_FAIL : EX_INPUT;
	}
	return EX_OK;
}

static int dump_builtins(const char *path, const struct ropts *o)
{
	struct uw_runtime rt;
	if (uw_runtime_read(path, &rt)) {
		fprintf(stderr, "jitsframe: %s: unreadable runtime area\n",
			path);
		return EX_FAIL;
	}
	if (!rt.vm_start && !rt.nn && !o->json) {
		fprintf(stderr,
			"jitsframe: %s: no names in its runtime area (its "
			"producer published none)\n",
			path);
		return EX_FAIL;
	}
	if (o->json) {
		printf("],\"interpreter\":");
		if (rt.vm_start)
			printf("[%" PRIu64 ",%" PRIu64 "]", rt.vm_start,
			       rt.vm_end);
		else
			printf("null");
		printf(",\"builtins\":[");
	} else if (rt.vm_start) {
		printf("interpreter 0x%" PRIx64 "-0x%" PRIx64 " %s\n",
		       rt.vm_start, rt.vm_end, UW_INTERP_NAME);
	}
	/* LuaJIT's builtins (LJFF), then the modules' C functions (LJCF) */
	for (int kind = UW_RT_BUILTIN; kind <= UW_RT_CFUNC; kind++) {
		if (o->json && kind == UW_RT_CFUNC)
			printf("],\"cfunctions\":[");
		int first = 1;
		for (size_t i = 0; i < rt.nn; i++) {
			if (rt.n[i].kind != kind)
				continue;
			if (o->json) {
				printf("%s{\"addr\":%" PRIu64 ",\"name\":",
				       first ? "" : ",", rt.n[i].addr);
				json_str(stdout, rt.n[i].name);
				putchar('}');
			} else {
				printf("%s 0x%" PRIx64 " %s\n",
				       kind == UW_RT_CFUNC ? "cfunction"
							   : "builtin",
				       rt.n[i].addr, rt.n[i].name);
			}
			first = 0;
		}
	}
	if (o->json)
		printf("]}\n");
	uw_runtime_free(&rt);
	return EX_OK;
}

static int do_dump(const char *path, const struct ropts *o)
{
	struct jsf_view *v;
	int rc = open_view(path, &v);
	if (rc)
		return rc;
	struct jsf_view_info info = {.sz = sizeof(info)};
	int err = jsf_view_info(v, &info);
	if (err) {
		fprintf(stderr, "jitsframe: %s: %s\n", path, jsf_strerror(err));
		jsf_view_close(v);
		return EX_FAIL;
	}
	uint64_t at = o->all ? JSF_ALL : o->has_at ? o->at : 0;
	struct dump_ctx d = {o->json, 0, v};
	const char *state = info.live	  ? "live"
			    : info.closed ? "closed"
					  : "producer gone";
	if (o->json) {
		printf("{\"path\":");
		json_str(stdout, path);
		printf(",\"state\":\"%s\",\"recovered\":%s,\"pid\":%u,\"seq\":"
		       "%" PRIu64 ",\"file_size\":%" PRIu64
		       ",\"live_functions\":%u,"
		       "\"logged_functions\":%u,\"functions\":[",
		       state, info.recovered ? "true" : "false",
		       info.producer_pid, info.seq, info.file_size,
		       info.live_funcs, info.logged_funcs);
	} else {
		printf(
		    "region %s: %s (pid %u)%s, %u live of %u logged functions, "
		    "%" PRIu64 " bytes, seq %" PRIu64 "\n",
		    path, state, info.producer_pid,
		    info.recovered ? ", recovered after a crash" : "",
		    info.live_funcs, info.logged_funcs, info.file_size,
		    info.seq);
	}
	if (o->builtins) {
		/* instead of the functions: the names the producer gave the
		 * native code a stripped binary leaves unnamed (docs/ABI.md
		 * 1.6), as report and profile use them */
		jsf_view_close(v);
		return dump_builtins(path, o);
	}
	err = jsf_view_foreach(v, at, dump_one, &d);
	if (o->json)
		printf("]}\n");
	jsf_view_close(v);
	if (err) {
		fprintf(stderr, "jitsframe: %s: %s\n", path, jsf_strerror(err));
		return EX_FAIL;
	}
	return EX_OK;
}

static int read_whole(const char *path, void **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > (1 << 30)) {
		int e = fd < 0 ? errno : EINVAL;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	*buf = malloc((size_t)st.st_size + 1);
	ssize_t got = *buf ? read(fd, *buf, (size_t)st.st_size) : -1;
	close(fd);
	if (got != st.st_size) {
		free(*buf);
		return -EIO;
	}
	*len = (size_t)got;
	return 0;
}

static void verdict(const struct ropts *o, const char *path, int err,
		    const char *msg)
{
	if (o->json) {
		printf("{\"path\":");
		json_str(stdout, path);
		printf(",\"valid\":%s,\"message\":", err ? "false" : "true");
		json_str(stdout, msg);
		printf("}\n");
	} else if (err) {
		printf("%s: INVALID: %s\n", path, msg);
	} else {
		printf("%s: %s\n", path, msg);
	}
}

static int do_validate(const char *path, const struct ropts *o)
{
	char msg[512] = "";
	int err;
	if (o->sframe) {
		void *buf = NULL;
		size_t len = 0;
		err = read_whole(o->sframe, &buf, &len);
		if (err) {
			fprintf(stderr, "jitsframe: %s: %s\n", o->sframe,
				strerror(-err));
			return EX_INPUT;
		}
		err = jsf_validate_sframe(buf, len, o->addr, o->text_start,
					  o->text_size, msg, sizeof(msg));
		free(buf);
		verdict(o, o->sframe, err, msg);
		return err ? EX_FAIL : EX_OK;
	}
	err = jsf_validate_region(path, msg, sizeof(msg));
	if (err && err != -EBADMSG && !*msg)
		snprintf(msg, sizeof(msg), "%s", jsf_strerror(err));
	verdict(o, path, err, msg);
	if (!err)
		return EX_OK;
	return err == -EBADMSG ? EX_FAIL : EX_INPUT;
}

static int do_export(const char *path, const struct ropts *o)
{
	if (!o->out)
		return bad_usage("export needs -o OUT%s", "");
	struct jsf_view *v;
	int rc = open_view(path, &v);
	if (rc)
		return rc;
	struct jsf_export_opts eo = {.sz = sizeof(eo),
				     .version = o->v1 ? 1 : 3,
				     .at_ns = o->has_at ? o->at : 0,
				     .base = o->base,
				     .has_base = o->has_base};
	void *buf;
	size_t len;
	uint64_t base;
	int err = jsf_view_export(v, &eo, &buf, &len, &base);
	jsf_view_close(v);
	if (err) {
		fprintf(stderr, "jitsframe: export %s: %s\n", path,
			err == -ENOENT ? "no function selected (empty region?)"
				       : jsf_strerror(err));
		return err == -ENOENT || err == -ERANGE || err == -EBADMSG
			   ? EX_FAIL
			   : EX_INPUT;
	}
	unsigned nf =
	    (unsigned)(buf && len >= 12
			   ? ((uint8_t *)buf)[8] | ((uint8_t *)buf)[9] << 8 |
				 ((uint8_t *)buf)[10] << 16 |
				 (unsigned)((uint8_t *)buf)[11] << 24
			   : 0);
	err = prof_write_file(o->out, buf, len);
	free(buf);
	if (err) {
		fprintf(stderr, "jitsframe: cannot write %s: %s\n", o->out,
			strerror(-err));
		return EX_INPUT;
	}
	if (o->json) {
		printf("{\"output\":");
		json_str(stdout, o->out);
		printf(",\"version\":%d,\"functions\":%u,\"bytes\":%zu,"
		       "\"base\":%" PRIu64 "}\n",
		       o->v1 ? 1 : 3, nf, len, base);
	} else
		printf("wrote %s: SFrame V%d, %u functions, %zu bytes, %s "
		       "%#" PRIx64 "\n",
		       o->out, o->v1 ? 1 : 3, nf, len,
		       o->v1 ? "starts relative to" : "laid out for address",
		       base);
	return EX_OK;
}

/* ------------------------------------------------------------ region ls */

struct lsent {
	int pid;
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX];
};

struct lslist {
	struct lsent *e;
	size_t n, cap;
};

static void ls_add(struct lslist *l, int pid, const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return;
	for (size_t i = 0; i < l->n; i++)
		if (l->e[i].dev == st.st_dev && l->e[i].ino == st.st_ino)
			return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		struct lsent *n = realloc(l->e, cap * sizeof(*n));
		if (!n)
			return;
		l->e = n;
		l->cap = cap;
	}
	struct lsent *e = &l->e[l->n++];
	e->pid = pid;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	snprintf(e->path, sizeof(e->path), "%s", path);
}

static bool all_digits(const char *s, size_t n)
{
	return n && strspn(s, "0123456789") >= n;
}

static int ls_cmp(const void *a, const void *b)
{
	const struct lsent *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* The command of pid, if that process is the one that created a region at
 * create_ns (its start time, CLOCK_BOOTTIME ticks, not after it); else
 * "(exited)". */
static void ls_comm(int pid, bool live, uint64_t create_ns, char *out,
		    size_t len)
{
	char p[64], buf[1024];
	snprintf(out, len, "(exited)");
	const char *rp = cli_proc_stat(pid, buf, sizeof(buf));
	unsigned long long start = 0;
	/* fields after ")": state(3) ... starttime(22) */
	if (!rp || sscanf(rp,
			  " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u "
			  "%*u %*d %*d %*d %*d %*d %*d %llu",
			  &start) != 1)
		return;
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t start_ns =
	    hz > 0 ? start * (1000000000ull / (unsigned long long)hz) : 0;
	if (!live && start_ns > create_ns)
		return; /* a later process with the same pid */
	snprintf(p, sizeof(p), "/proc/%d/comm", pid);
	FILE *f = fopen(p, "re");
	if (!f)
		return;
	if (fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = 0;
		snprintf(out, len, "%.31s", buf);
	}
	fclose(f);
}

static int do_ls(const struct ropts *o)
{
	struct lslist l = {0};
	char path[PATH_MAX];
	/* live regions: every process's own mapping */
	DIR *d = opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!all_digits(de->d_name, strlen(de->d_name)))
			continue;
		int pid = atoi(de->d_name);
		if (jsf_region_find(pid, 0, path, sizeof(path)) == 0)
			ls_add(&l, pid, path);
	}
	if (d)
		closedir(d);
	/* post-mortem ones: the per-user directories, every UID, in every
	 * base a producer may have used */
	const char *tmp;
	for (unsigned bi = 0; (tmp = jsf_region_search_base(bi)); bi++) {
		d = opendir(tmp);
		while (d && (de = readdir(d))) {
			if (strncmp(de->d_name, "jitsframe-", 10) ||
			    !all_digits(de->d_name + 10,
					strlen(de->d_name + 10)))
				continue;
			char up[PATH_MAX];
			if (snprintf(up, sizeof(up), "%s/%s", tmp,
				     de->d_name) >= (int)sizeof(up))
				continue;
			DIR *u = opendir(up);
			struct dirent *fe;
			while (u && (fe = readdir(u))) {
				size_t n = strlen(fe->d_name);
				if (n < 8 ||
				    strcmp(fe->d_name + n - 7, ".region") ||
				    !all_digits(fe->d_name, n - 7))
					continue;
				int pid = atoi(fe->d_name);
				/* the convention's own checks (owner, mode,
				 * pid) */
				if (jsf_region_find(pid, 0, path,
						    sizeof(path)) == 0)
					ls_add(&l, pid, path);
				if (snprintf(path, sizeof(path), "%s/%s", up,
					     fe->d_name) >= (int)sizeof(path))
					continue;
				/* an older file of the same pid (another UID):
				 * its header says whose */
				struct jsf_view_info in = {.sz = sizeof(in)};
				if (jsf_region_info(path, &in) == 0 &&
				    (int)in.producer_pid == pid)
					ls_add(&l, pid, path);
			}
			if (u)
				closedir(u);
		}
		if (d)
			closedir(d);
	}
	if (l.n)
		qsort(l.e, l.n, sizeof(*l.e), ls_cmp);
	uint64_t now = jsf_now_ns();
	if (o->json)
		printf("[");
	else
		printf("%-8s %-16s %6s %7s %10s %9s %-5s %s\n", "PID",
		       "COMMAND", "LIVE", "LOGGED", "SIZE", "AGE", "ALIVE",
		       "PATH");
	unsigned shown = 0;
	for (size_t i = 0; i < l.n; i++) {
		struct jsf_view *v;
		struct jsf_view_info in = {.sz = sizeof(in)};
		if (jsf_view_open(&v, l.e[i].path))
			continue;
		int err = jsf_view_info(v, &in);
		jsf_view_close(v);
		if (err)
			continue;
		char comm[64];
		ls_comm(l.e[i].pid, in.live, in.create_ns, comm, sizeof(comm));
		bool aged = now >= in.create_ns;
		double age = aged ? (double)(now - in.create_ns) / 1e9 : 0;
		if (o->json) {
			printf("%s{\"pid\":%d,\"command\":", shown ? "," : "",
			       l.e[i].pid);
			json_str(stdout, comm);
			printf(",\"live_functions\":%u,\"logged_functions\":%u,"
			       "\"file_size\":%" PRIu64 ",\"age_s\":",
			       in.live_funcs, in.logged_funcs, in.file_size);
			if (aged)
				printf("%.3f", age);
			else
				printf("null");
			printf(",\"alive\":%s,\"path\":",
			       in.live ? "true" : "false");
			json_str(stdout, l.e[i].path);
			printf("}");
		} else {
			char ages[32];
			if (aged)
				snprintf(ages, sizeof(ages), "%.1fs", age);
			else
				snprintf(ages, sizeof(ages), "?");
			printf("%-8d %-16s %6u %7u %10" PRIu64 " %9s %-5s %s\n",
			       l.e[i].pid, comm, in.live_funcs, in.logged_funcs,
			       in.file_size, ages, in.live ? "yes" : "no",
			       l.e[i].path);
		}
		shown++;
	}
	if (o->json)
		printf("]\n");
	free(l.e);
	return EX_OK;
}

/* `region import LOG -o FILE`: a region from a RaptorJIT auditlog (the
 * counterpart of export: a foreign description of the code in). */
static int do_from_log(const char *log, const struct ropts *o)
{
	if (!o->out)
		return bad_usage("import needs -o FILE%s", "");
	struct rj_log *l;
	int rc = cli_rj_open("jitsframe region", log, &l);
	if (rc)
		return rc;
	struct cli_rj_args a = {.who = "jitsframe region",
				.log = log,
				.binary = o->binary,
				.out = o->out,
				.pid = (uint32_t)o->pid};
	rc = cli_rj_region(&a, l, NULL);
	rj_log_close(l);
	return rc;
}

struct prune_ctx {
	const char *dir;
	bool json;
	unsigned n;
};

static void pruned(const char *name, uint64_t bytes, void *arg)
{
	struct prune_ctx *c = arg;
	if (c->json) {
		char p[PATH_MAX + 64];
		snprintf(p, sizeof(p), "%s/%s", c->dir, name);
		printf("%s{\"path\":", c->n ? "," : "");
		json_str(stdout, p);
		printf(",\"bytes\":%" PRIu64 "}", bytes);
	} else
		printf("%s/%s %" PRIu64 "\n", c->dir, name, bytes);
	c->n++;
}

/* One directory: the JSON object or the lines; EX_*. */
static int prune_dir(const char *dir, const struct ropts *o, bool first)
{
	struct prune_ctx c = {.dir = dir, .json = o->json};
	struct jsf_prune_opts po = {
	    .sz = sizeof(po),
	    .keep = (uint32_t)o->keep,
	    .flags = (o->has_keep && !o->keep ? JSF_PRUNE_ALL : 0) |
		     (o->dry_run ? JSF_PRUNE_DRY_RUN : 0),
	    .max_bytes = o->max_size,
	    .removed = pruned,
	    .ctx = &c};
	if (o->json) {
		printf("%s{\"dir\":", first ? "" : ",");
		json_str(stdout, dir);
		printf(",\"dry_run\":%s,\"removed\":[",
		       o->dry_run ? "true" : "false");
	}
	int n = jsf_region_prune(dir, &po);
	if (o->json)
		printf("]}");
	fflush(stdout);
	if (n < 0) {
		fprintf(stderr, "jitsframe region: prune %s: %s\n", dir,
			jsf_strerror(n));
		return n == -EPERM ? EX_FAIL : EX_INPUT;
	}
	return EX_OK;
}

/* DIR, else this user's directory in every base consumers search (the
 * producer's default is one of them; the other may hold regions from
 * before it changed). */
static int do_prune(const char *dir, const struct ropts *o)
{
	if (o->json)
		printf("[");
	int rc = EX_OK;
	if (dir) {
		rc = prune_dir(dir, o, true);
	} else {
		const char *b;
		bool first = true;
		for (unsigned i = 0; (b = jsf_region_search_base(i)); i++) {
			char d[PATH_MAX];
			struct stat st;
			snprintf(d, sizeof(d), "%s/jitsframe-%u", b,
				 (unsigned)getuid());
			if (lstat(d, &st) < 0)
				continue; /* none there */
			int r = prune_dir(d, o, first);
			first = false;
			if (r != EX_OK)
				rc = r;
		}
	}
	if (o->json)
		printf("]\n");
	return rc;
}

int cmd_region(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return EX_USAGE;
	}
	const char *sub = argv[1];
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h") ||
	    !strcmp(sub, "help")) {
		fputs(usage, stdout);
		return EX_OK;
	}
	struct ropts o = {0};
	int first;
	int rc = parse(argc - 1, argv + 1, &o, &first);
	if (rc)
		return rc < 0 ? EX_OK : rc;
	int nargs = argc - 1 - first;
	char **args = argv + 1 + first;
	if (!strcmp(sub, "validate") && o.sframe) {
		if (nargs != 0)
			return bad_usage(
			    "validate --sframe takes no other file (%s)",
			    args[0]);
		return do_validate(NULL, &o);
	}
	if (!strcmp(sub, "ls")) {
		if (nargs != 0)
			return bad_usage("ls takes no FILE (%s)", args[0]);
		return do_ls(&o);
	}
	if (!strcmp(sub, "prune")) {
		if (nargs > 1)
			return bad_usage("prune takes one DIR at most (%s)",
					 args[1]);
		return do_prune(nargs ? args[0] : NULL, &o);
	}
	if (!strcmp(sub, "find")) {
		/* digits (cli_u64 also takes hex), a pid_t's range: atoi's
		 * wrap made 99999999999 pid 1215752191 */
		uint64_t pid = 0;
		if (nargs != 1 || !all_digits(args[0], strlen(args[0])) ||
		    !cli_u64(args[0], &pid) || !pid || pid > INT_MAX)
			return bad_usage("find needs one PID%s", "");
		char path[PATH_MAX];
		int err = jsf_region_find((int)pid, 0, path, sizeof(path));
		if (err) {
			fprintf(stderr, "jitsframe region: %s\n",
				jsf_strerror(err));
			return EX_FAIL;
		}
		puts(path);
		return EX_OK;
	}
	if (nargs != 1)
		return bad_usage("'%s' needs exactly one region FILE", sub);
	if (o.all && o.has_at)
		return bad_usage("--all and --at exclude each other%s", "");
	if (!strcmp(sub, "dump"))
		return do_dump(args[0], &o);
	if (!strcmp(sub, "validate"))
		return do_validate(args[0], &o);
	if (!strcmp(sub, "export"))
		return do_export(args[0], &o);
	if (!strcmp(sub, "import"))
		return do_from_log(args[0], &o);
	return bad_usage("unknown region command '%s'", sub);
}
