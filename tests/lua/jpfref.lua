-- tests/t_jpf.sh's reference: LuaJIT's own profiler, started exactly as
-- `luajit -jp=Fi1` starts it (jit/p.lua: jit.profile.start("fi1", cb),
-- each sample's key profile.dumpstack(th, "F", 1)), loaded with -l before
-- the workload. Per sample it keeps two keys of the same running function:
-- -jp=F's label ("chunk:name" when the caller's call site names it, else
-- "chunk:firstline") and "source:linedefined" (debug.getinfo of the
-- sampled thread's level 0: the function -jp=F names), the label
-- jitsframe's Lua frames carry. At exit (lua_close) it writes
--   F <samples> <-jp=F label>
--   S <samples> <source>:<linedefined>
--   M <samples> <source>:<linedefined>
-- (M: the callback that carried the most ticks at once, and the function
-- it charged them to: a tick waits for the VM's next profile check, and a
-- trace loop with none in it merges every tick of its run into one) to
-- $JPFREF_OUT.
-- $JPFREF_TICK_US: also send the process SIGPROF every so many µs
-- (tests/lua/jptick.lua: LuaJIT's profiler with a finer timer).
local jptick = require("jptick")
local profile = require("jit.profile")
local byf, bys = {}, {}
local mx, mxs = 0, "?"
local function cb(th, samples)
	local f = profile.dumpstack(th, "F", 1)
	local i = debug.getinfo(th, 0, "S")
	local s = "?"
	if i and i.what ~= "C" then
		s = i.source:gsub("^[@=]", "") .. ":" .. i.linedefined
	elseif i then
		s = "[C]"
	end
	byf[f] = (byf[f] or 0) + samples
	bys[s] = (bys[s] or 0) + samples
	if samples > mx then mx, mxs = samples, s end
end
jptick.ignore()
profile.start("fi1", cb)
jptick.start(os.getenv("JPFREF_TICK_US"))
local out = os.getenv("JPFREF_OUT") or "/dev/stderr"
jpfref_finish = newproxy(true)
getmetatable(jpfref_finish).__gc = function()
	jptick.stop()
	profile.stop()
	local fp = assert(io.open(out, "w"))
	for k, v in pairs(byf) do fp:write("F ", v, " ", k, "\n") end
	for k, v in pairs(bys) do fp:write("S ", v, " ", k, "\n") end
	fp:write("M ", mx, " ", mxs, "\n")
	fp:close()
end
