-- The workload of tests/t_wholestack.sh: a statically known call structure
-- with the JIT on (traces), a function kept in the interpreter (jit.off),
-- deep chains, recursion, pcall, string.gsub with a Lua callback,
-- coroutines (coroutine.wrap and coroutine.resume) and an FFI callback
-- called by C qsort. It prints each function's first line (debug.getinfo:
-- the ground truth the test checks stacks against) as "FN name line".
local ffi = require("ffi")
ffi.cdef [[
void qsort(void *base, size_t nmemb, size_t size,
	   int (*compar)(const void *, const void *));
]]
local function leaf(n)
	local x = 0
	for i = 1, n do x = x + i % 7 end
	return x
end
local function slow(n) -- kept in the interpreter
	-- (no %: the interpreter's vm_mod subroutine runs 8 bytes below the
	-- unwind row LuaJIT gives its whole interpreter, so native frames
	-- rootward of it are lost: a native-unwinding matter, not the Lua
	-- walk's; see the report of h-jpf13)
	local x = 0
	for i = 1, n do x = x * 0.5 + i end
	return x
end
jit.off(slow)
local function c(n) return leaf(n) + slow(n / 8) end
local function b(n) return c(n) + 1 end
local function a(n) return b(n) + 1 end
local function rec(k, n)
	if k == 0 then return leaf(n) end
	return rec(k - 1, n) + 1
end
local function viapcall(n)
	local ok, r = pcall(a, n)
	return r
end
local function cb(s) leaf(12000) return s end
local function viagsub() return (string.gsub("abcdefgh", "%a", cb)) end
local function cobody(n) -- the function of both coroutines
	while true do n = coroutine.yield(a(n)) end
end
local wrapped = coroutine.wrap(cobody)
local function viawrap(n) local r = wrapped(n) return r end -- no tail call
local co = coroutine.create(cobody)
local function viaresume(n)
	local ok, r = coroutine.resume(co, n)
	return r
end
local ints = ffi.new("int[?]", 64)
local function cmp(pa, pb)
	local x, y = ffi.cast("const int *", pa)[0], ffi.cast("const int *", pb)[0]
	local s = 0
	for i = 1, 60 do s = s + (x + i) % 3 end
	return x < y and -1 or (x > y and 1 or 0)
end
local ccmp = ffi.cast("int (*)(const void *, const void *)", cmp)
-- the unsorted input, copied in by ffi.copy (a C function, memcpy from a
-- trace): viaqsort itself only calls, as every non-leaf function here
-- (a loop of its own would be time in a function that is no leaf)
local unsorted = ffi.new("int[?]", 64)
for i = 0, 63 do unsorted[i] = (i * 37) % 64 end
local function viaqsort()
	ffi.copy(ints, unsorted, 256)
	ffi.C.qsort(ints, 64, 4, ccmp)
	return ints[0]
end
local secs = tonumber(arg and arg[1]) or 2
-- each leaf call long (80,000 iterations): a call and a return are the
-- caller's own time, a true stack the oracle cannot tell from a walk that
-- dropped the leaf; at 20,000 they were 0.3-0.6% of the samples
for _, f in ipairs{{"leaf", leaf}, {"slow", slow}, {"c", c}, {"b", b},
		   {"a", a}, {"rec", rec}, {"viapcall", viapcall}, {"cb", cb},
		   {"viagsub", viagsub}, {"cobody", cobody},
		   {"viawrap", viawrap}, {"viaresume", viaresume},
		   {"cmp", cmp}, {"viaqsort", viaqsort}} do
	print("FN " .. f[1] .. " " .. debug.getinfo(f[2], "S").linedefined)
end
io.stdout:flush()
local t0 = os.clock()
while os.clock() - t0 < secs do
	a(80000)
	rec(8, 80000)
	viapcall(80000)
	viagsub()
	viawrap(80000)
	viaresume(80000)
	viaqsort()
end
