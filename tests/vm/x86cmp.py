# x86cmp.py WALKER MODE FILES...: compare lj/x86len.c's instruction lengths
# (through tests/x86len_walk) with objdump's decoding of the same bytes.
#   MODE walk: each FILE is one trace's machine code, decoded from offset 0;
#              every length must equal objdump's, and the whole trace must
#              decode (LuaJIT emits nothing outside the subset).
#   MODE at:   one FILE (e.g. a binary's .text); every objdump instruction
#              start is decoded; every length given must equal objdump's.
# Prints one summary line; exit 1 on any mismatch.
import collections, re, subprocess, sys

walker, mode, files = sys.argv[1], sys.argv[2], sys.argv[3:]


def objdump(path):
    out = subprocess.run(["objdump", "-D", "-b", "binary", "-mi386:x86-64", path],
                         capture_output=True, text=True, check=True).stdout
    starts, mn = [], {}
    for line in out.splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\t[0-9a-f ]+\t(.*)$", line)
        if m:
            o = int(m.group(1), 16)
            starts.append(o)
            mn[o] = m.group(2).split()[0] if m.group(2).split() else "?"
    size = len(open(path, "rb").read())
    nxt = {s: (starts[i + 1] if i + 1 < len(starts) else size) for i, s in enumerate(starts)}
    return starts, nxt, mn, size


bad = 0
if mode == "walk":
    ours, end = collections.defaultdict(list), {}
    out = subprocess.run([walker] + files, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f, a, b = line.rsplit(" ", 2)
        if a == "END":
            end[f] = int(b)
        else:
            ours[f].append((int(a), int(b)))
    n = full = 0
    stops = collections.Counter()
    for f in files:
        starts, nxt, mn, size = objdump(f)
        for off, ln in ours[f]:
            n += 1
            if nxt.get(off, -1) - off != ln:
                bad += 1
                if bad <= 5:
                    print(f"# mismatch {f}+{off}: ours {ln}, objdump {nxt.get(off, -1) - off} ({mn.get(off)})")
        if end[f] == size:
            full += 1
        else:
            stops[mn.get(end[f], "?")] += 1
    print(f"{len(files)} traces, {n} instructions, {bad} length mismatches, "
          f"{full} decoded to the end, stopped at {dict(stops)}")
    sys.exit(1 if bad or full != len(files) else 0)
else:
    path = files[0]
    starts, nxt, mn, size = objdump(path)
    out = subprocess.run([walker, "-a", path], input="\n".join(map(str, starts)),
                         capture_output=True, text=True, check=True).stdout
    known = unknown = 0
    for line in out.splitlines():
        o, ln = map(int, line.split())
        if ln < 0:
            unknown += 1
            continue
        known += 1
        if nxt[o] - o != ln:
            bad += 1
            if bad <= 5:
                print(f"# mismatch +{o:#x}: ours {ln}, objdump {nxt[o] - o} ({mn[o]})")
    print(f"{len(starts)} instructions, {known} decoded, {bad} length mismatches, {unknown} outside the subset")
    sys.exit(1 if bad or known < 0.95 * len(starts) else 0)
