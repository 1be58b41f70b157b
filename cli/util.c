/* SPDX-License-Identifier: MIT */
/* The commands' small helpers (cli.h): numbers, JSON strings, this
 * program's directory, LUA_CPATH. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool cli_u64(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

int cli_bad_option(const char *cmd, const char *arg)
{
	fprintf(stderr,
		"jitsframe %s: unknown or incomplete option '%s'\n"
		"Try 'jitsframe %s --help'.\n",
		cmd, arg, cmd);
	return EX_USAGE;
}
int cli_exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0 || (size_t)n >= len - 1)
		return -1;
	buf[n] = 0;
	char *slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = 0;
	return 0;
}

int cli_lua_dir(char *out, size_t len, const char *name)
{
	/* the build tree (build/jitsframe, build/lua/), then an installed
	 * tree (PREFIX/bin/jitsframe, PREFIX/lib/lua/5.1/ for the C module,
	 * PREFIX/share/lua/5.1/ for Lua files) */
	static const char *const rel[] = {"lua", "../lib/lua/5.1",
					  "../share/lua/5.1"};
	char self[PATH_MAX], p[PATH_MAX + 64];
	if (cli_exe_dir(self, sizeof(self)))
		return -1;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s/%s", self, rel[i], name);
		if (access(p, R_OK) == 0) {
			snprintf(out, len, "%s/%s", self, rel[i]);
			return 0;
		}
	}
	snprintf(out, len, "%s/%s", self, rel[0]); /* for the message */
	return 1;
}

const char *cli_proc_stat(int pid, char *buf, size_t len)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	FILE *f = fopen(p, "re");
	if (!f || len < 2) {
		if (f)
			fclose(f);
		return NULL;
	}
	size_t n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	/* the command, in parentheses, may hold any byte: the last ')' */
	const char *rp = strrchr(buf, ')');
	return rp ? rp + 1 : NULL;
}

int cli_prepend_cpath(const char *dir)
{
	const char *old = getenv("LUA_CPATH");
	size_t need = strlen(dir) + (old ? strlen(old) : 2) + 16;
	char *cpath = malloc(need);
	if (!cpath)
		return -ENOMEM;
	snprintf(cpath, need, "%s/?.so;%s", dir, old ? old : ";");
	int err = setenv("LUA_CPATH", cpath, 1) ? -errno : 0;
	free(cpath);
	return err;
}

static void add_pid(int *pids, int *n, int max, int pid)
{
	for (int i = 0; i < *n; i++)
		if (pids[i] == pid)
			return;
	if (*n < max)
		pids[(*n)++] = pid;
}

void cli_add_children(int *pids, int *n, int max, int master)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/task", master);
	DIR *d = opendir(p);
	struct dirent *de;
	int seen = 0;
	while (d && (de = readdir(d))) {
		char cp[320];
		if (de->d_name[0] == '.' ||
		    snprintf(cp, sizeof(cp), "%s/%s/children", p, de->d_name) >=
			(int)sizeof(cp))
			continue;
		FILE *f = fopen(cp, "re");
		if (!f)
			continue;
		seen = 1;
		int c;
		while (fscanf(f, "%d", &c) == 1)
			add_pid(pids, n, max, c);
		fclose(f);
	}
	if (d)
		closedir(d);
	if (seen)
		return;
	d = opendir("/proc");
	while (d && (de = readdir(d))) {
		char buf[512];
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		int pid = atoi(de->d_name);
		const char *rp = cli_proc_stat(pid, buf, sizeof(buf));
		int ppid;
		if (rp && sscanf(rp, " %*c %d", &ppid) == 1 && ppid == master)
			add_pid(pids, n, max, pid);
	}
	if (d)
		closedir(d);
}

void cli_exes_add(struct cli_exes *x, const char *path)
{
	if (!path)
		return;
	size_t k = 0;
	while (k < x->n && strcmp(x->e[k].path, path))
		k++;
	if (k == x->n) {
		if (k == sizeof(x->e) / sizeof(x->e[0]) ||
		    !(x->e[k].path = strdup(path)))
			return;
		x->n++;
	}
	x->e[k].n++;
}

const char *cli_exes_top(const struct cli_exes *x)
{
	size_t best = 0;
	for (size_t k = 1; k < x->n; k++)
		if (x->e[k].n > x->e[best].n)
			best = k;
	return x->n ? x->e[best].path : NULL;
}

void cli_exes_free(struct cli_exes *x)
{
	for (size_t k = 0; k < x->n; k++)
		free(x->e[k].path);
	x->n = 0;
}
