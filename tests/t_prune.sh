#!/usr/bin/env bash
# Retention of post-mortem regions in the default directory (TAP):
#  - the Lua module, given no region path, keeps the newest 16 regions of
#    processes that are gone there (and its own): 20 runs leave exactly
#    the last 17 runs' regions, by the paths start() returned;
#  - JITSFRAME_REGION_KEEP=N and start{region_keep=N} keep N, "all" and
#    false keep every one, anything else is refused by start();
#  - a running producer's region survives a run that keeps none;
#  - a second start() without a path, in a process publishing to a path
#    of its own, prunes nothing (neither there nor in the default dir);
#  - `jitsframe region prune`: --dry-run lists and removes nothing, --keep
#    and --json, a directory others may write to is refused (exit 1).
# Ground truth: the paths each run's start() returned, in the order run.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
LJ=${LUAJIT:-luajit}
T=$(mktemp -d /tmp/jsf-t_prune-XXXXXX)
trap 'kill $live_pid 2>/dev/null; rm -rf "$T"' EXIT
live_pid=
command -v "$LJ" >/dev/null || skip_all_ci "no $LJ"
export TMPDIR=$T LUA_CPATH="$PWD/build/lua/?.so;;"
unset JITSFRAME_REGION JITSFRAME_REGION_KEEP
D=$T/jitsframe-$(id -u)
# one run of a program with the module started (OPTS: start's table);
# prints the path start() returned
run() {
	"$LJ" -e "local ok, p = require('jitsframe').start{quiet=true${1:+, $1}}
		assert(ok, p) io.write(p, '\n')
		local s = 0 for i = 1, 2000 do s = s + i % 7 end"
}
regions() { (cd "$D" 2>/dev/null && ls -1 -- *.region 2>/dev/null | sort); }

echo "1..9"
: >"$T/paths"
for i in $(seq 20); do run >>"$T/paths" 2>>"$T/err" || break; done
want=$(tail -n 17 "$T/paths" | xargs -n1 basename | sort)
got=$(regions)
if [ "$(wc -l <"$T/paths")" = 20 ] && [ "$got" = "$want" ]; then
	ok "20 runs leave the last 17 runs' regions (16 kept + the last's own)"
else
	notok "20 runs leave the last 17 runs' regions (16 kept + the last's own)" \
		"runs: $(wc -l <"$T/paths")" "want: $(echo $want)" "got: $(echo $got)" "$(head -5 "$T/err")"
fi

p=$(JITSFRAME_REGION_KEEP=2 run 2>&1)
want=$( (tail -n 2 "$T/paths"; echo "$p") | xargs -n1 basename | sort)
got=$(regions)
if [ "$got" = "$want" ]; then
	ok "JITSFRAME_REGION_KEEP=2: the 2 newest dead ones and its own"
else
	notok "JITSFRAME_REGION_KEEP=2: the 2 newest dead ones and its own" \
		"want: $(echo $want)" "got: $(echo $got)"
fi
echo "$p" >>"$T/paths"

before=$(regions | wc -l)
run "region_keep = false" >/dev/null 2>&1
JITSFRAME_REGION_KEEP=all run >/dev/null 2>&1
after=$(regions | wc -l)
if [ "$after" = $((before + 2)) ]; then
	ok "region_keep=false and JITSFRAME_REGION_KEEP=all remove nothing"
else
	notok "region_keep=false and JITSFRAME_REGION_KEEP=all remove nothing" "before $before, after $after"
fi

out=$(run "region_keep = 'some'" 2>&1)
out2=$(run "region_keep = ''" 2>&1)
if echo "$out" | grep -q 'region_keep must be a count' &&
	echo "$out2" | grep -q 'region_keep must be a count'; then
	ok "start{region_keep='some'} and region_keep='' are refused with a message"
else
	notok "start{region_keep='some'} and region_keep='' are refused with a message" "$out" "$out2"
fi

# a running producer (it waits on a fifo) and a run keeping none
mkfifo "$T/fifo"
"$LJ" -e "local ok, p = require('jitsframe').start{quiet=true}
	io.write(p, '\n') io.flush() io.open('$T/fifo'):read('*a')" >"$T/live" 2>&1 &
live_pid=$!
exec 7>"$T/fifo"
for _ in $(seq 100); do [ -s "$T/live" ] && break; sleep 0.05; done
lp=$(basename "$(cat "$T/live")")
p=$(run "region_keep = 0" 2>&1)
got=$(regions)
want=$(printf '%s\n%s\n' "$lp" "$(basename "$p")" | sort)
if [ -n "$lp" ] && [ "$got" = "$want" ]; then
	ok "region_keep=0: only the running producer's region and its own remain"
else
	notok "region_keep=0: only the running producer's region and its own remain" \
		"want: $(echo $want)" "got: $(echo $got)"
fi
exec 7>&-
wait $live_pid 2>/dev/null
live_pid=

# the CLI
for i in 1 2 3; do run >/dev/null 2>&1; done
n0=$(regions | wc -l)
dry=$("$J" region prune --keep 1 --dry-run 2>&1)
rc=$?
n1=$(regions | wc -l)
if [ $rc = 0 ] && [ "$n1" = "$n0" ] && [ "$(echo "$dry" | grep -c '\.region [0-9]*$')" = $((n0 - 1)) ]; then
	ok "region prune --dry-run lists $((n0 - 1)) of $n0 and removes nothing"
else
	notok "region prune --dry-run lists $((n0 - 1)) of $n0 and removes nothing" "exit $rc, $n1 left" "$dry"
fi
newest=$(ls -1t "$D"/*.region | head -1)
js=$("$J" region prune --keep 1 --json "$D")
rc=$?
if [ $rc = 0 ] && [ "$(regions)" = "$(basename "$newest")" ] &&
	echo "$js" | python3 -c 'import json,sys; d=json.load(sys.stdin)[0]; assert len(d["removed"]) == '"$((n0 - 1))"' and not d["dry_run"]'; then
	ok "region prune --keep 1 --json DIR keeps the newest, reports the rest"
else
	notok "region prune --keep 1 --json DIR keeps the newest, reports the rest" "exit $rc" "$js" "left: $(regions)"
fi
chmod 0777 "$D"
out=$("$J" region prune --keep 0 "$D" 2>&1)
rc=$?
chmod 0700 "$D"
if [ $rc = 1 ] && [ "$(regions | wc -l)" = 1 ] && echo "$out" | grep -q 'others'; then
	ok "region prune refuses a directory others may write to (exit 1)"
else
	notok "region prune refuses a directory others may write to (exit 1)" "exit $rc" "$out"
fi

# a second start() without a path in a process that publishes to a path of
# its own: nothing is pruned, there nor in the default directory
mkdir -m 0700 "$T/own"
for i in 1 2 3; do run "region = '$T/own/100$i.region'" >/dev/null 2>&1; done
nd=$(regions | wc -l)
"$LJ" -e "local j = require('jitsframe')
	assert(j.start{quiet=true, region='$T/own/2000.region'})
	assert(j.start{quiet=true, region_keep=0})" >"$T/second" 2>&1
nown=$(ls "$T/own" | grep -c '\.region$')
if [ "$nown" = 4 ] && [ "$(regions | wc -l)" = "$nd" ] && [ "$nd" -gt 0 ]; then
	ok "a second start{region_keep=0} in a process publishing to a path prunes nothing"
else
	notok "a second start{region_keep=0} in a process publishing to a path prunes nothing" \
		"own dir: $nown of 4 left" "default dir: $(regions | wc -l) of $nd left" "$(cat "$T/second")"
fi
[ $fails -eq 0 ]
