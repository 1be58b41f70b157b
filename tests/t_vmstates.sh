#!/bin/bash
# The per-trace VM-state profile on unmodified LuaJIT (issue 13, TAP;
# root and BPF): `jitsframe profile` counts each sample by LuaJIT's own
# g->vmstate in the kernel, head/loop by the pc against the trace's loop
# offset (the module's source map), and writes DIR/vmprofile.json.
#  1. tests/lua/vmstates.lua: one trace calls C through the FFI (memset),
#     its time inside the calls measured by the script itself (thread CPU
#     time around each call); another runs an arithmetic loop, timed too.
#     The FFI trace's ffi samples and the loop trace's loop samples, as
#     shares of all samples, are within 3 points of the script's own
#     shares of the thread's CPU time (ground truth independent of the
#     sampler); the loop trace is named by its line and its samples are in
#     its loop, not its head.
#  2. `vmprofile DIR` prints the table, --json the same numbers.
#  3-12. VM-state totals against LuaJIT's own profiler on the workload set
#     (bench/workloads/*.lua), two cases per workload, ONE run sampled by
#     both: `jitsframe profile --dump F -- luajit -ljpvref W`, where
#     tests/lua/jpvref.lua runs LuaJIT's profiler as `-jp=vri1` does
#     (jit.profile every 1 ms: ITIMER_PROF, at most the kernel's tick;
#     counts per vmmode) and logs each callback (time, samples, state),
#     its timer made finer: SIGPROF every 500 us besides
#     (tests/lua/jptick.lua; 10,000-14,000 samples a workload instead of
#     ~1,300, the sampling error of a share some 0.5 points), ours at
#     1999 Hz.
#     Separate runs differ more than 3 points by themselves: the hook
#     changes what the JIT compiles.
#     a. the totals, -jp=v's against ours as -jp counts (vmprofile.json's
#        jpv_totals: a sample inside the module's VM event handlers,
#        which -jp cannot attribute, goes with the next state, as -jp
#        does); each of Compiled, Interpreted, C code, Garbage Collector,
#        JIT Compiler within 3 points. Where LuaJIT's profiler merged
#        ticks (below: nested.lua's coroutines), and on flushstorm.lua
#        (a third of its samples in the module's own handlers, which
#        -jp=v counts with the state after the event), this is a known
#        divergence, shown as TODO when off.
#     b. the same run where LuaJIT's count is exact (tests/jpv_windows.py):
#        LuaJIT's profiler reads the state when its timer fires, but the
#        callback runs at the VM's next profile check, and every tick
#        before it is charged the first tick's state (lj_profile.c; on
#        nested.lua's coroutines one callback takes a whole phase). Only
#        the windows ending in a one-sample callback are compared: there
#        both sample the same time. Within 3 points, >= 200 samples each
#        (a planted misclassification of half the interpreted samples as
#        compiled: off by 11 points, fails); where LuaJIT's profiler
#        merges nearly every tick (numeric.lua's long traces: some 20
#        exact samples) the totals of a. must agree instead.
#     Mapping: -jp's N = head+loop+ffi (+ trace), I = interp, C = c,
#     G = gc+jgc, J = exit+record+opt+asm (LuaJIT's profiler names every
#     vmstate below GC "J", trace exits included); in b. ours by the raw
#     g->vmstate of each sample, as lj_profile.c reads it.
#  13. vmprofile -p PID and top -p PID -n 2 on a running process.
# Without root or BPF it skips visibly; under CI=true it fails instead.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
LJ=${LUAJIT:-luajit}
SCALE=${VMSTATES_SCALE:-1}
T=$(mktemp -d /tmp/jsf-t_vmstates-XXXXXX)
trap 'rm -rf "$T"' EXIT
need_bpf
WL="numeric sidetraces flushstorm nested openresty"
echo "1..13"

# 1. the FFI trace and the loop trace against the script's own clock
"$J" profile -o "$T/a" -- "$LJ" tests/lua/vmstates.lua 1.5 >"$T/a.out" 2>"$T/a.err"
if out=$(python3 - "$T/a/vmprofile.json" "$T/a.out" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
kv = {}
for l in open(sys.argv[2]):
    f = l.split()
    if len(f) >= 3 and f[0] in ("PHASE", "SHARE", "LINE"):
        kv[(f[0], f[1])] = float(f[2])
    if l.startswith("CPU "):
        kv["cpu"] = float(l.split()[1])
st = v["states"]
cpu = kv["cpu"]
ffi_s = kv[("SHARE", "ffi")] * kv[("PHASE", "ffiloop")]
arith_s = kv[("PHASE", "arith")]
allsamp = v["samples"] + v["no_vmstate"]
ffl, arl = int(kv[("LINE", "ffi")]), int(kv[("LINE", "arith")])
# the FFI trace: the one with the most ffi samples; the loop trace: the
# one whose Lua lines are arith's line
tr = v["traces"]
ft = max(tr, key=lambda t: t["counts"][st.index("ffi")])
lt = max(tr, key=lambda t: sum(n for w, n in t["lines"] if w.endswith(":%d" % arl)))
obs_ffi = 100.0 * ft["counts"][st.index("ffi")] / allsamp
exp_ffi = 100.0 * ffi_s / cpu
obs_loop = 100.0 * lt["counts"][st.index("loop")] / allsamp
exp_loop = 100.0 * arith_s / cpu
head = lt["counts"][st.index("head")]
bad = []
if abs(obs_ffi - exp_ffi) > 3: bad.append("ffi")
if abs(obs_loop - exp_loop) > 3: bad.append("loop")
if head > 0.03 * lt["samples"]: bad.append("head")
print("FFI trace %s: ffi %.1f%% of all samples vs %.1f%% of the thread's CPU in the calls; "
      "loop trace %s: loop %.1f%% vs %.1f%% (head %d of %d samples); %d samples"
      % (ft["name"], obs_ffi, exp_ffi, lt["name"], obs_loop, exp_loop, head, lt["samples"], allsamp))
sys.exit(1 if bad else 0)
PY
); then
	ok "FFI and loop shares within 3 points: $out"
else
	notok "FFI and loop shares within 3 points" "$out" "$(tail -2 "$T/a.err")"
fi

# 2. the table and --json
"$J" vmprofile "$T/a" >"$T/a.txt" 2>&1
"$J" vmprofile --json -n 0 "$T/a" >"$T/a.json" 2>&1
if grep -q '^VM states (as luajit -jp=v):' "$T/a.txt" && grep -qE '^ +[0-9]+ +[0-9]+ .*TRACE_[0-9]+::tests/lua/vmstates.lua:[0-9]+' "$T/a.txt" &&
	python3 -c '
import json,sys
a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))
sys.exit(0 if a["traces"]==b["traces"] and a["state_totals"]==b["state_totals"] else 1)' "$T/a/vmprofile.json" "$T/a.json"; then
	ok "vmprofile DIR prints the table; --json gives profile's numbers back"
else
	notok "vmprofile DIR prints the table; --json gives profile's numbers back" "$(head -5 "$T/a.txt")"
fi

# 3-12. totals against luajit -jp=v, one run sampled by both; then the
# same run only where LuaJIT's count is exact (tests/jpv_windows.py)
for w in $WL; do
	case $w in flushstorm) s=$(python3 -c "print(5*$SCALE)") ;; *) s=$(python3 -c "print(10*$SCALE)") ;; esac
	JPVREF_OUT="$T/$w.ref" JPVREF_TICK_US=500 LUA_PATH="$PWD/tests/lua/?.lua;;" \
		"$J" profile -F 1999 -o "$T/$w" --dump "$T/$w.dump" -- "$LJ" -ljpvref bench/workloads/$w.lua "$s" >"$T/$w.out" 2>"$T/$w.err"
	totals=0
	if out=$(python3 - "$T/$w/vmprofile.json" "$T/$w.ref" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
jp = {}
for l in open(sys.argv[2]):  # -jp=v's counts: every callback's samples
    f = l.split()
    if len(f) == 3:
        jp[f[2]] = jp.get(f[2], 0) + int(f[1])
tot = v["jpv_totals"]
names = {"compiled": "N", "interpreted": "I", "c": "C", "gc": "G", "jit": "J"}
jt = sum(jp.get(x, 0) for x in names.values())
ot = sum(tot.values())
worst, parts = 0.0, []
for k, name in names.items():
    a = 100.0 * tot[k] / ot
    b = 100.0 * jp.get(name, 0) / jt if jt else 0
    worst = max(worst, abs(a - b))
    parts.append("%s %.1f/%.1f" % (k, a, b))
print("%s (ours/-jp=v; %d/%d samples, %d of ours in the module's handlers; worst %.1f)"
      % (", ".join(parts), ot, jt, v["module_samples"], worst))
sys.exit(0 if jt >= 200 and worst <= 3 else 1)
PY
	); then
		ok "$w: VM-state totals within 3 points of -jp=v: $out"
		totals=1
	elif [ "$w" = nested ] || [ "$w" = flushstorm ]; then
		# known divergences, LuaJIT's own (the next case compares
		# where its count is exact): its profiler charges every tick
		# that comes before its hook runs with the first tick's state
		# (nested's coroutines: one callback for a whole phase);
		# flushstorm's ~30% of samples inside the module's own
		# handlers, which -jp=v counts with the state after the event
		# (2-3 points on JIT Compiler)
		n=$((n + 1))
		echo "not ok $n - $w: VM-state totals within 3 points of -jp=v: $(echo $out) # TODO issue 13: -jp=v's merged ticks, or the module's handlers"
	else
		notok "$w: VM-state totals within 3 points of -jp=v" "$out" "$(tail -2 "$T/$w.err")"
	fi
	out=$(python3 tests/jpv_windows.py "$T/$w.dump" "$T/$w.ref" 3 200)
	rc=$?
	if [ $rc = 0 ]; then
		ok "$w: VM states within 3 points of -jp=v where its count is exact: $out"
	elif [ $rc = 2 ] && [ $totals = 1 ]; then
		# long traces: LuaJIT's profiler merges nearly every tick, and
		# its totals already agree (the case before)
		ok "$w: VM states within 3 points of -jp=v where its count is exact (few exact samples; the totals agree): $out"
	else
		notok "$w: VM states within 3 points of -jp=v where its count is exact (>= 200 samples)" "$out" "$(tail -2 "$T/$w.err")"
	fi
done

# 13. -p and top on a running process (started with the module and its
# source maps)
# (phases long enough for both under a loaded machine: stopped once done)
JITSFRAME_LUAMAP=1 "$J" run -- "$LJ" tests/lua/vmstates.lua 20 >"$T/p.out" 2>&1 &
bg=$!
sleep 1.5
lp=$(pgrep -P $bg -n luajit || echo $bg)
"$J" vmprofile -p "$lp" -d 1 >"$T/p.txt" 2>&1
prc=$?
"$J" top -p "$lp" -n 2 >"$T/top.txt" 2>&1
trc=$?
kill "$lp" 2>/dev/null
wait $bg
if [ $prc -eq 0 ] && [ $trc -eq 0 ] && grep -q 'TRACE_[0-9]*::tests/lua/vmstates.lua' "$T/p.txt" &&
	[ "$(grep -c '^jitsframe top:' "$T/top.txt")" = 2 ] && ! grep -q $'\033' "$T/top.txt"; then
	ok "vmprofile -p and top -p -n 2 (plain text, no escapes off a tty): $(grep '^VM states' "$T/p.txt")"
else
	notok "vmprofile -p and top -p -n 2" "exit $prc/$trc" "$(head -4 "$T/p.txt")" "$(head -3 "$T/top.txt")"
fi
[ $fails -eq 0 ]
