-- A small deterministic workload with root, side and linked traces.
local x, t = 0, {}
for i = 1, 200000 do
  if i % 3 == 0 then x = x + i * 2 elseif i % 5 == 0 then x = x - i else x = x + 1 end
end
for j = 1, 50 do
  for i = 1, 2000 do t[i] = (t[i] or 0) + i * j end
end
print("checksum", x, t[100])
