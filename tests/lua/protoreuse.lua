-- tests/t_protoreuse.sh: protoreuse.lua [ROUNDS]. Each round loads the
-- same code as a chunk of its own name (phase1, phase2, ...), runs it in
-- the interpreter for a quarter of a second, drops it and collects it, so
-- that the next round's prototype, of the same size, is likely put where
-- the last one was freed. Prints each round's window on CLOCK_MONOTONIC
-- (the clock of the samples' times): "PHASE name begin end", taken before
-- the chunk's function is entered and after it returned, the ground truth.
jit.off()
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } jsf_pr_ts;
int clock_gettime(int clk, jsf_pr_ts *ts);
]]
local ts = ffi.new("jsf_pr_ts")
local function now()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1e9 + tonumber(ts.tv_nsec)
end
local code = [[
local t0, secs, now = ...
local s = 0
while now() - t0 < secs * 1e9 do
  for i = 1, 10000 do s = s + i % 7 end
end
return s
]]
for r = 1, tonumber(arg and arg[1]) or 6 do
  local name = "phase" .. r
  local f = assert(loadstring(code, "=" .. name))
  local t0 = now()
  f(t0, 0.25, now)
  local t1 = now()
  print(string.format("PHASE %s %.0f %.0f", name, t0, t1))
  f = nil
  collectgarbage()
  collectgarbage()
end
