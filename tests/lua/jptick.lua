-- jptick: a finer timer for LuaJIT's own profiler, for the references
-- that run it (tests/lua/jpfref.lua, jpvref.lua). LuaJIT's profiler
-- samples on SIGPROF from ITIMER_PROF, which the kernel expires only at
-- its tick (HZ 250 here: 4 ms, whatever "i1" asks). start(us) also sends
-- the process SIGPROF every us microseconds of wall time from a
-- CLOCK_MONOTONIC POSIX timer; LuaJIT's handler (lj_profile.c
-- profile_signal) takes each signal as a tick like any other, so the
-- profiler itself is unchanged, only its timer is finer. For a CPU-bound
-- single-threaded workload wall time is CPU time.
--   local jptick = require("jptick")
--   jptick.ignore()             -- before jit.profile.start
--   profile.start(mode, cb)
--   jptick.start(os.getenv("...")) -- us, or nil: no extra timer
--   ... jptick.stop()           -- before profile.stop
local ffi = require("ffi")
ffi.cdef [[
struct jptick_ts { long sec, nsec; };
struct jptick_its { struct jptick_ts interval, value; };
struct jptick_sigev { void *value; int signo, notify; int pad[12]; };
void *signal(int, void *);
int timer_create(int, struct jptick_sigev *, void **);
int timer_settime(void *, int, const struct jptick_its *, void *);
int timer_delete(void *);
]]
local SIGPROF, CLOCK_MONOTONIC, SIGEV_SIGNAL = 27, 1, 0
local M, timer = {}, nil

-- lua_close stops the profiler (luaJIT_profile_stop) before finalizers
-- run, and that puts back SIGPROF's disposition from before
-- profile.start: make that "ignore", so a tick of the timer that comes
-- after it cannot kill the process
function M.ignore()
	ffi.C.signal(SIGPROF, ffi.cast("void *", 1)) -- SIG_IGN
end

function M.start(us)
	us = tonumber(us or "")
	if not us then return end
	assert(us >= 50 and us < 1000000, "jptick: 50 to 999999 us")
	local ev = ffi.new("struct jptick_sigev")
	ev.signo, ev.notify = SIGPROF, SIGEV_SIGNAL
	local id = ffi.new("void *[1]")
	assert(ffi.C.timer_create(CLOCK_MONOTONIC, ev, id) == 0, "timer_create")
	timer = id[0]
	local its = ffi.new("struct jptick_its")
	its.interval.sec, its.interval.nsec = 0, us * 1000
	its.value.sec, its.value.nsec = 0, us * 1000
	assert(ffi.C.timer_settime(timer, 0, its, nil) == 0, "timer_settime")
end

function M.stop()
	if timer then ffi.C.timer_delete(timer) end
	timer = nil
end

return M
