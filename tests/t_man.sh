#!/usr/bin/env bash
# The man pages (TAP):
#  - docs/jitsframe.1 and docs/jitsframe.3 render without a warning, both
#    through man-db (`man --warnings -l`) and groff with every warning on
#    (`groff -man -ww -z`): any output on stderr fails;
#  - for every command `jitsframe --help` lists, the options its `--help`
#    prints are exactly those its subsection of jitsframe(1) lists, and the
#    man page has no command --help does not list (tests/manopts.py);
#  - the options each command's getopt_long table accepts are exactly those
#    its --help prints (cli/*_cmd.c; "region" is the union of its subcommands).
# Each check is first shown to fail on a damaged input. Without man or
# groff (Debian: man-db, groff-base; `make deps`) it skips, except under
# CI=true, where it fails.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
J=${JSF_CLI:-build/jitsframe}
T=$(mktemp -d /tmp/jsf-t_man-XXXXXX)
trap 'rm -rf "$T"' EXIT
PAGES="docs/jitsframe.1 docs/jitsframe.3"

if ! command -v man >/dev/null 2>&1 || ! command -v groff >/dev/null 2>&1; then
	if [ "${CI:-}" = true ]; then
		echo "1..1"
		echo "not ok 1 - man and groff are needed (Debian: man-db groff-base; make deps)"
		exit 1
	fi
	echo "1..0 # SKIP no man or groff (Debian: man-db groff-base; make deps)"
	exit 0
fi
if [ ! -x "$J" ]; then
	echo "1..1"
	echo "not ok 1 - $J not built (make)"
	exit 1
fi

# stderr of rendering PAGE both ways (empty: clean)
render() {
	MANWIDTH=80 man --warnings -l "$1" 2>&1 >/dev/null
	echo "exit $?" | grep -v '^exit 0$'
	groff -man -ww -z "$1" 2>&1
}

# 1. the rendering check catches a warning: an unknown macro, a bad escape
printf '.TH X 1 2025-01-01 x x\n.SH NAME\nx \\- y\n.SH DESCRIPTION\n.BOGUS a\n\\z\n' >"$T/bad.1"
if [ -n "$(render "$T/bad.1")" ]; then ok "a page with warnings is caught"; else notok "a page with warnings is caught"; fi

# 2. the pages render cleanly
for p in $PAGES; do
	if [ ! -e "$p" ]; then notok "$p exists"; continue; fi
	out=$(render "$p")
	if [ -z "$out" ]; then ok "$p renders without warnings"; else
		mapfile -t l < <(head -n 10 <<<"$out")
		notok "$p renders without warnings" "${l[@]}"
	fi
done

# 3. the options comparison catches a missing man entry and an extra
# --help option
awk '/^\.TP$/ { tp = 1; next } tp && /no\\-write/ { tp = 0; getline; next } { if (tp) print ".TP"; tp = 0; print }' \
	docs/jitsframe.1 >"$T/less.1"
if out=$(python3 tests/manopts.py compare "$J" "$T/less.1") || ! grep -q "report: --help only \['--no-write'\]" <<<"$out"; then
	notok "a man page missing an option is caught (got: ${out:-nothing})"
else
	ok "a man page missing an option is caught"
fi
cat >"$T/jsf" <<EOF
#!/bin/sh
"$PWD/$J" "\$@" || exit
[ "\$1 \$2" = "report --help" ] && echo "  --bogus N      what"
exit 0
EOF
chmod +x "$T/jsf"
if out=$(python3 tests/manopts.py compare "$T/jsf" docs/jitsframe.1) || ! grep -q "report: --help only \['--bogus'\]" <<<"$out"; then
	notok "a --help option missing from the man page is caught (got: ${out:-nothing})"
else
	ok "a --help option missing from the man page is caught"
fi
sed 's/^\.SS "audit replay"$/.SS "audit rewind"/' docs/jitsframe.1 >"$T/cmd.1"
if out=$(python3 tests/manopts.py compare "$J" "$T/cmd.1") || ! grep -q "commands: --help only \['audit replay'\], man page only \['audit rewind'\]" <<<"$out"; then
	notok "a command missing from the man page is caught (got: ${out:-nothing})"
else
	ok "a command missing from the man page is caught"
fi

# 4. jitsframe(1) and --help agree
if out=$(python3 tests/manopts.py compare "$J" docs/jitsframe.1); then
	ok "every command's --help options = its options in jitsframe(1)"
else
	mapfile -t l <<<"$out"
	notok "every command's --help options = its options in jitsframe(1)" "${l[@]}"
fi

# 5. --help and what the parser accepts agree
for pair in run:run record:record report:report audit:audit vmprofile:vmprofile profile:profile \
	region:"region dump,region validate,region export,region prune,region import"; do
	f=cli/${pair%%:*}_cmd.c
	IFS=, read -ra cmds <<<"${pair#*:}"
	help=$(for c in "${cmds[@]}"; do "$J" $c --help | python3 tests/manopts.py help $c; done | sort -u)
	src=$(python3 tests/manopts.py source "$f")
	if [ -z "$src" ]; then
		notok "$f: its getopt_long options found"
	elif [ "$help" = "$src" ]; then
		ok "${pair%%:*}: --help lists every option $f accepts"
	else
		notok "${pair%%:*}: --help lists every option $f accepts" \
			"--help only: $(comm -23 <(echo "$help") <(echo "$src") | tr '\n' ' ')" \
			"$f only: $(comm -13 <(echo "$help") <(echo "$src") | tr '\n' ' ')"
	fi
done
echo "1..$n"
