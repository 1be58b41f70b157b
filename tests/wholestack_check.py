#!/usr/bin/env python3
# tests/t_wholestack.sh's oracle: every sample's mixed stack (folded,
# `chunk:firstline_[l]` Lua frames, `_[j]` trace frames, native frames)
# against tests/lua/wholestack.lua's static call structure, its functions
# known by the first lines the workload printed (debug.getinfo).
#   usage: wholestack_check.py STACKS.FOLDED FNLIST [MIN]
# A sample is "whole" when
#   - its Lua frames, in order, are a chain of the structure's calls from
#     the main chunk to the running function (leaf, slow or cmp; or any
#     function with a C function running above it; or the main chunk's
#     own loop): every call an edge;
#   - the native frames between two Lua frames are where the structure
#     puts a VM entry: none between a Lua caller and its Lua callee (trace
#     frames `_[j]` aside: a trace frame sits rootward of the Lua frames
#     it stands for), some between viagsub and its callback cb (string.gsub
#     calling back), between the coroutines' resumers and the coroutine's
#     function (the resumer's interpreter frame: vm_resume), and qsort_r
#     between viaqsort and its comparator cmp (the FFI callback) — where
#     the callee's VM entry runs a trace, that trace's frame stands for
#     the entry's native frame;
#   - rootward of the main chunk, lua_pcall (luajit's own call of the
#     script) when the native walk reached main().
# Prints counts; exit 0 when >= MIN (default 0.99) of the samples are whole.
import sys

folded, fnlist = sys.argv[1], sys.argv[2]
need = float(sys.argv[3]) if len(sys.argv) > 3 else 0.99
chunk = "wholestack.lua"
first = {}
for line in open(fnlist):
    p = line.split()
    if len(p) == 3 and p[0] == "FN":
        first[int(p[2])] = p[1]
first[0] = "main"
edges = {"main": {"a", "rec", "viapcall", "viagsub", "viawrap", "viaresume",
                  "viaqsort"},
         "a": {"b"}, "b": {"c"}, "c": {"leaf", "slow"}, "rec": {"rec", "leaf"},
         "viapcall": {"a"}, "viagsub": {"cb"}, "cb": {"leaf"},
         "viawrap": {"cobody"}, "viaresume": {"cobody"}, "cobody": {"a"},
         "viaqsort": {"cmp"}, "leaf": set(), "slow": set(), "cmp": set()}
leaves = {"leaf", "slow", "cmp"}
# native frames between caller and callee: what must be there
entry = {("viagsub", "cb"): None, ("viawrap", "cobody"): None,
         ("viaresume", "cobody"): None, ("viaqsort", "cmp"): "qsort_r"}
tot = whole = nolua = 0
per = {}
bad = {}
for line in open(folded):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    n = int(n)
    tot += n
    fr = stack.split(";")
    names, natives, why = [], [], None
    seen_main = False
    rootnat = []
    traces = {}
    for f in fr[1:]:  # fr[0]: the command
        if f.endswith("_[l]"):
            ch, _, fl = f[:-4].rpartition(":")
            if not ch.endswith(chunk) or not fl.isdigit() or \
                    int(fl) not in first:
                why = "foreign Lua frame " + f
                break
            names.append(first[int(fl)])
            natives.append([])
        elif f.endswith("_[k]"):
            continue
        elif f.endswith("_[j]"):
            if names:
                traces[len(names) - 1] = True
        elif names:
            natives[-1].append(f)
        else:
            rootnat.append(f)
    if not names:
        nolua += n
        why = why or "no Lua frames"
    if not why and names[0] != "main":
        why = "not from the main chunk"
    if not why:
        for i, (x, y, nat) in enumerate(zip(names, names[1:], natives)):
            if y not in edges[x]:
                why = "no call %s>%s" % (x, y)
                break
            want = entry.get((x, y), False)
            if want is False and nat:
                why = "native frames inside %s>%s" % (x, y)
                break
            # a VM entry's native frame: between them, or the trace the
            # entry runs (its frame rootward of the frames it stands for)
            if want is not False and not nat and \
                    not any(traces.get(k) for k in range(i, len(names))):
                why = "no native frames in %s>%s" % (x, y)
                break
            if want and want not in nat:
                why = "no %s in %s>%s" % (want, x, y)
                break
    # the running function: a leaf of the structure, or a function in a C
    # function it called (native frames leafward of it), or the main
    # chunk's own loop
    if not why and names[-1] not in leaves and not natives[-1] and \
            names[-1] != "main":
        why = "ends in " + names[-1]
    if not why and "main" in rootnat and "lua_pcall" not in rootnat:
        why = "no lua_pcall below the main chunk"
    if not why and "main" not in rootnat:
        why = "native frames below the main chunk short of main()"
    if why:
        k = why + ": " + ">".join(names)
        bad[k] = bad.get(k, 0) + n
    else:
        whole += n
        per[names[-1]] = per.get(names[-1], 0) + n
print("samples %d whole %d (%.2f%%) no-Lua %d; by leaf: %s" %
      (tot, whole, 100.0 * whole / max(tot, 1), nolua,
       " ".join("%s %d" % kv for kv in sorted(per.items()))))
for k, v in sorted(bad.items(), key=lambda x: -x[1])[:8]:
    print("  not whole: %d %s" % (v, k))
sys.exit(0 if tot and whole >= need * tot else 1)
