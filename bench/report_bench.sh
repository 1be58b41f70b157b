#!/usr/bin/env bash
# report_bench: samples per second of `jitsframe report` (jitsframe's own
# unwinder; all four profiles written, each with an fsync) against `perf
# script` (perf's own DWARF unwinding of every sample through the traces'
# jitted-*.so, text to /dev/null) on the same perf.data (injected by `perf
# inject --jit`, as perf needs it), in one run; medians of
# REPORT_BENCH_REPS (5) runs each, alternating; wall-clock and CPU (user +
# system) time of each process. Also: the unwinder alone (report
# --no-write). The perf.data is a `jitsframe record` of
# REPORT_BENCH_WORKLOAD (workloads/numeric.lua 3) at 1999 Hz.
set -u
cd "$(dirname "$0")/.."
J=$PWD/build/jitsframe
LJ=${LUAJIT:-luajit}
REPS=${REPORT_BENCH_REPS:-5}
W=${REPORT_BENCH_WORKLOAD:-bench/workloads/numeric.lua}
WARGS=${REPORT_BENCH_ARGS-3} # numeric's scale: ~3000 samples, ~100 MB
if ! command -v perf >/dev/null; then
	echo "report_bench: perf not installed: skipped"
	exit 0
fi
T=$(mktemp -d /tmp/jsf-report-bench-XXXXXX)
trap 'rm -rf "$T"' EXIT
"$J" record -o "$T/d" -F 1999 -- $LJ "$W" $WARGS >"$T/rec.out" 2>"$T/rec.err" || {
	echo "report_bench: record failed"; tail -3 "$T/rec.err"; exit 1; }
samples=$(sed -nE 's/^jitsframe report: ([0-9]+) samples.*/\1/p' "$T/rec.out")
# run CMD...: "wall_ns cpu_ns" (cpu from /proc/self/stat-free GNU time
# would need another package: use bash's TIMEFORMAT with 3 decimals)
run() {
	local TIMEFORMAT='%3R %3U %3S'
	{ time "$@" >/dev/null 2>&1; } 2>&1 | awk '{ printf "%d %d\n", $1 * 1e9, ($2 + $3) * 1e9 }'
}
ow=() oc=() pw=() pc=() nw=() nc=()
for ((i = 0; i < REPS; i++)); do
	read -r w c <<<"$(run "$J" report -i "$T/d/perf.data" "$T/d")"; ow+=("$w") oc+=("$c")
	read -r w c <<<"$(run "$J" report --no-write -i "$T/d/perf.data" "$T/d")"; nw+=("$w") nc+=("$c")
	read -r w c <<<"$(run perf --buildid-dir "$T/d/.debug" script -i "$T/d/perf.data")"; pw+=("$w") pc+=("$c")
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
awk -v n="$samples" -v ow="$(med "${ow[@]}")" -v pw="$(med "${pw[@]}")" \
	-v oc="$(med "${oc[@]}")" -v pc="$(med "${pc[@]}")" -v w="$(basename "$W")" \
	-v nw="$(med "${nw[@]}")" -v nc="$(med "${nc[@]}")" 'BEGIN {
	printf "report_bench (%s, %d samples, 32 KB stacks), wall clock: jitsframe report %.0f samples/s (%.1f ms), perf script %.0f samples/s (%.1f ms): %.1fx\n",
		w, n, n / (ow / 1e9), ow / 1e6, n / (pw / 1e9), pw / 1e6, pw / ow
	if (oc > 0)
		printf "report_bench, CPU time: jitsframe report %.1f ms, perf script %.1f ms: %.1fx\n", oc / 1e6, pc / 1e6, pc / oc
	printf "report_bench, the unwinder alone (report --no-write): %.0f samples/s (%.1f ms wall, %.1f ms CPU): %.1fx perf script (wall), %.1fx (CPU)\n",
		n / (nw / 1e9), nw / 1e6, nc / 1e6, pw / nw, (nc > 0 ? pc / nc : 0)
}'
