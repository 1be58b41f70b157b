#!/bin/bash
# SPDX-License-Identifier: MIT
# Each trace's Lua-frame map (docs/ABI.md 1.5) against LuaJIT's own
# answers, on both VMs and the workload set (tests/lua/luamap_oracle.lua:
# every guard's frames equal its snapshot's as jit.util lists them, inlined
# callees and callers' lines included; each side trace starts where the map
# says its parent's guard is; a side trace's head checks the stack with
# its parent's exit number, tests/lua/stackcheck.lua, whose own exit of
# that number starts a side trace), and a planted off-by-one
# (JITSFRAME_VM_LUAMAP_SHIFT) must fail it. The maps come from the
# trace's memory once that build gave the jit.util build's bytes (the
# checked traces): a planted fault there (JITSFRAME_VM_LUAMAP_RAWBUG) must
# turn it off with every map still exact. Each map's loop (map flag LOOPS,
# range flag LOOP) against jit.util.tracemc's loop offset, with the Lua
# frames on and off (tests/lua/loopmap_oracle.lua: off, the map of the
# loop alone).
set -u
cd "$(dirname "$0")/.."
J=build/jitsframe
LIB=$(ls build/libjitsframe.so.1.* | head -1)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
n=0
echo "1..18"
check() { # vm workload [env...]
	local vm=$1 w=$2
	shift 2
	env JITSFRAME_LUAMAP=1 "$@" "$J" run --quiet --region "$T/r" --replace -- "$vm" \
	    tests/lua/luamap_oracle.lua "$LIB" "$T/r" "$w" >"$T/out" 2>"$T/err"
}
for vm in luajit build/luajit2/usr/bin/luajit; do
	for w in numeric nested openresty sidetraces flushstorm; do
		n=$((n + 1))
		# the maps the oracle checked were built from memory (all
		# but the checked ones and those with a constant of a kind
		# not seen before)
		if check "$vm" bench/workloads/$w.lua &&
		    grep -q "0 mismatches" "$T/out" &&
		    ! grep -q " 0 exact" "$T/out" &&
		    grep -q "^luamap_raw: on, [1-9][0-9]* of" "$T/out"; then
			echo "ok $n - $vm $w: $(grep '^luamap:' "$T/out"); $(grep '^luamap_raw:' "$T/out")"
		else
			echo "not ok $n - $vm $w: $(grep '^luamap' "$T/out" | tr '\n' ' ')"
			head -5 "$T/err"
			fail=1
		fi
	done
done
# the head's stack check goes to the parent's exit stub, which the
# trace's own exit of that number shares: the oracle must tell them
# apart (it restores the trace's start), or the side trace started from
# the real exit is compared with the head
for vm in luajit build/luajit2/usr/bin/luajit; do
	n=$((n + 1))
	if check "$vm" tests/lua/stackcheck.lua &&
	    grep -q "; [1-9][0-9]* stack checks ([1-9][0-9]* side traces from their exit); 0 mismatches" "$T/out"; then
		echo "ok $n - $vm stackcheck.lua: $(grep '^luamap:' "$T/out")"
	else
		echo "not ok $n - $vm stackcheck.lua: $(grep '^luamap' "$T/out" | tr '\n' ' ')"
		head -5 "$T/err"
		fail=1
	fi
done
n=$((n + 1))
if check luajit bench/workloads/numeric.lua JITSFRAME_VM_LUAMAP_SHIFT=1; then
	echo "not ok $n - the planted off-by-one was not caught: $(grep '^luamap:' "$T/out")"
	fail=1
else
	echo "ok $n - the planted off-by-one is caught: $(grep '^luamap:' "$T/out")"
fi
# a planted fault in the builder from memory (every line one too high):
# its check against the jit.util build must turn it off, and every map
# published stay exact
n=$((n + 1))
if check luajit bench/workloads/nested.lua JITSFRAME_VM_LUAMAP_RAWBUG=1 &&
    grep -q "0 mismatches" "$T/out" && ! grep -q " 0 exact" "$T/out" &&
    grep -q "^luamap_raw: off, 0 of .*from memory and from jit.util differ" "$T/out"; then
	echo "ok $n - a planted fault in the raw build is caught, the maps stay exact: $(grep '^luamap_raw:' "$T/out")"
else
	echo "not ok $n - a planted fault in the raw build: $(grep '^luamap' "$T/out" | tr '\n' ' ')"
	fail=1
fi
# each trace's loop as the map marks it, against jit.util.tracemc's loop
# offset (tests/lua/loopmap_oracle.lua): with the Lua frames on, and off
# (no JITSFRAME_LUAMAP: the map of the loop alone, no frames)
for vm in luajit build/luajit2/usr/bin/luajit; do
	for mode in off on; do
		n=$((n + 1))
		res=() ok=1
		for w in numeric nested openresty sidetraces flushstorm; do
			env $([ $mode = on ] && echo JITSFRAME_LUAMAP=1) "$J" run --quiet --region "$T/r" --replace -- \
			    "$vm" tests/lua/loopmap_oracle.lua "$LIB" "$T/r" $mode bench/workloads/$w.lua >"$T/out" 2>"$T/err"
			rc=$?
			line=$(grep '^loopmap' "$T/out")
			if [ $rc -ne 0 ] || ! echo "$line" | grep -q " 0 not published, 0 mismatches" ||
			    echo "$line" | grep -q "(0 with a loop)"; then
				ok=0
				echo "# $w: ${line:-no summary}"
				head -5 "$T/err" | sed 's/^/# /'
			fi
			res+=("$w $(echo "$line" | sed -E 's/.*: ([0-9]+) traces \(([0-9]+) with a loop\).*/\1\/\2/')")
		done
		if [ $ok = 1 ]; then
			echo "ok $n - $vm, Lua frames $mode: every trace's map marks its loop where tracemc says (traces/with a loop: ${res[*]})"
		else
			echo "not ok $n - $vm, Lua frames $mode: maps mark each trace's loop where tracemc says"
			fail=1
		fi
	done
done
exit $fail
