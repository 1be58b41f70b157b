/* SPDX-License-Identifier: MIT */
/*
 * `jitsframe run [options] -- CMD [ARGS...]`: run a LuaJIT program with the
 * VM side on, unmodified. The standalone luajit runs LUA_INIT before it
 * handles -j options and the script, so setting LUA_INIT (keeping any the
 * user had) and LUA_CPATH, then exec'ing, is enough. The pid stays the
 * same, so the default region is DIR/PID.region, DIR jsf_region_default_dir's.
 */
#include "cli.h"
#include "jitsframe.h"
#include "jsfenv.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "Usage: jitsframe run [--region PATH] [--replace] [--region-history N]\n"
    "                     [--module-dir DIR] [--quiet]\n"
    "                     [-a PATH [--level full]\n"
    "                     [--auditlog-max BYTES] [--auditlog-keep N]]\n"
    "                     -- CMD [ARGS...]\n"
    "\n"
    "Run a LuaJIT program (the standalone `luajit` or anything honouring\n"
    "LUA_INIT) with jitsframe publishing exact unwind rows for every trace.\n"
    "\n"
    "  --region PATH     region file (default BASE/jitsframe-UID/PID.region,\n"
    "                    BASE $TMPDIR if set, else /dev/shm if a tmpfs with\n"
    "                    256 MiB free, else /tmp; PID is CMD's; printed on\n"
    "                    stderr)\n"
    "  --replace         replace an existing file at PATH\n"
    "  --region-history N  removed traces the region keeps for time\n"
    "                    queries (report's samples in code since freed),\n"
    "                    the oldest dropped first: bounds its memory in a\n"
    "                    process that flushes often (default 1048576)\n"
    "  --module-dir DIR  where jitsframe.so is (default: the lua/ directory\n"
    "                    beside this program)\n"
    "  --quiet           the module prints nothing on stderr\n"
    "  -a, --auditlog PATH  write the auditlog (docs/AUDITLOG.md) to PATH\n"
    "  --level LEVEL     auditlog level: default (traces) or full (also\n"
    "                    every recorded bytecode and every trace exit)\n"
    "  --auditlog-max BYTES  rotate the auditlog at this size (64 MiB)\n"
    "  --auditlog-keep N     rotated files kept: PATH.1..PATH.N (3)\n"
    "\n"
    "Embedders (OpenResty): add the module directory to lua_package_cpath\n"
    "and call  require(\"jitsframe\").start()  in init_by_lua*; each worker\n"
    "process gets its own region (PID.region).\n"
    "\n"
    "Exit status: CMD's, or 127 if it cannot be run, 2 on usage errors.\n";

/* Runs first in the VM; then whatever LUA_INIT the user had. */
static const char init_code[] =
    "local ok, m = pcall(require, 'jitsframe') "
    "if not ok then io.stderr:write('jitsframe: cannot load the module: ', "
    "tostring(m), '\\n') else "
    "local r, e = m.start{replace = os.getenv('" JSF_ENV_REGION_REPLACE "') "
    "== '1', quiet = os.getenv('" JSF_ENV_QUIET "') == '1'} "
    "if not r then io.stderr:write(e, '\\n') end end "
    "local o = os.getenv('" JSF_ENV_LUA_INIT "') "
    "if o and o ~= '' then if o:sub(1, 1) == '@' then dofile(o:sub(2)) "
    "else assert(loadstring(o, '=LUA_INIT'))() end end";

/* Set the environment that makes a LuaJIT command load the module and
 * start publishing (LUA_INIT, LUA_CPATH, JITSFRAME_*); moddir NULL means
 * the lua/ directory beside this program. Messages name `who`. Returns 0
 * or an exit code. Shared by `run` (which then execs) and `record` (which
 * runs the command directly under perf: no jitsframe image before it). */
int cli_vm_env(const char *who, const char *moddir, const char *region,
	       int replace, int quiet)
{
	char dir[PATH_MAX + 8];
	if (!moddir) {
		if (cli_lua_dir(dir, sizeof(dir), "jitsframe.so") < 0) {
			fprintf(stderr,
				"%s: cannot find myself; use "
				"--module-dir\n",
				who);
			return EX_USAGE;
		}
		moddir = dir;
	}
	char so[PATH_MAX + 32];
	snprintf(so, sizeof(so), "%s/jitsframe.so", moddir);
	if (access(so, R_OK) != 0) {
		fprintf(stderr, "%s: %s: %s (build it with `make`)\n", who, so,
			strerror(errno));
		return EX_INPUT;
	}
	const char *old_init = getenv("LUA_INIT");
	if (setenv(JSF_ENV_LUA_INIT, old_init ? old_init : "", 1) ||
	    setenv("LUA_INIT", init_code, 1) || cli_prepend_cpath(moddir) ||
	    (region && setenv(JSF_ENV_REGION, region, 1)) ||
	    setenv(JSF_ENV_REGION_REPLACE, replace ? "1" : "0", 1) ||
	    setenv(JSF_ENV_QUIET, quiet ? "1" : "0", 1)) {
		fprintf(stderr, "%s: setenv: %s\n", who, strerror(errno));
		return EX_INPUT;
	}
	return 0;
}

int cmd_run(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"region", required_argument, 0, 'r'},
	    {"replace", no_argument, 0, 'R'},
	    {"module-dir", required_argument, 0, 'm'},
	    {"quiet", no_argument, 0, 'q'},
	    {"auditlog", required_argument, 0, 'a'},
	    {"level", required_argument, 0, 'L'},
	    {"auditlog-max", required_argument, 0, 'M'},
	    {"auditlog-keep", required_argument, 0, 'K'},
	    {"region-history", required_argument, 0, 'H'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	const char *region = NULL, *moddir = NULL, *alog = NULL, *alevel = NULL;
	const char *amax = NULL, *akeep = NULL, *rhist = NULL;
	char hbuf[16]; /* --region-history in decimal, as start() reads it */
	uint64_t num;
	int replace = 0, quiet = 0, c;
	optind = 1;
	opterr = 0;
	/* '+': stop at the first non-option (the command). */
	while ((c = getopt_long(argc, argv, "+ha:", lo, NULL)) != -1) {
		switch (c) {
		case 'r':
			region = optarg;
			break;
		case 'R':
			replace = 1;
			break;
		case 'm':
			moddir = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'a':
			alog = optarg;
			break;
		case 'L':
			if (strcmp(optarg, "default") &&
			    strcmp(optarg, "full")) {
				fprintf(stderr,
					"jitsframe run: --level is default "
					"or full\n");
				return EX_USAGE;
			}
			alevel = optarg;
			break;
		case 'M':
		case 'K':
			if (!cli_u64(optarg, &num)) {
				fprintf(stderr,
					"jitsframe run: bad number '%s'\n",
					optarg);
				return EX_USAGE;
			}
			*(c == 'M' ? &amax : &akeep) = optarg;
			break;
		case 'H':
			if (!cli_u64(optarg, &num) || !num ||
			    num > UINT32_MAX) {
				fprintf(
				    stderr,
				    "jitsframe run: --region-history is a "
				    "count from 1 to 4294967295, not '%s'\n",
				    optarg);
				return EX_USAGE;
			}
			snprintf(hbuf, sizeof(hbuf), "%llu",
				 (unsigned long long)num);
			rhist = hbuf;
			break;
		case 'h':
			fputs(usage, stdout);
			return EX_OK;
		default:
			return cli_bad_option("run", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "jitsframe run: no command given\n"
				"Try 'jitsframe run --help'.\n");
		return EX_USAGE;
	}
	int rc = cli_vm_env("jitsframe run", moddir, region, replace, quiet);
	if (rc)
		return rc;
	if ((alog && setenv(JSF_ENV_AUDITLOG, alog, 1)) ||
	    (alevel && setenv(JSF_ENV_AUDITLOG_LEVEL, alevel, 1)) ||
	    (amax && setenv(JSF_ENV_AUDITLOG_MAX, amax, 1)) ||
	    (akeep && setenv(JSF_ENV_AUDITLOG_KEEP, akeep, 1)) ||
	    (rhist && setenv(JSF_ENV_REGION_HISTORY, rhist, 1))) {
		perror("jitsframe run: setenv");
		return EX_INPUT;
	}
	if (!quiet) {
		char dir[4096] = "";
		if (region)
			fprintf(stderr, "jitsframe: region %s\n", region);
		else if (jsf_region_default_dir(dir, sizeof(dir), false) == 0 ||
			 dir[0])
			fprintf(stderr, "jitsframe: region %s/%d.region\n", dir,
				(int)getpid());
	}
	execvp(argv[optind], argv + optind);
	fprintf(stderr, "jitsframe run: cannot run %s: %s\n", argv[optind],
		strerror(errno));
	return 127;
}
