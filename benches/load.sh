#!/usr/bin/env bash
# Loopback load run: the release binary in --demo mode (gateway + bundled
# sample upstream in one process), measured with wrk, all rows in one run so
# they can be compared on this shared machine.
#   usage: benches/load.sh [seconds] [connections]
# Needs wrk (apt-get install wrk). Only 127.0.0.1 is ever contacted.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
conns=${2:-32}
cargo build --release --quiet --bin shared-board-api
bin=${CARGO_TARGET_DIR:-target}/release/shared-board-api
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

start() { # name port cache(true|false)
  cat > "$tmp/$1.yaml" <<YAML
version: 1
threads: 2
grace_period_seconds: 0
graceful_shutdown_timeout_seconds: 1
board_api:
  listen: ["127.0.0.1:$2"]
  provider:
    name: milanote
    share_host: app.milanote.com
    origin: http://127.0.0.1:9
  cache:
    enabled: $3
  compression_level: 0
YAML
  RUST_LOG=error "$bin" --demo -c "$tmp/$1.yaml" > "$tmp/$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$2/api/search?url=x")" = 400 ] && return 0
    sleep 0.1
  done
  echo "$1 did not start:" >&2; cat "$tmp/$1.log" >&2; exit 1
}

start cached 18080 true
start uncached 18081 false

U='url=https%3A%2F%2Fapp.milanote.com%2F1W3ZZU1Qvua02H%2Fdemo%3Fp%3Ddemo'
etag=$(curl -s -o /dev/null -D - "http://127.0.0.1:18080/api/detail?$U" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag"{print $2}')
size() { curl -s "$1" | wc -c | tr -d ' '; }

printf '| request | body bytes | req/s | p50 | p99 |\n|---|---:|---:|---:|---:|\n'
row() { # label url [header]
  local label=$1 url=$2 out
  if [ $# -ge 3 ]; then
    out=$(wrk -t2 -c"$conns" -d"${secs}s" --latency -H "$3" "$url")
  else
    out=$(wrk -t2 -c"$conns" -d"${secs}s" --latency "$url")
  fi
  local rps p50 p99
  rps=$(awk '/Requests\/sec/{print $2}' <<<"$out")
  p50=$(awk '$1=="50%"{print $2}' <<<"$out")
  p99=$(awk '$1=="99%"{print $2}' <<<"$out")
  printf '| %s | %s | %s | %s | %s |\n' "$label" "$(size "$url")" "$rps" "$p50" "$p99"
}
row "400 INVALID_SHARE_URL (no fetch)" "http://127.0.0.1:18080/api/search?url=x"
row "search, compact, cached board" "http://127.0.0.1:18080/api/search?$U"
row "detail, full, cached board" "http://127.0.0.1:18080/api/detail?$U"
row "detail, If-None-Match -> 304" "http://127.0.0.1:18080/api/detail?$U" "If-None-Match: $etag"
row "detail, include 3 selectors, cached" "http://127.0.0.1:18080/api/detail?$U&include=board.**.title,board.**.plainText,version"
row "search, cache off (token + 4 boards fetched per request)" "http://127.0.0.1:18081/api/search?$U"
echo
for i in 0 1; do
  name=$([ "$i" = 0 ] && echo "cache on" || echo "cache off")
  printf 'peak RSS, %s process (gateway + sample upstream): %s\n' "$name" "$(awk '/VmHWM/{print $2, $3}' "/proc/${pids[$i]}/status")"
done
