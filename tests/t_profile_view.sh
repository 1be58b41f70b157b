#!/usr/bin/env bash
# The profile writers' outputs through independent readers (TAP):
#   - profile.pb.gz decoded by the npm pprof-format package
#     (tests/pprof_dump.mjs) equals what tests/t_profile.c added
#     (X.expect-pprof, written by the test from its own sample list);
#   - every SVG flame graph parses with python's XML parser, and the
#     viewer fixture's frames are all drawn (a <title> per name);
#   - the HTML flame graph renders in headless Chromium: the screenshot is
#     a valid PNG that is not blank and shows trace (teal) frames, and the
#     rendered DOM's frame labels are exactly the profile's frame names.
#   - a click on a frame zooms into it (tests/html_zoom.mjs, DevTools protocol).
# Fixtures and the screenshot stay in build/profile-view/ (view.png).
# Needs: build/rel/tests/t_profile, build/viewer (make), node, chromium,
# python3.
set -u
cd "$(dirname "$0")/.."
B=build
OUT=$B/profile-view
VIEWER=$B/viewer
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }
check() { # description, command...
	local d=$1
	shift
	if "$@"; then ok "$d"; else notok "$d"; fi
}

CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
missing=()
[[ -x $B/rel/tests/t_profile ]] || missing+=("$B/rel/tests/t_profile (make)")
[[ -d $VIEWER/node_modules/pprof-format && -d $VIEWER/node_modules/d3-flame-graph ]] ||
	missing+=("$VIEWER (make)")
command -v node >/dev/null || missing+=("node (make deps)")
[[ -n $CHROMIUM ]] || missing+=("chromium (make deps)")
command -v python3 >/dev/null || missing+=("python3 (make deps)")
if ((${#missing[@]})); then
	notok "prerequisites: missing ${missing[*]}"
	echo "1..$n"
	exit 1
fi

rm -rf "$OUT"
mkdir -p "$OUT"
if JITSFRAME_VIEWER=$VIEWER "$B/rel/tests/t_profile" "$OUT" >"$OUT/t_profile.log" 2>&1; then
	ok "t_profile wrote the fixtures into $OUT"
else
	notok "t_profile $OUT failed (log: $OUT/t_profile.log)"
	grep '^not ok\|^#' "$OUT/t_profile.log" | head -10 | sed 's/^/# /'
fi

# --- pprof, by pprof-format
for x in main empty huge view; do
	if ! node tests/pprof_dump.mjs "$OUT/$x.pb.gz" "$VIEWER" >"$OUT/$x.got-pprof" 2>"$OUT/$x.node.log"; then
		notok "pprof-format decodes $x.pb.gz ($(head -c 300 "$OUT/$x.node.log"))"
		continue
	fi
	if diff <(LC_ALL=C sort "$OUT/$x.expect-pprof") <(LC_ALL=C sort "$OUT/$x.got-pprof") >"$OUT/$x.diff"; then
		ok "pprof-format reads $x.pb.gz back as added: $(grep -c '^S' "$OUT/$x.got-pprof") stacks," \
			"$(awk '$1=="S"{s+=$3} END{print s+0}' "$OUT/$x.got-pprof") samples," \
			"$(awk '$1=="S"{f+=NF-5} END{print f+0}' "$OUT/$x.got-pprof") frames"
	else
		notok "pprof $x.pb.gz differs from what was added (diff: $OUT/$x.diff)"
		head -5 "$OUT/$x.diff" | cut -c1-300 | sed 's/^/# /'
	fi
done

# --- SVG, by python's XML parser
svg_check() {
	python3 - "$@" <<'EOF'
import sys, xml.etree.ElementTree as ET
ns = '{http://www.w3.org/2000/svg}'
svg, names = sys.argv[1], sys.argv[2:]
root = ET.parse(svg).getroot()
assert root.tag == ns + 'svg', root.tag
titles = [t.text or '' for t in root.iter(ns + 'title')]
if names:
    want = [l.rstrip('\n') for l in open(names[0], encoding='utf-8')]
    want = [w for w in want if w != 'all']  # the SVG's root is unnamed
    miss = [w for w in want if not any(t.startswith(w + ' (') for t in titles)]
    assert not miss, 'not drawn: %r' % miss[:5]
print('# %s: %d frames' % (svg, len(titles)))
EOF
}
for x in main empty huge; do
	check "$x.svg parses as XML" svg_check "$OUT/$x.svg"
done
check "view.svg parses as XML and draws every frame name" svg_check "$OUT/view.svg" "$OUT/view.names"

# --- HTML, in headless Chromium
PROFILE_DIR=$(mktemp -d /tmp/jsf-chromium-XXXXXX)
trap 'rm -rf "$PROFILE_DIR"' EXIT
chrome() {
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu \
		--no-first-run --disable-extensions --user-data-dir="$PROFILE_DIR" \
		--hide-scrollbars --window-size=1280,800 \
		--virtual-time-budget=5000 "$@" 2>>"$OUT/chromium.log"
}
rm -f "$OUT/view.png"
chrome --screenshot="$PWD/$OUT/view.png" "file://$PWD/$OUT/view.html" >/dev/null
png_check() {
	python3 - "$1" <<'EOF'
import sys, struct, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG signature'
pos, chunks = 8, []
while pos < len(data):
    ln, typ = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + ln]
    crc, = struct.unpack('>I', data[pos + 8 + ln:pos + 12 + ln])
    assert zlib.crc32(typ + body) == crc, 'bad CRC in %r' % typ
    chunks.append((typ, body))
    pos += 12 + ln
assert chunks[0][0] == b'IHDR' and chunks[-1][0] == b'IEND'
w, h, depth, ctype, _, _, lace = struct.unpack('>IIBBBBB', chunks[0][1])
assert depth == 8 and ctype in (2, 6) and lace == 0, (depth, ctype, lace)
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(b''.join(b for t, b in chunks if t == b'IDAT'))
stride = w * bpp
assert len(raw) == h * (stride + 1), 'IDAT size'
prev = bytearray(stride)
colors, teal, nonwhite, widest = set(), 0, 0, 0
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    if f == 1:
        for i in range(bpp, stride): line[i] = (line[i] + line[i - bpp]) & 255
    elif f == 2:
        for i in range(stride): line[i] = (line[i] + prev[i]) & 255
    elif f == 3:
        for i in range(stride): line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
    elif f == 4:
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    else:
        assert f == 0, 'filter %d' % f
    row = 0
    for x in range(0, stride, bpp * 2):  # every other pixel is enough
        r, g, b = line[x], line[x + 1], line[x + 2]
        colors.add((r, g, b))
        row += (r, g, b) != (255, 255, 255)
        teal += g > r + 50 and b > r + 50
    nonwhite += row
    widest = max(widest, row)
    prev = line
print('# %s: %dx%d, %d colours, %d non-white and %d teal (trace) pixels sampled,'
      ' widest row %.0f%% non-white' % (sys.argv[1], w, h, len(colors), nonwhite,
                                       teal, 200.0 * widest / w))
assert len(colors) > 10 and nonwhite > 5000, 'blank screenshot'
assert teal > 500, 'no trace frames drawn'
# the root frame spans the chart (1280 px window, 12 px margins): a
# drawing caught mid-animation is narrower
assert widest * 2 >= 0.95 * w, 'the root frame is not drawn full width'
EOF
}
if [[ -s $OUT/view.png ]]; then
	check "Chromium renders view.html: the screenshot ($OUT/view.png) is a valid, non-blank PNG with trace frames" \
		png_check "$OUT/view.png"
else
	notok "Chromium wrote no screenshot (log: $OUT/chromium.log)"
fi
chrome --dump-dom "file://$PWD/$OUT/view.html" >"$OUT/view.dom"
labels_check() { # dom, names file
	python3 - "$@" <<'EOF'
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth, self.labels, self.cur = 0, [], None
    def handle_starttag(self, tag, attrs):
        if self.cur is not None:
            self.depth += 1
        elif tag == 'div' and 'd3-flame-graph-label' in (dict(attrs).get('class') or '').split():
            self.cur, self.depth = '', 0
    def handle_endtag(self, tag):
        if self.cur is None:
            return
        if self.depth == 0:
            self.labels.append(self.cur)
            self.cur = None
        else:
            self.depth -= 1
    def handle_data(self, d):
        if self.cur is not None:
            self.cur += d
p = P()
p.feed(open(sys.argv[1], encoding='utf-8').read())
want = set(l.rstrip('\n') for l in open(sys.argv[2], encoding='utf-8'))
got = set(p.labels)
print('# %d frame labels rendered, %d names in the profile' % (len(p.labels), len(want)))
assert got == want, 'missing %r, unexpected %r' % (sorted(want - got)[:5], sorted(got - want)[:5])
EOF
}
check "the rendered DOM's frame labels are exactly the profile's frame names" \
	labels_check "$OUT/view.dom" "$OUT/view.names"
chrome --dump-dom "file://$PWD/$OUT/empty.html" >"$OUT/empty.dom"
check "a profile without samples renders as 'No samples.'" \
	grep -q '<div id="chart">No samples.</div>' "$OUT/empty.dom"

# interactive: a click zooms (DevTools protocol; node's WebSocket)
NODE_WS=()
if node -e 'process.exit(typeof WebSocket === "function" ? 0 : 1)' 2>/dev/null; then
	NODE_WS=(node)
elif node --experimental-websocket -e 'process.exit(typeof WebSocket === "function" ? 0 : 1)' 2>/dev/null; then
	NODE_WS=(node --experimental-websocket)
fi
if ((${#NODE_WS[@]})); then
	if msg=$(timeout 120 "${NODE_WS[@]}" tests/html_zoom.mjs "$CHROMIUM" "$OUT/view.html" a_b_c 2>/dev/null); then
		ok "clicking a frame in view.html zooms into it ($msg)"
	else
		notok "clicking a frame in view.html does not zoom: $msg"
	fi
else
	ok "# SKIP zoom check: this node has no WebSocket (node >= 20 needed)"
fi

echo "1..$n"
[[ $fails -eq 0 ]]
