-- A user's handlers for "trace", "record" and "texit", attached before or
-- after jitsframe starts a full auditlog (arg[2]); counts events per kind
-- into arg[1]. Runs the workload arg[3].
local out, when, log = arg[1], arg[2], arg[4]
local counts = {}
local function h(what) counts[what] = (counts[what] or 0) + 1 end
local function r() counts.record = (counts.record or 0) + 1 end
local function x() counts.texit = (counts.texit or 0) + 1 end
local function start()
  local jsf = require("jitsframe")
  assert(jsf.start{quiet = true, auditlog = log, level = "full",
                   region = log and log .. ".region", replace = true})
end
if when == "after" then start() end
jit.attach(h, "trace")
jit.attach(r, "record")
jit.attach(x, "texit")
if when == "before" then start() end
dofile(arg[3])
local f = assert(io.open(out, "w"))
local keys = {}
for k in pairs(counts) do keys[#keys + 1] = k end
table.sort(keys)
for _, k in ipairs(keys) do f:write(k, " ", counts[k], "\n") end
f:close()
