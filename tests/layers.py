#!/usr/bin/env python3
# layers.py ROOT: check the include graph of the tree at ROOT against the
# layering of docs/ARCHITECTURE.md. Prints one line per violation and
# exits 1 if there is any.
#
# The rules:
#  - each directory is a library (or vm/, cli/ on top) with a rank; a file
#    may include a header of its own directory, or the face header of a
#    library of a lower rank, and nothing else;
#  - vm/ and cli/ headers are included from their own directory only
#    (nothing depends on the Lua module or the commands);
#  - tests/ and bench/ may look inside any library, but never into vm/ or
#    cli/ headers;
#  - header names are unique across the tree (a bare #include "x.h" names
#    one file), and every header included is found;
#  - with --makefile, the directories a library includes are among the
#    ones the Makefile lets it include (DIR_DEPS).
import os
import re
import sys

RANK = {"common": 0, "sframe": 1, "perfmap": 2, "lj": 2, "audit": 3,
        "unwind": 4, "sampler": 5, "profile": 5, "vm": 9, "cli": 9}
FACE = {"common": "jsfenv.h", "sframe": "jitsframe.h", "perfmap": "jitdump.h",
        "lj": "lj.h", "audit": "auditlog.h", "unwind": "unwind.h", "sampler": "sampler.h",
        "profile": "profile.h"}
FREE = ("tests", "bench")  # may use internals of the libraries
GENERATED = {"pprof.pb-c.h": "profile",  # build/gen, generated for profile/
             "vmlinux.h": "sampler", "sampler.skel.h": "sampler"}  # and sampler/
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main(argv):
    root = argv[1]
    makefile = "--makefile" in argv
    headers = {}
    bad = []
    for d in list(RANK) + list(FREE):
        p = os.path.join(root, d)
        if not os.path.isdir(p):
            continue
        for f in sorted(os.listdir(p)):
            if f.endswith(".h"):
                if f in headers:
                    bad.append(f"{d}/{f}: header name also in {headers[f]}/")
                headers.setdefault(f, d)
    for f, d in GENERATED.items():
        headers.setdefault(f, d)
    deps = {}
    if makefile:
        mk = open(os.path.join(root, "Makefile")).read()
        for m in re.finditer(r"^(\w+)_DEPS\s*:=(.*)$", mk, re.M):
            deps[m.group(1)] = set(m.group(2).split())
    for d in list(RANK) + list(FREE):
        p = os.path.join(root, d)
        if not os.path.isdir(p):
            continue
        for f in sorted(os.listdir(p)):
            if not f.endswith((".c", ".h")):
                continue
            src = open(os.path.join(p, f), errors="replace").read()
            for inc in INC.findall(src):
                name = os.path.basename(inc)
                where = f"{d}/{f}: #include \"{inc}\""
                if "/" in inc:
                    bad.append(f"{where}: a path (use the directory's -I)")
                    continue
                e = d if os.path.exists(os.path.join(p, name)) else headers.get(name)
                if e is None:
                    bad.append(f"{where}: no such header in the tree")
                    continue
                if e == d:
                    continue
                if e in ("vm", "cli"):
                    bad.append(f"{where}: a {e}/ header outside {e}/")
                    continue
                if d in FREE:
                    continue
                if RANK[e] >= RANK[d]:
                    bad.append(f"{where}: {e}/ is not below {d}/")
                    continue
                if name != FACE[e]:
                    bad.append(f"{where}: not {e}/'s face ({FACE[e]})")
                    continue
                if makefile and e not in deps.get(d, set()):
                    bad.append(f"{where}: {e} not in the Makefile's {d}_DEPS")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
