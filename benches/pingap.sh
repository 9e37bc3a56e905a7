#!/usr/bin/env bash
# What a pingap host costs: cached 200s of the board API through a
# real pingap (scripts/pingap-host.sh, the plugin linked in) against the
# standalone binary, both on the same YAML in front of the same nginx
# upstream, interleaved round by round. Both run 2 worker threads. Four runs
# per round: the standalone binary and pingap with no access log (the hot
# path itself), then each with its access log on, written to a file (ours:
# `access_log: true`, RUST_LOG=info; pingap: the format docs/pingap.md
# documents, through its application log at info).
#
#   benches/pingap.sh [rounds=5] [seconds=3]
#
# Needs the release binary (cargo build --release --bin shared-board-api),
# the pingap build (scripts/pingap-host.sh --build; built here when missing,
# which takes minutes), nginx, wrk, curl, python3. pingap binds port 0 and
# the port is read back from its socket (/proc), never probed.
source "$(dirname "$0")/lib_upstream.sh"
ROUNDS=${1:-5}
SECS=${2:-3}
PINGAP_BIN=$(sh "$ROOT/scripts/pingap-host.sh" --build)
watchdog $(( 90 + 2 * ROUNDS * 4 * (SECS + 2) ))
ACCESS_FORMAT='{when} {client_ip} "{method} {path} {proto}" {status} {size} {latency}ms'

# The TCP port process $1 listens on: its socket inodes looked up in the
# kernel's table (the socket was bound to port 0 by the process itself).
listen_port() {
  local pid=$1 inodes hex
  inodes=$(ls -l "/proc/$pid/fd" 2>/dev/null | sed -n 's/.*socket:\[\([0-9]*\)\]$/\1/p' | paste -sd'|')
  [ -n "$inodes" ] || return 1
  hex=$(awk -v re="^($inodes)\$" 'NR > 1 && $4 == "0A" && $10 ~ re { n = split($2, a, ":"); print a[n]; exit }' "/proc/$pid/net/tcp")
  [ -n "$hex" ] || return 1
  echo $(( 16#$hex ))
}

# start_pingap NAME YAML ACCESS_LOG_FORMAT (empty: none): sets PG_PORT.
start_pingap() {
  local name=$1 yaml=$2 format=$3 pid port
  mkdir -p "$TMP/$name"
  PINGAP_HOST_CONF=$TMP/$name PINGAP_THREADS=2 PINGAP_ACCESS_LOG=$format \
    sh "$ROOT/scripts/pingap-host.sh" "$yaml" 127.0.0.1:0 > "$TMP/$name.log" 2>&1 &
  pid=$!; PIDS+=("$pid")
  for _ in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || break
    if port=$(listen_port "$pid"); then
      PG_PORT=$port; return 0
    fi
    sleep 0.1
  done
  echo "pingap $name did not listen:" >&2; cat "$TMP/$name.log" >&2; exit 1
}

gen_boards 7000 26
start_nginx
start_service ours; OURS=$SVC_PORT; YAML=$TMP/ours.yaml
SVC_LOG=info start_service ourslog "" "    access_log: true"; OURSLOG=$SVC_PORT
start_pingap pingap "$YAML" ""; PG=$PG_PORT
start_pingap pingaplog "$YAML" "$ACCESS_FORMAT"; PGLOG=$PG_PORT
Q=$(share_q "$SMALL" hotperm)

headers_of() { curl -s -o /dev/null -D - "$1" | tr -d '\r' | grep -v -i -E '^(date|server):' | sed -e '/^$/d' -e 's/dur=[0-9.]*/dur=N/g'; }
declare -A SIZE
for kind in search detail; do
  for p in $OURS $OURSLOG $PG $PGLOG; do
    for _ in 1 2 3; do curl -s -o /dev/null "http://127.0.0.1:$p/api/$kind?$Q"; done
    curl -s -o "$TMP/$kind.$p" "http://127.0.0.1:$p/api/$kind?$Q"
  done
  # fetchedAt is the time each process loaded the board: blanked.
  for p in $OURSLOG $PG $PGLOG; do
    cmp -s <(sed 's/"fetchedAt":"[^"]*"//' "$TMP/$kind.$OURS") <(sed 's/"fetchedAt":"[^"]*"//' "$TMP/$kind.$p") ||
      { echo "bodies differ for $kind (port $OURS against $p)" >&2; exit 1; }
  done
  SIZE[$kind]=$(wc -c < "$TMP/$kind.$OURS")
  if ! diff <(headers_of "http://127.0.0.1:$OURS/api/$kind?$Q") <(headers_of "http://127.0.0.1:$PG/api/$kind?$Q") > "$TMP/$kind.hdiff"; then
    echo "header difference ours (<) / pingap (>) for $kind:"; cat "$TMP/$kind.hdiff"
  fi
done

rps() { wrk -t2 -c32 -d"${SECS}s" "$1" | awk '/Requests\/sec/{print $2} /Non-2xx|Socket errors/{print "  wrk: " $0 > "/dev/stderr"}'; }
for kind in search detail; do
  for f in ours pingap ourslog pingaplog; do : > "$TMP/$kind.$f"; done
  for r in $(seq "$ROUNDS"); do
    rps "http://127.0.0.1:$OURS/api/$kind?$Q" >> "$TMP/$kind.ours"
    rps "http://127.0.0.1:$PG/api/$kind?$Q" >> "$TMP/$kind.pingap"
    rps "http://127.0.0.1:$OURSLOG/api/$kind?$Q" >> "$TMP/$kind.ourslog"
    rps "http://127.0.0.1:$PGLOG/api/$kind?$Q" >> "$TMP/$kind.pingaplog"
  done
done

echo
echo "### pingap.sh ($(date -u +%Y-%m-%d), $(nproc) cores, $(basename "$PINGAP_BIN") from scripts/pingap-host.sh, wrk -t2 -c32 -d${SECS}s, $ROUNDS interleaved rounds, load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo
ratio_median() { paste "$1" "$2" | awk '{print $1/$2}' | median; }
runs() { paste -sd' ' "$1"; }
echo "| cached 200 | body bytes | ours req/s (runs) | pingap req/s (runs) | ours median | pingap median | pingap/ours | ours, log on | pingap, log on | pingap/ours, log on |"
echo "|---|---:|---|---|---:|---:|---:|---:|---:|---:|"
for kind in search detail; do
  printf '| /api/%s small board | %s | %s | %s | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f |\n' "$kind" "${SIZE[$kind]}" \
    "$(runs "$TMP/$kind.ours")" "$(runs "$TMP/$kind.pingap")" \
    "$(median < "$TMP/$kind.ours")" "$(median < "$TMP/$kind.pingap")" \
    "$(ratio_median "$TMP/$kind.pingap" "$TMP/$kind.ours")" \
    "$(median < "$TMP/$kind.ourslog")" "$(median < "$TMP/$kind.pingaplog")" \
    "$(ratio_median "$TMP/$kind.pingaplog" "$TMP/$kind.ourslog")"
done
echo
echo "access log lines written: ours $(grep -c '^{"method":' "$TMP/ourslog.log" || true), pingap $(grep -c '"GET /api/' "$TMP/pingaplog.log" || true); pingap's no-log run: $(grep -c '"GET /api/' "$TMP/pingap.log" || true)"
if grep -E 'p%3D|hotperm' "$TMP"/pingap*.log >/dev/null; then echo "pingap's output holds the permission id" >&2; exit 1; fi
log_problems ours
log_problems pingaplog
