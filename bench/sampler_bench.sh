#!/bin/bash
# SPDX-License-Identifier: MIT
# The in-kernel sampler's whole-run cost (issue 12 "Benchmark",
# docs/PROFILE.md "Cost"), as root with BPF (skipped otherwise; CI=true
# fails): a LuaJIT workload (bench/workloads/numeric.lua, scale
# SAMPLER_BENCH_SCALE=4) run plain, under `jitsframe profile -F HZ -- CMD`
# and under `perf record --call-graph dwarf -F HZ`, at 99 and 999 Hz, in
# ABBA order (SAMPLER_BENCH_REPS=3 rounds of P R S99 S999 F99 F999 F999 F99
# S999 S99 R P; R: `jitsframe run`, the module alone, which profile also
# starts: the sampler's own share is S against R), medians. Timed: the workload itself (/usr/bin/time inside
# the profiler: its wall and CPU, user+sys, which include the sampling
# interrupts charged to it) and the whole command (outer /usr/bin/time:
# the profiler's start, its own CPU and its writing of the products too).
# Then bytes per sample: DIR's products over the samples, perf.data's over
# its samples. Targets: slowdown at 999 Hz >= 10x smaller than perf's and
# <= 2%; <= 100 bytes written per sample.
set -u
cd "$(dirname "$0")/.."
LUAJIT=${LUAJIT:-luajit}
REPS=${SAMPLER_BENCH_REPS:-3}
SCALE=${SAMPLER_BENCH_SCALE:-4}
W=bench/workloads/numeric.lua
T=$(mktemp -d /tmp/sampler_bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
ci_fail() { echo "sampler_bench.sh: $1: skipped"; [ "${CI:-}" = true ] && exit 1; exit 0; }
[ -x build/jitsframe ] || ci_fail "build/jitsframe missing"
command -v perf >/dev/null || ci_fail "perf missing"
command -v "$LUAJIT" >/dev/null || ci_fail "$LUAJIT missing"
if ! build/jitsframe profile -F 99 -o "$T/probe" -- true >"$T/probe.out" 2>&1; then
	ci_fail "jitsframe profile cannot run: $(tail -1 "$T/probe.out")"
fi

# one run of mode $1: appends "inner_wall inner_cpu outer_wall outer_cpu"
run() {
	local m=$1 i=$2 d="$T/$1.$2" o="$T/$1.$2.outer" in="$T/$1.$2.inner"
	local cmd=(/usr/bin/time -o "$in" -f "%e %U %S" "$LUAJIT" "$W" "$SCALE")
	case $m in
	P) /usr/bin/time -o "$o" -f "%e %U %S" "${cmd[@]}" >/dev/null 2>&1 ;;
	R) /usr/bin/time -o "$o" -f "%e %U %S" build/jitsframe run --quiet --region "$d.region" -- "${cmd[@]}" >/dev/null 2>&1 ;;
	S*) /usr/bin/time -o "$o" -f "%e %U %S" build/jitsframe profile -F "${m#S}" -o "$d" -- "${cmd[@]}" >"$d.log" 2>&1 ;;
	F*) /usr/bin/time -o "$o" -f "%e %U %S" perf record -q --call-graph dwarf -F "${m#F}" -o "$d.data" -- "${cmd[@]}" >/dev/null 2>"$d.log" ;;
	esac
	read -r iw iu is <"$in"
	read -r ow ou os <"$o"
	echo "$iw $(echo "$iu + $is" | bc) $ow $(echo "$ou + $os" | bc)" >>"$T/$m.t"
}
ORDER="P R S99 S999 F99 F999 F999 F99 S999 S99 R P"
for r in $(seq 1 "$REPS"); do
	k=0
	for m in $ORDER; do k=$((k + 1)); run "$m" "$r.$k"; done
done
med() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
col() { awk -v c="$2" '{print $c}' "$T/$1.t" | med; }
pct() { echo "$1 $2" | awk '{printf "%.2f", ($1/$2-1)*100}'; }
echo "sampler_bench.sh: numeric.lua scale $SCALE, $REPS ABBA rounds, medians (plain: $(col P 1) s wall, $(col P 2) s CPU)"
printf "  %-28s %10s %10s %12s %12s\n" "slowdown vs plain" "wall" "CPU" "whole wall" "whole CPU"
declare -A SW SC
w=$(pct "$(col R 1)" "$(col P 1)"); c=$(pct "$(col R 2)" "$(col P 2)")
printf "  %-28s %9s%% %9s%% %11s%% %11s%%\n" "the module alone (run)" "$w" "$c" "$(pct "$(col R 3)" "$(col P 3)")" "$(pct "$(col R 4)" "$(col P 4)")"
for m in S99 S999 F99 F999; do
	name=$([ "${m:0:1}" = S ] && echo "jitsframe profile" || echo "perf record dwarf")
	w=$(pct "$(col $m 1)" "$(col P 1)"); c=$(pct "$(col $m 2)" "$(col P 2)")
	ow=$(pct "$(col $m 3)" "$(col P 3)"); oc=$(pct "$(col $m 4)" "$(col P 4)")
	SW[$m]=$w; SC[$m]=$c
	printf "  %-28s %9s%% %9s%% %11s%% %11s%%\n" "$name ${m:1} Hz" "$w" "$c" "$ow" "$oc"
done
for m in S99 S999; do
	SW[$m]=$(pct "$(col $m 1)" "$(col R 1)"); SC[$m]=$(pct "$(col $m 2)" "$(col R 2)")
	printf "  %-28s %9s%% %9s%%\n" "profile ${m:1} Hz vs run" "${SW[$m]}" "${SC[$m]}"
done
verdict() { awk -v a="$1" -v b="$2" -v lim="$3" 'BEGIN {
	# a: ours, b: perf (percent); ours floored at 0.1 for the ratio
	x = a < 0.1 ? 0.1 : a; r = b / x;
	printf "%.1fx smaller", r; ok = (r >= 10) && (lim == "" || a <= lim);
	printf "%s", ok ? "|MET" : "|MISSED" }'; }
for m in 99 999; do
	lim=$([ $m = 999 ] && echo 2 || echo "")
	v=$(verdict "${SW[S$m]}" "${SW[F$m]}" "$lim"); vc=$(verdict "${SC[S$m]}" "${SC[F$m]}" "$lim")
	echo "sampler slowdown at $m Hz (profile vs run; perf vs plain): wall ${SW[S$m]}% vs perf's ${SW[F$m]}% (${v%|*}), CPU ${SC[S$m]}% vs ${SC[F$m]}% (${vc%|*})${lim:+; target <= 2%}: wall ${v#*|}, CPU ${vc#*|}"
done

# bytes per sample, from the last round's 999 Hz runs
d=$(ls -d "$T"/S999.*[0-9] | tail -1)
ns=$(grep -o 'profile: [0-9]* samples' "$d.log" | grep -o '[0-9]*' | head -1)
prod=$(cat "$d"/stacks.folded "$d"/flamegraph.svg "$d"/flamegraph.html "$d"/profile.pb.gz | wc -c)
all=$(du -sb "$d" | cut -f1)
f=$(ls "$T"/F999.*.data | tail -1)
fs=$(stat -c %s "$f")
fn=$(perf report -i "$f" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
awk -v ns="${ns:-0}" -v prod="$prod" -v all="$all" -v fs="$fs" -v fn="${fn:-0}" 'BEGIN {
	if (!ns || !fn) { print "sampler bytes per sample: no samples counted: MISSED"; exit }
	p = prod / ns; a = all / ns; q = fs / fn;
	printf "  jitsframe profile 999 Hz: %d samples, the four profiles %d B (%.0f B/sample), DIR with region and jitdump %d B (%.0f B/sample)\n", ns, prod, p, all, a;
	printf "  perf record dwarf 999 Hz: %d samples, perf.data %d B (%.0f B/sample)\n", fn, fs, q;
	printf "sampler bytes written per sample: %.0f B (DIR in all; perf.data %.0f B, %.0fx more; target <= 100 B): %s\n", a, q, q / a, a <= 100 ? "MET" : "MISSED" }'
