#!/usr/bin/env bash
# RaptorJIT through its own auditlog, end to end (TAP; docs/RAPTORJIT.md
# "Recording RaptorJIT").
#  1. (fixtures: logs RaptorJIT wrote on the workload set, with ground truth
#     decoded independently, WORKLOAD.traces.tsv) `region import` on each
#     log: a valid region whose functions are exactly the log's traces that
#     the summary says were published (start, size and time added equal to
#     the TSV's mcode, szmcode and trace_stop nanotime), as many as the
#     TSV's trace_stop rows less those it says it refused; the cut log
#     with its one note, up to its last complete trace.
#  2. (no binary needed) a log that cannot be used: missing, not a log, a
#     binary whose interpreter frame is not the log's: one message, exit 3.
#  3. (RAPTORJIT=/path/to/raptorjit, and perf) `record -- $RAPTORJIT W.lua`
#     on the workload set: >= 99.5% of the samples through trace code
#     unwound from main, parsed from the summary line; the log and
#     DIR/region-PID there, the pid the one perf.data's samples carry.
#  4. (the same) `perf record -p PID -k 1` on a running RaptorJIT and
#     `report --auditlog LOG DIR`: the same share.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
T=$(mktemp -d /tmp/jsf-t_rjrecord-XXXXXX)
trap 'rm -rf "$T"' EXIT

F=$(rj_fixtures numeric.auditlog)

# ---- 1. region import on the fixtures
if [ -z "$F" ] && [ -z "${RAPTORJIT:-}" ]; then
	echo "1..0 # SKIP RaptorJIT fixtures not found (set JITSFRAME_RAPTORJIT_DATA) and RAPTORJIT not set"
	exit 0
fi
if [ -z "$F" ]; then
	skip_case "region import: RaptorJIT fixtures not found (set JITSFRAME_RAPTORJIT_DATA)"
else
	for log in "$F"/*.auditlog; do
		name=$(basename "$log" .auditlog)
		tsv=$F/$name.traces.tsv
		[ -f "$tsv" ] || continue
		R=$T/$name.region
		"$J" region import "$log" -o "$R" >"$T/$name.fl.out" 2>"$T/$name.fl.err"
		rc=$?
		line=$(grep '^jitsframe region: auditlog' "$T/$name.fl.out")
		read -r traces published refused nomc <<<"$(sed -nE 's/.*: ([0-9]+) traces, ([0-9]+) published, ([0-9]+) refused, ([0-9]+) without machine code.*/\1 \2 \3 \4/p' <<<"$line")"
		stops=$(awk -F'\t' '$2 == "trace_stop"' "$tsv" | wc -l)
		if [ $rc -ne 0 ] || [ -z "${traces:-}" ]; then
			notok "region import $name" "rc=$rc" "$(cat "$T/$name.fl.out" "$T/$name.fl.err")"
			continue
		fi
		# the ground truth's functions: start size added
		awk -F'\t' 'NR > 1 && $2 == "trace_stop" { print tolower($6), $7, $3 }' "$tsv" | sort >"$T/$name.want"
		"$J" region dump --all "$R" | sed -nE 's/^(0x[0-9a-f]+)-0x[0-9a-f]+ size ([0-9]+), added ([0-9]+).*/\1 \2 \3/p' | sort >"$T/$name.got"
		ngot=$(wc -l <"$T/$name.got")
		extra=$(comm -13 "$T/$name.want" "$T/$name.got" | head -3)
		if [ "$traces" -eq "$stops" ] && [ "$published" -eq $((stops - refused - nomc)) ] &&
			[ "$ngot" -eq "$published" ] && [ -z "$extra" ] && [ "$published" -gt 0 ]; then
			ok "region import $name: $published of the log's $stops traces (TSV) published, each at its mcode, size and trace_stop time ($refused refused, $nomc without machine code)"
		else
			notok "region import $name: the region's functions are the log's published traces" "$line" "TSV trace_stop rows: $stops; functions in the region: $ngot" "not in the TSV: $extra"
		fi
		if "$J" region validate "$R" >"$T/$name.val" 2>&1; then
			ok "region validate on $name's region: $(head -c 200 "$T/$name.val")"
		else
			notok "region validate on $name's region" "$(cat "$T/$name.val")"
		fi
		if [ "$name" = cut ]; then
			nerr=$(wc -l <"$T/$name.fl.err")
			if [ "$nerr" -eq 1 ] && grep -q 'damaged at byte 808971' "$T/$name.fl.err"; then
				ok "region import cut: one note, damaged at byte 808971 (its last complete record's end)"
			else
				notok "region import cut: one note naming byte 808971" "$(cat "$T/$name.fl.err")"
			fi
		fi
	done
fi

# ---- 2. logs that cannot be used: one message, exit 3
mkdir -p "$T/empty"
printf 'this is not an auditlog\n' >"$T/garbage.auditlog"
for c in missing garbage; do
	lp=$T/$c.auditlog
	"$J" report --auditlog "$lp" "$T/empty" >"$T/$c.out" 2>"$T/$c.err"
	rc=$?
	nl=$(wc -l <"$T/$c.err")
	if [ $rc -eq 3 ] && [ "$nl" -eq 1 ] && grep -q "$lp" "$T/$c.err" && [ ! -s "$T/$c.out" ]; then
		ok "report --auditlog with a $c log: exit 3, one message naming it: $(cat "$T/$c.err")"
	else
		notok "report --auditlog with a $c log: exit 3, one message" "rc=$rc" "$(cat "$T/$c.out" "$T/$c.err")"
	fi
done
"$J" report --pid 1 "$T/empty" >/dev/null 2>"$T/pid.err"
rc=$?
if [ $rc -eq 2 ]; then ok "report --pid without --auditlog: usage (exit 2)"; else notok "report --pid without --auditlog: exit 2" "rc=$rc" "$(cat "$T/pid.err")"; fi
if [ -n "$F" ]; then
	# a program whose interpreter is not RaptorJIT's: the log's frame
	# size cannot be checked against it, so it is refused
	"$J" region import "$F/numeric.auditlog" -o "$T/refused.region" --binary "$J" >"$T/ref.out" 2>"$T/ref.err"
	rc=$?
	if [ $rc -eq 3 ] && [ "$(wc -l <"$T/ref.err")" -eq 1 ] && grep -q 'refused' "$T/ref.err" && [ ! -e "$T/refused.region" ]; then
		ok "region import --binary (not RaptorJIT's): refused, one message, no region: $(cat "$T/ref.err")"
	else
		notok "region import --binary (not RaptorJIT's): refused" "rc=$rc" "$(cat "$T/ref.out" "$T/ref.err")"
	fi
fi

# ---- 3. and 4. with a RaptorJIT binary
RJ=${RAPTORJIT:-}
if [ -z "$RJ" ]; then
	skip_case "record -- \$RAPTORJIT and report --auditlog: RAPTORJIT not set"
	echo "1..$n"
	[ $fails -eq 0 ]
	exit
fi
if ! command -v perf >/dev/null || ! perf stat -e cpu-clock true >/dev/null 2>&1; then
	skip_case "record -- \$RAPTORJIT: perf missing or cannot sample here"
	echo "1..$n"
	[ $fails -eq 0 ]
	exit
fi
# share from a summary line: "N through trace code, M of them"
share() { sed -nE 's/.* ([0-9]+) through trace code, ([0-9]+) of them.*/\1 \2/p' <<<"$1"; }
judge() { # what through main line
	if [ -z "$2" ] || [ "$2" -eq 0 ]; then
		notok "$1: no samples through trace code" "$4"
	elif [ "$2" -lt 20 ]; then
		ok "$1: only $2 samples through trace code, $3 unwound from main (too few to judge alone; counted in the set's)"
	elif awk -v a="$3" -v b="$2" 'BEGIN { exit !(a * 1000 >= 995 * b) }'; then
		ok "$1: $3 of $2 samples through trace code unwound from main ($(awk -v a="$3" -v b="$2" 'BEGIN { printf "%.2f", 100 * a / b }')% >= 99.5%)"
	else
		notok "$1: $3 of $2 samples through trace code unwound from main (< 99.5%)" "$4"
	fi
}
# the scales: about a second of RaptorJIT each (sidetraces' and
# trace frames named from the log: every _[j] frame of DIR/stacks.folded
# is TRACE_n::chunk:line (none left as a raw address) and n is a trace of
# the log, as `jitsframe audit` lists it (tests/t_audit_rj.sh checks that
# listing against the fixtures' independent ground truth)
names() { # label DIR LOG
	local bad nums unknown
	bad=$(tr ';' '\n' <"$2/stacks.folded" | sed 's/ [0-9]*$//' | grep '_\[j\]$' | grep -v '^TRACE_[0-9]*::.*:[0-9]*_\[j\]$' | sort -u | head -3)
	nums=$(tr ';' '\n' <"$2/stacks.folded" | sed -n 's/^TRACE_\([0-9]*\)::.*/\1/p' | sort -u)
	unknown=$(for x in $nums; do "$J" audit "$3" | grep -q "^\[TRACE *$x[] (]" || echo "$x"; done | head -3)
	if [ -z "$nums" ]; then
		notok "$1: trace frames named TRACE_n::chunk:line" "no named trace frame in $2/stacks.folded"
	elif [ -n "$bad$unknown" ]; then
		notok "$1: every trace frame named TRACE_n::chunk:line by a trace of the log" "unnamed: $bad" "not in the log: $unknown"
	else
		ok "$1: every trace frame named TRACE_n::chunk:line from the log ($(echo $nums | wc -w) traces)"
	fi
}

# flushstorm's logs grow fast: aborts, recompilation)
for spec in "numeric 1" "sidetraces 0.01" "flushstorm 0.1 -Omaxtrace=250" "nested 1" "openresty 1"; do
	set -- $spec
	name=$1 scale=$2 opt=${3:-}
	D=$T/rec-$name
	"$J" record -F 1999 -o "$D" -- "$RJ" $opt "bench/workloads/$name.lua" "$scale" >"$D.out" 2>"$D.err"
	rc=$?
	line=$(grep '^jitsframe report:' "$D.out")
	read -r through main_ <<<"$(share "$line")"
	regs=$(ls "$D" | grep -c '^region-[0-9]*$')
	echo "# $name: $(grep '^jitsframe record: auditlog' "$D.out" | cut -c1-200)"
	if [ $rc -ne 0 ] || [ ! -s "$D/auditlog" ] || [ "$regs" -ne 1 ]; then
		notok "record -- raptorjit $name: exit 0, DIR/auditlog and one DIR/region-PID" "rc=$rc regions=$regs" "$(cat "$D.out" "$D.err" | tail -5)"
		continue
	fi
	# the region is the sampled process's: perf's own reading of the pids
	rp=$(ls "$D" | sed -n 's/^region-\([0-9]*\)$/\1/p')
	if perf script -i "$D/perf.data" -F pid 2>/dev/null | awk '{ print $1 }' | sort -u | grep -qx "$rp"; then
		ok "record -- raptorjit $name: DIR/region-$rp is the sampled process's (perf script)"
	else
		notok "record -- raptorjit $name: region-$rp names a sampled pid" "$(perf script -i "$D/perf.data" -F pid 2>&1 | sort -u | head -3)"
	fi
	judge "record -- raptorjit $name $scale" "${through:-}" "${main_:-0}" "$line"
	[ "${through:-0}" -gt 0 ] && names "record -- raptorjit $name" "$D" "$D/auditlog"
	# the audit listing has every trace of the log: its trace_stop events
	# counted in the raw bytes (a str16 "trace_stop" value)
	want=$(python3 -c 'import sys; print(open(sys.argv[1], "rb").read().count(b"\xda\x00\x0atrace_stop"))' "$D/auditlog")
	got=$("$J" audit "$D/auditlog" 2>/dev/null | grep -c '^\[TRACE *[0-9]')
	if [ "$want" -gt 0 ] && [ "$got" = "$want" ]; then
		ok "audit listing of $name's log: all $want traces (trace_stop events in its bytes)"
	else
		notok "audit listing of $name's log: every trace" "listed $got, trace_stop events $want"
	fi
	tot=$((${tot:-0} + ${through:-0}))
	totm=$((${totm:-0} + ${main_:-0}))
done
judge "record -- raptorjit, the workload set" "${tot:-0}" "${totm:-0}" ""

# 4. perf record -p on a running RaptorJIT, then report --auditlog
D=$T/attach
mkdir -p "$D"
"$RJ" -a "$D/auditlog" bench/workloads/nested.lua 2 >/dev/null &
rjpid=$!
sleep 0.2
perf record -q -k 1 --call-graph dwarf,32768 -F 1999 -o "$D/perf.data" -p $rjpid >"$T/attach.perf" 2>&1
wait $rjpid
"$J" report --auditlog "$D/auditlog" "$D" >"$T/attach.out" 2>"$T/attach.err"
rc=$?
line=$(grep '^jitsframe report:' "$T/attach.out")
read -r through main_ <<<"$(share "$line")"
if [ $rc -eq 0 ] && [ -e "$D/region-$rjpid" ]; then
	ok "report --auditlog on perf record -p $rjpid: DIR/region-$rjpid made from the log"
else
	notok "report --auditlog on perf record -p: exit 0 and DIR/region-PID" "rc=$rc" "$(cat "$T/attach.out" "$T/attach.err" "$T/attach.perf" | tail -5)"
fi
judge "report --auditlog (perf record -p)" "${through:-}" "${main_:-0}" "$line"
names "report --auditlog (perf record -p)" "$D" "$D/auditlog"
# without -k 1 the samples' times are not the log's: refused
"$RJ" -a "$D/auditlog2" bench/workloads/nested.lua 1 >/dev/null &
rjpid=$!
sleep 0.2
perf record -q --call-graph dwarf,8192 -o "$D/perf2.data" -p $rjpid >/dev/null 2>&1
wait $rjpid
"$J" report --no-write --auditlog "$D/auditlog2" -i "$D/perf2.data" "$D" >"$T/k.out" 2>"$T/k.err"
rc=$?
if [ $rc -eq 3 ] && grep -q CLOCK_MONOTONIC "$T/k.err" && [ "$(wc -l <"$T/k.err")" -eq 1 ]; then
	ok "report --auditlog on a recording without -k 1: refused, one message"
else
	notok "report --auditlog on a recording without -k 1: refused" "rc=$rc" "$(cat "$T/k.out" "$T/k.err")"
fi

echo "1..$n"
[ $fails -eq 0 ]
