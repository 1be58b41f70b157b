#!/usr/bin/env bash
# Every sample through the region of its own process, never another's
# (TAP). tests/lua/xproc.lua forks before compiling anything, so parent and
# child place different traces (other code, other Lua lines) at the same
# addresses; `jitsframe record` keeps both regions (DIR/region, the child's
# DIR/region-PID) and both jitdumps. Ground truth is the Lua source: the
# child's traces are in child_work's lines, the parent's in parent_work's.
# The test requires samples whose pc lies inside a function of the other
# process's region at that time (those an address-only lookup misnames),
# and counts the samples named from the wrong process: zero. Then a copy of
# the recording without the child's region: its samples must not borrow
# the parent's, and the summary names the child's pid with the fix.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-build/jitsframe}
T=$(mktemp -d /tmp/jsf-t_xproc-XXXXXX)
trap 'rm -rf "$T"' EXIT
if ! perf stat -e cpu-clock true >/dev/null 2>&1; then
	if [ "${CI:-}" = true ]; then notok "perf works (CI=true: required)"; echo "1..$n"; exit 1; fi
	echo "1..0 # SKIP perf cannot sample here"
	exit 0
fi
L=tests/lua/xproc.lua
cl=$(grep -n 'CHILD LOOP' $L | cut -d: -f1)
pl=$(grep -n 'PARENT LOOP' $L | cut -d: -f1)
sl=$(grep -n '^local function spin' $L | cut -d: -f1)

if "$J" record --no-inject -o "$T/r" -F 999 -- luajit $L 1 >"$T/out" 2>&1 &&
	[ -e "$T/r/region" ] && ls "$T/r"/region-[0-9]* >/dev/null 2>&1; then
	ok "record: the parent's region and the child's ($(basename "$(ls "$T/r"/region-[0-9]* | head -n 1)"))"
else
	notok "record: the parent's region and the child's" "$(tail -n 5 "$T/out")" "$(ls "$T/r" 2>&1 | tr '\n' ' ')"
fi
"$J" report --no-write --dump "$T/dump" "$T/r" >"$T/sum" 2>&1
for f in "$T/r/region" "$T/r"/region-[0-9]*; do
	"$J" region dump --all --json "$f" >"$f.json" 2>/dev/null
done

check() { # the dump, the two regions' JSON -> counts
	python3 - "$T/dump" "$cl" "$pl" "$sl" "$T/r/region.json" "$T"/r/region-[0-9]*.json <<'PY'
import json, re, sys
dump, cl, pl, sl = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
regs, order = {}, []
for p in sys.argv[5:]:
    j = json.load(open(p))
    regs[j["pid"]] = j["functions"]
    order.append(j["pid"])
def inside(pid, pc, t):
    for f in regs.get(pid, []):
        if f["start"] <= pc < f["start"] + f["size"] and f["added_ns"] <= t and (not f.get("removed_ns") or t < f["removed_ns"]):
            return True
    return False
parent = order[0] if order else 0  # DIR/region's producer
own = {pid: ("child" if pid != parent else "parent") for pid in regs}
named = wrong = overlap = main = through = 0
cur = None
for line in open(dump):
    w = line.split()
    if w[0] == "S":
        cur = (int(w[1]), int(w[2]))
        leaf = True
        continue
    if w[0] != "F" or cur is None:
        continue
    t, pid = cur
    pc = int(w[1], 16)
    first_frame = leaf
    if leaf:
        leaf = False
        others = [q for q in regs if q != pid]
        if any(inside(q, pc, t) for q in others):
            overlap += 1
    m = re.search(r"TRACE_\d+::[^ ]*xproc\.lua:(\d+)", line)
    if m:
        ln = int(m.group(1))
        named += 1
        # the frame's pc must lie in a function of its own process's
        # region then (callers: the return address - 1); and a trace of
        # child_work or parent_work must be its own process's. (spin()'s
        # traces are in both processes: the region check alone.)
        look = pc if w is not None and first_frame else pc - 1
        who = "child" if cl <= ln < pl else "parent" if pl <= ln < sl else None
        if not inside(pid, look, t) or (who and who != own.get(pid)):
            wrong += 1
print(len(regs), named, wrong, overlap)
PY
}
read -r nreg named wrong overlap < <(check)
if [ "${nreg:-0}" -eq 2 ] && [ "${overlap:-0}" -ge 10 ] && [ "${named:-0}" -ge 100 ] && [ "${wrong:-1}" -eq 0 ]; then
	ok "$named trace frames named, 0 from the other process's region, over $overlap samples whose pc lay in a function of the other's region then"
else
	notok "each sample through its own region (regions $nreg, named $named, wrong $wrong, samples at the other's addresses $overlap)" "$(cat "$T/sum")"
fi
if grep -qE '\(100\.00%\) unwound from main' "$T/sum"; then
	ok "every sample through trace code unwound from main, in both processes"
else
	notok "every sample through trace code unwound from main" "$(cat "$T/sum")"
fi

# the child's region gone: its samples are not named from the parent's,
# and the summary says which process has no region, and what to do
cp -r "$T/r" "$T/nr"
child=$(basename "$(ls "$T/nr"/region-[0-9]* | grep -v json | head -n 1)")
cpid=${child#region-}
rm -f "$T/nr/$child" "$T/nr/$child.json"
"$J" report --no-write --dump "$T/dump" "$T/nr" >"$T/sum2" 2>&1
rm -f "$T/r/$child.json"
wrongc=$(awk -v p="$cpid" '$1 == "S" { cur = $3 } $1 == "F" && cur == p && /TRACE_/ { w++ } END { print w + 0 }' "$T/dump")
if [ "$wrongc" -eq 0 ] && grep -q "pid $cpid (luajit): [0-9]* samples in JIT code but no region for that process (start jitsframe in it" "$T/sum2"; then
	ok "without the child's region: none of its samples named, the summary names pid $cpid and the fix"
else
	notok "without the child's region" "trace frames in the child's samples: $wrongc" "$(cat "$T/sum2")"
fi
echo "1..$n"
