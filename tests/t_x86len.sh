#!/usr/bin/env bash
# lj/x86len.c against objdump (TAP). The module decodes a looping side
# trace's head with it before it trusts the head's rsp add (lj/ljrows.c), so
# every length it gives must be objdump's: on whole binaries' .text, and on
# every trace the workload set compiles on both VMs (which must decode in
# full: LuaJIT emits nothing outside the subset).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
W=build/tests/x86len_walk
T=$(mktemp -d /tmp/jsf-t_x86len-XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -x "$W" ] || { echo "1..0 # SKIP $W not built"; exit 0; }
for bin in "$(command -v luajit)" /usr/lib/x86_64-linux-gnu/libc.so.6; do
	bin=$(readlink -f "$bin")
	objcopy -O binary --only-section=.text "$bin" "$T/text"
	if out=$(python3 tests/vm/x86cmp.py "$W" at "$T/text"); then
		ok "$(basename "$bin") .text: $out"
	else
		notok "$(basename "$bin") .text: $out"
	fi
done
LJ2=build/luajit2/usr/bin/luajit
for vm in debian openresty; do
	if [ $vm = debian ]; then LJ=luajit; else
		[ -x "$LJ2" ] || { ok "# SKIP openresty: $LJ2 missing"; continue; }
		LJ=$LJ2
		export LUA_PATH="$PWD/build/luajit2/usr/share/luajit-2.1.0-beta3/?.lua;;"
	fi
	mkdir -p "$T/$vm"
	for w in numeric sidetraces nested openresty; do
		mkdir -p "$T/$vm/$w"
		$LJ tests/vm/dumpmc.lua "$T/$vm/$w" bench/workloads/$w.lua 0.2 >/dev/null 2>&1
	done
	set -- "$T/$vm"/*/*.bin
	if [ ! -e "$1" ]; then notok "$vm: no trace code dumped"; continue; fi
	if out=$(python3 tests/vm/x86cmp.py "$W" walk "$@"); then
		ok "$vm trace code: $out"
	else
		notok "$vm trace code: $out"
	fi
	unset LUA_PATH
done
echo "1..$n"
