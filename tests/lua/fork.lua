-- fork() after start: the child publishes into its own region (PATH-PID),
-- with the traces it inherited; the parent's region is untouched.
local ffi = require("ffi")
ffi.cdef [[int fork(void); int waitpid(int pid, int *status, int options);]]
local jsf = require("jitsframe")
local region, cli = arg[1], arg[2]
assert(jsf.start{region = region, replace = true, quiet = true})
local function work(k)
  local x = 0
  for i = 1, 300000 do if i % k == 0 then x = x + i else x = x - 1 end end
  return x
end
work(3)
local pid = ffi.C.fork()
if pid == 0 then
  local t = {} -- new code: the child compiles traces of its own
  for i = 1, 300000 do t[i % 100 + 1] = (t[i % 100 + 1] or 0) + i end
  os.exit(0)
end
ffi.C.waitpid(pid, nil, 0)
local function state(path)
  local h = io.popen(cli .. " region dump " .. path .. " --json")
  local s = h:read("*a")
  h:close()
  return s:match('"state":"([%w ]+)"'), tonumber(s:match('"live_functions":(%d+)'))
end
local ps, pn = state(region)
local cs, cn = state(region .. "-" .. pid)
print(ps, pn, cs, cn)
