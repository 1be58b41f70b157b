#!/usr/bin/env bash
# jitsframe report on a perf.data whose records are not in time order
# (TAP). report reads a file in time order in one pass (pd_each_restart):
# a record whose time is later than the ones after it is held back, and
# where a record turns out to belong before events already passed on, the
# unwinder and the profile start again and the file is read in the two
# passes that sort it. Ground truth, independent of the reader: moving
# records within the file does not change their times, so the events in
# time order, and with them every frame of --dump and the four profiles,
# are those of the file as recorded. Three moves of one sample record:
#  1. swap: two adjacent samples swapped (the second, earlier one comes
#     right after the one it precedes);
#  2. early: a sample from 3/4 of the file moved to 1/4 (held back);
#  3. late: a sample from 1/4 moved to 3/4 (found after later events went
#     out: start again).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=$PWD/${JSF_CLI:-build/jitsframe}
LJ=${LUAJIT:-luajit}
T=$(mktemp -d /tmp/jsf-t_report_order-XXXXXX)
trap 'rm -rf "$T"' EXIT
need_perf
command -v python3 >/dev/null || { echo "Bail out! python3 needed"; exit 1; }

"$J" record -o "$T/rec" -F 1999 -- $LJ bench/workloads/numeric.lua >"$T/rec.out" 2>"$T/rec.err" || {
	echo "Bail out! record failed: $(tail -3 "$T/rec.err")"; exit 1; }
rm -f "$T/rec/stacks.folded" "$T/rec/flamegraph.svg" "$T/rec/flamegraph.html" "$T/rec/profile.pb.gz"

# perm.py SRC DST MODE: DST is SRC with one sample record moved (MODE as
# above); prints the number of records
cat >"$T/perm.py" <<'EOF'
import struct, sys
src, dst, mode = sys.argv[1:4]
b = open(src, 'rb').read()
doff, dsz = struct.unpack_from('<QQ', b, 40)
off, recs = doff, []
while off < doff + dsz:
    s = struct.unpack_from('<H', b, off + 6)[0]
    recs.append(b[off:off + s])
    off += s
samp = [i for i, r in enumerate(recs) if struct.unpack_from('<I', r)[0] == 9]
if len(samp) < 8:
    sys.exit('too few samples')
if mode == 'swap':
    k = next(k for k in range(len(samp) // 2, len(samp) - 1)
             if samp[k + 1] == samp[k] + 1)
    i = samp[k]
    recs[i], recs[i + 1] = recs[i + 1], recs[i]
else:
    i, j = samp[len(samp) // 4], samp[3 * len(samp) // 4]
    if mode == 'late':
        recs.insert(j, recs.pop(i))
    else:
        recs.insert(i, recs.pop(j))
open(dst, 'wb').write(b[:doff] + b''.join(recs) + b[doff + dsz:])
print(len(recs))
EOF

FILES="stacks.folded flamegraph.svg flamegraph.html profile.pb.gz"
# report_in NAME PERFDATA: a copy of the recording reported from PERFDATA
# (as perf.data, no perf.data.raw), with --dump; "rc" in $T/NAME.rc
report_in() {
	mkdir -p "$T/$1"
	cp -r "$T/rec/." "$T/$1/"
	rm -f "$T/$1/perf.data.raw"
	[ "$2" = "$T/$1/perf.data" ] || cp "$2" "$T/$1/perf.data"
	"$J" report --dump "$T/$1.dump" "$T/$1" >"$T/$1.out" 2>"$T/$1.err"
	echo $? >"$T/$1.rc"
}
# same NAME: NAME's profiles and dump are the recording's
same() {
	local bad=""
	[ "$(cat "$T/$1.rc")" = 0 ] || bad="exit $(cat "$T/$1.rc"): $(cat "$T/$1.err")"
	for f in $FILES; do
		cmp -s "$T/orig/$f" "$T/$1/$f" || bad="$bad $f differs"
	done
	cmp -s "$T/orig.dump" "$T/$1.dump" || bad="$bad --dump differs: $(diff "$T/orig.dump" "$T/$1.dump" | head -4)"
	echo "$bad"
}

report_in orig "$T/rec/perf.data"
ns=$(grep -c '^S ' "$T/orig.dump")
if [ "$(cat "$T/orig.rc")" = 0 ] && [ "$ns" -ge 100 ]; then
	ok "the recording: $ns samples reported"
else
	notok "the recording reported" "rc=$(cat "$T/orig.rc") samples=$ns" "$(cat "$T/orig.err")"
fi

for mode in swap early late; do
	if ! nr=$(python3 "$T/perm.py" "$T/rec/perf.data" "$T/$mode.data" "$mode" 2>&1); then
		notok "$mode: the moved file" "$nr"
		continue
	fi
	report_in "$mode" "$T/$mode.data"
	bad=$(same "$mode")
	if [ -z "$bad" ]; then
		ok "$mode: one of $nr records moved, the same $ns samples, frames (--dump) and four profiles as the file as recorded"
	else
		notok "$mode: the same events in time order" "$bad"
	fi
done

# 4. late, its --dump written to a pipe (no rewind, no truncation): where
# the one pass starts again, what it wrote must not stay in the dump
if [ -d "$T/late" ]; then
	"$J" report --no-write --dump /dev/stdout "$T/late" 2>"$T/pipe.err" |
		grep -E '^[SF] ' >"$T/pipe.dump"
	if grep -E '^[SF] ' "$T/orig.dump" | cmp -s - "$T/pipe.dump"; then
		ok "late, --dump to a pipe: the same $ns samples and frames"
	else
		notok "late, --dump to a pipe: the same samples and frames" \
			"$(grep -c '^S ' "$T/pipe.dump") samples in the dump, $ns recorded" "$(tail -2 "$T/pipe.err")"
	fi
fi

echo "1..$n"
[ "$fails" -eq 0 ]
