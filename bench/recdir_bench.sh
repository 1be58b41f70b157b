#!/usr/bin/env bash
# recdir_bench: the disk a `jitsframe record` directory of the demo
# (`make demo`: workloads/numeric.lua at 999 Hz) takes, now and in the
# former layout, in one run. The former layout is what `record --keep-all`
# leaves (perf.data and perf.data.raw, perf's build-id cache whole, the
# jitted-*.so and the rest); the new one is the default (one copy of the
# samples, of the cache the kernel's kallsyms only). Bytes as `du -sb`
# counts them; the target: the new directory at most half the former's.
# RECDIR_BENCH_REPS (3) recordings each, alternating; medians.
set -u
cd "$(dirname "$0")/.."
J=$PWD/build/jitsframe
LJ=${LUAJIT:-luajit}
REPS=${RECDIR_BENCH_REPS:-3}
W=bench/workloads/numeric.lua
if ! command -v perf >/dev/null; then
	echo "recdir_bench: perf not installed: skipped"
	exit 0
fi
T=$(mktemp -d /tmp/jsf-recdir-bench-XXXXXX)
trap 'rm -rf "$T"' EXIT
# sizes of DIR: "total perf.data perf.data.raw .debug jitted-*.so rest"
sizes() {
	local d=$1 tot pd raw dbg jit
	tot=$(du -sb "$d" | cut -f1)
	pd=$(stat -c %s "$d/perf.data" 2>/dev/null || echo 0)
	raw=$(stat -c %s "$d/perf.data.raw" 2>/dev/null || echo 0)
	dbg=$(du -sb "$d/.debug" 2>/dev/null | cut -f1)
	jit=$(cat "$d"/jitted-*.so 2>/dev/null | wc -c)
	echo "$tot $pd $raw ${dbg:-0} $jit $((tot - pd - raw - ${dbg:-0} - jit))"
}
old=() new=()
for ((i = 0; i < REPS; i++)); do
	for how in old new; do
		d=$T/$how$i
		opt=
		[ $how = old ] && opt=--keep-all
		if ! "$J" record $opt -o "$d" -- $LJ "$W" >"$d.out" 2>"$d.err"; then
			echo "recdir_bench: record $opt failed"; tail -3 "$d.err"; exit 1
		fi
		# the summary's size is the directory's
		said=$(sed -nE 's/^jitsframe record: .*: [0-9.]+ MB \(([0-9]+) bytes;.*/\1/p' "$d.out")
		s=$(sizes "$d")
		if [ "$said" != "${s%% *}" ]; then
			echo "recdir_bench: record said ${said:-nothing}, du -sb ${s%% *}"; exit 1
		fi
		if [ $how = old ]; then old+=("$s"); else new+=("$s"); fi
		# the same products, but for the second copy of the samples
		ls -A "$d" | grep -v '^perf.data.raw$' | sed -E 's/[0-9]+/N/g' | sort -u >"$d.ls"
	done
	if ! cmp -s "$T/old$i.ls" "$T/new$i.ls"; then
		echo "recdir_bench: the products differ:"; diff "$T/old$i.ls" "$T/new$i.ls"; exit 1
	fi
done
# median by total
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $0} END {print a[int((NR + 1) / 2)]}'; }
read -r ot op or od oj orr <<<"$(med "${old[@]}")"
read -r nt np nr nd nj nrr <<<"$(med "${new[@]}")"
awk -v ot="$ot" -v op="$op" -v or="$or" -v od="$od" -v oj="$oj" -v orr="$orr" \
	-v nt="$nt" -v np="$np" -v nr="$nr" -v nd="$nd" -v nj="$nj" -v nrr="$nrr" -v reps="$REPS" 'BEGIN {
	mb = 1e6
	printf "recdir_bench (numeric.lua, 999 Hz, medians of %d): former layout (record --keep-all) %.1f MB: perf.data %.1f + perf.data.raw %.1f + .debug %.1f + jitted-*.so %.2f + rest %.2f\n",
		reps, ot / mb, op / mb, or / mb, od / mb, oj / mb, orr / mb
	printf "recdir_bench: now (record) %.1f MB: perf.data %.1f + perf.data.raw %.1f + .debug %.1f + jitted-*.so %.2f + rest %.2f\n",
		nt / mb, np / mb, nr / mb, nd / mb, nj / mb, nrr / mb
	printf "recdir_bench: now / former = %.2f (target <= 0.50): %s\n", nt / ot, nt * 2 <= ot ? "MET" : "MISSED"
}'
