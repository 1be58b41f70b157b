#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A bounded region history (TAP): start{region_history = N},
# $JITSFRAME_REGION_HISTORY and `run --region-history N` (jitsframe.h's
# history_max) keep a process that flushes often in bounded memory.
# Workload: bench/workloads/flushstorm.lua at two scales (4x the traces;
# both end in a full jit.flush(), so no trace is live at the end), through
# tests/lua/history.lua. Ground truth: the VM's own count of the traces it
# compiled (its trace event, jit.attach) and a second process's reading of
# the region left behind (`jitsframe region dump --all`).
#  1. The default keeps every removed trace: history = the VM's count at
#     both scales, and the region grows with the run (>= 2.5x).
#  2. region_history=100: the removed traces kept and dropped add up to
#     the VM's count, some dropped; the region about the same size at 4x
#     the traces (<= 1.5x: 1.2-1.5 MB, the blocks' sizes vary with when
#     rebuilds fall) and a tenth or less of the default's.
#  3. The region left behind, read by another process: as many removed
#     functions as the module kept, and valid.
#  4. `run --region-history 100` (the environment variable): the same.
#  5. Anything but a count from 1 to 2^32-1 is refused, by start() (option
#     or environment) with its message and by run (exit 2).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
LJ=${LUAJIT:-luajit}
W=bench/workloads/flushstorm.lua
T=$(mktemp -d /tmp/jsf-t_history-XXXXXX)
trap 'rm -rf "$T"' EXIT
command -v "$LJ" >/dev/null || skip_all_ci "no $LJ"
export LUA_CPATH="$PWD/build/lua/?.so;;"
unset JITSFRAME_REGION_HISTORY
# traces NAME CMD...: CMD (a run of tests/lua/history.lua) and its
# TRACES line into vm hist drop bytes (empty without one), its stderr in
# $T/NAME.err; prints one line of them
traces() {
	local name=$1 line
	shift
	line=$("$@" 2>"$T/$name.err" | grep '^TRACES')
	read -r _ vm hist drop bytes <<<"$line"
	echo "$name: VM's traces ${vm:-?}, history ${hist:-?}, dropped ${drop:-?}, region ${bytes:-?} bytes"
}
# one NAME HISTORY SCALE: the workload with start() on $T/NAME.region
one() { traces "$1" "$LJ" tests/lua/history.lua "$T/$1.region" "$2" "$W" "$3"; }
echo "1..5"

one def1 - 0.5 >"$T/log"
d1=($vm $hist $drop $bytes)
one def4 - 2 >>"$T/log"
d4=($vm $hist $drop $bytes)
if [ "${d1[1]}" = "${d1[0]}" ] && [ "${d4[1]}" = "${d4[0]}" ] &&
    [ "${d1[2]}" = 0 ] && [ "${d4[2]}" = 0 ] &&
    [ $((d4[3] * 10)) -ge $((d1[3] * 25)) ]; then
	ok "default: every removed trace kept (${d1[1]}, ${d4[1]}), the region ${d1[3]} -> ${d4[3]} bytes"
else
	notok "default: every removed trace kept, the region growing" "$(cat "$T/log")"
fi

one b1 100 0.5 >"$T/log"
b1=($vm $hist $drop $bytes)
one b4 100 2 >>"$T/log"
b4=($vm $hist $drop $bytes)
if [ $((b1[1] + b1[2])) = "${b1[0]}" ] && [ $((b4[1] + b4[2])) = "${b4[0]}" ] &&
    [ "${b4[2]}" -gt 0 ] && [ $((b4[3] * 100)) -le $((b1[3] * 150)) ] &&
    [ $((b4[3] * 10)) -le "${d4[3]}" ]; then
	ok "region_history=100: kept + dropped = the VM's traces (${b4[1]} + ${b4[2]} = ${b4[0]}), the region ${b1[3]} -> ${b4[3]} bytes (default ${d4[3]})"
else
	notok "region_history=100: kept + dropped = the VM's traces, the region bounded" \
		"$(cat "$T/log")" "default at 2: ${d4[*]}"
fi

# the region left behind, read by another process
"$J" region dump "$T/b4.region" --all --json >"$T/b4.json" 2>"$T/b4.err"
logged=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["live_functions"], d["logged_functions"],
      sum(1 for f in d["functions"] if f["removed_ns"]))' "$T/b4.json" 2>&1)
read -r live lg removed <<<"$logged"
if [ "${live:-}" = 0 ] && [ "${lg:-}" = "${b4[1]}" ] && [ "${removed:-}" = "${b4[1]}" ] &&
    "$J" region validate "$T/b4.region" >"$T/val" 2>&1; then
	ok "the region left behind: ${lg} removed functions, as kept; valid"
else
	notok "the region left behind: as many removed functions as kept; valid" \
		"dump: $logged (kept ${b4[1]})" "$(cat "$T/b4.err" "$T/val" | head -5)"
fi

traces run "$J" run --quiet --replace --region "$T/run.region" --region-history 100 -- \
	"$LJ" tests/lua/history.lua - - "$W" 2 >"$T/log"
if [ -n "$vm" ] && [ $((hist + drop)) = "$vm" ] && [ "$drop" -gt 0 ] &&
    [ $((bytes * 100)) -le $((b1[3] * 150)) ]; then
	ok "run --region-history 100: ${hist} kept + ${drop} dropped = ${vm}, ${bytes} bytes"
else
	notok "run --region-history 100: bounded as start's option" "$(cat "$T/log")" \
		"$(head -3 "$T/run.err")"
fi

bad=""
for v in 0 -1 1.5 "'x'" "'12x'" true 4294967296; do
	out=$("$LJ" -e "local ok, e = require('jitsframe').start{quiet = true,
		region = '$T/bad.region', replace = true, region_history = $v}
		io.write(tostring(ok), ' ', tostring(e))" 2>&1)
	case $out in
	"nil jitsframe: region_history must be a count from 1 to 4294967295") ;;
	*) bad="$bad [$v: $out]" ;;
	esac
done
out=$(JITSFRAME_REGION_HISTORY=0 "$LJ" -e "local ok, e = require('jitsframe').start{
	quiet = true, region = '$T/bad.region', replace = true}
	io.write(tostring(ok), ' ', tostring(e))" 2>&1)
case $out in
"nil jitsframe: region_history must be a count from 1 to 4294967295") ;;
*) bad="$bad [JITSFRAME_REGION_HISTORY=0: $out]" ;;
esac
for v in 0 x 4294967296; do
	"$J" run --region-history $v -- true >/dev/null 2>"$T/rerr"
	rc=$?
	[ $rc = 2 ] && grep -q 'region-history is a count' "$T/rerr" ||
		bad="$bad [run --region-history $v: exit $rc: $(head -1 "$T/rerr")]"
done
if [ -z "$bad" ]; then
	ok "refused: 0, -1, 1.5, 'x', '12x', true, 2^32 (start), the variable at 0, run's 0, x, 2^32 (exit 2)"
else
	notok "anything but a count is refused" "$bad"
fi
[ $fails -eq 0 ]
