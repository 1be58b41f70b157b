-- The workload of tests/t_builtins.sh: each of five Lua functions, kept in
-- the interpreter (jit.off, so that the builtin is called as the C
-- function it is, not recorded into a trace), spends its time in one
-- builtin written in C; two of those call back into Lua. It prints the
-- ground truth the test checks stacks against, from the script's own text
-- (debug.getinfo), not from jitsframe:
--   CALL <builtin> <first line of the only function that calls it>
--   CB <builtin> <first line of the callback it calls>
--   FF <name>   every builtin's name (jit.vmdef.ffnames): which frame
--               names are builtins
-- arg[1]: rounds (default 1, about 0.6 s).
local rounds = tonumber(arg and arg[1]) or 1
local function cbg(s) local x = 0 for i = 1, 30 do x = x + i end return s end
local function viagsub(s) return (string.gsub(s, "%a", cbg)) end
local function cmps(a, b) local x = 0 for i = 1, 10 do x = x + i end return a < b end
local function viasort(t) table.sort(t, cmps) return t[1] end
local function viarep(n) return #string.rep("abc", n) end
local function viaconcat(t) return #table.concat(t, ",") end
local function viaformat(x) return #string.format("%.14g %d %s %q", x, 42, "abc", "q\n") end
local calls = { ["string.gsub"] = viagsub, ["table.sort"] = viasort,
	["string.rep"] = viarep, ["table.concat"] = viaconcat,
	["string.format"] = viaformat }
for name, f in pairs(calls) do
	jit.off(f)
	print("CALL " .. name .. " " .. debug.getinfo(f, "S").linedefined)
end
print("CB string.gsub " .. debug.getinfo(cbg, "S").linedefined)
print("CB table.sort " .. debug.getinfo(cmps, "S").linedefined)
for id, name in pairs(require("jit.vmdef").ffnames) do
	if id >= 2 then print("FF " .. name) end
end
-- (the main chunk calls none of the five: a sample there has no caller
-- to check)
local text = ""
for _ = 1, 400 do text = text .. "abc def " end
local strs = {}
for i = 1, 3000 do strs[i] = "" .. (i * 7919 % 10007) end
local sum = 0
for r = 1, 800 * rounds do
	sum = sum + #viagsub(text)
	local t = {}
	for i = 1, 600 do t[i] = (i * 7919) % 1009 end
	sum = sum + viasort(t)
	for _ = 1, 2 do sum = sum + viarep(30000) end
	for _ = 1, 8 do sum = sum + viaconcat(strs) end
	for _ = 1, 1500 do sum = sum + viaformat(r + 0.5) end
end
print("SUM " .. sum)
