#!/usr/bin/env bash
# The include graph (TAP): libraries depend only downward, through each
# library's one face header; nothing includes a vm/ or cli/ header from
# outside; the Makefile's -I lists (DIR_DEPS) agree. tests/layers.py is the
# checker; it is first shown to catch each kind of violation on small
# synthetic trees, then run on this tree.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
T=$(mktemp -d /tmp/jsf-t_layers-XXXXXX)
trap 'rm -rf "$T"' EXIT

# a minimal well-layered tree, then one violation at a time
base() {
	rm -rf "$T/t" && mkdir -p "$T/t"/{sframe,perfmap,audit,unwind,profile,vm,cli,tests}
	echo '#include "internal.h"' >"$T/t/sframe/view.c"
	: >"$T/t/sframe/internal.h"
	: >"$T/t/sframe/jitsframe.h"
	echo '#include "jitsframe.h"' >"$T/t/perfmap/jitdump.h"
	: >"$T/t/unwind/elfobj.h"
	echo '#include "jitdump.h"' >"$T/t/unwind/unwind.h"
	echo '#include "vmint.h"' >"$T/t/vm/module.c"
	: >"$T/t/vm/vmint.h"
	: >"$T/t/cli/cli.h"
	printf '#include "cli.h"\n#include "unwind.h"\n' >"$T/t/cli/main.c"
	echo '#include "elfobj.h"' >"$T/t/tests/t_x.c"
}
expect_bad() { # description, file, line, pattern
	base
	echo "$3" >>"$T/t/$2"
	if out=$(python3 tests/layers.py "$T/t") || ! grep -q -- "$4" <<<"$out"; then
		notok "caught: $1 (got: ${out:-nothing})"
	else
		ok "caught: $1"
	fi
}
base
if out=$(python3 tests/layers.py "$T/t"); then ok "a well-layered tree passes"; else notok "a well-layered tree passes: $out"; fi
expect_bad "a library including a cli/ header" sframe/view.c '#include "cli.h"' "a cli/ header outside cli/"
expect_bad "a test including a vm/ header" tests/t_x.c '#include "vmint.h"' "a vm/ header outside vm/"
expect_bad "an upward include" perfmap/jitdump.h '#include "unwind.h"' "unwind/ is not below perfmap/"
expect_bad "a library's internal header from above" cli/main.c '#include "elfobj.h"' "not unwind/'s face"
expect_bad "an unknown header" cli/main.c '#include "nosuch.h"' "no such header"
base
touch "$T/t/cli/internal.h"
if out=$(python3 tests/layers.py "$T/t") || ! grep -q "header name also in" <<<"$out"; then
	notok "caught: a header name in two directories (got: ${out:-nothing})"
else
	ok "caught: a header name in two directories"
fi

if out=$(python3 tests/layers.py . --makefile); then
	ok "this tree: $(cat sframe/*.[ch] perfmap/*.[ch] lj/*.[ch] audit/*.[ch] unwind/*.[ch] sampler/*.[ch] profile/*.[ch] vm/*.[ch] cli/*.[ch] 2>/dev/null | grep -c '#include "') includes, all downward through faces, as the Makefile's DIR_DEPS allow"
else
	notok "this tree's include graph:"
	sed 's/^/#   /' <<<"$out"
fi
echo "1..$n"
