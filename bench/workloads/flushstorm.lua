-- flushstorm.lua [scale]: constant recompilation. Many small generated
-- kernels (a loop with a branch: a root trace and a side trace each) are run
-- round after round while the machine code is thrown away:
--   * jit.flush() (flush everything) every few rounds: trace numbers restart
--     at 1 and the same mcode addresses are handed out again;
--   * jit.flush(n) on single trace numbers followed by a GC step: the traces
--     are freed silently (no event) and their numbers reused;
--   * more live traces than Debian's maxtrace (1000) between explicit
--     flushes, so that LuaJIT flushes on its own as well.
local scale = tonumber(arg and arg[1]) or 1
local floor = math.floor

local NF = 600
local kernels = {}
for f = 1, NF do
  local k, c1, c2 = 3 + f % 7, f % 17 + 1, f % 5 + 1
  local src = ([[
local n, x = ...
local s = x
for i = 1, n do
  if i %% %d == 0 then s = s + i * %d else s = s - %d end
end
return s
]]):format(k, c1, c2)
  kernels[f] = assert(loadstring(src, "=k" .. f))
end

-- A small deterministic generator for the single-trace flushes.
local seed = 12345
local function rnd(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % n + 1
end

local rounds = math.max(1, floor(60 * scale))
local sum = 0
for r = 1, rounds do
  for f = 1, NF do
    sum = (sum + kernels[f](150 + f % 50, r)) % 1000000007
  end
  if r % 3 == 0 then
    jit.flush()
  else
    for _ = 1, 40 do jit.flush(rnd(600)) end
    collectgarbage("step", 64)
  end
end
print(string.format("flushstorm checksum %d", sum))
