-- luacheck.lua: a real trace-churn program for the benches (not one of
-- bench/workloads/, the set the tests run: see its README). Debian's
-- luacheck (package lua-check) checks the Lua files Debian ships under
-- /usr/share/lua and LuaJIT's own jit/*.lua: on Debian's luajit some
-- 23,000 traces and 18,000 aborted attempts in about 1.2 s, LuaJIT
-- flushing its trace cache on its own (maxtrace) some 50 times. `scale`
-- multiplies the number of files checked (the sorted list, repeated).
-- Prints "luacheck checksum FILES WARNINGS ERRORS", or, without
-- luacheck, "luacheck missing" (the benches skip it).
local ok, luacheck = pcall(require, "luacheck")
if not ok then
  print("luacheck missing")
  return
end
local scale = tonumber(arg and arg[1]) or 1
local p = assert(io.popen("find /usr/share/lua /usr/share/luajit-2.1.0-beta3 " ..
  "-name '*.lua' 2>/dev/null | LC_ALL=C sort"))
local files = {}
for l in p:lines() do files[#files + 1] = l end
p:close()
assert(#files > 0, "no Lua files found")
local srcs = {}
for i = 1, math.max(1, math.floor(#files * scale + 0.5)) do
  local h = assert(io.open(files[(i - 1) % #files + 1], "rb"))
  srcs[i] = h:read("*a")
  h:close()
end
local rep = luacheck.check_strings(srcs)
print("luacheck checksum", #srcs, rep.warnings, rep.errors)
