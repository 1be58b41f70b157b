#!/usr/bin/env python3
"""VM-state shares against LuaJIT's own profiler (-jp=v), one run.

usage: jpv_windows.py [--totals=VMPROFILE_JSON] DUMP JPVREF_LOG POINTS
                      [MIN_SAMPLES]

DUMP: `jitsframe profile --dump` of the run (S lines: time, pid, ..., the
VM's g->vmstate at the sample, m when inside the module's event handler;
then the sample's F and L frames); JPVREF_LOG: tests/lua/jpvref.lua's log
of the same run (one line per callback of LuaJIT's profiler:
CLOCK_MONOTONIC ns, samples, vmmode).

LuaJIT's profiler reads g->vmstate when its timer fires and sets a hook;
the hook runs at the VM's next profile check, and ticks that come before
it are counted with the first tick's state (lj_profile.c). While its
callback runs (HOOK_VMEVENT) a tick is counted but its state not read, so
the reference's own code (tests/lua/jpvref.lua: the callback, which
allocates and calls clock_gettime, and its exit finalizer) never gets a
state of its own: our samples with a Lua frame in jpvref.lua are left out
on our side, in both modes. So are ours after the last callback (ticks
LuaJIT's profiler never reported).

--totals: the run's totals, theirs from every callback, ours as -jp counts
(a sample inside the module's event handlers, where -jp reads no state,
goes with the next state of its process). First, `jitsframe profile`'s
own totals (VMPROFILE_JSON's jpv_totals) must be that count of every
sample of the dump, nothing left out (else exit 1). -jp=v's share of a state is a cluster sample: each callback is ONE
read of the state weighted by the ticks it merged, so its variance is
sum(k^2 (hit - p)^2) / K^2 (K ticks in all), not p(1 - p) / K; its
effective number of reads is K^2 / sum(k^2). Ours is binomial. That
variance, estimated from the reads themselves, means little when a few
reads carry most ticks (numeric.lua: 2 effective reads, one of them 72%
of the ticks; its estimate then said 20 points where one read more or less
moves 70): a share from N effective reads has a standard error of up to
50/sqrt(N) points, so with fewer than (50/POINTS)^2 of them (278 at 3
points) the totals cannot tell POINTS apart, and a state off by more is
exit 3 whatever the estimate says (case b., the exact windows, still
compares such a run where it can).

Default: only where LuaJIT's count is exact. A callback with one sample is
exact: its state is the state at its tick. So compare only inside the
windows (previous callback, this callback] of one-sample callbacks: there
LuaJIT's counts and ours sample the same time. Our samples elsewhere
(merged windows) and those inside the module's own handlers (LuaJIT's
profiler never sees a tick there: it would have merged) are left out.

Prints the shares and how much was left out. Exit 0: every state within
POINTS, on at least MIN_SAMPLES (default 200) samples on each side; 2:
fewer samples than that (and no state off beyond their error); 3: a state
off by more than POINTS, but not by more than the two samplings' error
explains (|a - b| - POINTS <= 3.29 standard errors of a - b: p < 0.001
two-sided); 1: off beyond that (or nothing to compare)."""
import bisect
import os
import sys

args = sys.argv[1:]
totals = args[0][len("--totals="):] if args and args[0].startswith(
    "--totals=") else None
if totals:
    args = args[1:]
dump, ref, pts = args[0], args[1], float(args[2])
minn = int(args[3]) if len(args) > 3 else 200
STATES = "NICGJ"
NAMES = {"N": "compiled", "I": "interpreted", "C": "c", "G": "gc",
         "J": "jit"}
REFCODE = "jpvref.lua"

cbs = []
for l in open(ref):
    f = l.split()
    if len(f) == 3:
        cbs.append((int(f[0]), int(f[1]), f[2] if f[2] in STATES else "J"))
cbs.sort()
ends = [c[0] for c in cbs]


def letter(vm):
    v = int(vm)
    if v >= 0:
        return "N"
    return {-1: "I", -2: "C", -3: "G"}.get(v, "J")


# our samples: (time, pid, letter, in the module, in the reference's code)
samples = []
cur = None
for l in open(dump):
    f = l.split()
    if not f:
        continue
    if f[0] == "S":
        cur = None
        if len(f) >= 9 and f[7] != "-":
            cur = [int(f[1]), f[2], letter(f[7]), f[8] == "m", False]
            samples.append(cur)
    elif f[0] == "L" and cur is not None and len(f) >= 2:
        if os.path.basename(f[1].rsplit(":", 1)[0]) == REFCODE:
            cur[4] = True
samples.sort(key=lambda s: s[0])

ours = dict.fromkeys(STATES, 0)
theirs = dict.fromkeys(STATES, 0)
out_w = out_mod = out_ref = 0
last = ends[-1] if ends else 0
if totals:
    import json
    prod = json.load(open(totals))["jpv_totals"]
    every, pend = dict.fromkeys(STATES, 0), {}
    for t, pid, s, inmod, inref in samples:
        if inmod:
            pend[pid] = pend.get(pid, 0) + 1
        else:
            every[s] += 1 + pend.pop(pid, 0)
    if any(prod[NAMES[s]] != every[s] for s in STATES):
        print("profile's jpv_totals %s are not the dump's samples as -jp "
              "counts them: %s" % (prod, every))
        sys.exit(1)
    for _, n, m in cbs:
        theirs[m] += n
    pend = {}
    for t, pid, s, inmod, inref in samples:
        if inref or t > last:
            out_ref += 1
        elif inmod:
            pend[pid] = pend.get(pid, 0) + 1
        else:
            ours[s] += 1 + pend.pop(pid, 0)
    out_mod = sum(pend.values())  # no state after them
    merged = 0
else:
    merged = 0
    for _, n, m in cbs:
        if n == 1:
            theirs[m] += 1
        else:
            merged += n
    for t, pid, s, inmod, inref in samples:
        i = bisect.bisect_left(ends, t)  # the callback that ends t's window
        # (the first window has no start: before jit.profile.start,
        # nothing of LuaJIT's profiler sampled it)
        if i == 0 or i == len(cbs) or cbs[i][1] != 1:
            out_w += 1
        elif inref:
            out_ref += 1
        elif inmod:
            out_mod += 1
        else:
            ours[s] += 1

ot, jt = sum(ours.values()), sum(theirs.values())
k2 = sum(n * n for _, n, _ in cbs)
worst, parts, beyond = 0.0, [], False
for s in STATES:
    a = 100.0 * ours[s] / ot if ot else 0
    b = 100.0 * theirs[s] / jt if jt else 0
    worst = max(worst, abs(a - b))
    vo = (a / 100) * (1 - a / 100) / ot if ot else 1
    if totals:
        vj = (sum(n * n * ((m == s) - b / 100) ** 2 for _, n, m in cbs) /
              (jt * jt) if jt else 1)
    else:
        vj = (b / 100) * (1 - b / 100) / jt if jt else 1
    beyond |= abs(a - b) - pts > 3.29 * 100 * (vo + vj) ** 0.5
    parts.append("%s %.1f/%.1f" % (NAMES[s], a, b))
if totals and k2 and jt * jt / k2 < (50.0 / pts) ** 2:
    beyond = False  # too few reads to resolve POINTS (see the top)
big = max([c[1] for c in cbs] or [0])
if totals:
    print("%s (ours/-jp=v, totals: %d/%d samples; -jp=v's in %d callbacks, "
          "%.0f effective reads, the largest %d ticks; left out of ours: %d "
          "in the reference's own code or after its last callback, %d in "
          "the module's handlers at the end; worst %.1f)"
          % (", ".join(parts), ot, jt, len(cbs), jt * jt / k2 if k2 else 0,
             big, out_ref, out_mod, worst))
else:
    print("%s (ours/-jp=v where its count is exact: %d/%d samples; left out: "
          "%d of LuaJIT's %d in merged callbacks (the largest %d ticks), %d "
          "of our %d outside exact windows, %d in the reference's own code, "
          "%d in the module's handlers; worst %.1f)"
          % (", ".join(parts), ot, jt, merged, merged + jt, big, out_w,
             len(samples), out_ref, out_mod, worst))
if not jt or not ot or beyond:
    sys.exit(1)
if jt < minn or ot < minn:  # too few to say "within POINTS" either way
    sys.exit(2)
sys.exit(3 if worst > pts else 0)
