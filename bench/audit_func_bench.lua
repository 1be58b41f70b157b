-- audit_func_bench.lua: what one auditlog func record costs, per
-- workload of bench/workloads, with two builds of the module (a baseline
-- and the current one), at level "default", on each VM. Run from the
-- project root:
--
--   luajit bench/audit_func_bench.lua BASE_SO_DIR [NEW_SO_DIR]
--
-- BASE_SO_DIR holds the baseline jitsframe.so (e.g. a build of an older
-- commit: git archive REV | tar -x -C build/base && make -C build/base
-- build/lua/jitsframe.so, then build/base/build/lua); NEW_SO_DIR defaults
-- to build/lua. Environment: FB_REPS (runs per side, default 5), FB_SCALE
-- (workload scale, default 0.5), FB_ONLY (a Lua pattern on workload
-- names), FB_GCSTOP=1 (the collector stopped during the workload: a func
-- record's allocations can trigger an incremental GC step, whose cost,
-- the program's own collection work done early, then counts as ours).
--
-- Each run starts the module with an auditlog (level default) and runs the
-- workload in-process; the figure is stats().auditlog.func_ns / funcs: the
-- time spent building func records (the writer's own clock around
-- write_func), per func record. Runs of the two builds are interleaved;
-- medians of FB_REPS. Also: func records and log bytes per run.
local base, new = arg[1], arg[2] or "build/lua"
assert(base, "usage: luajit bench/audit_func_bench.lua BASE_SO_DIR [NEW_SO_DIR]")
local reps = tonumber(os.getenv("FB_REPS")) or 5
local scale = os.getenv("FB_SCALE") or "0.5"
local only = os.getenv("FB_ONLY")
local function exists(p) local f = io.open(p, "rb") if f then f:close() return true end end
local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
local vms = { { name = "luajit", bin = os.getenv("LUAJIT") or "luajit", env = "" } }
local lj2 = "build/luajit2/usr/bin/luajit"
if exists(lj2) then
	vms[#vms + 1] = { name = "luajit2", bin = lj2,
		env = "LUA_PATH=" .. sh_quote("build/luajit2/usr/share/luajit-2.1.0-beta3/?.lua;;") .. " " }
end
local tmp = os.tmpname()
os.remove(tmp)
assert(os.execute("mkdir -m 700 " .. sh_quote(tmp)) == 0 or true)

-- one run: prints "func_ns funcs bytes"
local driver = [[
local dir, wl, scale, log = ...
package.cpath = dir .. "/?.so;" .. package.cpath
local jsf = require("jitsframe")
assert(jsf.start { auditlog = log, level = "default", replace = true })
local f = assert(loadfile(wl))
arg = { [0] = wl, scale }
if os.getenv("FB_GCSTOP") == "1" then collectgarbage("stop") end
local so = io.stdout
io.stdout = io.open("/dev/null", "w")
local rw = io.write
io.write = function(...) return io.stdout:write(...) end
local rp = print
print = function() end
f(scale)
print, io.write, io.stdout = rp, rw, so
local a = jsf.stats().auditlog
jsf.stop()
io.stderr:write(string.format("FB %d %d %d\n", a.func_ns, a.funcs, a.bytes))
]]
local dpath = tmp .. "/driver.lua"
local df = assert(io.open(dpath, "w"))
df:write(driver)
df:close()

local function run(vm, dir, wl)
	local cmd = vm.env .. sh_quote(vm.bin) .. " " .. sh_quote(dpath) .. " " .. sh_quote(dir) .. " " ..
		sh_quote("bench/workloads/" .. wl .. ".lua") .. " " .. scale .. " " .. sh_quote(tmp .. "/log") ..
		" 2>&1 >/dev/null"
	local p = assert(io.popen(cmd))
	local out = p:read("*a")
	p:close()
	local ns, n, bytes = out:match("FB (%d+) (%d+) (%d+)")
	assert(ns, "run failed: " .. cmd .. "\n" .. out)
	return tonumber(ns), tonumber(n), tonumber(bytes)
end
local function median(t)
	table.sort(t)
	local n = #t
	return n % 2 == 1 and t[(n + 1) / 2] or (t[n / 2] + t[n / 2 + 1]) / 2
end

print(("| VM | workload | func records | base ns/func | new ns/func | new/base | base log bytes | new log bytes |"))
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for _, vm in ipairs(vms) do
	for _, wl in ipairs { "numeric", "sidetraces", "flushstorm", "nested", "openresty" } do
		if not only or wl:match(only) then
			local b, nw, bb, nb, nf = {}, {}, {}, {}, 0
			for _ = 1, reps do
				local ns, n, by = run(vm, base, wl)
				b[#b + 1] = ns / math.max(n, 1)
				bb[#bb + 1] = by
				ns, n, by = run(vm, new, wl)
				nw[#nw + 1] = ns / math.max(n, 1)
				nb[#nb + 1] = by
				nf = n
			end
			local mb, mn = median(b), median(nw)
			print(("| %s | %s | %d | %.0f | %.0f | %.3f | %d | %d |"):format(vm.name, wl, nf, mb, mn, mn / mb,
				median(bb), median(nb)))
			io.stdout:flush()
		end
	end
end
os.execute("rm -rf " .. sh_quote(tmp))
