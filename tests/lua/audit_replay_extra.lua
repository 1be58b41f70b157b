-- tests/t_audit_replay.sh: what the bench workloads do not make LuaJIT
-- print, for the replay to reproduce.
local ffi = require("ffi")
local n = 0
-- an abort whose errinfo is a function (jit.dump/jit.v format it with
-- funcinfo): "NYI: unsupported variant of FastFunc ffi.typeof"
for i = 1, 300 do
	local ct = ffi.typeof("int")
	n = n + 1
end
-- int64_t constants (IR KINT64, tracek answers a cdata: "+1234567890123")
local x = 0LL
for i = 1, 300 do x = x + 1234567890123LL end
-- a table constant: TDUP's template ("{0x...}")
local keep = {}
for i = 1, 300 do
	local a = { 1, 2, 3, i }
	keep[i % 7] = a
	n = n + a[2]
end
print(n, tostring(x))
