-- tests/vm/audit_capture.lua: a pure-Lua stand-in for the auditlog writer,
-- for testing the replay (vm/replay.lua) independently of the C writer.
--
-- Load it first in a LuaJIT process, e.g.
--   JSF_AUDIT_CAPTURE=/tmp/x.cap LUA_INIT=@tests/vm/audit_capture.lua \
--     luajit -jdump=tbimrsaT,/tmp/d -jv=/tmp/v script.lua
-- It attaches its own jit.attach handlers and writes the records of the
-- logical schema (/work/notes/audit-schema.md, docs/AUDITLOG.md) one per
-- line, as Lua table constructors, to $JSF_AUDIT_CAPTURE. The replay reads
-- such a file when its first line is "-- jitsframe audit capture 1".
--
-- Fields beyond the schema, which an exact replay needs (the writer must
-- send them too):
--   stop.func       the function LuaJIT passes with "stop" (jit.v prints it
--                   for stitched traces)
--   record.ins/m    funcbc(func, pc) at record time: LuaJIT patches loop and
--                   function headers in place (FORL -> JFORL/IFORL, ...), so
--                   the bytecode of a prototype changes after it was logged
--   abort.mc/addr/loop/exitstub/gexitstub as in stop (-jdump=am prints the
--                   machine code of an aborted trace if it has some)
--   a proto value   {obj="proto", fn=ID, ...}: jit.bc prints the child
--                   prototype's location for FNEW, so a "func" record is sent
--                   for it (funcinfo/funcbc/funck accept prototypes)
local jit = require("jit")
-- Never run this file's code as traces: a trace exit taken inside a handler
-- while LuaJIT records another trace corrupts that recording (the handlers'
-- loops get hot over a long run). jit.dump's handlers are rarely hot.
jit.off(true, true)
local jutil = require("jit.util")
local vmdef = require("jit.vmdef")
local path = assert(os.getenv("JSF_AUDIT_CAPTURE"), "JSF_AUDIT_CAPTURE not set")
local level = os.getenv("JSF_AUDIT_CAPTURE_LEVEL") or "full"

local funcinfo, funcbc, funck, funcuvname =
	jutil.funcinfo, jutil.funcbc, jutil.funck, jutil.funcuvname
local traceinfo, traceir, tracek, tracesnap, tracemc, traceexitstub =
	jutil.traceinfo, jutil.traceir, jutil.tracek, jutil.tracesnap,
	jutil.tracemc, jutil.traceexitstub
local format, byte, gsub, concat = string.format, string.byte, string.gsub, table.concat
local type, tostring, pairs, floor = type, tostring, pairs, math.floor

local out = assert(io.open(path, "w"))
out:write("-- jitsframe audit capture 1\n")

-- Serialiser: Lua table constructors, one line per record, exact numbers.
local esc = {}
for i = 0, 255 do esc[string.char(i)] = format("\\%03d", i) end
local ser
local function serk(v, b)
	if type(v) == "number" then
		if v ~= v then b[#b + 1] = "(0/0)"
		elseif v == 1 / 0 then b[#b + 1] = "(1/0)"
		elseif v == -1 / 0 then b[#b + 1] = "(-1/0)"
		elseif v == 0 and 1 / v < 0 then b[#b + 1] = "(-0.0)"
		elseif v == floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then b[#b + 1] = format("%d", v)
		else b[#b + 1] = format("%.17g", v) end
	elseif type(v) == "string" then
		b[#b + 1] = '"' .. gsub(v, '[%z\1-\31"\\\127-\255]', esc) .. '"'
	elseif type(v) == "boolean" then
		b[#b + 1] = v and "true" or "false"
	elseif type(v) == "table" then
		b[#b + 1] = "{"
		for k, x in pairs(v) do
			b[#b + 1] = "["
			serk(k, b)
			b[#b + 1] = "]="
			serk(x, b)
			b[#b + 1] = ","
		end
		b[#b + 1] = "}"
	else
		error("cannot serialise " .. type(v))
	end
end
ser = function(rec)
	local b = {}
	serk(rec, b)
	b[#b + 1] = "\n"
	out:write(concat(b))
end

-- Values of Lua objects, as the schema encodes them.
local ids = setmetatable({}, { __mode = "k" })
local nextid = 0
local enc

local function fid(f)
	local fi = funcinfo(f)
	local key = fi.proto or f
	local id = ids[key]
	if id then return id end
	nextid = nextid + 1
	id = nextid
	ids[key] = id
	local rec = { ev = "func", id = id, ns = 0 }
	local info = {}
	for k, v in pairs(fi) do
		if k ~= "currentline" and k ~= "loc" then info[k] = enc(v) end
	end
	rec.info = info
	if fi.bytecodes then -- a Lua function or prototype
		rec.locprefix = gsub(funcinfo(f, 0).loc, ":%-?%d+$", "")
		local lines, bc = {}, {}
		for pc = 0, fi.bytecodes - 1 do
			lines[pc] = funcinfo(f, pc).currentline
			local ins, m = funcbc(f, pc)
			if ins then bc[pc] = { ins, m } end
		end
		rec.lines, rec.bc = lines, bc
		local k = {}
		for i = 0, fi.nconsts - 1 do k[i] = enc(funck(f, i)) end
		-- the parent's record is written after its children's: every
		-- id a record mentions is defined before it
		for i = -1, -fi.gcconsts, -1 do k[i] = enc(funck(f, i)) end
		rec.k = k
		local uv = {}
		for i = 0, fi.upvalues - 1 do uv[i] = funcuvname(f, i) end
		rec.uv = uv
	end
	ser(rec)
	return id
end

enc = function(v)
	local t = type(v)
	if t == "nil" or t == "boolean" or t == "number" or t == "string" then return v end
	if t == "function" then return { fn = fid(v) } end
	local s = tostring(v)
	local o = { obj = t, str = s }
	local hex = s:match(": 0x(%x+)$")
	if hex then o.addr = tonumber(hex, 16) elseif s:match(": NULL$") then o.addr = 0 end
	if t == "proto" then o.fn = fid(v) end
	if t == "cdata" then
		local ok, ffi = pcall(require, "ffi")
		if ok then o.ctype = tostring(ffi.typeof(v)):match("^ctype<(.*)>$") end
	end
	return o
end

-- Header
local function copyvmdef()
	local d = {}
	for k, v in pairs(vmdef) do
		if type(v) == "table" then
			local c = {}
			for i, s in pairs(v) do c[i] = s end
			d[k] = c
		else
			d[k] = v
		end
	end
	return d
end
do
	local status = { jit.status() }
	local ffiok, ffi = pcall(require, "ffi")
	local irc = {}
	for i = 0, #vmdef.ircall do irc[i] = jutil.ircalladdr(i) end
	ser({ ev = "header", format = 1, producer = "audit_capture.lua", level = level,
		pid = 0, ns = 0, unix_ns = 0, clock = "CLOCK_MONOTONIC",
		vm = { version = jit.version, version_num = jit.version_num, arch = jit.arch,
			os = jit.os, gc64 = ffiok and ffi.abi("gc64") or false, status = status },
		vmdef = copyvmdef(), ircalladdr = irc })
end

local gsent = 0 -- shared exit stubs sent so far
local function tracedata(rec, tr)
	local info = traceinfo(tr)
	if not info then return end
	rec.info = info
	local ir, k = {}, {}
	for ref = 0, info.nins do
		local m, ot, op1, op2, ridsp = traceir(tr, ref)
		if m then ir[ref] = { m, ot, op1, op2, ridsp } end
	end
	for idx = -info.nk, -1 do
		local v, t, slot = tracek(tr, idx)
		if t then k[idx] = { [1] = enc(v), [2] = t, [3] = slot } end
	end
	rec.ir, rec.k = ir, k
	local snap = {}
	for sn = 0, 1e9 do
		local s = tracesnap(tr, sn)
		if not s then break end
		snap[sn] = s
	end
	rec.snap = snap
	local mc, addr, loop = tracemc(tr)
	if mc then rec.mc, rec.addr, rec.loop = mc, addr, loop end
	local es = {}
	for i = 0, info.nexit do es[i] = traceexitstub(tr, i) end
	rec.exitstub = es
	if info.nexit > gsent then
		local g = {}
		for i = gsent, info.nexit - 1 do g[i] = traceexitstub(i) end
		rec.gexitstub = g
		gsent = info.nexit
	end
end

local function h_trace(what, tr, func, pc, otr, oex)
	local rec = { ev = what, ns = 0 }
	if what == "start" then
		rec.tr, rec.func, rec.pc, rec.otr, rec.oex = tr, fid(func), pc, otr, oex
	elseif what == "stop" then
		rec.tr, rec.func = tr, fid(func)
		tracedata(rec, tr)
	elseif what == "abort" then
		rec.tr, rec.func, rec.pc, rec.err, rec.errinfo = tr, fid(func), pc, enc(otr), enc(oex)
		if level == "full" then tracedata(rec, tr) end
	elseif what == "flush" then
		gsent = 0 -- a flush frees the exit stubs too: new addresses follow
	end
	ser(rec)
end

local function h_record(tr, func, pc, depth)
	local rec = { ev = "record", ns = 0, tr = tr, func = fid(func), pc = pc, depth = depth }
	if pc >= 0 and funcinfo(func).bytecodes then rec.ins, rec.m = funcbc(func, pc) end
	ser(rec)
end

local function h_texit(tr, ex, ngpr, nfpr, ...)
	ser({ ev = "texit", ns = 0, tr = tr, ex = ex, ngpr = ngpr, nfpr = nfpr, regs = { ... } })
end

-- LuaJIT holds one handler per event (registry._VMEVENTS), so -jdump and
-- -jv would replace each other and us: like the module, attach one
-- dispatcher per event that calls ours, then those attached after us in
-- attach order, and let jit.attach add to (or remove from) its chain.
local orig_attach = jit.attach
local chains = { trace = {}, record = {}, texit = {} }
local mine = { trace = h_trace, record = level == "full" and h_record or false,
	texit = level == "full" and h_texit or false }
local function dispatcher(ev)
	local chain, own = chains[ev], mine[ev]
	return function(...)
		if own then own(...) end
		for i = 1, #chain do
			local ok, err = pcall(chain[i], ...)
			if not ok then io.stderr:write("audit_capture: handler failed: ", tostring(err), "\n") end
		end
	end
end
local disp = {}
for ev in pairs(chains) do
	disp[ev] = dispatcher(ev)
	orig_attach(disp[ev], ev)
end
jit.attach = function(f, ev)
	if ev ~= nil and chains[ev] then
		local c = chains[ev]
		for i = 1, #c do if c[i] == f then return end end
		c[#c + 1] = f
		return
	end
	if ev == nil then
		for _, c in pairs(chains) do
			for i = #c, 1, -1 do if c[i] == f then table.remove(c, i) end end
		end
	end
	return orig_attach(f, ev)
end
-- Keep the handlers and the file alive (the file is flushed and closed
-- when the VM closes, or by exit()).
_G.__jsf_audit_capture = { disp, out }
