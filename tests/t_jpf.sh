#!/bin/bash
# Agreement with LuaJIT's own profiler (issue 13, TAP; root and BPF): on
# the workload set (bench/workloads/*.lua), on each VM that has jit.p
# (Debian's luajit; OpenResty's luajit2 when built in build/luajit2), the
# self share of each Lua function in `jitsframe profile -- luajit W` (the
# innermost Lua frame of each sample of stacks.folded, mixed mode) against
# LuaJIT's own profiler, run as `luajit -jp=Fi1` runs it (jit.profile,
# mode "fi1"; tests/lua/jpfref.lua keys each sample by the running
# function's source:firstline as well as -jp=F's label), in a separate run
# of the same workload and scale: every function with >= 5% on either side
# within 3 points (tests/jpf_compare.py says what "self" means on both).
# JPF_SCALE (default 6) scales the workloads (LuaJIT's profiler takes
# about 250 samples per CPU second here: the split is statistical).
# Known divergences, marked TODO (TAP: reported, not counted as failures):
# -jp=F charges a sample to the Lua function running at the VM's next
# profile check, not the one running when the timer fired: in C code when
# it returns to Lua or calls back into Lua (string.gsub's and table.sort's
# own time goes to their Lua callbacks), in trace code at the next
# function boundary the trace checks (an inlined callee's entry, a return,
# a coroutine's yield to its resumer). jitsframe charges the sample to the
# function running at the sample. So where time sits in C functions with
# Lua callbacks, in coroutines, or in traces that inline small functions,
# the two differ by design (nested.lua, openresty.lua, sidetraces.lua,
# numeric.lua's inlined A). Set JPF_STRICT=1 to count them.
# Without root or BPF it skips visibly; under CI=true it fails instead.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
T=$(mktemp -d /tmp/jsf-t_jpf-XXXXXX)
trap 'rm -rf "$T"' EXIT
need_bpf
vms=()
for lj in "${LUAJIT:-luajit}" "$PWD/build/luajit2/usr/bin/luajit"; do
	command -v "$lj" >/dev/null 2>&1 && "$lj" -e 'require("jit.p")' 2>/dev/null && vms+=("$lj")
done
[ ${#vms[@]} -gt 0 ] || skip_all_ci "no luajit with jit.p"
S=${JPF_SCALE:-6}
ws=(bench/workloads/*.lua)
echo "1..$((${#vms[@]} * ${#ws[@]}))"
for lj in "${vms[@]}"; do
	for w in "${ws[@]}"; do
		d="$T/$n"
		"$J" profile -o "$d" -- "$lj" "$w" "$S" >/dev/null 2>"$d.err"
		JPFREF_OUT="$d.ref" LUA_PATH="$PWD/tests/lua/?.lua;;" "$lj" -ljpfref "$w" "$S" >/dev/null
		if out=$(python3 tests/jpf_compare.py "$d/stacks.folded" "$d.ref" 5 3); then
			ok "$lj $w: within 3 points of -jp=F ($(echo "$out" | head -1))"
			echo "$out" | tail -n +2 | sed 's/^/# /'
		else
			case "$(basename "$w")" in
			nested.lua | openresty.lua | sidetraces.lua | numeric.lua)
				if [ "${JPF_STRICT:-}" != 1 ]; then
					n=$((n + 1))
					echo "not ok $n - $lj $w: every function >= 5% within 3 points of -jp=F # TODO -jp=F charges samples at its next profile check"
					echo "$out" | sed 's/^/#   /'
					continue
				fi
				;;
			esac
			# flushstorm: every function under or near 5%: a miss
			# within 6 points is -jp's sampling error (some 500
			# samples), shown as TODO; a bigger one fails
			if [ "${JPF_STRICT:-}" != 1 ] &&
				python3 tests/jpf_compare.py "$d/stacks.folded" "$d.ref" 5 6 >/dev/null; then
				n=$((n + 1))
				echo "not ok $n - $lj $w: every function >= 5% within 3 points of -jp=F # TODO within 6: -jp's sampling error"
				echo "$out" | sed 's/^/#   /'
				continue
			fi
			notok "$lj $w: every function >= 5% within 3 points of -jp=F" "$out"
		fi
	done
done
exit $((fails > 0))
