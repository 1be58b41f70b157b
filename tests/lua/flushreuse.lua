-- t_report.sh (time): the same machine-code addresses hold two different
-- traces, one before and one after jit.flush() (run with
-- build/tests/libmcreuse.so preloaded so that the new area comes back at
-- the old address). Prints the CLOCK_MONOTONIC time of the flush, which
-- separates the two phases: before it only loop A runs, after it only
-- loop B.
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } jsf_timespec;
int clock_gettime(int clk, jsf_timespec *ts);
]]
local function now()
  local ts = ffi.new("jsf_timespec")
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) * 1e9 + tonumber(ts.tv_nsec)
end
local n = tonumber(arg and arg[1]) or 3e8
local function loop_a(m)
  local x = 0
  for i = 1, m do x = x + i % 7 end -- LOOP_A
  return x
end
local function loop_b(m)
  local y = 0
  for i = 1, m do y = y + i % 5 end -- LOOP_B
  return y
end
local a = loop_a(n)
jit.flush()
local t = now()
io.write(string.format("FLUSH %.0f\n", t))
local b = loop_b(n)
io.write(string.format("A %d B %d\n", a, b))
