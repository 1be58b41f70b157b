#!/usr/bin/env bash
# `jitsframe vmprofile` on RaptorJIT's vmprofiles (TAP), the fixtures of
# ../shared/raptorjit (written by RaptorJIT 1.0.0 on the bench workloads):
#  - per trace number and per state, the counts --json prints equal the
#    file's own, read here independently (python3 struct on the raw
#    bytes: u32 magic, u16 major, u16 minor, u64 count[4097][11]); the
#    text table's VM line has the file's total, its rows the top traces;
#  - with --auditlog: every trace number with samples that the log's
#    WORKLOAD.traces.tsv (ground truth decoded independently) has is named
#    "chunk:line" of the workload's own file with a line inside it, with
#    the -jv prefix its first trace's parent/exit gives, and its count of
#    traces in the log equals the TSV's; numbers the TSV lacks are not
#    named; a log with reused numbers (flushstorm) gets the note;
#  - files that are not a vmprofile of format 4 (wrong magic, wrong major,
#    one byte short, one byte long, empty, missing) are refused: exit 3,
#    one line on stderr, nothing on stdout.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-build/jitsframe}
D=$(rj_fixtures numeric.vmprofile)
if [ -z "$D" ]; then
	echo "1..0 # SKIP RaptorJIT fixtures not found (set JITSFRAME_RAPTORJIT_DATA)"
	exit 0
fi
T=$(mktemp -d /tmp/jsf-t_vmprofile-XXXXXX)
trap 'rm -rf "$T"' EXIT
if [ ! -x "$J" ]; then
	echo "1..1"
	echo "not ok 1 - $J not built (make)"
	exit 1
fi
WORKLOADS="numeric sidetraces flushstorm nested openresty"

# the file's counts, read independently of jitsframe
cat >"$T/counts.py" <<'PY'
import json, re, struct, sys
def counts(path):
    b = open(path, "rb").read()
    assert len(b) == 8 + 4097 * 11 * 8, len(b)
    magic, major, minor = struct.unpack_from("<IHH", b, 0)
    assert (magic, major, minor) == (0x1D50F007, 4, 0)
    c = struct.unpack_from("<%dQ" % (4097 * 11), b, 8)
    return [list(c[t * 11:(t + 1) * 11]) for t in range(4097)]
mode, path, js = sys.argv[1], sys.argv[2], sys.argv[3]
c = counts(path)
j = json.load(open(js))
bad = []
want = {t: row for t, row in enumerate(c) if sum(row)}
got = {e["trace"]: e["counts"] for e in j["traces"]}
if got != want:
    bad.append("per trace: %d rows, want %d; differ at %s" % (
        len(got), len(want),
        sorted(t for t in set(got) | set(want) if got.get(t) != want.get(t))[:10]))
for e in j["traces"]:
    if e["samples"] != sum(e["counts"]):
        bad.append("trace %d: samples %d != sum of its counts" % (e["trace"], e["samples"]))
tot = [sum(c[t][s] for t in range(4097)) for s in range(11)]
if j["totals"] != tot:
    bad.append("totals %s, want %s" % (j["totals"], tot))
if j["samples"] != sum(tot):
    bad.append("samples %d, want %d" % (j["samples"], sum(tot)))
if j["states"] != ["interp", "c", "gc", "exit", "record", "opt", "asm", "head", "loop", "jgc", "ffi"]:
    bad.append("states %s" % j["states"])
order = [e["samples"] for e in j["traces"]]
if order != sorted(order, reverse=True):
    bad.append("rows not by samples")
if mode == "names":
    tsv, src = sys.argv[4], sys.argv[5]
    text = open(src).read()
    nlines = len(text.split("\n")) - 1
    chunk = src  # the runs named scripts by this relative path
    rows = [l.split("\t") for l in open(tsv).read().split("\n")[1:] if l]
    first, count = {}, {}
    for r in rows:
        if r[1] != "trace_stop":
            continue
        tn = int(r[4])
        count[tn] = count.get(tn, 0) + 1
        first.setdefault(tn, (int(r[9]), int(r[10])))
    named = 0
    for e in j["traces"]:
        t = e["trace"]
        if t == 0 or t not in first:
            if e.get("start") is not None:
                bad.append("trace %d: named %r, not in the log" % (t, e["start"]))
            continue
        parent, exitno = first[t]
        pre = "(%d/%d) " % (parent, exitno) if parent else "(%d/stitch) " % exitno if exitno else ""
        s = e.get("start") or ""
        if e.get("in_log") != count[t]:
            bad.append("trace %d: in_log %s, the TSV has %d" % (t, e.get("in_log"), count[t]))
        if not s.startswith(pre):
            bad.append("trace %d: start %r, want the prefix %r" % (t, s, pre))
            continue
        name, _, ln = s[len(pre):].rpartition(":")
        # the file itself, or a chunk the workload loads from a string
        # (loadstring(src, "=nbody"), "=kernel" .. v .. "_" .. K)
        stem = name.rstrip("0123456789_")
        if name != chunk and not (stem and re.search(r'"=%s' % re.escape(stem), text)):
            bad.append("trace %d: start %r: neither %s nor a chunk it loads" % (t, s, chunk))
            continue
        if not ln.isdigit() or not 1 <= int(ln) <= (nlines if name == chunk else 10**6):
            bad.append("trace %d: line %r not in %s (%d lines)" % (t, ln, name, nlines))
            continue
        named += 1
    if not named:
        bad.append("no trace named")
    print("named %d" % named)
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY

# 1. counts per trace and per state, on every fixture
for w in $WORKLOADS; do
	f=$D/$w.vmprofile
	if ! "$J" vmprofile --json -n 0 "$f" >"$T/$w.json" 2>"$T/err"; then
		notok "$w: vmprofile --json runs" "$(head -n 3 "$T/err")"
		continue
	fi
	check "$w: per-trace and per-state counts equal the file's" python3 "$T/counts.py" counts "$f" "$T/$w.json"
	# the text table: the VM line has the file's total
	total=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples"])' "$T/$w.json")
	"$J" vmprofile "$f" >"$T/$w.txt" 2>&1
	if grep -Eq "^ +VM +$total +100%" "$T/$w.txt" && grep -q "$total samples" "$T/$w.txt"; then
		ok "$w: the table's VM line has all $total samples"
	else
		notok "$w: the table's VM line has all $total samples" "$(tail -n 2 "$T/$w.txt")"
	fi
done

# 2. -n TOP: the TOP rows of the full list, in order
"$J" vmprofile --json -n 3 "$D/openresty.vmprofile" >"$T/top.json" 2>&1
if python3 -c '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
sys.exit(0 if a["traces"] == b["traces"][:3] and len(a["traces"]) == 3 else 1)' "$T/top.json" "$T/openresty.json" 2>/dev/null; then
	ok "-n 3: the first 3 rows of the full list"
else
	notok "-n 3: the first 3 rows of the full list"
fi

# 3. names from the auditlog of the same run
for w in $WORKLOADS; do
	if ! "$J" vmprofile --json -n 0 --auditlog "$D/$w.auditlog" "$D/$w.vmprofile" >"$T/$w.n.json" 2>"$T/err"; then
		notok "$w: vmprofile --auditlog runs" "$(head -n 3 "$T/err")"
		continue
	fi
	check "$w: trace numbers named chunk:line from the log, as its TSV has them" \
		python3 "$T/counts.py" names "$D/$w.vmprofile" "$T/$w.n.json" "$D/$w.traces.tsv" "bench/workloads/$w.lua"
done
"$J" vmprofile -n 0 --auditlog "$D/flushstorm.auditlog" "$D/flushstorm.vmprofile" >"$T/fs.txt" 2>&1
if grep -q "^note: .*reused across the log's 4 flushes" "$T/fs.txt"; then
	ok "flushstorm: the table says trace numbers were reused across flushes"
else
	notok "flushstorm: the table says trace numbers were reused across flushes" "$(tail -n 2 "$T/fs.txt")"
fi
"$J" vmprofile -n 0 --auditlog "$D/numeric.auditlog" "$D/numeric.vmprofile" >"$T/nu.txt" 2>&1
if ! grep -q "^note:" "$T/nu.txt" && grep -q "bench/workloads/numeric.lua:" "$T/nu.txt"; then
	ok "numeric: names in the table, no reuse note (no flush)"
else
	notok "numeric: names in the table, no reuse note (no flush)" "$(tail -n 3 "$T/nu.txt")"
fi

# 4. bad files refused: exit 3, one message, no output
src=$D/numeric.vmprofile
python3 - "$src" "$T" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
t = sys.argv[2]
open(t + "/magic.vmprofile", "wb").write(b"\x08" + b[1:])
open(t + "/major.vmprofile", "wb").write(b[:4] + b"\x05\x00" + b[6:])
open(t + "/short.vmprofile", "wb").write(b[:-1])
open(t + "/long.vmprofile", "wb").write(b + b"\0")
open(t + "/empty.vmprofile", "wb").write(b"")
PY
for k in magic major short long empty missing; do
	"$J" vmprofile "$T/$k.vmprofile" >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc = 3 ] && [ ! -s "$T/out" ] && [ "$(wc -l <"$T/err")" = 1 ]; then
		ok "$k file refused (exit 3, one message: $(cat "$T/err"))"
	else
		notok "$k file refused (exit 3, one message)" "exit $rc" "$(head -n 3 "$T/err")" "$(head -n 2 "$T/out")"
	fi
done
"$J" vmprofile "$D/numeric.auditlog" >/dev/null 2>"$T/err"
if [ $? = 3 ] && grep -q "not a vmprofile: magic" "$T/err"; then
	ok "an auditlog given as the vmprofile: refused by its magic"
else
	notok "an auditlog given as the vmprofile: refused by its magic" "$(cat "$T/err")"
fi
# 5. with a RaptorJIT binary (RAPTORJIT=/path/to/raptorjit): a vmprofile
# written now, on this machine: its totals and rows equal the file's
if [ -n "${RAPTORJIT:-}" ] && [ -x "$RAPTORJIT" ]; then
	for w in numeric nested; do
		(cd "$T" && "$RAPTORJIT" -p "$T/live-$w.vmprofile" "$OLDPWD/bench/workloads/$w.lua" 1 >/dev/null 2>&1)
		if [ ! -s "$T/live-$w.vmprofile" ] || ! "$J" vmprofile --json -n 0 "$T/live-$w.vmprofile" >"$T/live-$w.json" 2>"$T/err"; then
			notok "$RAPTORJIT -p (live $w): vmprofile reads it" "$(head -n 3 "$T/err")"
			continue
		fi
		check "$RAPTORJIT -p (live $w): per-trace and per-state counts equal the file's" python3 "$T/counts.py" counts "$T/live-$w.vmprofile" "$T/live-$w.json"
	done
else
	n=$((n + 1))
	echo "ok $n # SKIP RAPTORJIT not set: no live vmprofile"
fi
echo "1..$n"
