#!/usr/bin/env bash
# The rows unwind/vmsub.c gives the subroutines LuaJIT's interpreter calls
# inside its one-row FDE (TAP), against ground truth that is not ours:
# readelf -wF and objdump -d (binutils' decoders) for every row of the
# VM objects and of other libraries (tests/vmsub_check.py), and gdb's view
# of the real stack stopped inside each refined subroutine of each VM
# executable (tests/vmsub_gdb.py): [rsp] is the return address right
# after a `call` of it inside the interpreter, [CFA - 8] (CFA = rsp + the
# row's offset) right after a `call` into the interpreter's FDE from
# outside it (the interpreter's own caller), and no entry of the
# interpreter's dispatch table points into the subroutine (the indirect
# jumps a static walk cannot see).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
D=build/tests/elfrows_dump
T=$(mktemp -d /tmp/jsf-t_vmsubrows-XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -x "$D" ] || { echo "1..0 # SKIP $D not built (make $D)"; exit 0; }
command -v objdump >/dev/null && command -v readelf >/dev/null ||
	{ echo "1..0 # SKIP binutils missing"; exit 0; }
LJ2=build/luajit2/usr/bin/luajit
vmobjs=("$(readlink -f "$(command -v luajit)")")
for f in /usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2 "$LJ2"; do
	[ -e "$f" ] && vmobjs+=("$(readlink -f "$f")")
done
for f in "${vmobjs[@]}"; do
	$D "$f" >"$T/rows" || { notok "$f: uw_elf_rows failed"; continue; }
	if out=$(python3 tests/vmsub_check.py "$T/rows" "$f"); then
		nr=$(echo "$out" | grep -c '^refined')
		if [ "$nr" -ge 1 ]; then
			ok "$(basename "$f"): $(echo "$out" | tail -1)"
		else
			notok "$(basename "$f"): no subroutine refined" "$out"
		fi
	else
		notok "$(basename "$f") against readelf/objdump" "$out"
	fi
	echo "$out" | grep -E '^(refined|refused)' | sed 's/^/# /'
	echo "$out" | grep -E '^(refined|refused)' >"$T/$(echo "$f" | tr / _).spans"
done
# a CPU without SSE4.1 (LuaJIT's traces call vm_floor/vm_ceil there, at
# the trace's rsp): no subroutine accepted, every one refused, the pcs
# accepted above now without a row
for f in "${vmobjs[@]}"; do
	JITSFRAME_VMSUB_NOSSE41=1 $D "$f" >"$T/rows.nosse" || { notok "$f: uw_elf_rows failed"; continue; }
	out=$(python3 tests/vmsub_check.py "$T/rows.nosse" "$f")
	spans="$T/$(echo "$f" | tr / _).spans"
	# bytes of the spans of kind K (refined/refused) in a listing
	bytes() {
		local k r rest b=0
		while read -r k r rest; do
			[ "$k" = "$1" ] && b=$((b + ${r#*-} - ${r%-*}))
		done
		echo $b
	}
	acc=$(bytes refined <"$spans") was=$(($(bytes refined <"$spans") + $(bytes refused <"$spans")))
	ref=$(bytes refined <<<"$out") nref=$(bytes refused <<<"$out")
	if [ "$ref" = 0 ] && [ "$nref" = "$was" ] && [ "$acc" -gt 0 ]; then
		ok "$(basename "$f") on a CPU without SSE4.1: 0 bytes refined, $nref refused (the $acc refined above among them)"
	else
		notok "$(basename "$f") on a CPU without SSE4.1: $ref bytes refined, $nref refused (want 0 and $was)" "$out"
	fi
done
for f in /lib/x86_64-linux-gnu/libc.so.6 /lib/x86_64-linux-gnu/libm.so.6 \
	/lib/x86_64-linux-gnu/libstdc++.so.6 /lib/x86_64-linux-gnu/libcrypto.so.3 \
	/lib64/ld-linux-x86-64.so.2 /usr/bin/python3; do
	[ -e "$f" ] || continue
	$D "$f" >"$T/rows" || { notok "$f: uw_elf_rows failed"; continue; }
	if out=$(python3 tests/vmsub_check.py "$T/rows" "$f" strict); then
		ok "$(basename "$f") untouched: $(echo "$out" | tail -1)"
	else
		notok "$(basename "$f"): rows changed in one-row FDEs" "$out"
	fi
done
# gdb: each refined subroutine of each VM executable, stopped in
command -v gdb >/dev/null || { skip_case "gdb missing"; echo "1..$n"; exit $((fails > 0)); }
for exe in "$(readlink -f "$(command -v luajit)")" "$(readlink -f "$LJ2")"; do
	[ -x "$exe" ] || continue
	sp="$T/$(echo "$exe" | tr / _).spans"
	[ -s "$sp" ] || continue
	# the interpreter's FDE: the one the refined rows sit in
	read -r flo fhi k < <(python3 - "$exe" "$sp" <<'PY'
import re, subprocess, sys
exe, sp = sys.argv[1], sys.argv[2]
lo = int(re.search(r"refined (0x[0-9a-f]+)", open(sp).read()).group(1), 16)
for l in subprocess.run(["readelf", "-wF", exe], capture_output=True, text=True).stdout.splitlines():
    m = re.search(r"pc=([0-9a-f]+)\.\.([0-9a-f]+)", l)
    if m and int(m.group(1), 16) <= lo < int(m.group(2), 16):
        print(m.group(1), m.group(2), int(re.search(r"rsp\+(\d+)", open(sp).read().split("refined")[1]).group(1)))
        break
PY
)
	# PIE text segments with file offset = vaddr (gdb gives offsets)
	if ! readelf -lW "$exe" | awk '$1=="LOAD" && $7 ~ /E/ {exit !($2==$3)}'; then
		skip_case "$(basename "$exe"): text file offset != vaddr"
		continue
	fi
	while read -r _ range _; do
		lo=${range%-*} hi=${range#*-}
		VMSUB_OFF=$lo VMSUB_LO=$lo VMSUB_HI=$hi VMSUB_FLO=$flo VMSUB_FHI=$fhi VMSUB_K=$k \
			timeout 60 gdb -q -batch -x tests/vmsub_gdb.py --args "$exe" -joff -e \
			'local x=0 for i=1,1e5 do x=x+(i%7)+math.ceil(i/3)+math.floor(i/5) end' \
			>"$T/gdb" 2>&1
		line=$(grep '^VMSUB' "$T/gdb")
		if out=$(python3 - "$exe" "$lo" "$hi" "$flo" "$fhi" "$line" <<'PY'
import re, subprocess, sys
exe, lo, hi, flo, fhi, line = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3], 16), int(sys.argv[4], 16), int(sys.argv[5], 16), sys.argv[6]
f = dict(kv.split("=", 1) for kv in line.split()[1:])
def off(v):
    p, o = v.rsplit(":", 1)
    return p, int(o, 16)
calls = {}
for l in subprocess.run(["objdump", "-d", "--no-show-raw-insn", exe], capture_output=True, text=True).stdout.splitlines():
    m = re.match(r"^\s*([0-9a-f]+):\s+call\s+([0-9a-f]+)\b", l)
    if m:
        calls[int(m.group(1), 16)] = int(m.group(2), 16)
ends = {}
for a, t in calls.items():
    ends[a + 5] = (a, t)  # call rel32: 5 bytes
errs = []
p, pc = off(f["pc"])
if p != exe or pc != lo: errs.append(f"stopped at {f['pc']}")
p, ra = off(f["ra"])
c = ends.get(ra)
if p != exe or not c or not (flo <= c[0] < fhi) or c[1] != lo:
    errs.append(f"[rsp] {f['ra']} is not right after a call of {lo:#x} inside the interpreter")
p, ra2 = off(f["cfa_ra"])
c = ends.get(ra2) if p == exe else None
if p == exe and (not c or flo <= c[0] < fhi or not (flo <= c[1] < fhi)):
    errs.append(f"[CFA-8] {f['cfa_ra']} is not right after a call into the interpreter from outside it")
if int(f["dispatch_in_sub"]) or int(f["dispatch_in_fde"]) < 50:
    errs.append(f"dispatch table: {f['dispatch_in_sub']} entries into the subroutine, {f['dispatch_in_fde']} into the interpreter")
print("; ".join(errs) if errs else f"[rsp]={f['ra']} (after the call at {ends[ra][0]:#x}), CFA-8={f['cfa_ra']}, dispatch: {f['dispatch_in_fde']} entries in the interpreter, 0 in the subroutine")
sys.exit(1 if errs else 0)
PY
); then
			ok "gdb $(basename "$exe") stopped in $range: $out"
		else
			notok "gdb $(basename "$exe") stopped in $range" "$out" "$(tail -3 "$T/gdb")"
		fi
	done < <(grep '^refined' "$sp")
done
echo "1..$n"
exit $((fails > 0))
