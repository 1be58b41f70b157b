#!/usr/bin/env bash
# `jitsframe audit` on RaptorJIT's own auditlogs (TAP), the fixtures of
# ../shared/raptorjit (README.md there; WORKLOAD.traces.tsv is ground truth
# decoded independently of jitsframe):
#  - the listing (--json, and the -jv text) has exactly the TSV's traces in
#    log order: number, parent/exit, link, linktype, mcode, szmcode, and its
#    flushes where the TSV has them; the text's [TRACE n (p/e) ...] agrees;
#  - aborts: their count per TraceError name equals the README's table;
#  - cut.auditlog: the 96 traces before the damage, exit 1, one message;
#  - --dump N [--epoch E]: the machine-code bytes objdump shows are
#    szmcode, from the trace's mcode address; the IR and constant slots
#    shown (+1 for REF_BASE) are nins-nk, the IRIns[] record's length/8 - 1
#    (the record found here with a msgpack walk of our own).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-build/jitsframe}
D=$(rj_fixtures numeric.auditlog)
if [ -z "$D" ]; then
	echo "1..0 # SKIP RaptorJIT fixtures not found (set JITSFRAME_RAPTORJIT_DATA)"
	exit 0
fi
T=$(mktemp -d /tmp/jsf-t_audit_rj-XXXXXX)
trap 'rm -rf "$T"' EXIT
if [ ! -x "$J" ]; then
	echo "1..1"
	echo "not ok 1 - $J not built (make)"
	exit 1
fi

cat >"$T/chk.py" <<'PY'
import json, re, struct, sys
sys.path.insert(0, "tests")
from rjfix import mp, readme_aborts, tsv

def listing(js, tsvp, readme, log, text):
    j = json.load(open(js))
    bad = []
    want = []
    for r in tsv(tsvp):
        if r["event"] == "trace_flushall":
            want.append(("flush",))
        else:
            want.append(("stop", int(r["traceno"]), int(r["parent"]), int(r["exitno"]),
                         int(r["link"]), int(r["mcode"], 16), int(r["szmcode"]),
                         int(r["record_offset"])))
    got = []
    for e in j["records"]:
        if e["ev"] == "flush":
            got.append(("flush",))
        elif e["ev"] == "stop":
            got.append(("stop", e["tr"], e["parent"], e["exitno"], e["link"],
                        int(e["mcode"], 16), e["szmcode"], e["offset"]))
    if got != want:
        for i, (a, b) in enumerate(zip(got, want)):
            if a != b:
                bad.append("row %d: got %s, want %s" % (i, a, b))
                break
        bad.append("%d stops/flushes listed, the TSV has %d" % (len(got), len(want)))
    # the text listing: the same traces with -jv's parent/exit
    tl = [l for l in open(text).read().split("\n") if re.match(r"\[TRACE +\d", l)]
    ws = [w for w in want if w[0] == "stop"]
    if len(tl) != len(ws):
        bad.append("text: %d trace lines, want %d" % (len(tl), len(ws)))
    for l, w in zip(tl, ws):
        pre = "(%d/%d) " % (w[2], w[3]) if w[2] else "(%d/stitch) " % w[3] if w[3] else ""
        m = re.match(r"\[TRACE +(\d+) (.*)\]$", l)
        if not m or int(m.group(1)) != w[1] or not m.group(2).startswith(pre) or \
           (pre == "" and m.group(2).startswith("(")):
            bad.append("text: %r, want trace %d %r" % (l, w[1], pre))
            break
        if w[4] and w[4] != w[1] and ("-> %d" % w[4]) not in l:
            bad.append("text: %r lacks -> %d" % (l, w[4]))
            break
    total, names = readme_aborts(readme, log)
    ab = [e for e in j["records"] if e["ev"] == "abort"]
    cnt = {}
    for e in ab:
        cnt[e["why"]] = cnt.get(e["why"], 0) + 1
    if len(ab) != total or (names and cnt != names):
        bad.append("aborts %d %s, the README has %d %s" % (len(ab), cnt, total, names))
    for b in bad:
        print(b)
    if not bad:
        print("%d traces, %d aborts" % (len(ws), len(ab)))
    return 1 if bad else 0

def dump(out, logp, tsvp, tr, epoch):
    rows = tsv(tsvp)
    e, row = 0, None
    for r in rows:
        if r["event"] == "trace_flushall":
            e += 1
        elif int(r["traceno"]) == tr and (epoch < 0 and row is None or e == epoch):
            row = r
            if epoch < 0:
                break
    if row is None:
        print("no trace %d epoch %d in the TSV" % (tr, epoch))
        return 1
    off = int(row["record_offset"])
    # the IRIns[] record of this stop: the last one before its record
    b = open(logp, "rb").read()
    o, irlen = 0, None
    while o < off:
        r, o = mp(b, o)
        if r.get("type") == "memory" and r.get("hint") == "IRIns[]":
            irlen = len(r["data"])
    text = open(out).read()
    bad = []
    m = re.search(r"^---- TRACE (\d+) .*\(nins-nk = (\d+)\)", text, re.M)
    if not m or int(m.group(1)) != tr:
        print("no header for trace %d" % tr)
        return 1
    if int(m.group(2)) != irlen // 8 - 1:
        bad.append("nins-nk %s, the IRIns[] record has %d slots" % (m.group(2), irlen // 8))
    sec = None
    nir = nk = 0
    mc = []
    for l in text.split("\n"):
        if l.startswith("---- TRACE"):
            sec = l.split()[3]
            continue
        if sec == "constants" and re.match(r"K\d{3} ", l):
            nk += 2 if l.split()[2] in ("KNUM", "KINT64", "KGC", "KPTR", "KKPTR") else 1
        elif sec == "IR" and re.match(r"\d{4} ", l):
            nir += 1
        elif sec == "mcode":
            mm = re.match(r"\s+([0-9a-f]+):\t((?:[0-9a-f]{2} )+)", l)
            if mm:
                mc.append((int(mm.group(1), 16), len(mm.group(2).split())))
    if nir + nk + 1 != irlen // 8 - 1:
        bad.append("%d IR + %d constant slots + 1 shown, nins-nk is %d" % (nir, nk, irlen // 8 - 1))
    if not mc or mc[0][0] != int(row["mcode"], 16):
        bad.append("machine code starts at %s, mcode is %s" % (hex(mc[0][0]) if mc else None, row["mcode"]))
    if sum(x[1] for x in mc) != int(row["szmcode"]):
        bad.append("%d machine-code bytes shown, szmcode %s" % (sum(x[1] for x in mc), row["szmcode"]))
    for x in bad:
        print(x)
    if not bad:
        print("%d IR, %d constant slots, %s mcode bytes" % (nir, nk, row["szmcode"]))
    return 1 if bad else 0

if sys.argv[1] == "listing":
    sys.exit(listing(*sys.argv[2:7]))
else:
    sys.exit(dump(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])))
PY

# 1. the listing on every fixture
for w in numeric sidetraces flushstorm nested openresty rowprobe; do
	if ! "$J" audit --json "$D/$w.auditlog" >"$T/$w.json" 2>"$T/err" ||
		! "$J" audit "$D/$w.auditlog" >"$T/$w.txt" 2>>"$T/err"; then
		notok "$w: audit runs" "$(head -n 3 "$T/err")"
		continue
	fi
	check "$w: the listing has the TSV's traces and flushes, the README's aborts" \
		python3 "$T/chk.py" listing "$T/$w.json" "$D/$w.traces.tsv" "$D/README.md" "$w" "$T/$w.txt"
done
grep -m1 '^\[TRACE' "$T/numeric.txt" >/dev/null && grep -q '^\[TRACE flush\]' "$T/flushstorm.txt" &&
	ok "text listing: -jv lines, [TRACE flush] on flushes" || notok "text listing: -jv lines, [TRACE flush] on flushes"

# 2. the cut log: what precedes the damage, exit 1, one message
"$J" audit --json "$D/cut.auditlog" >"$T/cut.json" 2>"$T/err"
rc=$?
"$J" audit "$D/cut.auditlog" >"$T/cut.txt" 2>/dev/null
if [ $rc = 1 ] && [ "$(grep -c . "$T/err")" = 1 ] && grep -q "damaged at byte" "$T/err"; then
	check "cut: the 96 traces before the damage, exit 1, one message ($(cat "$T/err"))" \
		python3 "$T/chk.py" listing "$T/cut.json" "$D/cut.traces.tsv" "$D/README.md" cut "$T/cut.txt"
else
	notok "cut: exit 1 and one damage message" "exit $rc" "$(head -n 3 "$T/err")"
fi

# 3. --dump: machine code and IR as the GCtrace says
if ! command -v objdump >/dev/null; then
	echo "# no objdump (binutils): --dump checks skipped"
else
	for spec in numeric:1:-1 numeric:3:-1 sidetraces:31:-1 nested:4:-1 openresty:10:-1 \
		rowprobe:3:-1 flushstorm:7:0 flushstorm:7:3 flushstorm:200:4; do
		IFS=: read -r w tr ep <<<"$spec"
		args=(--dump "$tr")
		[ "$ep" -ge 0 ] && args+=(--epoch "$ep")
		if ! "$J" audit "${args[@]}" "$D/$w.auditlog" >"$T/d.txt" 2>"$T/err"; then
			notok "$w: audit ${args[*]} runs" "$(head -n 3 "$T/err")"
			continue
		fi
		check "$w: audit ${args[*]}: szmcode bytes of machine code, nins-nk IR slots" \
			python3 "$T/chk.py" dump "$T/d.txt" "$D/$w.auditlog" "$D/$w.traces.tsv" "$tr" "$ep"
	done
fi
"$J" audit --dump 9999 "$D/numeric.auditlog" >/dev/null 2>"$T/err"
[ $? = 1 ] && grep -q "no trace 9999" "$T/err" && ok "--dump of an absent trace: exit 1" || notok "--dump of an absent trace: exit 1" "$(cat "$T/err")"
"$J" audit --dump 7 --epoch 9 "$D/flushstorm.auditlog" >/dev/null 2>"$T/err"
[ $? = 1 ] && grep -q "no trace 7 of epoch 9" "$T/err" && ok "--epoch past the last flush: exit 1" || notok "--epoch past the last flush: exit 1" "$(cat "$T/err")"
# the IR is named: every IR line's opcode is one of the log's IRDEF names
"$J" audit --dump 3 --no-mcode "$D/numeric.auditlog" >"$T/d.txt" 2>&1
if grep -Eq '^[0-9]{4} .* (SLOAD|ADD|LOOP|LE|LT|GT|NE|EQ) ' "$T/d.txt" && ! grep -q "Disassembly" "$T/d.txt"; then
	ok "--dump --no-mcode: IR named (SLOAD, ADD, ...), no disassembly"
else
	notok "--dump --no-mcode: IR named (SLOAD, ADD, ...), no disassembly" "$(head -n 5 "$T/d.txt")"
fi
echo "1..$n"
