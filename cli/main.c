/* SPDX-License-Identifier: MIT */
/* jitsframe: the command-line tool. main() dispatches to the commands,
 * one file per command family; their helpers are in util.c. */
#include "cli.h"
#include "jitsframe.h"

#include <stdio.h>
#include <string.h>

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
    "  record -p PID[,PID...]    the same on running processes\n"
    "  profile [-p PID,... | -a] [-- CMD...]\n"
    "                            sample stacks in the kernel (eBPF) through\n"
    "                            the live regions; the same profiles\n"
    "  report DIR                unwind a record directory's samples with\n"
    "                            jitsframe's own unwinder; profiles\n"
    "  report --auditlog LOG DIR the same for RaptorJIT, from its own log\n"
    "  region dump FILE          list a region's functions and unwind rows\n"
    "  region validate FILE      check a region against the kernel's SFrame\n"
    "                            rules and the region's own invariants\n"
    "  region validate --sframe FILE\n"
    "                            check a raw SFrame V3 section\n"
    "  region export FILE -o OUT write the live functions as a standalone\n"
    "                            SFrame section (V3, or V1 with --v1)\n"
    "  region ls                 the regions of running and exited processes\n"
    "  region find PID           the path of the region of process PID\n"
    "  region prune [DIR]        remove the regions of exited processes but\n"
    "                            the newest\n"
    "  region import LOG -o FILE a region from a RaptorJIT auditlog\n"
    "  audit FILE [--dump N]     read an auditlog (run -a): traces like -jv,\n"
    "                            one trace's IR and machine code\n"
    "  audit replay FILE -jdump|-jv\n"
    "                            run LuaJIT's own jit/dump.lua, jit/v.lua\n"
    "                            on an auditlog\n"
    "  vmprofile FILE            a RaptorJIT vmprofile: samples per trace\n"
    "                            and VM state, traces named from its log\n"
    "  vmprofile DIR | -p PID    LuaJIT's per-trace VM states (head, loop,\n"
    "                            ffi, gc, interpreter...) from profile's\n"
    "                            DIR, or sampled from running processes\n"
    "  top -p PID                the same, refreshed every second\n"
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
    "  3  cannot read the input or write the output\n"
    "  4  profile: cannot sample (no privilege, no BPF or BTF)\n";

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
	if (!strcmp(cmd, "profile"))
		return cmd_profile(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "region"))
		return cmd_region(argc - 1, argv + 1);
	if (!strcmp(cmd, "audit"))
		return cmd_audit(argc - 1, argv + 1);
	if (!strcmp(cmd, "vmprofile"))
		return cmd_vmprofile(argc - 1, argv + 1);
	if (!strcmp(cmd, "top"))
		return cmd_top(argc - 1, argv + 1);
	fprintf(stderr, "jitsframe: unknown command '%s'\n%s", cmd, usage);
	return EX_USAGE;
}
