-- numeric.lua [scale]: floating-point and integer loops (n-body, mandelbrot,
-- spectral norm, a sieve). Few, long-running traces: the steady state.
local scale = tonumber(arg and arg[1]) or 1
local sqrt, floor = math.sqrt, math.floor

-- n-body: five bodies. The step loop is generated with every pair
-- interaction unrolled and every coordinate in a local, so there is one hot
-- loop (and one trace shape) whatever else the process has done before.
local function nbody(steps)
  local PI = 3.141592653589793
  local SOLAR = 4 * PI * PI
  local DPY = 365.24
  local init = {
    { 0, 0, 0, 0, 0, 0, 1 },
    { 4.84143144246472090e+00, -1.16032004402742839e+00,
      -1.03622044471123109e-01, 1.66007664274403694e-03,
      7.69901118419740425e-03, -6.90460016972063023e-05,
      9.54791938424326609e-04 },
    { 8.34336671824457987e+00, 4.12479856412430479e+00,
      -4.03523417114321381e-01, -2.76742510726862411e-03,
      4.99852801234917238e-03, 2.30417297573763929e-05,
      2.85885980666130812e-04 },
    { 1.28943695621391310e+01, -1.51111514016986312e+01,
      -2.23307578892655734e-01, 2.96460137564761618e-03,
      2.37847173959480950e-03, -2.96589568540237556e-05,
      4.36624404335156298e-05 },
    { 1.53796971148509165e+01, -2.59193146099879641e+01,
      1.79258772950371181e-01, 2.68067772490389322e-03,
      1.62824170038242295e-03, -9.51592254519715870e-05,
      5.15138902046611451e-05 },
  }
  local n = #init
  local b = {}
  local function w(s) b[#b + 1] = s end
  w("local steps, dt, sqrt, B = ...\n")
  for i = 1, n do
    w(("local x%d, y%d, z%d, vx%d, vy%d, vz%d, m%d = unpack(B[%d])\n")
      :format(i, i, i, i, i, i, i, i))
  end
  w("for _ = 1, steps do\n  local dx, dy, dz, d2, mag\n")
  for i = 1, n do
    for j = i + 1, n do
      w(("  dx, dy, dz = x%d - x%d, y%d - y%d, z%d - z%d\n"):format(i, j, i, j, i, j))
      w("  d2 = dx * dx + dy * dy + dz * dz\n  mag = dt / (d2 * sqrt(d2))\n")
      w(("  vx%d, vy%d, vz%d = vx%d - dx * m%d * mag, vy%d - dy * m%d * mag, vz%d - dz * m%d * mag\n")
        :format(i, i, i, i, j, i, j, i, j))
      w(("  vx%d, vy%d, vz%d = vx%d + dx * m%d * mag, vy%d + dy * m%d * mag, vz%d + dz * m%d * mag\n")
        :format(j, j, j, j, i, j, i, j, i))
    end
  end
  for i = 1, n do
    w(("  x%d, y%d, z%d = x%d + dt * vx%d, y%d + dt * vy%d, z%d + dt * vz%d\n")
      :format(i, i, i, i, i, i, i, i, i))
  end
  w("end\nreturn {")
  for i = 1, n do
    w(("{x%d, y%d, z%d, vx%d, vy%d, vz%d, m%d},"):format(i, i, i, i, i, i, i))
  end
  w("}\n")
  local run = assert(loadstring(table.concat(b), "=nbody"))
  local B = {}
  for i = 1, n do
    local v = init[i]
    B[i] = { v[1], v[2], v[3], v[4] * DPY, v[5] * DPY, v[6] * DPY, v[7] * SOLAR }
  end
  local px, py, pz = 0, 0, 0
  for i = 1, n do
    px, py, pz = px + B[i][4] * B[i][7], py + B[i][5] * B[i][7], pz + B[i][6] * B[i][7]
  end
  B[1][4], B[1][5], B[1][6] = -px / SOLAR, -py / SOLAR, -pz / SOLAR
  B = run(steps, 0.01, sqrt, B)
  local e = 0
  for i = 1, n do
    local bi = B[i]
    e = e + 0.5 * bi[7] * (bi[4] * bi[4] + bi[5] * bi[5] + bi[6] * bi[6])
    for j = i + 1, n do
      local bj = B[j]
      local dx, dy, dz = bi[1] - bj[1], bi[2] - bj[2], bi[3] - bj[3]
      e = e - bi[7] * bj[7] / sqrt(dx * dx + dy * dy + dz * dz)
    end
  end
  return e
end

-- mandelbrot: count points of an N x N grid inside the set.
local function mandelbrot(N)
  local inside, iter = 0, 50
  for y = 0, N - 1 do
    local ci = 2 * y / N - 1
    for x = 0, N - 1 do
      local cr = 2 * x / N - 1.5
      local zr, zi, k = 0, 0, 0
      while k < iter do
        local zr2, zi2 = zr * zr, zi * zi
        if zr2 + zi2 > 4 then break end
        zi = 2 * zr * zi + ci
        zr = zr2 - zi2 + cr
        k = k + 1
      end
      if k == iter then inside = inside + 1 end
    end
  end
  return inside
end

-- spectral norm of the infinite matrix A(i,j) = 1/((i+j)(i+j+1)/2+i+1).
local function spectral(n)
  local function A(i, j)
    local ij = i + j - 1
    return 1.0 / (ij * (ij - 1) * 0.5 + i)
  end
  local function Av(x, y, N)
    for i = 1, N do
      local a = 0
      for j = 1, N do a = a + x[j] * A(i, j) end
      y[i] = a
    end
  end
  local function Atv(x, y, N)
    for i = 1, N do
      local a = 0
      for j = 1, N do a = a + x[j] * A(j, i) end
      y[i] = a
    end
  end
  local u, v, t = {}, {}, {}
  for i = 1, n do u[i] = 1 end
  for _ = 1, 10 do
    Av(u, t, n); Atv(t, v, n)
    Av(v, t, n); Atv(t, u, n)
  end
  local vBv, vv = 0, 0
  for i = 1, n do
    local ui, vi = u[i], v[i]
    vBv, vv = vBv + ui * vi, vv + vi * vi
  end
  return sqrt(vBv / vv)
end

-- sieve of Eratosthenes, repeated.
local function sieve(n, reps)
  local count
  for _ = 1, reps do
    local flags = {}
    count = 0
    for i = 2, n do
      if not flags[i] then
        count = count + 1
        for k = i + i, n, i do flags[k] = true end
      end
    end
  end
  return count
end

local e = nbody(floor(6000000 * scale))
local m = mandelbrot(floor(900 * sqrt(scale)))
local s = spectral(floor(800 * sqrt(scale)))
local p = sieve(1000000, math.max(1, floor(6 * scale)))
print(string.format("numeric checksum %.9f %d %.9f %d", e, m, s, p))
