#!/usr/bin/env bash
# An auditlog written before the compact raw encoding (raw stop records
# version 1, docs/AUDITLOG.md "Raw stop records") still decodes to what it
# decoded to then (TAP). Fixture: tests/fixtures/audit-raw1.audit, a
# default-level log of bench/workloads/nested.lua 0.05 on Debian's luajit
# written by the module of main at 832688c (session 8); the .expect and
# .jdump files are that build's `jitsframe audit` outputs (the listing,
# --json, --dump N --no-mcode for every trace) and its replay's
# -jdump=tsirT: ground truth made by the old reader, not by this one.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-build/jitsframe}
F=tests/fixtures/audit-raw1
T=$(mktemp -d /tmp/jsf-t_audit_oldfmt-XXXXXX)
trap 'rm -rf "$T"' EXIT

# the fixture is what it says: raw stop records of version 1 (the first
# byte of every `raw` bin: 0xa3 "raw", bin8/bin16, then the version)
n1=$(LC_ALL=C grep -aoP '\xa3raw(\xc4.|\xc5..)\x01' "$F.audit" | wc -l)
nraw=$(LC_ALL=C grep -ao 'rawk' "$F.audit" | wc -l)
if [ "$nraw" -gt 0 ] && [ "$n1" = "$nraw" ]; then
	ok "fixture: $nraw raw stop records, all version 1"
else
	notok "fixture: $nraw raw stop records, $n1 of version 1"
fi

{
	"$J" audit "$F.audit"
	"$J" audit "$F.audit" --json
	for i in $(seq 1 33); do "$J" audit "$F.audit" --dump "$i" --no-mcode; done
} >"$T/expect" 2>&1
if cmp -s "$T/expect" "$F.expect"; then
	ok "audit listing, --json and --dump of all 33 traces: as the old reader printed them"
else
	notok "audit outputs differ from the old reader's" "$(diff "$F.expect" "$T/expect" | head -20)"
fi

if "$J" audit replay "$F.audit" -jdump=tsirT >"$T/jdump" 2>"$T/err" && cmp -s "$T/jdump" "$F.jdump"; then
	ok "replay -jdump=tsirT: as the old reader's replay printed it"
else
	notok "replay -jdump=tsirT differs" "$(head -3 "$T/err")" "$(diff "$F.jdump" "$T/jdump" | head -20)"
fi

echo "1..$n"
[ "$fails" -eq 0 ]
