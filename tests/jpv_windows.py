#!/usr/bin/env python3
"""VM-state shares against LuaJIT's profiler where its count is exact.

usage: jpv_windows.py DUMP JPVREF_LOG POINTS [MIN_SAMPLES]

DUMP: `jitsframe profile --dump` of the run (S lines: time, ..., the VM's
g->vmstate at the sample, m when inside the module's event handler);
JPVREF_LOG: tests/lua/jpvref.lua's log of the same run (one line per
callback of LuaJIT's profiler: CLOCK_MONOTONIC ns, samples, vmmode).

LuaJIT's profiler reads g->vmstate when its timer fires and sets a hook;
the hook runs at the VM's next profile check, and ticks that come before
it are counted with the first tick's state (lj_profile.c). A callback with
one sample is exact: its state is the state at its tick. A callback with
more merged ticks whose state nobody read. So compare only inside the
windows (previous callback, this callback] of one-sample callbacks: there
LuaJIT's counts and ours sample the same time. Our samples elsewhere
(merged windows, after the last callback), and those inside the module's
own handlers (LuaJIT's profiler never sees a tick there: it would have
merged), are left out on both sides. Prints the shares and how much was
left out. Exit 0: every state within POINTS, on at least MIN_SAMPLES
(default 200) exact samples on each side; 2: fewer samples than that
(and no state off beyond their error); 3: a state off by more than
POINTS, but not by more than the two samplings' error explains
(|a - b| - POINTS <= 3.29 standard errors of a - b, both shares being
independent binomial estimates: p < 0.001 two-sided); 1: off beyond
that (or nothing to compare)."""
import bisect
import sys

dump, ref, pts = sys.argv[1], sys.argv[2], float(sys.argv[3])
minn = int(sys.argv[4]) if len(sys.argv) > 4 else 200
STATES = "NICGJ"
NAMES = {"N": "compiled", "I": "interpreted", "C": "c", "G": "gc",
         "J": "jit"}

cbs = []
for l in open(ref):
    f = l.split()
    if len(f) == 3:
        cbs.append((int(f[0]), int(f[1]), f[2]))
cbs.sort()
ends = [c[0] for c in cbs]
theirs = dict.fromkeys(STATES, 0)
merged = 0
for t, n, m in cbs:
    if n == 1:
        theirs[m if m in STATES else "J"] += 1
    else:
        merged += n


def letter(vm):
    v = int(vm)
    if v >= 0:
        return "N"
    return {-1: "I", -2: "C", -3: "G"}.get(v, "J")


ours = dict.fromkeys(STATES, 0)
out_w = out_mod = total = 0
for l in open(dump):
    f = l.split()
    if not f or f[0] != "S" or len(f) < 9 or f[7] == "-":
        continue
    total += 1
    t = int(f[1])
    i = bisect.bisect_left(ends, t)  # the callback that ends t's window
    # (the first window has no start: before jit.profile.start, nothing
    # of LuaJIT's profiler sampled it)
    if i == 0 or i == len(cbs) or cbs[i][1] != 1:
        out_w += 1
        continue
    if f[8] == "m":
        out_mod += 1
        continue
    ours[letter(f[7])] += 1

ot, jt = sum(ours.values()), sum(theirs.values())
worst, parts, beyond = 0.0, [], False
for s in STATES:
    a = 100.0 * ours[s] / ot if ot else 0
    b = 100.0 * theirs[s] / jt if jt else 0
    worst = max(worst, abs(a - b))
    se = 100.0 * ((a / 100 * (1 - a / 100) / ot if ot else 1) +
                  (b / 100 * (1 - b / 100) / jt if jt else 1)) ** 0.5
    beyond |= abs(a - b) - pts > 3.29 * se
    parts.append("%s %.1f/%.1f" % (NAMES[s], a, b))
big = max([c[1] for c in cbs] or [0])
print("%s (ours/-jp=v where its count is exact: %d/%d samples; left out: "
      "%d of LuaJIT's %d in merged callbacks (the largest %d ticks), %d of "
      "our %d outside exact windows, %d in the module's handlers; worst "
      "%.1f)"
      % (", ".join(parts), ot, jt, merged, merged + jt, big, out_w, total,
         out_mod, worst))
if not jt or not ot or beyond:
    sys.exit(1)
if jt < minn or ot < minn:  # too few to say "within POINTS" either way
    sys.exit(2)
sys.exit(3 if worst > pts else 0)
