#!/usr/bin/env bash
# The VM module on a full file system (TAP): the region's tmpfs runs out
# while LuaJIT keeps compiling. The host must run on unharmed (no SIGBUS:
# docs/ABI.md 3.6), say once that publishing stopped, and withdraw what it
# had published (no later flush would remove those rows, and their
# machine code is reused): the region ends valid with no function live.
# Needs root (the mount); skipped visibly otherwise, a failure under
# CI=true.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-build/jitsframe}
LJ=${LUAJIT:-luajit}
W=bench/workloads/flushstorm.lua
T=$(mktemp -d /tmp/jsf-t_vmfull-XXXXXX)
mkdir "$T/full"
trap 'umount "$T/full" 2>/dev/null; rm -rf "$T"' EXIT
[ "$(id -u)" = 0 ] || skip_all_ci "not root (the test mounts a small tmpfs)"
mount -t tmpfs -o size=256k,nosuid,nodev tmpfs "$T/full" ||
	skip_all_ci "cannot mount a tmpfs"
echo "1..3"

$LJ "$W" >"$T/plain.out" 2>&1
rc=0
"$J" run --region "$T/full/r" -- $LJ "$W" >"$T/mod.out" 2>"$T/mod.err" || rc=$?
if [ $rc -eq 0 ] && cmp -s "$T/plain.out" "$T/mod.out"; then
	ok "the host runs to the end with the same output (the region's file system full)"
else notok "the host on a full file system" "rc=$rc" "$(tail -5 "$T/mod.err")"; fi
n=$(grep -c "no more rows will be published" "$T/mod.err")
if [ "$n" = 1 ] && grep -q "No space left on device" "$T/mod.err"; then
	ok "one message: $(grep "no more rows" "$T/mod.err" | head -1)"
else notok "one message naming the cause" "$(cat "$T/mod.err")"; fi
live=$("$J" region dump "$T/full/r" --json 2>&1 | grep -c '"start"')
if "$J" region validate "$T/full/r" >"$T/val" 2>&1 && [ "$live" = 0 ] &&
	[ "$("$J" region dump "$T/full/r" --all --json 2>/dev/null | grep -c '"start"')" -gt 0 ]; then
	ok "the region is valid and no function is left live (its history kept)"
else notok "region after the failure" "live functions: $live" "$(cat "$T/val")"; fi
[ $fails -eq 0 ]
