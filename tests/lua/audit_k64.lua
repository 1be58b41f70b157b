-- audit_k64.lua LOG REGION LEVEL: a small deterministic program whose
-- traces hold every kind of IR constant (KNUM, KINT64, KGC strings,
-- tables, functions, KPTR/KKPTR, KNULL, KSLOT) and some aborted attempts,
-- run with the auditlog at LEVEL; then every stop and abort record's `k`
-- is printed, one line per constant slot ("ev tr slot type"), in record
-- order (tests/t_audit_k64.sh compares two such runs).
local log, region, level = arg[1], arg[2], arg[3]
local jsf = require("jitsframe")
assert(jsf.start { region = region, auditlog = log, level = level, replace = true, quiet = true })
local ffi = require("ffi")
local T = { 1, 2, 3, x = 4 }
local function g(a) return a + 1 end
local function work(n)
  local s, z, p = 0.5, 0LL, nil
  for i = 1, n do
    s = s + i * 1.25 + T.x + #("k" .. (i % 7)) + g(i) -- KNUM, KGC, KSLOT
    z = z + 0x123456789LL                                -- KINT64
    if T[i] == p then s = s - 0.75 end                   -- KNULL/KPRI
    local t = { i, 2.5 }                                 -- TNEW/TDUP
    s = s + t[2]
  end
  return s, z
end
for r = 1, 30 do work(200 + r) end
-- aborted attempts: a NYI inside a hot loop
local function nyi(n)
  local s = 0.25
  for i = 1, n do s = s + 1.5; local f = function() return i end; s = s + f() end
  return s
end
for r = 1, 20 do nyi(150) end
jsf.stop()
local out = {}
for rec in jsf.audit_records(log) do
  if (rec.ev == "stop" or rec.ev == "abort") and type(rec.k) == "table" then
    local ks = {}
    for slot, v in pairs(rec.k) do ks[#ks + 1] = slot end
    table.sort(ks)
    for _, slot in ipairs(ks) do
      local v = rec.k[slot]
      out[#out + 1] = ("%s %s %d %s"):format(rec.ev, tostring(rec.tr), slot, tostring(v[2]))
    end
  end
end
io.write(table.concat(out, "\n"), "\n")
