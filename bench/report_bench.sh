#!/usr/bin/env bash
# report_bench: `jitsframe report` (jitsframe's own unwinder; all four
# profiles written, as record does) against `perf script` (perf's default
# output with callchains: its own DWARF unwinding of every sample through
# the traces' jitted-*.so, text to /dev/null) on the same perf.data (the
# one `jitsframe record` leaves, injected by `perf inject --jit`).
# Target (issue 16): report >= 10x faster than perf script, in wall clock
# and in CPU time (user + system), on a recording of >= 20,000 samples.
# The recording: `jitsframe record -F REPORT_BENCH_FREQ (4999)` of
# REPORT_BENCH_WORKLOAD (workloads/numeric.lua) at scale REPORT_BENCH_ARGS
# (12: ~25,000 samples, ~800 MB with the 32 KB stack copies). Medians of
# REPORT_BENCH_REPS (5) runs of each, alternating; wall clock and user +
# system time of each process (bash's `time`: getrusage). Also: the
# unwinder alone (report --no-write), for reference.
set -u
cd "$(dirname "$0")/.."
J=$PWD/build/jitsframe
LJ=${LUAJIT:-luajit}
REPS=${REPORT_BENCH_REPS:-5}
FREQ=${REPORT_BENCH_FREQ:-4999}
W=${REPORT_BENCH_WORKLOAD:-bench/workloads/numeric.lua}
WARGS=${REPORT_BENCH_ARGS-12}
MIN=20000 # samples the target asks for
if ! command -v perf >/dev/null; then
	echo "report_bench: perf not installed: skipped"
	exit 0
fi
T=$(mktemp -d /tmp/jsf-report-bench-XXXXXX)
trap 'rm -rf "$T"' EXIT
"$J" record -o "$T/d" -F "$FREQ" -- $LJ "$W" $WARGS >"$T/rec.out" 2>"$T/rec.err" || {
	echo "report_bench: record failed"; tail -3 "$T/rec.err"; exit 1; }
samples=$(sed -nE 's/^jitsframe report: ([0-9]+) samples.*/\1/p' "$T/rec.out")
samples=${samples:-0}
# run CMD...: "wall_ns cpu_ns" of the process (bash's time: the wall
# clock and the child's getrusage user + system, to the millisecond)
run() {
	local TIMEFORMAT='%3R %3U %3S'
	{ time "$@" >/dev/null 2>&1; } 2>&1 | awk '{ printf "%d %d\n", $1 * 1e9, ($2 + $3) * 1e9 }'
}
ow=() oc=() pw=() pc=() nw=() nc=()
for ((i = 0; i < REPS; i++)); do
	read -r w c <<<"$(run "$J" report -i "$T/d/perf.data" "$T/d")"; ow+=("$w") oc+=("$c")
	read -r w c <<<"$(run perf --buildid-dir "$T/d/.debug" script -i "$T/d/perf.data")"; pw+=("$w") pc+=("$c")
	read -r w c <<<"$(run "$J" report --no-write -i "$T/d/perf.data" "$T/d")"; nw+=("$w") nc+=("$c")
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
awk -v n="$samples" -v min="$MIN" -v ow="$(med "${ow[@]}")" -v pw="$(med "${pw[@]}")" \
	-v oc="$(med "${oc[@]}")" -v pc="$(med "${pc[@]}")" -v w="$(basename "$W") $WARGS" \
	-v f="$FREQ" -v reps="$REPS" \
	-v nw="$(med "${nw[@]}")" -v nc="$(med "${nc[@]}")" 'function v(x) { return x >= 10 ? "MET" : "MISSED" }
BEGIN {
	printf "report_bench (%s at %d Hz: %d samples%s, 32 KB stacks; medians of %d)\n",
		w, f, n, (n >= min ? "" : " -- FEWER than the 20,000 of the target"), reps
	rw = ow > 0 ? pw / ow : 0
	printf "report_bench, wall clock: jitsframe report %.1f ms (%.0f samples/s), perf script %.1f ms (%.0f samples/s): %.1fx (target >= 10x: %s)\n",
		ow / 1e6, n / (ow / 1e9), pw / 1e6, n / (pw / 1e9), rw, v(rw)
	rc = oc > 0 ? pc / oc : 0
	printf "report_bench, CPU time: jitsframe report %.1f ms, perf script %.1f ms: %.1fx (target >= 10x: %s)\n",
		oc / 1e6, pc / 1e6, rc, v(rc)
	printf "report_bench, the unwinder alone (report --no-write): %.1f ms wall, %.1f ms CPU: %.1fx perf script (wall), %.1fx (CPU)\n",
		nw / 1e6, nc / 1e6, (nw > 0 ? pw / nw : 0), (nc > 0 ? pc / nc : 0)
}'
