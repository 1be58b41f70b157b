#!/usr/bin/env bash
# Trace names from the region (docs/ABI.md 1.4) in jitsframe report (TAP):
# a recording whose jitdump is taken away is reported with the names the
# module published in its region, so its products equal those of the same
# recording with the jitdump (ground truth: perf's jitdump, written by the
# jitdump sink, not by the region). flushstorm (the first workload) reuses
# addresses across flushes: each sample is named for its own time.
set -u
cd "$(dirname "$0")/.."
J=$PWD/${JSF_CLI:-build/jitsframe}
LJ=${LUAJIT:-luajit}
T=$(mktemp -d /tmp/jsf-t_regnames-XXXXXX)
trap 'rm -rf "$T"' EXIT
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do printf '%s\n' "$l" | head -c 2000 | sed 's/^/#   /'; echo; done; }
if ! command -v perf >/dev/null; then
	echo "1..0 # SKIP perf not installed (scripts/install-deps installs linux-perf)"
	exit 0
fi
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
echo "1..$n"
[ $fails -eq 0 ]
