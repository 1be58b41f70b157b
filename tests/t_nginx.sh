#!/usr/bin/env bash
# `jitsframe record -- nginx ...` end to end on a forking, user-switching
# host (TAP). Debian's nginx with ngx_http_lua on OpenResty's luajit2,
# unpacked into build/nginx by scripts/install-deps (beside Debian's
# luajit): a root master, 2 workers as nobody, listening on 127.0.0.1
# only, a content_by_lua handler doing string and JSON work, loaded by wrk
# for a few seconds. The workers cannot write into record's root-owned
# directory: the module publishes at their per-user default path and
# record collects those regions into DIR as region-PID.
# Ground truth, independent of the report: the worker pids (nginx's own
# `ps`), each worker's region as `jitsframe region dump` prints it (every
# trace frame of a worker's samples must lie in a function of that
# worker's own region, live at the sample's time), and `main` in the
# frames. Then `record -p` on the workers of an nginx started without
# record (their regions found by docs/ABI.md section 8), and the same
# without start(): record names each worker with "no region" and the
# init_by_lua_block fix. Also: ngx.say, a C function of the stripped
# module, named in each worker's region at LuaJIT's own address of it.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
ROOT=$PWD
J=${JSF_CLI:-$ROOT/build/jitsframe}
N=${NGX_DIR:-$ROOT/build/nginx}
NGINX=$N/usr/sbin/nginx
LIBS=$N/usr/lib/x86_64-linux-gnu
skip() {
	if [ "${CI:-}" = true ]; then notok "$1 (CI=true: required)"; echo "1..$n"; exit 1; fi
	echo "1..0 # SKIP $1"
	exit 0
}
[ -x "$NGINX" ] && [ -e "$N/usr/lib/nginx/modules/ngx_http_lua_module.so" ] ||
	skip "no nginx with ngx_http_lua in $N (scripts/install-deps unpacks it)"
command -v wrk >/dev/null 2>&1 || skip "wrk missing (Debian: wrk)"
command -v python3 >/dev/null 2>&1 || skip "python3 missing"
perf stat -e cpu-clock true >/dev/null 2>&1 || skip "perf cannot sample here"
[ "$(id -u)" -eq 0 ] || skip "not root: nginx cannot switch its workers to nobody"
WUSER=nobody
WGROUP=$(id -gn nobody 2>/dev/null || echo nogroup)
id nobody >/dev/null 2>&1 || skip "no user nobody"
# where the workers publish: nginx clears their environment (no TMPDIR), so
# docs/ABI.md 8's default base: /dev/shm when it is a tmpfs with 256 MiB
# free, else /tmp
UBASE=/tmp
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
	[ "$(stat -f -c '%a %S' /dev/shm | awk '{ print ($1 * $2 >= 268435456) }')" = 1 ]; then
	UBASE=/dev/shm
fi
UDIR=$UBASE/jitsframe-$(id -u nobody)
[ -e "$ROOT/build/lua/jitsframe.so" ] || skip "build/lua/jitsframe.so not built"

T=$(mktemp -d /tmp/jsf-t_nginx-XXXXXX)
chmod 755 "$T"
RPID=
ALL= # every worker pid: their files in nobody's default directory go too
cleanup() {
	local m w
	m=$(cat "$T"/p*/logs/nginx.pid 2>/dev/null)
	[ -n "${NPID:-}" ] && kill -KILL "$NPID" 2>/dev/null
	[ -n "$m" ] && kill -KILL $m 2>/dev/null
	[ -n "$RPID" ] && kill -KILL "$RPID" 2>/dev/null
	wait 2>/dev/null
	for w in $ALL; do
		rm -f "$UDIR/$w.region" "$UDIR/jit-$w.dump" "$UDIR"/jitted-"$w"-*.so
	done
	[ -n "${KEEP:-}" ] && echo "# kept $T" || rm -rf "$T"
}
trap cleanup EXIT

port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# conf PREFIX PORT INIT: nginx.conf with INIT as init_by_lua_block's body
conf() {
	local p=$1
	mkdir -p "$p/logs" "$p/tmp"
	cat >"$p/nginx.conf" <<EOF
user $WUSER $WGROUP;
worker_processes 2;
pid $p/logs/nginx.pid;
error_log $p/logs/error.log notice;
load_module $N/usr/lib/nginx/modules/ndk_http_module.so;
load_module $N/usr/lib/nginx/modules/ngx_http_lua_module.so;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path $p/tmp/body;
	proxy_temp_path $p/tmp/proxy;
	fastcgi_temp_path $p/tmp/fastcgi;
	uwsgi_temp_path $p/tmp/uwsgi;
	scgi_temp_path $p/tmp/scgi;
	lua_package_path "$N/usr/share/lua/5.1/?.lua;;";
	lua_package_cpath "$ROOT/build/lua/?.so;$LIBS/lua/5.1/?.so;;";
	init_by_lua_block {
		local ok, cj = pcall(require, "cjson")
		json = ok and cj.encode or function(t)
			local out = {}
			for k, v in pairs(t) do
				out[#out + 1] = string.format("%q:%q", tostring(k), tostring(v))
			end
			return "{" .. table.concat(out, ",") .. "}"
		end
		$3
	}
	server {
		listen 127.0.0.1:$2;
		location / {
			content_by_lua_block {
				local parts = {}
				for i = 1, 300 do
					local s = string.format("%d:%s:%x", i, "key" .. (i % 13), i * 7)
					local h = 0
					for j = 1, #s do
						h = (h * 31 + string.byte(s, j)) % 65521
					end
					parts[#parts + 1] = s:upper() .. "=" .. h
				end
				local joined = table.concat(parts, ",")
				local words = 0
				for w in joined:gmatch("[^,]+") do
					words = words + 1
				end
				local clean = joined:sub(1, 200):gsub("%d", "#")
				ngx.say(json({n = words, len = #joined, head = clean}))
			}
		}
	}
}
EOF
}

# run NAME INIT: record nginx under load; sets P (prefix), R (record dir),
# WORKERS (the worker pids), RC (record's exit status)
run() {
	P=$T/p$1
	R=$T/r$1
	local port
	port=$(port)
	conf "$P" "$port" "$2"
	LD_LIBRARY_PATH=$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
		"$J" record -o "$R" -- "$NGINX" -e "$P/logs/error.log" -p "$P" \
		-c "$P/nginx.conf" -g 'daemon off;' >"$T/out$1" 2>&1 &
	RPID=$!
	local i master=
	WORKERS=
	for i in $(seq 1 100); do # 10 s for both workers to listen
		master=$(cat "$P/logs/nginx.pid" 2>/dev/null)
		if [ -n "$master" ] &&
			[ "$(pgrep -P "$master" | wc -l)" -ge 2 ] &&
			(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			WORKERS=$(pgrep -P "$master" | sort -n | tr '\n' ' ')
			WORKERS=${WORKERS% }
			WUSERS=$(ps -o user= -p "${WORKERS// /,}" | sort -u | tr '\n' ' ')
			ALL="$ALL $WORKERS"
			break
		fi
		kill -0 "$RPID" 2>/dev/null || break
		sleep 0.1
	done
	if [ -n "$WORKERS" ]; then
		timeout 20 wrk -t2 -c8 -d4s "http://127.0.0.1:$port/" >"$T/wrk$1" 2>&1
		kill -QUIT "$master"
	fi
	for i in $(seq 1 1200); do # record's report: 120 s at most
		kill -0 "$RPID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$RPID" 2>/dev/null; then
		[ -n "$master" ] && kill -KILL "$master" 2>/dev/null
		kill -KILL "$RPID" 2>/dev/null
		echo "# record did not finish in 120 s" >>"$T/out$1"
	fi
	wait "$RPID"
	RC=$?
	RPID=
}

# (a) start() in init_by_lua_block
run a 'require("jitsframe").start()
		ngx.log(ngx.NOTICE, string.format("NGXSAY %x", require("jit.util").funcinfo(ngx.say).addr))'
WA=$WORKERS
if [ -z "$WA" ]; then
	notok "nginx started under record with 2 workers" "$(tail -n 8 "$T/outa")" "$(tail -n 5 "$P/logs/error.log" 2>&1)"
	echo "1..$n"
	exit 1
fi
reqs=$(awk '/requests in/ { print $1 }' "$T/wrka")
missing=
for w in $WA; do [ -e "$R/region-$w" ] || missing="$missing $w"; done
if [ "$RC" -eq 0 ] && [ -z "$missing" ] && grep -q "collected 2 regions written outside" "$T/outa"; then
	ok "record exit 0; both workers' regions (workers $WA as ${WUSERS% }, $reqs requests) collected into DIR as region-PID"
else
	notok "both workers' regions collected (record exit $RC, missing:${missing:- none})" "$(cat "$T/outa")" "$(ls "$R")"
fi
said=0
for w in $WA; do
	[ "$(cat "$T/outa" "$P/logs/error.log" | grep -c "region $R/region-$w: Permission denied; publishing to $UDIR/$w\.region instead")" -eq 1 ] &&
		said=$((said + 1))
done
if [ "$said" -eq 2 ]; then
	ok "each worker said once where its region went"
else
	notok "the workers said where their regions went" "$(grep jitsframe "$T/outa" "$P/logs/error.log")"
fi
for w in $WA; do [ -e "$R/jit-$w.dump" ] || missing="$missing jit-$w.dump"; done
if [ -z "$missing" ]; then
	ok "both workers' jitdumps collected too"
else
	notok "jitdumps collected (missing:$missing)" "$(ls "$R")"
fi

# ngx.say (a C function of the stripped ngx_http_lua module) named in
# each worker's region at the address LuaJIT gives it in the master (the
# workers are its forks): docs/ABI.md 1.6 "LJCF"
say=$(sed -n 's/.*NGXSAY \([0-9a-f]*\).*/\1/p' "$P/logs/error.log" | head -1)
named=0 got=
for w in $WA; do
	a=$("$J" region dump --builtins --json "$R/region-$w" 2>/dev/null |
		python3 -c 'import json, sys; print(" ".join("%x" % e["addr"] for e in json.load(sys.stdin).get("cfunctions", []) if e["name"] == "ngx.say"))')
	got="$got $w:${a:-none}"
	[ -n "$say" ] && [ "$a" = "$say" ] && named=$((named + 1))
done
if [ "$named" -eq 2 ]; then
	ok "ngx.say named in both workers' regions at LuaJIT's address of it ($say)"
else
	notok "ngx.say named in both workers' regions at LuaJIT's address ($say)" "regions:$got"
fi

"$J" report --no-write --dump "$T/dump" "$R" >"$T/sum" 2>&1
for w in $WA; do
	"$J" region dump --all --json "$R/region-$w" >"$T/region-$w.json" 2>/dev/null
done
# per worker: samples through trace code, of them from main, trace frames,
# trace frames outside the worker's own region (at the sample's time)
check() {
	python3 - "$T/dump" "$T" $WA <<'PY'
import json, sys
dump, tdir, workers = sys.argv[1], sys.argv[2], [int(w) for w in sys.argv[3:]]
regs = {}
for w in workers:
    try:
        j = json.load(open("%s/region-%d.json" % (tdir, w)))
    except Exception:
        j = {"pid": 0, "functions": []}
    regs[w] = (j["pid"], j["functions"])
def inside(w, pc, t):
    for f in regs[w][1]:
        if f["start"] <= pc < f["start"] + f["size"] and f["added_ns"] <= t and (not f.get("removed_ns") or t < f["removed_ns"]):
            return True
    return False
st = {w: [0, 0, 0, 0] for w in workers}
cur = None
def close():
    if cur and cur[1] in st and cur[3]:
        st[cur[1]][0] += 1
        st[cur[1]][1] += cur[2]
for line in open(dump):
    w = line.split()
    if w[0] == "S":
        close()
        cur = [int(w[1]), int(w[2]), w[6] == "main", False]
    elif w[0] == "F" and cur and w[3] == "j" and cur[1] in st:
        cur[3] = True
        s = st[cur[1]]
        s[2] += 1
        if not inside(cur[1], int(w[1], 16), cur[0]) or regs[cur[1]][0] != cur[1]:
            s[3] += 1
close()
for w in workers:
    print(w, *st[w])
PY
}
# -> good (workers that pass), detail
verdict() {
	good=0
	detail=
	while read -r w through main frames wrong; do
		pct=$(python3 -c "print('%.2f' % (100.0 * $main / $through if $through else 0))")
		detail="$detail worker $w: $main/$through ($pct%) from main, $frames trace frames, $wrong outside its own region;"
		if [ "$through" -ge 100 ] && python3 -c "import sys; sys.exit(not ($main >= 0.995 * $through))" &&
			[ "$frames" -ge "$through" ] && [ "$wrong" -eq 0 ]; then
			good=$((good + 1))
		fi
	done < <(check)
}
verdict
if [ "$good" -eq 2 ]; then
	ok "in each worker >= 99.5% of the samples through trace code unwound from main, every trace frame named from its own region:$detail"
else
	notok "each worker: >= 99.5% from main, trace frames from its own region" "$detail" "$(cat "$T/sum")"
fi

# (c) `record -p` on the workers of an nginx already running (not started
# by record): each worker's region found by the convention (docs/ABI.md
# section 8, its per-user default directory) and copied into DIR
P=$T/pc
R=$T/rc
pc_port=$(port)
conf "$P" "$pc_port" 'require("jitsframe").start()'
LD_LIBRARY_PATH=$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
	"$NGINX" -e "$P/logs/error.log" -p "$P" -c "$P/nginx.conf" -g 'daemon off;' >"$T/nginxc" 2>&1 &
NPID=$!
WC=
for i in $(seq 1 100); do
	if [ "$(pgrep -P "$NPID" | wc -l)" -ge 2 ] && (exec 3<>"/dev/tcp/127.0.0.1/$pc_port") 2>/dev/null; then
		WC=$(pgrep -P "$NPID" | sort -n | tr '\n' ' ')
		WC=${WC% }
		ALL="$ALL $WC"
		break
	fi
	sleep 0.1
done
if [ -n "$WC" ]; then
	timeout 20 wrk -t2 -c8 -d1s "http://127.0.0.1:$pc_port/" >/dev/null 2>&1 # traces compiled
	"$J" record -p "${WC// /,}" -d 4 -o "$R" >"$T/outc" 2>&1 &
	RPID=$!
	timeout 20 wrk -t2 -c8 -d7s "http://127.0.0.1:$pc_port/" >"$T/wrkc" 2>&1
	for i in $(seq 1 1200); do
		kill -0 "$RPID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$RPID" 2>/dev/null
	wait "$RPID"
	RC=$?
	RPID=
fi
kill -QUIT "$NPID" 2>/dev/null
wait "$NPID" 2>/dev/null
missing=
for w in $WC; do [ -e "$R/region-$w" ] || missing="$missing $w"; done
if [ -n "$WC" ] && [ -z "$missing" ]; then
	WA=$WC
	"$J" report --no-write --dump "$T/dump" "$R" >"$T/sum" 2>&1
	for w in $WA; do
		"$J" region dump --all --json "$R/region-$w" >"$T/region-$w.json" 2>/dev/null
	done
	verdict
	if [ "$good" -eq 2 ]; then
		ok "record -p on the running workers ($WC): their regions found and copied; in each >= 99.5% through trace code unwound from main, every trace frame from its own region:$detail"
	else
		notok "record -p on the running workers: >= 99.5% from main, own regions" "$detail" "$(cat "$T/sum")" "$(tail -n 5 "$T/outc")"
	fi
else
	notok "record -p on the running workers (${WC:-none}): regions copied (missing:${missing:- none})" "$(tail -n 8 "$T/outc" 2>/dev/null)" "$(ls "$R" 2>&1)"
fi

# (b) the same without start(): nothing publishes; record says why, and
# what to write
run b ''
WB=$WORKERS
named=0
for w in $WB; do
	grep -q "pid $w (nginx): trace code sampled, no region: .*ngx_lua ignores LUA_INIT: call require('jitsframe').start() in init_by_lua_block" "$T/outb" &&
		named=$((named + 1))
done
if [ -n "$WB" ] && [ "$named" -eq 2 ]; then
	ok "without start(): record names both workers ($WB) with no region and the init_by_lua_block fix"
else
	notok "without start(): both workers named with the fix (workers: ${WB:-none})" "$(cat "$T/outb")"
fi
echo "1..$n"
