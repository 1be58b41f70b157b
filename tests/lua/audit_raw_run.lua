-- audit_raw_run.lua OUT REGION LOG WORKLOAD SCALE: run WORKLOAD with the
-- auditlog on (default level) and write the auditlog's raw-reader figures
-- to OUT, one "key value" per line (tests/t_audit_raw.sh).
local out, region, log, wl, scale = arg[1], arg[2], arg[3], arg[4], arg[5]
local jsf = require("jitsframe")
assert(jsf.start { region = region, auditlog = log, replace = true, quiet = true })
local f = assert(loadfile(wl))
arg = { [0] = wl, scale }
f(scale)
local s = jsf.stats()
local a = s.auditlog
local fh = assert(io.open(out, "w"))
for _, k in ipairs { "raw", "raw_traces", "raw_checked", "raw_strings", "raw_off", "dropped" } do
  fh:write(k, " ", tostring(a[k]), "\n")
end
fh:write("stops ", tostring(s.traces), "\n")
fh:close()
