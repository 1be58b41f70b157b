/* SPDX-License-Identifier: MIT */
/*
 * `jitsframe audit replay FILE -jdump[=MODE[,OUTFILE]] -jv[=OUTFILE]`:
 * run LuaJIT's own jit/dump.lua and jit/v.lua on an auditlog. The work is
 * done by a Lua driver (vm/replay.lua, installed as lua/jitsframe_replay.lua
 * beside this program) under a real luajit; this only checks the command
 * line and execs it:
 *   luajit DIR/lua/jitsframe_replay.lua DIR FILE OPTION...
 * with LUA_CPATH starting with DIR/lua (the module decodes the log) and
 * without LUA_INIT (the replaying VM runs nothing of the user's). The
 * driver picks, among $JITSFRAME_LUAJIT, DIR/luajit2 and luajit on PATH,
 * the one whose jit.vmdef equals the log's, so that the jit/dump.lua that
 * ran live is the one that runs again.
 */
#include "cli.h"
#include "jsfenv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "Usage: jitsframe audit replay FILE -jdump[=MODE[,OUTFILE]] "
    "-jv[=OUTFILE]\n"
    "\n"
    "Run LuaJIT's own jit/dump.lua (-jdump) and jit/v.lua (-jv) on the\n"
    "auditlog FILE, as if they had been on in the logged process: the same\n"
    "options as luajit's -j, the same output. Both may be given together.\n"
    "Default output: -jdump to stdout (or $LUAJIT_DUMPFILE), -jv to stderr\n"
    "(or $LUAJIT_VERBOSEFILE).\n"
    "\n"
    "  " JSF_ENV_LUAJIT
    "  the luajit to replay with (by default, the first of\n"
    "                    it, OpenResty's luajit2 beside this program, and\n"
    "                    luajit on PATH whose tables match the log's VM)\n"
    "\n"
    "Exit status: 0 replayed; 1 the log is damaged (replayed up to the\n"
    "damage, with a message saying where); 2 bad command line; 3 cannot\n"
    "read the log or write the output; 127 no luajit.\n";

static int bad(const char *msg, const char *what)
{
	fprintf(stderr,
		"jitsframe audit replay: %s%s\nTry 'jitsframe audit "
		"replay --help'.\n",
		msg, what ? what : "");
	return EX_USAGE;
}

int audit_replay_main(int argc, char **argv)
{
	const char *file = NULL;
	int nopt = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage, stdout);
			return EX_OK;
		}
		if (!strcmp(a, "-j")) {
			if (++i >= argc)
				return bad("-j needs an argument", NULL);
			a = argv[i];
			if (strncmp(a, "dump", 4) && strncmp(a, "v", 1))
				return bad(
				    "only -jdump and -jv can be replayed: -j",
				    a);
			nopt++;
		} else if (!strncmp(a, "-j", 2)) {
			if (strncmp(a + 2, "dump", 4) && strncmp(a + 2, "v", 1))
				return bad(
				    "only -jdump and -jv can be replayed: ", a);
			nopt++;
		} else if (a[0] == '-' && a[1]) {
			return bad("unknown option ", a);
		} else if (!file) {
			file = a;
		} else {
			return bad("more than one log given: ", a);
		}
	}
	if (!file)
		return bad("no log given", NULL);
	if (!nopt)
		return bad("nothing to replay: give -jdump[=MODE[,OUTFILE]] "
			   "and/or -jv[=OUTFILE]",
			   NULL);
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "jitsframe audit replay: %s: %s\n", file,
			strerror(errno));
		return EX_INPUT;
	}
	close(fd);

	char self[PATH_MAX];
	if (cli_exe_dir(self, sizeof(self))) {
		fprintf(stderr, "jitsframe audit replay: cannot find myself\n");
		return EX_INPUT;
	}
	char driver[PATH_MAX + 64], ddir[PATH_MAX], lua[PATH_MAX];
	cli_lua_dir(ddir, sizeof(ddir), "jitsframe_replay.lua");
	snprintf(driver, sizeof(driver), "%s/jitsframe_replay.lua", ddir);
	cli_lua_dir(lua, sizeof(lua), "jitsframe.so");
	if (access(driver, R_OK) != 0) {
		fprintf(stderr,
			"jitsframe audit replay: %s: %s (build it with "
			"`make`)\n",
			driver, strerror(errno));
		return EX_INPUT;
	}
	int err = cli_prepend_cpath(lua);
	if (err || unsetenv("LUA_INIT")) {
		fprintf(stderr, "jitsframe audit replay: setenv: %s\n",
			strerror(err ? -err : errno));
		return EX_INPUT;
	}

	const char *luajit = getenv(JSF_ENV_LUAJIT);
	if (!luajit || !*luajit)
		luajit = "luajit";
	char **av = calloc((size_t)argc + 4, sizeof(*av));
	if (!av)
		return EX_INPUT;
	int k = 0;
	av[k++] = (char *)luajit;
	av[k++] = driver;
	av[k++] = self;
	av[k++] = (char *)file;
	for (int i = 1; i < argc; i++)
		if (argv[i] != file)
			av[k++] = argv[i];
	av[k] = NULL;
	execvp(luajit, av);
	fprintf(stderr, "jitsframe audit replay: cannot run %s: %s\n", luajit,
		strerror(errno));
	free(av);
	return 127;
}
