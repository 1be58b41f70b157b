# gdb -batch -x tests/vmsub_gdb.py --args PROGRAM...: with VMSUB_OFF (hex
# vaddr of a pc inside a refined subroutine of PROGRAM, a PIE) and VMSUB_K
# (the CFA offset our row gives there), stop there and print what the real
# stack holds: the pc, [rsp] and [rsp + K - 8] as file:offset, and how
# many of the first 512 qwords at r14 (LuaJIT's DISPATCH: the
# interpreter's dispatch table) point into [VMSUB_LO, VMSUB_HI) and into
# the interpreter's FDE [VMSUB_FLO, VMSUB_FHI).
import os
import gdb

gdb.execute("set pagination off")
gdb.execute("starti", to_string=True)
exe = os.path.realpath(gdb.current_progspace().filename)


def maps():
    out = []
    for l in gdb.execute("info proc mappings", to_string=True).splitlines():
        p = l.split()
        if len(p) >= 5 and p[0].startswith("0x") and p[-1].startswith("/"):
            out.append((int(p[0], 16), int(p[1], 16), int(p[3], 16), p[-1]))
    return out


base = min(m[0] for m in maps() if m[3] == exe)
env = {k: int(os.environ["VMSUB_" + k], 16) for k in ("OFF", "LO", "HI", "FLO", "FHI")}
k = int(os.environ["VMSUB_K"])
gdb.execute(f"break *{base + env['OFF']:#x}", to_string=True)
gdb.execute("continue", to_string=True)
rsp = int(gdb.parse_and_eval("$rsp"))
pc = int(gdb.parse_and_eval("$pc"))
r14 = int(gdb.parse_and_eval("$r14"))
inf = gdb.selected_inferior()
M = maps()


def where(a):
    for lo, hi, off, f in M:
        if lo <= a < hi:
            return f"{f}:{a - lo + off:#x}"
    return "?:0"


def q(a):
    return int.from_bytes(bytes(inf.read_memory(a, 8)), "little")


ins = fde = 0
for i in range(512):
    try:
        v = q(r14 + 8 * i) - base
    except gdb.MemoryError:
        break
    ins += env["LO"] <= v < env["HI"]
    fde += env["FLO"] <= v < env["FHI"]
print(f"VMSUB pc={where(pc)} ra={where(q(rsp))} cfa_ra={where(q(rsp + k - 8))} "
      f"dispatch_in_sub={ins} dispatch_in_fde={fde}")
gdb.execute("kill", to_string=True)
