-- audit_bench.lua: what the auditlog costs a LuaJIT process, per workload
-- of bench/workloads/, at level "default" and "full". Run from the project
-- root (`make -C bench audit` builds what it needs and runs it):
--
--   luajit bench/audit_bench.lua
--
-- Environment: AUDIT_BENCH_REPS (whole runs per side, default 3),
-- AUDIT_BENCH_SCALE (workload scale, default 0.5), AUDIT_BENCH_ONLY (a Lua
-- pattern on workload names), LUAJIT. OpenResty's luajit2 is measured too
-- if build/luajit2/usr/bin/luajit exists.
--
-- Method: bench/vm_run.lua runs a workload with bench/vmtime.so timing the
-- "trace" event handler from the outside (see vm_bench.lua), in four
-- modes: plain (no jitsframe: gives the VM's compile time per trace,
-- start -> stop, plus the aborted attempts), module (jitsframe's rows
-- only), default and full (the same plus the auditlog, started through
-- JITSFRAME_AUDITLOG / JITSFRAME_AUDITLOG_LEVEL, which start() reads).
--  (a) per trace: the handler time of all trace events of the audit run
--      minus that of the module run, per compiled trace; for "full", the
--      "record" handlers run inside the recording spans, so the growth of
--      the compile spans (full run minus plain run) is added. "%" is that
--      cost over the VM's compile time per trace (aborted attempts
--      included) of the plain run. bytes/tr: log bytes per compiled trace.
--      func, write: the part of "default" spent in func records and in
--      write(2) (stats().auditlog); raw: % of traces read from memory.
--      Medians of REPS rounds of the four runs.
--      The texit records of "full" are not in (a): they are in (b).
--  (b) whole run: wall time of `luajit W` against the same with
--      start{auditlog=..., level=...}, median of REPS runs each, the runs
--      interleaved; ratio to plain.
-- The floor (a, b): the default level again with the module's cut build 4
-- (vm/vm.h VM_BENCH_CUT, build/bench/cut4), whose raw stop records are the
-- trace's bytes alone: its IR, snapshots, snapshot map and machine code
-- copied as they are, no constants' values, no opcode modes (not a
-- readable log). Everything else the level does stays: start, abort and
-- func records, the framing, CRC and write(2) of every record. Against
-- the targets, it says how much any encoding of the trace could win.
-- Every run's output must equal the plain run's.
local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
local function exists(p) local f = io.open(p, "rb") if f then f:close() return true end end
local function capture(cmd)
  local p = assert(io.popen(cmd .. " 2>&1", "r"))
  local out = p:read("*a")
  p:close()
  return out
end
local ffi = require("ffi")
ffi.cdef [[
struct ab_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct ab_timespec *ts);
struct ab_timeval { long tv_sec; long tv_usec; };
struct ab_rusage { struct ab_timeval ru_utime, ru_stime; long pad[14]; };
int getrusage(int who, struct ab_rusage *ru);
]]
local ts = ffi.new("struct ab_timespec")
local function now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
local ru = ffi.new("struct ab_rusage")
local function child_cpu() -- user + system time of the finished children
  ffi.C.getrusage(-1, ru)
  return tonumber(ru.ru_utime.tv_sec) + tonumber(ru.ru_utime.tv_usec) * 1e-6 +
    tonumber(ru.ru_stime.tv_sec) + tonumber(ru.ru_stime.tv_usec) * 1e-6
end
-- the targets (issue 16): default level <= 10% of the VM's compile time per
-- trace on every workload; whole run <= 1.03x on the trace-churn programs
-- (flushstorm, and luacheck: Debian's lua-check, a real program), CPU
-- time, the auditlog's run against the rows-only run
local TARGET_PCT, TARGET_RUN = 10, 1.03
local CHURN = { flushstorm = true, luacheck = true }
local function verdict(ok) return ok and "MET" or "MISSED" end

local root = capture("pwd"):gsub("%s+$", "")
assert(exists(root .. "/bench/workloads/README.md"), "run from the project root")
local B = root .. "/build"
-- the floor: the module's cut build 4 (vm/vm.h VM_BENCH_CUT), whose raw
-- stop records are the trace's bytes alone, copied and written
local CUT = B .. "/bench/cut4"
for _, f in ipairs { B .. "/lua/jitsframe.so", B .. "/bench/vmtime.so", CUT .. "/jitsframe.so" } do
  assert(exists(f), f .. " missing: build with make -C bench build")
end
local reps = tonumber(os.getenv("AUDIT_BENCH_REPS")) or 3
local scale = os.getenv("AUDIT_BENCH_SCALE") or "0.5"
local only = os.getenv("AUDIT_BENCH_ONLY")
local workloads = { "numeric", "sidetraces", "flushstorm", "nested", "openresty", "luacheck" }
-- The path of workload w: bench/workloads/, and luacheck (a real program,
-- outside the set the tests run) in bench/.
local function wl(w)
  return w == "luacheck" and "bench/luacheck.lua" or "bench/workloads/" .. w .. ".lua"
end
local vms = { { name = "luajit", bin = os.getenv("LUAJIT") or "luajit", env = "" } }
local lj2 = B .. "/luajit2/usr/bin/luajit"
if exists(lj2) then
  vms[#vms + 1] = { name = "luajit2", bin = lj2, env = "LUA_PATH=" ..
    sh_quote(B .. "/luajit2/usr/share/luajit-2.1.0-beta3/?.lua;;") .. " " }
end
local tmp = B .. "/bench/audit-bench-tmp"
os.execute("mkdir -p " .. sh_quote(tmp))
local log = tmp .. "/audit.log"
local envbase = "env -u LUA_INIT -u LUA_INIT_5_1 -u JITSFRAME_JITDUMP -u JITSFRAME_PERFMAP " ..
  "-u JITSFRAME_REGION -u JITSFRAME_AUDITLOG_MAX LUA_CPATH=" ..
  sh_quote(B .. "/lua/?.so;" .. B .. "/bench/?.so;;") .. " "
-- the region where a user's would be (as vm_bench.lua): the module's
-- default directory, asked of the module
local region
do
  local got = capture(envbase .. "luajit -e " .. sh_quote(
    "local j = require('jitsframe') assert(j.start{quiet = true}) " ..
    "local p = j.stats().region j.stop() os.remove(p) io.write(p)"))
  local d = got:match("^(/.+)/%d+%.region$")
  assert(d, "audit_bench: the module's default region path: " .. got)
  region = d .. "/audit-bench.region"
end
local function clean() os.execute("rm -f " .. sh_quote(log) .. " " .. sh_quote(log) .. ".*") end

local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  local n = #s
  return n % 2 == 1 and s[(n + 1) / 2] or (s[n / 2] + s[n / 2 + 1]) / 2
end

local function audit_env(level)
  if not level then return "" end
  return "JITSFRAME_AUDITLOG=" .. sh_quote(log) .. " JITSFRAME_AUDITLOG_LEVEL=" .. level ..
    " JITSFRAME_AUDITLOG_MAX=1000000000000 "
end

local cutenv = "LUA_CPATH=" .. sh_quote(CUT .. "/?.so;" .. B .. "/bench/?.so;;") .. " "
local function timing_run(vm, w, mode, level, cut)
  local out = tmp .. "/" .. w .. "-" .. (level or mode) .. ".lua"
  os.remove(out)
  clean()
  local cmd = envbase .. (cut and cutenv or "") .. audit_env(level) .. vm.env .. sh_quote(vm.bin) ..
    " bench/vm_run.lua " .. sh_quote(out) .. " " .. mode .. " " .. sh_quote(region) ..
    " " .. wl(w) .. " " .. scale
  local text = capture(cmd)
  clean()
  local f = loadfile(out)
  if not f then error(("%s %s (%s) failed:\n%s"):format(vm.name, w, level or mode, text)) end
  os.remove(out)
  return f(), text
end

local KINDS = { "start", "stop", "abort", "flush", "other" }
local function handler_sum(T)
  local s = 0
  for _, k in ipairs(KINDS) do s = s + T[k].sum end
  return s
end

local t_begin = now()
local out = {}
local function line(fmt, ...) out[#out + 1] = fmt:format(...) io.stderr:write(".") end
for _, vm in ipairs(vms) do
  local version = capture(envbase .. vm.env .. sh_quote(vm.bin) .. " -v"):gsub("%s+$", "")
  line("")
  line("Auditlog bench: %s (%s), scale %s, %d whole runs per side", vm.name,
    version:match("^(LuaJIT %S+)") or version, scale, reps)
  line("")
  line("(a) per compiled trace, median of %d rounds: auditlog handler cost (audit run minus rows-only", reps)
  line("    run), us and %% of the VM's compile time (plain run, aborted attempts included); of it, func")
  line("    records and write(2); log bytes per trace; %% of traces read raw (docs/AUDITLOG.md);")
  line("    floor: the same with the build whose raw stop records are the trace's bytes alone")
  line("    (instructions, snapshots, map, machine code copied; no constants, no modes: not a")
  line("    readable log; build/bench/cut4), its cost and %%: the rest of the level's work, with")
  line("    the trace's contents copied rather than encoded")
  line("%-11s %6s %8s | %8s %8s %7s %7s %7s %8s %5s | %8s %7s %9s | %6s %5s | %s", "workload", "traces",
    "compile", "default", "stop", "%", "func", "write", "bytes", "raw", "full", "%", "bytes", "floor",
    "%", "<= " .. TARGET_PCT .. "%: default, floor")
  line("%-11s %6s %8s | %8s %8s %7s %7s %7s %8s %5s | %8s %7s %9s | %6s %5s |", "", "", "us/tr",
    "us/tr", "us/tr", "", "us/tr", "us/tr", "/tr", "%", "us/tr", "", "/tr", "us/tr", "")
  local whole = {}
  for _, w in ipairs(workloads) do
    if not only or w:match(only) then
      -- (a) per trace: REPS rounds of the four timed runs, medians
      local cols, expect, odd = {}, nil, {}
      for _ = 1, reps do
        local P, ex = timing_run(vm, w, "plain")
        if ex:match("^luacheck missing") then break end
        expect = expect or ex
        local M = timing_run(vm, w, "module")
        local D, dtext = timing_run(vm, w, "module", "default")
        local F, ftext = timing_run(vm, w, "module", "full")
        local C, ctext = timing_run(vm, w, "module", "default", true)
        local ntr = P.compile.n
        local vmc = (P.compile.sum + P.aborted.sum) / ntr / 1000
        local dn, fn = D.stop.n, F.stop.n
        local dcost = (handler_sum(D) - handler_sum(M) * dn / M.stop.n) / dn / 1000
        local dstop = (D.stop.sum / dn - M.stop.sum / M.stop.n) / 1000
        local fcost = (handler_sum(F) - handler_sum(M) * fn / M.stop.n) / fn / 1000 +
          ((F.compile.sum + F.aborted.sum) / fn - (P.compile.sum + P.aborted.sum) / ntr) / 1000
        local cn = C.stop.n
        local ccost = (handler_sum(C) - handler_sum(M) * cn / M.stop.n) / cn / 1000
        local da, fa = D.stats.auditlog, F.stats.auditlog
        local row = { ntr = ntr, vmc = vmc, dcost = dcost, dstop = dstop, pct = 100 * dcost / vmc,
          func = da.func_ns / dn / 1000, write = da.write_ns / dn / 1000, bytes = da.bytes / dn,
          raw = 100 * (da.raw_traces or 0) / dn, fcost = fcost, fpct = 100 * fcost / vmc,
          fbytes = fa.bytes / fn, ccost = ccost, cpct = 100 * ccost / vmc }
        for k, v in pairs(row) do cols[k] = cols[k] or {} table.insert(cols[k], v) end
        if dtext ~= ex or ftext ~= ex or ctext ~= ex then odd.out = true end
        if da.dropped > 0 or fa.dropped > 0 then
          odd.drop = ("dropped records %d/%d: %s"):format(da.dropped, fa.dropped,
            tostring(da.last_error or fa.last_error))
        end
      end
      if not expect then
        line("%-11s luacheck (Debian's lua-check) not installed: skipped", w)
        goto next_workload
      end
      local m = {}
      for k, v in pairs(cols) do
        table.sort(v)
        m[k] = v[math.floor((#v + 1) / 2)]
      end
      line("%-11s %6d %8.1f | %8.1f %8.1f %6.0f%% %7.1f %7.1f %8.0f %5.0f | %8.1f %6.0f%% %9.0f | %6.1f %4.0f%% | %s, %s", w,
        m.ntr, m.vmc, m.dcost, m.dstop, m.pct, m.func, m.write, m.bytes, m.raw, m.fcost, m.fpct,
        m.fbytes, m.ccost, m.cpct, verdict(m.pct <= TARGET_PCT), m.cpct <= TARGET_PCT and "within" or "over")
      if odd.out then line("%11s ODD: output differs", "") end
      if odd.drop then line("%11s ODD: %s", "", odd.drop) end
      -- (b) whole runs
      local cmd = envbase .. vm.env .. sh_quote(vm.bin) .. " " .. wl(w) .. " " .. scale
      local function startcmd(level, cut)
        local t = level and ("auditlog=%q, level=%q, auditlog_max=1e12, "):format(log, level) or ""
        return envbase .. (cut and cutenv or "") .. vm.env .. sh_quote(vm.bin) .. " -e " ..
          sh_quote(("assert(require('jitsframe').start{region=%q, replace=true, %s})")
            :format(region, t)) .. " " .. wl(w) .. " " .. scale
      end
      local t = { plain = {}, module = {}, default = {}, full = {}, floor = {} }
      local c = { plain = {}, module = {}, default = {}, full = {}, floor = {} }
      local order = { "plain", "module", "default", "full", "floor" }
      for i = 1, reps do
        for j = 0, #order - 1 do
          local side = order[(i + j - 1) % #order + 1]
          clean()
          local c0, s = child_cpu(), now()
          local o = capture(side == "plain" and cmd or side == "floor" and startcmd("default", true) or
            startcmd(side ~= "module" and side or nil))
          t[side][#t[side] + 1] = now() - s
          c[side][#c[side] + 1] = child_cpu() - c0
          if o ~= expect then line("%11s ODD: %s run printed %s", "", side, o:gsub("\n", " | ")) end
        end
      end
      clean()
      whole[#whole + 1] = { w = w, p = median(t.plain), m = median(t.module), d = median(t.default),
        f = median(t.full), cp = median(c.plain), cm = median(c.module), cd = median(c.default),
        cf = median(c.full), cc = median(c.floor) }
    end
    ::next_workload::
  end
  line("")
  line("(b) whole run, median of %d (interleaved): wall s and CPU s (user+sys) of plain luajit, rows", reps)
  line("    only (module), and the auditlog at each level; target: default CPU / rows-only CPU <= %.2f", TARGET_RUN)
  line("    on the trace-churn programs (flushstorm; luacheck, Debian's lua-check, a real one);")
  line("    floor/rows: the floor build of (a) at the default level, the same ratio")
  line("%-11s %8s %8s %8s %8s | %8s %8s %8s %8s | %7s %7s %7s %7s | %s", "workload", "plain s", "rows s",
    "deflt s", "full s", "plain c", "rows c", "deflt c", "full c", "d/rows", "d/plain", "f/plain",
    "flr/rws", "<= " .. TARGET_RUN .. ": default, floor")
  for _, r in ipairs(whole) do
    local dr, fr = r.cd / r.cm, r.cc / r.cm
    line("%-11s %8.3f %8.3f %8.3f %8.3f | %8.3f %8.3f %8.3f %8.3f | %7.3f %7.3f %7.2f %7.3f | %s", r.w,
      r.p, r.m, r.d, r.f, r.cp, r.cm, r.cd, r.cf, dr, r.cd / r.cp, r.cf / r.cp, fr,
      CHURN[r.w] and verdict(dr <= TARGET_RUN) .. ", " .. (fr <= TARGET_RUN and "within" or "over") or "")
  end
end
os.remove(region)
os.execute("rm -rf " .. sh_quote(tmp))
io.stderr:write("\n")
io.write(table.concat(out, "\n"), "\n")
io.write(("audit_bench: %.0f s\n"):format(now() - t_begin))
