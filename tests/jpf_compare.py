#!/usr/bin/env python3
# tests/t_jpf.sh's comparison: per Lua function, the self share of
# `jitsframe profile`'s samples against LuaJIT's own profiler's
# (tests/lua/jpfref.lua: jit.profile as `luajit -jp=F` runs it).
#   usage: jpf_compare.py [--plant] STACKS.FOLDED REF [MINSHARE [TOL [SKIP]]]
# Self, on both sides: the running Lua function. -jp=F charges each sample
# to the function on top of the sampled thread's Lua stack when the VM
# takes it (the next instruction or, in a trace, the next profile check):
# time in C functions and builtins it called, and the VM's own code on its
# behalf, is that function's. Here: the innermost Lua frame (`_[l]`) of a
# sample's mixed stack, whatever native or trace frames sit above it;
# samples without a Lua frame (the process before the main chunk runs,
# after it ends) are outside both profiles and left out. Functions are
# "source:firstline" on both sides. Exit 0 when every function with at
# least MINSHARE % (default 5) on either side is within TOL points
# (default 3). SKIP: a chunk name; our samples with a Lua frame of that
# chunk are left out (when both profiles come from one run, the
# reference's own callback: -jp never samples it).
# Exit 3 when each function off by more than TOL, taken together with
# the functions next to it, is within TOL and twice the standard error of
# the two sums' difference (each side's sampling): next to it are those it is
# inlined into or inlines in a trace (a trace's Lua frames, after its
# _[j] frame: the function the trace runs in, then each inlined callee)
# and those it calls, or is called by, through C (native frames between
# two Lua frames: string.gsub's or table.sort's callback), and a function
# an error is thrown from with the one below it (the catcher, where our
# sample's leaf is under _Unwind_RaiseException). -jp=F moves a tick
# between such neighbours, charging it at the VM's next profile check (an
# inlined callee's entry or return, a callback's first instruction, the
# catcher's next instruction): their split is -jp's convention (our split is checked
# against jit.util.tracesnap by tests/t_luamap.sh), their sum still a
# measurement. Exit 1 when that sum is off too.
# Exit 4 when -jp=F counted fewer samples than we did: its timer is the
# finer (tests/t_jpf.sh: 500 us beside ITIMER_PROF, 1.02-1.17x our count
# at 1999 Hz), so it lost ticks somewhere (one CI run: sidetraces.lua's
# last phase, chain(), 44% of ours, 0.0% of its 8,209 against our 12,980:
# a tick waits for the VM's next profile check, and a trace that reaches
# none before the end never delivers it); its shares are not comparable.
# Exit 5: the misses come from one read of -jp=F's (below).
# --plant (tests only): first charge 10 points of our samples of the
# biggest function to the biggest one not next to it; the comparison must
# fail. Exit 2 when there is none, or the biggest has less than 10%.
import math
import sys

plant = sys.argv[1:2] == ["--plant"]
argv = sys.argv[:1] + sys.argv[1 + plant:]
folded, ref = argv[1], argv[2]
minshare = float(argv[3]) if len(argv) > 3 else 5.0
tol = float(argv[4]) if len(argv) > 4 else 3.0
skip = argv[5] if len(argv) > 5 else None
ours, theirs, names = {}, {}, {}
near = {}


def join(x, y):
    if x != y:
        near.setdefault(x, set()).add(y)
        near.setdefault(y, set()).add(x)


for line in open(folded):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    lua = [f for f in stack.split(";") if f.endswith("_[l]")]
    if skip and any(f[:-4].rpartition(":")[0].endswith(skip) for f in lua):
        continue
    if lua:
        k = lua[-1][:-4]
        ours[k] = ours.get(k, 0) + int(n)
    # run: the function a trace runs in, while its Lua frames go on
    frames, prev, run = stack.split(";"), None, None
    for i, f in enumerate(frames):
        before = frames[i - 1] if i else ""
        if f.endswith("_[k]"):
            break
        if not f.endswith("_[l]"):
            run = None
            continue
        k = f[:-4]
        if before.endswith("_[j]"):
            run = k
        elif before.endswith("_[l]"):
            if run is not None:  # inlined into the frame before
                join(prev, k)
        elif prev is not None:
            join(prev, k)
        prev = k
    # an error on its way to the pcall that catches it: the next Lua code
    # to run is the catcher's, taken to be the frame below the thrower
    # (when it is not, their sum is off and the run fails)
    if len(lua) > 1 and "_Unwind_RaiseException" in frames[
            frames.index(lua[-1]):]:
        join(lua[-1][:-4], lua[-2][:-4])
merged = None  # (ticks, function): -jp=F's largest single read
for line in open(ref):
    p = line.rstrip("\n").split(" ", 2)
    if len(p) == 3 and p[0] == "S":
        theirs[p[2]] = theirs.get(p[2], 0) + int(p[1])
    elif len(p) == 3 and p[0] == "M":
        merged = (int(p[1]), p[2])
if plant:
    top = sorted(ours, key=ours.get, reverse=True)
    far = [k for k in top[1:] if k not in near.get(top[0], ())]
    moved = sum(ours.values()) // 10
    if not far or ours[top[0]] < moved:
        print("nothing to plant a fault in")
        sys.exit(2)
    ours[far[0]] += moved
    ours[top[0]] -= moved
a, b = sum(ours.values()), sum(theirs.values())
if not a or not b:
    print("no samples: ours %d, -jp %d" % (a, b))
    sys.exit(1)


def evaluate(theirs, show):
    """(misses beyond the group rule, functions off); prints when show"""
    b = sum(theirs.values())
    rows = []
    for k in set(ours) | set(theirs):
        x, y = 100.0 * ours.get(k, 0) / a, 100.0 * theirs.get(k, 0) / b
        if x >= minshare or y >= minshare:
            rows.append((max(x, y), k, x, y))
    off = set()
    for _, k, x, y in sorted(rows, reverse=True):
        d = x - y
        flag = "" if abs(d) <= tol else "  OFF"
        if abs(d) > tol:
            off.add(k)
        if show:
            print("  %-44s ours %5.1f%%  -jp %5.1f%%  %+5.1f%s" %
                  (k[-44:], x, y, d, flag))
    bad = 0
    for f in sorted(off):
        ks = {f} | near.get(f, set())
        x = 100.0 * sum(ours.get(k, 0) for k in ks) / a
        y = 100.0 * sum(theirs.get(k, 0) for k in ks) / b
        # The sum is a measurement on both sides, each from its own
        # samples: within TOL (the profilers' systematic difference) plus
        # twice the standard error of the difference of two binomial
        # shares (some 0.9 points for a group of 40% from 6,000 samples
        # each; a group is bigger than any one function, and -jp=F also
        # moves ticks across it, from a neighbour's neighbour: a tick in
        # the main chunk's loop between make_line's return and parse's
        # call goes to parse).
        se = 100.0 * math.sqrt(x / 100 * (1 - x / 100) / a +
                               y / 100 * (1 - y / 100) / b)
        # a group of (nearly) every sample is within TOL whatever its split
        miss = abs(x - y) > tol + 2 * se or len(ks) < 2 or max(x, y) > 100 - tol
        bad += miss
        if show:
            print("  %-30s and %d near  ours %5.1f%%  -jp %5.1f%%  %+5.1f%s" %
                  (f[-30:], len(ks) - 1, x, y, x - y,
                   "  OFF (beyond %.1f)" % (tol + 2 * se) if miss else
                   "  (within %.1f)" % (tol + 2 * se)))
    return bad, off


print("samples: ours %d, -jp=F %d" % (a, b))
if b < a and not plant:
    print("  -jp=F counted fewer samples than ours: it lost ticks")
    sys.exit(4)
bad, off = evaluate(theirs, True)
# Exit 5 when the misses come from one read of -jp=F's: a callback that
# carried at least 10 points' worth of ticks at once (a trace loop with no
# profile check in it runs on, its ticks waiting; numeric.lua's n-body
# loop, its whole run in one callback) charges them all to the function
# running at the check that finally delivers them, which need not be the
# one that ran (one CI run: the n-body loop's 60% went to mandelbrot, run
# next). If moving that one read, whole, to a single other function makes
# the comparison pass, the reference's count rests on that read; the
# planted fault must still fail with this (--plant takes this path too).
if bad and merged and merged[0] * 10 >= b and merged[1] in theirs:
    for g in sorted(set(ours) | set(theirs)):
        if g == merged[1]:
            continue
        moved = dict(theirs)
        moved[merged[1]] -= merged[0]
        moved[g] = moved.get(g, 0) + merged[0]
        if evaluate(moved, False)[0] == 0:
            print("  -jp=F charged one read of %d ticks (%.1f%%) to %s; "
                  "moved whole to %s, every function agrees" %
                  (merged[0], 100.0 * merged[0] / b, merged[1], g))
            sys.exit(5)
sys.exit(1 if bad else 3 if off else 0)
