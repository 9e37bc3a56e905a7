#!/usr/bin/env bash
# A cold request end to end: how long does a cold request for a big board take, and
# how far is it from the serde_json floor (parse + serialize the raw board)?
#
#   benches/cold.sh [runs=7]
#
# Needs the release binary and examples (cargo build --release --bin
# shared-board-api --examples), nginx, curl, python3. Upstream as in
# governance.sh: nginx on loopback serving a 7,000-card board (~5.3 MB raw).
# `runs` sequential cold /api/detail and cold /api/search (a new permission id
# each, so each one fetches, normalizes, sanitizes and renders), after one
# unrecorded cold warm-up; medians of curl's time_total; then
# examples/json_roundtrip on the same raw file; ratios cold / round trip.
source "$(dirname "$0")/lib_upstream.sh"
watchdog 175
RUNS=${1:-7}
RUN=$RANDOM$$
ROUNDTRIP=${ROUNDTRIP:-$TARGET/release/examples/json_roundtrip}
[ -x "$ROUNDTRIP" ] || { echo "no $ROUNDTRIP (cargo build --release --examples)" >&2; exit 1; }

gen_boards 7000 26
start_nginx
start_service cold
P=http://127.0.0.1:$SVC_PORT
echo "cold.sh: service 127.0.0.1:$SVC_PORT, upstream 127.0.0.1:$UP_PORT, raw board $(wc -c <"$BIG_FILE") bytes, $RUNS runs"

# Upstream alone: nginx handing out the raw board (the fetch part of a cold load).
for i in $(seq "$RUNS"); do
  curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$UP_PORT/api/boards?ids=$BIG&tokens=t0k3n&excludeSelf=false&loadAncestors=false&canvasOrder=true"
done > "$TMP/upstream.txt"

curl -s -o /dev/null --max-time 60 "$P/api/detail?$(share_q "$BIG" "warm${RUN}")"
cold() { # endpoint label
  local i out code
  : > "$TMP/$2.txt"
  for i in $(seq "$RUNS"); do
    out=$(curl -s -o "$TMP/$2.body" --max-time 60 -w '%{http_code} %{time_total} %{size_download}' "$P/api/$1?$(share_q "$BIG" "$2${RUN}n$i")")
    read -r code t size <<<"$out"
    [ "$code" = 200 ] || echo "  $2 run $i: HTTP $code ($(head -c 200 "$TMP/$2.body"))" >&2
    echo "$t $size $code" >> "$TMP/$2.txt"
  done
}
cold detail detail
cold search search

rt_line=$("$ROUNDTRIP" "$BIG_FILE" "$RUNS")
rt_ms=$(sed -n 's/.*roundtrip \([0-9.]*\) ms.*/\1/p' <<<"$rt_line")
ms() { awk '{print $1*1000}' "$1" | median; }
d_ms=$(ms "$TMP/detail.txt"); s_ms=$(ms "$TMP/search.txt"); u_ms=$(ms "$TMP/upstream.txt")
range() { awk '{v=$1*1000; if(NR==1||v<mn)mn=v; if(NR==1||v>mx)mx=v} END{printf "%.0f to %.0f", mn, mx}' "$1"; }
codes() { awk '{c[$3]++} END{for(k in c) printf "%s%s=%d", (n++?" ":""), k, c[k]}' "$1"; }

echo
echo "### cold.sh ($(date -u +%Y-%m-%d), $(nproc) cores, $RUNS runs each)"
echo
echo "| request | median ms | range ms | body bytes | statuses | median / JSON round trip |"
echo "|---|---:|---:|---:|---|---:|"
printf '| cold /api/detail (full), big board | %.0f | %s | %s | %s | %.1fx |\n' "$d_ms" "$(range "$TMP/detail.txt")" "$(awk 'END{print $2}' "$TMP/detail.txt")" "$(codes "$TMP/detail.txt")" "$(awk -v a="$d_ms" -v b="$rt_ms" 'BEGIN{print a/b}')"
printf '| cold /api/search (compact), big board | %.0f | %s | %s | %s | %.1fx |\n' "$s_ms" "$(range "$TMP/search.txt")" "$(awk 'END{print $2}' "$TMP/search.txt")" "$(codes "$TMP/search.txt")" "$(awk -v a="$s_ms" -v b="$rt_ms" 'BEGIN{print a/b}')"
printf '| raw board straight from nginx (fetch floor) | %.1f | %s | %s | | %.2fx |\n' "$u_ms" "$(range "$TMP/upstream.txt")" "$(wc -c <"$BIG_FILE")" "$(awk -v a="$u_ms" -v b="$rt_ms" 'BEGIN{print a/b}')"
printf '| serde_json from_slice::<Value> + to_vec (examples/json_roundtrip) | %s | | | | 1.0x |\n' "$rt_ms"
echo
echo "$rt_line"
log_problems cold
