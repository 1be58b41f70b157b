#!/bin/bash
# Agreement with LuaJIT's own profiler (issue 13, TAP; root and BPF): on
# the workload set (bench/workloads/*.lua), on each VM that has jit.p
# (Debian's luajit; OpenResty's luajit2 when built in build/luajit2), the
# self share of each Lua function in `jitsframe profile` (the innermost
# Lua frame of each sample of stacks.folded, mixed mode) against LuaJIT's
# own profiler, run as `luajit -jp=Fi1` runs it (jit.profile, mode "fi1";
# tests/lua/jpfref.lua keys each sample by the running function's
# source:firstline as well as -jp=F's label), both in ONE run:
# `jitsframe profile -- luajit -ljpfref W`. Every function with >= 5% on
# either side within 3 points (tests/jpf_compare.py says what "self" means
# on both; our samples in the reference's own callback are left out).
# Why one run, not two: the two profilers must watch the same execution.
# LuaJIT's trace selection has random elements, so a function's share
# moves between runs by more than 3 points (sidetraces.lua: one kernel
# had 7.9% in our run and 2.1% in -jp's, run apart; profiled in one run
# every kernel is within 0.2), and the profiler changes what LuaJIT
# compiles (mode "f" puts profile checks at function boundaries into
# traces: openresty.lua's make_line took 19% of a plain run and 4% of a
# profiled one).
# JPF_SCALE (default 6) scales the workloads. LuaJIT's profiler samples
# on SIGPROF from ITIMER_PROF, which the kernel expires at its tick (HZ
# 250 here: some 700 samples a workload, a share's sampling error 1.5-2
# points); the reference also sends SIGPROF every 500 us of wall time
# (JPFREF_TICK_US: a POSIX timer; LuaJIT's handler takes each signal as a
# tick, its profiler otherwise unchanged), some 7,000 samples a workload,
# and ours samples at 1999 Hz: the sampling error is then some 0.5
# points, and what is left is how the two charge a sample.
# Known divergences:
# -jp=F charges a sample to the Lua function running at the VM's next
# profile check, not the one running when the timer fired: in C code when
# it returns to Lua or calls back into Lua (string.gsub's and table.sort's
# own time goes to their Lua callbacks, the unwinding of an error() to the
# function whose pcall catches it), in trace code at the next function
# boundary the trace checks (a coroutine's loop to its resumer, at the
# yield; a tick in a caller to the callee it inlines next, one in the
# callee to its caller at the return). jitsframe charges the sample to the
# function running at the sample. Such a tick moves only between
# neighbours: the functions a function inlines or is inlined into in a
# trace, calls or is called by through C, and an error's thrower and
# catcher (tests/jpf_compare.py finds them in our stacks). A run where
# every miss, taken together with its neighbours, is within 3 points (and
# twice the standard error of the two sums' difference, 1.4-1.8 points
# on these runs: the sums are measurements too, and -jp=F also moves
# ticks across a group, from a neighbour's neighbour: openresty.lua's
# main loop, between make_line's return and parse's call, to parse; one
# CI run failed make_line's group at 3.1 points) is
# TODO (TAP: reported, not counted as a failure): numeric.lua's
# spectral-norm A, inlined into Av and Atv, has 7-12% here and 3-7% in
# -jp, the three together within 0.1 points; nested.lua is made of such
# cases (gsub and sort callbacks, a coroutine, an error caught by pcall:
# 7-19 points off, each within 1.3 with its neighbours); openresty.lua's
# rnd, inlined into make_line, 3 points off, the two within 0.2. Any other miss
# fails; JPF_STRICT=1 counts the TODOs too. A run where -jp=F counted
# fewer samples than we did, though its timer is the finer, lost ticks
# (one CI run: sidetraces.lua's last phase, 44% of ours, none of its):
# it is run again, and TODO if that happens twice. So is a run whose misses
# all come from one read of -jp=F's: a callback carrying >= 10% of its
# ticks at once (a trace loop with no profile check in it: numeric.lua's
# n-body loop delivers its whole run, some 60% of the ticks, in one
# callback), charged to the function running at the check that delivered
# it, not the one that ran (one CI run: mandelbrot, run next, got them),
# when moving that read whole to one other function makes every function
# agree (jpf_compare.py exit 5). Our split of a trace between
# the functions it inlines is checked against jit.util.tracesnap by
# tests/t_luamap.sh, which -jp=F cannot check. A planted fault (10
# points of the biggest function's samples charged to one not its
# neighbour, in the first run that passed or was TODO and has a function
# of 10% or more) must fail the comparison.
# Without root or BPF it skips visibly; under CI=true it fails instead.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
T=$(mktemp -d /tmp/jsf-t_jpf-XXXXXX)
trap 'rm -rf "$T"' EXIT
need_bpf
vms=()
for lj in "${LUAJIT:-luajit}" "$PWD/build/luajit2/usr/bin/luajit"; do
	command -v "$lj" >/dev/null 2>&1 && "$lj" -e 'require("jit.p")' 2>/dev/null && vms+=("$lj")
done
[ ${#vms[@]} -gt 0 ] || skip_all_ci "no luajit with jit.p"
S=${JPF_SCALE:-6}
ws=(bench/workloads/*.lua)
echo "1..$((${#vms[@]} * ${#ws[@]} + 2))"
planted= merged_runs=
for lj in "${vms[@]}"; do
	for w in "${ws[@]}"; do
		d="$T/$n"
		# a second run when -jp=F lost ticks or charged one read of
		# many ticks elsewhere (jpf_compare.py exit 4, 5)
		for try in 1 2; do
			rm -rf "$d" "$d.ref"
			JPFREF_OUT="$d.ref" JPFREF_TICK_US=500 LUA_PATH="$PWD/tests/lua/?.lua;;" \
				"$J" profile -F 1999 -o "$d" -- "$lj" -ljpfref "$w" "$S" >/dev/null 2>"$d.err"
			[ -s "$d.ref" ] && [ -s "$d/stacks.folded" ] || break
			out=$(python3 tests/jpf_compare.py "$d/stacks.folded" "$d.ref" 5 3 jpfref.lua)
			rc=$?
			[ $rc = 4 ] || [ $rc = 5 ] || break
			echo "# $lj $w: run $try: $(echo "$out" | tail -1 | sed 's/^ *//'): again"
		done
		if [ ! -s "$d.ref" ] || [ ! -s "$d/stacks.folded" ]; then
			notok "$lj $w: one run profiled by both" "$(tail -3 "$d.err")"
			continue
		fi
		if [ $rc = 4 ] && [ "${JPF_STRICT:-}" != 1 ]; then
			# twice: the reference, not ours (its count is below ours)
			n=$((n + 1))
			echo "not ok $n - $lj $w: every function >= 5% within 3 points of -jp=F # TODO -jp=F lost ticks in two runs (fewer samples than ours, though its timer is finer)"
			echo "$out" | sed 's/^/#   /'
			continue
		fi
		if [ $rc = 5 ] && [ "${JPF_STRICT:-}" != 1 ]; then
			# twice: the reference's count rests on one merged read
			n=$((n + 1))
			echo "not ok $n - $lj $w: every function >= 5% within 3 points of -jp=F # TODO -jp=F charged one read of >= 10% of its ticks to another function in two runs (that read moved whole, every function agrees)"
			echo "$out" | sed 's/^/#   /'
			continue
		fi
		[ $rc != 1 ] && planted="$planted $d"
		[ $rc = 0 ] && merged_runs="$merged_runs $d"
		if [ $rc = 0 ]; then
			ok "$lj $w: within 3 points of -jp=F ($(echo "$out" | head -1))"
			echo "$out" | tail -n +2 | sed 's/^/# /'
		elif [ "${JPF_STRICT:-}" != 1 ] && [ $rc = 3 ]; then
			# each miss within 3 points together with its neighbours
			n=$((n + 1))
			echo "not ok $n - $lj $w: every function >= 5% within 3 points of -jp=F # TODO -jp=F moves ticks between neighbours: inlined callees, C callbacks, an error's catcher (each miss with its neighbours within 3 points)"
			echo "$out" | sed 's/^/#   /'
		else
			notok "$lj $w: every function >= 5% within 3 points of -jp=F" "$out"
		fi
	done
done
# the comparison can fail: half of the biggest function's samples charged
# to another, not its neighbour
prc=2
for d in $planted; do
	out=$(python3 tests/jpf_compare.py --plant "$d/stacks.folded" "$d.ref" 5 3 jpfref.lua)
	prc=$?
	[ $prc = 2 ] || break
done
if [ $prc = 1 ]; then
	ok "a planted fault fails the comparison ($(echo "$out" | grep -c OFF) off)"
else
	notok "a planted fault fails the comparison (exit $prc)" "$out"
fi
# exit 5 itself: in a run that agreed, whose reference has one read of
# >= 10% of its ticks, that read charged whole to another function must
# give exit 5 (moved back, every function agrees), and a planted fault
# must still fail with it
mrc=none
for d in $merged_runs; do
	read -r mt mf < <(awk '$1 == "M" { print $2, $3 }' "$d.ref")
	tot=$(awk '$1 == "S" { t += $2 } END { print t + 0 }' "$d.ref")
	[ -n "$mt" ] && [ $((mt * 10)) -ge "$tot" ] || continue
	other=$(awk -v f="$mf" '$1 == "S" && $3 != f { print $2, $3 }' "$d.ref" | sort -rn | head -1 | cut -d' ' -f2-)
	[ -n "$other" ] || continue
	awk -v f="$mf" -v o="$other" -v m="$mt" '$1 == "S" && $3 == f { print "S", $2 - m, $3; next }
		$1 == "S" && $3 == o { print "S", $2 + m, $3; next }
		$1 == "M" { print "M", m, o; next } { print }' "$d.ref" >"$d.moved"
	python3 tests/jpf_compare.py "$d/stacks.folded" "$d.moved" 5 3 jpfref.lua >"$d.mout"
	mrc=$?
	python3 tests/jpf_compare.py --plant "$d/stacks.folded" "$d.moved" 5 3 jpfref.lua >/dev/null
	prc5=$?
	break
done
if [ "$mrc" = 5 ] && [ "$prc5" = 1 ]; then
	ok "one read of $mt ticks ($mf) charged to $other instead: exit 5; with a planted fault: exit 1"
elif [ "$mrc" = none ]; then
	notok "exit 5: no run that agreed had one read of >= 10% of -jp=F's ticks (numeric.lua's n-body loop has one)"
else
	notok "one read charged to another function: exit 5 (got $mrc), with a planted fault exit 1 (got ${prc5:-?})" "$(cat "$d.mout")"
fi
exit $((fails > 0))
