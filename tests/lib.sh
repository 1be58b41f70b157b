# shellcheck shell=bash
# The shell tests' TAP helpers, sourced by tests/t_*.sh (from the top of the
# tree: `. tests/lib.sh`). A test numbers its cases with ok/notok/skip_case,
# prints its plan, and ends with `[ $fails -eq 0 ]`; scripts/run-tests
# counts the TAP lines.
n=0 fails=0
# ok MSG / notok MSG [DETAIL...]: one case passed / failed (each detail
# as TAP diagnostics, every line of it prefixed, the first 3000 bytes)
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() {
	n=$((n + 1)) fails=$((fails + 1))
	echo "not ok $n - $1"
	shift
	for l in "$@"; do printf '%s\n' "$l" | head -c 3000 | sed 's/^/#   /'; done
}
# skip_case MSG: one case cannot run here (said, counted as a skip)
skip_case() { n=$((n + 1)); echo "ok $n - # SKIP $1"; }
# skip_case_ci MSG: the same, but under CI=true (where every capability
# must be present) a failure
skip_case_ci() {
	if [ "${CI:-}" = true ]; then notok "$1 (CI=true: every capability must be present)"
	else skip_case "$1"; fi
}
# skip_all_ci MSG: the whole test cannot run here: it skips visibly, but
# under CI=true (where every capability must be present) it fails
skip_all_ci() {
	if [ "${CI:-}" = true ]; then
		echo "1..1"
		echo "not ok 1 - $1 (CI=true: every capability must be present)"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 0
}
# need_perf: perf(1) installed, else skip_all_ci
need_perf() {
	command -v perf >/dev/null ||
		skip_all_ci "perf not installed (scripts/install-deps installs linux-perf)"
}
# bpf_missing: why `jitsframe profile` cannot sample here (root, BTF, a
# one-second probe in $T/probe; $J is the CLI), nothing when it can
bpf_missing() {
	[ "$(id -u)" = 0 ] || { echo "not root (profile needs root, or CAP_BPF and CAP_PERFMON)"; return; }
	[ -r /sys/kernel/btf/vmlinux ] || { echo "no BTF (/sys/kernel/btf/vmlinux)"; return; }
	local rc=0
	"$J" profile -o "$T/probe" -d 1 -- sleep 0.2 >"$T/probe.out" 2>&1 || rc=$?
	[ $rc -eq 4 ] && { echo "cannot sample here: $(head -1 "$T/probe.out")"; return; }
	[ $rc -eq 0 ] || echo "profile does not run here (exit $rc): $(head -1 "$T/probe.out")"
}
# need_bpf: bpf_missing says nothing, else skip_all_ci
need_bpf() {
	local why
	why=$(bpf_missing)
	[ -z "$why" ] || skip_all_ci "$why"
}
# check NAME COMMAND...: one case, ok when COMMAND succeeds (its output,
# if any, in parentheses), else not ok with the first 12 lines of it
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then ok "$name${out:+ ($out)}"; else
		mapfile -t l < <(head -n 12 <<<"$out")
		notok "$name" "${l[@]}"
	fi
}
# rj_fixtures FILE: the RaptorJIT fixtures' directory (the first of
# $JITSFRAME_RAPTORJIT_DATA, ../shared/raptorjit, /work/shared/raptorjit
# that holds FILE), or nothing
rj_fixtures() {
	local d
	for d in "${JITSFRAME_RAPTORJIT_DATA:-}" "$PWD/../shared/raptorjit" /work/shared/raptorjit; do
		if [ -n "$d" ] && [ -e "$d/$1" ]; then
			echo "$d"
			return
		fi
	done
}
# vm_env VM: LJ (the binary) and LUA_PATH for VM: debian (Debian's
# luajit, $LUAJIT) or openresty (luajit2 in $LJ2_DIR, default
# build/luajit2, with its own jit/*.lua)
vm_env() {
	local d=${LJ2_DIR:-$PWD/build/luajit2}
	case $1 in
	debian) LJ=${LUAJIT:-/usr/bin/luajit}; unset LUA_PATH ;;
	openresty)
		LJ=$d/usr/bin/luajit
		export LUA_PATH="$d/usr/share/luajit-2.1.0-beta3/?.lua;;" ;;
	esac
}
