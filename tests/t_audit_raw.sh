#!/usr/bin/env bash
# The auditlog's raw trace reader (lj/ljtrace.c, TAP). Ground truth is
# jit.util: with JITSFRAME_AUDIT_RAWCHECK=1 every stopped trace of every
# workload is built twice, through jit.util and from the GCtrace's memory,
# and the two encodings must be the same bytes (a difference turns the raw
# reader off, which the test sees). On Debian's luajit and OpenResty's
# luajit2. Then: with the default checking the reader is on and does the
# work; with a fault injected in the raw build (JITSFRAME_AUDIT_RAWFAULT)
# the check turns it off, says why, and the log, written through jit.util,
# still replays to exactly what -jdump printed live; RAWCHECK=0 turns it
# off; a bad RAWCHECK value is refused by start().
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-build/jitsframe}
T=$(mktemp -d /tmp/jsf-t_audit_raw-XXXXXX)
trap 'rm -rf "$T"' EXIT
val() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }

LJ2=build/luajit2/usr/bin/luajit
# run VM NAME WORKLOAD SCALE [ENV...]: figures in $T/NAME.out
run() {
	local vm=$1 name=$2 w=$3 s=$4 lj=luajit
	shift 4
	[ "$vm" = openresty ] && lj=$LJ2
	rm -f "$T/$name".*
	env "$@" LUA_CPATH="build/lua/?.so;;" "$lj" tests/lua/audit_raw_run.lua \
		"$T/$name.out" "$T/$name.region" "$T/$name.log" "bench/workloads/$w.lua" "$s" \
		>/dev/null 2>"$T/$name.err"
}

WL="numeric:0.2 sidetraces:0.05 flushstorm:0.1 nested:0.2 openresty:0.2"
for vm in debian openresty; do
	if [ "$vm" = openresty ] && [ ! -x "$LJ2" ]; then
		skip_case "OpenResty luajit2 not unpacked (scripts/install-deps)"
		continue
	fi
	strs=0
	for ws in $WL; do
		w=${ws%%:*} s=${ws#*:} name=$vm-$w
		run "$vm" "$name" "$w" "$s" JITSFRAME_AUDIT_RAWCHECK=1
		o=$T/$name.out
		if [ -s "$o" ] && [ "$(val raw "$o")" = on ] && [ "$(val stops "$o")" -gt 0 ] &&
			[ "$(val raw_checked "$o")" = "$(val stops "$o")" ] && [ "$(val dropped "$o")" = 0 ]; then
			[ "$(val raw_strings "$o")" = true ] && strs=$((strs + 1))
			ok "$vm $w: all $(val stops "$o") traces: raw build = jit.util build, byte for byte (string constants raw: $(val raw_strings "$o"))"
		else
			notok "$vm $w: raw reader and jit.util disagree" "$(cat "$o" 2>/dev/null)" "$(head -3 "$T/$name.err")"
		fi
	done
	# string constants are read raw once their layout is learnt: the
	# comparisons above must have covered that path
	if [ "$strs" -ge 3 ]; then
		ok "$vm: string constants read raw (and compared) in $strs workloads"
	else
		notok "$vm: string constants read raw in only $strs workloads"
	fi
done

# default checking: the raw reader does the work
run debian dflt sidetraces 0.05
o=$T/dflt.out
st=$(val stops "$o") rt=$(val raw_traces "$o") rc=$(val raw_checked "$o")
if [ "$(val raw "$o")" = on ] && [ "${rt:-0}" -gt 0 ] && [ $((rt + rc)) = "$st" ] && [ "$rc" -lt "$st" ]; then
	ok "default: raw reader on, $rt of $st traces read raw, $rc checked against jit.util"
else
	notok "default: raw reader not used" "$(cat "$o")"
fi

# an injected fault: caught by the check, reader off, log still exact
rm -f "$T"/fault.*
INIT="assert(require('jitsframe').start{auditlog='$T/fault.log', level='full', quiet=true, region='$T/fault.region'}); local p = newproxy(true); getmetatable(p).__gc = function() local a = require('jitsframe').stats().auditlog; local f = io.open('$T/fault.out', 'w'); f:write('raw ', a.raw, '\nraw_off ', tostring(a.raw_off), '\n'); f:close() end; _G.__t_audit_raw = p"
JITSFRAME_AUDIT_RAWFAULT=1 LUA_CPATH="build/lua/?.so;;" LUA_INIT="$INIT" \
	luajit -jdump=tbimrsaT,"$T/fault.d" bench/workloads/nested.lua 0.05 >/dev/null 2>"$T/fault.err"
env -u LUA_INIT "$J" audit replay "$T/fault.log" -jdump=tbimrsaT,"$T/fault.d.r" 2>"$T/fault.rerr"
why=$(sed -n 's/^raw_off //p' "$T/fault.out" 2>/dev/null)
if [ "$(val raw "$T/fault.out" 2>/dev/null)" = off ] && [[ "$why" == *"no known layout gives what jit.util gives"* ]] &&
	[ -s "$T/fault.d" ] && cmp -s "$T/fault.d" "$T/fault.d.r"; then
	ok "fault injected: caught ('$why'), the log replays = live ($(wc -c <"$T/fault.d") bytes of -jdump)"
else
	notok "fault injected: not caught, or the log is wrong" "$(cat "$T/fault.out" 2>&1)" \
		"$(cmp "$T/fault.d" "$T/fault.d.r" 2>&1)" "$(head -3 "$T/fault.err" "$T/fault.rerr")"
fi

run debian off nested 0.1 JITSFRAME_AUDIT_RAWCHECK=0
if [ "$(val raw "$T/off.out")" = off ] && [ "$(val raw_traces "$T/off.out")" = 0 ] &&
	grep -q "raw_off JITSFRAME_AUDIT_RAWCHECK=0" "$T/off.out"; then
	ok "RAWCHECK=0: reader off, every trace through jit.util"
else
	notok "RAWCHECK=0 ignored" "$(cat "$T/off.out")"
fi

run debian bad nested 0.1 JITSFRAME_AUDIT_RAWCHECK=often
if [ ! -s "$T/bad.out" ] && grep -q "JITSFRAME_AUDIT_RAWCHECK=often: not a number" "$T/bad.err"; then
	ok "RAWCHECK=often: start() refuses it: $(grep -o 'JITSFRAME_AUDIT_RAWCHECK=often[^;]*' "$T/bad.err" | head -1)"
else
	notok "bad RAWCHECK accepted" "$(cat "$T/bad.err")"
fi
echo "1..$n"
[ "$fails" = 0 ]
