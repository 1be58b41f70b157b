#!/usr/bin/env bash
# Stack copies too short for the unwind: named, with the fix (TAP).
# bench/workloads/nested.lua runs traces inside string.gsub's Lua callback
# (a C frame holding a luaL_Buffer, 8 KB on glibc) and C qsort's FFI
# callback: such samples sit more than 4 KB below main.
#  1. recorded with `--stack 4096`: the summary names "stack copy too
#     short" with its count and the fix, quoting the copy size that
#     perf.data says was used (checked with `perf evlist`, not our reader);
#  2. recorded with the default copy (the one `record --help` names, again
#     checked with `perf evlist`): no sample through trace code stops for
#     that reason, >= 99.5% of them unwind from main, and the deepest
#     complete walk read more than the 4096 bytes of case 1 (so case 1's
#     copy was too short for this workload) and no more than the copy.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-build/jitsframe}
LJ=${LUAJIT:-luajit}
W=bench/workloads/nested.lua
T=$(mktemp -d /tmp/jsf-t_stack-XXXXXX)
trap 'rm -rf "$T"' EXIT
if ! command -v perf >/dev/null || ! perf stat -e cpu-clock true >/dev/null 2>&1; then
	if [ "${CI:-}" = true ]; then notok "perf works (CI=true: required)"; echo "1..$n"; exit 1; fi
	echo "1..0 # SKIP perf missing or cannot sample here (scripts/install-deps installs linux-perf)"
	exit 0
fi
# the copy size perf.data's attribute holds, as perf itself reads it
evcopy() { perf evlist -v -i "$1" 2>/dev/null | sed -nE 's/.*sample_stack_user: ([0-9]+).*/\1/p' | head -n 1; }

# 1. a copy too short
"$J" record --no-inject -o "$T/small" -F 1999 --stack 4096 -- $LJ $W >"$T/small.out" 2>"$T/small.err"
rc=$?
line=$(grep '^jitsframe report:' "$T/small.out")
echo "# --stack 4096: $line"
ec=$(evcopy "$T/small/perf.data.raw")
if [ $rc -eq 0 ] && [ "$ec" = 4096 ]; then
	ok "record --stack 4096: perf.data's sample_stack_user is 4096 (perf evlist)"
else
	notok "record --stack 4096: perf.data's sample_stack_user is 4096" "rc=$rc evlist=$ec" "$(tail -n 3 "$T/small.err")"
fi
cnt=$(sed -nE 's/.*the rest stopped: ([^;]*, )?stack copy too short ([0-9]+) \(record with --stack BYTES, now 4096\).*/\2/p' <<<"$line")
if [ -n "$cnt" ] && [ "$cnt" -gt 0 ]; then
	ok "--stack 4096: the summary names \"stack copy too short $cnt\" with the fix and the copy size"
else
	notok "--stack 4096: the summary names \"stack copy too short N (record with --stack BYTES, now 4096)\"" "$line"
fi
if grep -qE "; stack: the deepest complete walk read [0-9]+ bytes of the 4096 copied per sample" <<<"$line"; then
	ok "--stack 4096: the stats name the copy size"
else
	notok "--stack 4096: the stats name the copy size" "$line"
fi

# 2. the default copy
def=$("$J" record --help | sed -nE 's/.*--stack BYTES.*\(default ([0-9]+).*/\1/p')
"$J" record --no-inject -o "$T/def" -F 1999 -- $LJ $W >"$T/def.out" 2>"$T/def.err"
rc=$?
line=$(grep '^jitsframe report:' "$T/def.out")
echo "# default (--help: $def): $line"
ec=$(evcopy "$T/def/perf.data.raw")
if [ $rc -eq 0 ] && [ -n "$def" ] && [ "$ec" = "$def" ]; then
	ok "record: the default copy is the one --help names ($def, perf evlist)"
else
	notok "record: the default copy is the one --help names" "rc=$rc help=$def evlist=$ec" "$(tail -n 3 "$T/def.err")"
fi
read -r through tmain <<<"$(sed -nE 's/^jitsframe report: [0-9]+ samples, ([0-9]+) through trace code, ([0-9]+) of them.*/\1 \2/p' <<<"$line")"
rest=$(sed -nE 's/.*the rest stopped: ([^;]*).*/\1/p' <<<"$line")
if [ -n "${tmain:-}" ] && [ "$through" -ge 10 ] && ! grep -q "stack copy too short" <<<"$rest" &&
	awk -v a="$tmain" -v b="$through" 'BEGIN { exit !(a * 1000 >= 995 * b) }'; then
	ok "default copy: no sample through trace code stopped as stack copy too short; $tmain of $through unwound from main"
else
	notok "default copy: no sample through trace code stops as stack copy too short, >= 99.5% from main" "$line"
fi
need=$(sed -nE 's/.*; stack: the deepest complete walk read ([0-9]+) bytes of the ([0-9]+) copied per sample.*/\1 \2/p' <<<"$line")
read -r nb cb <<<"$need"
if [ -n "${nb:-}" ] && [ "$cb" = "$def" ] && [ "$nb" -gt 4096 ] && [ "$nb" -le "$cb" ]; then
	ok "default copy: the deepest complete walk read $nb bytes (> 4096: case 1's copy was too short; <= $cb)"
else
	notok "default copy: the deepest complete walk read more than 4096 bytes, no more than the copy" "$line"
fi

echo "1..$n"
[ $fails -eq 0 ]
