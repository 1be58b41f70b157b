#!/usr/bin/env bash
# Trace names from the region (docs/ABI.md 1.4) in jitsframe report (TAP):
# a recording whose jitdump is taken away is reported with the names the
# module published in its region, so its products equal those of the same
# recording with the jitdump (ground truth: perf's jitdump, written by the
# jitdump sink, not by the region); chunk names with a space, ';' or a
# newline are named with '_' for each. flushstorm (the first workload) reuses
# addresses across flushes: each sample is named for its own time.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
LJ=${LUAJIT:-luajit}
T=$(mktemp -d /tmp/jsf-t_regnames-XXXXXX)
trap 'rm -rf "$T"' EXIT
need_perf
W=bench/workloads/$(ls bench/workloads | grep -m1 '\.lua$')
if ! "$J" record --no-inject -o "$T/rec" -F 999 -- $LJ "$W" >"$T/rec.out" 2>"$T/rec.err"; then
	notok "record $W" "$(tail -3 "$T/rec.err")"
	echo "1..$n"
	exit 1
fi
cp "$T/rec/stacks.folded" "$T/with.folded"
ntr=$(grep -o 'TRACE_[0-9]*::[^;]*_\[j\]' "$T/with.folded" | sort -u | wc -l)
mkdir "$T/away" && mv "$T"/rec/jit-*.dump "$T/away/"
"$J" report "$T/rec" >"$T/rep.out" 2>"$T/rep.err"
if [ "$ntr" -gt 0 ] && cmp -s "$T/with.folded" "$T/rec/stacks.folded"; then
	ok "without its jitdump, report names the $ntr traces of $W from the region: stacks.folded identical"
else
	notok "without its jitdump, report names the traces from the region" "$ntr traces named with the jitdump" \
		"$(diff "$T/with.folded" "$T/rec/stacks.folded" | head -n 6)"
fi
# the region itself: every trace function named, as the jitdump names it
if "$J" region validate "$T/rec/region" >"$T/val" 2>&1; then ok "its region validates: $(cat "$T/val")"; else
	notok "its region validates" "$(cat "$T/val")"
fi
# names without any perf sink (jitsframe run: region only): each trace's
# name in the region is where LuaJIT itself says it starts (-jv, on the
# same run: ground truth independent of the module)
for W2 in bench/workloads/numeric.lua bench/workloads/sidetraces.lua; do
	b=$(basename "$W2" .lua)
	"$J" run --quiet --region "$T/$b.region" -- $LJ -jv="$T/$b.jv" "$W2" 0.2 >/dev/null 2>"$T/$b.err"
	"$J" region dump --all "$T/$b.region" 2>/dev/null | sed -nE 's/.* rows, TRACE_([0-9]+)::(.*)$/\1 \2/p' | sed -E 's#^([0-9]+) .*/#\1 #' >"$T/$b.names"
	# -jv: [TRACE   3 (1/4) file:line ...] -> 3 file:line (-jv drops the
	# chunk's directories; so do the names compared)
	sed -nE 's/^\[TRACE +([0-9]+) (\([0-9]+\/[0-9]+\) )?([^ ]+:[0-9]+).*/\1 \3/p' "$T/$b.jv" >"$T/$b.want"
	got=$(wc -l <"$T/$b.names") want=$(wc -l <"$T/$b.want")
	if [ "$got" -gt 0 ] && [ "$got" = "$want" ] && cmp -s <(sort "$T/$b.names") <(sort "$T/$b.want"); then
		ok "run (no perf sink), $b: all $got traces named in the region where -jv says they start"
	else
		notok "run (no perf sink), $b: region names = -jv's starts" "region $got, -jv $want" \
			"$(diff <(sort "$T/$b.names") <(sort "$T/$b.want") | head -n 6)" "$(head -3 "$T/$b.err")"
	fi
done
# a chunk name with a space and a ';' (each would split a folded stack's
# frame): the region's name is -jv's start with each made '_'; a newline
# too (in a name of its own: -jv's line would break on it)
printf '%s\n' 'local f = assert(load("local s = 0\nfor i = 1, 300000 do s = s + i % 7 end\nreturn s", "=my chunk;v1"))' \
	'local g = assert(load("local s = 0\nfor i = 1, 300000 do s = s + i % 5 end\nreturn s", "=two\nlines"))' \
	'print(f(), g())' >"$T/chunk.lua"
"$J" run --quiet --region "$T/chunk.region" -- $LJ -jv="$T/chunk.jv" "$T/chunk.lua" >/dev/null 2>"$T/chunk.err"
"$J" region dump --all "$T/chunk.region" 2>/dev/null | sed -nE 's/.* rows, (TRACE_[0-9]+::.*)$/\1/p' | sort >"$T/chunk.names"
want1=$(sed -nE 's/^\[TRACE +([0-9]+) (my chunk;v1:[0-9]+) loop\]$/TRACE_\1::\2/p' "$T/chunk.jv" | tr ' ;' '__')
want2=$(sed -nE 's/^lines:([0-9]+) loop\]$/\1/p' "$T/chunk.jv")
if [ -n "$want1" ] && [ -n "$want2" ] && grep -qxF "$want1" "$T/chunk.names" &&
	grep -qE "^TRACE_[0-9]+::two_lines:$want2\$" "$T/chunk.names" && [ "$(wc -l <"$T/chunk.names")" = 2 ]; then
	ok "chunk names with a space, ';' and a newline: $(tr '\n' ' ' <"$T/chunk.names")"
else
	notok "chunk names with a space, ';' and a newline made '_'" "-jv: $(tr '\n' '|' <"$T/chunk.jv")" \
		"region: $(tr '\n' '|' <"$T/chunk.names")" "$(head -3 "$T/chunk.err")"
fi
echo "1..$n"
[ $fails -eq 0 ]
