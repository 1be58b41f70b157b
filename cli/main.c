/* SPDX-License-Identifier: MIT */
/* jitsframe: the command-line tool. One file per command family. */
#include "cli.h"
#include "jitsframe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "Usage: jitsframe <command> [options]\n"
    "\n"
    "Make JIT-compiled code visible to profilers and unwinders.\n"
    "\n"
    "Commands:\n"
    "  run [opts] -- CMD...      run a LuaJIT program with the VM side on:\n"
    "                            exact unwind rows for every trace\n"
    "  record [-o DIR] -- CMD... profile CMD with perf through its traces:\n"
    "                            perf.data, folded stacks, a flame graph\n"
    "  report DIR                unwind a record directory's samples with\n"
    "                            jitsframe's own unwinder; profiles\n"
    "  region dump FILE          list a region's functions and unwind rows\n"
    "  region validate FILE      check a region against the kernel's SFrame\n"
    "                            rules and the region's own invariants\n"
    "  region validate --sframe FILE\n"
    "                            check a raw SFrame V3 section\n"
    "  region export FILE -o OUT write the live functions as a standalone\n"
    "                            SFrame section (V3, or V1 with --v1)\n"
    "  audit FILE [--dump N]     read an auditlog (run -a): traces like -jv,\n"
    "                            one trace's IR and machine code\n"
    "  audit replay FILE -jdump|-jv\n"
    "                            run LuaJIT's own jit/dump.lua, jit/v.lua\n"
    "                            on an auditlog\n"
    "\n"
    "Options:\n"
    "  -h, --help                this text\n"
    "  --version                 print the version (jitsframe X.Y.Z)\n"
    "\n"
    "Run 'jitsframe COMMAND --help' for the options of a command;\n"
    "man jitsframe for all of them.\n"
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  the check failed, or nothing matched\n"
    "  2  bad command line\n"
    "  3  cannot read the input or write the output\n";

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

int cli_write_file(const char *path, const void *buf, size_t len)
{
	size_t n = strlen(path);
	char *tmp = malloc(n + 16);
	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, n + 16, "%s.tmpXXXXXX", path);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		int e = errno;
		free(tmp);
		return -e;
	}
	const char *p = buf;
	int err = 0;
	while (len && !err) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno != EINTR)
			err = -errno;
		else if (w > 0) {
			p += w;
			len -= (size_t)w;
		}
	}
	if (!err && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	free(tmp);
	return err;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return EX_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") ||
	    !strcmp(cmd, "help")) {
		fputs(usage, stdout);
		return EX_OK;
	}
	if (!strcmp(cmd, "--version")) {
		printf("jitsframe %s\n", JSF_VERSION_STRING);
		return EX_OK;
	}
	if (!strcmp(cmd, "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "region"))
		return cmd_region(argc - 1, argv + 1);
	if (!strcmp(cmd, "audit"))
		return cmd_audit(argc - 1, argv + 1);
	fprintf(stderr, "jitsframe: unknown command '%s'\n%s", cmd, usage);
	return EX_USAGE;
}
