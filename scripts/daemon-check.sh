#!/usr/bin/env bash
# Runs each binary given as the systemd unit runs it (`-d`, a daemon) with
# the README's minimal configuration, its provider pointed at a sample
# Milanote upstream on loopback, and prints what a cold and a cached search
# answer and how long each took. A cold load that never finishes in the
# daemon shows as 504 after the fetch deadline.
#
#   scripts/daemon-check.sh target/debug/shared-board-api [OTHER_BINARY ...]
#
# The sample upstream is the first binary's `--demo` (its own gateway
# listens on a port the kernel picks; only its upstream is used). Every
# port is bound to 0 and read back; nothing leaves loopback.
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: $0 BINARY [BINARY ...]" >&2; exit 2; }
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# The sample upstream, from the first binary's demo.
"$1" --demo --listen 127.0.0.1:0 >"$work/demo.out" 2>"$work/demo.err" &
pids+=($!)
origin=""
for _ in $(seq 200); do
  origin=$(sed -n 's/^sample Milanote upstream: //p' "$work/demo.out")
  [ -n "$origin" ] && break
  sleep 0.05
done
[ -n "$origin" ] || { echo "no sample upstream" >&2; cat "$work/demo.err" >&2; exit 1; }

# The port a process listens on (its only listener), read back.
port_of() {
  ss -ltnpH | awk -v want="pid=$1," 'index($0, want) { n = split($4, a, ":"); print a[n]; exit }'
}

link='https%3A%2F%2Fapp.milanote.com%2F1W3ZZU1Qvua02H%2Fdemo%3Fp%3Ddaemon-check'
printf '%-40s %-14s %-14s\n' binary "cold search" "cached search"
for bin in "$@"; do
  dir="$work/$(basename "$bin")-$RANDOM"
  mkdir -p "$dir"
  cat >"$dir/board.yaml" <<EOF
version: 1
pid_file: $dir/pid
upgrade_sock: $dir/sock
error_log: $dir/error.log
grace_period_seconds: 1
graceful_shutdown_timeout_seconds: 1
board_api:
  provider:
    origin: $origin
  server:
    listen: ["127.0.0.1:0"]
EOF
  "$bin" -d -c "$dir/board.yaml" 2>"$dir/start.err"
  for _ in $(seq 200); do [ -s "$dir/pid" ] && break; sleep 0.05; done
  pid=$(cat "$dir/pid")
  pids+=("$pid")
  port=""
  for _ in $(seq 200); do port=$(port_of "$pid"); [ -n "$port" ] && break; sleep 0.05; done
  url="http://127.0.0.1:$port/api/search?url=$link"
  cold=$(curl -s -o /dev/null -w '%{http_code} %{time_total}s' --max-time 30 "$url")
  cached=$(curl -s -o /dev/null -w '%{http_code} %{time_total}s' --max-time 30 "$url")
  printf '%-40s %-14s %-14s\n' "$bin" "$cold" "$cached"
  kill -TERM "$pid" 2>/dev/null || true
done
