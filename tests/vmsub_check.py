# vmsub_check.py DUMP FILE [strict]: uw_elf_rows of FILE (DUMP: the output
# of build/tests/elfrows_dump FILE) against binutils, ground truth
# independent of unwind/vmsub.c: readelf -wF's CFA of every pc, and
# objdump -d's decoding of every pc where the rows differ from it.
#   - outside the rows that differ, every CFA readelf gives as rsp/rbp+N
#     is ours at every pc of its range;
#   - a row that differs is CFA = rsp + K + 8 inside an FDE whose one row
#     is rsp + K (a "refined" subroutine: per objdump, no instruction in it
#     touches rsp, its last is a ret, it starts at the target of a call
#     from inside the FDE), or no row (a refused one, same FDE kind);
#   - strict: no row differs in a one-row FDE (objects with no
#     interpreter: their rows are the FDEs').
# Prints "refined LO-HI ..." / "refused LO-HI" lines and a summary; exit 1
# on any failure.
import re, subprocess, sys

dump, path = sys.argv[1], sys.argv[2]
strict = len(sys.argv) > 3 and sys.argv[3] == "strict"  # no refined or refused row
ours = []
for l in open(dump):
    p = l.split()
    ours.append((int(p[0], 16), int(p[1], 16), p[2], int(p[3])))

# readelf -wF: per FDE, its range and its rows (loc, cfa)
fdes = []
cur = None
for l in subprocess.run(["readelf", "-wF", path], capture_output=True, text=True).stdout.splitlines():
    m = re.search(r"FDE cie=\w+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", l)
    if m:
        cur = [int(m.group(1), 16), int(m.group(2), 16), []]
        fdes.append(cur)
        continue
    m = re.match(r"^([0-9a-f]{16}) (\S+)", l)
    if m and cur is not None:
        cur[2].append((int(m.group(1), 16), m.group(2)))
    elif not l.strip():
        cur = None
fail = []
import bisect
los = [r[0] for r in ours]


def rows_over(lo, hi):
    i = max(bisect.bisect_right(los, lo) - 1, 0)
    while i < len(ours) and ours[i][0] < hi:
        if ours[i][1] > lo:
            yield ours[i]
        i += 1


diff = []  # (lo, hi, fde, kind)
checked = 0
for s, e, rows in fdes:
    for j, (loc, cfa) in enumerate(rows):
        end = rows[j + 1][0] if j + 1 < len(rows) else e
        m = re.match(r"^(rsp|rbp)\+(\d+)$", cfa)
        if not m or end <= loc:
            continue
        want = ("sp" if m.group(1) == "rsp" else "fp", int(m.group(2)))
        for lo, hi, rule, off in rows_over(loc, end):
            checked += 1
            if (rule, off) != want:
                diff.append((max(lo, loc), min(hi, end), (s, e, rows), rule, off, want))

objdump_cache = {}


def disas(s, e):
    if (s, e) not in objdump_cache:
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={s}",
                              f"--stop-address={e}", path], capture_output=True, text=True).stdout
        ins = []
        for l in out.splitlines():
            m = re.match(r"^\s*([0-9a-f]+):\s+(.*)$", l)
            if m:
                ins.append((int(m.group(1), 16), m.group(2).strip()))
        objdump_cache[(s, e)] = ins
    return objdump_cache[(s, e)]


def cfa_at(a):
    # our row at pc a: ("sp", off), or None (no row)
    i = bisect.bisect_right(los, a) - 1
    if i < 0 or not ours[i][0] <= a < ours[i][1] or ours[i][2] != "sp":
        return None
    return ours[i][3]


def rsp_effect(t):
    # how much an instruction moves rsp down (objdump's text): None when
    # it sets rsp otherwise (mov, lea, ...)
    if re.match(r"^push\s", t):
        return 8
    if re.match(r"^pop\s", t):
        return -8
    m = re.match(r"^(sub|add)\s+\$0x([0-9a-f]+),%rsp$", t)
    if m:
        v = int(m.group(2), 16)
        return v if m.group(1) == "sub" else -v
    if re.search(r",%rsp$", t):
        return None
    return 0


def lea_entry(ins, k, off, K):
    # an entry that is lea D(%rsp),%rX; loads into other registers;
    # mov %rX,%rsp; then code at the row's rsp (vm_exit_interp): rsp + D
    # is the row's, CFA = rsp + K + D
    m = re.match(r"^lea\s+0x([0-9a-f]+)\(%rsp\),%(\w+)$", ins[k][1])
    if not m:
        return False
    d, x = int(m.group(1), 16), m.group(2)
    for j in range(k + 1, min(k + 6, len(ins) - 1)):
        t = ins[j][1]
        if t == f"mov    %{x},%rsp" or re.match(rf"^mov\s+%{x},%rsp$", t):
            return off == K + d and cfa_at(ins[j + 1][0]) == K
        if re.search(rf",%({x}|rsp)$", t) or not t.startswith("mov"):
            return False
    return False


def judge_edge(lo, hi, s, e, off, K):
    # an entry's or exit's row (unwind/vmsub.c's edges), against objdump:
    # CFA = rsp + off at each pc of [lo, hi) must follow from the
    # instructions: the one before falling through moves rsp by what the
    # rows differ by, and the last one leads to the next pc's row (or
    # returns / jumps out of the FDE with CFA = rsp + 8, or jumps into a
    # trace right after BC_JLOOP's sub); an entry nothing falls into
    # starts at rsp + 8 (called) or + 16 (vm_ffi_callback: the callback's
    # trampoline pushed rbp)
    ins = disas(s, e)
    at = {a: k for k, (a, t) in enumerate(ins)}
    if lo not in at:
        return f"{lo:#x}: no instruction starts there"
    k = at[lo]
    if k > 0:
        pa, pt = ins[k - 1]
        pe = rsp_effect(pt)
        falls = not re.match(r"^(jmp|ret|int3|ud2)", pt)
        pc = cfa_at(pa)
        if falls and pc is not None and (pe is None or pc + pe != off):
            return f"{lo:#x}: rsp+{off} after {pa:#x} {pt} at rsp+{pc}"
        if not falls and off not in (8, 16) and not lea_entry(ins, k, off, K):
            return f"{lo:#x}: an entry at rsp+{off}"
    for a, t in ins[k:]:
        if a >= hi:
            break
        x = cfa_at(a)
        if re.match(r"^ret", t):
            return None if x == 8 else f"{a:#x}: ret at rsp+{x}"
        m = re.match(r"^jmp\s+([0-9a-f]+)\b", t)
        if m:
            tg = int(m.group(1), 16)
            if s <= tg < e:
                return f"{a:#x}: a jump inside the FDE at rsp+{x}"
            return None if x == 8 else f"{a:#x}: a jump out at rsp+{x}"
        if re.match(r"^jmp\s+\*", t):
            return None if x > K else f"{a:#x}: indirect jump at rsp+{x}"
        eff = rsp_effect(t)
        j = at[a] + 1
        if j >= len(ins):
            return f"{a:#x}: runs off the FDE"
        nx = cfa_at(ins[j][0])
        if eff is None:
            return f"{a:#x}: {t} sets rsp"
        if nx is not None and nx != x + eff:
            return f"{a:#x}: {t} from rsp+{x} to rsp+{nx}"
    return None


nref = nrefused = nedge = 0
for lo, hi, (s, e, rows), rule, off, want in diff:
    if len(rows) == 1 and want[0] == "sp" and rule == "sp" and off != want[1] + 8 and \
            e - s >= 1024 and not strict:
        # (an FDE of vmsub.c's size, VMSUB_MIN)
        why = judge_edge(lo, hi, s, e, off, want[1])
        if why:
            fail.append(f"edge {lo:#x}-{hi:#x}: rsp+{off}: {why}")
        else:
            nedge += 1
            print(f"edge {lo:#x}-{hi:#x} rsp+{off}")
        continue
    if len(rows) != 1 or want[0] != "sp" or not (rule == "none" or (rule == "sp" and off == want[1] + 8)):
        # not vmsub.c's kind (no row or K + 8 in a one-row rsp FDE):
        # shown, not judged here
        print(f"# other difference {lo:#x}-{hi:#x}: {rule}+{off}, readelf {want}")
        continue
    if strict:
        fail.append(f"{lo:#x}-{hi:#x}: {rule}+{off} in a one-row FDE (readelf {want})")
        continue
    ins = disas(s, e)
    calls = {}
    for a, t in ins:
        m = re.match(r"call\s+([0-9a-f]+)\b", t)
        if m and s <= int(m.group(1), 16) < e:
            calls.setdefault(int(m.group(1), 16), []).append(a)
    if rule == "none":
        nrefused += 1
        print(f"refused {lo:#x}-{hi:#x} (called from {[hex(c) for c in calls.get(lo, [])]})")
        continue
    if rule != "sp" or off != want[1] + 8:
        fail.append(f"{lo:#x}-{hi:#x}: {rule}+{off}, not rsp+{want[1] + 8}")
        continue
    nref += 1
    body = [(a, t) for a, t in ins if lo <= a < hi]
    bad = [f"{a:#x} {t}" for a, t in body
           if re.search(r"%[re]?sp\b|%spl\b|^(push|pop|leave|enter|call)", t) and not t.startswith("ret")]
    if not body or body[-1][1] != "ret" or bad or body[0][0] != lo:
        fail.append(f"refined {lo:#x}-{hi:#x}: objdump: last {body[-1][1] if body else None}, touches rsp {bad}")
    if lo not in calls:
        fail.append(f"refined {lo:#x}-{hi:#x}: no call from the FDE targets it")
    print(f"refined {lo:#x}-{hi:#x} {len(body)} instructions, rsp+{off}, called from {[hex(c) for c in calls.get(lo, [])]}")
for f in fail[:10]:
    print("# " + f)
print(f"{len(fdes)} FDEs, {checked} row checks, {len(diff)} rows differ from readelf: {nref} refined, {nrefused} refused, {nedge} entry/exit rows, {len(fail)} failures")
sys.exit(1 if fail else 0)
