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

start_deep_nginx() {
  local port try
  for try in 1 2 3 4 5 6 7 8; do
    port=$(rand_port)
    port_free "$port" || continue
    cat > "$TMP/nginx.conf" <<NGINX
daemon on;
worker_processes 1;
pid $NGINX_PID_FILE;
error_log $TMP/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $TMP/nginx-body;
  proxy_temp_path $TMP/nginx-proxy;
  fastcgi_temp_path $TMP/nginx-fastcgi;
  uwsgi_temp_path $TMP/nginx-uwsgi;
  scgi_temp_path $TMP/nginx-scgi;
  map \$arg_ids \$board_file { "~^(?<id>[A-Za-z0-9]+)\$" /b\$id.json; default /none; }
  server {
    listen 127.0.0.1:$port;
    root $TMP/www/cur;
    default_type application/json;
    location ^~ /api/permissions/token/ { return 200 '{"token":"t0k3n"}'; }
    location = /api/boards { try_files \$board_file =404; }
    location / { return 404 '{"error":"not found"}'; }
  }
}
NGINX
    if nginx -c "$TMP/nginx.conf" -e "$TMP/nginx-error.log" 2>>"$TMP/nginx-start.log"; then
      for _ in $(seq 50); do [ -s "$NGINX_PID_FILE" ] && break; sleep 0.1; done
      if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/boards?ids=$ROOT_ID")" = 200 ]; then
        UP_PORT=$port; return 0
      fi
      kill "$(cat "$NGINX_PID_FILE")" 2>/dev/null || true; sleep 0.2
    fi
  done
  echo "nginx did not start" >&2; cat "$TMP/nginx-error.log" >&2; exit 1
}
start_deep_nginx

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
