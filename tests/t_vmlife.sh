#!/usr/bin/env bash
# VM-side lifecycle: fork, refusal messages, `jitsframe run` errors (TAP).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-build/jitsframe}
LJ=${LUAJIT:-luajit}
T=$(mktemp -d /tmp/jsf-t_vmlife-XXXXXX)
trap 'rm -rf "$T"' EXIT

# fork: parent live and untouched, child has its own closed region
out=$(LUA_CPATH="build/lua/?.so;;" $LJ tests/lua/fork.lua "$T/r" "$J" 2>&1)
read -r ps pn cs cn <<<"$out"
if [ "$ps" = live ] && [ "${pn:-0}" -ge 1 ] && [ "$cs" = closed ] && [ "${cn:-0}" -gt "${pn:-0}" ] &&
	"$J" region validate "$T/r" >/dev/null; then
	ok "fork: parent region live with $pn traces, child's own region closed with $cn (inherited + new)"
else notok "fork" "$out"; fi

# run: errors are clear, exit codes documented
"$J" run >/dev/null 2>"$T/e1"; rc=$?
if [ $rc -eq 2 ] && grep -q "no command" "$T/e1"; then ok "run without a command: usage error"
else notok "run without a command" "rc=$rc $(cat "$T/e1")"; fi
"$J" run -- /nonexistent/luajit >/dev/null 2>"$T/e2"; rc=$?
if [ $rc -eq 127 ] && grep -q "cannot run /nonexistent/luajit" "$T/e2"; then ok "run: missing command gives 127 and a message"
else notok "run: missing command" "rc=$rc $(cat "$T/e2")"; fi
"$J" run --module-dir "$T" -- $LJ -e 1 >/dev/null 2>"$T/e3"; rc=$?
if [ $rc -eq 3 ] && grep -q "jitsframe.so" "$T/e3"; then ok "run: missing module is named"
else notok "run: missing module" "rc=$rc $(cat "$T/e3")"; fi
# the user's LUA_INIT still runs, after ours
LUA_INIT="print('user init ran')" "$J" run --quiet --region "$T/r4" -- $LJ -e "print(require('jitsframe').stats().region)" >"$T/o4" 2>&1
if grep -q "user init ran" "$T/o4" && grep -q "$T/r4" "$T/o4"; then ok "run keeps the user's LUA_INIT and starts jitsframe"
else notok "run keeps LUA_INIT" "$(cat "$T/o4")"; fi
# the exit status of the command is passed through
"$J" run --quiet --region "$T/r5" -- $LJ -e "os.exit(7)"; rc=$?
if [ $rc -eq 7 ]; then ok "run passes the command's exit status"; else notok "run exit status" "rc=$rc"; fi
# an explicit path that exists is refused unless --replace
"$J" run --region "$T/r5" -- $LJ -e "local x=0 for i=1,1e5 do x=x+i end" >/dev/null 2>"$T/e6"
if grep -q "cannot create the region" "$T/e6" && "$J" run --quiet --replace --region "$T/r5" -- $LJ -e "local x=0 for i=1,1e5 do x=x+i end" 2>"$T/e7" && [ ! -s "$T/e7" ]; then
	ok "existing region file refused unless --replace"
else notok "existing region file" "$(cat "$T/e6")" "$(cat "$T/e7")"; fi

# every trace of an ordinary workload is published and none is withdrawn
# without a flush (a start event once withdrew everything: this guards it)
out=$(LUA_CPATH="build/lua/?.so;;" $LJ -e "assert(require('jitsframe').start{region='$T/r8', quiet=true})" \
	-e 'dofile("bench/workloads/sidetraces.lua")' \
	-e 'local s = require("jitsframe").stats() print(s.traces, s.published, s.skipped, s.removed)' 2>&1 | tail -1)
read -r tr pub sk rm <<<"$out"
if [ "${rm:-x}" = 0 ] && [ "${tr:-0}" -gt 100 ] && [ $((pub + sk)) -eq "$tr" ] && [ $((pub * 100)) -ge $((tr * 90)) ]; then
	ok "sidetraces: $pub of $tr traces published, $sk refused, none withdrawn"
else notok "sidetraces publishing" "traces published skipped removed: $out"; fi

echo "1..$n"
[ $fails -eq 0 ]
