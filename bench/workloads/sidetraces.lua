-- sidetraces.lua [scale]: branchy loops with many live floating-point values.
-- Each generated kernel keeps K doubles alive around a loop whose body takes
-- one of several branches by i % p, so side traces (and side traces of side
-- traces) are compiled after the root loop, each with its own spill area:
-- stack adjustments from 0 up to several hundred bytes, including side
-- traces that need more than their parent and more than 128 bytes.
local scale = tonumber(arg and arg[1]) or 1
local floor = math.floor

local function gen(v, K)
  local b = {}
  local function w(s) b[#b + 1] = s end
  w("local n = ...\n")
  for k = 1, K do w(("local a%d = %d.%d\n"):format(k, k, v)) end
  w("local acc = 0\n")
  w("for i = 1, n do\n")
  local p1, p2, p3 = 3 + v % 5, 7 + v % 3, 11 + v % 4
  -- branch A: touches every value, with a nested branch
  w(("  if i %% %d == 0 then\n"):format(p1))
  for k = 1, K do
    w(("    a%d = a%d * 0.999 + a%d * 0.001\n"):format(k, k, k % K + 1))
  end
  w(("    if i %% %d == 0 then\n"):format(p1 * 4))
  for k = 1, K, 2 do w(("      a%d = a%d - a%d * 0.0005\n"):format(k, k, (k + 2) % K + 1)) end
  w("    end\n")
  -- branch B: a different half of the values
  w(("  elseif i %% %d == 0 then\n"):format(p2))
  for k = 2, K, 2 do w(("    a%d = 0.9 * a%d + 0.05 * (a%d + a%d)\n"):format(k, k, k - 1, k % K + 1)) end
  -- branch C: a few temporaries that live until the end
  w(("  elseif i %% %d == 0 then\n"):format(p3))
  w("    local t1, t2, t3, t4 = a1 + a2, a2 + a3, a3 + a4, a4 + a1\n")
  for _ = 1, 3 do w("    t1, t2, t3, t4 = t2 * 0.5, t3 * 0.5, t4 * 0.5, t1 * 0.5\n") end
  w("    acc = acc + t1 + t2 + t3 + t4\n")
  w("  else\n")
  w("    acc = acc + a1 * 1e-9\n")
  w("  end\n")
  w("end\n")
  w("return acc")
  for k = 1, K do w((" + a%d"):format(k)) end
  w("\n")
  return assert(loadstring(table.concat(b), "=kernel" .. v .. "_" .. K))
end

-- Integer/table variant: live table refs and integers, deep if-chains.
local function chain(n, salt)
  local t = {}
  for i = 1, 64 do t[i] = (i * 7 + salt) % 13 end
  local s1, s2, s3, s4, s5, s6, s7, s8 = 0, 1, 2, 3, 4, 5, 6, 7
  for i = 1, n do
    local x = t[(i + salt) % 64 + 1]
    if x < 2 then s1 = s1 + x + s8
    elseif x < 4 then s2 = s2 + s1 % 97
    elseif x < 6 then s3 = (s3 + s2 * 3) % 1000003
    elseif x < 8 then s4 = s4 + s3 % 11; s5 = s5 + 1
    elseif x < 10 then s6 = (s6 * 5 + s4) % 65521
    elseif x < 12 then s7 = s7 + s6 % 7
    else s8 = (s8 + s7 + s5) % 9973 end
  end
  return (s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8) % 1000000007
end

local reps = floor(130000 * scale)
local sum = 0
local kernels = {}
-- Many kernels, each run briefly: LuaJIT's trace selection has random
-- elements (penalties, hash seeds), and averaging over many small kernels
-- keeps the run time steady from run to run.
for v = 1, 60 do
  kernels[#kernels + 1] = gen(v, 10 + 2 * (v % 20)) -- K = 10 .. 48 live doubles
end
for r = 1, 3 do
  for _, f in ipairs(kernels) do sum = sum + f(reps) end
end
local isum = 0
for salt = 1, 24 do isum = (isum + chain(floor(300000 * scale), salt)) % 1000000007 end
print(string.format("sidetraces checksum %.6e %d", sum, isum))
