#!/bin/bash
# SPDX-License-Identifier: MIT
# Each trace's Lua-frame map (docs/ABI.md 1.5) against LuaJIT's own
# answers, on both VMs and the workload set (tests/lua/luamap_oracle.lua:
# every guard's frames equal its snapshot's as jit.util lists them, inlined
# callees and callers' lines included; each side trace starts where the map
# says its parent's guard is), and a planted off-by-one
# (JITSFRAME_VM_LUAMAP_SHIFT) must fail it.
set -u
cd "$(dirname "$0")/.."
J=build/jitsframe
LIB=$(ls build/libjitsframe.so.1.* | head -1)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
n=0
echo "1..11"
check() { # vm workload [env...]
	local vm=$1 w=$2
	shift 2
	env JITSFRAME_LUAMAP=1 "$@" "$J" run --quiet --region "$T/r" --replace -- "$vm" \
	    tests/lua/luamap_oracle.lua "$LIB" "$T/r" "$w" >"$T/out" 2>"$T/err"
}
for vm in luajit build/luajit2/usr/bin/luajit; do
	for w in numeric nested openresty sidetraces flushstorm; do
		n=$((n + 1))
		if check "$vm" bench/workloads/$w.lua &&
		    grep -q "0 mismatches" "$T/out" &&
		    ! grep -q " 0 exact" "$T/out"; then
			echo "ok $n - $vm $w: $(grep '^luamap:' "$T/out")"
		else
			echo "not ok $n - $vm $w: $(grep '^luamap:' "$T/out")"
			head -5 "$T/err"
			fail=1
		fi
	done
done
n=$((n + 1))
if check luajit bench/workloads/numeric.lua JITSFRAME_VM_LUAMAP_SHIFT=1; then
	echo "not ok $n - the planted off-by-one was not caught: $(grep '^luamap:' "$T/out")"
	fail=1
else
	echo "ok $n - the planted off-by-one is caught: $(grep '^luamap:' "$T/out")"
fi
exit $fail
