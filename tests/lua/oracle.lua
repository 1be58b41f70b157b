-- What the Lua-frame oracles share (tests/lua/luamap_oracle.lua,
-- tests/lua/loopmap_oracle.lua):
--   local O = dofile(DIR .. "oracle.lua")
--   O.bad_counter(st): a function(fmt, ...) that counts a mismatch in
--     st.bad and shows the first 10 on stderr
--   local sv = O.view(LIBJITSFRAME, REGION): the region through
--     libjitsframe (FFI):
--   sv.map(pc): the source map of the function covering pc now, into
--     sv.buf: its length, or a negative errno (-ENOENT no function,
--     -ENODATA no map); the function's start in sv.fstart[0]
--   sv.decode(len, off): that map at code offset off (jsf_srcmap_frames):
--     the number of frames, innermost first in sv.frames, or -EINVAL;
--     JSF_SRCMAP_* flags in sv.flags[0]
local ffi = require("ffi")
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
local CAP = 1048576
local O = {}

function O.bad_counter(st)
  local shown = 0
  return function(fmt, ...)
    st.bad = st.bad + 1
    if shown < 10 then
      shown = shown + 1
      io.stderr:write("MISMATCH: ", string.format(fmt, ...), "\n")
    end
  end
end

function O.view(libpath, region)
  local lib = ffi.load(libpath)
  local vp = ffi.new("struct jsf_view *[1]")
  assert(lib.jsf_view_open(vp, region) == 0, "cannot open " .. region)
  local sv = {view = vp[0], buf = ffi.new("uint8_t[?]", CAP),
    fstart = ffi.new("uint64_t[1]"), frames = ffi.new("struct jsf_srcframe[64]"),
    flags = ffi.new("uint32_t[1]")}
  function sv.map(pc)
    return lib.jsf_view_srcmap(sv.view, pc, 0, sv.buf, CAP, sv.fstart)
  end
  function sv.decode(n, off)
    return lib.jsf_srcmap_frames(sv.buf, n, off, sv.frames, 64, sv.flags)
  end
  return sv
end

return O
