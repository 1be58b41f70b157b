#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Lua frames in the profiles (TAP): each trace frame expanded into the Lua
# frames its code stands for (the region's source map, docs/ABI.md 1.5),
# checked by tests/luaframes_check.py against Lua's own debug.getinfo of
# the workload tests/lua/luaframes.lua (a loop in f calling g calling h,
# both inlined into f's loop trace).
#  1-3. `report` of a `record`ing: mixed (the default) shows
#       ...;TRACE_n::...;f;g;h, each chunk:linedefined_[l], and pprof the
#       functions with start_line and their lines; --frames lua only Lua
#       and trace frames; --frames native the mixed stacks without their
#       Lua frames.
#  4.   A recording without maps (JITSFRAME_LUAMAP=0): no Lua frames, and
#       mixed writes the same four files as native.
#  5.   The check can fail: a recording whose maps give each range the
#       frames of the snapshot before (JITSFRAME_VM_LUAMAP_SHIFT=1) fails it.
#  6-8. The same three modes through `profile -- luajit` (root and BPF;
#       skipped visibly otherwise, failed under CI=true).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
LJ=${LUAJIT:-luajit}
W=tests/lua/luaframes.lua
CHK="python3 tests/luaframes_check.py"
T=$(mktemp -d /tmp/jsf-t_luaframes-XXXXXX)
trap 'rm -rf "$T"' EXIT
skipn() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
# check NAME TRUTH DIR MODE [MIXED]: the checker's verdict as one TAP line
check() {
	local name=$1
	shift
	if $CHK "$@" >"$T/chk" 2>&1; then
		ok "$name: $(grep -c '^ok' "$T/chk") checks"
	else
		notok "$name" "$(grep -v '^ok' "$T/chk" | head -5)"
	fi
}
echo "1..8"

# ---- report (the perf path)
if ! command -v perf >/dev/null; then
	[ "${CI:-}" = true ] && { notok "perf not installed (CI=true)"; exit 1; }
	for i in 1 2 3 4 5; do skipn "perf not installed"; done
elif ! "$J" record -o "$T/rec" -- "$LJ" "$W" 20 >"$T/rec.out" 2>&1; then
	if [ "${CI:-}" = true ]; then
		notok "record failed" "$(tail -2 "$T/rec.out")"
		exit 1
	fi
	for i in 1 2 3 4 5; do skipn "cannot record here: $(tail -1 "$T/rec.out")"; done
else
	"$J" report "$T/rec" >/dev/null
	cp "$T/rec/stacks.folded" "$T/mixed.folded"
	check "report: mixed" "$T/rec.out" "$T/rec" mixed
	"$J" report --frames lua "$T/rec" >/dev/null
	check "report --frames lua" "$T/rec.out" "$T/rec" lua
	"$J" report --frames native "$T/rec" >/dev/null
	check "report --frames native" "$T/rec.out" "$T/rec" native "$T/mixed.folded"

	JITSFRAME_LUAMAP=0 "$J" record -o "$T/nomap" -- "$LJ" "$W" 5 >"$T/nomap.out" 2>&1
	for m in native mixed; do
		"$J" report --frames $m "$T/nomap" >/dev/null
		mkdir -p "$T/nomap-$m"
		cp "$T/nomap"/{stacks.folded,flamegraph.svg,flamegraph.html,profile.pb.gz} "$T/nomap-$m/"
	done
	diffs=$(for f in stacks.folded flamegraph.svg flamegraph.html profile.pb.gz; do
		cmp -s "$T/nomap-native/$f" "$T/nomap-mixed/$f" || echo "$f"; done)
	if grep -q '_\[j\]' "$T/nomap-mixed/stacks.folded" &&
	    ! grep -q '_\[l\]' "$T/nomap-mixed/stacks.folded" && [ -z "$diffs" ]; then
		ok "a recording without maps: trace frames, no Lua frames; mixed = native, all four files"
	else
		notok "a recording without maps" "files that differ: ${diffs:-none}" \
		    "Lua frames: $(grep -c '_\[l\]' "$T/nomap-mixed/stacks.folded")"
	fi

	JITSFRAME_VM_LUAMAP_SHIFT=1 "$J" record -o "$T/shift" -- "$LJ" "$W" 10 >"$T/shift.out" 2>&1
	if $CHK "$T/shift.out" "$T/shift" mixed >"$T/chk" 2>&1; then
		notok "the check passes on maps shifted by one snapshot" "$(cat "$T/chk")"
	else
		ok "the check fails on maps shifted by one snapshot: $(grep -m1 '^FAIL' "$T/chk" | cut -c1-150)"
	fi
fi

# ---- profile (the sampler path)
why=$(bpf_missing)
if [ -n "$why" ]; then
	if [ "${CI:-}" = true ]; then
		notok "profile: $why (CI=true: BPF sampling must be available)"
		exit 1
	fi
	for i in 6 7 8; do skipn "profile: $why"; done
else
	# the LUA_INIT chunk that starts the module, as this luajit names it:
	# the sampler can catch the module's start, below that chunk's frame
	LUA_INIT='local d = debug.getinfo(1, "S")
	print(string.format("FUNC init %s %d %d", (d.source:gsub("^[@=]", "")),
	  d.linedefined, d.lastlinedefined))' "$LJ" -e '' >"$T/init"
	for m in mixed lua native; do
		if ! "$J" profile --frames $m -o "$T/prof-$m" -- "$LJ" "$W" 20 \
		    >"$T/prof-$m.out" 2>&1; then
			notok "profile --frames $m failed" "$(tail -2 "$T/prof-$m.out")"
			continue
		fi
		cat "$T/prof-$m.out" "$T/init" >"$T/truth-$m"
		LUAFRAMES_SAMPLER=1 check "profile --frames $m" "$T/truth-$m" "$T/prof-$m" $m
	done
fi
[ $fails -eq 0 ]
