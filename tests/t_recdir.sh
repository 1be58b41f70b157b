#!/usr/bin/env bash
# The record directory (TAP): `jitsframe record` keeps one copy of the
# samples (perf.data, injected; no perf.data.raw), of perf's build-id cache
# only the kernel's kallsyms; a later `jitsframe report DIR` writes the
# profiles record wrote, byte for byte, and they are those a report of the
# raw recording (record --keep-all) writes (but for samples in the JIT's
# code outside every trace, whose mapping perf inject drops: case 5);
# `perf report -i DIR/perf.data`
# still names the traces; the summary states the size du -sb measures.
# Skips without perf, except under CI=true, where it fails.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
LJ=${LUAJIT:-luajit}
W=bench/workloads/numeric.lua
T=$(mktemp -d /tmp/jsf-t_recdir-XXXXXX)
trap 'rm -rf "$T"' EXIT
need_perf
P="stacks.folded flamegraph.svg flamegraph.html profile.pb.gz"
D=$T/d K=$T/k
"$J" record -o "$D" -F 1999 -- $LJ $W >"$T/d.out" 2>"$T/d.err"; rc=$?
"$J" record --keep-all -o "$K" -F 1999 -- $LJ $W >"$T/k.out" 2>"$T/k.err"; rck=$?
if [ $rc -ne 0 ] || [ $rck -ne 0 ]; then
	notok "record" "rc=$rc, --keep-all rc=$rck" "$(tail -3 "$T/d.err" "$T/k.err")"
	echo "1..$n"; exit 1
fi

# 1. one copy of the samples: perf.data, injected (a jitted-*.so mapping
#    in it, which only perf inject writes); no perf.data.raw
inj=$(perf script -i "$D/perf.data" --show-mmap-events 2>/dev/null | grep -c 'MMAP.*/jitted-[0-9]*-[0-9]*\.so')
if [ -s "$D/perf.data" ] && [ ! -e "$D/perf.data.raw" ] && [ "$inj" -gt 0 ] &&
	[ "$(find "$D" -name 'perf.data*' | wc -l)" -eq 1 ]; then
	ok "one copy of the samples: perf.data, injected ($inj jitted mappings), no perf.data.raw"
else notok "one copy of the samples" "$(ls "$D")" "jitted mappings: $inj"; fi
# --keep-all: both, as before
if [ -s "$K/perf.data" ] && [ -s "$K/perf.data.raw" ]; then ok "--keep-all keeps perf.data.raw beside perf.data"
else notok "--keep-all" "$(ls "$K")"; fi

# 2. the cache: the kernel's kallsyms only (the report reads it); with
#    --keep-all also perf's copies of the binaries (luajit was sampled)
left=$(cd "$D/.debug" 2>/dev/null && find . -type f | grep -v '^\./\[kernel\.kallsyms\]/[0-9a-f]*/kallsyms$')
if [ -d "$D/.debug/[kernel.kallsyms]" ] && [ -z "$left" ] &&
	find "$K/.debug" -type f -path '*/usr/bin/luajit*' | grep -q .; then
	ok "DIR/.debug holds only the kernel's kallsyms (--keep-all: the binaries too)"
else notok "DIR/.debug pruned" "left: $left" "$(find "$K/.debug" -maxdepth 3 | head -5)"; fi

# 2b. that kallsyms reduced to the symbols the profiles name (each followed
#    by a stop marker where the next symbol was), --keep-all's whole; each
#    kernel frame of stacks.folded is a symbol kept (case 3 checks that a
#    later report names them all alike)
ks=$(find "$D/.debug" -name kallsyms | head -1)
kk=$(find "$K/.debug" -name kallsyms | head -1)
kf=$(tr ';' '\n' <"$D/stacks.folded" | sed -n 's/^\(.*\)_\[k\]\( [0-9]*\)\{0,1\}$/\1/p' | sort -u)
miss=$(for f in $kf; do grep -q " [tT] $f\(	.*\)\{0,1\}$" "$ks" || echo "$f"; done)
if [ -n "$ks" ] && [ -n "$kk" ] && [ -n "$kf" ] && [ -z "$miss" ] &&
	[ "$(wc -l <"$ks")" -lt $(($(wc -l <"$kk") / 100)) ] &&
	grep -q ' jitsframe_trimmed$' "$ks" && grep -q ' [tT] _text$' "$ks"; then
	ok "DIR's kallsyms: $(wc -l <"$ks") of $(wc -l <"$kk") lines, every one of the $(echo "$kf" | wc -l) kernel frames' symbols"
else notok "DIR's kallsyms trimmed" "lines: $(wc -l <"$ks" 2>/dev/null) of $(wc -l <"$kk" 2>/dev/null)" "kernel frames: $(echo $kf | head -c 300)" "missing: $miss"; fi

# 3. a later report: the profiles record wrote, byte for byte
mkdir "$T/rec" && for f in $P; do cp "$D/$f" "$T/rec/"; done
"$J" report "$D" >"$T/again.out" 2>&1; rc=$?
diffs=
for f in $P; do cmp -s "$T/rec/$f" "$D/$f" || diffs="$diffs $f"; done
if [ $rc -eq 0 ] && [ -z "$diffs" ]; then ok "jitsframe report DIR again: the same four profiles record wrote"
else notok "report again" "rc=$rc, differ:$diffs" "$(tail -2 "$T/again.out")"; fi

# 4. the injected samples give the report the raw ones give: both files of
#    the --keep-all recording, same profiles and the same per-sample dump
"$J" report --no-write --dump "$T/raw.dump" -i "$K/perf.data.raw" "$K" >/dev/null 2>&1
"$J" report --no-write --dump "$T/inj.dump" -i "$K/perf.data" "$K" >/dev/null 2>&1
mkdir "$T/kr" "$T/ki"
cp -r "$K" "$T/kr/d" && rm "$T/kr/d/perf.data" && "$J" report "$T/kr/d" >/dev/null 2>&1
cp -r "$K" "$T/ki/d" && rm "$T/ki/d/perf.data.raw" && "$J" report "$T/ki/d" >/dev/null 2>&1
diffs=
for f in $P; do cmp -s "$T/kr/d/$f" "$T/ki/d/$f" || diffs="$diffs $f"; done
# One exception, from perf inject itself: it drops the JIT's anonymous
# mappings (a jitted-*.so per trace instead), so a sample in that code
# but in no trace (an exit stub) is "anonymous code outside every trace"
# (reason 12, its //anon frames) in the raw file and "no mapping" (1, no
# frames) in the injected one. Those samples are matched as such; with
# any of them the profiles differ by them alone, and are not compared.
x=$(python3 - "$T/raw.dump" "$T/inj.dump" <<'PY'
import sys
def samples(p):
    out = []
    for l in open(p):
        if l.startswith("S "):
            out.append([l, []])
        elif out: # its frames (F) and whatever else follows it
            out[-1][1].append(l)
    return out
r, i = samples(sys.argv[1]), samples(sys.argv[2])
if len(r) != len(i):
    sys.exit("sample counts differ: %d %d" % (len(r), len(i)))
exc = 0
for (rs, rf), (js, jf) in zip(r, i):
    if (rs, rf) == (js, jf):
        continue
    a, b = rs.split(), js.split()
    if (a[:4] == b[:4] and a[4] == "12" and b[4] == "1" and b[5] == "0" and
            a[6:] == b[6:] and not jf and rf and all(f.split()[-1] == "//anon" for f in rf)):
        exc += 1
        continue
    sys.exit("differ: " + rs.strip() + " | " + js.strip())
print(exc)
PY
)
if [ -s "$T/raw.dump" ] && [[ $x =~ ^[0-9]+$ ]] && { [ "$x" -gt 0 ] || [ -z "$diffs" ]; } &&
	[ "$(grep -c '^S ' "$T/raw.dump")" -gt 100 ]; then
	if [ "$x" -eq 0 ]; then
		ok "report of injected perf.data = of perf.data.raw: $(grep -c '^S ' "$T/raw.dump") samples' frames, four profiles"
	else
		ok "report of injected perf.data = of perf.data.raw: $(grep -c '^S ' "$T/raw.dump") samples' frames but $x in the JIT's code outside every trace (no mapping after perf inject); profiles not compared"
	fi
else notok "injected vs raw" "profiles differ:$diffs" "${x:-}" "$(cmp "$T/raw.dump" "$T/inj.dump")"; fi

# 5. perf's own report still names the traces
perf report -i "$D/perf.data" --stdio --no-children --sort sym,srcline 2>/dev/null >"$T/report.txt"
if grep -qE '\[\.\] TRACE_[0-9]+::[^ ]+:[0-9]+ +[^ ]+\.lua:[0-9]+' "$T/report.txt"; then
	ok "perf report -i DIR/perf.data names TRACE_n frames with Lua srclines"
else notok "perf report trace names" "$(grep TRACE "$T/report.txt" | head -3)"; fi

# 6. the summary: DIR's size as du -sb counts it, and the samples'
line=$(grep -E '^jitsframe record: .*: [0-9.]+ MB \([0-9]+ bytes; perf.data [0-9.]+ MB\)$' "$T/d.out")
said=$(sed -nE 's/.* \(([0-9]+) bytes;.*/\1/p' <<<"$line")
du=$(du -sb "$D" | cut -f1)
# the later report rewrote the same four profiles: the size is unchanged
if [ -n "$said" ] && [ "$said" = "$du" ] && grep -q "^jitsframe record: $D: " <<<"$line"; then
	ok "the summary states DIR's size: $line"
else notok "summary size" "line: $line" "du -sb: $du"; fi
# and --keep-all's (about twice: the second copy of the samples)
ksaid=$(sed -nE 's/^jitsframe record: .* \(([0-9]+) bytes; perf.data .*/\1/p' "$T/k.out")
if [ "$ksaid" = "$(du -sb "$K" | cut -f1)" ] && [ "$ksaid" -gt "$said" ]; then
	ok "--keep-all's summary states its size too ($ksaid bytes, > $said)"
else notok "--keep-all size" "said $ksaid, du $(du -sb "$K" | cut -f1)"; fi

echo "1..$n"
[ $fails -eq 0 ]
