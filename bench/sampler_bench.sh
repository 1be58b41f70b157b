#!/bin/bash
# SPDX-License-Identifier: MIT
# The in-kernel sampler's whole-run cost (issue 12 "Benchmark",
# docs/PROFILE.md "Cost"), as root with BPF (skipped otherwise; CI=true
# fails).
#
# 1. The WORKLOAD's own slowdown: bench/workloads/numeric.lua (scale
#    SAMPLER_BENCH_SCALE=4) through build/bench/wlrun + bench/wl_timed.lua,
#    which time the sampled process itself (wall from just before its exec
#    to its end; CPU from CLOCK_PROCESS_CPUTIME_ID, its own threads, which
#    include the sampling interrupts that ran in it; never the profiler's
#    own CPU or its start and end). Modes: P plain, R `jitsframe run` (the
#    module alone, with the luamap and jitdump that profile asks for too),
#    S `jitsframe profile -F HZ`, F `perf record --call-graph dwarf -F HZ`.
#    Per rate (SAMPLER_BENCH_HZ="999 99"), SAMPLER_BENCH_REPS=9 rounds in
#    ABBA order P R S F F S R P; each round gives one ratio per mode,
#    (X1 + X2) / (P1 + P2); printed: the median ratio and the range of
#    the rounds' ratios (the noise), and plain against itself (P2 / P1).
#    The expected floor: the BPF program's run time over the workload's
#    life (bpf_stats, kernel.bpf_stats_enabled set for the script) per
#    sample, times the rate: what the sampling itself charges the task.
#    Target at 999 Hz: >= 10x smaller than perf's and <= 2%.
# 2. Bytes written per sample, amortised: DIR (the four profiles, the
#    region, the jitdump) after profile runs at two lengths
#    (SAMPLER_BENCH_BYTES_SCALES="2 8", 999 Hz): (size2 - size1) /
#    (samples2 - samples1), and the fixed part size1 - slope * samples1;
#    the same for perf.data. Target <= 100 B. (The ring buffer's bytes per
#    sample, which never reach a disk, are build/bench/sampler_bench's.)
set -u
cd "$(dirname "$0")/.."
LUAJIT=${LUAJIT:-luajit}
REPS=${SAMPLER_BENCH_REPS:-9}
SCALE=${SAMPLER_BENCH_SCALE:-4}
RATES=${SAMPLER_BENCH_HZ:-999 99}
BSCALES=${SAMPLER_BENCH_BYTES_SCALES:-2 8}
W=bench/workloads/numeric.lua
WL=build/bench/wlrun
T=$(mktemp -d /tmp/sampler_bench.XXXXXX)
STATS=/proc/sys/kernel/bpf_stats_enabled
OLDSTATS=
cleanup() {
	[ -n "$OLDSTATS" ] && echo "$OLDSTATS" >"$STATS"
	rm -rf "$T"
}
trap cleanup EXIT
ci_fail() { echo "sampler_bench.sh: $1: skipped"; [ "${CI:-}" = true ] && exit 1; exit 0; }
[ -x build/jitsframe ] || ci_fail "build/jitsframe missing"
[ -x "$WL" ] || ci_fail "$WL missing (make -C bench build)"
command -v perf >/dev/null || ci_fail "perf missing"
command -v "$LUAJIT" >/dev/null || ci_fail "$LUAJIT missing"
if ! build/jitsframe profile -F 99 -o "$T/probe" -- true >"$T/probe.out" 2>&1; then
	ci_fail "jitsframe profile cannot run: $(tail -1 "$T/probe.out")"
fi
OLDSTATS=$(cat "$STATS" 2>/dev/null) && echo 1 >"$STATS" 2>/dev/null ||
	ci_fail "cannot enable kernel.bpf_stats_enabled"

# one run of mode $1 at rate $2, round $3, slot $4: "wall cpu [bpf_ns samples]"
# appended to $T/$1$2.$4 (slot a or b)
run() {
	local m=$1 hz=$2 d="$T/$1$2.$3$4" sc=${5:-$SCALE}
	local cmd=("$WL" "$d.t" "$LUAJIT" bench/wl_timed.lua "$W" "$sc")
	rm -f "$d.t" "$d.t.bpf"
	case $m in
	P) "${cmd[@]}" >/dev/null 2>&1 ;;
	R) JITSFRAME_LUAMAP=1 JITSFRAME_JITDUMP="$d.jd" build/jitsframe run --quiet --region "$d.region" -- "${cmd[@]}" >/dev/null 2>&1 ;;
	S) build/jitsframe profile -F "$hz" -o "$d" -- "${cmd[@]}" >"$d.log" 2>&1 ;;
	F) perf record -q --call-graph dwarf -F "$hz" -o "$d.data" -- "${cmd[@]}" >/dev/null 2>"$d.log" ;;
	esac
	for _ in $(seq 50); do [ -s "$d.t.bpf" ] && break; sleep 0.02; done
	local wc bn=0 bc=0 ns=0
	wc=$(cat "$d.t" 2>/dev/null) || { echo "  $m $hz Hz: no timing (run failed)"; return; }
	[ -s "$d.t.bpf" ] && read -r bn bc <"$d.t.bpf"
	[ "$m" = S ] && ns=$(grep -o 'profile: [0-9]* samples' "$d.log" | grep -o '[0-9]*' | head -1)
	echo "$3 $wc $bn ${ns:-0}" >>"$T/$m$hz.$4"
}
med() { sort -g | awk '{v[NR]=$1} END {if (!NR) print 0; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
# per-round ratios of mode $1 to plain at rate $2, column $3 (2 wall, 3 cpu)
ratios() {
	join <(sort "$T/$1$2.a") <(sort "$T/$1$2.b") |
		join - <(join <(sort "$T/P$2.a") <(sort "$T/P$2.b")) |
		awk -v c="$3" '{ # round, then 4 fields each of X.a X.b P.a P.b
			printf "%.6f\n", ($(c) + $(c + 4)) / ($(c + 8) + $(c + 12)) }'
}
pp() { awk '{printf "%+.2f", ($1 - 1) * 100}'; }
summ() { # "median% [min%, max%]" of ratios on stdin
	sort -g | awk '{v[NR]=$1} END {
		m = NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2;
		printf "%+6.2f%% [%+.2f, %+.2f]", (m-1)*100, (v[1]-1)*100, (v[NR]-1)*100 }'
}
verdict() { awk -v a="$1" -v b="$2" -v lim="$3" 'BEGIN {
	# a: ours, b: perf (percent); ours floored at 0.1 for the ratio
	x = a < 0.1 ? 0.1 : a; r = b / x;
	printf "%.1fx smaller", r; ok = (r >= 10) && (lim == "" || a <= lim);
	printf "%s", ok ? "|MET" : "|MISSED" }'; }

for hz in $RATES; do
	for r in $(seq 1 "$REPS"); do
		for ms in Pa Ra Sa Fa Fb Sb Rb Pb; do run "${ms:0:1}" "$hz" "$r" "${ms:1}"; done
	done
	pw=$(cat "$T/P$hz".[ab] | awk '{print $2}' | med)
	pc=$(cat "$T/P$hz".[ab] | awk '{print $3}' | med)
	echo "sampler_bench.sh: numeric.lua scale $SCALE at $hz Hz, $REPS ABBA rounds (P R S F F S R P); the workload's own wall and CPU; median of the rounds' ratios [their range] (plain: $pw s wall, $pc s CPU)"
	printf "  %-34s %-26s %-26s\n" "against plain" "workload wall" "workload CPU"
	# plain against itself: P.b / P.a
	pself() { join <(sort "$T/P$hz.a") <(sort "$T/P$hz.b") | awk -v c="$1" '{printf "%.6f\n", $(c + 4) / $(c)}'; }
	printf "  %-34s %-26s %-26s\n" "plain, 2nd vs 1st (the noise)" "$(pself 2 | summ)" "$(pself 3 | summ)"
	declare -A MW MC
	for m in R S F; do
		case $m in R) name="jitsframe run (module alone)" ;; S) name="jitsframe profile" ;; F) name="perf record --call-graph dwarf" ;; esac
		MW[$m]=$(ratios $m "$hz" 2 | med | pp)
		MC[$m]=$(ratios $m "$hz" 3 | med | pp)
		printf "  %-34s %-26s %-26s\n" "$name" "$(ratios $m "$hz" 2 | summ)" "$(ratios $m "$hz" 3 | summ)"
	done
	# the BPF program's own time over the workload's life, per sample
	fl=$(cat "$T/S$hz".[ab] | awk -v hz="$hz" '$5 > 0 {
		printf "%.6f %.4f %.4f\n", $4 / $5 / 1000, $4 / $5 * hz / 1e7, $4 / ($3 * 1e7) }')
	fus=$(echo "$fl" | awk '{print $1}' | med)
	fpct=$(echo "$fl" | awk '{print $2}' | med)
	fcpu=$(echo "$fl" | awk '{print $3}' | med)
	printf "  expected floor (bpf_stats): %.2f us per sample x %d Hz = %.2f%% (BPF time / workload CPU: %.2f%%)\n" "$fus" "$hz" "$fpct" "$fcpu"
	lim=$([ "$hz" = 999 ] && echo 2 || echo "")
	v=$(verdict "${MW[S]}" "${MW[F]}" "$lim")
	vc=$(verdict "${MC[S]}" "${MC[F]}" "$lim")
	vf=$(verdict "$fpct" "${MC[F]}" "$lim")
	echo "sampler slowdown at $hz Hz (the workload's own, profile vs plain): wall ${MW[S]}% vs perf's ${MW[F]}% (${v%|*}): ${v#*|}; CPU ${MC[S]}% vs ${MC[F]}% (${vc%|*}): ${vc#*|}; the floor ${fpct}% vs perf's CPU (${vf%|*}): ${vf#*|}${lim:+; target <= 2% and >= 10x}"
	unset MW MC
done

# bytes per sample, amortised over two run lengths at 999 Hz
set -- $BSCALES
s1=$1 s2=$2
for sc in $s1 $s2; do
	run S 999 "bytes$sc" a "$sc"
	run F 999 "bytes$sc" a "$sc"
done
dsz() { du -sb "$1" | cut -f1; }
prod() { cat "$1"/stacks.folded "$1"/flamegraph.svg "$1"/flamegraph.html "$1"/profile.pb.gz | wc -c; }
sn() { grep -o 'profile: [0-9]* samples' "$1.log" | grep -o '[0-9]*' | head -1; }
fn() { perf report -i "$1" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}'; }
d1="$T/S999.bytes${s1}a" d2="$T/S999.bytes${s2}a"
f1="$T/F999.bytes${s1}a.data" f2="$T/F999.bytes${s2}a.data"
awk -v n1="$(sn "$d1")" -v n2="$(sn "$d2")" -v a1="$(dsz "$d1")" -v a2="$(dsz "$d2")" \
	-v p1="$(prod "$d1")" -v p2="$(prod "$d2")" -v h1="$(stat -c %s "$d1/flamegraph.html")" -v h2="$(stat -c %s "$d2/flamegraph.html")" \
	-v m1="$(fn "$f1")" -v m2="$(fn "$f2")" -v q1="$(stat -c %s "$f1")" -v q2="$(stat -c %s "$f2")" \
	-v s1="$s1" -v s2="$s2" 'BEGIN {
	if (n2 <= n1 || m2 <= m1) { print "sampler bytes written per sample: no samples counted: MISSED"; exit }
	a = (a2 - a1) / (n2 - n1); p = (p2 - p1) / (n2 - n1); q = (q2 - q1) / (m2 - m1);
	printf "  jitsframe profile 999 Hz, scale %s and %s: %d and %d samples; DIR %d and %d B; the four profiles %d and %d B (flamegraph.html %d and %d)\n", s1, s2, n1, n2, a1, a2, p1, p2, h1, h2;
	printf "  per sample: DIR %.1f B, the four profiles %.1f B; fixed part: DIR %.0f B, profiles %.0f B\n", a, p, a1 - a * n1, p1 - p * n1;
	printf "  perf record dwarf 999 Hz: %d and %d samples, perf.data %d and %d B: %.0f B per sample, fixed %.0f B\n", m1, m2, q1, q2, q, q1 - q * m1;
	printf "sampler bytes written per sample (amortised, DIR in all): %.1f B (perf.data %.0f B, %.0fx more; target <= 100 B): %s\n", a, q, q / (a > 1 ? a : 1), a <= 100 ? "MET" : "MISSED" }'
