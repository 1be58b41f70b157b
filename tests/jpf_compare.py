#!/usr/bin/env python3
# tests/t_jpf.sh's comparison: per Lua function, the self share of
# `jitsframe profile`'s samples against LuaJIT's own profiler's
# (tests/lua/jpfref.lua: jit.profile as `luajit -jp=F` runs it).
#   usage: jpf_compare.py STACKS.FOLDED REF [MINSHARE [TOL [SKIP]]]
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
import sys

folded, ref = sys.argv[1], sys.argv[2]
minshare = float(sys.argv[3]) if len(sys.argv) > 3 else 5.0
tol = float(sys.argv[4]) if len(sys.argv) > 4 else 3.0
skip = sys.argv[5] if len(sys.argv) > 5 else None
ours, theirs, names = {}, {}, {}
for line in open(folded):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    lua = [f for f in stack.split(";") if f.endswith("_[l]")]
    if skip and any(f[:-4].rpartition(":")[0].endswith(skip) for f in lua):
        continue
    if lua:
        k = lua[-1][:-4]
        ours[k] = ours.get(k, 0) + int(n)
for line in open(ref):
    p = line.rstrip("\n").split(" ", 2)
    if len(p) == 3 and p[0] == "S":
        theirs[p[2]] = theirs.get(p[2], 0) + int(p[1])
a, b = sum(ours.values()), sum(theirs.values())
if not a or not b:
    print("no samples: ours %d, -jp %d" % (a, b))
    sys.exit(1)
bad = 0
rows = []
for k in set(ours) | set(theirs):
    x, y = 100.0 * ours.get(k, 0) / a, 100.0 * theirs.get(k, 0) / b
    if x >= minshare or y >= minshare:
        rows.append((max(x, y), k, x, y))
print("samples: ours %d, -jp=F %d" % (a, b))
for _, k, x, y in sorted(rows, reverse=True):
    d = x - y
    flag = "" if abs(d) <= tol else "  OFF"
    bad += abs(d) > tol
    print("  %-44s ours %5.1f%%  -jp %5.1f%%  %+5.1f%s" % (k[-44:], x, y, d,
                                                         flag))
sys.exit(1 if bad else 0)
