#!/usr/bin/env bash
# Instructions per cached answer, counted by callgrind over every thread of
# the server (user space only: callgrind cannot see the kernel's side),
# ours against the bare responder (examples/bare_responder: a bare Pingora
# `ProxyHttp` writing the same body and ETag from `request_filter`, with the
# same compression module). A count moves by about 1 % from run to run
# (timing changes how the h2 and epoll loops batch), where
# `hot_profile.sh`'s CPU time per answer moves by 10 to 20 %; for a change
# smaller than that, compare the changed function's inclusive count in the
# callgrind files `KEEP_TMP=1` keeps (`<name>.cg.*`).
#
#   benches/hot_callgrind.sh [proto=h2c|h1] [kind=search|detail] [answers=3000]
#   BEFORE=<binary> benches/hot_callgrind.sh   # another build of ours first
#
# Needs the release binary and examples, valgrind, nginx, curl, h2load (h2c)
# or wrk (h1). Each server starts under callgrind (slowly), answers a few
# warm-up requests (the board loads and its answer is cached), then its
# counters are zeroed, `answers` cached answers are asked for on 8
# connections (h2load `-n`; wrk for a fixed time, its count read back), and
# the counters are dumped.
source "$(dirname "$0")/lib_upstream.sh"
PROTO=${1:-h2c}
KIND=${2:-search}
N=${3:-3000}
watchdog 900
command -v callgrind_control >/dev/null || { echo "needs valgrind" >&2; exit 1; }
if [ "$PROTO" = h2c ]; then
  command -v h2load >/dev/null || { echo "needs h2load (nghttp2-client)" >&2; exit 1; }
else
  command -v wrk >/dev/null || { echo "needs wrk" >&2; exit 1; }
fi
BARE=${BARE:-$TARGET/release/examples/bare_responder}
[ -x "$BARE" ] || { echo "no $BARE (cargo build --release --examples)" >&2; exit 1; }
gen_boards 7000 26
start_nginx
detect_conf_form

# under_callgrind NAME CMD...: starts CMD under callgrind; sets CG_PID.
under_callgrind() {
  local name=$1; shift
  valgrind --tool=callgrind --dump-instr=no --callgrind-out-file="$TMP/$name.cg" \
    "$@" > "$TMP/$name.log" 2>&1 &
  CG_PID=$!
  PIDS+=("$CG_PID")
}
# ready URL CODE: waits (up to 2 minutes) for URL to answer CODE.
ready() {
  for _ in $(seq 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = "$2" ] && return 0
    sleep 0.2
  done
  echo "no $2 from $1" >&2; exit 1
}
# count NAME PID URL: instructions per cached answer of URL.
count() {
  local n total
  for _ in 1 2 3 4 5; do curl -s -o /dev/null "$3"; done
  callgrind_control -z "$2" >/dev/null 2>&1
  if [ "$PROTO" = h2c ]; then
    n=$(h2load -t1 -c8 -m1 -n "$N" "$3" 2>/dev/null | awk '/^status codes:/{print $3}')
  else
    n=$(wrk -t1 -c8 -d"$(( N / 200 + 1 ))s" "$3" | awk '/requests in/{print $1}')
  fi
  callgrind_control -d "$2" >/dev/null 2>&1
  sleep 1
  total=$(grep -h '^summary:' "$(ls -t "$TMP/$1".cg.* | head -1)" | awk '{print $2}')
  printf '| %s | %s | %s | %.0f |\n' "$1" "$n" "$total" "$(awk -v t="$total" -v n="$n" 'BEGIN{print t / n}')"
}

echo "### hot_callgrind.sh ($PROTO, cached /api/$KIND of the small board)"
echo
echo "| server | 200s counted | instructions | per answer |"
echo "|---|---:|---:|---:|"
NAMES=(ours)
[ -z "${BEFORE:-}" ] || NAMES=(before ours)
for name in "${NAMES[@]}"; do
  bin=$BIN; [ "$name" = before ] && bin=$BEFORE
  port=$(rand_port)
  write_conf "$TMP/$name.yaml" "$CONF_FORM" "$port" "" "    h2c: true"
  RUST_LOG=warn under_callgrind "$name" "$bin" -c "$TMP/$name.yaml"
  ready "http://127.0.0.1:$port/api/search?url=x" 400
  url="http://127.0.0.1:$port/api/$KIND?$(share_q "$SMALL" hotperm)"
  count "$name" "$CG_PID" "$url"
  [ "$name" = ours ] && curl -s -D "$TMP/hdr" -o "$TMP/body" "$url"
  kill "$CG_PID"; wait "$CG_PID" 2>/dev/null || true
done
etag=$(tr -d '\r' < "$TMP/hdr" | awk -F': ' 'tolower($1)=="etag"{print $2}')
port=$(rand_port)
under_callgrind bare "$BARE" --listen "127.0.0.1:$port" --body "$TMP/body" --etag "$etag" \
  --compression-level 6 --h2c
ready "http://127.0.0.1:$port/" 200
count bare "$CG_PID" "http://127.0.0.1:$port/api/$KIND?$(share_q "$SMALL" hotperm)"
