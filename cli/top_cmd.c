/* SPDX-License-Identifier: MIT */
/*
 * `jitsframe top -p PID[,PID...] [-F HZ] [-n ITER] [-t TOP]`: the per-trace
 * VM-state profile of running LuaJIT processes (cli/vmstate.c), refreshed
 * every second like top(1), plain text.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <unistd.h>

static const char top_usage[] =
    "Usage: jitsframe top -p PID[,PID...] [-F HZ] [-n ITER] [-t TOP]\n"
    "\n"
    "The per-trace VM-state profile of running LuaJIT processes (as\n"
    "`jitsframe vmprofile -p` prints it), refreshed every second like\n"
    "top(1): each screen the last second's samples. Plain text; the screen\n"
    "is cleared before each refresh only when stdout is a terminal. Stops\n"
    "at ^C, after ITER refreshes, or when the processes have exited. Root,\n"
    "or CAP_BPF and CAP_PERFMON (exit 4 when it cannot sample).\n"
    "\n"
    "  -p, --pid LIST     the processes\n"
    "  -F, --freq HZ      samples per second (default 999)\n"
    "  -n, --iterations N stop after N refreshes (default: run on)\n"
    "  -t, --top N        the N traces with the most samples (default 20;\n"
    "                     0: all)\n";

static int top_print(struct pf_vms *v, void *ctx, int last)
{
	const uint64_t *o = ctx;
	(void)last;
	if (isatty(STDOUT_FILENO))
		fputs("\033[H\033[2J", stdout);
	cli_vmp_print(v, stdout, (size_t)o[1], "jitsframe top");
	fflush(stdout);
	return 0;
}

int cmd_top(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"pid", required_argument, 0, 'p'},
	    {"freq", required_argument, 0, 'F'},
	    {"iterations", required_argument, 0, 'n'},
	    {"top", required_argument, 0, 't'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	int pids[256], npids = 0, c;
	uint64_t hz = 999, iters = 0, o[2] = {0, 20};
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "p:F:n:t:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			npids =
			    cli_pids_arg("jitsframe top", optarg, pids, 256);
			if (npids < 0)
				return -npids;
			break;
		case 'F':
			if (!cli_u64(optarg, &hz) || !hz || hz > 100000) {
				fprintf(stderr, "jitsframe top: -F wants "
						"1..100000\n");
				return EX_USAGE;
			}
			break;
		case 'n':
			if (!cli_u64(optarg, &iters) || !iters) {
				fprintf(stderr, "jitsframe top: -n wants N >= "
						"1\n");
				return EX_USAGE;
			}
			break;
		case 't':
			if (!cli_u64(optarg, &o[1])) {
				fprintf(stderr, "jitsframe top: bad -t\n");
				return EX_USAGE;
			}
			break;
		case 'h':
			fputs(top_usage, stdout);
			return EX_OK;
		default:
			return cli_bad_option("top", argv[optind - 1]);
		}
	}
	if (!npids || optind != argc) {
		fprintf(stderr, "jitsframe top: give -p PID[,PID...]\nTry "
				"'jitsframe top --help'.\n");
		return EX_USAGE;
	}
	return cli_vmp_live("jitsframe top", pids, npids, (uint32_t)hz, 1000,
			    iters, top_print, o);
}
