-- tests/t_history.sh: history.lua REGION|- HISTORY|- WORKLOAD SCALE
-- Runs WORKLOAD (a flushing one: bench/workloads/flushstorm.lua) with the
-- module started on REGION with start{region_history = HISTORY} ("-": no
-- start of its own, the one `jitsframe run` made; "-" history: the
-- default), counting every trace the VM compiles with its own trace event
-- (jit.attach), the ground truth. Prints
--   TRACES <VM's count> <history> <history_dropped> <region_bytes>
-- (the last three from jitsframe.stats()).
local region, hist, workload, scale = arg[1], arg[2], arg[3], arg[4]
local jsf = require("jitsframe")
if region ~= "-" then
  local ok, p = jsf.start{region = region, replace = true, quiet = true,
    region_history = hist ~= "-" and tonumber(hist) or nil}
  assert(ok, p)
end
local n = 0
jit.attach(function(what) if what == "stop" then n = n + 1 end end, "trace")
arg = {[0] = workload, scale}
dofile(workload)
local s = jsf.stats()
print(string.format("TRACES %d %d %d %d", n, s.history or -1,
  s.history_dropped or -1, s.region_bytes or -1))
