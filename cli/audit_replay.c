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
 *
 * A RaptorJIT auditlog (rj_log_sniff) is first turned into our own
 * format's records (audit/rjaudit.c: rj_log_to_audit, its numbers mapped
 * by name onto the numbering of the luajit that will replay it, which
 * `jitsframe_replay.lua --names` prints) in an anonymous memory file, and
 * the driver runs on that, unchanged (docs/RAPTORJIT.md, "Replay").
 */
#include "auditlog.h"
#include "cli.h"
#include "jsfenv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static const char usage[] =
    "Usage: jitsframe audit replay FILE -jdump[=MODE[,OUTFILE]] "
    "-jv[=OUTFILE]\n"
    "\n"
    "Run LuaJIT's own jit/dump.lua (-jdump) and jit/v.lua (-jv) on the\n"
    "auditlog FILE, as if they had been on in the logged process: the same\n"
    "options as luajit's -j, the same output. Both may be given together.\n"
    "Default output: -jdump to stdout (or $LUAJIT_DUMPFILE), -jv to stderr\n"
    "(or $LUAJIT_VERBOSEFILE). A RaptorJIT auditlog is replayed from its\n"
    "raw structs, its numbers mapped by name onto this luajit's jit.vmdef\n"
    "(no recorded bytecode, exits or aborted IR: not in that log).\n"
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

/* The host's numbering: `LUAJIT DRIVER --names` prints "kind\tnumber\tname"
 * lines. 0, or -1 after a message. */
static int host_names(const char *luajit, const char *driver, struct rj_host *h)
{
	int p[2];
	if (pipe(p)) {
		perror("jitsframe audit replay: pipe");
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("jitsframe audit replay: fork");
		return -1;
	}
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execlp(luajit, luajit, driver, "--names", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	FILE *f = fdopen(p[0], "r");
	static const char *const kinds[RJH_NKINDS] = {
	    "ir", "bc", "irfield", "ircall", "irfpm", "ffnames"};
	char line[256];
	memset(h->n, 0, sizeof(h->n));
	while (f && fgets(line, sizeof(line), f)) {
		char *t1 = strchr(line, '\t'),
		     *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		if (!t2)
			continue;
		*t1 = 0;
		*t2 = 0;
		char *nl = strchr(t2 + 1, '\n');
		if (nl)
			*nl = 0;
		long i = strtol(t1 + 1, NULL, 10);
		for (int k = 0; k < RJH_NKINDS; k++)
			if (!strcmp(line, kinds[k]) && i >= 0 && i < RJH_MAX) {
				snprintf(h->name[k][i], RJH_NAME, "%s", t2 + 1);
				if ((uint32_t)i + 1 > h->n[k])
					h->n[k] = (uint32_t)i + 1;
			}
	}
	if (f)
		fclose(f);
	int st = 0;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || !h->n[RJH_IR]) {
		fprintf(stderr,
			"jitsframe audit replay: cannot read the IR names of "
			"%s's jit.vmdef (%s --names)\n",
			luajit, driver);
		return -1;
	}
	return 0;
}

/* A RaptorJIT log: convert it (into a memfd), run the driver on it as a
 * child, then say how the log ended. */
static int replay_rj(const char *file, const char *luajit, char **av,
		     int fileidx)
{
	struct rj_log *log;
	char msg[512];
	if (rj_log_open(&log, file, msg, sizeof(msg))) {
		fprintf(stderr, "jitsframe audit replay: %s: %s\n", file, msg);
		return EX_INPUT;
	}
	static struct rj_host host;
	if (host_names(luajit, av[1], &host)) {
		rj_log_close(log);
		return EX_INPUT;
	}
	int fd = memfd_create("jitsframe-rjreplay", 0);
	FILE *out = fd >= 0 ? fdopen(dup(fd), "w") : NULL;
	if (!out) {
		perror("jitsframe audit replay: memfd");
		rj_log_close(log);
		return EX_INPUT;
	}
	int err = rj_log_to_audit(log, &host, out, msg, sizeof(msg));
	if (fclose(out) && !err) {
		err = -EIO;
		snprintf(msg, sizeof(msg), "cannot write the converted log");
	}
	if (err) {
		fprintf(stderr, "jitsframe audit replay: %s: %s\n", file, msg);
		rj_log_close(log);
		return err == -EINVAL ? EX_FAIL : EX_INPUT;
	}
	char dmg[400] = "";
	if (rj_log_damage(log))
		snprintf(dmg, sizeof(dmg), "%s", rj_log_damage(log));
	rj_log_close(log);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	av[fileidx] = path;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		perror("jitsframe audit replay: fork");
		return EX_INPUT;
	}
	if (pid == 0) {
		execvp(luajit, av);
		fprintf(stderr, "jitsframe audit replay: cannot run %s: %s\n",
			luajit, strerror(errno));
		_exit(127);
	}
	close(fd);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	int rc = WIFEXITED(st) ? WEXITSTATUS(st) : EX_INPUT;
	if (dmg[0]) {
		fprintf(stderr, "jitsframe audit replay: %s: %s\n", file, dmg);
		if (rc == EX_OK)
			rc = EX_FAIL;
	}
	return rc;
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
	uint8_t head[8];
	ssize_t hn = read(fd, head, sizeof(head));
	close(fd);
	int rj = hn > 0 && rj_log_sniff(head, (size_t)hn);

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
	if (rj) {
		int rc = replay_rj(file, luajit, av, 3);
		free(av);
		return rc;
	}
	execvp(luajit, av);
	fprintf(stderr, "jitsframe audit replay: cannot run %s: %s\n", luajit,
		strerror(errno));
	free(av);
	return 127;
}
