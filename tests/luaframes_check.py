#!/usr/bin/env python3
"""Checks of the Lua frames in a profile directory (tests/t_luaframes.sh).

  luaframes_check.py TRUTH DIR mixed|lua|native [MIXED_FOLDED]

TRUTH: the workload's output (tests/lua/luaframes.lua): lines
"FUNC name chunk linedefined lastlinedefined", Lua's own debug.getinfo,
the ground truth; for the sampler, also "FUNC init ..." of a LUA_INIT
chunk, as the same luajit reports it (tests/t_luaframes.sh). DIR:
stacks.folded and profile.pb.gz of one mode.
  mixed   every run of Lua frames (`_[l]`) sits right above (leaf side
          of) a trace frame and is, root to leaf, a prefix of f;g;h (or
          the main chunk alone), each labelled chunk:linedefined (the
          sampler's interpreter walk adds runs with no trace frame: a
          prefix of main;f;g;h, or the LUA_INIT chunk alone while it
          starts the module); most
          samples through trace code carry the whole f;g;h; pprof has
          the functions f, g, h with filename chunk and start_line
          linedefined, every Line of theirs inside the function, and its
          heaviest sample's locations leaf first h, g, f, then the trace.
  lua     only Lua and trace frames; most samples are comm;f;g;h (with
          the sampler's interpreter walk, comm;main;f;g;h: the main chunk
          is f's caller).
  native  no Lua frame; with MIXED_FOLDED (the same recording's mixed
          folded stacks): equal to them with the Lua frames taken out.
Prints one line per check ("ok ..." or "FAIL ..."); exit 1 on a failure.
"""
import gzip
import os
import sys
from collections import Counter

fails = 0


def check(cond, what):
    global fails
    print(("ok " if cond else "FAIL ") + what)
    if not cond:
        fails += 1


def truth(path):
    funcs = {}
    for ln in open(path, errors="replace"):
        w = ln.split()
        if len(w) == 5 and w[0] == "FUNC":
            funcs[w[1]] = (w[2], int(w[3]), int(w[4]))
    return funcs


def folded(path):
    st = Counter()
    for ln in open(path):
        ln = ln.rstrip("\n")
        if not ln:
            continue
        stack, _, n = ln.rpartition(" ")
        st[stack] += int(n)
    return st


# ---- a minimal protobuf reader: fields of one message
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        f, t = key >> 3, key & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
        elif t == 1:
            v = b[i:i + 8]
            i += 8
        elif t == 5:
            v = b[i:i + 4]
            i += 4
        else:
            raise ValueError("wire type %d" % t)
        out.append((f, t, v))
    return out


def packed(t, v):
    if t == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def pprof(path):
    b = gzip.open(path).read()
    strs, funcs, locs, samples = [], {}, {}, []
    for f, t, v in fields(b):
        if f == 6:
            strs.append(v.decode("utf-8", "replace"))
        elif f == 5:
            d = {k: x for k, _, x in fields(v)}
            funcs[d.get(1, 0)] = d
        elif f == 4:
            d = {"lines": []}
            for k, _, x in fields(v):
                if k == 4:
                    ld = {kk: xx for kk, _, xx in fields(x)}
                    d["lines"].append((ld.get(1, 0), ld.get(2, 0)))
                else:
                    d[k] = x
            locs[d.get(1, 0)] = d
        elif f == 2:
            ids, vals = [], []
            for k, tt, x in fields(v):
                if k == 1:
                    ids += packed(tt, x)
                elif k == 2:
                    vals += packed(tt, x)
            samples.append((ids, vals[0] if vals else 0))
    return strs, funcs, locs, samples


def main():
    tr, d, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    sampler = os.environ.get("LUAFRAMES_SAMPLER") == "1"
    fn = truth(tr)
    check(all(k in fn for k in "fgh"), "the workload printed f, g, h: %s" % sorted(fn))
    if fails:
        return 1
    lab = {k: "%s:%d_[l]" % (fn[k][0], fn[k][1]) for k in fn}
    chain = [lab["f"], lab["g"], lab["h"]]
    main_l = lab.get("main")
    init_l = lab.get("init")
    st = folded(d + "/stacks.folded")
    total = sum(st.values())
    check(total > 0, "%s: %d samples in stacks.folded" % (mode, total))
    if mode == "mixed":
        bad, full, through, lua_seen = [], 0, 0, 0
        for s, n in st.items():
            fr = s.split(";")[1:]
            if any(x.endswith("_[j]") for x in fr):
                through += n
            i = 0
            while i < len(fr):
                if not fr[i].endswith("_[l]"):
                    i += 1
                    continue
                j = i
                while j < len(fr) and fr[j].endswith("_[l]"):
                    j += 1
                run = fr[i:j]
                lua_seen += n
                # the sampler's walk of the interpreter adds the trace's
                # Lua caller (the main chunk) right below (rootward of)
                # the trace frame: a run of exactly that is in place too
                below = j < len(fr) and fr[j].endswith("_[j]")
                above = i > 0 and fr[i - 1].endswith("_[j]")
                # the sampler's interpreter walk: Lua frames wherever the
                # interpreter runs them, always a prefix of main;f;g;h
                # and before the workload, the LUA_INIT chunk that
                # started the module (`profile -- CMD` runs as `run`
                # does): that chunk alone, as LuaJIT names it
                interp = sampler and not above and (
                    run == ([main_l] + chain)[:len(run)] or
                    (init_l is not None and run == [init_l]))
                if not above and not interp and not (
                        below and run == [main_l]):
                    bad.append("not above a trace frame: " + s)
                elif interp:
                    i = j
                    continue
                elif not (run == chain[:len(run)] or run == [main_l]):
                    bad.append("not a prefix of f;g;h: " + ";".join(run))
                if run == chain:
                    full += n
                i = j
        check(not bad, "mixed: every run of Lua frames is right above its "
              "trace frame, in call order (f;g;h, first lines from "
              "debug.getinfo)" + ("; e.g. " + bad[0] if bad else ""))
        check(through > 0 and full >= 0.8 * through,
              "mixed: %d of %d samples through trace code carry "
              "...;TRACE_n;%s (>= 80%%)" % (full, through, ";".join(chain)))
        strs, funcs, locs, samples = pprof(d + "/profile.pb.gz")
        byname = {}
        for fid, f in funcs.items():
            byname[strs[f.get(2, 0)]] = (fid, f)
        for k in "fgh":
            name = lab[k][:-4]
            f = byname.get(name, (None, {}))[1]
            check(f and strs[f.get(4, 0)] == fn[k][0] and
                  f.get(5, 0) == fn[k][1],
                  "pprof: Function %s: name %s, filename %s, start_line %d "
                  "(got %s)" % (k, name, fn[k][0], fn[k][1],
                                f and (strs[f.get(4, 0)], f.get(5, 0))))
            fid = byname.get(name, (None,))[0]
            ls = [l for loc in locs.values() for (i, l) in loc["lines"]
                  if i == fid]
            # (the interpreter walk gives line 0 where it cannot place
            # the pc: pprof's "unknown")
            if sampler:
                ls = [l for l in ls if l]
            check(ls and all(fn[k][1] <= l <= fn[k][2] for l in ls),
                  "pprof: every Line of %s within its lines %d..%d: %s" %
                  (k, fn[k][1], fn[k][2], sorted(set(ls))))
        top = max(samples, key=lambda s: s[1])
        names = [strs[funcs[locs[i]["lines"][0][0]].get(2, 0)]
                 for i in top[0][:4]]
        want = [lab["h"][:-4], lab["g"][:-4], lab["f"][:-4]]
        check(names[:3] == want and names[3].startswith("TRACE_"),
              "pprof: the heaviest sample, leaf first: h, g, f, the "
              "trace: %s" % names)
    elif mode == "lua":
        other = [s for s in st
                 if any(not (x.endswith("_[l]") or x.endswith("_[j]"))
                        for x in s.split(";")[1:])]
        check(not other, "lua: only Lua and trace frames" +
              ("; e.g. " + other[0] if other else ""))
        full = sum(n for s, n in st.items()
                   if s.split(";")[1:] in (chain, [main_l] + chain))
        check(full >= 0.8 * total, "lua: %d of %d samples are comm;%s" %
              (full, total, ";".join(chain)))
    else:
        lua = [s for s in st if "_[l]" in s]
        check(not lua, "native: no Lua frames" +
              ("; e.g. " + lua[0] if lua else ""))
        if len(sys.argv) > 4:
            mx = Counter()
            for s, n in folded(sys.argv[4]).items():
                mx[";".join(x for x in s.split(";")
                            if not x.endswith("_[l]"))] += n
            check(mx == st, "native: the mixed stacks without their Lua "
                  "frames (%d stacks, %d)" % (len(mx), len(st)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
