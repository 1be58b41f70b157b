#!/usr/bin/env python3
"""tests/t_builtins.sh: the names of LuaJIT's builtins in folded stacks
against the known structure of tests/lua/builtins.lua (its own output:
CALL <builtin> <caller's line>, CB <builtin> <callback's line>, FF <name>
for every builtin of the VM).

usage: builtins_check.py mixed|perf STACKS.folded SCRIPT_OUTPUT [CHUNK]
(CHUNK: the workload's file name, default builtins.lua; tests/t_cfnames.sh
gives tests/lua/cfuncs.lua's, its output of the same form for C functions
of modules)

mixed (jitsframe profile: Lua frames from the VM's stack):
  wrong   no Lua frame rootward of main(); every frame named as a
          builtin has as its nearest Lua frame
          rootward the one function that calls that builtin (when that
          frame is one of the five callers), and is not one of the five
          called elsewhere (a stack without Lua frames is not checked);
  named   where a caller's Lua frame is followed by a native frame, that
          frame is the builtin it calls (per caller: samples, share).
perf (jitsframe record: Lua frames only inside traces):
  wrong   every callback frame (its trace or its Lua frame) has as its
          nearest builtin frame rootward the builtin that calls it back
          (both modes; a stack with none there, a walk that lost its
          native frames, is not checked);
  named   each of the five named in the stacks (samples).
Prints one line (the checks, "; " between them) and exits 0, or 1 when a check fails: any
wrong frame; fewer than MIN samples or a share under 95% named.
"""
import re
import sys

MIN = 20
mode, folded, out = sys.argv[1], sys.argv[2], sys.argv[3]
call, cb, ff = {}, {}, set()
for line in open(out):
    p = line.split()
    if len(p) == 3 and p[0] == "CALL":
        call[int(p[2])] = p[1]
    elif len(p) == 3 and p[0] == "CB":
        cb[int(p[2])] = p[1]
    elif len(p) == 2 and p[0] == "FF":
        ff.add(p[1])
expect = set(call.values())
chunk = re.escape(sys.argv[4] if len(sys.argv) > 4 else "builtins.lua")
lua_re = re.compile(r"^(.*" + chunk + r"):(\d+)_\[l\]$")
trace_re = re.compile(r"^TRACE_\d+::(.*" + chunk + r"):(\d+)_\[j\]$")


def lua_line(fr):
    m = lua_re.match(fr)
    return int(m.group(2)) if m else None


def any_line(fr):
    m = lua_re.match(fr) or trace_re.match(fr)
    return int(m.group(2)) if m else None


wrong, wrong_ex = 0, []
good, total = {}, {}
named = {}
for line in open(folded):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    if not stack:
        continue
    n = int(n)
    fr = stack.split(";")
    for f in fr:
        if f in expect:
            named[f] = named.get(f, 0) + n
    if mode == "mixed" and "main" in fr:
        # a Lua frame rootward of main(): placed where no VM entry is
        # (the walk's Lua frames put beyond a native walk that reached
        # the outermost frame)
        lead = fr[:fr.index("main")]
        if any(f.endswith("_[l]") for f in lead):
            wrong += n
            wrong_ex.append("Lua frames rootward of main()")
    if mode == "mixed":
        caller = None  # nearest Lua frame rootward
        for i, f in enumerate(fr):
            ln = lua_line(f)
            if ln is not None or f.endswith("_[l]"):
                caller = ln
                if ln in call and i + 1 < len(fr) and not fr[i + 1].endswith(
                        ("_[l]", "_[j]")):
                    total[ln] = total.get(ln, 0) + n
                    if fr[i + 1] == call[ln]:
                        good[ln] = good.get(ln, 0) + n
                continue
            if f in ff:
                # (no Lua frame rootward, a walk that lost them: no
                # caller to check against)
                bad = caller is not None and (
                    (caller in call and f != call[caller]) or
                    (caller not in call and f in expect))
                if bad:
                    wrong += n
                    wrong_ex.append(f"{f} under line {caller}")
    # callbacks: the nearest builtin rootward is the one that calls back
    last_ff = None
    for f in fr:
        if f in ff:
            last_ff = f
            continue
        ln = any_line(f)
        if ln in cb and last_ff is not None and last_ff != cb[ln]:
            wrong += n
            wrong_ex.append(f"callback line {ln} under {last_ff}")
            break

fail = wrong > 0
lines = []
lines.append(f"wrong: {wrong} samples" + (f" ({'; '.join(sorted(set(wrong_ex))[:4])})" if wrong else ""))
if mode == "mixed":
    for ln, name in sorted(call.items()):
        t, g = total.get(ln, 0), good.get(ln, 0)
        share = 100.0 * g / t if t else 0.0
        ok = t >= MIN and share >= 95.0
        fail |= not ok
        lines.append(f"{name} under line {ln}: {g} of {t} ({share:.1f}%){'' if ok else ' FAIL'}")
else:
    for name in sorted(expect):
        ok = named.get(name, 0) >= MIN
        fail |= not ok
        lines.append(f"{name}: {named.get(name, 0)} samples{'' if ok else ' FAIL'}")
print("; ".join(lines))
sys.exit(1 if fail else 0)
