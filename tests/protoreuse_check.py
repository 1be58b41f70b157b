#!/usr/bin/env python3
"""tests/t_protoreuse.sh's check: every Lua frame a `profile --dump` names
as one of the workload's chunks (phase1, phase2, ...) is in a sample taken
inside that chunk's window, as the workload's own clock gave it.

  protoreuse_check.py OUTPUT DUMP [--plant]

OUTPUT: the workload's lines "PHASE name begin end" (CLOCK_MONOTONIC ns).
DUMP: the --dump file ('S TIME PID TID ...' then 'L CHUNK:FIRST LINE').
Checks: no frame of a chunk outside its window (50 us of slack); in each
window, most samples (>= 50%) carry its frame. --plant: first rename, in
the dump, one phase's frames to the phase before (a reused prototype named
from an earlier read), which must fail. Prints one line; exit 1 on a
failure.
"""
import sys

win = {}
for ln in open(sys.argv[1]):
    w = ln.split()
    if len(w) == 4 and w[0] == "PHASE":
        win[w[1]] = (int(w[2]), int(w[3]))
plant = "--plant" in sys.argv
names = sorted(win, key=lambda k: win[k][0])
samples = []  # (time, set of phase chunks in it)
for ln in open(sys.argv[2]):
    w = ln.split()
    if w and w[0] == "S":
        samples.append([int(w[1]), set()])
    elif w and w[0] == "L" and samples:
        ch = w[1].rpartition(":")[0]
        if ch in win:
            if plant and len(names) > 1 and ch == names[-1]:
                ch = names[-2]
            samples[-1][1].add(ch)
# the samples' clock (bpf_ktime_get_ns) and the workload's (the vDSO's
# CLOCK_MONOTONIC) are one clock read two ways: 50 us of slack at a
# window's edges, far below the gap between two windows (the collection
# and the next load) and the 1-100 ms by which a stale name strays
SLACK = 50000
bad, cover = [], []
for t, chs in samples:
    for ch in chs:
        b, e = win[ch]
        if not b - SLACK <= t <= e + SLACK:
            bad.append("%s at %d, its window %d..%d" % (ch, t, b, e))
for ch in names:
    b, e = win[ch]
    inside = [chs for t, chs in samples if b <= t <= e]
    got = sum(1 for chs in inside if ch in chs)
    cover.append("%s %d/%d" % (ch, got, len(inside)))
    if len(inside) < 20 or got < 0.5 * len(inside):
        bad.append("%s: %d of %d samples in its window carry it" %
                   (ch, got, len(inside)))
if len(names) < 2:
    bad.append("fewer than two phases: %s" % names)
print(("ok" if not bad else "FAIL") + ": " + ", ".join(cover) +
      ("; " + "; ".join(bad[:3]) if bad else ""))
sys.exit(1 if bad else 0)
