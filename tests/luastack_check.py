#!/usr/bin/env python3
# tests/t_luastack.sh's oracle: every sample's Lua frames (folded stacks,
# `chunk:firstline_[l]`) against the workload's static call structure, the
# functions known by the first lines the workload printed (debug.getinfo).
# Prints one line of counts; exit 0 when >= MIN (default 0.99) of the
# samples carry a full chain from the main chunk, every call an edge of the
# structure, and most end in a leaf (d).
import sys

folded, fnlist = sys.argv[1], sys.argv[2]
need = float(sys.argv[3]) if len(sys.argv) > 3 else 0.99
chunk = sys.argv[4] if len(sys.argv) > 4 else "luastack.lua"
first = {}
for line in open(fnlist):
    p = line.split()
    if len(p) == 3 and p[0] == "FN":
        first[int(p[2])] = p[1]
first[0] = "main"
edges = {"main": {"a", "rec", "viapcall", "viagsub"}, "a": {"b"},
         "b": {"c"}, "c": {"d"}, "rec": {"rec", "d"}, "viapcall": {"a"},
         "viagsub": {"cb"}, "cb": {"d"}, "d": set()}
tot = full = leaf = nolua = 0
bad = {}
for line in open(folded):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    n = int(n)
    tot += n
    lua = [f for f in stack.split(";") if f.endswith("_[l]")]
    names = []
    ok = bool(lua)
    for f in lua:
        lab = f[:-4]
        ch, _, fl = lab.rpartition(":")
        if not ch.endswith(chunk) or not fl.isdigit() or int(fl) not in first:
            ok = False
            break
        names.append(first[int(fl)])
    if not lua:
        nolua += n
    if ok:
        ok = names[0] == "main" and all(
            b in edges[a] for a, b in zip(names, names[1:]))
    if ok:
        full += n
        leaf += n if names[-1] == "d" else 0
    else:
        k = ">".join(names) if names else "(no Lua frames)"
        bad[k] = bad.get(k, 0) + n
print("samples %d full %d (%.2f%%) ending in d %d no-Lua %d" %
      (tot, full, 100.0 * full / max(tot, 1), leaf, nolua))
for k, v in sorted(bad.items(), key=lambda x: -x[1])[:5]:
    print("  not full: %d %s" % (v, k))
sys.exit(0 if tot and full >= need * tot and leaf >= 0.8 * full else 1)
