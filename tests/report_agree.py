#!/usr/bin/env python3
"""t_report.sh (agreement): for every sample that perf itself unwinds
fully -- its user chain reaches main (perf's last frames,
__libc_start_main and _start, come and go between perf runs) or ends at
_start / clone / clone3 -- and that has no frame in anonymous or unknown
code (non-JIT code), our frames (jitsframe report --dump) must equal
perf's: the same DSO and the same address in it (perf prints callers at
return address - 1) for every frame perf gives; ours may go on past
perf's last frame.
usage: report_agree.py PERF_SCRIPT_OUTPUT OUR_DUMP
prints: "<agree> <compared> <same length> <first few differences>" """
import sys


def perf_samples(path):
    out = {}
    key = None
    frames = []
    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            if not line.startswith("\t"):  # "TID TIME:" (TID padded)
                if key is not None:
                    out[key] = frames
                parts = line.split()
                key = (parts[0], int(parts[1].rstrip(":").replace(".", "")))
                frames = []
                continue
            p = line.split()
            addr = int(p[0], 16)
            if addr >= 0xffff800000000000:
                continue  # kernel
            frames.append((addr, " ".join(p[1:-1]), p[-1].strip("()")))
    if key is not None:
        out[key] = frames
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
compared = agree = same_len = 0
diffs = []
for key, fr in perf.items():
    if not fr or (fr[-1][1] not in ("_start", "clone", "clone3", "__clone3")
                  and not any(sym == "main" for _, sym, _ in fr)):
        continue
    if any(d in ("[unknown]", "//anon", "inlined") or "perf-" in d
           or "jitted-" in d for _, _, d in fr):
        continue
    o = ours.get(key)
    compared += 1
    if o is None:
        if len(diffs) < 3:
            diffs.append("%s:%d missing in ours" % key)
        continue
    mine = [(va - (1 if i else 0), m) for i, (_, va, _, _, m) in enumerate(o)]
    theirs = [(a, d) for a, _, d in fr]
    if len(mine) >= len(theirs) and all(
            a == b and (dm == dt or dm.endswith("/" + dt.split("/")[-1]))
            for (a, dm), (b, dt) in zip(mine, theirs)):
        agree += 1
        same_len += len(mine) == len(theirs)
    elif len(diffs) < 3:
        diffs.append("%s:%d ours %s perf %s" % (key[0], key[1],
            [hex(a) for a, _ in mine], [hex(a) for a, _ in theirs]))
print(agree, compared, same_len, " | ".join(diffs))
