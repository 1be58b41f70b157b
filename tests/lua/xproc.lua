-- Two processes, different traces, the same addresses (tests/t_xproc.sh).
-- The process forks before it compiles anything: parent and child then
-- hold the same JIT state (and the same random mcode hint), so the first
-- traces each compiles land at the same address in both, with other code
-- and other lines. Run with the module on (jitsframe run/record): the
-- child makes its own region (REGION-PID) at its first trace.
local ffi = require("ffi")
ffi.cdef [[
int fork(void);
int waitpid(int pid, int *status, int options);
void _exit(int status);
]]
local secs = tonumber(arg and arg[1]) or 1.0

local function child_work(n) -- CHILD LOOP
	local s = 0
	for i = 1, n do
		s = (s + i * 3) % 1000003
	end
	return s
end

local function parent_work(n) -- PARENT LOOP
	local s, t = 0, 1
	for i = 1, n do
		s = (s + t) % 999983
		t = (t * 7 + i) % 65521
	end
	return s
end

local function spin(f)
	local t0, r = os.clock(), 0
	while os.clock() - t0 < secs do
		r = r + f(200000)
	end
	return r
end

local pid = ffi.C.fork()
if pid == 0 then
	io.write("child ", spin(child_work), "\n")
	io.flush()
	os.exit(0) -- a normal exit: the module closes its region and jitdump
end
io.write("parent ", spin(parent_work), "\n")
local st = ffi.new("int[1]")
ffi.C.waitpid(pid, st, 0)
