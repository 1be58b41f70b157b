-- tests/t_builtins.sh: the builtins' names the module publishes (its
-- region's runtime area, read back with `jitsframe region dump
-- --builtins`) against every builtin of the VM, once all its libraries
-- are loaded (those loaded after start() too): each published address is
-- that of exactly one builtin, and the name is LuaJIT's own for it
-- (jit.vmdef.ffnames). Also: a library loaded after start() is named
-- once the module has seen more trace events (it looks again at the 1st,
-- 2nd, 4th, 8th...).
-- usage: luajit ffunique.lua JITSFRAME_CLI REGION
-- prints "ok <what>" / "not ok <what>" lines.
local J, region = arg[1], arg[2]
local jsf = require("jitsframe")
assert(jsf.start { region = region, replace = true })
local ju, vmdef = require("jit.util"), require("jit.vmdef")
-- every library this VM has, loaded now (after start)
local late = {}
for _, m in ipairs { "ffi", "table.new", "table.clear", "string.buffer",
	"jit.profile", "thread.exdata", "thread.exdata2", "table.isempty",
	"table.nkeys", "table.clone", "table.isarray" } do
	if not package.loaded[m] and pcall(require, m) then late[#late + 1] = m end
end
local byaddr, seen = {}, {}
local function note(f)
	if type(f) ~= "function" then return end
	local i = ju.funcinfo(f)
	if not i.ffid or i.ffid < 2 or not i.addr or seen[i.ffid] then return end
	seen[i.ffid] = true
	local t = byaddr[i.addr] or {}
	t[#t + 1] = i.ffid
	byaddr[i.addr] = t
end
local function walk(t, depth)
	for _, v in pairs(t) do
		note(v)
		if depth == 0 and (type(v) == "userdata" or type(v) == "cdata") then
			local mt = debug.getmetatable(v)
			if type(mt) == "table" then
				walk(mt, 1)
				if type(mt.__index) == "table" then walk(mt.__index, 1) end
			end
		end
	end
end
for _, t in pairs(package.loaded) do
	if type(t) == "table" then walk(t, 0) elseif type(t) == "function" then note(t) end
end
note((ipairs {})); note(string.gmatch("", "")); note(coroutine.wrap(print))
-- (the module keeps LuaJIT's own jit.attach in the registry, in place of
-- which it puts its wrapper)
walk(debug.getregistry(), 1)
local ffi = package.loaded.ffi
if ffi then
	walk({ ffi.new("int[1]") }, 0) -- ffi.meta.*
	walk({ ffi.C }, 0)
end
local sb = package.loaded["string.buffer"]
if sb then walk({ sb.new() }, 0) end
local nseen = 0
for _ in pairs(seen) do nseen = nseen + 1 end
-- 80 trace stops: the module looks for the late libraries again
for i = 1, 80 do
	assert(loadstring("local s = 0 for i = 1, 200 do s = s + i * " .. i .. " end return s"))()
end
local p = assert(io.popen("'" .. J .. "' region dump '" .. region .. "' --builtins"))
local pub = {}
for l in p:lines() do
	local a, n = l:match("^builtin 0x(%x+) (%S+)$")
	if a then pub[#pub + 1] = { tonumber(a, 16), n } end
end
p:close()
local bad = {}
for _, e in ipairs(pub) do
	local ids = byaddr[e[1]]
	if not ids then
		bad[#bad + 1] = e[2] .. " at an address no builtin has"
	elseif #ids > 1 then
		local names = {}
		for _, id in ipairs(ids) do names[#names + 1] = vmdef.ffnames[id] end
		bad[#bad + 1] = e[2] .. " at an address " .. #ids .. " builtins share (" ..
			table.concat(names, ", ") .. ")"
	elseif vmdef.ffnames[ids[1]] ~= e[2] then
		bad[#bad + 1] = e[2] .. " where LuaJIT says " .. tostring(vmdef.ffnames[ids[1]])
	end
end
local shared = 0
for _, ids in pairs(byaddr) do if #ids > 1 then shared = shared + #ids end end
local what = #pub .. " published of " .. nseen .. " builtins found (" .. shared ..
	" share an address with another)"
if #pub >= 100 and #bad == 0 then
	print("ok each published address is one builtin's, named as LuaJIT names it: " .. what)
else
	print("not ok each published address is one builtin's, named as LuaJIT names it: " ..
		what .. "; " .. table.concat(bad, "; ", 1, math.min(#bad, 5)))
end
-- a library loaded after start(): its functions named after the stops
local want = package.loaded["table.new"] and "table.new" or nil
local found = false
for _, e in ipairs(pub) do if e[2] == want then found = true end end
if not want then
	print("ok a library loaded after start() named later # SKIP no table.new")
elseif found then
	print("ok a library loaded after start() named later (" .. want .. ", loaded: " ..
		table.concat(late, " ") .. ")")
else
	print("not ok a library loaded after start() named later: " .. want .. " not published")
end
