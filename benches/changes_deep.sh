#!/usr/bin/env bash
# What one /api/changes of a deep board costs: its answer's size (JSON and
# Markdown) beside the board's own document, and the server's peak RSS.
#
#   benches/changes_deep.sh                 # the release binary
#   BIN_BEFORE=/path/to/older benches/changes_deep.sh   # and an older one, side by side
#
# The board (benches/gen_deep_board.py, defaults; GEN_ARGS adds to them, e.g.
# "--spread --edit"): a chain of 31 nested boards with 600-character titles and
# 15,000 cards in the deepest; version 2 replaces every card, so the answer lists
# 15,000 removed and 15,000 added, each 30 boards down. nginx on
# loopback serves one file per board (v1, then v2 through a symlink the script
# switches). For each binary, in turn, alone: start it (versions in memory, a
# process cache of 1 s, so the v2 load is a new one), load v1, switch to v2, then ask
# /api/changes?since=<v1> as JSON, as JSON again, and as Markdown, reading
# /proc/<pid>/status (VmRSS, VmHWM = peak RSS) before and after each.
source "$(dirname "$0")/lib_upstream.sh"
watchdog "${SECONDS_LIMIT:-300}"
CARDS=${CARDS:-15000} DEPTH=${DEPTH:-31} TITLE=${TITLE:-600}
ROOT_ID=5DeepBoard0000

python3 "$ROOT/benches/gen_deep_board.py" --cards "$CARDS" --depth "$DEPTH" \
  --title-chars "$TITLE" ${GEN_ARGS:-} --out "$TMP/www" | sed 's/^/board: /'
chmod -R a+rX "$TMP/www"
ln -sfn v1 "$TMP/www/cur"

# One file per board, by id, from whichever version cur points to.
NGINX_ROOT=$TMP/www/cur
NGINX_BOARD_MAP='"~^(?<id>[A-Za-z0-9]+)$" /b$id.json; default /none;'
start_nginx

# status PID FIELD: a field of /proc/PID/status in MiB.
status() { awk -v f="$2:" '$1 == f { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }

# The first line continues board_api.provider (write_conf ends with it).
API='    fetch_deadline_ms: 60000
  cache:
    ttl_seconds: 1
    budget_bytes: 1073741824
  changes:
    store: memory'

run_one() { # label binary
  local label=$1 bin=$2 q v1 out code size t
  BIN=$bin
  CONF_FORM=
  ln -sfn v1 "$TMP/www/cur"
  start_service "$label" "$API" ""
  q=$(share_q "$ROOT_ID" "deep$label")
  out=$(curl -s -D "$TMP/$label.h1" -o "$TMP/$label.doc1" --max-time 120 -w '%{http_code}' "http://127.0.0.1:$SVC_PORT/api/detail?$q")
  [ "$out" = 200 ] || { echo "$label: v1 load HTTP $out: $(head -c 300 "$TMP/$label.doc1")" >&2; return 1; }
  v1=$(awk 'tolower($1) == "board-version:" { gsub("\r", ""); print $2 }' "$TMP/$label.h1")
  for _ in $(seq 200); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SVC_PORT/api/changes?$q&since=$v1")
    [ "$code" = 200 ] && break
    sleep 0.1
  done
  ln -sfn v2 "$TMP/www/cur"
  sleep 1.2 # past the process cache's TTL
  curl -s -o "$TMP/$label.doc2" --max-time 120 "http://127.0.0.1:$SVC_PORT/api/detail?$q"
  printf '%-7s documents: v1 %s bytes, v2 %s bytes; RSS %s MiB, peak %s MiB before /changes\n' "$label" \
    "$(wc -c <"$TMP/$label.doc1")" "$(wc -c <"$TMP/$label.doc2")" "$(status "$SVC_PID" VmRSS)" "$(status "$SVC_PID" VmHWM)"
  for form in json json-again markdown; do
    local accept=application/json
    [ "$form" = markdown ] && accept=text/markdown
    out=$(curl -s -o "$TMP/$label.$form" --max-time 300 -H "Accept: $accept" \
      -w '%{http_code} %{size_download} %{time_total}' "http://127.0.0.1:$SVC_PORT/api/changes?$q&since=$v1")
    read -r code size t <<<"$out"
    printf '%-7s /changes %-10s HTTP %s, %10s bytes (%.2fx the v2 document), %6.2f s; RSS %s MiB, peak %s MiB\n' \
      "$label" "$form" "$code" "$size" "$(echo "$size / $(wc -c <"$TMP/$label.doc2")" | bc -l)" "$t" \
      "$(status "$SVC_PID" VmRSS)" "$(status "$SVC_PID" VmHWM)"
  done
  if [ "$label" = after ]; then
    printf '%-7s truncated: %s; counts: %s\n' "$label" \
      "$(jq -c '.data.truncated' "$TMP/$label.json")" "$(jq -c '.data.counts' "$TMP/$label.json")"
  fi
  kill "$SVC_PID"; wait "$SVC_PID" 2>/dev/null || true
}

[ -n "${BIN_BEFORE:-}" ] && run_one before "$BIN_BEFORE"
run_one after "${BIN_AFTER:-$TARGET/release/shared-board-api}"
log_problems after
