#!/usr/bin/env bash
# Where a cached answer's CPU goes: ours against the bare responder
# (examples/bare_responder) on the same bytes, over HTTP/1.1 (wrk) or
# cleartext HTTP/2 (h2load). For each server: CPU time per answer
# (`perf stat` on the server process, task-clock over the answers counted
# by the load generator), then `perf record`'s top functions by self time.
# CPU per answer does not depend on how fast the load generator runs, so
# two servers compare on a busy machine where req/s moves by 30 %.
#
#   benches/hot_profile.sh [proto=h2c|h1] [kind=detail|search] [seconds=5]
#   DWARF=1 benches/hot_profile.sh   # also ours' own functions, inclusive
#   BEFORE=<binary> benches/hot_profile.sh   # another build of ours beside
#
# Needs the release binary and examples, perf, nginx, curl, wrk, h2load.
source "$(dirname "$0")/lib_upstream.sh"
PROTO=${1:-h2c}
KIND=${2:-detail}
SECS=${3:-5}
watchdog $(( 120 + 6 * SECS ))
command -v perf >/dev/null || { echo "needs perf" >&2; exit 1; }
command -v h2load >/dev/null || { echo "needs h2load (nghttp2-client)" >&2; exit 1; }
GRAPH=-g; [ -z "${DWARF:-}" ] || GRAPH="--call-graph dwarf,16384"
BARE=${BARE:-$TARGET/release/examples/bare_responder}
[ -x "$BARE" ] || { echo "no $BARE (cargo build --release --examples)" >&2; exit 1; }

gen_boards 7000 26
start_nginx
if [ -n "${BEFORE:-}" ]; then
  AFTER_BIN=$BIN; BIN=$BEFORE; start_service before "" "    h2c: true"; BIN=$AFTER_BIN
  BEFORE_PID=$SVC_PID
  BEFORE_URL="http://127.0.0.1:$SVC_PORT/api/$KIND?$(share_q "$SMALL" hotperm)"
  for _ in 1 2 3; do curl -s -o /dev/null "$BEFORE_URL"; done
fi
start_service hot "" "    h2c: true"
URL="http://127.0.0.1:$SVC_PORT/api/$KIND?$(share_q "$SMALL" hotperm)"
for _ in 1 2 3; do curl -s -o /dev/null "$URL"; done
curl -s -D "$TMP/hdr" -o "$TMP/body" "$URL"
etag=$(tr -d '\r' < "$TMP/hdr" | awk -F': ' 'tolower($1)=="etag"{print $2}')
start_bare bare "$TMP/body" "$etag"
BPORT=$BARE_PORT; BPID=$BARE_PID
BURL="http://127.0.0.1:$BPORT/api/$KIND?$(share_q "$SMALL" hotperm)"
curl -s -o "$TMP/bare.body" "$BURL"
cmp -s "$TMP/body" "$TMP/bare.body" || { echo "bodies differ" >&2; exit 1; }

# load URL -> answers counted by the load generator
load() {
  if [ "$PROTO" = h1 ]; then
    wrk -t2 -c32 -d"${SECS}s" "$1" | awk '/requests in/{print $1}'
  else
    h2load -t2 -c32 -m1 -D "$SECS" "$1" 2>/dev/null | awk '/^requests:/{print $8}'
  fi
}

profile() { # name pid url
  local n ms
  perf stat -e task-clock -x, -o "$TMP/$1.stat" -p "$2" &
  local st=$!
  perf record -e cpu-clock -F 999 $GRAPH -o "$TMP/$1.data" -p "$2" 2>/dev/null &
  local rec=$!
  sleep 0.5
  n=$(load "$3")
  kill -INT "$st" "$rec"; wait "$st" "$rec" 2>/dev/null || true
  ms=$(awk -F, '/task-clock/{print $1}' "$TMP/$1.stat")
  echo "$1: $n answers, $(awk -v ms="$ms" -v n="$n" 'BEGIN{printf "%.1f", ms * 1000 / n}') us of CPU per answer"
}

echo "### hot_profile.sh ($(date -u +%Y-%m-%d), $(nproc) cores, $PROTO, /api/$KIND, $(wc -c < "$TMP/body") body bytes, ${SECS}s each)"
for round in 1 2; do
  [ -z "${BEFORE:-}" ] || profile "before$round" "$BEFORE_PID" "$BEFORE_URL"
  profile "ours$round" "$SVC_PID" "$URL"
  profile "bare$round" "$BPID" "$BURL"
done
for who in ours2 bare2; do
  echo "--- $who, top functions by self time"
  perf report -i "$TMP/$who.data" --no-children --sort symbol -g none --percent-limit 0.7 2>/dev/null \
    | grep -v '^#' | grep -v '^$' | cut -c1-150 | head -40
done
if [ -n "${DWARF:-}" ]; then
  echo "--- ours2, own and Pingora's request functions, inclusive"
  perf report -i "$TMP/ours2.data" --children --sort symbol -g none --percent-limit 0.3 2>/dev/null \
    | grep -E 'shared_board_api|pingora_proxy|regex|log::|tracing' | cut -c1-170 | head -50
fi
