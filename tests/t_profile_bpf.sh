#!/usr/bin/env bash
# `jitsframe profile`, end to end (TAP; root and BPF): stacks sampled in the
# kernel through the live region.
#  1. `profile -- luajit W` on the workload set: >= 99.9% of the samples
#     through trace code unwound from main (parsed from the summary line);
#     the profiles written (folded stacks with _[j] trace frames and main,
#     an SVG that parses, pprof).
#  2. The oracle: `--check N` on the same runs, the kernel's walk against
#     jitsframe's own unwinder over the raw copies: >= 99.9% agree.
#  3. `-p` on a process already running (started by `jitsframe run`).
#  4. Without privilege (uid 65534, no capabilities): one message, exit 4,
#     CMD never run.
# Without root or BPF it skips visibly; under CI=true it fails instead.
set -u
cd "$(dirname "$0")/.."
J=$PWD/${JSF_CLI:-build/jitsframe}
LJ=${LUAJIT:-luajit}
T=$(mktemp -d /tmp/jsf-t_profile_bpf-XXXXXX)
trap 'rm -rf "$T"; [ -n "${bgpid:-}" ] && kill "$bgpid" 2>/dev/null' EXIT
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
skip() {
	if [ "${CI:-}" = true ]; then
		echo "1..1"
		echo "not ok 1 - $1 (CI=true: BPF sampling must be available)"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}
[ "$(id -u)" = 0 ] || skip "not root (profile needs root, or CAP_BPF and CAP_PERFMON)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no BTF (/sys/kernel/btf/vmlinux)"
"$J" profile -o "$T/probe" -d 1 -- sleep 0.2 >"$T/probe.out" 2>&1
rc=$?
[ $rc -eq 4 ] && skip "cannot sample here: $(head -1 "$T/probe.out")"
[ $rc -eq 0 ] || skip "profile does not run here (exit $rc): $(head -1 "$T/probe.out")"

# "N samples, T through trace code, M of them" -> "N T M"
summary() { sed -nE 's/^jitsframe profile: ([0-9]+) samples, ([0-9]+) through trace code, ([0-9]+) of them.*/\1 \2 \3/p' "$1"; }
# "check: A of B raw copies" -> "A B"
checked() { sed -nE 's/^jitsframe profile: check: ([0-9]+) of ([0-9]+) raw copies.*/\1 \2/p' "$1"; }
enough() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(b > 0 && a * 1000 >= 999 * b) }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? 100 * a / b : 0 }'; }

# 1 + 2. The workload set, with the oracle on one sample in 10.
total=0 totalmain=0 cagree=0 ctotal=0
for w in bench/workloads/*.lua; do
	name=$(basename "$w" .lua)
	freq=1999 args=
	[ "$name" = flushstorm ] && args=0.3
	"$J" profile -o "$T/$name" -F $freq --check 10 -- $LJ "$w" $args >"$T/$name.out" 2>"$T/$name.err"
	rc=$?
	read -r samples through tmain <<<"$(summary "$T/$name.out")"
	if [ $rc -ne 0 ] || [ -z "${through:-}" ]; then
		notok "profile $name" "rc=$rc" "$(tail -3 "$T/$name.err")" "$(head -3 "$T/$name.out")"
		continue
	fi
	echo "# $name: $(grep '^jitsframe profile: [0-9]' "$T/$name.out")"
	grep '^jitsframe profile: check' "$T/$name.out" | sed 's/^/# /'
	total=$((total + through))
	totalmain=$((totalmain + tmain))
	if [ "$through" -lt 20 ]; then
		ok "profile $name: only $through samples through trace code ($(pct "$tmain" "$through")% from main; too few to judge)"
	elif enough "$tmain" "$through"; then
		ok "profile $name: $(pct "$tmain" "$through")% of $through samples through trace code unwound from main (>= 99.9%)"
	else
		notok "profile $name: $(pct "$tmain" "$through")% of $through samples through trace code unwound from main (< 99.9%)" "$(grep '^jitsframe profile: [0-9]' "$T/$name.out")"
	fi
	read -r a b <<<"$(checked "$T/$name.out")"
	cagree=$((cagree + ${a:-0}))
	ctotal=$((ctotal + ${b:-0}))
done
if enough "$totalmain" "$total"; then
	ok "workload set: $(pct "$totalmain" "$total")% of $total samples through trace code unwound from main (>= 99.9%)"
else notok "workload set: $(pct "$totalmain" "$total")% of $total samples through trace code unwound from main (< 99.9%)"; fi
if [ "$ctotal" -ge 20 ] && enough "$cagree" "$ctotal"; then
	ok "--check: $cagree of $ctotal raw copies ($(pct "$cagree" "$ctotal")%) agree frame for frame with jitsframe's unwinder (>= 99.9%)"
else
	notok "--check: $cagree of $ctotal raw copies ($(pct "$cagree" "$ctotal")%) agree (want >= 99.9% of >= 20)" \
		"$(grep -h 'check: differs' "$T"/*.out | head -5)"
fi

# 1b. The profiles of one run.
D=$T/numeric
if [ -s "$D/stacks.folded" ] && grep -q '_\[j\]' "$D/stacks.folded" && grep -q ';main;' "$D/stacks.folded" &&
	grep -qE 'TRACE_[0-9]+::[^;]*:[0-9]+_\[j\]' "$D/stacks.folded" && python3 - "$D/flamegraph.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = {"s": "http://www.w3.org/2000/svg"}
titles = [t.text or "" for t in root.findall(".//s:title", ns)]
assert any("TRACE_" in t and "_[j]" in t for t in titles), titles[:5]
assert any(t.startswith("main ") for t in titles), "main frame"
PY
then ok "profiles: stacks.folded has named trace frames TRACE_n::chunk:line_[j] under main; flamegraph.svg parses"
else notok "profiles of numeric" "$(head -c 300 "$D/stacks.folded" 2>/dev/null)"; fi
if [ -s "$D/flamegraph.html" ] && gzip -t "$D/profile.pb.gz" 2>/dev/null; then
	ok "profiles: flamegraph.html written, profile.pb.gz is gzip"
else notok "flamegraph.html / profile.pb.gz" "$(ls -l "$D")"; fi

# 3. -p on a process already running: started by `jitsframe run`, its
#    region at its default path; profiled for 3 s once it runs traces.
"$J" run --quiet -- $LJ bench/workloads/numeric.lua 4 >/dev/null 2>&1 &
bgpid=$!
for _ in $(seq 50); do
	[ -e "${TMPDIR:-/tmp}/jitsframe-0/$bgpid.region" ] && break
	sleep 0.1
done
sleep 0.5
"$J" profile -o "$T/attach" -d 3 -p "$bgpid" >"$T/attach.out" 2>"$T/attach.err"
rc=$?
kill "$bgpid" 2>/dev/null
wait "$bgpid" 2>/dev/null
bgpid=
read -r samples through tmain <<<"$(summary "$T/attach.out")"
if [ $rc -eq 0 ] && [ "${through:-0}" -ge 20 ] && enough "$tmain" "$through"; then
	ok "-p on a running process: $(pct "$tmain" "$through")% of $through samples through trace code unwound from main"
else notok "-p on a running process" "rc=$rc" "$(cat "$T/attach.out")" "$(tail -3 "$T/attach.err")"; fi

# 4. No privilege: uid 65534 without capabilities.
chmod 711 "$T"
mkdir -p "$T/np" && chmod 777 "$T/np"
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all \
	"$J" profile -o "$T/np/out" -d 1 -- sh -c "touch $T/np/ran" >"$T/np.out" 2>&1
rc=$?
if [ $rc -eq 4 ] && [ "$(grep -c . "$T/np.out")" -eq 1 ] && grep -q "cannot sample" "$T/np.out" &&
	grep -qE "root|CAP_BPF" "$T/np.out" && [ ! -e "$T/np/ran" ]; then
	ok "no privilege: one message, exit 4, CMD not run ($(cat "$T/np.out"))"
else notok "no privilege" "rc=$rc" "$(cat "$T/np.out")"; fi

# 5. Usage.
"$J" profile -p 1 -a >/dev/null 2>"$T/u.err"; rc=$?
if [ $rc -eq 2 ] && grep -q "one of" "$T/u.err"; then ok "-p with -a: usage error"
else notok "-p with -a" "rc=$rc"; fi

echo "1..$n"
[ $fails -eq 0 ]
