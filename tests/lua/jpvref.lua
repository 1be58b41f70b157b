-- jpvref: LuaJIT's own VM-state profiler as `luajit -jp=vri1` runs it
-- (jit.profile, interval 1 ms: "i1"; -jp=v keys each callback's samples
-- by its vmmode), with every callback logged: `luajit -ljpvref W ARGS`
-- writes to $JPVREF_OUT one line per callback, "CLOCK_MONOTONIC-ns
-- samples vmmode" (N compiled, I interpreted, C, G, J as LuaJIT's
-- profiler names them), at exit. A callback with samples > 1 merged
-- ticks whose states LuaJIT's profiler did not look at: it charges them
-- all the state of the first (lj_profile.c: the state is read when the
-- hook is set, and the hook runs at the VM's next profile check).
-- $JPVREF_TICK_US: also send the process SIGPROF every so many µs
-- (tests/lua/jptick.lua: LuaJIT's profiler with a finer timer).
local ffi = require("ffi")
local profile = require("jit.profile")
local jptick = require("jptick")
ffi.cdef [[
struct jpvref_ts { long sec, nsec; };
int clock_gettime(int, struct jpvref_ts *);
]]
local ts = ffi.new("struct jpvref_ts")
local MAX = 1048576
local t = ffi.new("int64_t[?]", MAX)
local n = ffi.new("int32_t[?]", MAX)
local m = ffi.new("uint8_t[?]", MAX)
local k = 0
jptick.ignore()
profile.start("i1", function(_, samples, vmmode)
  if k < MAX then
    ffi.C.clock_gettime(1, ts)
    t[k] = ts.sec * 1000000000LL + ts.nsec
    n[k], m[k] = samples, vmmode:byte()
    k = k + 1
  end
end)
jptick.start(os.getenv("JPVREF_TICK_US"))
local out = assert(os.getenv("JPVREF_OUT"), "JPVREF_OUT not set")
-- at exit: a userdata finalizer runs when the main chunk's state closes
local sentinel = newproxy(true)
getmetatable(sentinel).__gc = function()
  jptick.stop()
  profile.stop()
  local f = assert(io.open(out, "w"))
  for i = 0, k - 1 do
    f:write(tostring(t[i]):gsub("LL$", ""), " ", n[i], " ", string.char(m[i]), "\n")
  end
  f:close()
end
_G.__jpvref_sentinel = sentinel
