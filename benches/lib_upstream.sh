# Sourced by benches/governance.sh, benches/cold.sh and benches/hotpath.sh.
# A loopback-only Milanote-like upstream (nginx serving boards written by
# benches/gen_board.py) and our release binary in front of it.
#
#   BIN        the release binary (default $CARGO_TARGET_DIR/release/shared-board-api)
#   TMP        private temp dir (created here), removed on exit
#   BIG/SMALL  board ids; BIG_FILE/SMALL_FILE the raw /api/boards responses
#
# UP_ACCESS_LOG=FILE makes nginx log every upstream request there (counted
# by benches/fleet.sh).
#
# Every process started here is recorded in PIDS and killed by `cleanup`
# (installed as the EXIT/INT/TERM trap). Only 127.0.0.1 is ever contacted.

set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN=${BIN:-$TARGET/release/shared-board-api}
BIG=5BigBoard7000x
SMALL=5SmallBoard20x
TMP=$(mktemp -d /tmp/sba-bench.XXXXXX)
chmod 755 "$TMP"
PIDS=()
NGINX_PID_FILE=$TMP/nginx.pid

cleanup() {
  local p
  if [ -s "$NGINX_PID_FILE" ]; then kill "$(cat "$NGINX_PID_FILE")" 2>/dev/null || true; fi
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.3
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  if [ -s "$NGINX_PID_FILE" ]; then kill -9 "$(cat "$NGINX_PID_FILE")" 2>/dev/null || true; fi
  if [ -n "${KEEP_TMP:-}" ]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A bound on the whole run: SECONDS_LIMIT (default 170) then TERM ourselves.
watchdog() {
  local limit=${1:-170} me=$$
  # The subshell kills its sleep when cleanup TERMs it, so nothing lingers
  # (a leftover sleep would also hold a pipe such as `| tee` open).
  (
    trap 'kill "$sp" 2>/dev/null; exit 0' TERM
    sleep "$limit" </dev/null >/dev/null 2>&1 & sp=$!
    if wait "$sp"; then
      echo "watchdog: ${limit}s limit reached, stopping" >&2
      kill -TERM "$me" 2>/dev/null
    fi
  ) &
  PIDS+=($!)
}

[ -x "$BIN" ] || { echo "no release binary at $BIN (cargo build --release --bin shared-board-api)" >&2; exit 1; }
for tool in nginx curl wrk python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done

rand_port() { echo $(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 )); }
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# gen_boards [big_cards] [small_cards]: the two raw board files in $TMP/www.
gen_boards() {
  mkdir -p "$TMP/www"
  BIG_FILE=$TMP/www/big.json
  SMALL_FILE=$TMP/www/small.json
  python3 "$ROOT/benches/gen_board.py" --cards "${1:-7000}" --board-id "$BIG" --out "$BIG_FILE" 2>/dev/null
  python3 "$ROOT/benches/gen_board.py" --cards "${2:-26}" --board-id "$SMALL" --out "$SMALL_FILE" 2>/dev/null
  chmod 755 "$TMP/www"; chmod 644 "$BIG_FILE" "$SMALL_FILE"
}

# start_nginx: the upstream on a free high port; sets UP_PORT. NGINX_ROOT
# (default $TMP/www) and NGINX_BOARD_MAP (default the big and small boards by
# id) let a script serve boards of its own.
start_nginx() {
  local try port
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
  access_log ${UP_ACCESS_LOG:-off};
  client_body_temp_path $TMP/nginx-body;
  proxy_temp_path $TMP/nginx-proxy;
  fastcgi_temp_path $TMP/nginx-fastcgi;
  uwsgi_temp_path $TMP/nginx-uwsgi;
  scgi_temp_path $TMP/nginx-scgi;
  keepalive_requests 100000;
  sendfile on;
  # UP_GZIP_STATIC=on: a board file's .gz beside it is sent to clients
  # that take gzip, as the provider sends its answers (benches/phases.sh GZIP_UPSTREAM=1).
  gzip_static ${UP_GZIP_STATIC:-off};
  # UP_LIMIT_RATE=100m: each answer sent at most that fast (bytes a second),
  # as a provider across a network sends it; 0 is no limit.
  limit_rate ${UP_LIMIT_RATE:-0};
  map \$arg_ids \$board_file { ${NGINX_BOARD_MAP:-$SMALL /small.json; default /big.json;} }
  server {
    listen 127.0.0.1:$port;
    root ${NGINX_ROOT:-$TMP/www};
    default_type application/json;
    location ^~ /api/permissions/token/ { return 200 '{"token":"t0k3n"}'; }
    location = /api/boards { try_files \$board_file =404; }
    # An OTLP collector that takes every export (benches/otlp.sh).
    location = /v1/traces { return 200 ''; }
    location / { return 404 '{"error":"not found"}'; }
  }
}
NGINX
    if nginx -c "$TMP/nginx.conf" -e "$TMP/nginx-error.log" 2>>"$TMP/nginx-start.log"; then
      for _ in $(seq 50); do
        [ -s "$NGINX_PID_FILE" ] && break; sleep 0.1
      done
      if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/permissions/token/x?elementId=$BIG")" = 200 ]; then
        UP_PORT=$port; return 0
      fi
      kill "$(cat "$NGINX_PID_FILE")" 2>/dev/null || true; sleep 0.2
    fi
  done
  echo "nginx did not start:" >&2; cat "$TMP/nginx-start.log" "$TMP/nginx-error.log" >&2 2>/dev/null; exit 1
}

# write_conf FILE FORM PORT [extra board_api lines (already indented by 2)]
#   [extra board_api.server lines (indented by 4; server form only)]
# FORM: flat (board_api.listen) or server (board_api.server.listen).
write_conf() {
  local file=$1 form=$2 port=$3 extra=${4:-} server_extra=${5:-}
  {
    echo "version: 1"
    echo "threads: 2"
    echo "grace_period_seconds: 0"
    echo "graceful_shutdown_timeout_seconds: 1"
    echo "board_api:"
    if [ "$form" = server ]; then
      echo "  server:"; echo "    listen: [\"127.0.0.1:$port\"]"
      [ -n "$server_extra" ] && printf '%s\n' "$server_extra"
    else
      echo "  listen: [\"127.0.0.1:$port\"]"
    fi
    echo "  provider:"
    echo "    name: milanote"
    echo "    share_host: app.milanote.com"
    echo "    origin: http://127.0.0.1:${UP_PORT:-9}"
    [ -n "$extra" ] && printf '%s\n' "$extra"
    true
  } > "$file"
}

# detect_conf_form: which listener form the binary accepts (-t on both);
# sets CONF_FORM. The server form wins if both pass.
detect_conf_form() {
  local form
  CONF_FORM=
  for form in server flat; do
    write_conf "$TMP/probe-$form.yaml" "$form" 1
    if "$BIN" -t -c "$TMP/probe-$form.yaml" >"$TMP/probe-$form.log" 2>&1; then
      CONF_FORM=$form; break
    fi
  done
  [ -n "$CONF_FORM" ] || { echo "neither config form passes -t:" >&2; cat "$TMP"/probe-*.log >&2; exit 1; }
}

# start_service NAME [extra board_api lines] [extra board_api.server lines]:
# sets SVC_PORT, SVC_PID. SVC_LOG sets RUST_LOG for this one (default warn).
start_service() {
  local name=$1 extra=${2:-} server_extra=${3:-} try port pid
  [ -n "${CONF_FORM:-}" ] || detect_conf_form
  for try in 1 2 3 4 5 6; do
    port=$(rand_port)
    port_free "$port" || continue
    write_conf "$TMP/$name.yaml" "$CONF_FORM" "$port" "$extra" "$server_extra"
    RUST_LOG=${SVC_LOG:-${RUST_LOG:-warn}} "$BIN" -c "$TMP/$name.yaml" > "$TMP/$name.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/search?url=x")" = 400 ]; then
        SVC_PORT=$port; SVC_PID=$pid; return 0
      fi
      sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
  done
  echo "$name did not start:" >&2; cat "$TMP/$name.log" >&2; exit 1
}

# start_bare NAME BODY ETAG [LEVEL]: examples/bare_responder ($BARE, default
# the release example) on a free port, answering every request with the file
# BODY and the header ETAG, through Pingora's compression module at LEVEL
# (default 6, ours), cleartext HTTP/2 accepted; sets BARE_PORT and BARE_PID.
start_bare() {
  local try port pid bare=${BARE:-$TARGET/release/examples/bare_responder}
  for try in 1 2 3 4 5 6; do
    port=$(rand_port)
    port_free "$port" || continue
    "$bare" --listen "127.0.0.1:$port" --body "$2" --etag "$3" --compression-level "${4:-6}" --h2c > "$TMP/$1.log" 2>&1 &
    pid=$!; PIDS+=("$pid")
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/")" = 200 ] && { BARE_PORT=$port; BARE_PID=$pid; return 0; }
      sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
  done
  echo "bare responder did not start:" >&2; cat "$TMP/$1.log" >&2; exit 1
}

# wait_line FILE PATTERN SECONDS: the first line of FILE matching PATTERN
# (the event-stream clients of live.sh and capacity_check.sh print one line
# per state: "ready", then each change).
wait_line() {
  local i
  for i in $(seq $(($3 * 10))); do
    grep -m1 "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "no '$2' in $1 within $3 s" >&2; cat "$1" >&2; return 1
}
# json TEXT KEY: the member KEY of the JSON object TEXT.
json() { python3 -c "import json,sys; print(json.loads(sys.argv[1])['$2'])" "$1"; }
# share_q BOARD PERMISSION: the url= query value (percent-encoded share link).
# start_redis: a redis-server on a free loopback port, nothing kept on disk,
# its data dir $TMP; sets REDIS_PORT and REDIS_PID (stopped by cleanup).
start_redis() {
  local try port
  for try in 1 2 3 4 5 6; do
    port=$(rand_port)
    port_free "$port" || continue
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$TMP" > "$TMP/redis.log" 2>&1 &
    REDIS_PID=$!; PIDS+=("$REDIS_PID")
    for _ in $(seq 50); do
      grep -qi 'ready to accept' "$TMP/redis.log" && { REDIS_PORT=$port; return 0; }
      sleep 0.1
    done
    kill "$REDIS_PID" 2>/dev/null || true
  done
  echo "redis did not start" >&2; cat "$TMP/redis.log" >&2; exit 1
}

share_q() { printf 'url=https%%3A%%2F%%2Fapp.milanote.com%%2F%s%%2Fb%%3Fp%%3D%s' "$1" "$2"; }

median() { sort -g | awk '{a[NR]=$1} END{ if (NR==0) {print "nan"} else if (NR%2) {print a[(NR+1)/2]} else {print (a[NR/2]+a[NR/2+1])/2} }'; }

# log_problems NAME: counts of panics / ERROR / WARN lines in a service log.
log_problems() {
  local f=$TMP/$1.log
  printf 'service log %s: %s panic lines, %s ERROR lines, %s WARN lines\n' "$1" \
    "$(grep -ci panic "$f" || true)" "$(grep -c ERROR "$f" || true)" "$(grep -c WARN "$f" || true)"
  grep -iE 'panic|ERROR' "$f" | sort | uniq -c | sort -rn | head -5 | cut -c1-300 || true
}
