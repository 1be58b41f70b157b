#!/bin/bash
# The per-trace VM-state profile on unmodified LuaJIT (issue 13, TAP;
# root and BPF): `jitsframe profile` counts each sample by LuaJIT's own
# g->vmstate in the kernel, head/loop by the pc against the trace's loop
# offset (the module's source map), and writes DIR/vmprofile.json.
#  1. tests/lua/vmstates.lua: one trace calls C through the FFI (memset),
#     its time inside the calls measured by the script itself (thread CPU
#     time around each call); another runs an arithmetic loop, timed too.
#     The ffi samples (of every trace: LuaJIT may compile the FFI loop as
#     more than one) and the loop trace's loop samples, as
#     shares of all samples, are within 3 points of the script's own
#     shares of the thread's CPU time (ground truth independent of the
#     sampler); the loop trace is named by its line and its samples are in
#     its loop, not its head.
#  2. `vmprofile DIR` prints the table, --json the whole file back
#     (every key: the -jp=v totals were once dropped).
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
#     In both, our samples inside the reference's own code (a Lua frame
#     in jpvref.lua: its callback, interpreted, allocating and calling
#     clock_gettime, 2-3% of a run) are left out: a tick there comes
#     while LuaJIT's profiler runs its callback (HOOK_VMEVENT), which
#     counts it but reads no state. (Counted, they put flushstorm 3-5
#     points off, on C, GC and interpreted.)
#     a. the totals (tests/jpv_windows.py --totals), -jp=v's against ours
#        as -jp counts (a sample inside the module's VM event handlers,
#        which -jp cannot attribute, goes with the next state, as -jp
#        does; profile's own vmprofile.json jpv_totals must be exactly
#        that count of the dump's samples); each of Compiled,
#        Interpreted, C code, Garbage Collector, JIT Compiler within 3
#        points. -jp=v's shares are a cluster sample (each callback one
#        read of the state, weighted by the ticks it merged: variance
#        sum(k^2 (hit - p)^2) / K^2); off by more than 3 points but
#        within that error and ours (p < 0.001), or resting on fewer
#        than 278 effective reads (K^2 / sum(k^2): a share's error is
#        then up to 50/sqrt(N) > 3 points, and the estimate above means
#        little), is a known divergence, shown as TODO: numeric.lua's
#        n-body loop, entered straight from the recorder (vm_record
#        dispatches through the static table, past the profile check),
#        runs for seconds on one read taken while it was compiled ("JIT
#        Compiler" 60-72%, 2 effective reads); nested.lua's coroutines
#        likewise when off (one callback a phase: 30-50 effective reads,
#        4-14 points off in CI's runs while the exact windows, b.,
#        agree). Both failed one CI run on the estimate alone.
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
#        exact samples) the totals of a. must agree instead (TODO when
#        those too rest on a few reads).
#     Mapping: -jp's N = head+loop+ffi (+ trace), I = interp, C = c,
#     G = gc+jgc, J = exit+record+opt+asm (LuaJIT's profiler names every
#     vmstate below GC "J", trace exits included); in b. ours by the raw
#     g->vmstate of each sample, as lj_profile.c reads it.
#  13. vmprofile -p PID and top -p PID -n 2 on a running process started
#      without the Lua frames (JITSFRAME_LUAMAP): head/loop still known
#      (the module's map of each trace's loop), the busiest trace's
#      samples in its loop.
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
# one whose Lua lines are arith's line. The FFI share is every trace's
# ffi samples: the script's only C calls are ffiloop's (memset and its
# clocks), and LuaJIT may compile its loop as more than one trace (one CI
# run: 17.3% in the one with the most against 21.0%, 2,620 samples)
tr = v["traces"]
ft = max(tr, key=lambda t: t["counts"][st.index("ffi")])
lt = max(tr, key=lambda t: sum(n for w, n in t["lines"] if w.endswith(":%d" % arl)))
nffi = sum(1 for t in tr if t["counts"][st.index("ffi")] > 0)
obs_ffi = 100.0 * sum(t["counts"][st.index("ffi")] for t in tr) / allsamp
exp_ffi = 100.0 * ffi_s / cpu
obs_loop = 100.0 * lt["counts"][st.index("loop")] / allsamp
exp_loop = 100.0 * arith_s / cpu
head = lt["counts"][st.index("head")]
bad = []
if abs(obs_ffi - exp_ffi) > 3: bad.append("ffi")
if abs(obs_loop - exp_loop) > 3: bad.append("loop")
if head > 0.03 * lt["samples"]: bad.append("head")
print("FFI trace %s (of %d with ffi samples): ffi %.1f%% of all samples vs %.1f%% of the thread's CPU in the calls; "
      "loop trace %s: loop %.1f%% vs %.1f%% (head %d of %d samples); %d samples"
      % (ft["name"], nffi, obs_ffi, exp_ffi, lt["name"], obs_loop, exp_loop, head, lt["samples"], allsamp))
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
bad=[k for k in sorted(set(a)|set(b)) if a.get(k)!=b.get(k)]
if bad: print("# differs:", " ".join(bad))
sys.exit(1 if bad else 0)' "$T/a/vmprofile.json" "$T/a.json" >"$T/a.cmp"; then
	ok "vmprofile DIR prints the table; --json gives profile's whole file back"
else
	notok "vmprofile DIR prints the table; --json gives profile's whole file back" "$(cat "$T/a.cmp")" "$(head -5 "$T/a.txt")"
fi

# 3-12. totals against luajit -jp=v, one run sampled by both; then the
# same run only where LuaJIT's count is exact (tests/jpv_windows.py)
for w in $WL; do
	case $w in flushstorm) s=$(python3 -c "print(5*$SCALE)") ;; *) s=$(python3 -c "print(10*$SCALE)") ;; esac
	JPVREF_OUT="$T/$w.ref" JPVREF_TICK_US=500 LUA_PATH="$PWD/tests/lua/?.lua;;" \
		"$J" profile -F 1999 -o "$T/$w" --dump "$T/$w.dump" -- "$LJ" -ljpvref bench/workloads/$w.lua "$s" >"$T/$w.out" 2>"$T/$w.err"
	totals=0
	out=$(python3 tests/jpv_windows.py --totals="$T/$w/vmprofile.json" "$T/$w.dump" "$T/$w.ref" 3 200)
	trc=$?
	if [ $trc = 0 ]; then
		ok "$w: VM-state totals within 3 points of -jp=v: $out"
		totals=1
	elif [ $trc = 3 ]; then
		# known divergences, LuaJIT's own (the next case compares
		# where its count is exact): its profiler charges every tick
		# that comes before its hook runs with the first tick's state
		# (nested's coroutines: one callback for a whole phase; a
		# loop trace entered straight from the recorder, whose
		# vm_record dispatches through the static table, past the
		# check: numeric's n-body, one read for seconds), so its
		# totals may rest on a few reads (exit 3: off, but within
		# their error)
		totals=3
		n=$((n + 1))
		echo "not ok $n - $w: VM-state totals within 3 points of -jp=v: $(echo $out) # TODO issue 13: -jp=v's merged ticks"
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
	elif [ $rc = 2 ] && [ $totals = 3 ]; then
		# neither count of LuaJIT's says more than its sampling error:
		# too few exact windows, and totals resting on a few reads
		n=$((n + 1))
		echo "not ok $n - $w: VM states within 3 points of -jp=v where its count is exact: too few exact samples, and -jp=v's totals rest on a few merged reads: $(echo $out) # TODO issue 13: -jp=v's merged ticks"
	else
		notok "$w: VM states within 3 points of -jp=v where its count is exact (>= 200 samples)" "$out" "$(tail -2 "$T/$w.err")"
	fi
done

# 13. -p and top on a running process, started with the module alone (no
# JITSFRAME_LUAMAP: its maps mark each trace's loop, no Lua frames): in
# the ffiloop phase the inner arithmetic loop's trace, the one with most
# samples in trace code, has them in its loop (>= 90%), and no trace's
# head or loop is unknown (the "trace" column)
# (phases long enough for both under a loaded machine: stopped once done)
"$J" run -- "$LJ" tests/lua/vmstates.lua 20 >"$T/p.out" 2>&1 &
bg=$!
sleep 1.5
lp=$(pgrep -P $bg -n luajit || echo $bg)
"$J" vmprofile -p "$lp" -d 1 >"$T/p.txt" 2>&1
prc=$?
"$J" vmprofile -p "$lp" -d 1 --json >"$T/p.json" 2>"$T/pj.err"
jrc=$?
"$J" top -p "$lp" -n 2 >"$T/top.txt" 2>&1
trc=$?
kill "$lp" 2>/dev/null
wait $bg
loopck=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = d["states"]
H, L, U = s.index("head"), s.index("loop"), s.index("trace")
unknown = sum(t["counts"][U] for t in d["traces"])
best = max(d["traces"], key=lambda t: t["counts"][H] + t["counts"][L] + t["counts"][U])
inn = best["counts"][H] + best["counts"][L] + best["counts"][U]
share = best["counts"][L] / inn if inn else 0
print("%s: %d of %d in-trace samples in its loop (%.1f%%), %d unknown" % (best["name"], best["counts"][L], inn, 100 * share, unknown))
sys.exit(0 if inn >= 100 and share >= 0.9 and unknown == 0 else 1)' "$T/p.json" 2>&1)
lrc=$?
if [ $prc -eq 0 ] && [ $trc -eq 0 ] && [ $jrc -eq 0 ] && [ $lrc -eq 0 ] &&
	grep -q 'TRACE_[0-9]*::tests/lua/vmstates.lua' "$T/p.txt" &&
	[ "$(grep -c '^jitsframe top:' "$T/top.txt")" = 2 ] && ! grep -q $'\033' "$T/top.txt"; then
	ok "vmprofile -p and top -p -n 2 (plain text, no escapes off a tty), without Lua frames: $loopck; $(grep '^VM states' "$T/p.txt")"
else
	notok "vmprofile -p and top -p -n 2, head/loop without Lua frames" "exit $prc/$jrc/$trc" "$loopck" "$(head -4 "$T/p.txt")" "$(head -3 "$T/top.txt")"
fi
[ $fails -eq 0 ]
