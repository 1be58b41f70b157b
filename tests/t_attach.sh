#!/usr/bin/env bash
# `jitsframe record -p` on running LuaJIT processes (TAP). Each workload is
# started with `jitsframe run`, so it publishes its region at the default
# per-user path (TMPDIR is a fresh directory): record must find it by the
# discovery convention, copy it into DIR/region-PID (its holes kept: fewer
# bytes allocated than its size; it validates), and report must unwind
# >= 99.5% of the samples through trace code up to main. `region ls` must
# list the running process as alive with its pid. Two processes recorded
# at once: every trace frame of a sample of pid P lies inside a function of
# P's own region live at that time (ground truth: `region dump --all
# --json` of each copied region, checked by an independent Python reader),
# and both have such frames. Then a copy of that recording without one
# region: report must find it by the convention (the summary says where),
# and with nothing to find (another TMPDIR, the process gone) it must name
# the process instead.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-build/jitsframe}
T=$(mktemp -d /tmp/jsf-t_attach-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
if ! perf stat -e cpu-clock true >/dev/null 2>&1; then
	if [ "${CI:-}" = true ]; then notok "perf works (CI=true: required)"; echo "1..$n"; exit 1; fi
	echo "1..0 # SKIP perf cannot sample here"
	exit 0
fi
if ! command -v luajit >/dev/null; then
	if [ "${CI:-}" = true ]; then notok "luajit found (CI=true: required)"; echo "1..$n"; exit 1; fi
	echo "1..0 # SKIP no luajit"
	exit 0
fi
export TMPDIR=$T/tmp
mkdir -m 700 "$TMPDIR"
U=$TMPDIR/jitsframe-$(id -u)

start() { # a workload under `jitsframe run`; its pid once it has traces
	"$J" run --quiet -- luajit bench/workloads/numeric.lua 60 >/dev/null 2>&1 &
	local p=$!
	pids+=("$p")
	for _ in $(seq 50); do
		[ -s "$U/$p.region" ] && break
		sleep 0.1
	done
	sleep 0.5
	echo "$p"
}

summary_ok() { # FILE: >= 99.5% of >= 100 samples through traces from main
	python3 - "$1" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
m = re.search(r"(\d+) samples, (\d+) through trace code, (\d+) of them", s)
if not m:
    sys.exit("no summary line")
n, t, mn = map(int, m.groups())
if t < 100 or mn < 0.995 * t:
    sys.exit(f"{n} samples, {t} through trace code, {mn} unwound from main")
PY
}

own_regions() { # DIR DUMP: every trace frame inside its own process's region
	local js=()
	for f in "$1"/region-[0-9]*; do
		case $f in *.json) continue ;; esac
		"$J" region dump --all --json "$f" >"$f.json" 2>/dev/null
		js+=("$f.json")
	done
	python3 - "$2" "${js[@]}" <<'PY'
import json, sys
dump, regs = sys.argv[1], {}
for p in sys.argv[2:]:
    j = json.load(open(p))
    regs[j["pid"]] = j["functions"]
def inside(pid, pc, t):
    return any(f["start"] <= pc < f["start"] + f["size"] and f["added_ns"] <= t
               and (not f["removed_ns"] or t < f["removed_ns"])
               for f in regs.get(pid, []))
frames, wrong, cur = {}, 0, None
for line in open(dump):
    w = line.split()
    if w[0] == "S":
        cur = (int(w[1]), int(w[2]))
    elif w[0] == "F" and w[3] == "j" and cur:
        t, pid = cur
        frames[pid] = frames.get(pid, 0) + 1
        if not inside(pid, int(w[1], 16), t):
            wrong += 1
print(" ".join(f"{p}:{c}" for p, c in sorted(frames.items())), "wrong", wrong)
if wrong or len(frames) != len(regs) or not all(frames.get(p) for p in regs):
    sys.exit(1)
PY
}

# 1. one process; its jitdump beside its region (copied into DIR too)
mkdir -m 700 "$U"
A=$(JITSFRAME_JITDUMP=$U start)
if "$J" record -p "$A" -d 2 -o "$T/r1" >"$T/out1" 2>&1 && [ -s "$T/r1/region-$A" ]; then
	ok "record -p $A: DIR/region-$A copied"
else
	notok "record -p $A: DIR/region-$A copied" "$(tail -n 5 "$T/out1")" "$(ls "$T/r1" 2>&1 | tr '\n' ' ')"
fi
# the copy keeps the region's holes (its capacity is mostly holes,
# docs/ABI.md 3.6) and is a valid region
alloc=$(stat -c '%b * %B' "$T/r1/region-$A" 2>/dev/null) alloc=$((${alloc:-0}))
size=$(stat -c %s "$T/r1/region-$A" 2>/dev/null || echo 0)
if [ "$size" -gt 0 ] && [ "$alloc" -lt "$size" ] && "$J" region validate "$T/r1/region-$A" >/dev/null 2>&1; then
	ok "the copy is sparse ($alloc of $size bytes allocated) and validates"
else
	notok "the copy is sparse and validates" "$alloc of $size bytes allocated" "$("$J" region validate "$T/r1/region-$A" 2>&1 | tail -2)"
fi
if [ -s "$T/r1/jit-$A.dump" ]; then
	ok "its jitdump copied beside it"
else
	notok "its jitdump copied beside it" "$(ls "$U" "$T/r1" 2>&1 | tr '\n' ' ')"
fi
if why=$(summary_ok "$T/out1" 2>&1); then
	ok "record -p: >= 99.5% of the samples through trace code unwound from main"
else
	notok "record -p: >= 99.5% of the samples through trace code unwound from main" "$why" "$(tail -n 3 "$T/out1")"
fi
"$J" region ls --json >"$T/ls.json" 2>"$T/ls.err"
"$J" region ls >"$T/ls.txt" 2>&1
if python3 - "$T/ls.json" "$A" "$U/$A.region" <<'PY'; then
import json, sys
ls, pid, path = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
e = [r for r in ls if r["pid"] == pid]
sys.exit(not (len(e) == 1 and e[0]["alive"] and e[0]["command"] == "luajit"
              and e[0]["path"] == path and e[0]["logged_functions"] > 0))
PY
	ok "region ls: pid $A alive, luajit, at its default path"
else
	notok "region ls: pid $A alive, luajit, at its default path" "$(cat "$T/ls.txt" "$T/ls.err")"
fi
if grep -Eq "^$A +luajit .* yes +$U/$A.region\$" "$T/ls.txt"; then
	ok "region ls (text): one line for pid $A"
else
	notok "region ls (text): one line for pid $A" "$(cat "$T/ls.txt")"
fi

# 2. two processes at once: each one's samples from its own region only
B=$(start)
if "$J" record -p "$A,$B" -d 2 -o "$T/r2" >"$T/out2" 2>&1 &&
	[ -s "$T/r2/region-$A" ] && [ -s "$T/r2/region-$B" ]; then
	ok "record -p $A,$B: both regions copied"
else
	notok "record -p $A,$B: both regions copied" "$(tail -n 5 "$T/out2")" "$(ls "$T/r2" 2>&1 | tr '\n' ' ')"
fi
if why=$(summary_ok "$T/out2" 2>&1); then
	ok "record -p two: >= 99.5% through trace code unwound from main"
else
	notok "record -p two: >= 99.5% through trace code unwound from main" "$why" "$(tail -n 3 "$T/out2")"
fi
"$J" report --no-write --dump "$T/dump2" "$T/r2" >/dev/null 2>&1
if why=$(own_regions "$T/r2" "$T/dump2" 2>&1); then
	ok "every trace frame inside its own process's region ($why)"
else
	notok "every trace frame inside its own process's region" "$why"
fi

# 3. a recording without B's region: report finds it by the convention
cp -r "$T/r2" "$T/r3"
rm -f "$T/r3/region-$B" "$T/r3"/*.json
"$J" report --no-write --dump "$T/dump3" "$T/r3" >"$T/out3" 2>&1
if grep -q "region of pid $B found at $U/$B.region" "$T/out3" &&
	why=$(summary_ok "$T/out3" 2>&1) && why=$(own_regions "$T/r2" "$T/dump3" 2>&1); then
	ok "report: the missing region of pid $B found by the convention ($why)"
else
	notok "report: the missing region of pid $B found by the convention" "$(cat "$T/out3")" "$why"
fi
# 4. nothing to find: another TMPDIR, B gone: named, no other's region used
kill "$B" 2>/dev/null
wait "$B" 2>/dev/null
mkdir -m 700 "$T/empty"
TMPDIR=$T/empty "$J" report --no-write "$T/r3" >"$T/out4" 2>&1
if grep -q "pid $B (luajit): [0-9]* samples in JIT code but no region" "$T/out4" &&
	! grep -q "region of pid $B found" "$T/out4"; then
	ok "report: no region to find for pid $B: named"
else
	notok "report: no region to find for pid $B: named" "$(cat "$T/out4")"
fi
# 5. --service: a master (a shell) and its two workers
bash -c '"$0" run --quiet -- luajit bench/workloads/numeric.lua 60 >/dev/null 2>&1 &
	"$0" run --quiet -- luajit bench/workloads/numeric.lua 60 >/dev/null 2>&1 &
	wait' "$J" &
M=$!
pids+=("$M")
sleep 1.5
W=$(cat /proc/"$M"/task/*/children 2>/dev/null)
for w in $W; do pids+=("$w"); done
"$J" record -p "$M" --service -d 1 -o "$T/r5" >"$T/out5" 2>&1
got=0
for w in $W; do [ -s "$T/r5/region-$w" ] && got=$((got + 1)); done
if [ "$got" = 2 ] && why=$(summary_ok "$T/out5" 2>&1); then
	ok "record -p MASTER --service: both workers' regions ($(echo $W))"
else
	notok "record -p MASTER --service: both workers' regions" "workers: $W" "$(ls "$T/r5" | tr '\n' ' ')" "$(cat "$T/out5")"
fi
echo "1..$n"
