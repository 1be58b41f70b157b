-- A side trace whose head checks the stack, and a side trace of its own
-- from the exit of that number (tests/t_luamap.sh). The root loop's exit
-- to work() (exit 5: the loop's copy) starts a side trace that ends
-- inside work(), at its loop's trace, so it adds a frame: LuaJIT checks
-- the stack at its head with the parent's exit 5 (asm_head_side). Its own
-- exit 5, the hot branch at line 7, starts another side trace there.
local function work(x)
  local y = 0
  if x == -1 then y = y + 1 end
  if x == -2 then y = y + 2 end
  if x == -3 then y = y + 3 end
  if x == -4 then y = y + 4 end
  if x % 32 == 0 then y = y + 5 end
  for k = 1, 40 do y = y + k end
  return y
end
local s = 0
for i = 1, 1e6 do
  if i % 16 == 0 then s = s + work(i) end
  s = s + 1
end
print(s)
