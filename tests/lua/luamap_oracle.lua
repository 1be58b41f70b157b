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
-- at each of its parent's guards of that exit. A side trace's head may
-- check the stack with a branch to its parent's exit stub (shared with
-- its own exit of that number): that guard restores the trace's start,
-- so its frames are snapshot 0's (stack_check). A map range the module
-- was not sure of (no frames) is counted, never compared. Prints one summary line; exit 1 on
-- any mismatch.
local ffi = require("ffi")
local jutil = require("jit.util")
local bit = require("bit")
local band, shr = bit.band, bit.rshift

local libpath, region, workload = arg[1], arg[2], arg[3]
local O = dofile((arg[0]:match("(.*/)") or "./") .. "oracle.lua")
local sv = O.view(libpath, region)

local st = {traces = 0, guards = 0, exact = 0, unsure = 0, nomap = 0,
  bad = 0, inlined = 0, texits = 0, sides = 0, lines = 0, stackck = 0,
  sidesck = 0}
local bad = O.bad_counter(st)

-- the map's frames at code address a (innermost first), exact flag
local function map_at(a)
  local n = sv.map(a)
  if n <= 0 then return nil end
  local d = sv.decode(n, a - sv.fstart[0])
  if d < 0 then return nil end
  local t, frames = {}, sv.frames
  for k = 0, d - 1 do
    t[#t + 1] = {file = ffi.string(frames[k].file), line = frames[k].line,
      first = frames[k].first, pc = frames[k].pc}
  end
  return t, band(sv.flags[0], 1) ~= 0
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

-- the little-endian u32 at mc[i]
local function le32(mc, i)
  local b0, b1, b2, b3 = mc:byte(i, i + 3)
  return b0 + b1 * 256 + b2 * 65536 + b3 * 16777216
end

local basefn = {} -- trace -> the function its base frame runs
local guards = {} -- trace -> exit -> code addresses of its guards
local pexit = {} -- side trace -> its parent's exit
local headck = {} -- side trace -> its head's stack check goes to this exit

-- Is the jb at mc[i] a side trace's stack check at its head? LuaJIT's
-- asm_head_side checks the stack when the trace adds frames, with the
-- parent's exit number "in the context of the parent trace" (lj_asm.c):
-- a branch to the stub of the parent's exit, which this trace's own exit
-- of that number shares, though it restores the parent's snapshot (this
-- trace's start), not this trace's. asm_stack_check (lj_asm_x86.h): mov
-- r, [cur_L]; mov r, [r + maxstack]; sub r, base; cmp r, 8 * topslot; a
-- spilled r restored (mov r, [rsp]); jb exit.
local function stack_check(mc, i)
  local j = i
  local a, b, c, d = mc:byte(j - 4, j - 1)
  if j > 4 and (a == 0x48 or a == 0x4c) and b == 0x8b and
     band(c, 0xc7) == 0x04 and d == 0x24 then
    j = j - 4
  end
  local r, imm
  a, b, c, d = mc:byte(j - 4, j - 1)
  if j > 4 and (a == 0x48 or a == 0x49) and b == 0x83 and c >= 0xf8 then
    r, imm, j = c - 0xf8 + (a == 0x49 and 8 or 0), d, j - 4
  else
    a, b, c = mc:byte(j - 7, j - 5)
    if not (j > 7 and (a == 0x48 or a == 0x49) and b == 0x81 and
            c >= 0xf8) then
      return false
    end
    r, imm, j = c - 0xf8 + (a == 0x49 and 8 or 0), le32(mc, j - 4), j - 7
  end
  if imm == 0 or imm % 8 ~= 0 then return false end
  -- mov r, [r + 0x30] (lua_State.maxstack, GC64) shortly before
  local rex, modrm = r >= 8 and 0x4d or 0x48, 0x40 + (r % 8) * 9
  for k = math.max(1, j - 12), j - 4 do
    local p, q, m, o = mc:byte(k, k + 3)
    if p == rex and q == 0x8b and m == modrm and o == 0x30 then
      return true
    end
  end
  return false
end

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
  -- (the parent's exit, for the head's stack check, may be none of ours)
  local pe = pexit[tr]
  local pes = pe and pe >= info.nexit and jutil.traceexitstub(pe)
  if pes then stub[pes] = pe end
  local g = {}
  guards[tr] = g
  headck[tr] = nil
  local n = #mc
  local first = true
  for i = 1, n - 4 do
    local b0, b1 = mc:byte(i, i + 1)
    -- jcc rel32 (0f 8x) or jmp rel32 (e9: a loop's exit at its end)
    local w = (b0 == 0x0f and b1 >= 0x80 and b1 <= 0x8f) and 2 or
      (b0 == 0xe9 and 1) or nil
    if w and i + w + 3 <= n then
      local rel = le32(mc, i + w)
      if rel >= 2 ^ 31 then rel = rel - 2 ^ 32 end
      local at = addr + i - 1
      local ex = stub[at + w + 4 + rel]
      -- the head's stack check (the first guard, only there): LuaJIT
      -- restores this trace's start, its snapshot 0
      local sn = ex
      if ex and first and pe == ex and b0 == 0x0f and b1 == 0x82 and
         stack_check(mc, i) then
        sn = 0
        st.stackck = st.stackck + 1
        headck[tr] = ex
      elseif ex and ex < info.nexit then
        g[ex] = g[ex] or {}
        table.insert(g[ex], at)
      else
        ex = nil
      end
      if ex then
        first = false
        st.guards = st.guards + 1
        local m, exact = map_at(at)
        if not m then
          st.nomap = st.nomap + 1
        elseif not exact then
          st.unsure = st.unsure + 1
        else
          local o = oracle(tr, sn)
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
  local at = guards[tr] and guards[tr][ex] and guards[tr][ex][1]
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
      pexit[tr] = exitno
      -- a side trace starts at its parent's exit: where LuaJIT resumes,
      -- the map's innermost frame at each of that exit's guards
      if headck[parent] == exitno then st.sidesck = st.sidesck + 1 end
      local fi = jutil.funcinfo(func, pc)
      local counted = false
      for _, at in ipairs(guards[parent] and guards[parent][exitno] or {}) do
        local m, exact = map_at(at)
        if m and exact and #m > 0 then
          if not counted then st.sides = st.sides + 1 end
          counted = true
          if chunk(fi) ~= m[1].file or fi.linedefined ~= m[1].first or
             fi.currentline ~= m[1].line or pc ~= m[1].pc then
            bad("side trace %d of %d/%d starts at %s:%d line %d pc %d, " ..
              "the map at +%d says %s:%d line %d pc %d", tr, parent, exitno,
              chunk(fi), fi.linedefined, fi.currentline, pc,
              at - select(2, jutil.tracemc(parent)), m[1].file,
              m[1].first, m[1].line, m[1].pc)
            break
          end
        end
      end
    else
      basefn[tr] = func
      pexit[tr] = nil
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
  "%d taken exits and %d side-trace starts compared; %d stack checks " ..
  "(%d side traces from their exit); %d mismatches",
  st.traces, st.guards, st.exact, st.inlined, st.lines, st.unsure, st.nomap,
  st.texits, st.sides, st.stackck, st.sidesck, st.bad))
-- how the module built them: from the trace's memory (checked against its
-- jit.util build on the first traces and one in 64) or through jit.util
local ms = require("jitsframe").stats()
print(string.format("luamap_raw: %s, %d of %d maps built from memory%s",
  ms.luamap_raw, ms.luamap_raw_traces, ms.luamap_traces,
  ms.luamap_raw_off and (" (off: " .. ms.luamap_raw_off .. ")") or ""))
os.exit(st.bad == 0 and 0 or 1)
