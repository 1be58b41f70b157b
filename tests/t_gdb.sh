#!/usr/bin/env bash
# gdb's `bt` through LuaJIT trace frames with gdb/jitsframe.py (TAP):
# a LuaJIT program whose hot loop calls, through the FFI, a C function of a
# shared object compiled here (-fno-omit-frame-pointer); the trace's frame
# has no unwind information gdb knows of.
#  (a) live: gdb breaks in the C function after 20000 calls (the loop is a
#      trace by then); `bt` before sourcing the script stops in trace code
#      (no `main`), after `source build/gdb/jitsframe.py` it goes through a
#      TRACE_n::prog.lua:LINE frame (LINE: the loop's line, from prog.lua)
#      and gdb's own unwinding of luajit reaches `main`; the region and the
#      jitdump are found in the process's mappings;
#  (b) core: the program dereferences NULL in the C function; gdb -batch
#      runs it to the crash, `gcore`s it and kills it; a second gdb loads
#      luajit + the core: the region is found post-mortem by the convention
#      (${TMPDIR}/jitsframe-UID/PID.region), frames named TRACE@0xSTART
#      without a jitdump and TRACE_n with $JITSFRAME_JITDUMP; with a region
#      elsewhere, nothing is found (no main), a region of another process
#      named with `jitsframe-region` is refused (its pid), the right one
#      named is used (jitdump beside it);
#  (c) a signal arriving in trace code: a breakpoint in its handler, `bt`
#      goes through the signal frame and the trace to main;
#  (d) the installed script (make install DESTDIR) loads the installed
#      libjitsframe.so.1;
#  (e) a stripped luajit: the frame in string.gsub's C function (a gsub
#      callback calls the C function) is named string.gsub, its pc in the
#      FDE readelf says starts at LuaJIT's own address of it; the
#      interpreter's frames luajit_interpreter; names planted one id off
#      fail;
#  (f) a stripped Lua C module (tests/cmod.c): the frame in cmod.call's C
#      function (it calls back into Lua) is named cmod.call, its pc within
#      cmod_call as nm gives it in the unstripped build; planted names
#      fail.
# The ground truth is gdb's own unwinding of the C code and of luajit (the
# frames below the trace, up to main) and the program's source line.
# Without gdb, or gdb without Python, it skips visibly; under CI=true it
# fails.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-$PWD/build/jitsframe}
T=$(mktemp -d /tmp/jsf-t_gdb-XXXXXX)
trap 'rm -rf "$T"' EXIT
skip_all() {
	if [ "${CI:-}" = true ]; then echo "1..1"; echo "not ok 1 - $1 (CI=true: required)"; exit 1; fi
	echo "1..0 # SKIP $1"
	exit 0
}
unset LUA_INIT LUA_INIT_5_1 JITSFRAME_REGION JITSFRAME_JITDUMP JITSFRAME_AUDITLOG
command -v gdb >/dev/null 2>&1 || skip_all "no gdb (Debian: gdb; make deps)"
gdb -nx -batch -ex 'python import gdb.unwinder' >/dev/null 2>&1 ||
	skip_all "gdb has no Python (or no gdb.unwinder)"
LJ=${LUAJIT:-$(command -v luajit)}
[ -n "$LJ" ] || skip_all "no luajit"
for f in "$J" build/lua/jitsframe.so build/libjitsframe.so.1 build/gdb/jitsframe.py; do
	[ -e "$f" ] || { echo "Bail out! $f not built (make all)"; exit 1; }
done
SCRIPT=$PWD/build/gdb/jitsframe.py

cat >"$T/ffi.c" <<'EOF'
#include <signal.h>
#include <sys/time.h>
static volatile int sink;
__attribute__((noinline)) void gdbt_stop(int n) { sink = n; }
/* mode 0: call gdbt_stop at the 20000th call; 1: dereference NULL there */
int gdbt_tick(int mode, int i)
{
	static int calls;
	if (++calls == 20000) {
		if (mode == 1)
			*(volatile int *)(long)sink = i;
		gdbt_stop(i);
	}
	return i & 1;
}
static void on_alarm(int sig) { gdbt_stop(sig); }
void gdbt_arm(void)
{
	struct itimerval it = {{0, 0}, {0, 200000}};
	signal(SIGALRM, on_alarm);
	setitimer(ITIMER_REAL, &it, 0);
}
EOF
cat >"$T/prog.lua" <<'EOF'
local ffi = require("ffi")
ffi.cdef[[int gdbt_tick(int mode, int i); void gdbt_arm(void);]]
local lib = ffi.load(arg[1])
local mode = tonumber(arg[2])
local s = 0
if mode == 2 then
	lib.gdbt_arm()
	for i = 1, 1e11 do s = s + i % 3 end -- SPIN
end
local function work(n)
	for i = 1, n do s = s + lib.gdbt_tick(mode, i) end -- LOOP
end
work(40000)
print(s)
EOF
LOOP=$(grep -n -- '-- LOOP$' "$T/prog.lua" | cut -d: -f1)
SPIN=$(grep -n -- '-- SPIN$' "$T/prog.lua" | cut -d: -f1)
if ! cc -shared -fPIC -O1 -g -fno-omit-frame-pointer "$T/ffi.c" -o "$T/libgdbt.so" 2>"$T/cc.err"; then
	echo "Bail out! cc: $(head -c 500 "$T/cc.err")"
	exit 1
fi
GDB=(timeout 120 gdb -nx -batch -ex 'set debuginfod enabled off' -ex 'set width 0'
	-ex 'set pagination off' -ex 'set breakpoint pending on')

# frames FILE MARK: the backtrace lines (#N ...) after the line MARK
frames() { sed -n "/^$2\$/,/^==/p" "$1" | grep '^#[0-9]'; }
# reaches_main_through LINES TRACE-RE: main is there and a trace frame
# named by TRACE-RE is, below (newer than) main
through() {
	local bt=$1 re=$2 tl ml
	tl=$(printf '%s\n' "$bt" | grep -nE " in $re \(\)" | head -n 1 | cut -d: -f1)
	ml=$(printf '%s\n' "$bt" | grep -nE ' in main \(' | head -n 1 | cut -d: -f1)
	[ -n "$tl" ] && [ -n "$ml" ] && [ "$tl" -lt "$ml" ]
}

# --- (a) live ---
mkdir -p "$T/live" "$T/livejd"
"${GDB[@]}" -ex 'break gdbt_stop' -ex run -ex 'echo ==before\n' -ex bt \
	-ex "source $SCRIPT" -ex 'echo ==after\n' -ex bt -ex 'echo ==where\n' -ex jitsframe-region \
	-ex 'echo ==end\n' -ex kill \
	--args env JITSFRAME_JITDUMP="$T/livejd" "$J" run --quiet --region "$T/live/prog.region" -- \
	"$LJ" "$T/prog.lua" "$T/libgdbt.so" 0 >"$T/live.out" 2>&1
before=$(frames "$T/live.out" ==before)
after=$(frames "$T/live.out" ==after)
if printf '%s\n' "$before" | grep -q '^#1 .* gdbt_tick ' && ! printf '%s\n' "$before" | grep -q ' in main ('; then
	ok "live, without the unwinder: bt stops in trace code, no main ($(printf '%s\n' "$before" | wc -l) frames)"
else
	notok "live, without the unwinder: bt stops in trace code, no main" "$before" "$(tail -n 20 "$T/live.out")"
fi
if through "$after" "TRACE_[0-9]+::[^ ]*prog\.lua:$LOOP" &&
	printf '%s\n' "$after" | grep -q '^#0 .*gdbt_stop' && printf '%s\n' "$after" | grep -q '^#1 .* gdbt_tick '; then
	ok "live, with the unwinder: gdbt_stop, gdbt_tick, $(printf '%s\n' "$after" | grep -oE 'TRACE_[0-9]+::[^ ]*' | head -n 1 | sed 's|.*/||;s|^|TRACE_n::|'), ..., main"
else
	notok "live, with the unwinder: bt reaches main through TRACE_n::prog.lua:$LOOP" "$after" "$(tail -n 20 "$T/live.out")"
fi
where=$(sed -n '/^==where$/,/^==end$/p' "$T/live.out")
if printf '%s\n' "$where" | grep -q "^jitsframe: region .*/proc/[0-9]*/map_files/\|^jitsframe: region $T/live/prog.region (process [0-9]*, live" &&
	printf '%s\n' "$where" | grep -q "^jitsframe: jitdump .*/map_files/\\|^jitsframe: jitdump $T/livejd/jit-[0-9]*\\.dump"; then
	ok "live: the region and the jitdump found in the process's mappings"
else
	notok "live: the region and the jitdump found in the process's mappings" "$where"
fi

# --- (b) core: the region by the convention ---
mkdir -p "$T/tmp" "$T/jd"
TMPDIR=$T/tmp "${GDB[@]}" -ex run -ex "gcore $T/b1.core" -ex 'info inferiors' -ex kill \
	--args env JITSFRAME_JITDUMP="$T/jd" "$J" run --quiet -- "$LJ" "$T/prog.lua" "$T/libgdbt.so" 1 >"$T/b1.run" 2>&1
pid=$(sed -n 's/^\* *1 *process \([0-9]*\) .*/\1/p' "$T/b1.run")
if [ -s "$T/b1.core" ] && grep -q 'SIGSEGV' "$T/b1.run" && [ -n "$pid" ] && [ -f "$T/tmp/jitsframe-$(id -u)/$pid.region" ] &&
	! kill -0 "$pid" 2>/dev/null; then
	ok "core: the program crashed (SIGSEGV), gcore wrote a core, the process is gone, its region is \$TMPDIR/jitsframe-UID/$pid.region"
else
	notok "core: the program crashed, gcore wrote a core, its region is in the default directory" \
		"$(ls -la "$T" "$T/tmp"/* 2>&1)" "$(tail -n 20 "$T/b1.run")"
fi
TMPDIR=$T/tmp "${GDB[@]}" -ex "source $PWD/gdb/jitsframe.py" -ex 'echo ==bt\n' -ex bt -ex 'echo ==end\n' \
	"$LJ" "$T/b1.core" >"$T/b1a.out" 2>&1
bt=$(frames "$T/b1a.out" ==bt)
if through "$bt" "TRACE@0x[0-9a-f]+" && printf '%s\n' "$bt" | grep -q '^#0 .* gdbt_tick '; then
	ok "core, region by the convention, no jitdump: gdbt_tick, TRACE@0xSTART, ..., main (gdb/jitsframe.py)"
else
	notok "core, region by the convention, no jitdump: bt reaches main through TRACE@0xSTART" "$bt" "$(tail -n 20 "$T/b1a.out")"
fi
TMPDIR=$T/tmp JITSFRAME_JITDUMP=$T/jd "${GDB[@]}" -ex "source $SCRIPT" -ex 'echo ==bt\n' -ex bt -ex 'echo ==end\n' \
	"$LJ" "$T/b1.core" >"$T/b1b.out" 2>&1
bt=$(frames "$T/b1b.out" ==bt)
if through "$bt" "TRACE_[0-9]+::[^ ]*prog\.lua:$LOOP"; then
	ok "core, with \$JITSFRAME_JITDUMP: TRACE_n::prog.lua:$LOOP, ..., main"
else
	notok "core, with \$JITSFRAME_JITDUMP: bt reaches main through TRACE_n::prog.lua:$LOOP" "$bt" "$(tail -n 20 "$T/b1b.out")"
fi

# --- (b) core: a region elsewhere, named with jitsframe-region ---
mkdir -p "$T/b2"
"${GDB[@]}" -ex run -ex "gcore $T/b2.core" -ex kill \
	--args env JITSFRAME_JITDUMP="$T/b2" "$J" run --quiet --region "$T/b2/crash.region" -- \
	"$LJ" "$T/prog.lua" "$T/libgdbt.so" 1 >"$T/b2.run" 2>&1
TMPDIR=$T/tmp "${GDB[@]}" -ex "source $SCRIPT" -ex 'echo ==none\n' -ex bt -ex 'echo ==wrong\n' \
	-ex "jitsframe-region $T/live/prog.region" -ex bt -ex 'echo ==named\n' -ex "jitsframe-region $T/b2/crash.region" \
	-ex bt -ex 'echo ==end\n' "$LJ" "$T/b2.core" >"$T/b2.out" 2>&1
none=$(frames "$T/b2.out" ==none)
wrong=$(frames "$T/b2.out" ==wrong)
named=$(frames "$T/b2.out" ==named)
if [ -n "$none" ] && ! printf '%s\n' "$none" | grep -qE ' in (main|TRACE)' &&
	[ "$(grep -c '^jitsframe: no region for process [0-9]*: trace frames are left to gdb' "$T/b2.out")" = 1 ]; then
	ok "core, region elsewhere: not found, said once, no frame invented, no main"
else
	notok "core, region elsewhere: not found, no frame invented" "$none" "$(grep jitsframe "$T/b2.out")"
fi
if [ -n "$wrong" ] && ! printf '%s\n' "$wrong" | grep -qE ' in (main|TRACE)' &&
	grep -q "^jitsframe: the region $T/live/prog.region is not used: its producer_pid is [0-9]*, not [0-9]*" "$T/b2.out"; then
	ok "core, jitsframe-region naming another process's region: refused (its producer_pid), no main"
else
	notok "core, jitsframe-region naming another process's region: refused" "$wrong" "$(grep jitsframe "$T/b2.out")"
fi
if through "$named" "TRACE_[0-9]+::[^ ]*prog\.lua:$LOOP" &&
	grep -q "^jitsframe: region $T/b2/crash.region (process [0-9]*, post-mortem, core file" "$T/b2.out"; then
	ok "core, jitsframe-region PATH: TRACE_n::prog.lua:$LOOP (jitdump beside the region), ..., main"
else
	notok "core, jitsframe-region PATH: bt reaches main through TRACE_n" "$named" "$(grep jitsframe "$T/b2.out")"
fi

# self-test: an unwinder whose CFA is 8 bytes off does not reach main
# (a copy in a tree whose build/ is this one's)
mkdir -p "$T/m/gdb" && ln -s "$PWD/build" "$T/m/build"
sed 's/cfa = (base + row.cfa_offset) & _JSF_U64/cfa = (base + row.cfa_offset + 8) \& _JSF_U64/' \
	gdb/jitsframe.py >"$T/m/gdb/jitsframe.py"
if cmp -s gdb/jitsframe.py "$T/m/gdb/jitsframe.py"; then
	notok "self-test: the CFA mutation applies to gdb/jitsframe.py"
else
	TMPDIR=$T/tmp JITSFRAME_JITDUMP=$T/jd "${GDB[@]}" -ex "python __file__ = '/nowhere/x.py'" -ex "source $T/m/gdb/jitsframe.py" \
		-ex 'echo ==bt\n' -ex bt -ex 'echo ==end\n' "$LJ" "$T/b1.core" >"$T/mut.out" 2>&1
	bt=$(frames "$T/mut.out" ==bt)
	if printf '%s\n' "$bt" | grep -qE ' in TRACE_' && ! printf '%s\n' "$bt" | grep -q ' in main ('; then
		ok "self-test: with the CFA 8 bytes off, the core's bt does not reach main"
	else
		notok "self-test: with the CFA 8 bytes off, the core's bt does not reach main" "$bt"
	fi
fi

# --- (c) a signal in trace code ---
"${GDB[@]}" -ex "source $SCRIPT" -ex 'break gdbt_stop' -ex run -ex 'echo ==bt\n' -ex bt -ex 'echo ==end\n' -ex kill \
	--args env JITSFRAME_JITDUMP="$T/live" "$J" run --quiet --region "$T/sig.region" -- \
	"$LJ" "$T/prog.lua" "$T/libgdbt.so" 2 >"$T/sig.out" 2>&1
bt=$(frames "$T/sig.out" ==bt)
if through "$bt" "TRACE_[0-9]+::[^ ]*prog\.lua:$SPIN" && printf '%s\n' "$bt" | grep -q '<signal handler called>'; then
	ok "a signal in trace code: handler, <signal handler called>, TRACE_n::prog.lua:$SPIN, ..., main"
else
	notok "a signal in trace code: bt reaches main through the signal frame and the trace" "$bt" "$(tail -n 20 "$T/sig.out")"
fi

# --- (e) builtins and the interpreter named (a stripped luajit) ---
# A string.gsub callback calls gdbt_stop through the FFI; the program
# prints LuaJIT's own address of string.gsub's C function
# (jit.util.funcinfo) and its binary's load base. The frame gdb unwinds to
# in that C function (its pc within the FDE that readelf says starts
# there) must be named string.gsub once the script is sourced, and "??"
# before; the interpreter's frames luajit_interpreter. Names planted one
# fast-function id off (JITSFRAME_VM_FFNAME_SHIFT) must not pass.
cat >"$T/gsub.lua" <<'EOF2'
local ffi = require("ffi")
ffi.cdef[[void gdbt_stop(int n);]]
local lib = ffi.load(arg[1])
for l in io.lines("/proc/self/maps") do
	local a, off, path = l:match("^(%x+)%-%x+ %S+ (%x+) %S+ %S+%s+(.*)$")
	if path == arg[2] and tonumber(off, 16) == 0 then print("BASE " .. a) break end
end
print(string.format("GSUB %x", require("jit.util").funcinfo(string.gsub).addr))
io.stdout:flush()
local n = 0
local function cb(s) n = n + 1 if n == 300 then lib.gdbt_stop(n) end return s end
local function via() return (string.gsub(string.rep("a", 400), "%a", cb)) end
jit.off(via)
via()
EOF2
LJR=$(readlink -f "$LJ")
# one_named BT NAME BASE LO HI: gdb's frames BT hold exactly one frame
# named NAME, whose pc (a return address: the call is before it) less
# BASE lies in [LO, HI)
one_named() {
	local pc
	pc=$(printf '%s\n' "$1" | sed -nE "s/^#[0-9]+ +0x0*([0-9a-f]+) in ${2//./\\.} \\(\\).*/\\1/p")
	echo "$2 frames: $(printf '%s\n' "$pc" | grep -c .)"
	[ "$(printf '%s\n' "$pc" | grep -c .)" = 1 ] || return 1
	pc=$((0x$pc - 1 - 0x$3))
	[ "$pc" -ge "$4" ] && [ "$pc" -lt "$5" ] || { echo "its pc is not in $2's function"; return 1; }
}
# bt_sourced OUT CMD...: CMD under gdb to gdbt_stop, its backtrace before
# the script is sourced (==before) and after (==after), into OUT
bt_sourced() {
	local out=$1
	shift
	"${GDB[@]}" -ex 'break gdbt_stop' -ex run -ex 'echo ==before\n' -ex bt -ex "source $SCRIPT" \
		-ex 'echo ==after\n' -ex bt -ex 'echo ==end\n' -ex kill --args "$@" >"$out" 2>&1
}
# gsub_case NAME [ENV...]: run it under gdb ($T/NAME.out); 0 when the
# frame in string.gsub's C function, and it alone, is named string.gsub
gsub_case() {
	local out=$T/$1.out region=$T/$1.region
	shift
	bt_sourced "$out" env "$@" "$J" run --quiet --region "$region" -- "$LJR" "$T/gsub.lua" \
		"$T/libgdbt.so" "$LJR"
	local base gsub s e before after
	base=$(sed -n 's/^BASE //p' "$out") gsub=$(sed -n 's/^GSUB //p' "$out")
	before=$(frames "$out" ==before) after=$(frames "$out" ==after)
	[ -n "$base" ] && [ -n "$gsub" ] || { echo "no BASE/GSUB line"; return 1; }
	# the FDE that starts at string.gsub's C function (its file vaddr)
	read -r s e < <(readelf --debug-dump=frames "$LJR" 2>/dev/null | python3 -c '
import re, sys
want = int(sys.argv[1], 16) - int(sys.argv[2], 16)
for l in sys.stdin:
    m = re.search(r" FDE .*pc=([0-9a-f]+)\.\.([0-9a-f]+)", l)
    if m and int(m.group(1), 16) == want:
        print(int(m.group(1), 16), int(m.group(2), 16))
        break' "$gsub" "$base")
	[ -n "${s:-}" ] || { echo "no FDE starts at string.gsub"; return 1; }
	echo "interpreter frames: $(printf '%s\n' "$after" | grep -c ' in luajit_interpreter ()')"
	one_named "$after" string.gsub "$base" "$s" "$e" || return 1
	printf '%s\n' "$after" | grep -q ' in luajit_interpreter ()' || return 1
	printf '%s\n' "$before" | grep -qE ' in (string\.gsub|luajit_interpreter) ' && { echo "named before the script"; return 1; }
	return 0
}
if msg=$(gsub_case gsub); then
	ok "stripped luajit: the frame in string.gsub's C function named string.gsub, the interpreter's luajit_interpreter ($msg)"
else
	notok "stripped luajit: builtins and the interpreter named" "$msg" "$(frames "$T/gsub.out" ==after)" "$(tail -n 5 "$T/gsub.out")"
fi
# planted: the names are there (the interpreter named) but one id off
if ! msg=$(gsub_case gsub-plant JITSFRAME_VM_FFNAME_SHIFT=1) &&
	frames "$T/gsub-plant.out" ==after | grep -q ' in luajit_interpreter ()'; then
	ok "planted (names one id off): string.gsub's frame fails ($msg)"
else
	notok "planted (names one id off): string.gsub's frame must fail, the interpreter still named" "$msg" "$(frames "$T/gsub-plant.out" ==after)"
fi

# --- (f) a C function of a stripped Lua module named ---
# tests/cmod.c stripped (build/tests/cmod): cmod.call(f) calls f, which
# calls gdbt_stop through the FFI. The frame in cmod.call's C function
# must be named cmod.call once the script is sourced (the region's LJCF
# names), its pc within cmod_call as nm gives it in the unstripped build
# (address and size) where the program saw cmod.so mapped; no name
# before. Names planted one address off must not pass.
CM=$PWD/build/tests/cmod
if [ -e "$CM/cmod.so" ] && nm -S "$PWD/build/tests/cmod-full/cmod.so" >"$T/cmod.nm" 2>/dev/null; then
	cat >"$T/ccall.lua" <<'EOF2'
local ffi = require("ffi")
ffi.cdef[[void gdbt_stop(int n);]]
local lib = ffi.load(arg[1])
local cmod = require("cmod")
for l in io.lines("/proc/self/maps") do
	local a, off, path = l:match("^(%x+)%-%x+ %S+ (%x+) %S+ %S+%s+(.*)$")
	if path and path:match("/cmod/cmod%.so$") and tonumber(off, 16) == 0 then print("BASE " .. a) break end
end
io.stdout:flush()
local function via() local r = cmod.call(function() lib.gdbt_stop(7) return 1 end) return r end
for _ = 1, 200 do local s = 0 for i = 1, 100 do s = s + i end end -- (trace events: a look)
via()
EOF2
	ccall_case() {
		local out=$T/$1.out region=$T/$1.region
		shift
		bt_sourced "$out" env LUA_CPATH="$CM/?.so;;" "$@" "$J" run --quiet --region "$region" -- \
			"$LJ" "$T/ccall.lua" "$T/libgdbt.so"
		local base s z after before
		base=$(sed -n 's/^BASE //p' "$out")
		read -r s z < <(awk '$4 == "cmod_call" {print $1, $2}' "$T/cmod.nm")
		after=$(frames "$out" ==after) before=$(frames "$out" ==before)
		[ -n "$base" ] && [ -n "${s:-}" ] || { echo "no BASE line or no cmod_call in nm"; return 1; }
		one_named "$after" cmod.call "$base" $((0x$s)) $((0x$s + 0x$z)) || return 1
		printf '%s\n' "$before" | grep -q ' in cmod\.call ' && { echo "named before the script"; return 1; }
		return 0
	}
	if msg=$(ccall_case ccall); then
		ok "a stripped Lua C module: the frame in cmod.call's C function named cmod.call, its pc within cmod_call as nm says ($msg)"
	else
		notok "a stripped Lua C module: cmod.call's frame named" "$msg" "$(frames "$T/ccall.out" ==after)" "$(tail -n 5 "$T/ccall.out")"
	fi
	if ! msg=$(ccall_case ccall-plant JITSFRAME_VM_FFNAME_SHIFT=1); then
		ok "planted (names one address off): cmod.call's frame fails ($msg)"
	else
		notok "planted (names one address off): cmod.call's frame must fail" "$msg" "$(frames "$T/ccall-plant.out" ==after)"
	fi
else
	notok "tests/cmod.c built and stripped (build/tests/cmod: make check-build)"
fi

# --- (d) installed ---
if make -s install DESTDIR="$T/inst" PREFIX=/usr/local >"$T/inst.log" 2>&1; then
	out=$(gdb -nx -batch -ex "source $T/inst/usr/local/share/jitsframe/gdb/jitsframe.py" \
		-ex 'python print("LIB", _jsf.lib._name if _jsf.lib else _jsf.lib_why)' 2>&1)
	lib=$(printf '%s\n' "$out" | sed -n 's/^LIB //p')
	if [ -n "$lib" ] && [ "$(readlink -f "$lib")" = "$(readlink -f "$T/inst/usr/local/lib/libjitsframe.so.1")" ]; then
		ok "the installed script loads the installed libjitsframe.so.1 (PREFIX/lib)"
	else
		notok "the installed script loads the installed libjitsframe.so.1" "$out"
	fi
else
	notok "make install DESTDIR=\$T/inst" "$(tail -n 8 "$T/inst.log")"
fi
echo "1..$n"
