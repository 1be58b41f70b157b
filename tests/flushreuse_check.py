#!/usr/bin/env python3
"""tests/lua/flushreuse.lua's check, on a `--dump` of report or profile.

usage: flushreuse_check.py OUT DUMP SRC ADDR_FIELD

OUT: the workload's stdout ("FLUSH <ns>": when it flushed); DUMP: the
samples (S lines, then F lines leaf first); SRC: the workload, whose
"-- LOOP_A" and "-- LOOP_B" lines are the traces before and after the
flush; ADDR_FIELD: which F field is the address compared across the
flush (1: the pc; 2: the frame's start). Each sample whose leaf is a trace
frame must be named by the loop of its time. Prints "right wrong shared
example | bad samples" (shared: addresses sampled in both phases)."""
import re
import sys

out, dump, srcp, af = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
flush = int(re.search(r"FLUSH (\d+)", open(out).read()).group(1))
src = open(srcp).read().split("\n")
la = next(i + 1 for i, l in enumerate(src) if "-- LOOP_A" in l)
lb = next(i + 1 for i, l in enumerate(src) if "-- LOOP_B" in l)
samples, cur = [], None
for line in open(dump):
    p = line.split()
    if p[0] == "S":
        cur = [int(p[1]), None]
        samples.append(cur)
    elif p[0] == "F" and cur[1] is None:
        cur[1] = (int(p[af], 16), p[3], p[4])
right = wrong = 0
before, after, bad = {}, {}, []
for t, leaf in samples:
    if not leaf or leaf[1] != "j":
        continue
    m = re.search(r":(\d+)$", leaf[2])
    line = int(m.group(1)) if m else -1
    want = la if t < flush else lb
    if line == want:
        right += 1
        (before if t < flush else after).setdefault(leaf[0], leaf[2])
    else:
        wrong += 1
        if len(bad) < 3:
            bad.append("%d %x %s want line %d" % (t, leaf[0], leaf[2], want))
shared = sorted(set(before) & set(after))
ex = ("%x: %s before, %s after" % (shared[0], before[shared[0]],
                                   after[shared[0]])) if shared else "-"
print(right, wrong, len(shared), ex, "|", "; ".join(bad))
