#!/usr/bin/env python3
"""tests/t_cfnames.sh: the C functions' names a region publishes ("LJCF",
docs/ABI.md 1.6; `jitsframe region dump --builtins --json`) against
ground truth from outside jitsframe:
  - tests/cmod.c's functions at the address nm gives them in the unstripped
    build (NM: `nm` output), plus where the workload saw cmod.so loaded
    (its BASE line, from /proc/self/maps): cmod.spin at cmod_spin and so on;
  - every other name the workload printed (ADDR name hex: LuaJIT's own
    jit.util.funcinfo) at that address, where published;
  - the address cmod.twin1 and twin2 share (TWIN) named by no one, nor by
    either twin's name;
  - no name among LuaJIT's builtins (LJFF) and the C functions both.

usage: cfnames_check.py DUMP.json SCRIPT_OUTPUT NM [NEED...]
NEED: names that must be published (default: cmod's four).
Prints one line; exits 0, or 1 on any difference.
"""
import json
import sys

dump, out, nmf = sys.argv[1], sys.argv[2], sys.argv[3]
need = sys.argv[4:] or ["cmod.spin", "cmod.churn", "cmod.nested.deep",
                        "cmodfn"]
sym = {"cmod.spin": "cmod_spin", "cmod.churn": "cmod_churn",
       "cmod.nested.deep": "cmod_deep", "cmodfn": "cmod_fn"}
addr, twin, base = {}, None, None
for line in open(out):
    p = line.split()
    if len(p) == 3 and p[0] == "ADDR":
        addr[p[1]] = int(p[2], 16)
    elif len(p) == 2 and p[0] == "TWIN":
        twin = int(p[1], 16)
    elif len(p) == 2 and p[0] == "BASE":
        base = int(p[1], 16)
nm = {}
for line in open(nmf):
    p = line.split()
    if len(p) == 3:
        nm[p[2]] = int(p[0], 16)
d = json.load(open(dump))
cf = {e["name"]: e["addr"] for e in d.get("cfunctions", [])}
ff = {e["name"] for e in d.get("builtins", [])}
bad = []
if base is None:
    bad.append("the workload saw no cmod.so mapped")
for name in need:
    if name not in cf:
        bad.append(f"{name} not published")
    elif name in sym and base is not None and \
            cf[name] != base + nm.get(sym[name], -base):
        bad.append(f"{name} at {cf[name]:#x}, nm says "
                   f"{base + nm.get(sym[name], 0):#x}")
for name, a in addr.items():
    if name in cf and cf[name] != a:
        bad.append(f"{name} at {cf[name]:#x}, LuaJIT says {a:#x}")
if twin is not None:
    for name, a in cf.items():
        if a == twin or name.startswith("cmod.twin"):
            bad.append(f"the shared C function named {name}")
both = ff & set(cf)
if both:
    bad.append("names both builtin and C function: " + " ".join(sorted(both)))
shown = ", ".join(f"{n} {cf[n] - base if base and n in sym else cf.get(n, 0):#x}"
                  for n in need if n in cf)
if bad:
    print("; ".join(bad[:6]))
    sys.exit(1)
print(f"{len(cf)} C functions named; {shown}; the shared one unnamed")
