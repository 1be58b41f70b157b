/* SPDX-License-Identifier: MIT */
/* The CLI's `region` commands: outputs, exit codes, error messages. */
#include "harness.h"
#include "jitsframe.h"

#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *cli;
static char dir[64], out[65536];

/* Run a shell command, capture stdout+stderr into `out`, return exit code. */
static int run(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char full[2200];
	snprintf(full, sizeof(full), "%s 2>&1", cmd);
	FILE *p = popen(full, "r");
	size_t n = p ? fread(out, 1, sizeof(out) - 1, p) : 0;
	out[n] = 0;
	int st = p ? pclose(p) : -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void make_region(const char *path, int nfuncs)
{
	struct jsf_region *r;
	struct jsf_region_opts o = {.sz = sizeof(o),
				    .flags = JSF_REGION_REPLACE};
	if (jsf_region_create(&r, path, &o))
		abort();
	for (int i = 0; i < nfuncs; i++) {
		struct jsf_row rows[2] = {
		    {.offset = 0, .cfa_base = JSF_SP, .cfa_offset = 96},
		    {.offset = 7,
		     .cfa_base = JSF_SP,
		     .cfa_offset = 96 + 16 * i,
		     .has_fp = true,
		     .fp_offset = -16},
		};
		/* descending, like LuaJIT */
		jsf_region_add(r, 0x7f0000010000ull - 0x100 * (uint64_t)i, 0x80,
			       rows, 2, 100 + i);
	}
	if (nfuncs > 1)
		jsf_region_remove(r, 0x7f0000010000ull, 1000);
	jsf_region_destroy(r);
}

int main(void)
{
	cli = getenv("JSF_CLI") ? getenv("JSF_CLI") : "build/jitsframe";
	snprintf(dir, sizeof(dir), "/tmp/jsf-t_cli-XXXXXX");
	if (!mkdtemp(dir))
		return 2;
	char reg[128], empty[128];
	snprintf(reg, sizeof(reg), "%s/region", dir);
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	make_region(reg, 4);
	make_region(empty, 0);

	CASE("--help and usage errors")
	{
		CHECK_EQ(run("%s --help", cli), 0);
		CHECK(strstr(out, "Exit status"), "help documents exit codes");
		CHECK_EQ(run("%s region --help", cli), 0);
		CHECK(strstr(out, "export FILE -o OUT"), "region help");
		CHECK_EQ(run("%s", cli), 2);
		CHECK_EQ(run("%s frobnicate", cli), 2);
		CHECK(strstr(out, "unknown command"), "%s", out);
		CHECK_EQ(run("%s region dump", cli), 2);
		CHECK_EQ(run("%s region dump %s --bogus", cli, reg), 2);
		CHECK(strstr(out, "--bogus"), "names the bad option: %s", out);
		CHECK_EQ(run("%s region dump %s --at abc", cli, reg), 2);
		CHECK_EQ(run("%s region export %s", cli, reg), 2);
		CHECK(strstr(out, "-o"), "%s", out);
		/* a PID past int is a usage error, not atoi's wrapped value
		 * (99999999999 looked for pid 1215752191) */
		CHECK_EQ(run("%s region find 99999999999", cli), 2);
		CHECK(strstr(out, "find needs one PID") &&
			  !strstr(out, "1215752191"),
		      "%s", out);
		CHECK_EQ(run("%s region find 0", cli), 2);
	}
	CASE("dump: live functions, --all, --at, --json")
	{
		CHECK_EQ(run("%s region dump %s", cli, reg), 0);
		CHECK(strstr(out, "closed"), "%s", out);
		CHECK(strstr(out, "3 live of 4 logged"), "%s", out);
		CHECK(strstr(out, "0x7f000000fd00-0x7f000000fd80"), "%s", out);
		CHECK(!strstr(out, "0x7f0000010000-"), "removed one hidden: %s",
		      out);
		CHECK(strstr(out, "cfa=sp+144  fp=c-16"), "rows shown: %s",
		      out);
		CHECK_EQ(run("%s region dump %s --all", cli, reg), 0);
		CHECK(
		    strstr(out,
			   "0x7f0000010000-0x7f0000010080 size 128, added 100, "
			   "removed 1000"),
		    "%s", out);
		CHECK_EQ(run("%s region dump %s --at 101", cli, reg), 0);
		CHECK(strstr(out, "0x7f0000010000-") &&
			  strstr(out, "0x7f000000ff00-") &&
			  !strstr(out, "0x7f000000fe00-"),
		      "as of t=101 exactly two: %s", out);
		CHECK_EQ(run("%s region dump %s --json", cli, reg), 0);
		CHECK(
		    strstr(out, "\"live_functions\":3") &&
			strstr(out, "{\"start\":139637976792320,\"size\":128"),
		    "%s", out);
		CHECK_EQ(run("%s region dump %s/nope", cli, dir), 3);
		CHECK(strstr(out, "No such file"), "%s", out);
	}
	CASE("validate: valid, corrupted, raw sections")
	{
		CHECK_EQ(run("%s region validate %s", cli, reg), 0);
		CHECK(strstr(out, "valid: 3 live functions"), "%s", out);
		CHECK_EQ(run("%s region validate %s --json", cli, reg), 0);
		CHECK(strstr(out, "\"valid\":true"), "%s", out);
		/* corrupt the SFrame magic in a copy */
		char bad[160];
		snprintf(bad, sizeof(bad), "%s/bad", dir);
		CHECK_EQ(
		    run("cp %s %s && printf '\\377' | dd of=%s bs=1 seek=%d "
			"conv=notrunc status=none",
			reg, bad, bad, 4096 + 64 + 1),
		    0);
		CHECK_EQ(run("%s region validate %s", cli, bad), 1);
		CHECK(strstr(out, "INVALID") && strstr(out, "SFrame"), "%s",
		      out);
		CHECK_EQ(run("%s region validate /etc/passwd", cli), 1);
		CHECK(strstr(out, "INVALID"), "%s", out);
	}
	CASE("export: V3 validates at its address only; V1; empty region")
	{
		char v3[160], v1[160];
		snprintf(v3, sizeof(v3), "%s/out.v3", dir);
		snprintf(v1, sizeof(v1), "%s/out.v1", dir);
		CHECK_EQ(run("%s region export %s -o %s", cli, reg, v3), 0);
		CHECK(strstr(out, "SFrame V3, 3 functions"), "%s", out);
		struct stat st;
		CHECK(stat(v3, &st) == 0 && (st.st_mode & 0077) == 0,
		      "owner-only output");
		CHECK_EQ(run("%s region validate --sframe %s", cli, v3), 0);
		CHECK(strstr(out, "3 functions"), "%s", out);
		CHECK_EQ(run("%s region export %s -o %s --base 0x1000", cli,
			     reg, v3),
			 0);
		CHECK_EQ(
		    run("%s region validate --sframe %s --addr 0x1000 --text "
			"0x7f000000fd00:0x300",
			cli, v3),
		    0);
		CHECK_EQ(
		    run("%s region validate --sframe %s --addr 0x1000 --text "
			"0x7f000000fd00:0x200",
			cli, v3),
		    1);
		CHECK(strstr(out, "outside the text"), "%s", out);
		CHECK_EQ(run("%s region export %s -o %s --v1", cli, reg, v1),
			 0);
		CHECK(strstr(out, "V1, 3 functions") &&
			  strstr(out, "relative to 0x7f000000f000"),
		      "%s", out);
		CHECK_EQ(run("%s region export %s -o %s", cli, empty, v3), 1);
		CHECK(strstr(out, "no function selected"), "%s", out);
		CHECK_EQ(
		    run("%s region export %s -o %s/nodir/x", cli, reg, dir), 3);
		CHECK(strstr(out, "cannot write"), "%s", out);
	}
	run("rm -rf %s", dir);
	return h_exit();
}
