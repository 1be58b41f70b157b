#!/usr/bin/env bash
# A reused pid's region is not used (TAP). pids are reused and regions
# outlive their producers (a killed process leaves its file in the per-user
# default directory, docs/ABI.md section 8). A recorded command's process
# is born in the recording (perf's exec event), so report, looking for the
# region of a process that has JIT samples but none in DIR, must refuse
# one created before that birth, and must take one created after it.
# The command runs LuaJIT without the module (-E: no LUA_INIT), so it has
# trace samples and no region of its own; the test then writes, with
# build/tests/mkregion, a region naming that pid in a private TMPDIR's
# default directory: created at CLOCK_MONOTONIC 1 ns (long before: a
# reused pid's), then created 1 ns before the process's first sample
# (after its exec: its own).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-build/jitsframe}
MK=build/tests/mkregion
T=$(mktemp -d /tmp/jsf-t_reusedpid-XXXXXX)
trap 'rm -rf "$T"' EXIT
need_perf
perf stat -e cpu-clock true >/dev/null 2>&1 || skip_all_ci "perf cannot sample here"
command -v luajit >/dev/null || skip_all_ci "no luajit"
[ -x "$MK" ] || skip_all_ci "$MK not built (make $MK)"
export TMPDIR=$T/tmp
mkdir -m 700 "$TMPDIR"
U=$TMPDIR/jitsframe-$(id -u)
mkdir -m 700 "$U"

"$J" record -o "$T/d" -F 999 -- luajit -E bench/workloads/numeric.lua 0.3 >"$T/rec" 2>&1
pid=$(sed -nE 's/.*pid ([0-9]+) \(luajit\): [0-9]+ samples in JIT code but no region.*/\1/p' "$T/rec" | head -1)
if [ -n "$pid" ]; then
	ok "record of luajit -E (no module): pid $pid has JIT samples and no region"
else
	notok "record of luajit -E: a pid with JIT samples and no region" "$(tail -n 4 "$T/rec")"
	echo "1..$n"
	exit 1
fi
"$J" report --no-write --dump "$T/dump" "$T/d" >/dev/null 2>&1
t1=$(awk -v p="$pid" '$1 == "S" && $3 == p { print $2; exit }' "$T/dump")

# 1. a region of that pid created long before it (a reused pid's)
"$MK" "$U/$pid.region" "$pid" 1
"$J" report --no-write "$T/d" >"$T/r1" 2>&1
if ! grep -q "region of pid $pid found" "$T/r1" &&
	grep -q "pid $pid (luajit): [0-9]* samples in JIT code but no region" "$T/r1"; then
	ok "a region of pid $pid created before its exec in the recording: not used, the process named"
else
	notok "a region of pid $pid created before its exec: not used" "$(cat "$T/r1")"
fi

# 2. one created after its exec, before its first sample: its own
rm -f "$U/$pid.region"
if [ -n "$t1" ] && "$MK" "$U/$pid.region" "$pid" $((t1 - 1)) &&
	"$J" report --no-write "$T/d" >"$T/r2" 2>&1 &&
	grep -q "region of pid $pid found at $U/$pid.region" "$T/r2"; then
	ok "a region of pid $pid created after its exec: found by the convention"
else
	notok "a region of pid $pid created after its exec: found" "first sample at ${t1:-?}" "$(cat "$T/r2" 2>/dev/null)"
fi
echo "1..$n"
[ "$fails" -eq 0 ]
