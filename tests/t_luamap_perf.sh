#!/bin/bash
# SPDX-License-Identifier: MIT
# perf's srcline of trace code is the line of each guard's range, not only
# the trace's first (the jitdump's DEBUG_INFO from the Lua-frame map,
# docs/ABI.md 1.5): a recording of a loop with guards on several lines,
# injected by `jitsframe record` (perf inject -j), shows more than one
# line for one trace in `perf script -F ip,sym,srcline`.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
need_perf
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "1..1"
if ! build/jitsframe record -o "$T/rec" -- luajit tests/lua/luamap_guards.lua \
    >"$T/out" 2>&1; then
	if [ "${CI:-}" = true ]; then
		echo "not ok 1 - record failed: $(tail -2 "$T/out")"
		exit 1
	fi
	echo "ok 1 # SKIP cannot record here: $(tail -1 "$T/out")"
	exit 0
fi
perf script -i "$T/rec/perf.data" -F ip,sym,srcline 2>/dev/null |
    awk '/TRACE_[0-9]+::/ { tr = $2; next }
	 tr && /luamap_guards.lua:[0-9]+/ { split($1, a, ":"); seen[tr] = seen[tr] " " a[2] }
	 { tr = "" }
	 END { for (t in seen) { n = split(seen[t], l, " "); delete u; k = 0
		for (i = 1; i <= n; i++) if (!(l[i] in u)) { u[l[i]] = 1; k++; s[t] = s[t] " " l[i] }
		print k, t, s[t] } }' | sort -rn >"$T/lines"
best=$(head -1 "$T/lines")
if [ "${best%% *}" -gt 1 ] 2>/dev/null; then
	echo "ok 1 - one trace, several guard lines in perf's srcline: $best"
else
	echo "not ok 1 - no trace shows more than one line: ${best:-no trace samples}"
	exit 1
fi
