-- wl_timed.lua WORKLOAD [ARGS...]: runs WORKLOAD (a Lua file, with ARGS as
-- its arg), then writes "wall_s cpu_s" to $JSFB_OUT: wall from $JSFB_T0
-- (CLOCK_MONOTONIC ns, set by bench/wlrun just before its exec) to the
-- end, CPU from CLOCK_PROCESS_CPUTIME_ID (this process's threads, with
-- the sampling interrupts that ran in them). For bench/sampler_bench.sh.
local ffi = require("ffi")
ffi.cdef [[
struct jsfb_ts { long sec, nsec; };
int clock_gettime(int clk, struct jsfb_ts *ts);
]]
local w = assert(arg[1], "usage: wl_timed.lua WORKLOAD [ARGS...]")
local a = {}
for i = 2, #arg do a[i - 1] = arg[i] end
a[0] = w
arg = a
assert(loadfile(w))(unpack(a))
local ts = ffi.new("struct jsfb_ts")
local function now(clk)
  ffi.C.clock_gettime(clk, ts)
  return tonumber(ts.sec) + tonumber(ts.nsec) * 1e-9
end
local cpu, mono = now(2), now(1) -- CLOCK_PROCESS_CPUTIME_ID, CLOCK_MONOTONIC
local t0 = tonumber(os.getenv("JSFB_T0") or "")
local out = os.getenv("JSFB_OUT")
if out then
  local f = assert(io.open(out, "w"))
  f:write(string.format("%.6f %.6f\n", t0 and mono - t0 * 1e-9 or -1, cpu))
  f:close()
end
