// SPDX-License-Identifier: MIT
// Decode a profile.pb.gz with an independent reader (the npm pprof-format
// package, installed by the build into build/viewer) and print it in the
// canonical text form that tests/t_profile.c writes from the samples it
// added (X.expect-pprof):
//   T <type> <unit>                 each sample_type
//   P <type> <unit> <period>        period_type and period
//   S <comm> <v0> <v1> | <frame>... one line per distinct stack, sorted,
//                                   identical stacks summed
// a frame (leaf first): name,file,line,addr,mapping,build_id,start,limit,
// offset; strings hex-encoded, numbers hex; "-" fields when the location has
// no mapping. Structural errors (dangling ids, string_table[0] not "",
// locations without exactly one line) are printed as "ERROR ..." lines.
// Usage: node tests/pprof_dump.mjs FILE.pb.gz [VIEWER_DIR]
//        node tests/pprof_dump.mjs --mappings FILE.pb.gz [VIEWER_DIR]
// --mappings prints the mappings instead, in their order (pprof shows the
// first as the main binary), one a line: "M <id> <build_id or -> <filename>".
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { createRequire } from 'node:module';
import path from 'node:path';

const args = process.argv.slice(2);
const mappingsOnly = args[0] === '--mappings';
if (mappingsOnly) args.shift();
const [file, viewer = 'build/viewer'] = args;
const require = createRequire(path.resolve(viewer, 'package.json'));
const { Profile } = require('pprof-format');

const p = Profile.decode(gunzipSync(readFileSync(file)));
const strs = p.stringTable.strings;
if (mappingsOnly) {
  for (const m of p.mapping)
    process.stdout.write(`M ${BigInt(m.id)} ${strs[Number(m.buildId)] || '-'} ${strs[Number(m.filename)] ?? ''}\n`);
  process.exit(0);
}
const out = [];
const err = (m) => out.push('ERROR ' + m);
const str = (i) => {
  const n = Number(i);
  if (!(n >= 0 && n < strs.length)) err(`string index ${i} out of range`);
  return strs[n] ?? '';
};
const hex = (s) => Buffer.from(s, 'utf8').toString('hex');
const num = (v) => BigInt(v).toString(16);

if (strs[0] !== '') err('string_table[0] is not ""');
for (const t of p.sampleType) out.push(`T ${str(t.type)} ${str(t.unit)}`);
if (p.periodType)
  out.push(`P ${str(p.periodType.type)} ${str(p.periodType.unit)} ${BigInt(p.period)}`);

const byId = (list, what) => {
  const m = new Map();
  for (const x of list) {
    const id = BigInt(x.id);
    if (id === 0n) err(`${what} with id 0`);
    if (m.has(id)) err(`duplicate ${what} id ${id}`);
    m.set(id, x);
  }
  return m;
};
const maps = byId(p.mapping, 'mapping');
const locs = byId(p.location, 'location');
const funcs = byId(p.function, 'function');

const frame = (lid) => {
  const l = locs.get(BigInt(lid));
  if (!l) { err(`sample refers to missing location ${lid}`); return '?'; }
  if (l.line.length !== 1) err(`location ${lid} has ${l.line.length} lines`);
  const ln = l.line[0] ?? { functionId: 0, line: 0 };
  const f = funcs.get(BigInt(ln.functionId));
  if (!f) err(`location ${lid} refers to missing function ${ln.functionId}`);
  let m = '-,-,-,-,-';
  if (BigInt(l.mappingId) !== 0n) {
    const mp = maps.get(BigInt(l.mappingId));
    if (!mp) err(`location ${lid} refers to missing mapping ${l.mappingId}`);
    else m = [hex(str(mp.filename)), hex(str(mp.buildId)), num(mp.memoryStart),
      num(mp.memoryLimit), num(mp.fileOffset)].join(',');
  }
  return [hex(f ? str(f.name) : ''), hex(f ? str(f.filename) : ''),
    num(ln.line), num(l.address), m].join(',');
};

const agg = new Map();
for (const s of p.sample) {
  let comm = '';
  for (const lb of s.label) if (str(lb.key) === 'comm') comm = str(lb.str);
  if (s.value.length !== p.sampleType.length) err('sample with wrong value count');
  const key = `${hex(comm)}|${s.locationId.map(frame).join(' ')}`;
  const v = agg.get(key) ?? [0n, 0n];
  agg.set(key, [v[0] + BigInt(s.value[0]), v[1] + BigInt(s.value[1])]);
}
const lines = [];
for (const [k, v] of agg) {
  const [comm, frames] = k.split('|');
  lines.push(`S ${comm} ${v[0]} ${v[1]} |${frames ? ' ' + frames : ''}`);
}
// the same order as the C side's strcmp over "S comm |frames" keys
const key = (l) => { const a = l.split(' '); return Buffer.from(`S ${a[1]} ${a.slice(4).join(' ')}`); };
lines.sort((a, b) => Buffer.compare(key(a), key(b)));
process.stdout.write(out.concat(lines).join('\n') + '\n');
