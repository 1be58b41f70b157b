#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Lua frames of prototypes the VM frees and reuses (TAP): `profile` names
# an interpreted Lua frame from its prototype, read through /proc/PID/mem
# after the sample. The VM frees a prototype with its chunk and puts the
# next one of its size in the same place, so a name kept by address, or
# read when the ring is drained (up to 100 ms later) without checking it
# is the prototype the kernel saw, names another function.
# Workload: tests/lua/protoreuse.lua, six chunks (phase1..phase6) of the
# same code, each run for 0.25 s in the interpreter and collected before
# the next is loaded. Ground truth: each chunk's window on the workload's
# own CLOCK_MONOTONIC, the clock of the samples' times (--dump).
#  1. Every frame named phaseK is in a sample inside phaseK's window, and
#     most samples in each window carry it (tests/protoreuse_check.py),
#     at 999 Hz and at 4999 Hz.
#  2. The check can fail: the same dump with the last phase's frames
#     named as the one before (a reused prototype named from an earlier
#     read) fails it.
# Needs root and BPF: skipped visibly otherwise, failed under CI=true.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
LJ=${LUAJIT:-luajit}
T=$(mktemp -d /tmp/jsf-t_protoreuse-XXXXXX)
trap 'rm -rf "$T"' EXIT
command -v "$LJ" >/dev/null || skip_all_ci "no $LJ"
need_bpf
echo "1..3"
for hz in 999 4999; do
	if ! "$J" profile -F $hz -o "$T/p$hz" --dump "$T/d$hz" -- "$LJ" tests/lua/protoreuse.lua 6 \
	    >"$T/out$hz" 2>"$T/err$hz"; then
		notok "profile -F $hz failed" "$(tail -3 "$T/err$hz")"
		continue
	fi
	check "-F $hz: every phaseK frame inside phaseK's window, most samples there carry it" \
		python3 tests/protoreuse_check.py "$T/out$hz" "$T/d$hz"
done
if [ -s "$T/d999" ] && ! out=$(python3 tests/protoreuse_check.py "$T/out999" "$T/d999" --plant 2>&1); then
	ok "the check fails on a planted stale name (${out:0:160})"
else
	notok "the check fails on a planted stale name" "${out:-no dump}"
fi
[ $fails -eq 0 ]
