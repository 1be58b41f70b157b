/* SPDX-License-Identifier: MIT */
/* The commands' small helpers (cli.h): numbers, JSON strings, this
 * program's directory, LUA_CPATH. */
#include "cli.h"

#include <errno.h>
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
