-- vm/replay.lua: `jitsframe audit replay FILE -jdump[=MODE[,OUT]] -jv[=OUT]`
-- (installed as build/lua/jitsframe_replay.lua; cli/audit_replay.c runs it
-- as  luajit jitsframe_replay.lua EXEDIR FILE OPTION...).
--
-- It runs LuaJIT's own, unmodified jit/dump.lua and jit/v.lua on an
-- auditlog. They see:
--   * require("jit"): a copy of the jit table whose version, arch, os and
--     status are the logged VM's, and whose attach() records the handlers
--     (several per event, in attach order, like jitsframe's multiplexer in
--     the live run);
--   * require("jit.util"): functions answering from the log, for "proxy"
--     objects that stand for the logged functions and constants;
--   * require("jit.vmdef"): the log's embedded copy of the VM's tables.
-- Then the log's events are fed to the attached handlers in order.
--
-- Proxies. A logged function is a real Lua closure mapped to its log id, so
-- type() and the handlers' `type(info) == "function"` tests hold. Logged
-- objects keep their type: a table proxy is a table, a userdata proxy a
-- userdata (newproxy), a cdata proxy a cdata; an int64_t/uint64_t cdata is
-- rebuilt with its exact value (tostring and tonumber then answer like the
-- original). What a proxy cannot have is the original address, which
-- jit/dump.lua prints with format("%p") and tostring() (tables "{%p}",
-- userdata "[%p]"): jit.dump is therefore loaded (unmodified, from the
-- path LuaJIT itself would load it from) with an environment whose
-- string.format prints a proxy's logged %p text for "%p" and whose
-- tostring returns the logged tostring() text. Nothing else differs.
local exedir, logpath = arg[1], arg[2]
local realjit = require("jit")
local realutil = require("jit.util")
local format, gsub, find, sub = string.format, string.gsub, string.find, string.sub
local select, type, tostring, pairs, unpack = select, type, tostring, pairs, unpack

-- A digest of a jit.vmdef table: two VMs with equal digests run the same
-- jit/*.lua (Debian's luajit and OpenResty's luajit2 differ here).
local function vmdef_digest(d)
	local keys = {}
	for k in pairs(d) do keys[#keys + 1] = k end
	table.sort(keys)
	local b = {}
	for _, k in ipairs(keys) do
		local v = d[k]
		b[#b + 1] = k .. "="
		if type(v) == "table" then
			local i = v[0] ~= nil and 0 or 1
			while v[i] ~= nil do b[#b + 1] = tostring(v[i]) .. "\1"; i = i + 1 end
		else
			b[#b + 1] = tostring(v)
		end
		b[#b + 1] = "\2"
	end
	return table.concat(b)
end
if exedir == "--digest" then
	io.write(vmdef_digest(require("jit.vmdef")))
	os.exit(0)
end
-- `--names`: this VM's numbering, one "kind<TAB>number<TAB>name" line each
-- (cli/audit_replay.c maps a RaptorJIT log's numbers onto it by name).
if exedir == "--names" then
	local d = require("jit.vmdef")
	for _, k in ipairs({ { "ir", d.irnames }, { "bc", d.bcnames } }) do
		local s = k[2] or ""
		for i = 1, #s, 6 do
			io.write(k[1], "\t", (i - 1) / 6, "\t", (gsub(sub(s, i, i + 5), " +$", "")), "\n")
		end
	end
	for _, k in ipairs({ "irfield", "ircall", "irfpm", "ffnames" }) do
		local t = d[k] or {}
		local i = t[0] ~= nil and 0 or 1
		while t[i] ~= nil do io.write(k, "\t", i, "\t", t[i], "\n"); i = i + 1 end
	end
	os.exit(0)
end

local function die(code, msg)
	io.stderr:write("jitsframe audit replay: ", msg, "\n")
	io.stderr:flush()
	os.exit(code)
end

if not logpath then die(2, "usage: jitsframe audit replay FILE -jdump[=MODE[,OUTFILE]] -jv[=OUTFILE]") end

-- Options: -jdump[=MODE[,OUTFILE]], -jv[=OUTFILE] (also "-j dump=..."), as
-- luajit parses -j: the text after '=' split at commas gives the
-- arguments of the module's start().
local jopts = {}
do
	local i = 3
	while arg[i] do
		local a = arg[i]
		local spec
		if a == "-j" then
			i = i + 1
			spec = arg[i]
			if not spec then die(2, "-j needs an argument") end
		elseif sub(a, 1, 2) == "-j" then
			spec = sub(a, 3)
		else
			die(2, "unknown option '" .. a .. "' (only -jdump and -jv are replayed)")
		end
		local name, rest = spec:match("^([%w_]+)=?(.*)$")
		if name ~= "dump" and name ~= "v" then
			die(2, "cannot replay -j" .. spec .. ": only -jdump and -jv")
		end
		local args = {}
		if spec:find("=", 1, true) then
			for s in (rest .. ","):gmatch("([^,]*),") do args[#args + 1] = s end
		end
		jopts[#jopts + 1] = { name = name, args = args }
		i = i + 1
	end
	if #jopts == 0 then die(2, "nothing to replay: give -jdump[=MODE[,OUTFILE]] and/or -jv[=OUTFILE]") end
end

-- The log: a jitsframe auditlog (decoded by the module) or a capture file
-- of tests/vm/audit_capture.lua (one Lua table constructor per line).
local function open_log(path)
	local f, err = io.open(path, "rb")
	if not f then die(3, "cannot open " .. tostring(err)) end
	local first = f:read("*l")
	if first == "-- jitsframe audit capture 1" then
		local n = 1
		return function()
			local l = f:read("*l")
			n = n + 1
			if not l then f:close() return nil end
			-- data only: table constructors of numbers, booleans and
			-- strings whose escapes are all \ddd (what the capture writes)
			local rest = gsub(gsub(l, '"[^"]*"', '""'), "%a+", function(w)
				if w == "true" or w == "false" or w == "e" or w == "E" then return "" end
			end)
			if find(l, "\\[^%d]") or find(rest, "[^%[%]{}=,%-%+%d%.%(%)/ \"]") then
				die(1, path .. ":" .. n .. ": not a capture record")
			end
			local fn, e = loadstring("return " .. l, "=" .. path .. ":" .. n)
			if not fn then die(1, e) end
			setfenv(fn, {})
			return fn()
		end, function() return nil end
	end
	f:close()
	local ok, jsf = pcall(require, "jitsframe")
	if not ok or type(jsf) ~= "table" or not jsf.audit_records then
		die(3, "cannot load the auditlog decoder (module jitsframe.audit_records): " .. tostring(jsf))
	end
	local ok2, it, st, ctl = pcall(jsf.audit_records, path)
	if not ok2 then die(3, tostring(it)) end
	return function()
		local r = it(st, ctl)
		ctl = r
		return r
	end, jsf.audit_status
end

local nextrec, status = open_log(logpath)
local header = nextrec()
if type(header) ~= "table" or header.ev ~= "header" then
	local st = status and status()
	die(1, logpath .. ": no header record" .. (st and (": " .. st) or ""))
end
local vm = header.vm or {}

-- Which VM wrote the log: replay with the luajit whose jit.vmdef equals the
-- logged one, so that its jit/dump.lua is the one that ran live
-- (candidates: $JITSFRAME_LUAJIT, OpenResty's luajit2 unpacked beside the
-- CLI by scripts/install-deps, luajit on PATH).
if arg[0] and header.vmdef and not os.getenv("JITSFRAME_REPLAY_PICKED") then
	local want = vmdef_digest(header.vmdef)
	if want ~= vmdef_digest(require("jit.vmdef")) then
		local function q(s) return "'" .. gsub(s, "'", "'\\''") .. "'" end
		local cands = {}
		local env = os.getenv("JITSFRAME_LUAJIT")
		if env and env ~= "" then cands[#cands + 1] = { bin = env } end
		local lj2 = exedir .. "/luajit2/usr/bin/luajit"
		local p = io.popen("ls -d " .. q(exedir .. "/luajit2/usr/share") .. "/luajit-2.1* 2>/dev/null")
		local share = p and p:read("*l")
		if p then p:close() end
		if share then cands[#cands + 1] = { bin = lj2, path = share .. "/?.lua;;" } end
		cands[#cands + 1] = { bin = "luajit" }
		for _, c in ipairs(cands) do
			local pre = c.path and ("LUA_PATH=" .. q(c.path) .. " ") or ""
			local probe = io.popen(pre .. q(c.bin) .. " " .. q(arg[0]) .. " --digest 2>/dev/null")
			local got = probe and probe:read("*a")
			if probe then probe:close() end
			if got == want then
				local cmd = { "JITSFRAME_REPLAY_PICKED=1", pre, q(c.bin), q(arg[0]) }
				for i = 1, #arg do cmd[#cmd + 1] = q(arg[i]) end
				io.stdout:flush()
				local ok, how, code = os.execute(table.concat(cmd, " "))
				if type(ok) == "number" then code = ok / (ok >= 256 and 256 or 1) end
				os.exit(code or 1)
			end
		end
		io.stderr:write("jitsframe audit replay: warning: no luajit with the logged VM's tables (",
			tostring(vm.version), ", ", tostring(vm.arch), ") found; set JITSFRAME_LUAJIT.",
			" Replaying with this one's jit/*.lua\n")
	end
end

-- Proxies and the environment of jit/dump.lua ------------------------------

local objinfo = setmetatable({}, { __mode = "k" }) -- proxy -> {p = %p text, s = tostring}
local id_of = setmetatable({}, { __mode = "k" }) -- function proxy -> func id
local fproxies = {} -- func id -> proxy
local funcs = {} -- func id -> "func" record

local function fproxy(id)
	if id == nil then return nil end
	local p = fproxies[id]
	if not p then
		p = function() return id end
		fproxies[id] = p
		id_of[p] = id
	end
	return p
end

-- %p text of an address, as LuaJIT prints it (lj_strfmt_wptr): "NULL", or
-- 0x and 8 hex digits, 2 more plus 2 per byte above the top set bit of the
-- high word when there is one.
local function ptext(addr)
	if not addr or addr == 0 then return "NULL" end
	local hi = math.floor(addr / 2 ^ 32)
	local n = 8
	if hi > 0 then
		local fls = 0
		while hi >= 2 do hi = math.floor(hi / 2); fls = fls + 1 end
		n = 8 + 2 + 2 * math.floor(fls / 8)
	end
	return "0x" .. format("%0" .. n .. "x", addr)
end

local ffi_ok, ffi = pcall(require, "ffi")
local function int64_of(s)
	local neg, digits, u = s:match("^(%-?)(%d+)(U?)LL$")
	if not digits or not ffi_ok then return nil end
	local v = ffi.new(u == "U" and "uint64_t" or "int64_t", 0)
	for i = 1, #digits do v = v * 10 + (digits:byte(i) - 48) end
	if neg == "-" then v = -v end
	return v
end

-- A fresh, real prototype object: type() says "proto", as for the original.
local pproxies = {} -- func id -> proto proxy
local function newproto()
	return realutil.funck(loadstring("return function() end"), -1)
end

local function dec(v)
	if type(v) ~= "table" then return v end
	local o = v.obj
	if v.fn and o == nil then return fproxy(v.fn) end
	local s = v.str
	local p
	if o == "cdata" and s then
		p = int64_of(s)
		if p then return p end
	end
	if o == "proto" and v.fn and pproxies[v.fn] then return pproxies[v.fn] end
	if o == "table" then
		p = {}
	elseif o == "userdata" or o == "lightuserdata" then
		p = newproxy()
	elseif o == "cdata" and ffi_ok then
		p = ffi.new("char[1]")
	elseif o == "proto" then
		p = newproto()
		if v.fn then
			pproxies[v.fn] = p
			id_of[p] = v.fn
		end
	else
		-- thread, trace (snapshots of stitched frames) or anything else:
		-- jit.dump only tostring()s these; a coroutine is none of the types
		-- it tests for
		p = coroutine.create(function() end)
	end
	local pt = s and s:match(": (%S+)$") or ptext(v.addr)
	objinfo[p] = { p = pt, s = s or ((o or "?") .. ": " .. pt), loc = v.loc }
	return p
end

local realformat = string.format
local function pformat(fmt, ...)
	if type(fmt) ~= "string" or not find(fmt, "%p", 1, true) then return realformat(fmt, ...) end
	local n = select("#", ...)
	local a = { ... }
	local i = 0
	local f2 = gsub(fmt, "%%([-+ #0]*%d*%.?%d*)([%a%%])", function(flags, conv)
		if conv == "%" then return nil end
		i = i + 1
		if conv == "p" and objinfo[a[i]] then
			a[i] = objinfo[a[i]].p
			return "%" .. flags .. "s"
		end
	end)
	return realformat(f2, unpack(a, 1, n))
end
local function ptostring(v)
	local o = objinfo[v]
	if o then return o.s end
	return tostring(v)
end
local pstring = setmetatable({ format = pformat }, { __index = string })
local dumpenv = setmetatable({ tostring = ptostring, string = pstring }, { __index = _G })

-- The stand-in jit.util ------------------------------------------------------

local traces = {} -- tr -> the stop/abort record being shown
local gexit = {} -- shared exit stubs
local ircalladdr_t = header.ircalladdr or {}
local curbc -- {id, pc, ins, m} while a "record" event is dispatched

local function funcrec(f)
	local id = id_of[f]
	return id and funcs[id]
end

local function line_of(r, pc)
	local info = r.info
	local n = info.bytecodes
	if pc >= 0 and pc < n then return r.lines and r.lines[pc] or 0 end
	if pc == n then
		-- lj_debug_line: the last line, if the prototype has line info
		if r.lines and r.lines[0] == info.linedefined then return info.lastlinedefined end
		return 0
	end
	return 0
end

local util = {}
function util.funcinfo(f, pc)
	local r = funcrec(f)
	if not r then
		-- a prototype logged as a value, with its location only (what
		-- jit.bc prints for FNEW)
		local o = objinfo[f]
		if o and o.loc then return { loc = o.loc } end
		error("bad argument #1 to 'funcinfo' (no logged function)", 2)
	end
	local t = {}
	for k, v in pairs(r.info) do t[k] = dec(v) end
	if r.locprefix then
		pc = pc or 0
		local bc = r.info.bytecodes
		if pc >= 0 and pc < bc then t.currentline = line_of(r, pc) end
		if r.info.linedefined == -1 then -- builtin
			t.loc = r.locprefix
		else
			t.loc = r.locprefix .. ":" .. line_of(r, (pc >= 0 and pc <= bc) and pc or bc + 1)
		end
	end
	return t
end
function util.funcbc(f, pc, withline)
	local id = id_of[f]
	local r = id and funcs[id]
	if not r or not r.bc then error("bad argument #1 to 'funcbc' (Lua function expected)", 2) end
	local ins, m
	if curbc and curbc.id == id and curbc.pc == pc then
		ins, m = curbc.ins, curbc.m
	else
		local b = r.bc[pc]
		if not b then return end
		ins, m = b[1], b[2]
	end
	if withline and withline ~= 0 then return ins, m, line_of(r, pc) end
	return ins, m
end
function util.funck(f, idx)
	local r = funcrec(f)
	if not r or not r.k then return end
	local c = r.kdec
	if not c then c = {}; r.kdec = c end
	local v = c[idx]
	if v == nil and r.k[idx] ~= nil then
		v = dec(r.k[idx])
		c[idx] = v
	end
	return v
end
function util.funcuvname(f, idx)
	local r = funcrec(f)
	return r and r.uv and r.uv[idx] or nil
end
function util.traceinfo(tr)
	local r = traces[tr]
	return r and r.info
end
function util.traceir(tr, ref)
	local r = traces[tr]
	local e = r and r.ir and r.ir[ref]
	if e then return e[1], e[2], e[3], e[4], e[5] end
end
function util.tracek(tr, idx)
	local r = traces[tr]
	local e = r and r.k and r.k[idx]
	if not e then return end
	local d = r.kdec
	if not d then d = {}; r.kdec = d end
	local v = d[idx]
	if v == nil then
		v = dec(e[1])
		d[idx] = v
	end
	return v, e[2], e[3]
end
function util.tracesnap(tr, sn)
	local r = traces[tr]
	return r and r.snap and r.snap[sn] or nil
end
function util.tracemc(tr)
	local r = traces[tr]
	if r and r.mc then return r.mc, r.addr, r.loop end
end
local shared_stubs = header.vm and (header.vm.arch == "x64" or header.vm.arch == "x86")
function util.traceexitstub(a, b)
	if shared_stubs or b == nil then
		-- x86/x64: one shared stub per exit number, whatever the trace
		local v = gexit[a]
		if v ~= nil then return v end
		if shared_stubs then return nil end
	end
	local r = traces[a]
	return r and r.exitstub and r.exitstub[b] or nil
end
function util.ircalladdr(i)
	return ircalladdr_t[i]
end
-- Not used by jit.dump/jit.v; answered from the replaying VM's own.
setmetatable(util, { __index = realutil })

-- The stand-in jit ------------------------------------------------------------

local handlers = { trace = {}, record = {}, texit = {} }
local sjit = {}
for k, v in pairs(realjit) do sjit[k] = v end
sjit.version = vm.version or realjit.version
sjit.version_num = vm.version_num or realjit.version_num
sjit.arch = vm.arch or realjit.arch
sjit.os = vm.os or realjit.os
sjit.status = function() return unpack(vm.status or { false }) end
sjit.attach = function(f, ev)
	if type(f) ~= "function" then error("bad argument #1 to 'attach' (function expected)", 2) end
	if ev ~= nil then
		local c = handlers[ev]
		if not c then c = {}; handlers[ev] = c end
		for i = 1, #c do if c[i] == f then return end end
		c[#c + 1] = f
	else
		for _, c in pairs(handlers) do
			for i = #c, 1, -1 do if c[i] == f then table.remove(c, i) end end
		end
	end
end

package.loaded["jit"] = sjit
package.loaded["jit.util"] = util
if header.vmdef then package.loaded["jit.vmdef"] = header.vmdef end
for _, name in ipairs({ "jit.dump", "jit.v" }) do
	local path = package.searchpath(name, package.path)
	if not path then die(3, "cannot find LuaJIT's " .. name .. " in " .. package.path) end
	package.preload[name] = function(...)
		local chunk = assert(loadfile(path))
		setfenv(chunk, dumpenv)
		return chunk(...)
	end
end

-- A default-level log has no recorded bytecode, trace exits or aborted IR.
if header.level ~= "full" then
	for _, o in ipairs(jopts) do
		if o.name == "dump" then
			local opt = (o.args[1] or ""):gsub("[TAH]", "")
			local m = { b = true }
			if opt ~= "" then
				local c = opt:sub(1, 1)
				if c ~= "+" and c ~= "-" then m = {} end
				for i = 1, #opt do m[opt:sub(i, i)] = (c ~= "-") end
			end
			if m.b or m.x or m.X or m.a then
				io.stderr:write("jitsframe audit replay: warning: ", logpath, " is a ",
					tostring(header.level), "-level log: no recorded bytecode (b), trace",
					" exits (x, X) or aborted IR (a); log with level=\"full\" for them\n")
			end
		end
	end
end

local mods = {}
for _, o in ipairs(jopts) do
	local m = require("jit." .. o.name)
	mods[#mods + 1] = m
	local ok, err = pcall(m.start, unpack(o.args))
	if not ok then die(3, "-j" .. o.name .. ": " .. tostring(err)) end
end

-- Feed the events ----------------------------------------------------------

local function send(ev, ...)
	local c = handlers[ev]
	if not c then return end
	for i = 1, #c do
		local ok, err = pcall(c[i], ...)
		if not ok then
			io.stderr:write("VM handler failed: ", tostring(err), "\n")
		end
	end
end

-- Self-test hook (tests/t_audit_replay.sh): JITSFRAME_REPLAY_SKIP=EV:K
-- leaves out the K-th record of type EV, as if the log had lost it.
local skipev, skipk = (os.getenv("JITSFRAME_REPLAY_SKIP") or ""):match("^(%a+):(%d+)$")
skipk = tonumber(skipk)
local seen = {}
local nrec, ntraces = 1, 0
local function feed(rec)
	if type(rec) ~= "table" then error("not a record") end
	local ev = rec.ev
	seen[ev] = (seen[ev] or 0) + 1
	if ev == skipev and seen[ev] == skipk then
		ev = nil
	elseif ev == "func" then
		funcs[rec.id] = rec
	elseif ev == "start" then
		send("trace", "start", rec.tr, fproxy(rec.func), rec.pc, rec.otr, rec.oex)
	elseif ev == "record" then
		curbc = rec.ins and { id = rec.func, pc = rec.pc, ins = rec.ins, m = rec.m } or nil
		send("record", rec.tr, fproxy(rec.func), rec.pc, rec.depth)
		curbc = nil
	elseif ev == "stop" then
		ntraces = ntraces + 1
		traces[rec.tr] = rec
		if rec.gexitstub then for i, a in pairs(rec.gexitstub) do gexit[i] = a end end
		send("trace", "stop", rec.tr, rec.func and fproxy(rec.func) or nil)
	elseif ev == "abort" then
		traces[rec.tr] = rec.info and rec or nil
		if rec.gexitstub then for i, a in pairs(rec.gexitstub) do gexit[i] = a end end
		send("trace", "abort", rec.tr, fproxy(rec.func), rec.pc, dec(rec.err), dec(rec.errinfo))
		traces[rec.tr] = nil
	elseif ev == "flush" then
		traces = {}
		gexit = {} -- the flush freed the exit stubs; the log sends the new ones
		send("trace", "flush")
	elseif ev == "texit" then
		send("texit", rec.tr, rec.ex, rec.ngpr, rec.nfpr, unpack(rec.regs or {}, 1, (rec.ngpr or 0) + (rec.nfpr or 0)))
	end
end
for rec in nextrec do
	nrec = nrec + 1
	local ok, err = pcall(feed, rec)
	if not ok then
		for _, m in ipairs(mods) do pcall(m.off) end
		die(1, format("%s: record %d (%s) is malformed: %s", logpath, nrec,
			type(rec) == "table" and tostring(rec.ev) or type(rec), tostring(err)))
	end
end
for _, m in ipairs(mods) do m.off() end
io.stdout:flush()
local st = status and status()
if st then
	io.stderr:write("jitsframe audit replay: ", logpath, ": ", st, "\n")
	os.exit(1)
end
if os.getenv("JITSFRAME_REPLAY_STATS") then
	io.stderr:write(format("jitsframe audit replay: %d records, %d traces stopped\n", nrec, ntraces))
end
os.exit(0)
