#!/usr/bin/env bash
# The module's trace facts read from memory (vm/traces.c, docs/VM.md), on
# Debian's luajit and OpenResty's luajit2 (TAP): on a trace-heavy workload
# the raw path turns on after its checks and reads most traces; with a
# wrong fact injected (JITSFRAME_VM_RAWFAULT: a loop offset off by one) the
# check against jit.util catches it on the first trace, the raw path stays
# off for the process and every trace is still published (from jit.util).
# Exactness of the rows themselves is tests/t_vm.sh's (it runs the raw path).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
LJ2=${LJ2_DIR:-$PWD/build/luajit2}/usr/bin/luajit
unset LUA_INIT LUA_INIT_5_1 JITSFRAME_REGION JITSFRAME_VM_RAWFAULT
export LUA_CPATH="$PWD/build/lua/?.so;;"
T=$(mktemp -d /tmp/jsf-t_vmraw-XXXXXX)
trap 'rm -rf "$T"' EXIT
PROG='local j = require("jitsframe")
assert(j.start{region = arg[1], replace = true, quiet = true})
assert(loadfile("bench/workloads/sidetraces.lua"))("0.2")
local s = j.stats()
io.stderr:write(string.format("%d %d %d %s %d %d %s\n", s.traces, s.published,
  s.skipped, s.raw, s.raw_traces, s.raw_checked, tostring(s.raw_off):gsub(" ", "_")))'
vms="luajit"
if [ -x "$LJ2" ]; then vms="$vms $LJ2"; elif [ "${CI:-}" = true ]; then
	notok "luajit2 present" "$LJ2 missing under CI"; fi
for vm in $vms; do
	env LUA_PATH="${LJ2%/bin/luajit}/share/luajit-2.1.0-beta3/?.lua;;" \
		"$vm" -e "$PROG" "$T/r" >/dev/null 2>"$T/out"
	read -r tr pub sk raw rt rc off <"$T/out"
	if [ "${raw:-}" = on ] && [ "$tr" -gt 100 ] && [ "$pub" = "$tr" ] &&
		[ "$rt" -gt $((tr / 2)) ] && [ "$rc" -ge 4 ] && [ "$off" = nil ]; then
		ok "$vm: raw facts on ($rt of $tr traces from memory, $rc checked)"
	else notok "$vm: raw facts on" "$(cat "$T/out")"; fi
	JITSFRAME_VM_RAWFAULT=1 \
		env LUA_PATH="${LJ2%/bin/luajit}/share/luajit-2.1.0-beta3/?.lua;;" \
		"$vm" -e "$PROG" "$T/r" >/dev/null 2>"$T/out"
	read -r tr pub sk raw rt rc off <"$T/out"
	if [ "${raw:-}" = off ] && [ "$rt" = 0 ] && [ "$tr" -gt 100 ] &&
		[ "$pub" = "$tr" ] && [ "$sk" = 0 ] && [[ $off == *disagree* ]]; then
		ok "$vm: an injected wrong fact is caught, jit.util publishes all $tr"
	else notok "$vm: injected fault caught" "$(cat "$T/out")"; fi
done
echo "1..$n"
[ "$fails" = 0 ]
