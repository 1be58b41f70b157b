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
n=0 fails=0
for vm in debian openresty; do
	case $vm in
	debian) LJ=${LUAJIT:-/usr/bin/luajit}; unset LUA_PATH ;;
	openresty)
		LJ=$LJ2_DIR/usr/bin/luajit
		export LUA_PATH="$LJ2_DIR/usr/share/luajit-2.1.0-beta3/?.lua;;" ;;
	esac
	if [ ! -x "$LJ" ]; then
		n=$((n + 1)); fails=$((fails + 1))
		echo "not ok $n - $vm: no $LJ (make deps)"
		continue
	fi
	out=$("$LJ" tests/lua/audit_func_check.lua "$T/$vm.log" 2>&1)
	rc=$?
	got=0
	while IFS= read -r line; do
		case $line in
		"ok "*) n=$((n + 1)); got=$((got + 1)); echo "ok $n - $vm: ${line#ok * - }" ;;
		"not ok "*) n=$((n + 1)); got=$((got + 1)); fails=$((fails + 1)); echo "not ok $n - $vm: ${line#not ok * - }" ;;
		*) echo "# $line" ;;
		esac
	done <<<"$out"
	if [ $rc -ne 0 ] || [ $got -lt 20 ]; then
		n=$((n + 1)); fails=$((fails + 1))
		echo "not ok $n - $vm: audit_func_check.lua exit $rc, $got results"
	fi
done
echo "1..$n"
[ $fails -eq 0 ]
