#!/bin/bash
# Whole stacks (issue 13, TAP; root and BPF): `jitsframe profile -- luajit
# tests/lua/wholestack.lua` on each VM (Debian's luajit; OpenResty's
# luajit2 when built in build/luajit2), a workload with a statically known
# call structure and the JIT on: deep chains, recursion, pcall,
# string.gsub with a Lua callback, coroutine.wrap and coroutine.resume
# (the coroutine's frames, then its resumer's), an FFI callback called by C
# qsort, a function kept in the interpreter (jit.off) and traces. Ground
# truth: the script's structure and the first lines it prints from
# debug.getinfo (tests/wholestack_check.py). Per VM:
#   >= 99% of the samples carry the full Lua chain from the main chunk to
#   the running function, every call an edge of the structure, with the
#   native frames between them where the structure puts a VM entry (none
#   inside a Lua call, string.gsub's under its callback, the resumer's
#   interpreter under a coroutine, qsort_r under the FFI callback) and
#   lua_pcall below the main chunk.
# Without root or BPF it skips visibly; under CI=true it fails instead.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
T=$(mktemp -d /tmp/jsf-t_wholestack-XXXXXX)
trap 'rm -rf "$T"' EXIT
need_bpf
# judge DIR WHAT: DIR's whole stacks against the workload's FN lines,
# >= 99% of the samples
judge() {
	local d=$1 what=$2 out
	if out=$(python3 tests/wholestack_check.py "$d/stacks.folded" "$d.fn" 0.99); then
		ok "$what: whole stacks: $(echo "$out" | head -1)"
	else
		notok "$what: whole stacks in >= 99% of the samples" "$out" "$(tail -1 "$d.err")"
	fi
}
vms=("${LUAJIT:-luajit}")
L2=$PWD/build/luajit2/usr/bin/luajit
[ -x "$L2" ] && vms+=("$L2")
echo "1..$((3 * ${#vms[@]}))"
for lj in "${vms[@]}"; do
	d="$T/$(basename "$(dirname "$(dirname "$(dirname "$lj")")")")-$n"
	"$J" profile -o "$d" -- "$lj" tests/lua/wholestack.lua 3 >"$d.out" 2>"$d.err"
	grep '^FN ' "$d.out" >"$d.fn"
	judge "$d" "$lj"
	# interpreted (-joff): the samples in the subroutines the interpreter
	# calls (vm_mod for `%`, vm_ceil) keep their native frames below the
	# interpreter (unwind/vmsub.c's rows): >= 99% reach main()
	d="$d-joff"
	"$J" profile -o "$d" -- "$lj" -joff tests/lua/wholestack.lua 3 >"$d.out" 2>"$d.err"
	grep '^FN ' "$d.out" >"$d.fn"
	out=$(awk '{t += $NF; if ($0 ~ /;main;/) m += $NF} END {printf "%d of %d samples (%.2f%%)", m, t, t ? 100 * m / t : 0; exit !(t && m >= 0.99 * t)}' "$d/stacks.folded" 2>&1)
	if [ $? = 0 ]; then
		ok "$lj -joff: native frames reach main(): $out"
	else
		notok "$lj -joff: native frames reach main() in >= 99% of the samples" "$out" "$(tail -1 "$d.err")"
	fi
	judge "$d" "$lj -joff"
done
exit $((fails > 0))
