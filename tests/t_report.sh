#!/usr/bin/env bash
# jitsframe report, jitsframe's own unwinder over perf samples (TAP):
#  1. the workload set: >= 99.5% of the samples that pass through trace
#     code unwind from main (printed per workload);
#  2. agreement: where perf itself unwinds a sample fully (non-JIT code),
#     our frames equal perf's (perf script on the same raw perf.data) in
#     >= 99% of them;
#  3. time: one address held by two traces, before and after jit.flush()
#     (tests/mcreuse.c steers the new area back): each sample is named by
#     the trace that was there at its time (ground truth: the flush time
#     the Lua program itself prints, and the source lines of its loops);
#  4. damaged perf.data (truncated, bytes changed): a clear error, exit 3,
#     no crash, under ASan+UBSan.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
JA=$PWD/build/asan/jitsframe
LJ=${LUAJIT:-luajit}
MCREUSE=$PWD/build/tests/libmcreuse.so
T=$(mktemp -d /tmp/jsf-t_report-XXXXXX)
trap 'rm -rf "$T"' EXIT
need_perf
command -v python3 >/dev/null || { echo "Bail out! python3 needed"; exit 1; }

# 1. The workload set, recorded with `jitsframe record` (which runs the
#    report by default).
tot=0 totmain=0
for w in bench/workloads/*.lua; do
	name=$(basename "$w" .lua)
	"$J" record --no-inject -o "$T/$name" -F 1999 -- $LJ "$w" >"$T/$name.out" 2>"$T/$name.err"
	rc=$?
	line=$(grep '^jitsframe report:' "$T/$name.out")
	read -r samples through tmain <<<"$(sed -E 's/^jitsframe report: ([0-9]+) samples, ([0-9]+) through trace code, ([0-9]+) of them.*/\1 \2 \3/' <<<"$line")"
	if [ $rc -ne 0 ] || [ -z "${tmain:-}" ]; then
		notok "record+report $name" "rc=$rc" "$line" "$(tail -3 "$T/$name.err")"
		continue
	fi
	pct=$(awk -v a="$tmain" -v b="$through" 'BEGIN { printf "%.2f", b ? 100 * a / b : 0 }')
	echo "# $name: $tmain of $through samples through trace code unwound from main ($pct%); $line"
	tot=$((tot + through)) totmain=$((totmain + tmain))
	if [ "$through" -lt 10 ]; then
		notok "report $name: only $through samples through trace code" "$line"
	elif awk -v a="$tmain" -v b="$through" 'BEGIN { exit !(a * 1000 >= 995 * b) }'; then
		ok "report $name: $pct% of $through samples through trace code unwound from main (>= 99.5%)"
	else
		notok "report $name: $pct% of $through samples through trace code unwound from main (< 99.5%)" "$line"
	fi
done
pct=$(awk -v a="$totmain" -v b="$tot" 'BEGIN { printf "%.2f", b ? 100 * a / b : 0 }')
echo "# workload set: $totmain of $tot samples through trace code unwound from main ($pct%)"
if awk -v a="$totmain" -v b="$tot" 'BEGIN { exit !(b > 0 && a * 1000 >= 995 * b) }'; then
	ok "workload set: $pct% of $tot samples through trace code unwound from main (>= 99.5%)"
else notok "workload set: $pct% (< 99.5%)"; fi

# The outputs: folded stacks with named trace frames under main, the SVG.
D=$T/numeric
if grep -qE '(^|;)main;.*TRACE_[0-9]+::[^;]+:[0-9]+_\[j\]' "$D/stacks.folded" &&
	python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$D/flamegraph.svg"; then
	ok "stacks.folded: TRACE_n::chunk:line_[j] frames under main; flamegraph.svg parses"
else notok "folded stacks / svg" "$(head -3 "$D/stacks.folded")"; fi

# pprof: the recorded program is the main binary (profile.pb.gz's first
# mapping, which pprof shows as the main binary), and every mapping whose
# file is an ELF carries that file's build-id. Read by an independent
# decoder (the npm pprof-format package, tests/pprof_dump.mjs); the
# program's path from the shell (readlink -f of `command -v luajit`), the
# build-ids from readelf -n.
D=$T/numeric
V=build/viewer
exe=$(readlink -f "$(command -v "$LJ")")
if ! command -v node >/dev/null || [ ! -d "$V/node_modules/pprof-format" ]; then
	if [ "${CI:-}" = true ]; then notok "pprof mappings: node and $V (make) needed (CI=true: required)"
	else ok "pprof mappings: skipped, node or $V/node_modules/pprof-format missing # SKIP"; fi
elif ! node tests/pprof_dump.mjs --mappings "$D/profile.pb.gz" "$V" >"$T/maps" 2>"$T/maps.err"; then
	notok "pprof mappings: profile.pb.gz decodes" "$(cat "$T/maps.err")"
else
	first=$(head -n 1 "$T/maps" | cut -d' ' -f4-)
	if [ -n "$exe" ] && [ "$first" = "$exe" ]; then
		ok "pprof: mapping[0] is the recorded executable ($exe)"
	else
		notok "pprof: mapping[0] is the recorded executable ($exe)" "$(head -n 5 "$T/maps")"
	fi
	bad=() nelf=0
	while read -r _ id bid fn; do
		[ -f "$fn" ] && [ "$(head -c 4 "$fn" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
		nelf=$((nelf + 1))
		want=$(readelf -n "$fn" 2>/dev/null | sed -nE 's/^ *Build ID: *([0-9a-f]+).*/\1/p' | head -n 1)
		[ -n "$want" ] && [ "$bid" = "$want" ] || bad+=("mapping $id $fn: build_id $bid, readelf says ${want:-none}")
	done <"$T/maps"
	if [ "$nelf" -ge 2 ] && [ ${#bad[@]} -eq 0 ]; then
		ok "pprof: each of the $nelf mappings of an ELF file carries its build-id (readelf -n)"
	else
		notok "pprof: each mapping of an ELF file carries its build-id ($nelf ELF mappings)" "${bad[@]}" "$(cat "$T/maps")"
	fi
fi

# Without the HTML viewer (a build without npm or the npm registry; here
# JITSFRAME_VIEWER names an empty directory): report still succeeds,
# prints one note naming what is missing and how to get it, and
# flamegraph.html says the viewer is unavailable (no viewer script in it);
# the other profiles are written as with the viewer.
D=$T/numeric
if [ -s "$D/perf.data.raw" ]; then
	mkdir -p "$T/noviewer"
	rm -f "$D/flamegraph.html"
	JITSFRAME_VIEWER=$T/noviewer "$J" report "$D" >"$T/nov.out" 2>"$T/nov.err"
	rc=$?
	notes=$(grep -c 'viewer' "$T/nov.err")
	H=$D/flamegraph.html
	if [ $rc -eq 0 ] && [ "$notes" -eq 1 ] && [ "$(wc -l <"$T/nov.err")" -eq 1 ] &&
		grep -q 'note:.*npm.*JITSFRAME_VIEWER' "$T/nov.err" &&
		grep -q 'wrote stacks.folded flamegraph.svg flamegraph.html profile.pb.gz' "$T/nov.out" &&
		grep -q 'viewer is unavailable' "$H" && grep -q '</html>' "$H" &&
		! grep -qi '<script' "$H" && ! grep -q 'zoom' "$H"; then
		ok "report without the viewer: exit 0, one note, flamegraph.html says the viewer is unavailable"
	else notok "report without the viewer: rc=$rc, $notes notes" "$(cat "$T/nov.err")" "$(head -c 600 "$H" 2>&1)"; fi
	"$J" report "$D" >/dev/null 2>&1
fi

# 2. Agreement with perf where perf unwinds fully.
agree=0 compared=0
for w in bench/workloads/*.lua; do
	name=$(basename "$w" .lua)
	D=$T/$name
	[ -s "$D/perf.data.raw" ] || continue
	perf script -i "$D/perf.data.raw" --ns --no-inline -F tid,time,ip,sym,dso >"$D/ps.txt" 2>/dev/null
	"$J" report --no-write --dump "$D/dump.txt" "$D" >/dev/null 2>&1
	read -r a c full diffs <<<"$(python3 tests/report_agree.py "$D/ps.txt" "$D/dump.txt")"
	echo "# $name: our frames equal perf's in $a of $c samples perf unwound fully${diffs:+ (e.g. $diffs)}"
	agree=$((agree + a)) compared=$((compared + c))
done
pct=$(awk -v a="$agree" -v b="$compared" 'BEGIN { printf "%.2f", b ? 100 * a / b : 0 }')
if [ "$compared" -ge 100 ] && awk -v a="$agree" -v b="$compared" 'BEGIN { exit !(a * 100 >= 99 * b) }'; then
	ok "agreement: our frames equal perf's in $agree of $compared fully unwound samples ($pct% >= 99%)"
else notok "agreement: $agree of $compared ($pct%; want >= 99% of >= 100)"; fi

# Kernel frames (perf's kernel callchain, named from /proc/kallsyms) sit
# above the user frames, suffixed _[k].
if [ "$(head -c 16 /proc/kallsyms 2>/dev/null)" = 0000000000000000 ] || [ ! -r /proc/kallsyms ]; then
	ok "kernel frames: skipped, /proc/kallsyms hides addresses # SKIP"
elif grep -qE ';[a-z_0-9.]+\[k\];' "$T/nested/stacks.folded" && ! grep -qE '_\[k\];[^ ]*[^]] [0-9]+$' "$T/nested/stacks.folded" &&
	# every kernel name is one perf gives for the same recording (ours come
	# from the kallsyms copy perf record keeps in DIR/.debug)
	[ -z "$(comm -23 <(grep -oE '[A-Za-z_0-9.]+_\[k\]' "$T/nested/stacks.folded" | sed 's/_\[k\]$//' | sort -u) \
		<(grep -F '[kernel.kallsyms]' "$T/nested/ps.txt" | awk '{print $(NF-1)}' | sed 's/+0x[0-9a-f]*$//' | sort -u))" ]; then
	ok "kernel frames: named from kallsyms, suffixed _[k], above the user frames ($(grep -c '_\[k\]' "$T/nested/stacks.folded") stacks)"
else notok "kernel frames" "$(grep '_\[k\]' "$T/nested/stacks.folded" | head -2)"; fi

# Code no symbol covers (the stripped luajit's own functions, its
# interpreter) is named by the FDE that covers it, "[luajit+0xSTART]":
# every such START must be where an FDE of the binary begins (readelf).
names=$(grep -oE '\[luajit\+0x[0-9a-f]+\]' "$T/nested/stacks.folded" | sed -E 's/.*\+0x([0-9a-f]+)\]/\1/' | sort -u)
fdes=$(readelf --debug-dump=frames "$(readlink -f "$(command -v $LJ)")" 2>/dev/null |
	sed -nE 's/.* FDE .*pc=0*([0-9a-f]+)\.\..*/\1/p' | sort -u)
bad=$(comm -23 <(printf '%s\n' $names) <(printf '%s\n' $fdes))
# (bare addresses remain for anonymous JIT memory: exit stubs, callbacks)
bare=$(grep '^F' "$T/nested/dump.txt" 2>/dev/null | awk '$6 ~ /\/luajit$/ && ($5 == "-" || $5 ~ /^\[0x/)' | wc -l)
if [ -n "$names" ] && [ -z "$bad" ] && [ -s "$T/nested/dump.txt" ] && [ "$bare" -eq 0 ]; then
	ok "unnamed code named by its FDE: $(printf '%s\n' $names | wc -l) FDE starts of the binary, no luajit frame left as a bare address"
else notok "unnamed code named by its FDE" "not FDE starts: $bad" "luajit frames without a name: $bare"; fi

# 3. Time: the same addresses before and after a flush.
if [ -e "$MCREUSE" ]; then
	"$J" record --no-inject -o "$T/flush" -F 1999 -- env LD_PRELOAD="$MCREUSE" JSF_MCREUSE_LOG=1 \
		$LJ tests/lua/flushreuse.lua 1e8 >"$T/flush.out" 2>"$T/flush.err"
	"$J" report --no-write --dump "$T/flush/dump.txt" "$T/flush" >/dev/null 2>&1
	res=$(python3 tests/flushreuse_check.py "$T/flush.out" "$T/flush/dump.txt" tests/lua/flushreuse.lua 1)
	read -r right wrong shared rest <<<"$res"
	echo "# time: $right trace-leaf samples named by the trace of their time, $wrong not; $shared addresses sampled in both; $rest"
	if grep -q "mcreuse: area" "$T/flush.err" && [ "${shared:-0}" -ge 1 ] && [ "${wrong:-1}" -eq 0 ] && [ "${right:-0}" -ge 50 ]; then
		ok "time: $shared addresses sampled before and after the flush, each sample named by the trace there at its time ($right right, 0 wrong)"
	else notok "time: right=$right wrong=$wrong shared=$shared" "$res" "$(tail -3 "$T/flush.err")"; fi
else
	notok "time: $MCREUSE not built (make check builds it)"
fi

# 4. Damaged perf.data under ASan+UBSan.
[ -x "$JA" ] || JA=$J
RAW=$T/numeric/perf.data.raw
mkdir -p "$T/bad"
cp "$T/numeric/region" "$T/bad/region" 2>/dev/null
size=$(stat -c %s "$RAW")
bad=0 badmsg=
for cut in 0 7 20 100 200 300 $((size / 3)) $((size / 2 + 5)) $((size * 3 / 4 + 3)); do
	head -c "$cut" "$RAW" >"$T/bad/perf.data.raw"
	"$JA" report --no-write "$T/bad" >"$T/bad.out" 2>"$T/bad.err"; rc=$?
	if [ $rc -ne 3 ] || ! grep -qE 'perf.data|PERFILE2' "$T/bad.err" || grep -qE 'Sanitizer|runtime error' "$T/bad.err"; then
		bad=$((bad + 1)) badmsg="cut at $cut: rc=$rc $(head -c 300 "$T/bad.err")"
	fi
done
if [ $bad -eq 0 ]; then
	ok "truncated perf.data (9 cuts): exit 3 with a clear message, no sanitizer report ($(head -1 "$T/bad.err"))"
else notok "truncated perf.data: $bad bad" "$badmsg"; fi
bad=0 badmsg=
for seed in 1 2 3 4 5 6 7 8; do
	python3 - "$RAW" "$T/bad/perf.data.raw" "$seed" <<'PY'
import sys, random
d = bytearray(open(sys.argv[1], "rb").read()[:400000])
r = random.Random(int(sys.argv[3]))
for _ in range(40):
    i = r.randrange(len(d))
    d[i] = r.randrange(256)
open(sys.argv[2], "wb").write(bytes(d))
PY
	"$JA" report --no-write "$T/bad" >"$T/bad.out" 2>"$T/bad.err"; rc=$?
	if { [ $rc -ne 0 ] && [ $rc -ne 3 ]; } || grep -qE 'Sanitizer|runtime error' "$T/bad.err"; then
		bad=$((bad + 1)) badmsg="seed $seed: rc=$rc $(head -c 300 "$T/bad.err")"
	fi
done
if [ $bad -eq 0 ]; then
	ok "corrupted perf.data (8 x 40 random bytes): exit 0 or 3, no crash or sanitizer report"
else notok "corrupted perf.data: $bad bad" "$badmsg"; fi
printf 'PERFILE2\x10\0\0\0\0\0\0\0' >"$T/bad/perf.data.raw"
"$JA" report --no-write "$T/bad" >/dev/null 2>"$T/bad.err"; rc=$?
if [ $rc -eq 3 ] && grep -q "pipe mode" "$T/bad.err"; then ok "pipe-mode perf.data: exit 3, says it is not supported"
else notok "pipe mode" "rc=$rc $(cat "$T/bad.err")"; fi
"$J" report >/dev/null 2>"$T/u.err"; rc=$?
if [ $rc -eq 2 ] && "$J" report --help | grep -q "Usage: jitsframe report"; then ok "usage: exit 2 without DIR; --help"
else notok "usage" "rc=$rc"; fi

# 5. ELF .sframe sections: a program assembled with --gsframe unwinds the
#    same through its .sframe as through its .eh_frame.
S=$T/sfp
mkdir -p "$S"
if ${CC:-cc} -O2 -fomit-frame-pointer -Wa,--gsframe tests/sframe_prog.c -o "$S/prog" 2>"$S/cc.err"; then
	perf record -q -k 1 --call-graph dwarf,16384 -F 1999 -o "$S/perf.data.raw" "$S/prog" 3000 >/dev/null 2>&1
	"$J" report --no-write --dump "$S/a.txt" "$S" >"$S/a.out" 2>&1
	JITSFRAME_NO_SFRAME=1 "$J" report --no-write --dump "$S/b.txt" "$S" >"$S/b.out" 2>&1
	rows=$(sed -nE 's/^# rows from .sframe ([0-9]+),.*/\1/p' "$S/a.txt")
	brows=$(sed -nE 's/^# rows from .sframe ([0-9]+),.*/\1/p' "$S/b.txt")
	nsamp=$(grep -c '^S ' "$S/a.txt")
	inprog=$(grep -c "^F .* $S/prog\$" "$S/a.txt")
	if [ "${rows:-0}" -ge 3 ] && [ "${brows:-1}" -eq 0 ] && [ "$inprog" -ge 50 ] &&
		cmp -s <(grep -v '^#' "$S/a.txt") <(grep -v '^#' "$S/b.txt"); then
		ok ".sframe: $nsamp samples ($inprog frames in the program) unwind the same through $rows .sframe rows as through .eh_frame"
	else notok ".sframe: rows=$rows (without: $brows), $inprog frames in the program, dumps $(cmp <(grep -v '^#' "$S/a.txt") <(grep -v '^#' "$S/b.txt") | head -1)" "$(cat "$S/a.out")"; fi
else
	ok ".sframe: skipped, the assembler has no --gsframe ($(head -1 "$S/cc.err")) # SKIP"
fi

echo "1..$n"
[ $fails -eq 0 ]
