/* SPDX-License-Identifier: MIT */
/*
 * `jitsframe vmprofile FILE [--auditlog LOG] [--json] [-n TOP]`: a
 * RaptorJIT vmprofile (-p FILE; profile/vmprof.c) as a plain-text table:
 * the traces with the most samples, each trace's samples split by VM
 * state, and the VM's totals per state. With --auditlog, each trace
 * number is named by where its trace starts (chunk:line), from the
 * RaptorJIT auditlog of the same run (audit/rjlog.h).
 *
 * Counts are keyed by trace number: different traces that had the same
 * number (numbers are reused after a flush) are summed by RaptorJIT
 * itself. With a log that shows such reuse, the output says so.
 */
#include "cli.h"
#include "profile.h"
#include "auditlog.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "Usage: jitsframe vmprofile FILE [--auditlog LOG] [--json] [-n TOP]\n"
    "       jitsframe vmprofile DIR [--json] [-n TOP]\n"
    "       jitsframe vmprofile -p PID[,PID...] [-d SECONDS] [-F HZ] [--json]\n"
    "                           [-n TOP]\n"
    "\n"
    "DIR: the per-trace VM-state profile `jitsframe profile` wrote\n"
    "(DIR/vmprofile.json; docs/PROFILE.md, VM states), LuaJIT's own\n"
    "vmstate per sample: per trace TRACE_n::chunk:line its samples in its\n"
    "head, its loop, C it called (ffi), GC from it (jgc), and the\n"
    "interpreter, C, GC, exit and compiler samples after it last ran on\n"
    "the thread; its Lua lines; the VM's totals as luajit -jp=v counts\n"
    "them. -p PID: sample running LuaJIT processes (started with the\n"
    "module; Lua lines only with JITSFRAME_LUAMAP=1) for -d\n"
    "SECONDS (default 5) or until they exit, and print the same (root, or\n"
    "CAP_BPF and CAP_PERFMON; exit 4 when it cannot sample).\n"
    "\n"
    "  -p, --pid LIST     sample these processes\n"
    "  -d, --duration S   for S seconds (default 5)\n"
    "  -F, --freq HZ      samples per second (default 999)\n"
    "\n"
    "FILE:\n"
    "Read a RaptorJIT vmprofile (raptorjit -p FILE): samples per trace\n"
    "number and VM state (interp c gc exit record opt asm head loop jgc\n"
    "ffi). Prints the TOP traces by samples, each with its share of all\n"
    "samples and its own samples split by state, then the VM's totals.\n"
    "\n"
    "  --auditlog LOG  name each trace by where it starts (chunk:line),\n"
    "                  from the RaptorJIT auditlog of the same run\n"
    "                  (raptorjit -a LOG); RaptorJIT sums the counts of\n"
    "                  traces that shared a number across flushes: the\n"
    "                  output says so when the log shows reuse\n"
    "  -n TOP          the TOP traces (default 20; 0: every trace with\n"
    "                  samples)\n"
    "  --json          machine-readable output (one JSON document)\n"
    "\n"
    "Row 0 (\"-\") is RaptorJIT's bucket for samples in no trace and for\n"
    "trace numbers above 4096.\n"
    "\n"
    "Exit status: 0 ok; 2 usage; 3 FILE is not a vmprofile of format 4\n"
    "(wrong magic, major version or size: one message) or cannot be read,\n"
    "or LOG cannot be read as a RaptorJIT auditlog.\n";

/* What the log says about one trace number. */
struct tname {
	char loc[400];	 /* "(parent/exit) chunk:line" of its first trace */
	uint32_t ntrace; /* traces of that number in the log */
};

static int by_samples(const void *a, const void *b, void *arg)
{
	const uint64_t *tot = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	if (tot[x] != tot[y])
		return tot[x] < tot[y] ? 1 : -1;
	return x < y ? -1 : x > y;
}

/* qsort_r is a GNU extension; a plain insertion sort keeps this C11 (at
 * most 4097 rows) */
static void sort_rows(uint32_t *rows, size_t n, const uint64_t *tot)
{
	for (size_t i = 1; i < n; i++) {
		uint32_t v = rows[i];
		size_t j = i;
		while (j > 0 && by_samples(&rows[j - 1], &v, (void *)tot) > 0) {
			rows[j] = rows[j - 1];
			j--;
		}
		rows[j] = v;
	}
}

static int load_names(const char *path, struct tname *names, size_t *nreused,
		      size_t *nflushes)
{
	char msg[512];
	struct rj_log *log;
	if (rj_log_open(&log, path, msg, sizeof(msg))) {
		fprintf(stderr, "jitsframe vmprofile: %s\n", msg);
		return EX_INPUT;
	}
	const char *dmg = rj_log_damage(log);
	if (dmg)
		fprintf(stderr, "jitsframe vmprofile: %s: %s\n", path, dmg);
	for (size_t i = 0; i < rj_log_ntraces(log); i++) {
		const struct rj_trace *t = rj_log_trace(log, i);
		if (t->traceno >= PF_VMP_TRACES)
			continue;
		struct tname *nm = &names[t->traceno];
		if (nm->ntrace++ == 0)
			rj_log_trace_loc(log, t, nm->loc, sizeof(nm->loc));
	}
	*nreused = 0;
	for (size_t i = 0; i < PF_VMP_TRACES; i++)
		if (names[i].ntrace > 1)
			(*nreused)++;
	*nflushes = rj_log_nflushes(log);
	rj_log_close(log);
	return EX_OK;
}

static void pct(uint64_t part, uint64_t whole, char *out, size_t cap)
{
	if (!part)
		snprintf(out, cap, ".");
	else
		snprintf(out, cap, "%.1f%%",
			 100.0 * (double)part / (double)whole);
}

static int live_print(struct pf_vms *v, void *ctx, int last)
{
	const uint64_t *o = ctx; /* json, top */
	(void)last;
	if (o[0])
		pf_vms_json(v, stdout);
	else
		cli_vmp_print(v, stdout, (size_t)o[1], "jitsframe vmprofile");
	fflush(stdout);
	return 0;
}

static int parse_pidlist(const char *list, int *out, int max)
{
	int n = 0;
	const char *p = list;
	while (*p) {
		char *e;
		long x = strtol(p, &e, 10);
		if (e == p || x <= 0 || x > INT32_MAX || (*e && *e != ',') ||
		    n == max)
			return -1;
		out[n++] = (int)x;
		p = *e ? e + 1 : e;
	}
	return n;
}

/* pids from -p, each checked to exist: how many, or an exit code < 0 */
int cli_pids_arg(const char *who, const char *list, int *pids, int max)
{
	int n = parse_pidlist(list, pids, max);
	if (n <= 0) {
		fprintf(stderr, "%s: -p wants PID[,PID...], not '%s'\n", who,
			list);
		return -EX_USAGE;
	}
	for (int i = 0; i < n; i++) {
		char pp[32];
		snprintf(pp, sizeof(pp), "/proc/%d", pids[i]);
		if (access(pp, F_OK) != 0) {
			fprintf(stderr, "%s: no process %d\n", who, pids[i]);
			return -EX_INPUT;
		}
	}
	return n;
}

int cmd_vmprofile(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"auditlog", required_argument, 0, 'a'},
	    {"json", no_argument, 0, 'j'},
	    {"pid", required_argument, 0, 'p'},
	    {"duration", required_argument, 0, 'd'},
	    {"freq", required_argument, 0, 'F'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	const char *logpath = NULL;
	int json = 0, c, pids[256], npids = 0;
	uint64_t top = 20, dur = 5, hz = 999;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "n:p:d:F:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			npids = cli_pids_arg("jitsframe vmprofile", optarg,
					     pids, 256);
			if (npids < 0)
				return -npids;
			break;
		case 'd':
			if (!cli_u64(optarg, &dur) || !dur ||
			    dur > 86400 * 365) {
				fprintf(stderr, "jitsframe vmprofile: -d wants "
						"a number of seconds\n");
				return EX_USAGE;
			}
			break;
		case 'F':
			if (!cli_u64(optarg, &hz) || !hz || hz > 100000) {
				fprintf(stderr, "jitsframe vmprofile: -F wants "
						"1..100000\n");
				return EX_USAGE;
			}
			break;
		case 'a':
			logpath = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'n':
			if (!cli_u64(optarg, &top)) {
				fprintf(stderr,
					"jitsframe vmprofile: bad -n '%s'\n",
					optarg);
				return EX_USAGE;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return EX_OK;
		default:
			return cli_bad_option("vmprofile", argv[optind - 1]);
		}
	}
	if (npids) {
		if (optind != argc || logpath) {
			fprintf(stderr, "jitsframe vmprofile: -p takes no FILE "
					"or --auditlog\n");
			return EX_USAGE;
		}
		uint64_t o[2] = {(uint64_t)json, top};
		return cli_vmp_live("jitsframe vmprofile", pids, npids,
				    (uint32_t)hz, dur * 1000, 1, live_print, o);
	}
	if (optind != argc - 1) {
		fprintf(stderr, "jitsframe vmprofile: give one FILE or DIR, or "
				"-p PID\nTry 'jitsframe vmprofile --help'.\n");
		return EX_USAGE;
	}
	const char *path = argv[optind];
	struct stat dst;
	if (stat(path, &dst) == 0 && S_ISDIR(dst.st_mode)) {
		char jp[4096], m[600];
		struct pf_vms v;
		if (logpath) {
			fprintf(stderr,
				"jitsframe vmprofile: --auditlog is for "
				"RaptorJIT's files, not a DIR\n");
			return EX_USAGE;
		}
		snprintf(jp, sizeof(jp), "%s/vmprofile.json", path);
		if (pf_vms_read(&v, jp, m, sizeof(m))) {
			fprintf(stderr, "jitsframe vmprofile: %s\n", m);
			return EX_INPUT;
		}
		if (json)
			pf_vms_json(&v, stdout);
		else
			cli_vmp_print(&v, stdout, (size_t)top, path);
		pf_vms_free(&v);
		return EX_OK;
	}
	struct pf_vmprofile *vp = malloc(sizeof(*vp));
	struct tname *names = calloc(PF_VMP_TRACES, sizeof(*names));
	uint64_t *tot = calloc(PF_VMP_TRACES, sizeof(*tot));
	uint32_t *rows = calloc(PF_VMP_TRACES, sizeof(*rows));
	int rc = EX_OK;
	char msg[512];
	if (!vp || !names || !tot || !rows) {
		fprintf(stderr, "jitsframe vmprofile: out of memory\n");
		rc = EX_INPUT;
		goto out;
	}
	if (pf_vmprofile_read(vp, path, msg, sizeof(msg))) {
		fprintf(stderr, "jitsframe vmprofile: %s\n", msg);
		rc = EX_INPUT;
		goto out;
	}
	size_t nreused = 0, nflushes = 0;
	if (logpath && (rc = load_names(logpath, names, &nreused, &nflushes)))
		goto out;
	uint64_t state[PF_VMP_STATES] = {0}, all = 0;
	size_t nrows = 0;
	for (uint32_t t = 0; t < PF_VMP_TRACES; t++) {
		for (int s = 0; s < PF_VMP_STATES; s++) {
			tot[t] += vp->count[t][s];
			state[s] += vp->count[t][s];
		}
		all += tot[t];
		if (tot[t])
			rows[nrows++] = t;
	}
	sort_rows(rows, nrows, tot);
	size_t shown = top && top < nrows ? (size_t)top : nrows;
	if (json) {
		printf("{\"file\":");
		json_str(stdout, path);
		printf(",\"format\":\"%u.%u\",\"samples\":%" PRIu64
		       ",\"states\":[",
		       vp->major, vp->minor, all);
		for (int s = 0; s < PF_VMP_STATES; s++)
			printf("%s\"%s\"", s ? "," : "", pf_vmp_state[s]);
		printf("],\"totals\":[");
		for (int s = 0; s < PF_VMP_STATES; s++)
			printf("%s%" PRIu64, s ? "," : "", state[s]);
		printf("],\"traces_with_samples\":%zu,\"traces\":[", nrows);
		for (size_t i = 0; i < shown; i++) {
			uint32_t t = rows[i];
			printf("%s\n{\"trace\":%u,\"samples\":%" PRIu64
			       ",\"counts\":[",
			       i ? "," : "", t, tot[t]);
			for (int s = 0; s < PF_VMP_STATES; s++)
				printf("%s%" PRIu64, s ? "," : "",
				       vp->count[t][s]);
			printf("]");
			if (logpath) {
				printf(",\"in_log\":%u,\"start\":",
				       names[t].ntrace);
				if (names[t].ntrace)
					json_str(stdout, names[t].loc);
				else
					printf("null");
			}
			printf("}");
		}
		printf("]");
		if (logpath)
			printf(",\"auditlog\":{\"flushes\":%zu,\"reused_"
			       "numbers\":%zu}",
			       nflushes, nreused);
		printf("}\n");
		goto out;
	}
	printf("%s: RaptorJIT vmprofile %u.%u, %" PRIu64
	       " samples, %zu trace numbers with samples%s\n",
	       path, vp->major, vp->minor, all, nrows,
	       shown < nrows ? "" : " (all shown)");
	printf("%6s %8s %6s", "trace", "samples", "share");
	for (int s = 0; s < PF_VMP_STATES; s++)
		printf(" %6s", pf_vmp_state[s]);
	printf("%s\n", logpath ? "  start" : "");
	char cell[32];
	int star = 0;
	for (size_t i = 0; i < shown; i++) {
		uint32_t t = rows[i];
		if (t)
			printf("%6u", t);
		else
			printf("%6s", "-");
		pct(tot[t], all, cell, sizeof(cell));
		printf(" %8" PRIu64 " %6s", tot[t], cell);
		for (int s = 0; s < PF_VMP_STATES; s++) {
			pct(vp->count[t][s], tot[t], cell, sizeof(cell));
			printf(" %6s", cell);
		}
		if (logpath && !t)
			printf("  (no trace, or a number above 4096)");
		else if (logpath && !names[t].ntrace)
			printf("  ? (not in the log)");
		else if (logpath && names[t].ntrace > 1) {
			printf("  %s *%u traces", names[t].loc,
			       names[t].ntrace);
			star = 1;
		} else if (logpath)
			printf("  %s", names[t].loc);
		putchar('\n');
	}
	if (shown < nrows)
		printf("%6s %8s (%zu more trace numbers; -n 0 shows all)\n",
		       "...", "", nrows - shown);
	printf("%6s %8" PRIu64 " %6s", "VM", all, all ? "100%" : ".");
	for (int s = 0; s < PF_VMP_STATES; s++) {
		pct(state[s], all, cell, sizeof(cell));
		printf(" %6s", cell);
	}
	putchar('\n');
	if (logpath && nreused)
		printf("note: %zu trace numbers were reused across the log's "
		       "%zu flushes%s; RaptorJIT sums the counts of the "
		       "traces that shared a number: a row is their sum, "
		       "named by the first\n",
		       nreused, nflushes, star ? " (rows marked *)" : "");
out:
	free(vp);
	free(names);
	free(tot);
	free(rows);
	return rc;
}
