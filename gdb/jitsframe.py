# SPDX-License-Identifier: MIT
"""gdb backtraces through LuaJIT trace frames, from jitsframe's region.

Setup, one line (in gdb or ~/.gdbinit):

    source PREFIX/share/jitsframe/gdb/jitsframe.py     # installed
    source build/gdb/jitsframe.py                      # a build tree

Then `bt` walks through trace code, live or on a core file. For a pc inside
a function of the inferior's region, a gdb.unwinder.Unwinder computes the
caller's frame from the region's row there (CFA = sp or fp + cfa_offset,
return address at CFA + ra_offset, saved rbp at CFA + fp_offset when the
row has one, the caller's rsp = CFA); a frame filter names the frame
"TRACE_n::chunk:line" from the process's jitdump (jit-PID.dump), else
"TRACE@0xSTART". A pc no function of the region covers is left to gdb,
but for code gdb has no symbol for (a stripped luajit): the function (its
FDE, from the file's .eh_frame_hdr) that starts where the region's runtime
area names one (docs/ABI.md 1.6) is named so: LuaJIT's builtins written in
C (string.gsub) and its interpreter (luajit_interpreter).

The region of process P is found as docs/ABI.md section 8 says, each
candidate's producer_pid checked against P: a path named with
`jitsframe-region PATH` first; then (live) the file mapped in /proc/P/maps
with the magic "JSFREGN\\0"; BASE/jitsframe-UID/P.region for every UID
and BASE ($TMPDIR when set, else /dev/shm, /tmp); $JITSFRAME_JITDUMP/region
and region-P (a record directory).
On a core file, P is the core's pid and the mappings are not looked at.
The jitdump: mapped in /proc/P/maps (live), else in $JITSFRAME_JITDUMP,
else beside the region.

The rows are read through libjitsframe (ctypes): PREFIX/lib beside an
installed script, build/ in a build tree, else the system's.

Commands: `jitsframe-region [PATH]` names the region (PATH; "-" forgets
it) and prints which region and jitdump the current inferior uses.
"""
import bisect
import ctypes
import ctypes.util
import glob
import os
import stat
import struct
import sys

import gdb
import gdb.unwinder
from gdb.FrameDecorator import FrameDecorator

# this file's directory: the code's own file name (gdb's `source` leaves a
# __file__ already set in __main__ alone), else __file__
_JSF_ME = sys._getframe(0).f_code.co_filename
if not os.path.isfile(_JSF_ME):
    _JSF_ME = globals().get("__file__", "")
_JSF_HERE = os.path.dirname(os.path.abspath(_JSF_ME))
_JSF_U64 = (1 << 64) - 1
_JSF_SP, _JSF_FP = 1, 2
_JSF_RA_DEFAULT, _JSF_RA_CFA = 0, 1
_JSF_ARCH_X86_64 = 3
_JSF_MAGIC = b"JSFREGN\0"
_JSF_JD_MAGIC = 0x4A695444


class _JsfRow(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_uint32), ("cfa_base", ctypes.c_uint8),
                ("cfa_offset", ctypes.c_int32), ("has_fp", ctypes.c_bool),
                ("fp_offset", ctypes.c_int32), ("outermost", ctypes.c_bool),
                ("ra_rule", ctypes.c_uint8), ("ra_offset", ctypes.c_int32)]


class _JsfInfo(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("abi_version", ctypes.c_uint32),
                ("arch", ctypes.c_uint32), ("producer_pid", ctypes.c_uint32),
                ("live", ctypes.c_bool), ("closed", ctypes.c_bool),
                ("recovered", ctypes.c_bool), ("create_ns", ctypes.c_uint64),
                ("close_ns", ctypes.c_uint64), ("file_size", ctypes.c_uint64),
                ("seq", ctypes.c_uint64), ("live_funcs", ctypes.c_uint32),
                ("logged_funcs", ctypes.c_uint32)]


def _jsf_load_lib():
    """libjitsframe.so.1: beside an installed script, in a build tree, or
    the system's. Returns (CDLL or None, why not)."""
    up = os.path.normpath(os.path.join(_JSF_HERE, "..", "..", ".."))
    cands = [os.path.join(up, "lib", "libjitsframe.so.1")]
    cands += sorted(glob.glob(os.path.join(up, "lib*", "libjitsframe.so.1")))
    cands += sorted(glob.glob(os.path.join(up, "lib", "*-linux-gnu", "libjitsframe.so.1")))
    cands += [os.path.join(_JSF_HERE, "..", "libjitsframe.so.1"),  # build/gdb/
              os.path.join(_JSF_HERE, "..", "build", "libjitsframe.so.1")]  # gdb/
    sys_lib = ctypes.util.find_library("jitsframe")
    if sys_lib:
        cands.append(sys_lib)
    why = "libjitsframe.so.1 not found (looked beside %s and in the system)" % _JSF_HERE
    for c in cands:
        if "/" in c and not os.path.exists(c):
            continue
        try:
            lib = ctypes.CDLL(c)
        except OSError as e:
            why = "cannot load %s: %s" % (c, e)
            continue
        vp = ctypes.c_void_p
        lib.jsf_view_open.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p]
        lib.jsf_view_open.restype = ctypes.c_int
        lib.jsf_view_lookup.argtypes = [vp, ctypes.c_uint64, ctypes.c_uint64,
                                        ctypes.POINTER(ctypes.c_uint64),
                                        ctypes.POINTER(ctypes.c_uint32),
                                        ctypes.POINTER(_JsfRow)]
        lib.jsf_view_lookup.restype = ctypes.c_int
        lib.jsf_view_info.argtypes = [vp, ctypes.POINTER(_JsfInfo)]
        lib.jsf_view_info.restype = ctypes.c_int
        lib.jsf_view_close.argtypes = [vp]
        lib.jsf_view_close.restype = None
        lib.jsf_strerror.argtypes = [ctypes.c_int]
        lib.jsf_strerror.restype = ctypes.c_char_p
        if hasattr(lib, "jsf_region_find"):  # docs/ABI.md section 8
            lib.jsf_region_find.argtypes = [ctypes.c_int, ctypes.c_uint64,
                                            ctypes.c_char_p, ctypes.c_size_t]
            lib.jsf_region_find.restype = ctypes.c_int
        return lib, None
    return None, why


def _jsf_say(msg):
    gdb.write("jitsframe: %s\n" % msg)


class _JsfJitdump:
    """The CODE_LOAD names of one jit-PID.dump (perf's jitdump format:
    tools/perf/Documentation/jitdump-specification.txt), read on as the
    file grows."""

    def __init__(self, path, pid):
        self.path, self.pid = path, pid
        self.names = {}  # code_addr -> name of its last CODE_LOAD
        self.off = 0  # where reading goes on; 0: header not read
        self.ident = None
        self.bad = None

    def refresh(self):
        try:
            st = os.stat(self.path)
        except OSError as e:
            self.bad = str(e)
            return
        ident = (st.st_dev, st.st_ino)
        if ident != self.ident or st.st_size < self.off:
            self.names, self.off, self.ident = {}, 0, ident
        if st.st_size <= self.off:
            return
        try:
            with open(self.path, "rb") as f:
                if self.off == 0:
                    h = f.read(40)
                    if len(h) < 40:
                        return
                    magic, _ver, total, _mach, _pad, pid = struct.unpack_from("<6I", h)
                    if magic != _JSF_JD_MAGIC or total < 40:
                        self.bad = "not a jitdump"
                        return
                    if pid != self.pid:
                        self.bad = "its pid is %d, not %d" % (pid, self.pid)
                        return
                    self.off = total
                f.seek(self.off)
                data = f.read()
        except OSError as e:
            self.bad = str(e)
            return
        off = 0
        while off + 16 <= len(data):
            rid, size = struct.unpack_from("<II", data, off)
            if size < 16 or off + size > len(data):
                break  # damaged, or a record not written yet
            if rid == 0 and size >= 16 + 40 + 1:  # CODE_LOAD
                _pid, _tid, _vma, addr, _size, _idx = struct.unpack_from("<IIQQQQ", data, off + 16)
                end = data.find(b"\0", off + 56, off + size)
                if end >= 0:
                    self.names[addr] = data[off + 56:end].decode("utf-8", "replace")
            off += size
        self.off += off

    def name(self, start):
        self.refresh()
        return self.names.get(start)


class _JsfTarget:
    """The region (and jitdump) of one process, live or post-mortem."""

    def __init__(self, lib, pid, core, named):
        self.lib, self.pid, self.core = lib, pid, core
        self.view = None
        self.path = None
        self.info = None
        self.jitdump = None
        self.looked = []  # what was tried: (path, why refused)
        self.file_maps = []  # live: file-backed [lo, hi) ranges
        self._rt = None  # rt_names()
        self._maps_cache = None  # `info proc mappings`, live or core
        self._find(named)

    # --- the region (docs/ABI.md section 8) ---
    def _maps(self):
        """Live: the region and jitdump candidates of /proc/P/maps."""
        regions, jitdumps, seen = [], [], set()
        try:
            with open("/proc/%d/maps" % self.pid) as f:
                lines = f.readlines()
        except OSError as e:
            self.looked.append(("/proc/%d/maps" % self.pid, str(e)))
            return regions, jitdumps
        for line in lines:
            parts = line.split(None, 5)
            if len(parts) < 6 or parts[4] == "0":
                continue
            rng, name = parts[0], parts[5].rstrip("\n")
            lo, hi = (int(x, 16) for x in rng.split("-"))
            self.file_maps.append((lo, hi))
            key = (parts[3], parts[4])
            if key in seen:
                continue
            seen.add(key)
            paths = []
            if name.startswith("/") and not name.endswith(" (deleted)"):
                paths.append(name)
            paths.append("/proc/%d/map_files/%s" % (self.pid, rng))
            if os.path.basename(name) == "jit-%d.dump" % self.pid:
                jitdumps.extend(paths)
                continue
            for p in paths:
                try:
                    with open(p, "rb") as rf:
                        if rf.read(8) == _JSF_MAGIC:
                            regions.append(p)
                            break
                except OSError:
                    continue
        return regions, jitdumps

    @staticmethod
    def _bases():
        """The bases of the per-user directories, as the library's
        jsf_region_search_base: $TMPDIR when set, else /dev/shm, /tmp."""
        t = os.environ.get("TMPDIR")
        return [t] if t else ["/dev/shm", "/tmp"]

    def _default_dir(self):
        """BASE/jitsframe-UID/P.region for every base and every UID whose
        directory is its own and not writable by others."""
        out = []
        dirs = []
        for tmp in self._bases():
            dirs += sorted(glob.glob(os.path.join(tmp, "jitsframe-*")))
        for d in dirs:
            uid = os.path.basename(d)[len("jitsframe-"):]
            try:
                st = os.lstat(d)
            except OSError:
                continue
            p = os.path.join(d, "%d.region" % self.pid)
            if not os.path.exists(p):
                continue
            if not uid.isdigit() or not stat.S_ISDIR(st.st_mode) or st.st_uid != int(uid) \
                    or st.st_mode & 0o022:
                self.looked.append((p, "its directory is not its owner's alone"))
                continue
            out.append(p)
        return out

    def _try(self, path):
        v = ctypes.c_void_p()
        err = self.lib.jsf_view_open(ctypes.byref(v), path.encode())
        if err:
            why = self.lib.jsf_strerror(err).decode("utf-8", "replace")
            self.looked.append((path, "cannot be read: %s" % why))
            return False
        info = _JsfInfo()
        info.sz = ctypes.sizeof(info)
        err = self.lib.jsf_view_info(v, ctypes.byref(info))
        why = None
        if err:
            why = "cannot be read: %s" % self.lib.jsf_strerror(err).decode("utf-8", "replace")
        elif info.producer_pid != self.pid:
            why = "its producer_pid is %d, not %d" % (info.producer_pid, self.pid)
        elif info.arch != _JSF_ARCH_X86_64:
            why = "its architecture (%d) is not x86-64" % info.arch
        if why:
            self.lib.jsf_view_close(v)
            self.looked.append((path, why))
            return False
        self.view, self.path, self.info = v, path, info
        return True

    def _find(self, named):
        jd_maps = []
        cands = [named] if named else []
        self.where = ["the named path %s" % named] if named else []
        if not self.core:
            # a live process: the library's own discovery first (the code
            # report, record and `region ls` use), then this script's scan
            # of its mappings (which also finds the jitdump). Not for a
            # core: its pid may name another process by now.
            if hasattr(self.lib, "jsf_region_find"):
                buf = ctypes.create_string_buffer(4096)
                if self.lib.jsf_region_find(self.pid, 0, buf, len(buf)) == 0:
                    cands.append(buf.value.decode(errors="replace"))
            regions, jd_maps = self._maps()
            cands += regions
            self.where.append("/proc/%d/maps" % self.pid)
        cands += self._default_dir()
        for tmp in self._bases():
            self.where.append("%s/jitsframe-*/%d.region" % (tmp, self.pid))
        rec = os.environ.get("JITSFRAME_JITDUMP")
        if rec:
            self.where.append("%s/region, region-%d" % (rec, self.pid))
            cands += [p for p in (os.path.join(rec, "region"),
                                  os.path.join(rec, "region-%d" % self.pid))
                      if os.path.exists(p)]
        for c in cands:
            if self._try(c):
                break
        # the jitdump: mapped (live), $JITSFRAME_JITDUMP, beside the region
        jds = list(jd_maps)
        if rec:
            jds.append(os.path.join(rec, "jit-%d.dump" % self.pid))
        if self.path:
            jds.append(os.path.join(os.path.dirname(self.path), "jit-%d.dump" % self.pid))
        for p in jds:
            if os.path.isfile(p):
                jd = _JsfJitdump(p, self.pid)
                jd.refresh()
                if jd.bad is None:
                    self.jitdump = jd
                    break

    def close(self):
        if self.view:
            self.lib.jsf_view_close(self.view)
            self.view = None

    def lookup(self, pc):
        """(func_start, row) of the function covering pc, or None."""
        if not self.view:
            return None
        start, size, row = ctypes.c_uint64(), ctypes.c_uint32(), _JsfRow()
        err = self.lib.jsf_view_lookup(self.view, pc & _JSF_U64, 0, ctypes.byref(start),
                                       ctypes.byref(size), ctypes.byref(row))
        if err:
            return None
        return start.value, row

    def name(self, start):
        n = self.jitdump.name(start) if self.jitdump else None
        return n or "TRACE@0x%x" % start

    # --- names of native code a stripped binary leaves unnamed ---
    def rt_names(self):
        """{address: name} from the region's runtime area (docs/ABI.md
        1.6, 1.7): LuaJIT's builtins written in C ("LJFF"), the C functions
        of Lua modules ("LJCF") and the interpreter's one FDE ("LJVM":
        luajit_interpreter); {} if none."""
        if self._rt is None:
            self._rt = _jsf_rt_names(self.path) if self.path else {}
        return self._rt

    def native_name(self, pc):
        """The region's name for the function (its FDE) that covers pc in
        a file gdb has no symbol for, or None."""
        names = self.rt_names()
        if not names:
            return None
        if self._maps_cache is None:
            self._maps_cache = _jsf_proc_mappings()
        for lo, hi, off, path in self._maps_cache:
            if lo <= pc < hi:
                into = _jsf_fde_offset(path, pc - lo + off)
                return names.get(pc - into) if into is not None else None
        return None

    def describe(self):
        if not self.view:
            lines = ["no region for process %d%s" % (self.pid, " (core file)" if self.core else "")]
            lines += ["  looked in %s" % w for w in self.where]
            lines += ["  %s: %s" % lw for lw in self.looked]
            lines += ["  (name one with: jitsframe-region PATH)"]
            return "\n".join(lines)
        i = self.info
        state = "live" if i.live else ("closed" if i.closed else "post-mortem")
        s = "region %s (process %d, %s%s, %d functions)" % (
            self.path, self.pid, state, ", core file" if self.core else "", i.live_funcs)
        s += "\njitdump %s" % (self.jitdump.path if self.jitdump else
                                "none: frames are named TRACE@0xSTART")
        return s


def _jsf_rt_names(path):
    """The names of a region's runtime area and extension (docs/ABI.md
    1.6, 1.7): each record char[4] tag, u16 version, u16 size; LJFF and
    LJCF (version 1: LuaJIT's builtins, the C functions of Lua modules):
    u64 base, u16 count, u16 0, then count entries s32 address - base, u8
    length, name; LJVM (version 1): the interpreter's code [vm_start,
    vm_end) at 16 and 24. A name of anything but printable ASCII without
    ';', or an address named two ways: left out (as unwind/rtnames.c reads
    it)."""
    try:
        with open(path, "rb") as f:
            h = f.read(4096)
            feat = struct.unpack_from("<I", h, 96)[0] if len(h) == 4096 else 0
            xlen = struct.unpack_from("<I", h, 108)[0] if feat & 2 else 0
            x = f.read(xlen) if xlen <= (1 << 20) else b""
    except OSError:
        return {}
    if len(h) < 4096:
        return {}
    alen = struct.unpack_from("<I", h, 100)[0] if feat & 1 else 0
    if alen > 3072:
        return {}
    got = {}
    for a in (h[1024:1024 + alen], x if len(x) == xlen else b""):
        _jsf_rt_area(a, got)
    return {k: v.pop() for k, v in got.items() if len(v) == 1}


def _jsf_rt_area(a, got):
    """One area's records into got ({address: {names}})."""
    o, alen = 0, len(a)
    while alen - o >= 8:
        tag = a[o:o + 4]
        ver, sz = struct.unpack_from("<HH", a, o + 4)
        if sz < 8 or sz > alen - o:
            break
        r = a[o:o + sz]
        if tag == b"LJVM" and ver == 1 and sz >= 32:
            lo, hi = struct.unpack_from("<QQ", r, 16)
            if lo < hi:
                got.setdefault(lo, set()).add("luajit_interpreter")
        elif tag in (b"LJFF", b"LJCF") and ver == 1 and sz >= 20:
            base, cnt = struct.unpack_from("<QH", r, 8)
            p = 20
            for _ in range(cnt):
                if sz - p < 5 or sz - p - 5 < r[p + 4]:
                    break
                d, nl = struct.unpack_from("<i", r, p)[0], r[p + 4]
                nm = r[p + 5:p + 5 + nl]
                p += 5 + nl
                if nl and all(0x21 <= c <= 0x7e and c != 0x3b for c in nm):
                    got.setdefault((base + d) & _JSF_U64, set()).add(nm.decode())
        o += sz


def _jsf_proc_mappings():
    """[(lo, hi, file offset, path)] of the inferior's file mappings, from
    `info proc mappings` (a live process or a core file's NT_FILE note)."""
    out = []
    try:
        text = gdb.execute("info proc mappings", to_string=True)
    except gdb.error:
        return out
    for line in text.splitlines():
        p = line.split()
        if len(p) >= 5 and p[0].startswith("0x") and p[-1].startswith("/"):
            try:
                out.append((int(p[0], 16), int(p[1], 16), int(p[3], 16), p[-1]))
            except ValueError:
                continue
    return out


_jsf_elf_cache = {}


def _jsf_elf_fdes(path):
    """(PT_LOAD segments [(p_offset, p_filesz, p_vaddr)], the sorted
    initial locations of .eh_frame_hdr's table), or None."""
    if path in _jsf_elf_cache:
        return _jsf_elf_cache[path]
    res = None
    try:
        with open(path, "rb") as f:
            d = f.read()
        if d[:4] == b"\x7fELF" and d[4] == 2 and d[5] == 1:
            phoff, shoff = struct.unpack_from("<QQ", d, 32)
            phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", d, 54)
            loads = []
            for i in range(phnum):
                ptype, _, off, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", d, phoff + i * phentsize)
                if ptype == 1:
                    loads.append((off, filesz, vaddr))
            secs = [struct.unpack_from("<IIQQQQ", d, shoff + i * shentsize) for i in range(shnum)]
            stroff = secs[shstrndx][4]
            for name, _, _, addr, off, size in secs:
                end = d.index(b"\0", stroff + name)
                if d[stroff + name:end] != b".eh_frame_hdr" or size < 12:
                    continue
                hdr = d[off:off + size]
                # version 1; the table: datarel sdata4 (0x3b), count udata4
                if hdr[0] != 1 or hdr[2] != 0x03 or hdr[3] != 0x3b:
                    break
                n = struct.unpack_from("<I", hdr, 8)[0]
                if 12 + 8 * n > size:
                    break
                starts = [addr + struct.unpack_from("<i", hdr, 12 + 8 * i)[0] for i in range(n)]
                res = (loads, starts)
                break
    except (OSError, struct.error, IndexError, ValueError):
        res = None
    _jsf_elf_cache[path] = res
    return res


def _jsf_fde_offset(path, off):
    """For file offset off of path: how far it lies into the function (the
    FDE) that covers it, or None."""
    e = _jsf_elf_fdes(path)
    if not e:
        return None
    loads, starts = e
    va = None
    for p_off, p_filesz, p_vaddr in loads:
        if p_off <= off < p_off + p_filesz:
            va = off - p_off + p_vaddr
            break
    if va is None:
        return None
    k = bisect.bisect_right(starts, va)
    return va - starts[k - 1] if k else None


class _JsfState:
    def __init__(self):
        self.lib, self.lib_why = _jsf_load_lib()
        self.named = None  # jitsframe-region PATH
        self.target = None
        self.key = None
        self.said = set()

    def say_once(self, msg):
        if msg not in self.said:
            self.said.add(msg)
            _jsf_say(msg)

    def reset(self, *_):
        if self.target:
            self.target.close()
        self.target, self.key = None, None

    def current(self):
        """The _JsfTarget of the selected inferior, or None."""
        if self.lib is None:
            self.say_once(self.lib_why + "; trace frames are left to gdb")
            return None
        inf = gdb.selected_inferior()
        if inf is None or inf.pid <= 0:
            return None
        core = _jsf_is_core(inf)
        key = (inf.num, inf.pid, core, self.named)
        if key != self.key:
            self.reset()
            self.target = _JsfTarget(self.lib, inf.pid, core, self.named)
            self.key = key
            t = self.target
            if self.named and t.path != self.named:
                self.say_once("the region %s is not used: %s" % (
                    self.named, "; ".join(w for p, w in t.looked if p == self.named) or "?"))
            for p, why in t.looked:
                if why.startswith("cannot be read"):
                    self.say_once("region %s %s" % (p, why))
        return self.target


def _jsf_is_core(inf):
    try:
        conn = inf.connection
        if conn is not None:
            return conn.type == "core"
    except (AttributeError, RuntimeError):
        pass
    return "core dump" in gdb.execute("info target", to_string=True)


_jsf = _JsfState()


def _jsf_in_file(t, pc):
    """pc is in file-backed code (not JIT code): a sure 'not a trace'."""
    if any(lo <= pc < hi for lo, hi in t.file_maps):
        return True
    return gdb.solib_name(pc) is not None or gdb.block_for_pc(pc) is not None


def _jsf_exact_pc(level_of, newer_type):
    """Whether a frame's pc is where it stands (the innermost frame, or one
    interrupted by a signal) rather than a return address."""
    return level_of == 0 or newer_type == gdb.SIGTRAMP_FRAME


class _JsfFrameId:
    def __init__(self, sp, pc):
        self.sp, self.pc = sp, pc


def _jsf_next_frame_type(level):
    """The type of the frame below (newer than) the one at `level`; these
    frames exist already while the one at `level` is being unwound."""
    try:
        f = gdb.newest_frame()
        for _ in range(level - 1):
            f = f.older()
        return f.type()
    except (gdb.error, AttributeError):
        return None


def _jsf_read64(addr):
    m = gdb.selected_inferior().read_memory(addr & _JSF_U64, 8)
    return int.from_bytes(m.tobytes(), "little")


class _JsfUnwinder(gdb.unwinder.Unwinder):
    def __init__(self):
        super().__init__("jitsframe")

    def __call__(self, pf):
        try:
            return self._unwind(pf)
        except gdb.MemoryError as e:
            _jsf.say_once("cannot read a trace frame's stack: %s" % e)
        except Exception as e:  # never break gdb's own unwinding
            _jsf.say_once("unwinder error: %s: %s" % (type(e).__name__, e))
        return None

    def _unwind(self, pf):
        if pf.architecture().name() != "i386:x86-64":
            return None
        pc = int(pf.read_register("rip")) & _JSF_U64
        t = _jsf.current()
        if t is None:
            return None
        if not t.view:
            if not _jsf_in_file(t, pc):
                _jsf.say_once("no region for process %d: trace frames are left to gdb "
                              "(`jitsframe-region` says where it looked)" % t.pid)
            return None
        level = pf.level()
        hit = None
        if level > 0 and not _jsf_exact_pc(level, _jsf_next_frame_type(level)):
            hit = t.lookup(pc - 1)  # a return address: the call's row
        if hit is None:
            hit = t.lookup(pc)
        if hit is None:
            return None
        start, row = hit
        sp_v = pf.read_register("rsp")
        fp_v = pf.read_register("rbp")
        sp, fp = int(sp_v) & _JSF_U64, int(fp_v) & _JSF_U64
        if row.cfa_base == _JSF_SP:
            base = sp
        elif row.cfa_base == _JSF_FP:
            base = fp
        else:
            return None
        cfa = (base + row.cfa_offset) & _JSF_U64
        # the frame's id: gdb.Values (gdb 13 takes nothing else)
        ui = pf.create_unwind_info(_JsfFrameId(gdb.Value(cfa).cast(sp_v.type),
                                               gdb.Value(start).cast(pf.read_register("rip").type)))
        if row.outermost:
            return ui  # no caller: the pc is not saved, gdb stops here
        if row.ra_rule == _JSF_RA_CFA:
            ra = _jsf_read64(cfa + row.ra_offset)
        elif row.ra_rule == _JSF_RA_DEFAULT:
            ra = _jsf_read64(cfa - 8)
        else:
            return None  # a link register: not on x86-64
        caller_fp = _jsf_read64(cfa + row.fp_offset) if row.has_fp else fp
        rip_t = pf.read_register("rip").type
        ui.add_saved_register("rip", gdb.Value(ra).cast(rip_t))
        ui.add_saved_register("rsp", gdb.Value(cfa).cast(sp_v.type))
        ui.add_saved_register("rbp", gdb.Value(caller_fp).cast(fp_v.type))
        return ui


class _JsfDecorator(FrameDecorator):
    """A trace frame's name (else None: the frame as gdb names it)."""

    def __init__(self, fobj, name):
        super().__init__(fobj)
        self._jsf_name = name

    def function(self):
        if self._jsf_name:
            return self._jsf_name
        fn = super().function()
        if isinstance(fn, int) and self.inferior_frame().name() is None:
            return "??"  # as gdb prints it without frame filters, not ""
        return fn


class _JsfFilter:
    def __init__(self):
        self.name = "jitsframe"
        self.priority = 100
        self.enabled = True

    def filter(self, frames):
        return map(self._wrap, frames)

    @staticmethod
    def _wrap(dec):
        try:
            f = dec.inferior_frame()
            t = _jsf.current()
            if t is None or not t.view:
                return _JsfDecorator(dec, None)
            pc = f.pc()
            newer = f.newer()
            look = pc
            hit = None
            if newer is not None and newer.type() != gdb.SIGTRAMP_FRAME:
                look = pc - 1  # a return address: the call's function
                hit = t.lookup(look)
            if hit is None:
                hit = t.lookup(pc)
            if hit:
                return _JsfDecorator(dec, t.name(hit[0]))
            # code gdb has no symbol for: the region's name for its
            # function (a builtin, the interpreter), if any
            if f.name() is None:
                return _JsfDecorator(dec, t.native_name(look))
            return _JsfDecorator(dec, None)
        except Exception:
            return dec


class _JsfRegionCmd(gdb.Command):
    """Name the jitsframe region of the inferior, or show which one is used.

Usage: jitsframe-region [PATH | -]
PATH: read the rows of trace code from this region file (its producer_pid
must be the inferior's pid); "-": forget it, find the region by the
convention again (docs/ABI.md section 8). Without an argument: print the
region and jitdump the current inferior uses, or where it looked."""

    def __init__(self):
        super().__init__("jitsframe-region", gdb.COMMAND_STACK, gdb.COMPLETE_FILENAME)

    def invoke(self, arg, from_tty):
        arg = arg.strip()
        if arg == "-":
            _jsf.named = None
        elif arg:
            _jsf.named = os.path.abspath(os.path.expanduser(arg))
        if arg:
            _jsf.reset()
            gdb.invalidate_cached_frames()
        t = _jsf.current()
        if t is None:
            _jsf_say("no process (run the program or load a core file)"
                     if _jsf.lib else _jsf.lib_why)
            return
        for line in t.describe().split("\n"):
            _jsf_say(line)


# a new stop, a new process, a new core: look for the region again
gdb.events.stop.connect(_jsf.reset)
gdb.events.exited.connect(_jsf.reset)
gdb.events.new_objfile.connect(_jsf.reset)
if hasattr(gdb.events, "new_inferior"):
    gdb.events.new_inferior.connect(_jsf.reset)
_JsfRegionCmd()
gdb.unwinder.register_unwinder(None, _JsfUnwinder(), replace=True)
gdb.frame_filters["jitsframe"] = _JsfFilter()
