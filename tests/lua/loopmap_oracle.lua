-- Each trace's loop as its source map marks it (docs/ABI.md 1.5: map flag
-- LOOPS, range flag LOOP from the loop offset on) against LuaJIT's own
-- answer, jit.util.tracemc's loop offset (tests/t_luamap.sh). Usage, with
-- the module started on REGION (jitsframe run --region REGION):
--   luajit loopmap_oracle.lua LIBJITSFRAME REGION on|off WORKLOAD [args...]
-- At each trace's stop (this handler runs after the module's: the trace
-- is published), the map is read back from the region through
-- libjitsframe at the trace's first byte, the bytes before and at its
-- loop offset and its last byte: LOOPS set; LOOP set at and after the
-- loop offset, clear before it and everywhere in a trace without a loop.
-- "off" (no JITSFRAME_LUAMAP): no frames anywhere (depth 0, EXACT clear):
-- the map of the loop alone. Prints one summary line; exit 1 on any
-- mismatch or a published trace without a map.
local jutil = require("jit.util")
local bit = require("bit")

local libpath, region, mode, workload = arg[1], arg[2], arg[3], arg[4]
assert(mode == "on" or mode == "off", "mode: on or off")
local O = dofile((arg[0]:match("(.*/)") or "./") .. "oracle.lua")
local sv = O.view(libpath, region)
local EXACT, LOOP, LOOPS = 1, 2, 4

local st = {traces = 0, loops = 0, checks = 0, unpublished = 0, bad = 0}
local bad = O.bad_counter(st)

jit.attach(function(what, tr)
  if what ~= "stop" then return end
  local mc, addr, loop = jutil.tracemc(tr)
  if not mc or not addr then return end
  loop = loop or 0
  local size = #mc
  st.traces = st.traces + 1
  if loop > 0 then st.loops = st.loops + 1 end
  local offs = {0, size - 1}
  if loop > 0 then offs[#offs + 1] = loop - 1; offs[#offs + 1] = loop end
  for _, off in ipairs(offs) do
    local n = sv.map(addr + off)
    if n == -2 and off == 0 then -- ENOENT: a trace the module skipped
      st.unpublished = st.unpublished + 1
      return
    elseif n == -61 then -- ENODATA
      bad("trace %d: published without a map", tr)
      return
    elseif n < 0 then
      bad("trace %d +%d: no map (%d), though its start has one", tr, off, n)
    elseif sv.fstart[0] ~= addr then
      bad("trace %d: the function at +%d starts at 0x%x, not 0x%x", tr, off,
        tonumber(sv.fstart[0]), tonumber(addr))
    else
      local d = sv.decode(n, off)
      local fl = sv.flags[0]
      local want = loop > 0 and off >= loop
      st.checks = st.checks + 1
      if d < 0 then
        bad("trace %d +%d: map does not decode (%d)", tr, off, d)
      elseif bit.band(fl, LOOPS) == 0 then
        bad("trace %d +%d: map without LOOPS", tr, off)
      elseif (bit.band(fl, LOOP) ~= 0) ~= want then
        bad("trace %d +%d: LOOP %s, tracemc's loop offset %d (size %d)", tr, off,
          want and "clear" or "set", loop, size)
      elseif mode == "off" and (d ~= 0 or bit.band(fl, EXACT) ~= 0) then
        bad("trace %d +%d: %d frames (exact %s) with the Lua frames off", tr, off, d,
          tostring(bit.band(fl, EXACT) ~= 0))
      end
    end
  end
end, "trace")

arg = {[0] = workload, select(5, unpack(arg))}
dofile(workload)
print(string.format("loopmap %s: %d traces (%d with a loop), %d offsets checked, " ..
  "%d not published, %d mismatches", mode, st.traces, st.loops, st.checks,
  st.unpublished, st.bad))
os.exit(st.bad == 0 and st.checks > 0 and 0 or 1)
