-- Logs forever (new traces all the time) and acknowledges each trace stop
-- on stdout from a trace handler attached after jitsframe's (so called
-- after jitsframe wrote the stop record). t_audit.sh SIGKILLs it.
local jsf = require("jitsframe")
assert(jsf.start{quiet = true, region = arg[1] .. ".region", replace = true,
                 auditlog = arg[1], level = arg[2] or "default"})
jit.attach(function(what, tr)
  if what == "stop" then io.stdout:write(tr, "\n") io.stdout:flush() end
end, "trace")
local i = 0
while true do
  i = i + 1
  local f = loadstring("local s = 0 for j = 1, 300 do s = s + j * " .. i ..
                       " end return s")
  f()
end
