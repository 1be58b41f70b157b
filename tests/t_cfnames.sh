#!/bin/bash
# C functions of Lua modules named in native frames (issue 13: "builtins
# and C functions called from Lua named"; TAP). A stripped module exports
# only its luaopen_ function: a profile showed [cjson.so+0x45d0] where the
# program was in cjson.encode. The module publishes each C function it
# finds in package.loaded's tables (vm/cfnames.c) at its C address
# (jit.util.funcinfo), under the name Lua code reaches it by, in its
# region's runtime area and extension (docs/ABI.md 1.6 "LJCF", 1.7);
# report and profile give the name to the native frame whose function
# starts there. The workload, tests/lua/cfuncs.lua, loads tests/cmod.c
# built and stripped (build/tests/cmod) and lua-cjson (build/nginx, as
# scripts/install-deps unpacks it) after the module started. Per VM
# (Debian's luajit; OpenResty's luajit2 when built in build/luajit2):
#  1. the names against ground truth from outside jitsframe
#     (tests/cfnames_check.py): each of cmod's functions at the address
#     nm gives it in the unstripped build, where the workload saw cmod.so
#     mapped; cjson's at LuaJIT's funcinfo address; the C function two
#     closures share (cmod.twin1, twin2) named by neither; a global alias
#     of cmod.spin (shorter) does not take its name; the region valid
#     (`region validate`, the extension checked);
#  2. `jitsframe profile` (root, BPF): every frame named as one of these
#     sits under the one Lua function that calls it, and >= 95% of the
#     native frames right above each such function carry its name
#     (tests/builtins_check.py, on the script's own CALL lines);
#  3. `jitsframe record` (perf): each named in >= 20 samples.
# Planted (Debian's luajit): each name published at the next address
# (JITSFRAME_VM_FFNAME_SHIFT) must fail 1 and 2.
# Without root, BPF or perf, those cases skip visibly; without lua-cjson
# its part is left out (said); under CI=true each of these fails instead.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
T=$(mktemp -d /tmp/jsf-t_cfnames-XXXXXX)
trap 'rm -rf "$T"' EXIT
C=$PWD/build/tests/cmod
NGX_CPATH=${NGX_DIR:-$PWD/build/nginx}/usr/lib/x86_64-linux-gnu/lua/5.1
export LUA_CPATH="$C/?.so;$NGX_CPATH/?.so;$PWD/build/lua/?.so;;"
nm "$PWD/build/tests/cmod-full/cmod.so" >"$T/nm" 2>/dev/null
why=$(bpf_missing) bpf=1
[ -z "$why" ] || bpf=0
perf=1
command -v perf >/dev/null || perf=0
# cjson: in the names' NEED when it loads; required under CI=true
need=()
if [ -e "$NGX_CPATH/cjson.so" ]; then need=(cmod.spin cmod.churn cmod.nested.deep cmodfn cjson.encode cjson.decode)
elif [ "${CI:-}" = true ]; then need=(cjson.encode); fi
# names VM TAG: the workload under the module (its region in $T), the
# published names checked; a global alias (cspin = cmod.spin, there when
# the module starts) must not take the module's name
names() {
	local r=$T/$2.region
	"$LJ" -e "cspin = require('cmod').spin" \
		-e "assert(require('jitsframe').start{region = '$r', replace = true})" \
		tests/lua/cfuncs.lua 0.1 >"$T/$2.out" 2>"$T/$2.err" || { cat "$T/$2.err"; return 1; }
	"$J" region dump "$r" --builtins --json >"$T/$2.json" || return 1
	"$J" region validate "$r" >/dev/null || { "$J" region validate "$r"; return 1; }
	python3 tests/cfnames_check.py "$T/$2.json" "$T/$2.out" "$T/nm" "${need[@]}"
}
# stacks CMD MODE TAG: the workload under `jitsframe CMD`, its stacks
# checked (tests/builtins_check.py MODE)
stacks() {
	local d=$T/$3-$1
	"$J" "$1" -F 1999 -o "$d" -- "$LJ" tests/lua/cfuncs.lua 1 >"$d.out" 2>"$d.err"
	python3 tests/builtins_check.py "$2" "$d/stacks.folded" "$d.out" cfuncs.lua
}
vms=(debian)
[ -x "${LJ2_DIR:-$PWD/build/luajit2}/usr/bin/luajit" ] && vms+=(openresty)
echo "1..$((3 * ${#vms[@]} + 2 + 1))"
if [ -s "$T/nm" ] && grep -q ' cmod_spin$' "$T/nm" && [ -e "$C/cmod.so" ]; then
	ok "tests/cmod.c built, and stripped for the workload"
else
	notok "tests/cmod.c built (build/tests/cmod: make check-build)"
fi
[ ${#need[@]} -gt 0 ] || echo "# lua-cjson not in $NGX_CPATH: cmod alone (scripts/install-deps unpacks it)"
for vm in "${vms[@]}"; do
	vm_env "$vm"
	check "$vm: each C function published at its own address (nm, LuaJIT), the shared one unnamed" \
		names "$vm" "$vm-names"
	if [ $bpf = 1 ]; then
		check "$vm: profile: each C function's frame named and under its one caller" \
			stacks profile mixed "$vm"
	else skip_case_ci "$vm: profile: C functions named ($why)"; fi
	if [ $perf = 1 ]; then
		check "$vm: record: C functions named" stacks record perf "$vm"
	else skip_case_ci "$vm: record: C functions named (no perf)"; fi
done
# planted: every name at the next address
vm_env debian
export JITSFRAME_VM_FFNAME_SHIFT=1
if ! out=$(names debian plant-names) && [[ $out == *" at 0x"*", nm says "* ]]; then
	ok "planted (names one address off): the names check fails (${out:0:120})"
else notok "planted (names one address off): the names check must fail on addresses" "$out"; fi
if [ $bpf = 1 ]; then
	if ! out=$(stacks profile mixed plant) && [[ $out == "wrong: "[1-9]* ]]; then
		ok "planted: profile's check fails (${out:0:120})"
	else notok "planted: profile's check must fail on wrong names" "$out"; fi
else skip_case_ci "planted: profile ($why)"; fi
exit $((fails > 0))
