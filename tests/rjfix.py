"""The RaptorJIT fixtures' ground truth, read independently of jitsframe
(../shared/raptorjit: README.md, WORKLOAD.traces.tsv, the auditlogs'
msgpack), for the tests' embedded checks: `import rjfix` with tests/ on
sys.path."""
import re
import struct


def tsv(path):
    """WORKLOAD.traces.tsv: one dict per row, keyed by the header."""
    rows = [l.split("\t") for l in open(path).read().split("\n") if l]
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def readme_aborts(readme, log):
    """README.md's table row of LOG: its trace_abort column, "N (NAME k,
    ...)", as (N, {NAME: k})."""
    for l in open(readme):
        c = [x.strip() for x in l.split("|")]
        if len(c) > 7 and c[1] == log + ".auditlog":
            m = re.match(r"(\d+)\s*(?:\((.*)\))?", c[7])
            total, names = int(m.group(1)), {}
            for part in (m.group(2) or "").split(","):
                p = part.split()
                if len(p) == 2:
                    names[p[0]] = int(p[1])
                elif len(p) == 1 and total:  # "10 (LINNER)"
                    names[p[0]] = total
            return total, names
    raise SystemExit("no README row for " + log)


def mp(b, o):
    """One msgpack value of the kinds RaptorJIT's auditlog writes (fixmap,
    str16, uint64, bin32) at offset o of b: (value, next offset)."""
    t = b[o]
    if 0x80 <= t <= 0x8f:
        d = {}
        o += 1
        for _ in range(t & 15):
            k, o = mp(b, o)
            v, o = mp(b, o)
            d[k] = v
        return d, o
    if t == 0xda:
        n = struct.unpack_from(">H", b, o + 1)[0]
        return b[o + 3:o + 3 + n].decode("latin1"), o + 3 + n
    if t == 0xcf:
        return struct.unpack_from(">Q", b, o + 1)[0], o + 9
    if t == 0xc6:
        n = struct.unpack_from(">I", b, o + 1)[0]
        return b[o + 5:o + 5 + n], o + 5 + n
    raise ValueError(o)
