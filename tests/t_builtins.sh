#!/bin/bash
# LuaJIT's builtins named in native frames (issue 13: "builtins and C
# functions called from Lua named"; TAP). Debian's luajit is stripped: a
# profile showed [luajit+0x6f610] where the program was in string.gsub.
# The module publishes each builtin written in C at its C address, under
# LuaJIT's own name (jit.util.funcinfo, jit.vmdef.ffnames; vm/ffnames.c),
# in its region's runtime area (docs/ABI.md 1.6, "LJFF"); report and
# profile give the name to the native frame whose function starts there.
# Per VM (Debian's luajit; OpenResty's luajit2 when built in build/luajit2):
#  1. tests/lua/ffunique.lua: with every library of the VM loaded, each
#     published address is exactly one builtin's and the name LuaJIT's own
#     for it (none of the builtins sharing a C handler, math.abs/floor/ceil
#     say, is named); a library loaded after start() (table.new) is named
#     at a later look (the 1st, 2nd, 4th, 8th... trace event).
#  2. `jitsframe profile` (root, BPF) of tests/lua/builtins.lua, whose five
#     jit.off functions each spend their time in one builtin (two of which
#     call back into Lua): every frame named as a builtin sits under the
#     one function that calls it, and >= 95% of the native frames right
#     under each of those functions carry the name; each callback under the
#     builtin that calls it (tests/builtins_check.py, ground truth the
#     script's own structure and debug.getinfo lines).
#  3. `jitsframe record` (perf): the callbacks' frames (their traces) under
#     the builtin that calls them; each of the five named in >= 20 samples.
# Planted (Debian's luajit): each builtin published under the next id's
# name (JITSFRAME_VM_FFNAME_SHIFT) must fail 1, 2 and 3. Without jit.vmdef
# (no names to give): one message, none named, the interpreter still.
# Without root, BPF or perf, those cases skip visibly; under CI=true they
# fail instead.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
T=$(mktemp -d /tmp/jsf-t_builtins-XXXXXX)
trap 'rm -rf "$T"' EXIT
export LUA_CPATH="$PWD/build/lua/?.so;;"
why=$(bpf_missing) bpf=1
[ -z "$why" ] || bpf=0
perf=1
command -v perf >/dev/null || perf=0
# stacks CMD MODE TAG: tests/lua/builtins.lua under `jitsframe CMD`, its
# stacks checked (tests/builtins_check.py MODE): the check's line and status
stacks() {
	local d=$T/$3-$1
	"$J" "$1" -F 1999 -o "$d" -- "$LJ" tests/lua/builtins.lua 1 >"$d.out" 2>"$d.err"
	python3 tests/builtins_check.py "$2" "$d/stacks.folded" "$d.out"
}
vms=(debian)
[ -x "${LJ2_DIR:-$PWD/build/luajit2}/usr/bin/luajit" ] && vms+=(openresty)
echo "1..$((4 * ${#vms[@]} + 4))"
for vm in "${vms[@]}"; do
	vm_env "$vm"
	# 1. the published names against every builtin
	while read -r line; do
		case $line in
		"ok "*) ok "$vm: ${line#ok }" ;;
		"not ok "*) notok "$vm: ${line#not ok }" ;;
		esac
	done < <("$LJ" tests/lua/ffunique.lua "$J" "$T/$vm-uniq.region" 2>&1)
	# 2. profile: mixed stacks; 3. record: perf's samples, our report
	if [ $bpf = 1 ]; then
		check "$vm: profile: each builtin's frame named and under its one caller" \
			stacks profile mixed "$vm"
	else skip_case_ci "$vm: profile: builtins named ($why)"; fi
	if [ $perf = 1 ]; then
		check "$vm: record: builtins named, each callback under the builtin that calls it" \
			stacks record perf "$vm"
	else skip_case_ci "$vm: record: builtins named (no perf)"; fi
done
# a VM without jit.vmdef (its jit/*.lua not on the path): one message, no
# builtin named (nothing to name them by), the interpreter still named,
# the trace's rows published
vm_env debian
out=$(LUA_PATH="/nonexistent/?.lua" "$LJ" -e 'assert(require("jitsframe").start{region = "'"$T/novmdef.region"'", replace = true})
	local s = 0 for i = 1, 1000 do s = s + i end' 2>&1)
names=$("$J" region dump "$T/novmdef.region" --builtins 2>/dev/null)
funcs=$("$J" region dump "$T/novmdef.region" --all 2>/dev/null | grep -c '^0x')
if [ "$(grep -c 'builtins not named: no jit.vmdef' <<<"$out")" = 1 ] &&
	! grep -q '^builtin ' <<<"$names" && grep -q "^interpreter .* luajit_interpreter$" <<<"$names" &&
	[ "$funcs" -ge 1 ]; then
	ok "without jit.vmdef: one message, no builtin named, the interpreter named, $funcs trace(s) published"
else notok "without jit.vmdef: one message, no builtin named, the interpreter named, traces published" "$out" "$names" "functions: $funcs"; fi
# planted: every name one id off
vm_env debian
export JITSFRAME_VM_FFNAME_SHIFT=1
out=$("$LJ" tests/lua/ffunique.lua "$J" "$T/plant.region" 2>&1 | head -1)
case $out in
"not ok"*"where LuaJIT says"*) ok "planted (names one id off): the published names fail (${out:0:160})" ;;
*) notok "planted (names one id off): the published names must fail on their names" "$out" ;;
esac
# planted CMD MODE: the builtins' stacks under `jitsframe CMD` must fail
# (on wrong names, not on missing ones)
planted() {
	local out
	if ! out=$(stacks "$1" "$2" plant) && [[ $out == "wrong: "[1-9]* ]]; then
		ok "planted: $1's check fails (${out:0:120})"
	else notok "planted: $1's check must fail on wrong names" "$out"; fi
}
if [ $bpf = 1 ]; then planted profile mixed; else skip_case_ci "planted: profile ($why)"; fi
if [ $perf = 1 ]; then planted record perf; else skip_case_ci "planted: record (no perf)"; fi
exit $((fails > 0))
