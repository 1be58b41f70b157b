#!/usr/bin/env bash
# The auditlog's func records (format 2: one LuaJIT bytecode dump per
# prototype, decoded by the reader, audit/auditfunc.c) answer what jit.util
# answers live: tests/lua/audit_func_check.lua compares, for a set of
# functions (stripped, vararg, child protos, int64/uint64/complex and table
# constants, 60 upvalues, > 255 and > 65535 lines, every chunk-name kind,
# loops patched by the VM), funcinfo(f, pc).currentline and loc for every
# pc, funcbc (instruction and mode), funck and funcuvname against the
# reader's decoding of the logged record; and that damaged dumps give an
# error. On Debian's luajit and OpenResty's luajit2 (TAP).
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/jsf-t_audit_func-XXXXXX)
trap 'rm -rf "$T"' EXIT
LJ2_DIR=${LJ2_DIR:-$PWD/build/luajit2}
export LUA_CPATH="$PWD/build/lua/?.so;;"
. tests/lib.sh
for vm in debian openresty; do
	vm_env "$vm"
	if [ ! -x "$LJ" ]; then
		notok "$vm: no $LJ (make deps)"
		continue
	fi
	out=$("$LJ" tests/lua/audit_func_check.lua "$T/$vm.log" 2>&1)
	rc=$?
	got=0
	while IFS= read -r line; do
		case $line in
		"ok "*) got=$((got + 1)); ok "$vm: ${line#ok * - }" ;;
		"not ok "*) got=$((got + 1)); notok "$vm: ${line#not ok * - }" ;;
		*) echo "# $line" ;;
		esac
	done <<<"$out"
	if [ $rc -ne 0 ] || [ $got -lt 20 ]; then
		notok "$vm: audit_func_check.lua exit $rc, $got results"
	fi
done
echo "1..$n"
[ $fails -eq 0 ]
