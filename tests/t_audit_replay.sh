#!/usr/bin/env bash
# `jitsframe audit replay` (TAP): for every workload of bench/workloads, on
# Debian's luajit and OpenResty's luajit2, ONE run with the module writing a
# full-level auditlog (started from LUA_INIT, so before -j handles its
# options and sees every event) and -jdump=tbimrsaT,FILE -jv=FILE2 on; the
# offline replay of the log must equal FILE and FILE2 byte for byte (cmp).
#
# Ground truth is LuaJIT's own jit/dump.lua and jit/v.lua, live. The replay
# runs the same unmodified files. Normalisations, argued:
#  * none on the outputs: they are compared with cmp as written;
#  * in the replay, objects jit.dump prints by address (tables "{%p}",
#    userdata "[%p]", thread/proto/trace/cdata via tostring) are stand-ins
#    of the same type() whose %p and tostring() text is the logged one
#    (vm/replay.lua); int64 cdata constants are rebuilt with their exact
#    value. jit.dump uses such objects only through type(), tostring() and
#    format("%p"), so this changes no byte it prints, and cmp would show it
#    if it did.
# Then self-tests: the comparison fails when the replay loses one record
# (a recorded bytecode, a trace stop, a func record, a trace start), and a
# log cut short or with a flipped byte replays a prefix of the live output
# and says where the log is damaged. Also: function errinfo, int64 and
# table constants (tests/lua/audit_replay_extra.lua), a default-level log,
# the pure-Lua capture (tests/vm/audit_capture.lua), bad command lines.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-build/jitsframe}
T=$(mktemp -d /tmp/jsf-t_audit_replay-XXXXXX)
trap 'rm -rf "$T"' EXIT

LJ2=build/luajit2/usr/bin/luajit
LJ2PATH="$PWD/$(ls -d build/luajit2/usr/share/luajit-2.1* 2>/dev/null | head -n 1)/?.lua;;"
INIT="assert(require('jitsframe').start{auditlog=os.getenv('AUDIT_LOG'), level=os.getenv('AUDIT_LEVEL') or 'full', quiet=true, region=os.getenv('AUDIT_REGION')})"
# ... and at exit, how many stopped traces the raw reader built from the
# VM's memory (lj/ljtrace.c) rather than through jit.util: the replays
# below must cover that path (tests/t_audit_raw.sh checks it against
# jit.util trace by trace)
INIT="$INIT; local p = newproxy(true); getmetatable(p).__gc = function() local f = io.open(os.getenv('AUDIT_LOG') .. '.raw', 'w'); f:write(require('jitsframe').stats().auditlog.raw_traces); f:close() end; _G.__t_audit_replay = p"

# live VM NAME MODE SCRIPT SCALE: one run, log + -jdump + -jv in $T/NAME.*
live() {
	local vm=$1 name=$2 mode=$3 script=$4 scale=$5 lj=luajit path=";;"
	if [ "$vm" = openresty ]; then lj=$LJ2; path=$LJ2PATH; fi
	rm -f "$T/$name".*
	AUDIT_LOG="$T/$name.log" AUDIT_REGION="$T/$name.region" LUA_PATH="$path" \
		LUA_CPATH="build/lua/?.so;;" LUA_INIT="$INIT" \
		"$lj" -jdump="$mode","$T/$name.d" -jv="$T/$name.v" "$script" $scale \
		>/dev/null 2>"$T/$name.err"
}
# replay NAME MODE [SUFFIX]: replay with a clean environment: the CLI picks
# the luajit whose tables match the log's (OpenResty's for its logs)
replay() {
	local name=$1 mode=$2 sfx=${3:-r}
	env -u LUA_PATH -u LUA_INIT "$J" audit replay "$T/$name.log" \
		-jdump="$mode","$T/$name.d.$sfx" -jv="$T/$name.v.$sfx" 2>"$T/$name.rerr.$sfx"
}

# workload scale: small enough for the whole test to take well under a
# minute, large enough for side traces, aborts, stitches and flushes
WL="numeric:0.05 sidetraces:0.005 flushstorm:0.04 nested:0.05 openresty:0.05"
for vm in debian openresty; do
	if [ "$vm" = openresty ] && [ ! -x "$LJ2" ]; then
		skip_case "OpenResty luajit2 not unpacked (scripts/install-deps)"
		continue
	fi
	for ws in $WL; do
		w=${ws%%:*} s=${ws#*:} name=$vm-${ws%%:*}
		live "$vm" "$name" tbimrsaT "bench/workloads/$w.lua" "$s"
		replay "$name" tbimrsaT
		stops=$(grep -c '^---- TRACE [0-9]* stop' "$T/$name.d")
		aborts=$(grep -c '^---- TRACE [0-9]* abort' "$T/$name.d")
		stitch=$(grep -c '/stitch' "$T/$name.d")
		flush=$(grep -c '^---- TRACE flush' "$T/$name.d")
		bcl=$(grep -cE '^[0-9]{4}  ' "$T/$name.d")
		raw=$(cat "$T/$name.log.raw" 2>/dev/null)
		if [ "$stops" -gt 0 ] && [ "$bcl" -gt 0 ] && cmp -s "$T/$name.d" "$T/$name.d.r" &&
			cmp -s "$T/$name.v" "$T/$name.v.r" && [ "${raw:-0}" -gt 0 ]; then
			ok "$vm $w $s: replay = live: -jdump=tbimrsaT $(wc -c <"$T/$name.d") bytes ($stops traces, $raw read raw, $aborts aborts, $stitch stitch, $flush flushes), -jv $(wc -c <"$T/$name.v") bytes; log $(wc -c <"$T/$name.log") bytes"
		else
			notok "$vm $w $s: replay differs from live ($stops traces)" \
				"$(cmp "$T/$name.d" "$T/$name.d.r" 2>&1)" "$(cmp "$T/$name.v" "$T/$name.v.r" 2>&1)" \
				"$(diff "$T/$name.d" "$T/$name.d.r" 2>&1 | head -6)" "$(head -3 "$T/$name.err" "$T/$name.rerr.r")" \
				"traces read raw: ${raw:-none}"
		fi
	done
	# trace exits with their registers (texit varargs): -jdump's X mode
	name=$vm-exits
	live "$vm" "$name" tbisXT bench/workloads/nested.lua 0.05
	replay "$name" tbisXT
	ex=$(grep -c '^---- TRACE [0-9]* exit' "$T/$name.d")
	if [ "$ex" -gt 0 ] && cmp -s "$T/$name.d" "$T/$name.d.r" && cmp -s "$T/$name.v" "$T/$name.v.r"; then
		ok "$vm nested, -jdump=tbisXT: replay = live, $ex trace exits with registers, $(wc -c <"$T/$name.d") bytes"
	else
		notok "$vm nested, -jdump=tbisXT: replay differs ($ex exits)" "$(cmp "$T/$name.d" "$T/$name.d.r" 2>&1)" \
			"$(diff "$T/$name.d" "$T/$name.d.r" 2>&1 | head -6)" "$(head -3 "$T/$name.rerr.r")"
	fi
	# what the workloads do not print: an abort whose errinfo is a function,
	# int64 constants (cdata), a table constant ("{%p}")
	name=$vm-extra
	live "$vm" "$name" tbimrsaT tests/lua/audit_replay_extra.lua ""
	replay "$name" tbimrsaT
	ff=$(grep -c 'FastFunc ffi.typeof' "$T/$name.d")
	i64=$(grep -c 'i64 ADD .* +1234567890123' "$T/$name.d")
	tk=$(grep -c 'TDUP   {0x' "$T/$name.d")
	if [ "$ff" -gt 0 ] && [ "$i64" -gt 0 ] && [ "$tk" -gt 0 ] && cmp -s "$T/$name.d" "$T/$name.d.r" &&
		cmp -s "$T/$name.v" "$T/$name.v.r" && grep -q 'FastFunc ffi.typeof' "$T/$name.v"; then
		ok "$vm audit_replay_extra.lua: replay = live ($ff aborts with a function errinfo, $i64 int64 constants, $tk table constants)"
	else
		notok "$vm audit_replay_extra.lua: replay differs or features missing ($ff/$i64/$tk)" \
			"$(diff "$T/$name.d" "$T/$name.d.r" 2>&1 | head -6)" "$(diff "$T/$name.v" "$T/$name.v.r" 2>&1 | head -4)"
	fi
done

# The default level (no record/texit events, no aborted IR) replays -jv and
# -jdump without its b, x and a modes.
name=debian-default
AUDIT_LEVEL=default live debian "$name" tsimrT bench/workloads/openresty.lua 0.05
replay "$name" tsimrT
if [ "$(grep -c '^---- TRACE [0-9]* stop' "$T/$name.d")" -gt 0 ] && cmp -s "$T/$name.d" "$T/$name.d.r" &&
	cmp -s "$T/$name.v" "$T/$name.v.r"; then
	ok "default level, openresty.lua: -jdump=tsimrT ($(wc -c <"$T/$name.d") bytes) and -jv replay equal"
else
	notok "default level: replay differs" "$(diff "$T/$name.d" "$T/$name.d.r" 2>&1 | head -6)"
fi

# The replay does not depend on the C writer: the same records written by
# a pure-Lua capture (tests/vm/audit_capture.lua) replay equally.
name=debian-capture
rm -f "$T/$name".*
JSF_AUDIT_CAPTURE="$T/$name.log" LUA_INIT=@tests/vm/audit_capture.lua LUA_PATH=";;" \
	luajit -jdump=tbimrsaT,"$T/$name.d" -jv="$T/$name.v" bench/workloads/nested.lua 0.05 >/dev/null 2>"$T/$name.err"
replay "$name" tbimrsaT
if [ "$(grep -c '^---- TRACE [0-9]* stop' "$T/$name.d")" -gt 0 ] && cmp -s "$T/$name.d" "$T/$name.d.r" &&
	cmp -s "$T/$name.v" "$T/$name.v.r"; then
	ok "pure-Lua capture of nested.lua: replay = live ($(wc -c <"$T/$name.d") bytes of -jdump)"
else
	notok "pure-Lua capture: replay differs" "$(diff "$T/$name.d" "$T/$name.d.r" 2>&1 | head -6)" "$(head -3 "$T/$name.err" "$T/$name.rerr.r")"
fi

# Self-tests on one log: one record fewer must show.
name=debian-nested
for spec in record:200 stop:5 func:3 start:7; do
	JITSFRAME_REPLAY_SKIP=$spec replay "$name" tbimrsaT skip
	if cmp -s "$T/$name.d" "$T/$name.d.skip" && cmp -s "$T/$name.v" "$T/$name.v.skip"; then
		notok "self-test: the replay without the $spec record still equals the live output"
	else
		ok "self-test: without the ${spec%%:*} record #${spec#*:} the replay differs ($(cmp "$T/$name.d" "$T/$name.d.skip" 2>&1 | head -n 1 | sed "s|.*differ: ||"))"
	fi
done

# A log cut at 2/3: the replay stops at the damage with a message and exit
# status 1, and what it printed is a prefix of the live output.
# (The log's size varies from run to run; should 2/3 fall exactly between
# two records, the cut is a valid shorter log, so the cut moves on by one
# byte: into a record.)
size=$(wc -c <"$T/$name.log")
cut=$((size * 2 / 3))
for try in 1 2; do
	head -c "$cut" "$T/$name.log" >"$T/cut.log"
	env -u LUA_PATH "$J" audit replay "$T/cut.log" -jdump=tbimrsaT,"$T/cut.d" -jv="$T/cut.v" 2>"$T/cut.err"
	rc=$?
	[ "$rc" -eq 0 ] && [ ! -s "$T/cut.err" ] && [ "$try" -eq 1 ] || break
	cut=$((cut + 1))
done
dl=$(wc -c <"$T/cut.d")
if [ "$rc" -eq 1 ] && grep -q 'damaged at byte' "$T/cut.err" && [ "$dl" -gt 0 ] &&
	cmp -s "$T/cut.d" <(head -c "$dl" "$T/$name.d") && [ "$dl" -lt "$(wc -c <"$T/$name.d")" ] &&
	cmp -s "$T/cut.v" <(head -c "$(wc -c <"$T/cut.v")" "$T/$name.v"); then
	ok "a log cut at $cut of $size bytes: exit 1, '$(head -n 1 "$T/cut.err" | sed 's|.*cut.log: ||' | cut -c1-70)', output = the first $dl bytes of the live -jdump"
else
	notok "cut log: rc $rc, $dl bytes" "$(cat "$T/cut.err")" "$(cmp "$T/cut.d" "$T/$name.d" 2>&1)"
fi

# One byte flipped in the middle: the record's checksum fails, the replay
# stops there (exit 1, message), its output a prefix of the live one.
luajit - "$T/$name.log" "$T/flip.log" <<'EOF'
local f = assert(io.open(arg[1], "rb")) local s = f:read("*a") f:close()
local i = math.floor(#s / 2)
s = s:sub(1, i - 1) .. string.char(bit.bxor(s:byte(i), 0x20)) .. s:sub(i + 1)
f = assert(io.open(arg[2], "wb")) f:write(s) f:close()
EOF
env -u LUA_PATH "$J" audit replay "$T/flip.log" -jdump=tbimrsaT,"$T/flip.d" -jv="$T/flip.v" 2>"$T/flip.err"
rc=$?
dl=$(wc -c <"$T/flip.d")
if [ "$rc" -eq 1 ] && grep -q 'damaged at byte' "$T/flip.err" && [ "$dl" -gt 0 ] &&
	cmp -s "$T/flip.d" <(head -c "$dl" "$T/$name.d") && [ "$dl" -lt "$(wc -c <"$T/$name.d")" ]; then
	ok "a log with byte $((size / 2)) flipped: exit 1, '$(head -n 1 "$T/flip.err" | sed 's|.*flip.log: ||' | cut -c1-70)', output = the first $dl bytes of the live -jdump"
else
	notok "flipped log: rc $rc, $dl bytes" "$(cat "$T/flip.err")" "$(cmp "$T/flip.d" "$T/$name.d" 2>&1)"
fi

# Bad command lines and inputs: clear message, documented exit status.
"$J" audit replay "$T/nonexistent" -jv >/dev/null 2>"$T/e1"; r1=$?
"$J" audit replay "$T/$name.log" >/dev/null 2>"$T/e2"; r2=$?
"$J" audit replay "$T/$name.log" -jp >/dev/null 2>"$T/e3"; r3=$?
printf 'not a log at all' >"$T/junk.log"
"$J" audit replay "$T/junk.log" -jv >/dev/null 2>"$T/e4"; r4=$?
if [ $r1 -eq 3 ] && [ $r2 -eq 2 ] && [ $r3 -eq 2 ] && [ $r4 -ne 0 ] && [ -s "$T/e4" ]; then
	ok "bad input: missing file 3, no -j 2, -jp 2, junk $r4 ('$(head -n 1 "$T/e4" | cut -c1-80)')"
else
	notok "bad input: $r1 $r2 $r3 $r4" "$(cat "$T/e1" "$T/e2" "$T/e3" "$T/e4")"
fi

echo "1..$n"
[ "$fails" -eq 0 ]
