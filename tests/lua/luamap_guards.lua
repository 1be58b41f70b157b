-- tests/t_luamap_perf.sh: one hot loop whose trace has guards on several lines
local t = {}
for i = 1, 200 do t[i] = i % 7 end
local s = 0
for r = 1, tonumber(arg and arg[1]) or 150000 do
  for i = 1, 200 do
    local v = t[i]
    if v > 3 then
      s = s + v * 2
    end
    if v == 1 then
      s = s - 1
    end
    s = s % 1000003
  end
end
print(s)
