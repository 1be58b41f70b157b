-- vm_run.lua: one timed run of a workload for vm_bench.lua.
--   luajit vm_run.lua OUT plain|module|diag|jitdump REGION WORKLOAD [scale]
-- module: jitsframe is started on REGION first; then vmtime wraps the
-- trace-event handler (jitsframe's dispatcher, or a no-op in a plain run),
-- the workload runs (its output goes to stdout as usual), and the timings
-- and jitsframe.stats() are written to OUT as a Lua table constructor.
-- diag: like module, and after each "stop" (outside the timed call) looks
-- at stats() to count the reasons of skipped traces. That allocates, and
-- the garbage would be collected inside later timed calls, so the timings
-- of a diag run are not used.
-- jitdump: like module, with what `jitsframe record` turns on: the jitdump
-- sink (REGION.jd/jit-PID.dump) and the Lua-frame maps (luamap).
local out, mode, region, wl = arg[1], arg[2], arg[3], arg[4]
assert(out and region and wl and (mode == "plain" or mode == "module" or mode == "diag" or
  mode == "jitdump"), "usage: vm_run.lua OUT plain|module|diag|jitdump REGION WORKLOAD [scale]")
local vt = require("vmtime")

local jsf, post
local skips, nskipped = {}, 0
if mode ~= "plain" then
  jsf = require("jitsframe")
  local jd
  if mode == "jitdump" then
    jd = region .. ".jd"
    os.execute("mkdir -p '" .. jd .. "'")
  end
  -- jitdump: what `jitsframe record -- CMD` turns on, the jitdump sink
  -- and the Lua-frame maps
  assert(jsf.start { region = region, replace = true, jitdump = jd, luamap = jd ~= nil })
end
if mode == "diag" then
  post = function(what)
    if what ~= "stop" then return end
    local st = jsf.stats()
    if st.skipped > nskipped then
      nskipped = st.skipped
      local why = (st.last_skip or "?"):gsub("^trace %d+: ", "")
      skips[why] = (skips[why] or 0) + 1
    end
  end
end
local wrapped = vt.wrap(post)
assert(wrapped == (jsf and "handler" or "noop"), "unexpected handler: " .. wrapped)

local f = assert(loadfile(wl))
local scale = arg[5]
arg = { [0] = wl, scale }
local t0 = vt.now()
f(scale)
local wall = vt.now() - t0

local r = vt.results()
r.wall_ns = wall
if jsf then
  r.stats = jsf.stats()
  if mode == "diag" then r.skips = skips end
end

local function ser(v, ind)
  if type(v) == "table" then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local b = { "{\n" }
    for _, k in ipairs(keys) do
      b[#b + 1] = ("%s  [%q] = %s,\n"):format(ind, tostring(k), ser(v[k], ind .. "  "))
    end
    b[#b + 1] = ind .. "}"
    return table.concat(b)
  elseif type(v) == "string" then
    return ("%q"):format(v)
  else
    return tostring(v)
  end
end
local fh = assert(io.open(out, "w"))
fh:write("return ", ser(r, ""), "\n")
fh:close()
