-- tests/t_luaframes.sh: a loop in f calling g calling h, both inlined
-- into f's loop trace. Each of g and h stores (sink[...] = ...) before a
-- guard (a table load), so that LuaJIT takes a snapshot inside it: the
-- code after those guards stands for f > g > h and f > g. Prints each
-- function's chunk and first and last line as Lua itself knows them
-- (debug.getinfo), the ground truth of the test.
local t = {}
for i = 1, 64 do t[i] = i * 3 end
local sink = {0, 0, 0}

local function h(x, i)
  sink[3] = x
  local a = t[(i % 64) + 1]
  local b = (x * 33 + a) % 1000003
  local c = (b * 17 + i) % 999983
  local d = (c * 13 + a) % 999979
  return (d + a * 7) % 1000033
end

local function g(x, i)
  sink[2] = x
  local y = h(x, i)
  local z = t[(i % 32) + 1]
  return (y * 5 + z) % 1000037
end

local function f(n)
  local s = 1
  for i = 1, n do
    s = g(s, i)
  end
  return s
end

local rounds = tonumber(arg and arg[1]) or 20
local s = 0
for _ = 1, rounds do s = s + f(1000000) end
for name, fn in pairs({f = f, g = g, h = h, main = 1}) do
  local d = debug.getinfo(fn, "S") -- 1: this main chunk
  local src = d.source:gsub("^[@=]", "")
  print(string.format("FUNC %s %s %d %d", name, src, d.linedefined,
    d.lastlinedefined))
end
print("SUM", s)
