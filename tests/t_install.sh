#!/usr/bin/env bash
# `make install` / `make uninstall` (TAP), into a temporary DESTDIR with
# PREFIX=/usr/local; relies on `make all` having run (as in make check):
#  - every installed file is there: CLI, header, static and shared library
#    (real name, soname link, dev link), jitsframe.pc, Lua module and
#    replay driver, man pages, the HTML viewer where the CLI looks for it;
#  - the README's library example (extracted from README.md between its
#    markers) compiles with the installed jitsframe.pc and header, links
#    dynamically (ldd resolves libjitsframe.so.1 inside DESTDIR; no jsf_
#    function is linked into it), runs, and the installed CLI validates
#    and dumps its region (one function, as many rows as the example has);
#  - the installed libjitsframe.so defines exactly the functions the
#    installed header declares with JSF_API (parsed here, independently of
#    the version script), each versioned JITSFRAME_1.N: the 1.1 calls
#    (jsf_region_add_named, jsf_view_name, jsf_region_add_mapped,
#    jsf_view_srcmap, jsf_srcmap_frames) at JITSFRAME_1.1, the 1.3 one
#    (jsf_region_info) at JITSFRAME_1.3, the 1.4 ones (jsf_region_default_dir,
#    jsf_region_search_base) at JITSFRAME_1.4, the 1.5 one
#    (jsf_region_prune) at JITSFRAME_1.5, the 1.7 one
#    (jsf_region_append_runtime) at JITSFRAME_1.7, the rest 1.0;
#  - the installed Lua module exports luaopen_jitsframe alone and loads in
#    luajit from DESTDIR;
#  - `make uninstall` leaves no file behind.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
T=$(mktemp -d /tmp/jsf-t_install-XXXXXX)  # DESTDIR: holds the install only
W=$(mktemp -d /tmp/jsf-t_install-w-XXXXXX) # the test's own files
trap 'rm -rf "$T" "$W"' EXIT
check() { # description, command...: ok when the command succeeds
	local d=$1
	shift
	if "$@" >"$W/out" 2>&1; then ok "$d"; else
		mapfile -t l < <(tail -n 8 "$W/out")
		notok "$d" "${l[@]}"
	fi
}
P=$T/usr/local
ver() { sed -n "s/^#define JSF_VERSION_$1 \([0-9]*\).*/\1/p" sframe/jitsframe.h; }
VERSION=$(ver MAJOR).$(ver MINOR).$(ver PATCH)
MAJOR=$(ver MAJOR)
export LD_LIBRARY_PATH=$P/lib

if ! make -s install DESTDIR="$T" PREFIX=/usr/local >"$W/install.log" 2>&1; then
	mapfile -t l < <(tail -n 8 "$W/install.log")
	notok "make install DESTDIR=\$T PREFIX=/usr/local" "${l[@]}"
	echo "1..$n"
	exit 1
fi
ok "make install DESTDIR=\$T PREFIX=/usr/local"

# 1. the files
missing=()
for f in bin/jitsframe include/jitsframe.h lib/libjitsframe.a \
	lib/libjitsframe.so.$VERSION lib/pkgconfig/jitsframe.pc \
	lib/lua/5.1/jitsframe.so share/lua/5.1/jitsframe_replay.lua \
	share/man/man1/jitsframe.1 share/man/man3/jitsframe.3; do
	[ -f "$P/$f" ] && [ ! -L "$P/$f" ] || missing+=("$f")
done
for f in libjitsframe.so.$MAJOR libjitsframe.so; do
	[ -L "$P/lib/$f" ] && [ "$(readlink -f "$P/lib/$f")" = "$P/lib/libjitsframe.so.$VERSION" ] ||
		missing+=("lib/$f -> libjitsframe.so.$VERSION")
done
if [ ${#missing[@]} -eq 0 ]; then ok "installed: CLI, header, libraries and links, .pc, Lua module, man pages"; else
	notok "installed: CLI, header, libraries and links, .pc, Lua module, man pages" "missing: ${missing[*]}"
fi
same=()
for pair in sframe/jitsframe.h:include/jitsframe.h docs/jitsframe.1:share/man/man1/jitsframe.1 \
	docs/jitsframe.3:share/man/man3/jitsframe.3 vm/replay.lua:share/lua/5.1/jitsframe_replay.lua; do
	cmp -s "${pair%%:*}" "$P/${pair#*:}" || same+=("${pair#*:}")
done
if [ ${#same[@]} -eq 0 ]; then ok "installed header, man pages, replay driver = the sources"; else
	notok "installed header, man pages, replay driver = the sources" "differ: ${same[*]}"
fi
if [ -x "$P/bin/jitsframe" ] && [ "$("$P/bin/jitsframe" --version)" = "jitsframe $VERSION" ]; then
	ok "the installed CLI runs: jitsframe $VERSION"
else
	notok "the installed CLI runs: jitsframe $VERSION"
fi
if grep -qx 'prefix=/usr/local' "$P/lib/pkgconfig/jitsframe.pc" && grep -qx "Version: $VERSION" "$P/lib/pkgconfig/jitsframe.pc" &&
	! grep -q "$T" "$P/lib/pkgconfig/jitsframe.pc"; then
	ok "jitsframe.pc: prefix /usr/local (not DESTDIR), version $VERSION"
else
	notok "jitsframe.pc: prefix /usr/local (not DESTDIR), version $VERSION" "$(tr '\n' '|' <"$P/lib/pkgconfig/jitsframe.pc")"
fi

# the HTML viewer where the installed CLI looks for it: DIR/FILE for each
# FILE of profile/viewer.c's pf_viewer_files, DIR = bin/../share/jitsframe/viewer
if [ -e build/viewer/.installed ]; then
	vf=$(sed -n '/pf_viewer_files\[[0-9]*\] = {/,/};/p' profile/viewer.c | grep -o '"[^"]*"' | tr -d '"')
	vmiss=()
	for f in $vf; do [ -r "$P/bin/../share/jitsframe/viewer/$f" ] || vmiss+=("$f"); done
	if [ -n "$vf" ] && [ ${#vmiss[@]} -eq 0 ]; then ok "the HTML viewer's files are where the installed CLI looks"; else
		notok "the HTML viewer's files are where the installed CLI looks" "missing under share/jitsframe/viewer: ${vmiss[*]:-(no viewer_files found)}"
	fi
else
	ok "the HTML viewer's files are where the installed CLI looks # SKIP not vendored (npm)"
fi

# 2. the README's example, against the install
sed -n '/<!-- t_install example: begin -->/,/<!-- t_install example: end -->/p' README.md |
	sed '1d;$d' | sed '1{/^```c$/d};${/^```$/d}' >"$W/myjit.c"
nrows=$(grep -c '\.offset = ' "$W/myjit.c")
if grep -q 'jsf_region_create' "$W/myjit.c" && grep -q 'jsf_region_add' "$W/myjit.c" &&
	grep -q '^int main' "$W/myjit.c" && ! grep -q '```' "$W/myjit.c" && [ "$nrows" -gt 0 ]; then
	ok "README.md holds the example program between its markers ($nrows rows)"
else
	notok "README.md holds the example program between its markers" "$(head -c 300 "$W/myjit.c")"
fi
pc() { PKG_CONFIG_SYSROOT_DIR=$T PKG_CONFIG_PATH=$P/lib/pkgconfig PKG_CONFIG_LIBDIR=$P/lib/pkgconfig pkg-config "$@" jitsframe; }
if flags=$(pc --cflags --libs) && flags=$(echo $flags) && [ "$flags" = "-I$P/include -L$P/lib -ljitsframe" ]; then
	ok "pkg-config --cflags --libs jitsframe: $flags"
else
	notok "pkg-config --cflags --libs jitsframe = -I$P/include -L$P/lib -ljitsframe" "got: ${flags:-nothing}"
fi
# shellcheck disable=SC2086
check "the example compiles and links with the installed jitsframe.pc" \
	cc -std=c11 -Wall -Wextra -Werror "$W/myjit.c" $(pc --cflags --libs) -o "$W/myjit"
# shellcheck disable=SC2086
hdr=$(cc -M "$W/myjit.c" $(pc --cflags) 2>/dev/null | tr ' \\' '\n\n' | grep '/jitsframe\.h$')
if [ "$hdr" = "$P/include/jitsframe.h" ]; then ok "it includes the installed header"; else
	notok "it includes the installed header" "got: ${hdr:-none}"
fi
lib=$(ldd "$W/myjit" 2>&1 | awk '$1 == "libjitsframe.so.'"$MAJOR"'" { print $3 }')
if [ "$lib" = "$P/lib/libjitsframe.so.$MAJOR" ]; then ok "ldd: libjitsframe.so.$MAJOR => \$T/usr/local/lib"; else
	notok "ldd: libjitsframe.so.$MAJOR => \$T/usr/local/lib" "$(ldd "$W/myjit" 2>&1 | tr '\n' '|')"
fi
if [ -e "$W/myjit" ] && ! nm "$W/myjit" | grep -q ' [TtDdBb] jsf_'; then
	ok "no libjitsframe code linked into it (dynamic only)"
else
	notok "no libjitsframe code linked into it (dynamic only)" "$(nm "$W/myjit" 2>&1 | grep ' jsf_' | head -3 | tr '\n' '|')"
fi
check "it runs" "$W/myjit" "$W/myjit.region"
check "the installed jitsframe region validate accepts its region" "$P/bin/jitsframe" region validate "$W/myjit.region"
"$P/bin/jitsframe" region dump "$W/myjit.region" >"$W/dump" 2>&1
nf=$(grep -c '^0x.* rows$' "$W/dump")
nr=$(grep -c '^ *+[0-9]' "$W/dump")
if [ "$nf" = 1 ] && [ "$nr" = "$nrows" ]; then ok "its region holds 1 function with $nrows rows"; else
	notok "its region holds 1 function with $nrows rows" "$(tr '\n' '|' <"$W/dump")"
fi

# 3. the shared library's symbols: the header's JSF_API functions, versioned
python3 - "$P/include/jitsframe.h" >"$W/api" <<'EOF'
import re, sys
src = open(sys.argv[1]).read()
src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
src = re.sub(r"//[^\n]*", " ", src)
src = re.sub(r"^\s*#.*$", " ", src, flags=re.M)  # the JSF_API definition
for name in sorted(set(re.findall(r"\bJSF_API\b[^;{}()]*?\b(\w+)\s*\(", src))):
    print(name)
EOF
nm -D --defined-only "$P/lib/libjitsframe.so.$VERSION" >"$W/nm" 2>&1
awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' "$W/nm" | sort >"$W/syms"
unversioned=$(awk '$2 != "A" && $3 !~ /@@?JITSFRAME_[0-9]+\.[0-9]+$/ { print $3 }' "$W/nm")
if [ "$(wc -l <"$W/api")" -ge 10 ] && grep -qx jsf_region_create "$W/api" && grep -qx jsf_view_open "$W/api"; then
	ok "the installed header declares $(wc -l <"$W/api") JSF_API functions"
else
	notok "the installed header declares the JSF_API functions" "found: $(tr '\n' ' ' <"$W/api")"
fi
if cmp -s "$W/api" "$W/syms"; then ok "nm -D libjitsframe.so: exactly the header's JSF_API functions"; else
	notok "nm -D libjitsframe.so: exactly the header's JSF_API functions" \
		"header only: $(comm -23 "$W/api" "$W/syms" | tr '\n' ' ')" \
		"library only: $(comm -13 "$W/api" "$W/syms" | tr '\n' ' ')"
fi
if [ -s "$W/syms" ] && [ -z "$unversioned" ]; then ok "each versioned (@@JITSFRAME_1.N)"; else
	notok "each versioned (@@JITSFRAME_1.N)" "not: $(echo $unversioned)"
fi

# which node each symbol is in: the calls added in 1.1 at @@JITSFRAME_1.1,
# in 1.3 at @@JITSFRAME_1.3, in 1.4 at @@JITSFRAME_1.4, in 1.5 at
# @@JITSFRAME_1.5, in 1.7 at @@JITSFRAME_1.7, every other at
# @@JITSFRAME_1.0 (a symbol never
# moves between nodes)
new11="jsf_region_add_named jsf_view_name jsf_region_add_mapped jsf_view_srcmap jsf_srcmap_frames jsf_region_set_runtime"
new13="jsf_region_info"
new14="jsf_region_default_dir jsf_region_search_base"
new15="jsf_region_prune"
new17="jsf_region_append_runtime"
misplaced=$(awk -v n11=" $new11 " -v n13=" $new13 " -v n14=" $new14 " -v n15=" $new15 " -v n17=" $new17 " '$2 != "A" {
	s = $3; sub(/@.*/, "", s); v = $3; sub(/^[^@]*@@?/, "", v)
	want = index(n11, " " s " ") ? "JITSFRAME_1.1" : index(n13, " " s " ") ? "JITSFRAME_1.3" : index(n14, " " s " ") ? "JITSFRAME_1.4" : index(n15, " " s " ") ? "JITSFRAME_1.5" : index(n17, " " s " ") ? "JITSFRAME_1.7" : "JITSFRAME_1.0"
	if (v != want) print s "@" v " (want " want ")" }' "$W/nm")
missing11=$(for s in $new11; do grep -q "^[0-9a-f]* T $s@@JITSFRAME_1.1$" "$W/nm" || echo "$s"; done)
missing13=$(for s in $new13; do grep -q "^[0-9a-f]* T $s@@JITSFRAME_1.3$" "$W/nm" || echo "$s"; done)
missing14=$(for s in $new14; do grep -q "^[0-9a-f]* T $s@@JITSFRAME_1.4$" "$W/nm" || echo "$s"; done)
missing15=$(for s in $new15; do grep -q "^[0-9a-f]* T $s@@JITSFRAME_1.5$" "$W/nm" || echo "$s"; done)
missing17=$(for s in $new17; do grep -q "^[0-9a-f]* T $s@@JITSFRAME_1.7$" "$W/nm" || echo "$s"; done)
if [ -s "$W/syms" ] && [ -z "$misplaced" ] && [ -z "$missing11$missing13$missing14$missing15$missing17" ]; then
	ok "$new11 at @@JITSFRAME_1.1, $new13 at @@JITSFRAME_1.3, $new14 at @@JITSFRAME_1.4, $new15 at @@JITSFRAME_1.5, $new17 at @@JITSFRAME_1.7, the others at @@JITSFRAME_1.0"
else
	notok "$new11 at @@JITSFRAME_1.1, $new13 at @@JITSFRAME_1.3, $new14 at @@JITSFRAME_1.4, $new15 at @@JITSFRAME_1.5, $new17 at @@JITSFRAME_1.7, the others at @@JITSFRAME_1.0" "misplaced: $misplaced" "missing: $missing11 $missing13 $missing14 $missing15 $missing17"
fi

# 4. the Lua module
mods=$(nm -D --defined-only "$P/lib/lua/5.1/jitsframe.so" 2>&1 | awk '$2 != "A" { print $3 }')
if [ "$mods" = luaopen_jitsframe ]; then ok "the installed Lua module exports luaopen_jitsframe alone"; else
	notok "the installed Lua module exports luaopen_jitsframe alone" "exports: $(echo $mods | head -c 300)"
fi
if out=$(LUA_CPATH="$P/lib/lua/5.1/?.so" luajit -e 'local m = require"jitsframe"
	assert(type(m) == "table" and m.start)
	print(package.searchpath("jitsframe", package.cpath))' 2>&1) && [ "$out" = "$P/lib/lua/5.1/jitsframe.so" ]; then
	ok "luajit loads it from \$T/usr/local/lib/lua/5.1"
else
	notok "luajit loads it from \$T/usr/local/lib/lua/5.1" "$out"
fi
check "the installed jitsframe run --module-dir \$T/usr/local/lib/lua/5.1 publishes" \
	"$P/bin/jitsframe" run --quiet --module-dir "$P/lib/lua/5.1" --region "$W/run.region" -- \
	luajit -e 'local s = 0 for i = 1, 1e6 do s = s + i end assert(require"jitsframe".stats().published > 0)'
# without --module-dir: the installed CLI finds the installed module (and
# audit replay its driver) under PREFIX/lib/lua/5.1 and PREFIX/share/lua/5.1
check "the installed jitsframe run finds the installed module and keeps an auditlog" \
	"$P/bin/jitsframe" run --quiet --region "$W/run2.region" -a "$W/run2.jlog" -- \
	luajit -e 'local s = 0 for i = 1, 1e6 do s = s + i end assert(require"jitsframe".stats().published > 0)'
if out=$("$P/bin/jitsframe" audit replay "$W/run2.jlog" -jv="$W/run2.jv" 2>&1) &&
	grep -q '^\[TRACE   1 ' "$W/run2.jv"; then
	ok "the installed jitsframe audit replay finds its driver and the module (-jv: $(grep -c 'TRACE' "$W/run2.jv") lines)"
else
	notok "the installed jitsframe audit replay finds its driver and the module" "$out" "$(head -n 3 "$W/run2.jv" 2>/dev/null)"
fi

# 5. uninstall
check "make uninstall DESTDIR=\$T PREFIX=/usr/local" make -s uninstall DESTDIR="$T" PREFIX=/usr/local
left=$(cd "$T" && find . ! -type d | head -n 10)
if [ -z "$left" ]; then ok "make uninstall leaves no file in \$T"; else
	notok "make uninstall leaves no file in \$T" $left
fi
echo "1..$n"
