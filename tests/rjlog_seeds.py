#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of tests/fuzz_rjlog.c: small synthetic logs in the
form of RaptorJIT's auditlog (msgpack fixmaps of str16 keys and str16 /
uint64 / bin32 values), none holding any byte of a real RaptorJIT log.

The DWARF blob of the full seeds is compiled here, by gcc -g3 -gdwarf-4
-gsplit-dwarf, from a few structs written for this purpose that carry the
member names the reader needs (not RaptorJIT's layout).

usage: tests/rjlog_seeds.py OUTDIR
"""
import os, struct, subprocess, sys, tempfile

SRC = r'''
typedef unsigned long uint64_t;
typedef unsigned int uint32_t;
typedef unsigned short uint16_t;
typedef unsigned char uint8_t;
#define CFRAME_SIZE (12*8)
#define CFRAME_SIZE_JIT (CFRAME_SIZE + 16)
#define TWICE(x) ((x) * 2)
typedef struct GCtrace {
  uint64_t nextgc;
  uint32_t szmcode;
  uint64_t mcode;
  uint32_t mcloop;
  uint16_t spadjust, traceno, link, root, parent;
  uint32_t exitno;
  uint8_t linktype;
  union { uint32_t u; float f; };
} GCtrace;
typedef struct jit_State { GCtrace cur; uint64_t pad[4]; } jit_State;
'''

def s16(s):
    b = s.encode() if isinstance(s, str) else s
    return b'\xda' + struct.pack('>H', len(b)) + b

def u64(v):
    return b'\xcf' + struct.pack('>Q', v)

def b32(b):
    return b'\xc6' + struct.pack('>I', len(b)) + b

def rec(*kv):
    out = bytes([0x80 | (len(kv) // 2)])
    for i in range(0, len(kv), 2):
        out += s16(kv[i]) + kv[i + 1]
    return out

def memory(hint, addr, data):
    return rec('type', s16('memory'), 'hint', s16(hint), 'address', u64(addr),
               'data', b32(data))

def event(ns, name, **kw):
    kv = ['nanotime', u64(ns), 'type', s16('event'), 'event', s16(name)]
    for k, v in kw.items():
        kv += [k, u64(v)]
    return rec(*kv)

def gctrace(mcode, szmcode, traceno, parent=0, spadjust=16):
    # the layout of SRC's GCtrace (x86-64 gcc): offsets by hand
    b = bytearray(56)
    struct.pack_into('<I', b, 8, szmcode)
    struct.pack_into('<Q', b, 16, mcode)
    struct.pack_into('<I', b, 24, szmcode // 2)
    struct.pack_into('<HHHHH', b, 28, spadjust, traceno, traceno, traceno,
                     parent)
    struct.pack_into('<I', b, 40, 0)
    b[44] = 2
    return bytes(b)

def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        c = os.path.join(d, 'lj_dwarf.c')
        open(c, 'w').write(SRC)
        subprocess.check_call(['gcc', '-g3', '-gdwarf-4', '-gz=none',
                               '-fno-eliminate-unused-debug-types',
                               '-gsplit-dwarf', '-fdebug-prefix-map=%s=/src' % d,
                               '-c', 'lj_dwarf.c'], cwd=d)
        dwo = open(os.path.join(d, 'lj_dwarf.dwo'), 'rb').read()
    head = memory('lj_ir_mode', 0x1000, bytes(range(16))) + \
        rec('type', s16('blob'), 'name', s16('lj_dwarf.dwo'), 'data', b32(dwo))
    js, mc = 0x7f0000001000, 0x5500000000
    body = b''
    ns = 1000
    for no in (1, 2):
        code = bytes([0x90] * (8 * no)) + b'\xc3'
        g = 0x7f0000100000 + no * 0x100
        body += memory('MCode[]', mc, code)
        body += memory('GCtrace', g, gctrace(mc, len(code), no, no - 1))
        body += memory('jit_State', js, bytes(88))
        body += event(ns, 'trace_stop', GCtrace=g, jit_State=js)
        mc += 0x100
        ns += 10
    body += memory('jit_State', js, bytes(88))
    body += event(ns, 'trace_flushall', jit_State=js)
    body += rec('nanotime', u64(ns + 1), 'type', s16('event'), 'event',
                s16('lex'), 'chunkname', s16('@x.lua'), 'source', b32(b'x=1'))
    full = head + body
    seeds = {
        'full': full,
        'cut': full[:len(full) - 5],
        'nodwarf': memory('lj_ir_mode', 0x1000, b'\0' * 4) + body[:300],
        'events': event(1, 'new_prototype', GCproto=7) +
                  event(2, 'trace_flushall', jit_State=9),
        'badform': event(1, 'x') + b'\x81\xa4type',
    }
    for k, v in seeds.items():
        open(os.path.join(out, 'seed-' + k), 'wb').write(v)

main()
