-- The workload of tests/t_cfnames.sh: Lua functions kept in the
-- interpreter (jit.off: each calls its C function as the C function it
-- is), each spending its time in one C function of a stripped module:
-- tests/cmod.c's (build/tests/cmod), and lua-cjson's when it can be
-- loaded. The modules are required after the jitsframe module started
-- (as `jitsframe profile -- CMD` runs it), so that they are found at a
-- later look. It prints the ground truth the test checks against, from
-- the script's own text and LuaJIT, not from jitsframe:
--   CALL <name> <first line of the only function that calls it>
--   FF <name>      each C function's name (which frame names are ours)
--   ADDR <name> <hex>  its C address, jit.util.funcinfo's (LuaJIT's word)
--   TWIN <hex>     the address cmod.twin1 and twin2 share (never named)
--   BASE <hex>     where cmod.so is loaded (/proc/self/maps): with nm's
--                  offsets, the test's own ground truth for cmod's names
-- arg[1]: rounds (default 1, about 1 s).
local rounds = tonumber(arg and arg[1]) or 1
local ju = require("jit.util")
local cmod = require("cmod")
local cmodfn = require("cmodfn")
local okj, cjson = pcall(require, "cjson")
-- (no tail calls: each caller's frame stays under its C function)
local function viaspin(n) local r = cmod.spin(n) return r end
local function viachurn(n) local r = cmod.churn(n) return r end
local function viadeep(n) local r = cmod.nested.deep(n) return r end
local function viafn(n) local r = cmodfn(n) return r end
local tab = {}
for i = 1, 60 do tab[i] = { a = i, b = "x" .. i, c = i * 0.25 } end
local function viaencode() return #cjson.encode(tab) end
local calls = { ["cmod.spin"] = viaspin, ["cmod.churn"] = viachurn,
	["cmod.nested.deep"] = viadeep, cmodfn = viafn }
local fns = { ["cmod.spin"] = cmod.spin, ["cmod.churn"] = cmod.churn,
	["cmod.nested.deep"] = cmod.nested.deep, cmodfn = cmodfn }
if okj then
	calls["cjson.encode"] = viaencode
	fns["cjson.encode"], fns["cjson.decode"] = cjson.encode, cjson.decode
end
for name, f in pairs(calls) do
	jit.off(f)
	print("CALL " .. name .. " " .. debug.getinfo(f, "S").linedefined)
end
for name, f in pairs(fns) do
	print("FF " .. name)
	print(("ADDR %s %x"):format(name, ju.funcinfo(f).addr))
end
assert(ju.funcinfo(cmod.twin1).addr == ju.funcinfo(cmod.twin2).addr)
print(("TWIN %x"):format(ju.funcinfo(cmod.twin1).addr))
for l in io.lines("/proc/self/maps") do
	local lo, off, path = l:match("^(%x+)%-%x+ %S+ (%x+) %S+ %S+%s+(%S+)$")
	if path and path:match("/cmod/cmod%.so$") and tonumber(off, 16) == 0 then
		print("BASE " .. lo)
		break
	end
end
io.stdout:flush()
-- (the main chunk calls none of them: a sample there has no caller)
local sum = 0
for r = 1, 300 * rounds do
	sum = sum + viaspin(400) + viachurn(60) + viadeep(300) + viafn(400)
	if okj then for _ = 1, 40 do sum = sum + viaencode() end end
end
print("SUM " .. sum)
