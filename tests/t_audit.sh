#!/usr/bin/env bash
# The auditlog end to end (TAP), on Debian's luajit and OpenResty's luajit2:
#  - `jitsframe audit FILE` equals LuaJIT's own -jv output of the same run
#    (every bench workload; ground truth: jit/v.lua itself);
#  - full level: the log holds as many record and texit events as a user's
#    own jit.attach handlers counted in the same run, and the user's
#    handlers see the same events as without jitsframe (before/after);
#  - --dump: IR lines = traceinfo.nins, objdump disassembles at the trace's
#    address; --json parses;
#  - SIGKILL: every trace stop the program acknowledged (after our record
#    call returned) is in the log, which decodes up to its last record;
#  - rotation through the module: header first in every file, N files;
#  - disk full (RLIMIT_FSIZE above the region size, below the log size;
#    SIGXFSZ at its default action, death): the program
#    finishes normally, the log decodes and ends with the "log stopped" note.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-build/jitsframe}
T=$(mktemp -d /tmp/jsf-t_audit-XXXXXX)
trap 'rm -rf "$T"' EXIT
LJ2_DIR=${LJ2_DIR:-$PWD/build/luajit2}
VMS=${JSF_VMS:-"debian openresty"}
export LUA_CPATH="$PWD/build/lua/?.so;;"

for vm in $VMS; do
	vm_env "$vm"
	if [ ! -x "$LJ" ]; then notok "$vm: no $LJ (make deps)"; continue; fi
	# 1. the listing equals -jv, workload by workload
	for w in bench/workloads/*.lua; do
		b=$(basename "$w" .lua)
		"$J" run --quiet --replace --region "$T/r" -a "$T/$b.log" -- "$LJ" -jv="$T/$b.v" "$w" >/dev/null 2>"$T/$b.err"
		"$J" audit "$T/$b.log" >"$T/$b.l" 2>"$T/$b.aerr"
		rc=$?
		grep -v '^\[note: ' "$T/$b.l" >"$T/$b.l2"
		grep -v '^$' "$T/$b.v" >"$T/$b.v2"
		if [ $rc -eq 0 ] && [ -s "$T/$b.v2" ] && cmp -s "$T/$b.v2" "$T/$b.l2"; then
			ok "$vm $b: audit listing = -jv output ($(wc -l <"$T/$b.v2") lines)"
		else notok "$vm $b: audit listing vs -jv (rc $rc)" "$(diff "$T/$b.v2" "$T/$b.l2" | head -6)" "$(head -3 "$T/$b.err" "$T/$b.aerr")"; fi
	done

	# 2. full level: record/texit counts = the user's handlers', both orders
	"$LJ" -e "package.loaded.jitsframe = {start = function() return true end}" \
		tests/lua/audit_user.lua "$T/u.ref" after tests/lua/coexist_work.lua >/dev/null 2>&1
	for when in before after; do
		"$LJ" tests/lua/audit_user.lua "$T/u.$when" $when tests/lua/coexist_work.lua "$T/full.$when" >/dev/null 2>"$T/e.$when"
		"$LJ" tests/lua/audit_count.lua "$T/full.$when" >"$T/c.$when" 2>&1
		ur=$(grep '^record ' "$T/u.$when" | cut -d' ' -f2) ux=$(grep '^texit ' "$T/u.$when" | cut -d' ' -f2)
		lr=$(grep '^record ' "$T/c.$when" | cut -d' ' -f2) lx=$(grep '^texit ' "$T/c.$when" | cut -d' ' -f2)
		if cmp -s "$T/u.ref" "$T/u.$when" && [ -n "$ur" ] && [ "$ur" = "$lr" ] && [ -n "$ux" ] && [ "$ux" = "$lx" ] &&
			grep -q '^status clean' "$T/c.$when"; then
			ok "$vm full level, user handlers $when: same events as without jitsframe ($(tr '\n' ' ' <"$T/u.$when")), log has record $lr texit $lx"
		else notok "$vm full level, user handlers $when" "ref: $(tr '\n' ' ' <"$T/u.ref")" "got: $(tr '\n' ' ' <"$T/u.$when" 2>/dev/null)" "log: $(tr '\n' ' ' <"$T/c.$when")" "$(head -3 "$T/e.$when")"; fi
	done
done
vm_env debian

# 3. --dump and --json
L=$T/sidetraces.log
"$J" audit "$L" --json >"$T/j" 2>/dev/null
tr=$(python3 -c "
import json,sys
d=json.load(open('$T/j'))
s=[r for r in d['records'] if r['ev']=='stop']
print(s[len(s)//2]['tr'] if s and d['damage'] is None else '')" 2>"$T/jerr")
if [ -n "$tr" ]; then
	"$J" audit "$L" --dump "$tr" >"$T/d" 2>"$T/derr"
	rc=$?
	"$J" audit "$L" --dump "$tr" --json >"$T/dj" 2>>"$T/derr"
	read -r nins addr <<<"$(python3 -c "
import json
r=json.load(open('$T/dj'))
print(r['info']['nins'], '%x' % r['addr'])" 2>>"$T/derr")"
	irl=$(grep -cE '^[0-9]{4} ' "$T/d")
	first=$(grep -m1 -E '^ +[0-9a-f]+:' "$T/d" | sed -E 's/^ +([0-9a-f]+):.*/\1/')
	ninsn=$(grep -cE '^ +[0-9a-f]+:' "$T/d")
	if [ $rc -eq 0 ] && [ "$irl" = "$nins" ] && [ "$first" = "$addr" ] && [ "$ninsn" -gt 5 ]; then
		ok "--dump $tr: $irl IR lines = traceinfo nins, objdump: $ninsn instructions from 0x$addr; --json parses"
	else notok "--dump $tr" "rc $rc IR $irl nins $nins first $first addr $addr insns $ninsn" "$(head -3 "$T/derr")"; fi
else notok "--json listing" "$(head -3 "$T/jerr")"; fi

# 4. SIGKILL while logging
for level in default full; do
	K=$T/kill-$level.log
	luajit tests/lua/audit_kill.lua "$K" $level >"$T/ack" 2>"$T/kerr" &
	pid=$!
	for _ in $(seq 1 200); do
		[ "$(wc -l <"$T/ack")" -ge 60 ] && break
		sleep 0.05
	done
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	acks=$(wc -l <"$T/ack")
	luajit tests/lua/audit_count.lua "$K" trs >"$T/kc" 2>&1
	grep '^stop-tr ' "$T/kc" | cut -d' ' -f2 | head -n "$acks" >"$T/logged"
	status=$(grep '^status ' "$T/kc")
	# clean, or the very last record cut by the kill
	if [ "$acks" -ge 20 ] && cmp -s "$T/ack" "$T/logged" &&
		{ [ "$status" = "status clean" ] || [[ $status == *"truncated record"* ]]; }; then
		ok "SIGKILL ($level): all $acks acknowledged trace stops are in the log ($(grep -c '^stop-tr ' "$T/kc") decoded), $status"
	else notok "SIGKILL ($level)" "acks $acks, logged $(wc -l <"$T/logged")" "$status" "$(diff "$T/ack" "$T/logged" | head -4)" "$(head -3 "$T/kerr")"; fi
done

# 5. rotation through the module
"$J" run --quiet --replace --region "$T/r" -a "$T/rot.log" --auditlog-max 20000 --auditlog-keep 2 -- luajit bench/workloads/sidetraces.lua >/dev/null 2>"$T/rerr"
good=1 why=""
for f in "$T/rot.log" "$T/rot.log.1" "$T/rot.log.2"; do
	luajit tests/lua/audit_count.lua "$f" >"$T/rc" 2>&1
	[ -e "$f" ] || { good=0; why="$why $f missing"; continue; }
	first=$(luajit -e "local j=require('jitsframe') for r in j.audit_records('$f') do print(r.ev, r.format, r.level) break end")
	[ "$first" = "header	2	default" ] || { good=0; why="$why $f first: $first"; }
	grep -q '^status clean' "$T/rc" || { good=0; why="$why $f: $(grep status "$T/rc")"; }
done
[ -e "$T/rot.log.3" ] && { good=0; why="$why rot.log.3 kept"; }
big=$(stat -c %s "$T/rot.log.1")
if [ $good -eq 1 ] && [ "$big" -lt 200000 ]; then
	ok "rotation (max 20000, keep 2): 3 files, each starts with the header and decodes cleanly (rot.log.1 $big bytes)"
else notok "rotation" "$why" "$(head -3 "$T/rerr")"; fi

# 6. disk full: RLIMIT_FSIZE, SIGXFSZ left at its default (death)
out=$(ulimit -f 1024 && "$J" run --quiet --replace --region "$T/r" -a "$T/full.log" -- luajit bench/workloads/sidetraces.lua 2>"$T/ferr")
rc=$?
luajit tests/lua/audit_count.lua "$T/full.log" >"$T/fc" 2>&1
ref=$(luajit bench/workloads/sidetraces.lua 2>/dev/null)
if [ $rc -eq 0 ] && [ "$out" = "$ref" ] && grep -q '^status clean' "$T/fc" &&
	grep -q '^last note log stopped: writing: File too large' "$T/fc"; then
	ok "disk full (1 MiB RLIMIT_FSIZE, the log would be 2.4 MB): program output and exit unchanged, log ends with: $(grep '^last' "$T/fc" | cut -c11-60)..."
else notok "disk full" "rc $rc" "$(cat "$T/fc")" "$(head -3 "$T/ferr")"; fi

# 7. the CLI on bad input: usage 2, unreadable 3, damaged 1 with the
# listing up to the damage and the message, unknown trace 1
codes=""
"$J" audit >/dev/null 2>&1; codes="$codes $?"
"$J" audit "$L" --bogus >/dev/null 2>&1; codes="$codes $?"
"$J" audit "$L" --dump x >/dev/null 2>&1; codes="$codes $?"
"$J" audit "$T/nonexistent" >/dev/null 2>&1; codes="$codes $?"
"$J" audit "$L" --dump 999999 >/dev/null 2>&1; codes="$codes $?"
"$J" audit --help >/dev/null 2>&1; codes="$codes $?"
sz=$(stat -c %s "$L")
# cut at 2/3, inside a record: a cut that falls on a record's boundary, or
# in the zero bytes a frame can start with (a length's low byte), leaves a
# log that ends cleanly (the zeros are the writer's unwritten space), as
# the reader says it should (one CI run); then 9 bytes further on, twice
# at most
for d in 0 9 18; do
	head -c $((sz * 2 / 3 + d)) "$L" >"$T/cut.log"
	"$J" audit "$T/cut.log" >"$T/cut.out" 2>"$T/cut.err"; crc=$?
	[ $crc = 0 ] || break
done
codes="$codes $crc"
full_lines=$(grep -c . "$T/sidetraces.l")
cut_lines=$(grep -c . "$T/cut.out")
if [ "$codes" = " 2 2 2 3 1 0 1" ] && grep -qE 'damaged at byte [0-9]+: truncated record( frame)?; [0-9]+ records decoded' "$T/cut.err" &&
	[ "$cut_lines" -gt 0 ] && [ "$cut_lines" -lt "$full_lines" ] &&
	cmp -s "$T/cut.out" <(head -n "$cut_lines" "$T/sidetraces.l"); then
	ok "CLI: exit codes$codes; a log cut at 2/3 lists its first $cut_lines of $full_lines lines, then: $(cut -d: -f2- "$T/cut.err" | head -1)"
else notok "CLI bad input" "codes$codes" "$(head -2 "$T/cut.err")" "lines $cut_lines of $full_lines"; fi

# 8. the zeros a writer leaves ahead of its records (a live or killed log):
# the end of the data; a record cut off by the writer's death in them
# (zero frame, some payload): a note, exit 0, the whole listing
{ cat "$L"; head -c 4096 /dev/zero; } >"$T/z.log"
{ cat "$L"; head -c 8 /dev/zero; head -c 300 "$L" | tail -c 200; head -c 4096 /dev/zero; } >"$T/u.log"
"$J" audit "$T/z.log" >"$T/z.out" 2>"$T/z.err"; zc=$?
"$J" audit "$T/u.log" >"$T/u.out" 2>"$T/u.err"; uc=$?
if [ $zc = 0 ] && [ ! -s "$T/z.err" ] && cmp -s "$T/z.out" "$T/sidetraces.l" &&
	[ $uc = 0 ] && grep -qE "note: unfinished record at byte $(stat -c %s "$L") " "$T/u.err" &&
	cmp -s "$T/u.out" "$T/sidetraces.l"; then
	ok "CLI: zeros after the last record are its end (exit 0, full listing); an unfinished record in them: $(cut -d: -f3- "$T/u.err" | cut -c1-60)..."
else notok "CLI on a zero tail" "exit $zc $uc" "$(head -2 "$T/z.err" "$T/u.err")"; fi

echo "1..$n"
[ $fails -eq 0 ]
