# SPDX-License-Identifier: MIT
# gdb -batch -x tests/vm/gdbstep.py --args LUAJIT tests/vm/exact.lua gdb
#
# Steps through LuaJIT traces instruction by instruction and checks, at
# every instruction, the row the region publishes for that pc against what
# gdb observed independently when the main chunk entered the VM:
#
#   1. Before the program runs, find in lua_pcall the `call rel32` to the VM
#      entry (its target starts with push rbp,rbx,r15,r14; sub rsp,40) and
#      break there. At each hit, rsp is the CFA the VM frame will have (the
#      call pushes the return address below it), pc+5 the return address,
#      rbp the value the entry pushes first. The outermost hit is luajit.c
#      running the main chunk, whose code makes the traces.
#   2. The Lua side (exact.lua gdb) builds its traces, writes them to
#      $JSF_GDB_INFO and raises SIGTRAP. Here, the region is read with
#      `jitsframe region dump --json` (what a reader of the file sees). The
#      Lua side then runs rounds of its workloads, each after a SIGTRAP; at
#      each SIGTRAP, hardware breakpoints go to the starts of the next two
#      traces not yet stepped (those with head or tail rows first).
#   3. On each entry, stepi until the pc leaves published code (an exit
#      stub, the interpreter), stepping over calls with a temporary
#      breakpoint at the return address. At each pc: CFA = rsp + the row's
#      offset must equal the recorded CFA, and [CFA-8], [CFA-16] the
#      recorded return address and rbp.
#
# Prints "GDBSTEP key=value ..." and "GDBSTEP-MISMATCH ..." lines.
# JSF_GDB_STEPS bounds the steps, JSF_GDB_PER_ENTRY those per trace entry.
import json
import os
import subprocess

import gdb

REGION = os.environ["JSF_TEST_REGION"]
INFO = os.environ["JSF_GDB_INFO"]
CLI = os.environ.get("JSF_CLI", "build/jitsframe")
BUDGET = int(os.environ.get("JSF_GDB_STEPS", "10000"))
PER_ENTRY = int(os.environ.get("JSF_GDB_PER_ENTRY", "250"))
ENTRIES_PER_TARGET = int(os.environ.get("JSF_GDB_ENTRIES", "2"))
# Self-test: "head" or "tail" drops that row before checking, as a module
# that got it wrong would; the run must then report mismatches.
MUTATE = os.environ.get("JSF_GDB_MUTATE", "")
PROLOGUE = bytes([0x55, 0x53, 0x41, 0x57, 0x41, 0x56, 0x48, 0x83, 0xEC, 0x28])
U64 = (1 << 64) - 1

for c in ("set pagination off", "set confirm off", "set width 0",
          "set print thread-events off", "set suppress-cli-notifications on",
          "handle SIGTRAP stop nopass"):
    gdb.execute(c)


def out(*a):
    print(*a, flush=True)


def reg(name):
    return int(gdb.parse_and_eval("$" + name)) & U64


def mem64(addr):
    return int.from_bytes(gdb.selected_inferior().read_memory(addr, 8).tobytes(), "little")


def alive():
    inf = gdb.selected_inferior()
    return inf is not None and inf.pid != 0


gdb.execute("starti", to_string=True)
inf = gdb.selected_inferior()
lua_pcall = int(gdb.parse_and_eval("(long)&lua_pcall")) & U64
code = inf.read_memory(lua_pcall, 512).tobytes()
call_site = None
for i in range(len(code) - 5):
    if code[i] != 0xE8:
        continue
    tgt = (lua_pcall + i + 5 + int.from_bytes(code[i + 1:i + 5], "little", signed=True)) & U64
    try:
        if inf.read_memory(tgt, len(PROLOGUE)).tobytes() == PROLOGUE:
            call_site = lua_pcall + i
            break
    except gdb.MemoryError:
        pass
if call_site is None:
    out("GDBSTEP error=no-vm-call-in-lua_pcall")
    gdb.execute("kill")
    raise SystemExit

entries = {}  # CFA -> (return address, rbp)


class EntryBP(gdb.Breakpoint):
    def stop(self):
        entries[reg("rsp")] = (call_site + 5, reg("rbp"))
        return False


# A hardware breakpoint: the code stays intact (the probe reads lua_pcall).
EntryBP("*%#x" % call_site, type=gdb.BP_HARDWARE_BREAKPOINT, internal=True)

gdb.execute("continue", to_string=True)  # until the SIGTRAP
if not alive() or not entries:
    out("GDBSTEP error=no-sigtrap-stop entries=%d" % len(entries))
    raise SystemExit
main_cfa = max(entries)
main_ra, main_rbp = entries[main_cfa]
out("GDBSTEP entry cfa=%#x ra=%#x rbp=%#x (lua_pcall+%#x) pcall_entries=%d" % (
    main_cfa, main_ra, main_rbp, main_ra - lua_pcall, len(entries)))

dump = json.loads(subprocess.run([CLI, "region", "dump", REGION, "--json"],
                                 check=True, capture_output=True, text=True).stdout)
funcs = []
for f in dump["functions"]:
    rows = sorted((r["offset"], r["cfa_offset"], r.get("cfa"), r.get("fp_offset")) for r in f["rows"])
    funcs.append({"start": f["start"], "size": f["size"], "rows": rows})
funcs.sort(key=lambda f: f["start"])
meta = {}
with open(INFO) as fh:
    for line in fh:
        tr, parent, linktype, link, addr, size = line.split()
        meta[int(addr)] = (int(tr), int(parent), linktype, int(link))


def find(pc):
    lo, hi = 0, len(funcs)
    while lo < hi:
        mid = (lo + hi) // 2
        if funcs[mid]["start"] <= pc:
            lo = mid + 1
        else:
            hi = mid
    if lo and pc < funcs[lo - 1]["start"] + funcs[lo - 1]["size"]:
        return funcs[lo - 1]
    return None


def kinds(f):
    """(head_end, tail_start): offsets bounding the head and tail rows."""
    rows, size = f["rows"], f["size"]
    tail = rows[-1][0] if len(rows) > 1 and rows[-1][0] == size - 5 else None
    head = rows[1][0] if len(rows) > 1 and rows[1][0] != tail else None
    return head, tail


for f in funcs:
    m = meta.get(f["start"])
    f["name"] = "trace %d (parent %d, %s->%d)" % m if m else "?"
# Traces with head or tail rows, side traces first; then other side traces.
targets = [f for f in funcs if len(f["rows"]) > 1 or meta.get(f["start"], (0, 0))[1]]
targets.sort(key=lambda f: (len(f["rows"]) == 1, 0 if meta.get(f["start"], (0, 0))[1] else 1,
                            -len(f["rows"])))
out("GDBSTEP functions=%d targets=%d" % (len(funcs), len(targets)))
for f in targets:
    out("GDBSTEP target %s at %#x size %d rows %s" % (
        f["name"], f["start"], f["size"], " ".join("%d:%d" % (o, c) for o, c, _, _ in f["rows"])))

arch = gdb.selected_frame().architecture()
st = {"steps": 0, "head": 0, "tail": 0, "body": 0, "mismatch": 0, "entries": 0,
      "calls": 0, "rowshape": 0}
head_insns, tail_insns = {}, {}
covered = set()  # (start, 'head'/'tail') pairs stepped
active = {}  # start -> gdb breakpoint
queue = list(targets)
visits = {}


def arm():
    """At a SIGTRAP: the next two targets not stepped yet."""
    for start in list(active):
        disarm(start)
    for f in list(queue):
        if len(active) == 2:  # 4 debug registers: entry, 2, call return
            break
        queue.remove(f)
        active[f["start"]] = gdb.Breakpoint("*%#x" % f["start"], type=gdb.BP_HARDWARE_BREAKPOINT,
                                            internal=True)


def disarm(start):
    bp = active.pop(start, None)
    if bp:
        bp.delete()


def mismatch(msg):
    st["mismatch"] += 1
    if st["mismatch"] <= 10:
        out("GDBSTEP-MISMATCH " + msg)


def step_entry():
    n = 0
    while n < PER_ENTRY and st["steps"] < BUDGET:
        pc = reg("rip")
        f = find(pc)
        if f is None:
            return
        off = pc - f["start"]
        rows = f["rows"]
        head, tail = kinds(f)
        if MUTATE == "head" and head is not None:
            rows = rows[1:]
        elif MUTATE == "tail" and tail is not None:
            rows = rows[:-1]
        row = ([r for r in rows if r[0] <= off] or rows[:1])[-1]
        if row[2] != "sp" or row[3] != -16:
            st["rowshape"] += 1
            mismatch("%s +%d: row %r is not sp-based with fp at cfa-16" % (f["name"], off, row))
        rsp = reg("rsp")
        cfa = (rsp + row[1]) & U64
        ra, rbp = mem64(cfa - 8), mem64(cfa - 16)
        insn = arch.disassemble(pc)[0]
        if head is not None and off < head:
            kind = "head"
            head_insns[insn["asm"].split()[0]] = head_insns.get(insn["asm"].split()[0], 0) + 1
        elif tail is not None and off >= tail:
            kind = "tail"
            tail_insns[insn["asm"].split()[0]] = tail_insns.get(insn["asm"].split()[0], 0) + 1
        else:
            kind = "body"
        st[kind] += 1
        st["steps"] += 1
        if kind != "body":
            covered.add((f["start"], kind))
        if cfa != main_cfa or ra != main_ra or rbp != main_rbp:
            mismatch("%s +%d (%s, %s): rsp %#x + %d = %#x, want %#x; [CFA-8] %#x want %#x; "
                     "[CFA-16] %#x want %#x" % (f["name"], off, kind, insn["asm"], rsp, row[1], cfa,
                                                main_cfa, ra, main_ra, rbp, main_rbp))
        n += 1
        if insn["asm"].startswith("call"):
            # Over the callee: a temporary breakpoint at the return address.
            st["calls"] += 1
            ret = pc + insn["length"]
            bp = gdb.Breakpoint("*%#x" % ret, type=gdb.BP_HARDWARE_BREAKPOINT, internal=True,
                                temporary=True)
            gdb.execute("continue", to_string=True)
            if not alive():
                return
            if reg("rip") != ret:
                if bp.is_valid():
                    bp.delete()
                return
        else:
            gdb.execute("stepi", to_string=True)
        if not alive():
            return


checkpoints = 1
arm()
while st["steps"] < BUDGET and (active or queue):
    try:
        gdb.execute("continue", to_string=True)
    except gdb.error:
        break
    if not alive():
        break
    pc = reg("rip")
    if pc not in active:  # the Lua side's SIGTRAP before a round
        checkpoints += 1
        arm()
        continue
    st["entries"] += 1
    visits[pc] = visits.get(pc, 0) + 1
    if visits[pc] >= ENTRIES_PER_TARGET:
        disarm(pc)
    step_entry()
    if not alive():
        break

for s in list(active):
    disarm(s)
heads = len({s for s, k in covered if k == "head"})
tails = len({s for s, k in covered if k == "tail"})
entered = {f["start"] for f in targets if visits.get(f["start"])}
out("GDBSTEP result steps=%d head=%d tail=%d body=%d mismatches=%d entries=%d calls=%d "
    "head_funcs=%d tail_funcs=%d targets_entered=%d/%d checkpoints=%d" % (
        st["steps"], st["head"], st["tail"], st["body"], st["mismatch"], st["entries"],
        st["calls"], heads, tails, len(entered), len(targets), checkpoints))
for f in targets:
    h, t = kinds(f)
    out("GDBSTEP covered %s: entries %d, head %s, tail %s" % (
        f["name"], visits.get(f["start"], 0),
        "n/a" if h is None else ("yes" if (f["start"], "head") in covered else "no"),
        "n/a" if t is None else ("yes" if (f["start"], "tail") in covered else "no")))
out("GDBSTEP head-insns " + " ".join("%s:%d" % kv for kv in sorted(head_insns.items())))
out("GDBSTEP tail-insns " + " ".join("%s:%d" % kv for kv in sorted(tail_insns.items())))
while alive():  # let the Lua side finish (past its SIGTRAPs) and report
    try:
        gdb.execute("continue", to_string=True)
    except gdb.error:
        break
