-- The VM-state profile's workload (tests/t_vmstates.sh): two phases, each
-- one hot loop (one trace), timed by the script itself in thread CPU time
-- (CLOCK_THREAD_CPUTIME_ID: what cpu-clock samples see).
--  * ffiloop (line FFILINE): each iteration calls C through the FFI
--    (memset of a 4 MiB buffer, touched beforehand: no page faults), the
--    time inside those calls measured around each one;
--  * arith (line ARITHLINE): arithmetic only, all of its time in its loop.
-- Prints "SHARE ffi F" (F: the FFI calls' share of the ffiloop phase's
-- CPU time), "PHASE name seconds", the lines of both loops and "CPU S"
-- (the thread's CPU time from its start: what the profile's samples cover).
-- Usage: luajit vmstates.lua [seconds per phase]
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } vms_timespec;
int clock_gettime(int clk, vms_timespec *ts);
void *memset(void *s, int c, size_t n);
]]
local C = ffi.C
local CLOCK_THREAD_CPUTIME_ID = 3
local per = tonumber(arg and arg[1]) or 1.5
local ts = ffi.new("vms_timespec")
local function now()
  C.clock_gettime(CLOCK_THREAD_CPUTIME_ID, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
local SZ = 4 * 1024 * 1024
local buf = ffi.new("uint8_t[?]", SZ)
C.memset(buf, 1, SZ)

-- calibrate: iterations of each loop for about `per` seconds
-- Each iteration's memset (1-4 MiB) and arithmetic (10,000-30,000 steps)
-- vary in length, pseudo-randomly: with fixed ones an iteration took some
-- 240 us against the sampler's 500 us period, and the two could lock in
-- phase for a run (CI: the ffi share 3.1 and 3.7 points off in 2 of 7
-- runs, 0.3-1.6 in others).
local function ffiloop(n, x)
  local inffi = 0
  for i = 1, n do
    local h = (i * 2654435761) % 4294967296
    local len = SZ / 4 + (h % 3145728)
    local t0 = now()
    C.memset(buf, i % 251, len) -- FFILINE
    inffi = inffi + (now() - t0)
    for k = 1, 10000 + math.floor(h / 65536) % 20000 do x = (x * 1.000001 + k) % 1e9 end
  end
  return inffi, x
end
local function arith(n, x)
  for i = 1, n do
    x = (x * 1.0000001 + i) % 1e9 -- ARITHLINE
  end
  return x
end

local t0 = now()
ffiloop(20, 1)
local t1 = now()
local nf = math.max(20, math.floor(20 * per / (t1 - t0)))
t0 = now()
arith(1e6, 1)
t1 = now()
local na = math.max(1e6, math.floor(1e6 * per / (t1 - t0)))

local a0 = now()
local inffi, x = ffiloop(nf, 1)
local a1 = now()
local y = arith(na, 2)
local a2 = now()
print(string.format("PHASE ffiloop %.6f", a1 - a0))
print(string.format("PHASE arith %.6f", a2 - a1))
print(string.format("SHARE ffi %.6f", inffi / (a1 - a0)))
local src = debug.getinfo(1, "S").source:gsub("^@", "")
local n = 0
for l in io.lines(src) do
  n = n + 1
  if l:find("-- FFI" .. "LINE", 1, true) then print("LINE ffi " .. n) end
  if l:find("-- ARITH" .. "LINE", 1, true) then print("LINE arith " .. n) end
end
print(string.format("CPU %.6f", now()))
print("checksum", x, y)
