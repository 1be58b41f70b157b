/* SPDX-License-Identifier: MIT */
/*
 * Every environment variable shared between the CLI (cli/), the Lua
 * module (vm/), the libraries and the tests: one name each, with who sets
 * it, who reads it and what it means. Header only. Lua code (vm/replay.lua
 * and the LUA_INIT snippet's Lua text) spells the same names as literals.
 */
#ifndef COMMON_JSFENV_H
#define COMMON_JSFENV_H

/* --- the CLI's `run`/`record` -> the Lua module (jitsframe.start) --- */

/* set by `run --region`, read by start(): the region's path (else
 * BASE/jitsframe-UID/PID.region, jitsframe.h's jsf_region_default_dir) */
#define JSF_ENV_REGION "JITSFRAME_REGION"
/* set by the user (a count, or "all"), read by start() when its region goes
 * to the default directory: how many regions of processes that are gone
 * it keeps there, newest first (jitsframe.h's jsf_region_prune; default
 * 16, and at most 256 MiB of them, on a tmpfs a sixteenth of its size if
 * less); the others are removed */
#define JSF_ENV_REGION_KEEP "JITSFRAME_REGION_KEEP"
/* set by `run --region-history` (and users: a count >= 1), read by start():
 * removed traces the region keeps for time queries (jitsframe.h's
 * jsf_region_opts.history_max; default 1048576), the oldest dropped first */
#define JSF_ENV_REGION_HISTORY "JITSFRAME_REGION_HISTORY"
/* set by `run` ("1"/"0", --replace), read by the LUA_INIT snippet: start()
 * may replace an existing region file */
#define JSF_ENV_REGION_REPLACE "JITSFRAME_REGION_REPLACE"
/* set by `run` ("1"/"0", --quiet), read by the LUA_INIT snippet: start()
 * prints nothing */
#define JSF_ENV_QUIET "JITSFRAME_QUIET"
/* set by `run` to the user's own LUA_INIT, read (and run) by the LUA_INIT
 * snippet after it started the module */
#define JSF_ENV_LUA_INIT "JITSFRAME_LUA_INIT"
/* set by `record` (its output directory), read by start(): write perf's
 * jitdump (jit-PID.dump) into this directory */
#define JSF_ENV_JITDUMP "JITSFRAME_JITDUMP"
/* set by the user ("1"), read by start(): write /tmp/perf-PID.map */
#define JSF_ENV_PERFMAP "JITSFRAME_PERFMAP"
/* set by the user ("1"), read by start(): do not mlock the region's live
 * pages (jitsframe.h, JSF_REGION_NO_MLOCK) */
#define JSF_ENV_NO_MLOCK "JITSFRAME_NO_MLOCK"
/* set by record and profile (and users: "1"), read by start(): publish each
 * trace's Lua frames by machine-code offset (vm/luamap.c; it costs some
 * microseconds per trace stop, so it is off unless profiling) */
#define JSF_ENV_LUAMAP "JITSFRAME_LUAMAP"
/* set by `profile -- CMD` ("W,R": two pipe ends CMD inherits), read by
 * the module once it has published the VM's layout: it writes a byte to
 * W and waits (up to 1 s) for one on R, the profiler's word that the
 * sampler has the layout (the script's first samples get Lua frames);
 * then unset, the pipes closed (vm/luavm.c) */
#define JSF_ENV_PROFILE_SYNC "JITSFRAME_PROFILE_SYNC"
/* set by `run --auditlog`, read by start(): the auditlog's path */
#define JSF_ENV_AUDITLOG "JITSFRAME_AUDITLOG"
/* set by `run --auditlog-level`, read by start(): "default" or "full" */
#define JSF_ENV_AUDITLOG_LEVEL "JITSFRAME_AUDITLOG_LEVEL"
/* set by `run --auditlog-max`, read by start(): rotate at this many bytes */
#define JSF_ENV_AUDITLOG_MAX "JITSFRAME_AUDITLOG_MAX"
/* set by `run --auditlog-keep`, read by start(): rotated files kept */
#define JSF_ENV_AUDITLOG_KEEP "JITSFRAME_AUDITLOG_KEEP"

/* --- debugging knobs of the Lua module's auditlog (docs/AUDITLOG.md) --- */

/* set by the user or tests (non-empty, not "0"), read by the module's
 * auditlog open: write(2) every record, never a shared mapping */
#define JSF_ENV_AUDITLOG_NOMAP "JITSFRAME_AUDITLOG_NOMAP"
/* set by the user or tests (a count), read by the module's auditlog open:
 * check the raw trace reader against jit.util on one trace in N (0: no
 * raw reads) */
#define JSF_ENV_AUDIT_RAWCHECK "JITSFRAME_AUDIT_RAWCHECK"
/* set by tests/t_audit_raw.sh, read by the module's auditlog open: inject
 * a fault into the raw trace reader's output (tests only) */
#define JSF_ENV_AUDIT_RAWFAULT "JITSFRAME_AUDIT_RAWFAULT"
/* set by tests and benches, read by the module's auditlog open: write raw
 * stop records in version 1 (the encoding before version 2) */
#define JSF_ENV_AUDIT_RAWV1 "JITSFRAME_AUDIT_RAWV1"
/* set by tests/t_vmraw.sh, read by the module's start(): a wrong loop
 * offset in the trace facts read from memory (tests only: the check
 * against jit.util must catch it) */
#define JSF_ENV_VM_RAWFAULT "JITSFRAME_VM_RAWFAULT"
/* set by tests/t_luamap.sh, read by the module's start(): give each code
 * range of a trace's Lua-frame map the frames of the snapshot before its
 * own (a planted off-by-one: tests only, the oracle must catch it) */
#define JSF_ENV_VM_LUAMAP_SHIFT "JITSFRAME_VM_LUAMAP_SHIFT"
/* set by tests/t_builtins.sh, read by the module's builtin scan: each
 * builtin published under the name of the next fast-function id (a planted
 * fault: tests only, the stacks' known structure must catch it) */
#define JSF_ENV_VM_FFNAME_SHIFT "JITSFRAME_VM_FFNAME_SHIFT"
/* set by tests/t_luamap.sh, read by the module's start(): every line the
 * Lua-frame map's raw builder reads one too high (a planted fault: tests
 * only, its check against the jit.util builder must catch it) */
#define JSF_ENV_VM_LUAMAP_RAWBUG "JITSFRAME_VM_LUAMAP_RAWBUG"
/* set by tests/t_luastack.sh, read by the module's start(): one offset of
 * the Lua stack's layout off by 4 before it is checked (tests only: the
 * check must refuse it, nothing published) */
#define JSF_ENV_VM_LUAVM_FAULT "JITSFRAME_VM_LUAVM_FAULT"

/* --- `audit replay` and its Lua driver (vm/replay.lua) --- */

/* set by the user, read by `audit replay` and vm/replay.lua: the luajit to
 * replay with */
#define JSF_ENV_LUAJIT "JITSFRAME_LUAJIT"
/* set and read by vm/replay.lua when it re-runs itself under the luajit it
 * picked (Lua only) */
#define JSF_ENV_REPLAY_PICKED "JITSFRAME_REPLAY_PICKED"
/* set by tests/t_audit_replay.sh ("EV:K"), read by vm/replay.lua: skip the
 * K-th record of event EV (a self-test; Lua only) */
#define JSF_ENV_REPLAY_SKIP "JITSFRAME_REPLAY_SKIP"
/* set by the user or tests, read by vm/replay.lua: print the counts of
 * records and traces replayed at the end (Lua only) */
#define JSF_ENV_REPLAY_STATS "JITSFRAME_REPLAY_STATS"

/* --- the CLI's libraries --- */

/* set by tests (t_report.sh, non-empty, not "0"), read by unwind/
 * (elfcfi.c): ignore ELF .sframe sections, use .eh_frame/.debug_frame */
#define JSF_ENV_NO_SFRAME "JITSFRAME_NO_SFRAME"
/* set by the user or tests, read by profile/ (profile.c): the directory of
 * the HTML flame graph's viewer (else viewer/ beside the program, then
 * ../share/jitsframe/viewer) */
#define JSF_ENV_VIEWER "JITSFRAME_VIEWER"

/* tests only, read by the sampler's smp_open (sampler/sampler.c): the BTF
 * file to require instead of /sys/kernel/btf/vmlinux (a missing path: as
 * a kernel without BTF), and "1": act as a kernel without bpf(2) — so that
 * profile's messages and exit code for those kernels are tested here */
#define JSF_ENV_SAMPLER_BTF "JITSFRAME_SAMPLER_BTF"
#define JSF_ENV_SAMPLER_NOBPF "JITSFRAME_SAMPLER_NOBPF"

/* tests only, read by unwind/vmsub.c: "1" acts as a CPU without SSE4.1,
 * where no interpreter subroutine's rows are accepted (JIT code may call
 * them) */
#define JSF_ENV_VMSUB_NOSSE41 "JITSFRAME_VMSUB_NOSSE41"

#endif
