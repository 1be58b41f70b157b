-- openresty.lua [scale]: the string and table work of a typical OpenResty
-- handler: build nginx-style access-log lines (string.format, table.concat),
-- parse them back (match, find, gmatch, gsub unescaping), aggregate into
-- hash tables (inserts, lookups, counters), and render a report (string
-- building, string.rep, sorting of the keys).
local scale = tonumber(arg and arg[1]) or 1
local floor = math.floor
local fmt, concat, insert = string.format, table.concat, table.insert

local seed = 4242
local function rnd(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return floor(seed / 65536) % n + 1
end

local methods = { "GET", "GET", "GET", "POST", "PUT", "DELETE", "HEAD" }
local paths = { "/", "/api/v1/users", "/api/v1/orders", "/static/app.js",
  "/static/style.css", "/login", "/logout", "/search", "/api/v2/items",
  "/health" }
local agents = { "Mozilla/5.0 (X11; Linux x86_64)", "curl/7.88.1",
  "Go-http-client/1.1", "Mozilla/5.0 (Macintosh; Intel Mac OS X 13_1)",
  "python-requests/2.28" }
local statuses = { 200, 200, 200, 200, 301, 304, 404, 500, 502 }
local words = { "caf%C3%A9", "hello%20world", "a%2Bb", "lua", "jit", "x%3Dy" }

local function make_line(i)
  local q = {}
  for k = 1, rnd(4) - 1 do
    q[#q + 1] = fmt("%s=%s", "k" .. k, words[rnd(#words)])
  end
  local path = paths[rnd(#paths)]
  if #q > 0 then path = path .. "?" .. concat(q, "&") end
  return fmt('10.%d.%d.%d - - [%02d/Mar/2024:%02d:%02d:%02d +0000] "%s %s HTTP/1.1" %d %d "-" "%s" %.3f',
    rnd(255) - 1, rnd(255) - 1, rnd(255) - 1, i % 28 + 1, i % 24, i % 60,
    (i * 7) % 60, methods[rnd(#methods)], path, statuses[rnd(#statuses)],
    rnd(50000), agents[rnd(#agents)], rnd(3000) / 1000)
end

local function hexchar(h) return string.char(tonumber(h, 16)) end
local function unescape(s)
  return (s:gsub("%%(%x%x)", hexchar))
end

local function parse(line, agg)
  local ip, method, uri, status, bytes, ua, rt = line:match(
    '^(%S+) %S+ %S+ %[[^%]]+%] "(%u+) (%S+) [^"]*" (%d+) (%d+) "[^"]*" "([^"]*)" ([%d%.]+)$')
  if not ip then
    agg.bad = agg.bad + 1
    return
  end
  local path, query = uri, nil
  local qpos = uri:find("?", 1, true)
  if qpos then path, query = uri:sub(1, qpos - 1), uri:sub(qpos + 1) end
  local st = tonumber(status)
  local byPath = agg.paths[path]
  if not byPath then
    byPath = { hits = 0, bytes = 0, time = 0, status = {} }
    agg.paths[path] = byPath
  end
  byPath.hits = byPath.hits + 1
  byPath.bytes = byPath.bytes + tonumber(bytes)
  byPath.time = byPath.time + tonumber(rt)
  byPath.status[st] = (byPath.status[st] or 0) + 1
  agg.methods[method] = (agg.methods[method] or 0) + 1
  local family = ua:match("^([%w%-]+)") or "?"
  agg.agents[family] = (agg.agents[family] or 0) + 1
  local net = ip:match("^(%d+%.%d+)")
  agg.nets[net] = (agg.nets[net] or 0) + 1
  if query then
    for k, v in query:gmatch("([^&=]+)=([^&]*)") do
      local val = unescape(v)
      agg.args[k .. "=" .. val] = (agg.args[k .. "=" .. val] or 0) + 1
    end
  end
end

local function report(agg)
  local keys = {}
  for p in pairs(agg.paths) do keys[#keys + 1] = p end
  table.sort(keys)
  local out = {}
  for _, p in ipairs(keys) do
    local b = agg.paths[p]
    local sts = {}
    for s, n in pairs(b.status) do sts[#sts + 1] = fmt("%d:%d", s, n) end
    table.sort(sts)
    insert(out, fmt('{"path":"%s","hits":%d,"bytes":%d,"avg":%.4f,"status":"%s"}',
      p, b.hits, b.bytes, b.time / b.hits, concat(sts, ",")))
  end
  local n = 0
  for _ in pairs(agg.args) do n = n + 1 end
  insert(out, fmt('{"args":%d,"nets":%d,"bad":%d}', n,
    (function() local c = 0 for _ in pairs(agg.nets) do c = c + 1 end return c end)(),
    agg.bad))
  return concat(out, "\n")
end

local function checksum(s)
  local h = 0
  for i = 1, #s, 3 do h = (h * 31 + s:byte(i)) % 1000000007 end
  return h
end

local batches, per = math.max(1, floor(80 * scale)), 2000
local h = 0
for b = 1, batches do
  local lines = {}
  for i = 1, per do lines[i] = make_line(b * per + i) end
  local blob = concat(lines, "\n")
  local agg = { paths = {}, methods = {}, agents = {}, nets = {}, args = {}, bad = 0 }
  for line in blob:gmatch("[^\n]+") do parse(line, agg) end
  parse("garbage line", agg)
  local r = report(agg)
  h = (h * 7 + checksum(r) + #blob) % 1000000007
end
print(fmt("openresty checksum %d", h))
