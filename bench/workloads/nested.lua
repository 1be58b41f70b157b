-- nested.lua [scale]: Lua code running inside nested VM entries, so traces
-- are entered from more than the outermost interpreter frame:
--   * coroutines (resume/yield between a producer and a consumer, each with
--     hot loops of its own),
--   * string.gsub with a Lua function as the replacement,
--   * table.sort with a Lua comparator,
--   * pcall/error-heavy code (nested pcall, errors thrown through traces),
--   * FFI callbacks: a Lua comparator cast to a C function pointer and
--     called back by the C library's qsort.
local scale = tonumber(arg and arg[1]) or 1
local floor = math.floor
local ffi = require("ffi")

local function mix(h, v) return (h * 31 + v) % 1000000007 end

-- coroutines
local function coro(n)
  local prod = coroutine.wrap(function()
    local x = 1
    for i = 1, n do
      local s = 0
      for k = 1, 20 do s = s + (x + k) % 13 end
      x = (x * 1103515245 + 12345) % 2147483648
      coroutine.yield(s + i % 7)
    end
    coroutine.yield(nil)
  end)
  local h = 0
  while true do
    local v = prod()
    if not v then break end
    h = mix(h, v)
  end
  return h
end

-- gsub with a Lua function
local words = {}
for i = 1, 200 do words[i] = ("w%dx%s"):format(i, ("abc"):rep(i % 4)) end
local text = table.concat(words, " ")
local function gsubs(n)
  local h = 0
  for _ = 1, n do
    local out = text:gsub("%w+", function(w)
      local c = 0
      for k = 1, #w do c = c + w:byte(k) end
      h = mix(h, c)
      if c % 3 == 0 then return w:upper() end
    end)
    h = mix(h, #out)
  end
  return h
end

-- table.sort with a Lua comparator
local function sorts(n, size)
  local h = 0
  local seed = 7
  for _ = 1, n do
    local a = {}
    for i = 1, size do
      seed = (seed * 1103515245 + 12345) % 2147483648
      a[i] = { key = seed % 10007, id = i }
    end
    table.sort(a, function(x, y)
      if x.key ~= y.key then return x.key < y.key end
      return x.id < y.id
    end)
    for i = 1, size, 97 do h = mix(h, a[i].key + a[i].id) end
  end
  return h
end

-- pcall-heavy
local function risky(x)
  if x % 11 == 0 then error({ code = x }) end
  if x % 13 == 0 then error("plain " .. x, 0) end
  local s = 0
  for k = 1, 8 do s = s + (x * k) % 17 end
  return s
end
local function pcalls(n)
  local h, errs = 0, 0
  for i = 1, n do
    local ok, v = pcall(risky, i)
    if ok then
      h = mix(h, v)
    else
      errs = errs + 1
      local ok2, v2 = pcall(function()
        return type(v) == "table" and v.code or #v
      end)
      if ok2 then h = mix(h, v2) end
    end
  end
  return mix(h, errs)
end

-- FFI callbacks from C qsort
ffi.cdef [[
void qsort(void *base, size_t nmemb, size_t size,
           int (*compar)(const void *, const void *));
]]
local function ffisort(n, size)
  local ip = ffi.typeof("const int32_t *")
  local calls = 0
  local cmp = ffi.cast("int (*)(const void *, const void *)", function(a, b)
    calls = calls + 1
    local x, y = ffi.cast(ip, a)[0], ffi.cast(ip, b)[0]
    local kx, ky = x % 1000, y % 1000
    if kx ~= ky then return kx < ky and -1 or 1 end
    return x < y and -1 or (x > y and 1 or 0)
  end)
  local arr = ffi.new("int32_t[?]", size)
  local h, seed = 0, 99
  for _ = 1, n do
    for i = 0, size - 1 do
      seed = (seed * 1103515245 + 12345) % 2147483648
      arr[i] = seed % 100000
    end
    ffi.C.qsort(arr, size, 4, cmp)
    for i = 0, size - 1, 101 do h = mix(h, arr[i]) end
  end
  cmp:free()
  return h, calls
end

local s = math.max(scale, 0.01)
local c = coro(floor(1500000 * s))
local g = gsubs(floor(5000 * s))
local t = sorts(math.max(1, floor(48 * s)), 5000)
local p = pcalls(floor(450000 * s))
local f, calls = ffisort(math.max(1, floor(24 * s)), 5000)
print(string.format("nested checksum %d %d %d %d %d %d", c, g, t, p, f, calls))
