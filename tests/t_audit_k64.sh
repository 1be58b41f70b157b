#!/usr/bin/env bash
# The jit.util build's constant slots (vm/audit_build.c, k_two_slots, TAP):
# without the GCtrace's memory (raw reads off, or an aborted trace at the
# full level) the `k` map must leave out the second slot of every 64-bit
# constant, as the raw reader does from memory; tracek asked about such a
# slot decodes the value's bytes as a constant (a junk KGC is a wild
# pointer). Ground truth is the raw reader: the same deterministic program
# (tests/lua/audit_k64.lua: KNUM, KINT64, KGC, KPTR, KNULL, KSLOT) logged
# with raw reads on and with JITSFRAME_AUDIT_RAWCHECK=0 must list the same
# constant slots, trace by trace; then the full level (aborted traces
# through jit.util) runs and decodes. Debian's luajit and OpenResty's
# luajit2.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
T=$(mktemp -d /tmp/jsf-t_audit_k64-XXXXXX)
trap 'rm -rf "$T"' EXIT
LJ2=build/luajit2/usr/bin/luajit
for vm in debian openresty; do
	lj=luajit
	if [ "$vm" = openresty ]; then
		if [ ! -x "$LJ2" ]; then
			skip_case "OpenResty luajit2 not unpacked (scripts/install-deps)"
			continue
		fi
		lj=$LJ2
	fi
	for mode in raw jitutil full; do
		rc=
		lev=default
		[ $mode = jitutil ] && rc=0
		[ $mode = full ] && lev=full
		env JITSFRAME_AUDIT_RAWCHECK=$rc LUA_CPATH="build/lua/?.so;;" "$lj" tests/lua/audit_k64.lua \
			"$T/$vm-$mode.log" "$T/r" $lev >"$T/$vm-$mode.k" 2>"$T/$vm-$mode.err"
		echo $? >"$T/$vm-$mode.rc"
	done
	kinds=$(awk '$1 == "stop" { print $4 }' "$T/$vm-raw.k" | sort -u | tr '\n' ' ')
	if [ "$(cat "$T/$vm-raw.rc")" = 0 ] && [ "$(cat "$T/$vm-jitutil.rc")" = 0 ] &&
		[[ " $kinds" == *" 14 "* && " $kinds" == *" 4 "* && " $kinds" == *" 21 "* ]] &&
		cmp -s "$T/$vm-raw.k" "$T/$vm-jitutil.k"; then
		ok "$vm: constant slots through jit.util = from memory ($(wc -l <"$T/$vm-raw.k") slots, IR types $kinds)"
	else
		notok "$vm: constant slots through jit.util differ from memory (types: $kinds)" \
			"$(diff "$T/$vm-raw.k" "$T/$vm-jitutil.k" | head -8)" "$(head -3 "$T/$vm-raw.err" "$T/$vm-jitutil.err")"
	fi
	na=$(grep -c '^abort' "$T/$vm-full.k")
	if [ "$(cat "$T/$vm-full.rc")" = 0 ] && [ "$na" -gt 0 ]; then
		ok "$vm: full level, aborted traces through jit.util: runs and decodes ($na constant slots in abort records)"
	else
		notok "$vm: full level (rc $(cat "$T/$vm-full.rc"), $na abort slots)" "$(head -5 "$T/$vm-full.err")"
	fi
done
echo "1..$n"
[ $fails -eq 0 ]
