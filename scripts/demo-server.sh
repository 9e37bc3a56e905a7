# Sourced by scripts/schemathesis.sh and scripts/browser-test.sh: builds the
# binary and runs `--demo` (the bundled sample upstream, offline) on a free
# loopback port with the playground on. Loopback only, always.
#
#   build_binary            -> BIN   (PROFILE=debug|release, honours CARGO_TARGET_DIR)
#   start_demo [CAPTURE]    -> DEMO_PORT, DEMO_PID, DEMO_DIR, DEMO_BASE
#                           (CAPTURE: a capture directory served beside the
#                           bundled boards, as `--demo CAPTURE`)
#   stop_demo               (also run on EXIT once start_demo was called)

build_binary() {
  local profile=${PROFILE:-debug} flag=()
  [ "$profile" = release ] && flag=(--release)
  echo "== building the $profile binary" >&2
  cargo build --quiet "${flag[@]}" --bin shared-board-api
  BIN="${CARGO_TARGET_DIR:-target}/$profile/shared-board-api"
  [ -x "$BIN" ] || { echo "no binary at $BIN" >&2; return 1; }
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start_demo() {
  local capture=()
  [ -n "${1:-}" ] && capture=("$1")
  DEMO_DIR=$(mktemp -d)
  trap stop_demo EXIT
  local attempt
  for attempt in 1 2 3 4 5; do
    # The binary takes its port from YAML only: pick a free one, and retry
    # if another process takes it before the server binds.
    DEMO_PORT=$(free_port)
    DEMO_BASE="http://127.0.0.1:$DEMO_PORT"
    cat >"$DEMO_DIR/demo.yaml" <<YAML
version: 1
threads: 2
grace_period_seconds: 1
graceful_shutdown_timeout_seconds: 1
board_api:
  server:
    listen: ["127.0.0.1:$DEMO_PORT"]
    playground: true
  provider:
    name: milanote
    share_host: app.milanote.com
    origin: http://127.0.0.1:9
    fetch_deadline_ms: 5000
YAML
    "$BIN" --demo "${capture[@]}" -c "$DEMO_DIR/demo.yaml" >"$DEMO_DIR/server.log" 2>&1 &
    DEMO_PID=$!
    local i
    for i in $(seq 1 150); do
      # Ours, not whatever else might listen there: the playground answers.
      if curl -fs --max-time 2 "$DEMO_BASE/" 2>/dev/null | grep -q 'shared-board-api playground'; then
        echo "== demo server (pid $DEMO_PID) on $DEMO_BASE" >&2
        return 0
      fi
      kill -0 "$DEMO_PID" 2>/dev/null || break
      sleep 0.1
    done
    echo "-- attempt $attempt on port $DEMO_PORT failed:" >&2
    tail -n 5 "$DEMO_DIR/server.log" >&2 || true
    kill "$DEMO_PID" 2>/dev/null || true
    wait "$DEMO_PID" 2>/dev/null || true
    DEMO_PID=
  done
  echo "the demo server did not start" >&2
  return 1
}

stop_demo() {
  if [ -n "${DEMO_PID:-}" ]; then
    kill -TERM "$DEMO_PID" 2>/dev/null || true
    wait "$DEMO_PID" 2>/dev/null || true
    DEMO_PID=
  fi
  if [ -n "${DEMO_DIR:-}" ] && [ -d "$DEMO_DIR" ]; then
    rm -rf "$DEMO_DIR"
  fi
}
