#!/usr/bin/env python3
"""t_report.sh (agreement): for every sample that perf itself unwinds fully
(its user chain ends at _start / clone / clone3 and has no frame in
anonymous or unknown code), our frames (jitsframe report --dump) must equal
perf's: the same number of user frames, the same DSO and the same address
in it (perf prints callers at return address - 1).
usage: report_agree.py PERF_SCRIPT_OUTPUT OUR_DUMP
prints: "<agree> <compared> <perf_full> <first few differences>" """
import sys

def perf_samples(path):
    out = {}
    key = None
    frames = []
    def flush():
        if key is not None:
            out[key] = frames
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            if not line.startswith((" ", "\t")):
                flush()
                parts = line.split()
                tid = parts[0]
                t = parts[1].rstrip(":").replace(".", "")
                key = (tid, int(t))
                frames = []
                continue
            p = line.split()
            addr = int(p[0], 16)
            if addr >= 0xffff800000000000:
                continue  # kernel
            dso = p[-1].strip("()")
            sym = " ".join(p[1:-1])
            frames.append((addr, sym, dso))
    flush()
    return out

def our_samples(path):
    out = {}
    key = None
    with open(path) as f:
        for line in f:
            p = line.split()
            if p[0] == "S":
                key = (p[3], int(p[1]))
                out[key] = []
            elif p[0] == "F":
                out[key].append((int(p[1], 16), int(p[2], 16), p[3], p[4], p[5]))
    return out

perf = perf_samples(sys.argv[1])
ours = our_samples(sys.argv[2])
full = compared = agree = 0
diffs = []
for key, fr in perf.items():
    if not fr or fr[-1][1] not in ("_start", "clone", "clone3", "__clone3"):
        continue
    if any(d in ("[unknown]", "//anon") or "perf-" in d or "jitted-" in d
           for _, _, d in fr):
        continue
    full += 1
    o = ours.get(key)
    if o is None:
        diffs.append("%s:%d missing in ours" % key)
        continue
    compared += 1
    mine = [(va - (1 if i else 0), m) for i, (_, va, kind, _, m) in enumerate(o)]
    theirs = [(a, d) for a, _, d in fr]
    if len(mine) == len(theirs) and all(
            a == b and (dm == dt or dm.endswith("/" + dt.split("/")[-1]))
            for (a, dm), (b, dt) in zip(mine, theirs)):
        agree += 1
    elif len(diffs) < 3:
        diffs.append("%s:%d ours %s perf %s" % (key[0], key[1],
            [hex(a) for a, _ in mine], [hex(a) for a, _ in theirs]))
print(agree, compared, full, " | ".join(diffs))
