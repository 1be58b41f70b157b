#!/usr/bin/env bash
# `jitsframe audit replay RJLOG -jv | -jdump` on RaptorJIT's own auditlogs
# (TAP): LuaJIT's unmodified jit/v.lua and jit/dump.lua (the host's)
# answered from the log's raw structs (audit/rjaudit.c). Ground truth: the
# fixtures of ../shared/raptorjit (README.md there; WORKLOAD.traces.tsv
# decoded by a different decoder), and `jitsframe audit --dump N`, which
# names IR by the log's own IRDEF (not by the host's jit.vmdef):
#  - -jv: one [TRACE n ...] line per TSV trace_stop, in log order, with the
#    TSV's number, (parent/exit) or (n/stitch), link target and link type
#    (LuaJIT's names by TraceLink value), [TRACE flush] where the TSV has a
#    flush; the start's chunk:line agrees with `jitsframe audit`'s listing;
#    aborts: their count per reason equals the README's table;
#  - -jdump=ir,m on chosen traces: the IR shows refs 1..nins-1 (without
#    the NOP/CARG jit.dump never prints) with the opcode names of `audit
#    --dump` line by line, nins-nk matching the IRIns[] record (found by a
#    msgpack walk of our own); the mcode section is szmcode bytes, its
#    disassembly starts at mcode, stays inside the trace, and ->LOOP is at
#    mcloop;
#  - the cut log replays its 96 traces, exit 1, the damage message.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-build/jitsframe}
D=$(rj_fixtures numeric.auditlog)
if [ -z "$D" ]; then
	echo "1..0 # SKIP RaptorJIT fixtures not found (set JITSFRAME_RAPTORJIT_DATA)"
	exit 0
fi
if ! command -v luajit >/dev/null && [ -z "${JITSFRAME_LUAJIT:-}" ]; then
	echo "1..0 # SKIP no luajit to replay with"
	exit 0
fi
T=$(mktemp -d /tmp/jsf-t_audit_rj_replay-XXXXXX)
trap 'rm -rf "$T"' EXIT
if [ ! -x "$J" ] || [ ! -e build/lua/jitsframe_replay.lua ]; then
	echo "1..1"
	echo "not ok 1 - $J or build/lua not built (make)"
	exit 1
fi

cat >"$T/chk.py" <<'PY'
import os, re, struct, sys
sys.path.insert(0, "tests")
from rjfix import mp, readme_aborts, tsv

# LuaJIT's trace link names (lib_jit.c), by TraceLink value
LINK = ["none", "root", "loop", "tail-recursion", "up-recursion",
        "down-recursion", "interpreter", "return", "stitch"]

def jv(out, tsvp, readme, log, listing):
    lines = [l for l in open(out).read().split("\n") if l]
    bad = []
    other = [l for l in lines if not l.startswith("[TRACE ")]
    if other:
        bad.append("not a -jv line: %r" % other[0])
    got = [l for l in lines if l.startswith("[TRACE ") and not l.startswith("[TRACE --- ")]
    want = tsv(tsvp)
    if len(got) != len(want):
        bad.append("%d trace/flush lines, the TSV has %d rows" % (len(got), len(want)))
    lst = [l for l in open(listing).read().split("\n") if re.match(r"\[TRACE +\d", l)]
    li = 0
    for l, r in zip(got, want):
        if r["event"] == "trace_flushall":
            if l != "[TRACE flush]":
                bad.append("%r, want [TRACE flush]" % l)
                break
            continue
        tr, p, e, link = int(r["traceno"]), int(r["parent"]), int(r["exitno"]), int(r["link"])
        lt = LINK[int(r["linktype"])]
        pre = "(%d/%d) " % (p, e) if p else "(%d/stitch) " % e if e else ""
        m = re.match(r"\[TRACE +(\d+) (.*)\]$", l)
        if not m or int(m.group(1)) != tr or not m.group(2).startswith(pre) or \
           (not pre and m.group(2).startswith("(")):
            bad.append("%r, want trace %d %r" % (l, tr, pre))
            break
        rest = m.group(2)[len(pre):]
        if lt == "interpreter":
            good = rest.endswith(" -- fallback to interpreter")
        elif lt == "stitch":
            good = re.search(r" stitch \S+$", rest) is not None
        elif link == tr or link == 0:
            good = rest.endswith(" " + lt)
        elif lt == "root":
            good = rest.endswith(" -> %d" % link)
        else:
            good = rest.endswith(" -> %d %s" % (link, lt))
        if not good:
            bad.append("%r: want link %d, %s" % (l, link, lt))
            break
        # the start agrees with the listing's (which prints the chunk
        # name whole; -jv, lj_debug_pushloc, its last path part)
        loc = rest.split(" ")[0]
        if li < len(lst):
            lm = re.match(r"\[TRACE +\d+ (?:\(\d+/\w+\) )?(\S+)", lst[li])
            ll = lm.group(1) if lm else ""
            if re.match(r"^@?[\w./-]+:\d+$", ll) and os.path.basename(ll) != loc:
                bad.append("%r: start %s, the listing says %s" % (l, loc, ll))
                break
        li += 1
    total, names = readme_aborts(readme, log)
    ab = [l for l in lines if l.startswith("[TRACE --- ")]
    cnt = {}
    for l in ab:
        m = re.search(r" -- (\w+)(?: at .*)?\]$", l)
        k = m.group(1) if m else "?"
        cnt[k] = cnt.get(k, 0) + 1
    if len(ab) != total or (names and cnt != names):
        bad.append("aborts %d %s, the README has %d %s" % (len(ab), cnt, total, names))
    for b in bad:
        print(b)
    if not bad:
        print("%d lines, %d aborts" % (len(got), len(ab)))
    return 1 if bad else 0

def blocks(path):
    # -jdump output -> {(epoch, tr): {"ir": [(ref, op)], "mc": ..}} for
    # the first stopped occurrence of each
    res, cur, sec, ep = {}, None, None, 0
    for l in open(path).read().split("\n"):
        m = re.match(r"---- TRACE (\S+)(?: (\w+))?(?: (\d+))?", l)
        if m:
            if m.group(1) == "flush":
                ep += 1
                continue
            tr, what = int(m.group(1)), m.group(2)
            if what == "start":
                cur = {"tr": tr, "ir": [], "mc": [], "loop": None, "mcsize": None}
            elif what == "IR":
                sec = "IR"
            elif what == "mcode":
                sec = "mc"
                cur["mcsize"] = int(m.group(3))
            elif what == "stop":
                res.setdefault((ep, tr), cur)
                sec = None
            elif what == "abort":
                sec = None
            continue
        if cur is None or sec is None:
            continue
        if sec == "IR":
            mm = re.match(r"(\d{4}) (?:-{12} LOOP|.{6}.. \S.. (\S+))", l)
            if mm:
                cur["ir"].append((int(mm.group(1)), mm.group(2) or "LOOP"))
        elif sec == "mc":
            if l == "->LOOP:":
                cur["loop"] = len(cur["mc"])
            mm = re.match(r"([0-9a-f]{8,16})  ", l)
            if mm:
                cur["mc"].append(int(mm.group(1), 16))
    return res

def dump(replay, ref, logp, tsvp, tr, epoch):
    rows = tsv(tsvp)
    e, row = 0, None
    for r in rows:
        if r["event"] == "trace_flushall":
            e += 1
        elif int(r["traceno"]) == tr and e == max(epoch, 0) and row is None:
            row = r
    if row is None:
        print("no trace %d epoch %d in the TSV" % (tr, epoch))
        return 1
    off = int(row["record_offset"])
    b = open(logp, "rb").read()
    o, irlen = 0, None
    while o < off:
        r, o = mp(b, o)
        if r.get("type") == "memory" and r.get("hint") == "IRIns[]":
            irlen = len(r["data"])
    bad = []
    # the independent answer: audit --dump's header and IR lines
    text = open(ref).read()
    m = re.search(r"^---- TRACE \d+ .*: (\d+) IR instructions, (\d+) constant slots \(nins-nk = (\d+)\)", text, re.M)
    if not m:
        print("no audit --dump header")
        return 1
    nir, nks, nn = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if nn != irlen // 8 - 1 or nir + nks + 1 != nn:
        bad.append("audit --dump: %d IR + %d constant slots, nins-nk %d; the IRIns[] record has %d slots" % (nir, nks, nn, irlen // 8))
    refir, sec = [], None
    for l in text.split("\n"):
        if l.startswith("---- TRACE"):
            sec = l.split()[3]
        elif sec == "IR" and re.match(r"\d{4} ", l):
            refir.append((int(l[0:4]), l[14:].split()[1]))
    want = [x for x in refir if x[1] not in ("NOP", "CARG")]
    got = blocks(replay).get((max(epoch, 0), tr))
    if got is None:
        print("trace %d (epoch %d) not in the replay's -jdump" % (tr, max(epoch, 0)))
        return 1
    if len(refir) != nir:
        bad.append("audit --dump shows %d IR lines, says %d" % (len(refir), nir))
    if got["ir"] != want:
        for i, (a, w) in enumerate(zip(got["ir"], want)):
            if a != w:
                bad.append("IR line %d: replay %s, audit --dump %s" % (i, a, w))
                break
        bad.append("%d IR lines, audit --dump has %d (NOP/CARG left out)" % (len(got["ir"]), len(want)))
    mc, sz, loop = int(row["mcode"], 16), int(row["szmcode"]), int(row["mcloop"])
    if got["mcsize"] != sz:
        bad.append("mcode section of %s bytes, szmcode %d" % (got["mcsize"], sz))
    a = got["mc"]
    if not a or a[0] != mc or a[-1] >= mc + sz or any(x >= y for x, y in zip(a, a[1:])):
        bad.append("disassembly from %s to %s, the trace is [%#x, %#x)" % (
            hex(a[0]) if a else None, hex(a[-1]) if a else None, mc, mc + sz))
    if loop and (got["loop"] is None or a[got["loop"]] != mc + loop):
        bad.append("->LOOP not at mcode+mcloop (%#x)" % (mc + loop))
    if not loop and got["loop"] is not None:
        bad.append("->LOOP in a trace without a loop")
    for x in bad:
        print(x)
    if not bad:
        print("%d IR, %d bytes" % (len(want), sz))
    return 1 if bad else 0

if sys.argv[1] == "jv":
    sys.exit(jv(*sys.argv[2:7]))
sys.exit(dump(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]), int(sys.argv[7])))
PY

# 1. -jv on every fixture, the TSV's traces and flushes
for w in numeric sidetraces flushstorm nested openresty rowprobe; do
	if ! "$J" audit replay "$D/$w.auditlog" -jv="$T/$w.jv" -jdump=ir,"$T/$w.dump" 2>"$T/err" ||
		! "$J" audit "$D/$w.auditlog" >"$T/$w.txt" 2>>"$T/err"; then
		notok "$w: audit replay runs" "$(head -n 3 "$T/err")"
		continue
	fi
	if grep -v "warning:" "$T/err" | grep -q .; then
		notok "$w: audit replay: no message" "$(head -n 3 "$T/err")"
	fi
	check "$w: -jv has the TSV's traces (number, parent/exit, link) and flushes, the README's aborts" \
		python3 "$T/chk.py" jv "$T/$w.jv" "$D/$w.traces.tsv" "$D/README.md" "$w" "$T/$w.txt"
done

# 2. -jdump: IR as audit --dump names it, machine code szmcode bytes
for spec in numeric:1:-1 numeric:3:-1 numeric:16:-1 sidetraces:31:-1 sidetraces:2:-1 \
	nested:4:-1 nested:32:-1 openresty:7:-1 openresty:8:-1 openresty:10:-1 rowprobe:3:-1 \
	rowprobe:4:-1 flushstorm:7:0 flushstorm:7:3 flushstorm:200:4; do
	IFS=: read -r w tr ep <<<"$spec"
	args=(--dump "$tr" --no-mcode)
	[ "$ep" -ge 0 ] && args+=(--epoch "$ep")
	[ -e "$T/$w.m.dump" ] || "$J" audit replay "$D/$w.auditlog" -jdump=rim,"$T/$w.m.dump" 2>/dev/null
	if ! "$J" audit "${args[@]}" "$D/$w.auditlog" >"$T/d.txt" 2>"$T/err"; then
		notok "$w: audit ${args[*]} runs" "$(head -n 3 "$T/err")"
		continue
	fi
	lab="trace $tr"
	[ "$ep" -ge 0 ] && lab="$lab of epoch $ep"
	check "$w: $lab: -jdump's IR = audit --dump's opcodes, its mcode szmcode bytes" \
		python3 "$T/chk.py" dump "$T/$w.m.dump" "$T/d.txt" "$D/$w.auditlog" "$D/$w.traces.tsv" "$tr" "$ep"
done

# 3. the cut log: its 96 traces, exit 1, the damage message
"$J" audit replay "$D/cut.auditlog" -jv="$T/cut.jv" 2>"$T/err"
rc=$?
"$J" audit "$D/cut.auditlog" >"$T/cut.txt" 2>/dev/null
if [ $rc = 1 ] && [ "$(grep -c . "$T/err")" = 1 ] && grep -q "damaged at byte 808971" "$T/err"; then
	check "cut: the traces before the damage, exit 1, one message" \
		python3 "$T/chk.py" jv "$T/cut.jv" "$D/cut.traces.tsv" "$D/README.md" cut "$T/cut.txt"
else
	notok "cut: exit 1 and one damage message" "exit $rc" "$(head -n 3 "$T/err")"
fi

# 4. names come from the host's numbering: a fast function constant is
# named (math.sqrt in numeric's trace 1), none shown as a number
if grep -q "fun EQ     0018  math.sqrt" "$T/numeric.dump"; then
	ok "numeric: trace 1's fast-function constant named math.sqrt"
else
	notok "numeric: trace 1's fast-function constant named math.sqrt" "$(grep -m3 ' EQ ' "$T/numeric.dump")"
fi
echo "1..$n"
