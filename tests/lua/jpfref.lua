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
-- to $JPFREF_OUT.
-- $JPFREF_TICK_US: also send the process SIGPROF every so many µs of wall
-- time (a CLOCK_MONOTONIC POSIX timer). LuaJIT's profiler samples on
-- SIGPROF from ITIMER_PROF, which the kernel expires at its tick (HZ 250
-- here: 4 ms whatever "i1" asks); its handler (lj_profile.c
-- profile_signal) takes the extra signals as ticks like any other, so the
-- profiler itself is unchanged, only its timer is finer. For a CPU-bound
-- single-threaded workload wall time is CPU time.
local ffi = require("ffi")
local profile = require("jit.profile")
local byf, bys = {}, {}
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
end
ffi.cdef [[
struct jpfref_ts { long sec, nsec; };
struct jpfref_its { struct jpfref_ts interval, value; };
struct jpfref_sigev { void *value; int signo, notify; int pad[12]; };
void *signal(int, void *);
int timer_create(int, struct jpfref_sigev *, void **);
int timer_settime(void *, int, const struct jpfref_its *, void *);
int timer_delete(void *);
]]
local SIGPROF, CLOCK_MONOTONIC, SIGEV_SIGNAL = 27, 1, 0
-- lua_close stops the profiler (luaJIT_profile_stop) before finalizers
-- run, and that puts back SIGPROF's disposition from before
-- profile.start: make that "ignore", so a tick of the timer below that
-- comes after it cannot kill the process
ffi.C.signal(SIGPROF, ffi.cast("void *", 1)) -- SIG_IGN
profile.start("fi1", cb)
local timer
local us = tonumber(os.getenv("JPFREF_TICK_US") or "")
if us then
	assert(us >= 50 and us < 1000000, "JPFREF_TICK_US: 50 to 999999")
	local ev = ffi.new("struct jpfref_sigev")
	ev.signo, ev.notify = SIGPROF, SIGEV_SIGNAL
	local id = ffi.new("void *[1]")
	assert(ffi.C.timer_create(CLOCK_MONOTONIC, ev, id) == 0, "timer_create")
	timer = id[0]
	local its = ffi.new("struct jpfref_its")
	its.interval.sec, its.interval.nsec = 0, us * 1000
	its.value.sec, its.value.nsec = 0, us * 1000
	assert(ffi.C.timer_settime(timer, 0, its, nil) == 0, "timer_settime")
end
local out = os.getenv("JPFREF_OUT") or "/dev/stderr"
jpfref_finish = newproxy(true)
getmetatable(jpfref_finish).__gc = function()
	if timer then ffi.C.timer_delete(timer) end
	profile.stop()
	local fp = assert(io.open(out, "w"))
	for k, v in pairs(byf) do fp:write("F ", v, " ", k, "\n") end
	for k, v in pairs(bys) do fp:write("S ", v, " ", k, "\n") end
	fp:close()
end
