-- The Lua-frame map of every trace against LuaJIT's own answers
-- (tests/t_luamap.sh). Usage, with the module started (LUA_INIT) on REGION:
--   luajit luamap_oracle.lua LIBJITSFRAME REGION WORKLOAD [args...]
-- At each trace's stop (this handler runs after the module's, so the trace
-- is published), for every guard — every `jcc rel32` of the trace's code
-- whose target is the exit stub of one of its snapshots (jit.util.
-- traceexitstub) — the map's frames at the guard's offset, read back from
-- the region through libjitsframe, must equal that snapshot's frames as
-- LuaJIT lists them: jit.util.tracesnap's frame slots (SNAP_FRAME links,
-- the function at the slot below each: tracek + funcinfo), inlined callees
-- included, and the base frame's function (slot 0, else the function the
-- trace's root started in); each caller's line from its frame link (the
-- return pc, the call before it). And when an exit is taken, the frames
-- LuaJIT restored (debug.getinfo in the texit handler) must begin with the
-- map's frames at that exit's guard, innermost line included; a side
-- trace's start (its function and pc) must be the map's innermost frame
-- at its parent's guard. A map range the module was not sure of (no
-- frames) is counted, never compared. Prints one summary line; exit 1 on
-- any mismatch.
local ffi = require("ffi")
local jutil = require("jit.util")
local bit = require("bit")
local band, shr = bit.band, bit.rshift

local libpath, region, workload = arg[1], arg[2], arg[3]
local lib = ffi.load(libpath)
ffi.cdef [[
struct jsf_view;
int jsf_view_open(struct jsf_view **out, const char *path);
int jsf_view_srcmap(const struct jsf_view *v, uint64_t pc, uint64_t at_ns,
		    void *buf, size_t len, uint64_t *func_start);
struct jsf_srcframe {
	const char *file, *name;
	uint32_t line, first, pc;
};
int jsf_srcmap_frames(const void *map, size_t len, uint32_t off,
		      struct jsf_srcframe *out, uint32_t max, uint32_t *flags);
]]
local vp = ffi.new("struct jsf_view *[1]")
assert(lib.jsf_view_open(vp, region) == 0, "cannot open " .. region)
local view = vp[0]
local buf = ffi.new("uint8_t[?]", 1048576)
local fstart = ffi.new("uint64_t[1]")
local frames = ffi.new("struct jsf_srcframe[64]")
local flags = ffi.new("uint32_t[1]")

local st = {traces = 0, guards = 0, exact = 0, unsure = 0, nomap = 0,
  bad = 0, inlined = 0, texits = 0, sides = 0, lines = 0}
local bad_shown = 0
local function bad(fmt, ...)
  st.bad = st.bad + 1
  if bad_shown < 10 then
    bad_shown = bad_shown + 1
    io.stderr:write("MISMATCH: ", string.format(fmt, ...), "\n")
  end
end

-- the map's frames at code address a (innermost first), exact flag
local function map_at(a)
  local n = lib.jsf_view_srcmap(view, a, 0, buf, 1048576, fstart)
  if n <= 0 then return nil end
  local d = lib.jsf_srcmap_frames(buf, n, a - fstart[0], frames, 64, flags)
  if d < 0 then return nil end
  local t = {}
  for k = 0, d - 1 do
    t[#t + 1] = {file = ffi.string(frames[k].file), line = frames[k].line,
      first = frames[k].first, pc = frames[k].pc}
  end
  return t, band(flags[0], 1) ~= 0
end

local function chunk(fi)
  local s = fi.source or "?"
  s = s:gsub("^[@=]", "")
  if #s > 255 then s = s:sub(-255) end
  return s
end

-- bits of a double (a frame link), a pointer
local dbl = ffi.new("double[1]")
local function bits(d)
  dbl[0] = d
  return ffi.cast("uint64_t *", dbl)[0]
end
-- a Lua function's bytecode address: GCfuncL.pc (lj_obj.h, GC64: 32)
local function bcbase(f)
  local p = ffi.cast("uint8_t *", ffi.cast("uintptr_t",
    tonumber(tostring(f):match("0x%x+"))))
  return ffi.cast("uint64_t *", p + 32)[0]
end

local basefn = {} -- trace -> the function its base frame runs
local guards = {} -- trace -> exit -> code address of a guard

-- LuaJIT's frames of snapshot sn of trace tr, outermost first:
-- {file, first, line (callers only)}, or nil when it does not say
local function oracle(tr, sn)
  local snap = jutil.tracesnap(tr, sn)
  if not snap then return nil end
  local ent = {}
  for i = 2, #snap do
    local e = snap[i]
    ent[shr(e, 24)] = e
  end
  local out = {}
  local f0 = basefn[tr]
  if ent[0] then
    local k = jutil.tracek(tr, band(ent[0], 0xffff) - 0x8000)
    f0 = type(k) == "function" and k or nil
  end
  if not f0 then return nil end
  local fns = {f0}
  local links = {}
  for s = 2, 254 do
    local e = ent[s]
    if e and band(e, 0x20000) ~= 0 then return nil end -- continuation
    if e and band(e, 0x10000) ~= 0 then
      local fe = ent[s - 1]
      if not fe then return nil end
      local f = jutil.tracek(tr, band(fe, 0xffff) - 0x8000)
      if type(f) ~= "function" then return nil end
      fns[#fns + 1] = f
      links[#fns] = bits((jutil.tracek(tr, band(e, 0xffff) - 0x8000)))
    end
  end
  for i, f in ipairs(fns) do
    local fi = jutil.funcinfo(f)
    if not fi.bytecodes then return nil end
    out[i] = {file = chunk(fi), first = fi.linedefined}
    if links[i + 1] then
      -- the caller's line: of the call, the instruction before the
      -- return pc its callee's frame link holds
      local link = links[i + 1]
      if band(tonumber(band(link, 3ULL)), 3) ~= 0 then return nil end
      local idx = tonumber((link - bcbase(f)) / 4) - 1
      if idx < 0 or idx >= fi.bytecodes then return nil end
      out[i].line = jutil.funcinfo(f, idx).currentline
      out[i].pc = idx
    end
  end
  return out
end

local function same(m, o, tr, ex, a)
  -- m innermost first, o outermost first
  if #m ~= #o then
    bad("trace %d exit %d at +%d: %d frames in the map, %d in the snapshot",
      tr, ex, a, #m, #o)
    return
  end
  for i = 1, #o do
    local mf, of = m[#m + 1 - i], o[i]
    if mf.file ~= of.file or mf.first ~= of.first or
       (of.line and (mf.line ~= of.line or mf.pc ~= of.pc)) then
      bad("trace %d exit %d at +%d frame %d: map %s:%d (line %d pc %d), " ..
        "LuaJIT %s:%d (line %s pc %s)", tr, ex, a, i, mf.file, mf.first,
        mf.line, mf.pc, of.file, of.first, tostring(of.line), tostring(of.pc))
      return
    end
    if of.line then st.lines = st.lines + 1 end
  end
  if #o > 1 then st.inlined = st.inlined + 1 end
end

local function on_stop(tr)
  st.traces = st.traces + 1
  local mc, addr = jutil.tracemc(tr)
  local info = jutil.traceinfo(tr)
  if not mc or not info then return end
  local stub = {}
  for ex = 0, info.nexit - 1 do
    local s = jutil.traceexitstub(ex) -- x64: by exit number alone
    if s then stub[s] = ex end
  end
  local g = {}
  guards[tr] = g
  local n = #mc
  for i = 1, n - 4 do
    local b0, b1 = mc:byte(i, i + 1)
    -- jcc rel32 (0f 8x) or jmp rel32 (e9: a loop's exit at its end)
    local w = (b0 == 0x0f and b1 >= 0x80 and b1 <= 0x8f) and 2 or
      (b0 == 0xe9 and 1) or nil
    if w and i + w + 3 <= n then
      local r0, r1, r2, r3 = mc:byte(i + w, i + w + 3)
      local rel = r0 + r1 * 256 + r2 * 65536 + r3 * 16777216
      if rel >= 2 ^ 31 then rel = rel - 2 ^ 32 end
      local at = addr + i - 1
      local ex = stub[at + w + 4 + rel]
      if ex then
        st.guards = st.guards + 1
        g[ex] = g[ex] or at
        local m, exact = map_at(at)
        if not m then
          st.nomap = st.nomap + 1
        elseif not exact then
          st.unsure = st.unsure + 1
        else
          local o = oracle(tr, ex)
          if o then
            st.exact = st.exact + 1
            same(m, o, tr, ex, i - 1)
          else
            st.unsure = st.unsure + 1
            if #m > 0 then
              bad("trace %d exit %d: the map has frames LuaJIT's listing " ..
                "does not vouch for", tr, ex)
            end
          end
        end
      end
    end
  end
end

local checked = {}
local done = false
local function on_texit(tr, ex)
  if done then return end
  local key = tr * 65536 + ex
  if checked[key] or st.texits >= 20000 then return end
  checked[key] = true
  local at = guards[tr] and guards[tr][ex]
  if not at then return end
  local m, exact = map_at(at)
  if not m or not exact then return end
  st.texits = st.texits + 1
  for k, mf in ipairs(m) do
    local i = debug.getinfo(k + 1, "Sl")
    -- (the innermost frame's currentline is not LuaJIT's answer yet
    -- during the texit event: its pc is stored after the handlers ran)
    if not i or chunk(i) ~= mf.file or i.linedefined ~= mf.first or
       (k > 1 and i.currentline ~= mf.line) then
      bad("trace %d exit %d taken: frame %d map %s:%d line %d, " ..
        "restored %s:%s line %s", tr, ex, k, mf.file, mf.first, mf.line,
        i and chunk(i) or "-", i and i.linedefined or "-",
        i and i.currentline or "-")
      return
    end
  end
end

jit.attach(function(what, tr, func, pc, parent, exitno)
  if what == "start" then
    if parent and exitno and exitno >= 0 then
      basefn[tr] = basefn[parent]
      -- a side trace starts at its parent's exit: where LuaJIT resumes
      local at = guards[parent] and guards[parent][exitno]
      local m, exact = nil, false
      if at then m, exact = map_at(at) end
      if m and exact and #m > 0 then
        st.sides = st.sides + 1
        local fi = jutil.funcinfo(func, pc)
        if chunk(fi) ~= m[1].file or fi.linedefined ~= m[1].first or
           fi.currentline ~= m[1].line or pc ~= m[1].pc then
          bad("side trace %d of %d/%d starts at %s:%d line %d pc %d, " ..
            "the map says %s:%d line %d pc %d", tr, parent, exitno,
            chunk(fi), fi.linedefined, fi.currentline, pc, m[1].file,
            m[1].first, m[1].line, m[1].pc)
        end
      end
    else
      basefn[tr] = func
    end
  elseif what == "stop" then
    on_stop(tr)
  end
end, "trace")
-- (taken exits: opt-in, LUAMAP_TEXIT=1; debug.getinfo inside a texit
-- handler reads frames LuaJIT has not finished restoring, and crashed
-- LuaJIT on nested.lua's coroutines)
if os.getenv("LUAMAP_TEXIT") == "1" then jit.attach(on_texit, "texit") end

local wargs = {[0] = workload}
for i = 4, #arg do wargs[i - 3] = arg[i] end
arg = wargs
dofile(workload)
done = true
print(string.format("luamap: %d traces, %d guards: %d exact and compared " ..
  "(%d with inlined frames, %d caller lines), %d unsure, %d without a map; " ..
  "%d taken exits and %d side-trace starts compared; %d mismatches",
  st.traces, st.guards, st.exact, st.inlined, st.lines, st.unsure, st.nomap,
  st.texits, st.sides, st.bad))
-- how the module built them: from the trace's memory (checked against its
-- jit.util build on the first traces and one in 64) or through jit.util
local ms = require("jitsframe").stats()
print(string.format("luamap_raw: %s, %d of %d maps built from memory%s",
  ms.luamap_raw, ms.luamap_raw_traces, ms.luamap_traces,
  ms.luamap_raw_off and (" (off: " .. ms.luamap_raw_off .. ")") or ""))
os.exit(st.bad == 0 and 0 or 1)
