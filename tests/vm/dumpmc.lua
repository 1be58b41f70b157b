-- dumpmc.lua OUTDIR SCRIPT [ARGS...]: run SCRIPT and write the machine code
-- of every trace it compiles to OUTDIR/<n>-<k>.bin (k counts traces that
-- reused the number n), for tests/t_x86len.sh.
local out, script = arg[1], arg[2]
local util = require("jit.util")
local seen = {}
jit.attach(function(what, tr)
  if what ~= "stop" then return end
  local mc = util.tracemc(tr)
  if not mc then return end
  seen[tr] = (seen[tr] or 0) + 1
  local f = assert(io.open(("%s/%d-%d.bin"):format(out, tr, seen[tr]), "wb"))
  f:write(mc)
  f:close()
end, "trace")
local a = {}
for i = 3, #arg do a[i - 2] = arg[i] end
_G.arg = a
a[0] = script
dofile(script)
