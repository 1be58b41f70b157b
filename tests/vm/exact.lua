-- SPDX-License-Identifier: MIT
-- One scenario of tests/t_vm.sh: hot Lua loops call jsf_probe (tests/probe.c)
-- through the FFI, i.e. from trace code; the probe checks the published row
-- for each call against the stack (see probe.c), this script checks that
-- the scenario really built the traces it is about.
--
--   JSF_TEST_REGION=FILE JSF_PROBE=build/tests/libprobe.so \
--   LUA_CPATH="build/lua/?.so;;" luajit tests/vm/exact.lua SCENARIO
--
-- Prints "# ..." diagnostics, "AT <ns>" (a CLOCK_MONOTONIC time at which the
-- scenario's traces were live, for `region export --at`), and last
-- "PASS <summary>" or "FAIL <reasons>".
local NAME = arg and arg[1] or error("usage: exact.lua SCENARIO")
local ffi = require("ffi")
local ju = require("jit.util")
local jsf = require("jitsframe")
local PROBE = os.getenv("JSF_PROBE") or "build/tests/libprobe.so"
local REGION = os.getenv("JSF_TEST_REGION") or error("JSF_TEST_REGION not set")

ffi.cdef [[
int jsf_probe(int kind);
int jsf_probe_init(const char *region);
const char *jsf_probe_error(void);
const char *jsf_probe_details(void);
double jsf_probe_hits(double start);
void jsf_probe_reset_hits(void);
void jsf_probe_dirty(void);
int jsf_probe_not_traced(double *out, int max);
uint64_t jsf_probe_now(void);
int jsf_probe_host_cb(int (*cb)(int), int n);
struct jsf_probe_stats {
	uint64_t calls, from_trace, not_trace, ok, mismatches, lookup_errors,
		rbp_checked, slots_scanned, max_cfa, min_cfa, full_scans;
};
void jsf_probe_get(struct jsf_probe_stats *out);
void qsort(void *base, size_t n, size_t size,
	   int (*cmp)(const void *, const void *));
]]

local P = ffi.load(PROBE)
local host = assert(package.loadlib(PROBE, "luaopen_probe"))()
local K = {PCALL = 1, RESUME = 2, CALL = 3, LIBC = 4,
	HOST_CALL = 5, HOST_RESUME = 6, HOST_CB = 7}
local CFRAME_JIT = 96

local fails = {}
local function check(cond, fmt, ...)
	if not cond then fails[#fails + 1] = string.format(fmt, ...) end
	return cond
end
local function diag(fmt, ...) print("# " .. string.format(fmt, ...)) end
local function num(u) return tonumber(u) end

local started, why = jsf.start {region = REGION, replace = true}
if not started then
	print("FAIL jsf.start: " .. tostring(why))
	os.exit(1)
end
if P.jsf_probe_init(REGION) ~= 0 then
	print("FAIL probe init: " .. ffi.string(P.jsf_probe_error()))
	os.exit(1)
end
local probe = P.jsf_probe
-- Compiling a trace leaves frames below the interpreter's (probe.c): the
-- probe scans from rsp only after a scrub with no trace event since.
jit.attach(function() P.jsf_probe_dirty() end, "trace")
local function scrub()
	host.scrub()
end
-- Run fn (compiling its traces), scrub the stack, run fn again.
local function twice(fn, ...)
	fn(...)
	scrub()
	return fn(...)
end

-- ------------------------------------------------------------ trace survey

-- Every live trace, from jit.util (addresses, links) and what the module
-- published for it (jsf.rows), with the probe's call count. With the GC
-- stopped: LuaJIT frees a trace nothing reaches any more (a root trace
-- unlinked from its prototype) only when the GC sweeps it, so a trace
-- traceinfo returned could be gone by traceir, its parent nil (1 recursion
-- run in ~500 did that); until the number is reused, its rows stay
-- published (docs/VM.md, "Lifecycle").
local function traces()
	local list, by = {}, {}
	collectgarbage("stop")
	for tr = 1, 8000 do
		local info = ju.traceinfo(tr)
		if info then
			local mc, addr, loop = ju.tracemc(tr)
			local _, _, parent = ju.traceir(tr, 0)
			local r = jsf.rows(tr)
			local t = {tr = tr, linktype = info.linktype, link = info.link,
				parent = parent, addr = addr, size = mc and #mc or 0,
				loop = loop, r = r, hits = r and P.jsf_probe_hits(r.start) or 0}
			list[#list + 1] = t
			by[tr] = t
		end
	end
	collectgarbage("restart")
	return list, by
end

local function rowstr(t)
	if not t.r then return "(not published)" end
	local s = {}
	for _, w in ipairs(t.r.rows) do s[#s + 1] = w.offset .. ":" .. w.cfa end
	return table.concat(s, " ")
end

-- The trace has a tail row: the last row starts at the final jmp (size-5)
-- and is the base frame.
local function has_tail(t)
	local rows = t.r and t.r.rows
	if not rows or #rows < 2 then return false end
	local last = rows[#rows]
	return last.offset == t.size - 5 and last.cfa == CFRAME_JIT
end

local function spadj(t) return t.r and t.r.spadj or -1 end

-- Published == what jit.util says: every live trace, its exact range.
local function check_published(list)
	for _, t in ipairs(list) do
		if check(t.r and t.r.live, "trace %d not published", t.tr) then
			check(t.r.start == t.addr and t.r.size == t.size,
				"trace %d published as %x+%d, jit.util says %x+%d", t.tr,
				t.r.start, t.r.size, t.addr, t.size)
		end
	end
end

local function dump(list)
	for _, t in ipairs(list) do
		diag("trace %d parent %d %s->%d size %d spadj %d rows [%s] probe hits %d",
			t.tr, t.parent, t.linktype, t.link, t.size, spadj(t), rowstr(t), t.hits)
	end
end

local function stats()
	local st = ffi.new("struct jsf_probe_stats")
	P.jsf_probe_get(st)
	return st
end

local function print_at()
	print("AT " .. string.format("%.0f", num(P.jsf_probe_now())))
end

-- The end of every scenario: the probe saw enough calls from traces, and
-- no disagreement; nothing was skipped; calls the region did not cover
-- were not from any live trace.
local function finish(list, min_trace, min_rbp, min_full, refused)
	refused = refused or {}
	local nrefused = 0
	for _ in pairs(refused) do nrefused = nrefused + 1 end
	local st = stats()
	local s = jsf.stats()
	diag("probe: %d calls, %d from traces (%d checked ok, %d mismatches), " ..
		"%d from the interpreter, %d rbp checks, %d scans from rsp, %d slots scanned, " ..
		"cfa sp+%d..sp+%d",
		num(st.calls), num(st.from_trace), num(st.ok), num(st.mismatches),
		num(st.not_trace), num(st.rbp_checked), num(st.full_scans), num(st.slots_scanned),
		st.min_cfa == ffi.cast("uint64_t", -1) and 0 or num(st.min_cfa), num(st.max_cfa))
	diag("module: traces %d published %d skipped %d removed %d%s", s.traces,
		s.published, s.skipped, s.removed, s.last_skip and (" (" .. s.last_skip .. ")") or "")
	check(num(st.mismatches) == 0, "%d mismatches: %s", num(st.mismatches),
		ffi.string(P.jsf_probe_details()))
	check(num(st.lookup_errors) == 0, "%d lookup errors", num(st.lookup_errors))
	check(num(st.from_trace) >= min_trace, "only %d probe calls from traces (want >= %d)",
		num(st.from_trace), min_trace)
	check(num(st.ok) == num(st.from_trace), "ok %d != from_trace %d", num(st.ok), num(st.from_trace))
	if min_full then
		check(num(st.full_scans) >= min_full, "only %d scans from rsp (want >= %d)",
			num(st.full_scans), min_full)
	end
	if min_rbp then
		check(num(st.rbp_checked) >= min_rbp, "only %d rbp checks (want >= %d)",
			num(st.rbp_checked), min_rbp)
	end
	check(not s.failed, "module failed")
	check(s.skipped == nrefused, "module skipped %d traces (%s), expected %d",
		s.skipped, tostring(s.last_skip), nrefused)
	if list then
		local buf = ffi.new("double[32]")
		local n = P.jsf_probe_not_traced(buf, 32)
		for i = 0, n - 1 do
			local ra = buf[i]
			for _, t in ipairs(list) do
				check(refused[t.tr] or not (ra >= t.addr and ra < t.addr + t.size),
					"call from trace %d at %x was not found in the region", t.tr, ra)
			end
		end
	end
	return st
end

local function exists(list, pred)
	for _, t in ipairs(list) do if pred(t) then return t end end
end

-- ------------------------------------------------------------- workloads

-- A side trace with many live doubles across the probe call: a small
-- parent (<= 128) and a side trace adding more than 128 bytes.
local function side_big(n)
	local x, y = 0, 0
	for i = 1, n do
		x = x + probe(K.PCALL)
		if i % 4 == 0 then
			local a1, a2, a3, a4, a5, a6, a7, a8 = i * 1.001, i * 1.002, i * 1.003,
				i * 1.004, i * 1.005, i * 1.006, i * 1.007, i * 1.008
			local b1, b2, b3, b4, b5, b6, b7, b8 = a1 * 2.1, a2 * 2.2, a3 * 2.3,
				a4 * 2.4, a5 * 2.5, a6 * 2.6, a7 * 2.7, a8 * 2.8
			local c1, c2, c3, c4, c5, c6, c7, c8 = a1 * 3.1, a2 * 3.2, a3 * 3.3,
				a4 * 3.4, a5 * 3.5, a6 * 3.6, a7 * 3.7, a8 * 3.8
			y = y + probe(K.PCALL)
			y = y + b1 + b2 + b3 + b4 + b5 + b6 + b7 + b8 + c1 + c2 + c3 + c4 +
				c5 + c6 + c7 + c8 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8
		end
	end
	return x + y
end

-- Side traces of side traces, each adjusting further.
local function side_nested(n)
	local x, y, z = 0, 0, 0
	for i = 1, n do
		local a1, a2, a3, a4 = i * 1.001, i * 1.002, i * 1.003, i * 1.004
		x = x + probe(K.PCALL)
		if i % 2 == 0 then
			local b1, b2, b3, b4, b5, b6, b7, b8 = a1 * 2.1, a2 * 2.2, a3 * 2.3,
				a4 * 2.4, a1 * 2.5, a2 * 2.6, a3 * 2.7, a4 * 2.8
			y = y + probe(K.PCALL)
			if i % 4 == 0 then
				local c1, c2, c3, c4, c5, c6, c7, c8 = b1 * 3.1, b2 * 3.2, b3 * 3.3,
					b4 * 3.4, b5 * 3.5, b6 * 3.6, b7 * 3.7, b8 * 3.8
				local d1, d2, d3, d4, d5, d6, d7, d8 = b1 * 4.1, b2 * 4.2, b3 * 4.3,
					b4 * 4.4, b5 * 4.5, b6 * 4.6, b7 * 4.7, b8 * 4.8
				z = z + probe(K.PCALL)
				z = z + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + d1 + d2 + d3 + d4 +
					d5 + d6 + d7 + d8
			end
			y = y + b1 + b2 + b3 + b4 + b5 + b6 + b7 + b8
		end
		x = x + a1 + a2 + a3 + a4
	end
	return x + y + z
end

-- A loop whose calls enter the VM through `kind`, with a few live doubles
-- across the probe call (so the trace adjusts rsp).
local function hot(kind, n)
	local acc, f = 0, 0.5
	for i = 1, n do
		local a, b = i * 1.25, i * f
		acc = acc + probe(kind)
		acc = acc + a + b
	end
	return acc
end

-- ------------------------------------------------------------- scenarios

local S = {}

function S.root()
	twice(function()
		local acc = 0
		for _ = 1, 10000 do acc = acc + probe(K.PCALL) end
		return acc
	end)
	local list = traces()
	dump(list)
	check_published(list)
	check(exists(list, function(t)
		return t.parent == 0 and t.linktype == "loop" and t.hits >= 1000
	end), "no root loop trace with >= 1000 probe calls")
	print_at()
	finish(list, 10000, nil, 5000)
end

function S.side()
	side_big(4000)
	side_nested(6000)
	scrub()
	side_big(2000)
	side_nested(2000)
	local list, by = traces()
	dump(list)
	check_published(list)
	-- a side trace above 128 bytes with its parent at or below 128
	check(exists(list, function(t)
		local p = by[t.parent]
		return p and spadj(t) > 128 and spadj(p) <= 128 and t.hits > 0 and has_tail(t)
	end), "no side trace with spadj > 128 over a parent <= 128 (called, with a tail row)")
	-- a side trace whose own head adds more than 128 (imm32 add)
	check(exists(list, function(t)
		local p = by[t.parent]
		return p and spadj(t) - spadj(p) > 128 and t.hits > 0
	end), "no side trace adding > 128 to its parent's adjustment")
	-- a side trace of a side trace that adjusts further: its first row is
	-- its parent's non-zero frame
	check(exists(list, function(t)
		local p = by[t.parent]
		return p and p.parent ~= 0 and spadj(p) > 0 and spadj(t) > spadj(p) and
			t.hits > 0 and t.r.rows[1].cfa == CFRAME_JIT + spadj(p) and
			#t.r.rows >= 2 and t.r.rows[2].cfa == CFRAME_JIT + spadj(t)
	end), "no side trace of a side trace with a larger adjustment (called)")
	print_at()
	finish(list, 5000, nil, 3000)
end

-- Linked traces: a root trace entered at a function and linked to the loop
-- trace inside it (tail add, then jmp to the other trace); a side trace
-- that leaves to the interpreter through a tail add; loops and non-loops.
local function linked_g(j)
	local a1, a2, a3, a4, a5, a6 = j * 1.1, j * 1.2, j * 1.3, j * 1.4, j * 1.5, j * 1.6
	local acc = probe(K.PCALL)
	acc = acc + a1 + a2 + a3 + a4 + a5 + a6 + probe(K.PCALL)
	for _ = 1, 20 do acc = acc + probe(K.PCALL) end
	return acc
end
local function linked_driver(n)
	local s = 0
	for j = 1, n do s = s + linked_g(j) end
	return s
end
jit.off(linked_driver) -- linked_g's entry gets hot, not the driver's loop

function S.link()
	linked_driver(600)
	scrub()
	linked_driver(300)
	local list, by = traces()
	dump(list)
	check_published(list)
	check(exists(list, function(t)
		return t.parent == 0 and t.linktype ~= "loop" and t.link ~= 0 and
			t.link ~= t.tr and by[t.link] and has_tail(t) and t.hits > 0
	end), "no called root non-looping trace linked to another trace through a tail add")
	check(exists(list, function(t)
		return t.linktype == "interpreter" and has_tail(t)
	end), "no trace leaving to the interpreter through a tail add")
	check(exists(list, function(t) return t.linktype == "loop" and t.hits > 0 end),
		"no looping trace called")
	check(exists(list, function(t) return t.linktype ~= "loop" and t.hits > 0 end),
		"no non-looping trace called")
	print_at()
	finish(list, 5000, nil, 3000)
end

-- coroutine.resume from Lua: the VM calls its own entry.
function S.coroutine()
	twice(function()
		local co = coroutine.create(function()
			for _ = 1, 40 do coroutine.yield(hot(K.RESUME, 200)) end
		end)
		while coroutine.status(co) ~= "dead" do assert(coroutine.resume(co)) end
	end)
	local list = traces()
	dump(list)
	check_published(list)
	print_at()
	finish(list, 8000, nil, 200)
end

-- lua_resume from a C host (probe.c): [CFA-16] is the host's rbp.
function S.host_resume()
	twice(function()
		local co = coroutine.create(function()
			for _ = 1, 40 do coroutine.yield(hot(K.HOST_RESUME, 200)) end
		end)
		local rounds = 0
		while coroutine.status(co) ~= "dead" do
			local st, err = host.host_resume(co)
			assert(st <= 1, err)
			rounds = rounds + 1
		end
		check(rounds == 41, "host resumed %d times", rounds)
	end)
	local list = traces()
	dump(list)
	check_published(list)
	print_at()
	finish(list, 8000, 8000, 200)
end

-- lua_call from a C host.
function S.host_call()
	for _ = 1, 3 do host.host_call(hot, K.HOST_CALL, 3000) end
	scrub()
	for _ = 1, 2 do host.host_call(hot, K.HOST_CALL, 3000) end
	local list = traces()
	dump(list)
	check_published(list)
	print_at()
	finish(list, 10000, 10000, 5000)
end

-- string.gsub calling a Lua function that loops (lua_call inside the VM's
-- library).
local function gsub_fn(w)
	local acc = 0
	for _ = 1, 12 do acc = acc + probe(K.CALL) end
	return w
end
function S.gsub()
	local s = string.rep("abc ", 400)
	for _ = 1, 3 do s:gsub("%a+", gsub_fn) end
	scrub()
	for _ = 1, 2 do s:gsub("%a+", gsub_fn) end
	local list = traces()
	dump(list)
	check_published(list)
	print_at()
	finish(list, 10000, nil, 5000)
end

-- A new closure of the same function for every round: the loop trace's
-- guard on the closure fails at the loop's start, and the side trace from
-- there forms a loop of its own (LuaJIT's "extra loop", lj_record.c
-- rec_loop_jit: a looping side trace). Also how string.gsub with a fresh
-- function literal per call behaves.
local function closure_driver(f, n)
	local s = 0
	for _ = 1, n do s = s + f(2.5) end
	return s
end
jit.off(closure_driver) -- call the closures from the interpreter
local function side_loop(rounds, n)
	for k = 1, rounds do
		-- from the second closure on, the loop takes a path with many live
		-- doubles (an upvalue the trace specialises on): the looping side
		-- trace adjusts rsp beyond its parent's
		local heavy = k >= 2
		closure_driver(function(w)
			local acc = 0
			for i = 1, 12 do
				if heavy then
					local a1, a2, a3, a4, a5, a6, a7, a8 = i * 1.1, i * 1.2, i * 1.3,
						i * 1.4, i * 1.5, i * 1.6, i * 1.7, i * 1.8
					local b1, b2, b3, b4, b5, b6, b7, b8 = a1 * w, a2 * w, a3 * w,
						a4 * w, a5 * w, a6 * w, a7 * w, a8 * w
					acc = acc + probe(K.PCALL) * w
					acc = acc + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + b1 + b2 +
						b3 + b4 + b5 + b6 + b7 + b8
				else
					acc = acc + probe(K.PCALL) * w
				end
			end
			return acc
		end, n)
	end
end
function S.side_loop()
	side_loop(3, 400)
	local list, by = traces()
	dump(list)
	check(exists(list, function(t)
		return t.parent ~= 0 and by[t.parent] and t.linktype == "loop" and t.link == t.tr
	end), "no looping side trace")
	-- A looping side trace whose head adds to rsp has no tail add to
	-- confirm that reading by: the module decodes its head instruction by
	-- instruction (lj/x86len.c) to exactly that add and the store. Such a
	-- trace must exist here, be published with its own frame after the
	-- add, and every probe call from it must match the real stack.
	local headadd
	for _, t in ipairs(list) do
		local p = by[t.parent]
		if p and t.linktype == "loop" and t.link == t.tr and t.r and
			p.r and t.r.spadj > p.r.spadj then
			headadd = t
		end
	end
	if check(headadd, "no published looping side trace with a head add") then
		diag("looping side trace %d: parent %d spadj %d -> %d, rows %s, %d probe hits",
			headadd.tr, headadd.parent, by[headadd.parent].r.spadj, headadd.r.spadj,
			rowstr(headadd), headadd.hits)
		check(headadd.hits > 0, "no probe call from looping side trace %d", headadd.tr)
	end
	for _, t in ipairs(list) do
		if check(t.r and t.r.live, "trace %d not published", t.tr) then
			check(t.r.start == t.addr and t.r.size == t.size,
				"trace %d published as %x+%d, jit.util says %x+%d", t.tr,
				t.r.start, t.r.size, t.addr, t.size)
		end
	end
	print_at()
	finish(list, 4000)
end

-- Recursive functions: up-recursion and tail-recursion traces.
local function fib(n)
	local p = probe(K.PCALL)
	if n < 2 then return n * p end
	return fib(n - 1) + fib(n - 2)
end
local function tailrec(n, a)
	if n == 0 then return a end
	return tailrec(n - 1, a + probe(K.PCALL))
end
function S.recursion()
	local function run()
		check(fib(20) == 6765, "fib")
		for _ = 1, 100 do tailrec(200, 0) end
	end
	twice(run)
	local list = traces()
	dump(list)
	check_published(list)
	-- which of the two fib() gives depends on hot-counter collisions
	check(exists(list, function(t)
		return (t.linktype == "up-recursion" or t.linktype == "down-recursion") and t.hits > 0
	end), "no up- or down-recursion trace called")
	check(exists(list, function(t) return t.linktype == "tail-recursion" and t.hits > 0 end),
		"no tail-recursion trace called")
	print_at()
	-- scans from rsp need a clean stack, which trace events dirty: runs
	-- that retrace recursion often (86 traces in one CI run) gave only 304
	finish(list, 5000, nil, 100)
end

-- Trace stitching around a call the JIT does not compile (os.clock).
function S.stitch()
	twice(function()
		local t = 0
		for i = 1, 3000 do
			local a = i * 1.5
			t = t + probe(K.PCALL) + os.clock() * 0 + a + probe(K.PCALL)
		end
		return t
	end)
	local list = traces()
	dump(list)
	check_published(list)
	check(exists(list, function(t) return t.linktype == "stitch" and t.hits > 0 end),
		"no stitch trace called")
	print_at()
	finish(list, 3000, nil, 1000)
end

-- An FFI callback called by libc's qsort, looping inside.
function S.qsort()
	local cmp = ffi.cast("int (*)(const void *, const void *)", function(a, b)
		local acc = 0
		for _ = 1, 8 do acc = acc + probe(K.LIBC) end
		local x = ffi.cast("const int *", a)[0]
		local y = ffi.cast("const int *", b)[0]
		return (x < y and -1 or (x > y and 1 or 0)) + acc * 0
	end)
	local function sortit()
		local n = 300
		local arr = ffi.new("int[?]", n)
		for i = 0, n - 1 do arr[i] = (i * 7919) % 1009 end
		ffi.C.qsort(arr, n, 4, cmp)
		for i = 1, n - 1 do assert(arr[i - 1] <= arr[i], "not sorted") end
	end
	jit.off(sortit) -- callbacks may not be called from C called by a trace
	sortit()
	sortit()
	scrub()
	sortit()
	local list = traces()
	dump(list)
	check_published(list)
	print_at()
	finish(list, 5000)
	cmp:free()
end

-- An FFI callback called through a function pointer by a C host.
function S.host_cb()
	local cb = ffi.cast("int (*)(int)", function(i)
		local acc = 0
		for k = 1, 8 do acc = acc + probe(K.HOST_CB) + k * 0.5 end
		return i + acc * 0
	end)
	local function run()
		local a = P.jsf_probe_host_cb(cb, 800)
		local b = P.jsf_probe_host_cb(cb, 800)
		return a + b
	end
	jit.off(run)
	check(twice(run) == 2 * (799 * 800 / 2), "callback results")
	local list = traces()
	dump(list)
	check_published(list)
	print_at()
	finish(list, 10000, 10000, 5000)
	cb:free()
end

-- Flush storms: jit.flush() between rounds; with tests/mcreuse.c preloaded
-- the machine code comes back at the same addresses, and since the rounds
-- alternate the order of two workloads, new traces cover addresses where
-- other traces (other rows) were before. Every fourth round jit.flush(1) +
-- a full GC instead: the trace is freed silently and its number reused at
-- a new address. The probe must keep agreeing.
function S.flush()
	local rounds = tonumber(os.getenv("JSF_FLUSH_ROUNDS")) or 24
	local gen = 0     -- full flushes so far
	local called = {} -- {gen, addr, size, rows} of traces called
	local num_at = {} -- trace number -> address last seen
	local same, other, renumbered = 0, 0, 0
	local list
	for round = 1, rounds do
		P.jsf_probe_reset_hits()
		local function work(k)
			if round % 2 == 1 then
				side_big(600 * k)
				linked_driver(150 * k)
			else
				linked_driver(150 * k)
				side_big(600 * k)
			end
		end
		work(1)
		scrub()
		work(0.5)
		list = traces()
		check_published(list)
		local new = {}
		for _, t in ipairs(list) do
			if t.hits > 0 and t.r then
				local rs = rowstr(t)
				local s1, o1 = false, false
				for _, c in ipairs(called) do
					if c.gen < gen and t.addr < c.addr + c.size and c.addr < t.addr + t.size then
						if c.addr == t.addr and c.rows == rs then s1 = true
						elseif c.rows ~= rs then o1 = true end
					end
				end
				if s1 then same = same + 1 end
				if o1 then other = other + 1 end
				new[#new + 1] = {gen = gen, addr = t.addr, size = t.size, rows = rs}
			end
			if num_at[t.tr] and num_at[t.tr] ~= t.addr then renumbered = renumbered + 1 end
			num_at[t.tr] = t.addr
		end
		for _, c in ipairs(new) do called[#called + 1] = c end
		if round == rounds then break end
		if round % 4 == 0 then
			jit.flush(1)
			collectgarbage()
			collectgarbage()
		else
			jit.flush()
			gen = gen + 1
		end
	end
	dump(list)
	local s = jsf.stats()
	diag("%d rounds, %d full flushes: %d traces called at the address and rows of a " ..
		"flushed one, %d over flushed code with other rows; %d trace numbers reused at " ..
		"another address; %d rows removed", rounds, gen, same, other, renumbered, s.removed)
	check(same >= 1, "no trace came back at a flushed trace's address (is mcreuse preloaded?)")
	check(other >= 1, "no trace was called over flushed code that had other rows")
	check(renumbered >= 1, "no trace number was reused at another address")
	check(s.removed > 0, "nothing was removed from the region")
	print_at()
	finish(list, 5000, nil, 5000)
end

-- Under gdb (tests/vm/gdbstep.py): build the traces, list them in
-- $JSF_GDB_INFO, then rounds of: stop with SIGTRAP (gdb reads the region
-- once, sets breakpoints at the next trace starts), run the same code again
-- while gdb steps through the traces instruction by instruction.
local function gdb_work()
	side_big(400)
	side_nested(400)
	linked_driver(40)
	side_loop(3, 100)
end
function S.gdb()
	ffi.cdef "int raise(int sig);"
	for _ = 1, 10 do gdb_work() end
	local list = traces()
	dump(list)
	local f = assert(io.open(os.getenv("JSF_GDB_INFO") or error("JSF_GDB_INFO not set"), "w"))
	for _, t in ipairs(list) do
		f:write(string.format("%d %d %s %d %.0f %d\n", t.tr, t.parent, t.linktype,
			t.link, t.addr, t.size))
	end
	f:close()
	-- SIGTRAP: gdb takes over; it sets breakpoints at a few trace starts at
	-- each of these stops (there are 4 debug registers)
	for _ = 1, tonumber(os.getenv("JSF_GDB_ROUNDS")) or 14 do
		ffi.C.raise(5)
		gdb_work()
	end
	local after = traces()
	check_published(after)
	print_at()
	finish(after, 1000)
end

local fn = S[NAME] or error("unknown scenario " .. NAME)
fn()
if #fails == 0 then
	local st = stats()
	print(string.format("PASS %s: %d probe calls from traces checked%s", NAME,
		num(st.from_trace), num(st.rbp_checked) > 0 and
		string.format(" (%d with the host's rbp)", num(st.rbp_checked)) or ""))
else
	print("FAIL " .. NAME .. ": " .. table.concat(fails, "; "))
	os.exit(1)
end
