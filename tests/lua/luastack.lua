-- The workload of tests/t_luastack.sh: a statically known call structure,
-- kept in the interpreter (jit.off), that prints each function's first
-- line (debug.getinfo: the ground truth the test checks stacks against).
jit.off()
local function d(n)
	local x = 0
	for i = 1, n do x = x + i % 7 end
	return x
end
local function c(n) return d(n) + 1 end
local function b(n) return c(n) + 1 end
local function a(n) return b(n) + 1 end
local function rec(k, n)
	if k == 0 then return d(n) end
	return rec(k - 1, n) + 1
end
local function viapcall(n)
	local ok, r = pcall(a, n)
	return r
end
local function cb(s) d(2000) return s end
local function viagsub() return (string.gsub("abcdefgh", "%a", cb)) end
local secs = tonumber(arg and arg[1]) or 2
for _, f in ipairs{{"d", d}, {"c", c}, {"b", b}, {"a", a}, {"rec", rec},
		   {"viapcall", viapcall}, {"cb", cb}, {"viagsub", viagsub}} do
	print("FN " .. f[1] .. " " .. debug.getinfo(f[2], "S").linedefined)
end
io.stdout:flush()
local t0 = os.clock()
while os.clock() - t0 < secs do
	a(20000)
	rec(8, 20000)
	viapcall(20000)
	viagsub()
end
