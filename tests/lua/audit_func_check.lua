-- audit_func_check.lua LOG: the func records of the auditlog (a bytecode
-- dump each, decoded by the reader in C) answer what jit.util answers live.
-- Run by tests/t_audit_func.sh under each VM, with LUA_CPATH finding
-- build/lua/jitsframe.so. Prints TAP lines (no plan: the shell test counts).
--
-- Ground truth: jit.util.funcinfo/funcbc/funck/funcuvname called on the
-- live functions at the end of the run, against the fields the reader
-- (jsf.audit_records) derives from the logged record. The functions are
-- chosen to cover the dump's corners: stripped bytecode, vararg, child
-- protos, int64/uint64/complex and table constants, many upvalues, more
-- than 255 and 65535 lines (16- and 32-bit line info), chunk names of each
-- kind, number constants of every encoding, and loops whose bytecode the
-- VM patched (JFORL, JLOOP, JITERL, blacklisted ILOOP) before the record
-- was written.
local path = assert(arg[1], "usage: audit_func_check.lua LOG")
local jsf = require("jitsframe")
local jutil = require("jit.util")
local vmdef = require("jit.vmdef")
local ffi = require("ffi")

local n = 0
local fails = 0
local function ok(cond, what, detail)
	n = n + 1
	if cond then
		print("ok " .. n .. " - " .. what)
	else
		fails = fails + 1
		print("not ok " .. n .. " - " .. what)
		if detail then print("#   " .. tostring(detail)) end
	end
end

-- The functions ---------------------------------------------------------------
local F = {} -- name -> function
local order = {}
local function add(name, f)
	F[name] = f
	order[#order + 1] = name
end

local u = {}
for i = 1, 60 do u[i] = i end
add("plain", function(a, b)
	local x = a or 1
	if x > 2 then x = x - 1 end
	return x + (b or 0), "str", -0.0, 1e300, 2 ^ 53 + 2, -7, 0x7fffffff, -2147483648, 4294967296, 0.5
end)
add("vararg", function(...)
	local t = select("#", ...)
	return t, ...
end)
add("children", function()
	local function c1(p) return function() return p end end
	local c2 = function(q) return q * 2 end
	return c1(c2(1))()
end)
add("cdata", function()
	local a, b = 12345678901234LL, 18446744073709551615ULL
	local c = 1.5i
	return a, b, c, -3LL
end)
add("tables", function()
	return { 1, 2, 3, x = "y", [true] = false, [2.5] = 7 }, { "a", nil, "c" }, {}
end)
-- 60 upvalues (names u1..u60)
do
	local src = { "local " }
	for i = 1, 60 do src[#src + 1] = (i > 1 and ", " or "") .. "u" .. i end
	src[#src + 1] = " = " .. table.concat(u, ", ") .. "\nreturn function() return "
	for i = 1, 60 do src[#src + 1] = (i > 1 and " + " or "") .. "u" .. i end
	src[#src + 1] = " end"
	add("upvalues60", assert(loadstring(table.concat(src), "=upv")) ())
end
-- more than 255 lines: 16-bit line info; more than 65535: 32-bit
local function longfunc(lines, name)
	local src = "return function(x)\n" .. string.rep("\n", lines) ..
		"  x = (x or 0) + 1\n" .. string.rep("\n", 3) .. "  return x\nend\n"
	return assert(loadstring(src, name))()
end
add("lines300", longfunc(300, "@/some/dir/long300.lua"))
add("lines70000", longfunc(70000, "=lines70000"))
add("longname", longfunc(1, string.rep("x", 60))) -- loc is %p:line
-- stripped: no line info, no upvalue names
do
	local up1, up2 = 1, 2
	local g = function(a) return a + up1 + up2, "k" end
	local s = assert(loadstring(string.dump(g, true), "=stripped"))
	add("stripped", s)
end
-- loops patched before the log starts: a compiled FORL (JFORL), a
-- compiled while loop (JLOOP), an ITERL and a function whose loop the VM
-- blacklisted (ILOOP/IFORL) after repeated aborts
add("forl", function(k)
	local s = 0
	for i = 1, k or 10 do s = s + i end
	return s
end)
add("whileloop", function(k)
	local i, s = 0, 0
	while i < (k or 10) do i = i + 1; s = s + i end
	return s
end)
add("iterl", function(t)
	local s = 0
	for _, v in ipairs(t or { 1, 2, 3 }) do s = s + v end
	return s
end)
-- (FNEW is not compiled: the loop aborts until the VM blacklists it; a
-- few long calls: the loop gets hot, not the function)
add("blacklisted", function(k)
	local s = 0
	for i = 1, k or 10 do
		local g = function() return i end
		s = s + 1
	end
	return s
end)

-- Phase 1, before the log: compile/blacklist the loops.
for _ = 1, 200 do
	F.forl(100); F.whileloop(100); F.iterl({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 })
end
for _ = 1, 3 do F.blacklisted(300000) end

local function snapshot()
	local s = {}
	for _, name in ipairs(order) do
		local t = {}
		for pc = 0, jutil.funcinfo(F[name]).bytecodes - 1 do t[pc] = jutil.funcbc(F[name], pc) end
		s[name] = t
	end
	return s
end
local before = snapshot()

-- Phase 2: the log, full level. Each function is called from a fresh
-- interpreted loop (hot calls: a trace starts in it, so its start record
-- refers to it) and from a fresh compiled loop (the recorder enters it).
jsf.start { auditlog = path, level = "full", replace = true }
for _, name in ipairs(order) do
	local a = name == "iterl" and { 1, 2 } or 3
	local drive = loadstring("local f, a = ... for i = 1, 400 do pcall(f, a) end")
	jit.off(drive)
	drive(F[name], a)
	drive = loadstring("local f, a = ... for i = 1, 300 do pcall(f, a) end")
	drive(F[name], a)
end
jsf.stop()

-- Phase 3: read the log back.
local byproto = {}
local nrec, nfunc = 0, 0
for rec in jsf.audit_records(path) do
	nrec = nrec + 1
	if rec.ev == "func" then
		nfunc = nfunc + 1
		local p = rec.info and rec.info.proto
		if type(p) == "table" and p.str then byproto[p.str] = rec end
	end
end
ok(jsf.audit_status() == nil, "the log decodes to the end (" .. nrec .. " records, " .. nfunc .. " func)", jsf.audit_status())

local function same(a, b)
	if a ~= a and b ~= b then return true end -- NaN
	if a == 0 and b == 0 and type(a) == "number" and type(b) == "number" then
		return 1 / a == 1 / b -- -0.0 vs 0
	end
	return a == b
end

local function sign(x) return x < 0 and x + 2 ^ 32 or x end
local repatched = 0
local function opname(ins)
	local op = ins % 256
	return (vmdef.bcnames:sub(op * 6 + 1, op * 6 + 6):gsub(" ", ""))
end

for _, name in ipairs(order) do
	local f = F[name]
	local fi = jutil.funcinfo(f)
	local r = byproto[tostring(fi.proto)]
	if not r then
		ok(false, name .. ": has a func record")
	else
		local bad = {}
		local function check(cond, what)
			if not cond and #bad < 5 then bad[#bad + 1] = what end
		end
		-- info
		for k, v in pairs(fi) do
			if k ~= "currentline" and k ~= "loc" and k ~= "proto" then
				check(same(r.info[k], v), "info." .. k .. ": " .. tostring(r.info[k]) .. " vs " .. tostring(v))
			end
		end
		local nbc = fi.bytecodes
		-- lines and loc, every pc
		for pc = 0, nbc - 1 do
			local li = jutil.funcinfo(f, pc)
			check(r.lines[pc] == li.currentline, "line of pc " .. pc .. ": " .. tostring(r.lines[pc]) .. " vs " .. tostring(li.currentline))
			check(r.locprefix .. ":" .. r.lines[pc] == li.loc, "loc of pc " .. pc .. ": " .. li.loc)
		end
		check(r.lines[nbc] == nil, "no line beyond the bytecodes")
		-- pc = bytecodes and beyond, as vm/replay.lua's line_of derives
		-- them from the record (lj_debug_line: the last line if the
		-- prototype has line info, else 0; 0 past the end)
		local last = (r.lines[0] == r.info.linedefined) and r.info.lastlinedefined or 0
		check(jutil.funcinfo(f, nbc).loc == r.locprefix .. ":" .. last, "loc at pc = bytecodes: " .. jutil.funcinfo(f, nbc).loc)
		check(jutil.funcinfo(f, nbc + 1).loc == r.locprefix .. ":0", "loc past the end: " .. jutil.funcinfo(f, nbc + 1).loc)
		-- bytecode: instruction and mode, every pc. An instruction the
		-- VM patched while the log ran (a trace compiled after the
		-- record was written) may be logged with its value before.
		for pc = 0, nbc do
			local ins, m = jutil.funcbc(f, pc)
			local b = r.bc[pc]
			if ins == nil then
				check(b == nil, "bc[" .. pc .. "] should be absent")
			else
				if b and b[1] ~= ins and before[name][pc] ~= ins and
					(b[1] == before[name][pc] or opname(b[1]) == opname(ins):sub(2)) then
					-- changed while the log ran: the record may hold the
					-- value before, or the unpatched op of an older trace
					repatched = repatched + 1
					ins, m = b[1], b[2]
				end
				check(b and b[1] == ins and b[2] == m,
					("bc[%d]: %s vs %08x (%s) mode %s vs %s"):format(pc, b and ("%08x"):format(sign(b[1])) or "nil",
						sign(ins), vmdef.bcnames:sub(ins % 256 * 6 + 1, ins % 256 * 6 + 6), b and tostring(b[2]) or "nil", tostring(m)))
			end
		end
		-- constants
		for i = -fi.gcconsts, fi.nconsts - 1 do
			local v = jutil.funck(f, i)
			local e = r.k[i]
			local t = type(v)
			if t == "number" or t == "string" then
				check(same(e, v), ("k[%d]: %s vs %s"):format(i, tostring(e), tostring(v)))
			else
				-- a logged object: its type and tostring (which holds the
				-- address for tables and protos, the value for int64)
				check(type(e) == "table" and e.obj == t and e.str == tostring(v),
					("k[%d]: %s %s vs %s"):format(i, type(e) == "table" and tostring(e.obj) or type(e), type(e) == "table" and tostring(e.str) or tostring(e), tostring(v)))
			end
		end
		check(r.k[fi.nconsts] == nil and r.k[-fi.gcconsts - 1] == nil, "no constant beyond the counts")
		-- upvalue names
		for i = 0, fi.upvalues do
			local lv = (jutil.funcuvname(f, i))
			check(r.uv[i] == lv, ("uv[%d]: %s vs %s"):format(i, tostring(r.uv[i]), tostring(lv)))
		end
		ok(#bad == 0, ("%s: %d bytecodes, %d+%d constants, %d upvalues, lines %s..%s%s: lines, loc, funcbc, funck, funcuvname = live"):format(
			name, nbc, fi.gcconsts, fi.nconsts, fi.upvalues, fi.linedefined, fi.lastlinedefined, r.live and (", " .. (function() local c = 0 for _ in pairs(r.live) do c = c + 1 end return c end)() .. " live") or ""),
			table.concat(bad, "; "))
	end
end

ok(repatched <= 4, repatched .. " instruction(s) patched during the run, logged with their previous value")

-- The patched loops did reach the record as live instructions.
do
	local names = {}
	for _, name in ipairs { "forl", "whileloop", "iterl", "blacklisted" } do
		local r = byproto[tostring(jutil.funcinfo(F[name]).proto)]
		for pc, ins in pairs(r and r.live or {}) do
			if pc > 0 then names[#names + 1] = vmdef.bcnames:sub(ins % 256 * 6 + 1, ins % 256 * 6 + 6):gsub(" ", "") end
		end
	end
	table.sort(names)
	local s = table.concat(names, ",")
	ok(s:find("JFORL") and s:find("JLOOP") and s:find("JITERL") and s:find("IFORL"),
		"patched loops logged as live instructions: " .. s)
end

-- Damaged dumps: every cut and 2000 flipped bytes give an error or an
-- answer, never a crash; every cut is an error.
do
	local r = byproto[tostring(jutil.funcinfo(F.plain).proto)]
	local d = r.dump
	local function try(dump)
		local c = {}
		for k, v in pairs(r) do c[k] = v end
		c.dump = dump
		c.lines, c.bc, c.k, c.uv = nil, nil, nil, nil
		return jsf.audit_func_expand(c)
	end
	local cuts, msgs = 0, {}
	for len = 0, #d - 1 do
		local res, err = try(d:sub(1, len))
		if res == nil and type(err) == "string" and #err > 0 then
			cuts = cuts + 1
			msgs[err:match("^[^:]*:[^:]*") or err] = true
		end
	end
	ok(cuts == #d, ("a dump cut at each of its %d lengths: %d errors"):format(#d, cuts))
	math.randomseed(5)
	local errs, oks = 0, 0
	for _ = 1, 2000 do
		local at = math.random(1, #d)
		local b = string.char((d:byte(at) + math.random(1, 255)) % 256)
		local res, err = try(d:sub(1, at - 1) .. b .. d:sub(at + 1))
		if res then oks = oks + 1 elseif type(err) == "string" then errs = errs + 1 end
	end
	ok(errs + oks == 2000 and errs > 0, ("2000 single-byte flips: %d errors, %d decoded"):format(errs, oks))
	local res, err = try("junk")
	ok(res == nil and err:find("not a LuaJIT bytecode dump"), "junk: " .. tostring(err))
end
