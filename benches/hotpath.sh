#!/usr/bin/env bash
# The hot path: a cached 200 from our service against a bare Pingora
# responder (examples/bare_responder.rs) sending byte-identical bodies with the
# same headers, so the difference is what our request handling costs. In the
# same run: our service with the access log on (RUST_LOG=info, the
# lines written to a file) beside the same service with it off, and both ours
# and the bare responder over HTTP/2 (h2c with prior knowledge, h2load) beside
# HTTP/1.1 (wrk).
#
#   benches/hotpath.sh [rounds=3] [seconds=5]
#   BEFORE=/path/to/older/shared-board-api benches/hotpath.sh   # before/after/bare in one run
#
# Needs the release binary and examples (cargo build --release --bin
# shared-board-api --examples), nginx, wrk, h2load (nghttp2-client), curl,
# python3.
# Our service runs with the default compression level (no compression_level
# key: 6, as in conf/gateway.yaml); the bare responder gets the same
# ResponseCompression module at the same level. wrk and h2load send no
# Accept-Encoding, so neither compresses (checked below), but both run the
# module's filters. Both accept h2c (server.h2c: true / --h2c), so both peek
# at each new connection's preface alike.
# Two bodies: the small board's /api/search (compact, small body) and its
# /api/detail (full, ~20 KB). 32 connections (wrk -t2 -c32; h2load -t2 -c32
# -m1, one stream in flight per connection, so both keep 32 requests in
# flight), interleaved per round: ours, ours+log, bare over HTTP/1.1, then
# ours, bare over HTTP/2.
# Then the same /api/detail as Markdown (Accept: text/markdown), cached,
# interleaved with its cached JSON: what the second representation costs.
source "$(dirname "$0")/lib_upstream.sh"
ROUNDS=${1:-3}
SECS=${2:-5}
RUNS=5; [ -z "${BEFORE:-}" ] || RUNS=6
watchdog $(( 90 + 2 * ROUNDS * (RUNS + 1) * (SECS + 1) ))
command -v h2load >/dev/null || { echo "no h2load (apt-get install nghttp2-client)" >&2; exit 1; }
BARE=${BARE:-$TARGET/release/examples/bare_responder}
[ -x "$BARE" ] || { echo "no $BARE (cargo build --release --examples)" >&2; exit 1; }
LEVEL=6

gen_boards 7000 26
start_nginx
if [ -n "${BEFORE:-}" ]; then
  AFTER_BIN=$BIN; BIN=$BEFORE; start_service before; BEFORE_PORT=$SVC_PORT; BIN=$AFTER_BIN
fi
H2C="    h2c: true"
start_service hot "" "$H2C"
P=http://127.0.0.1:$SVC_PORT
for _ in 1 2 3 4 5 6; do METRICS_PORT=$(rand_port); port_free "$METRICS_PORT" && break; done
SVC_LOG=info start_service hotlog "" "$H2C
    access_log: true
    metrics:
      listen: \"127.0.0.1:$METRICS_PORT\""
L=http://127.0.0.1:$SVC_PORT
Q=$(share_q "$SMALL" hotperm)

# Timings differ per answer: compared as a shape.
headers_of() { curl -s -o /dev/null -D - "$1" | tr -d '\r' | grep -v -i -E '^(date|server):' | sed -e '/^$/d' -e 's/dur=[0-9.]*/dur=N/g'; }

declare -A OURS_URL LOG_URL BARE_URL BEFORE_URL SIZE
for kind in search detail; do
  url="$P/api/$kind?$Q"
  for _ in 1 2 3; do curl -s -o /dev/null "$url"; done
  curl -s -D "$TMP/$kind.hdr" -o "$TMP/$kind.body" "$url"
  etag=$(tr -d '\r' < "$TMP/$kind.hdr" | awk -F': ' 'tolower($1)=="etag"{print $2}')
  start_bare "bare-$kind" "$TMP/$kind.body" "$etag" "$LEVEL"
  OURS_URL[$kind]=$url
  LOG_URL[$kind]="$L/api/$kind?$Q"
  for _ in 1 2 3; do curl -s -o /dev/null "${LOG_URL[$kind]}"; done
  curl -s -o "$TMP/$kind.log.body" "${LOG_URL[$kind]}"
  cmp -s "$TMP/$kind.body" "$TMP/$kind.log.body" || { echo "bodies differ with the access log on for $kind" >&2; exit 1; }
  if [ -n "${BEFORE:-}" ]; then
    BEFORE_URL[$kind]="http://127.0.0.1:$BEFORE_PORT/api/$kind?$Q"
    for _ in 1 2 3; do curl -s -o /dev/null "${BEFORE_URL[$kind]}"; done
    curl -s -o "$TMP/$kind.before" "${BEFORE_URL[$kind]}"
    cmp -s "$TMP/$kind.body" "$TMP/$kind.before" || { echo "before and after bodies differ for $kind" >&2; exit 1; }
  fi
  BARE_URL[$kind]="http://127.0.0.1:$BARE_PORT/api/$kind?$Q"
  SIZE[$kind]=$(wc -c < "$TMP/$kind.body")
  curl -s -o "$TMP/$kind.bare" "${BARE_URL[$kind]}"
  cmp -s "$TMP/$kind.body" "$TMP/$kind.bare" || { echo "bodies differ for $kind" >&2; exit 1; }
  if ! diff <(headers_of "$url") <(headers_of "${BARE_URL[$kind]}") > "$TMP/$kind.hdiff"; then
    echo "header difference ours (<) / bare (>) for $kind:"; cat "$TMP/$kind.hdiff"
  fi
done
echo "hotpath.sh: ours 127.0.0.1:$SVC_PORT; bodies byte-identical: search ${SIZE[search]} bytes, detail ${SIZE[detail]} bytes"
echo "our headers for a cached 200 (search):"; headers_of "${OURS_URL[search]}" | sed 's/^/  /'
enc() { curl -s -o /dev/null -D - "$@" | tr -d '\r' | awk -F': ' 'tolower($1)=="content-encoding"{print $2}'; }
echo "compression (ours, level $LEVEL by default): no Accept-Encoding -> '$(enc "${OURS_URL[detail]}")'; Accept-Encoding: gzip -> '$(enc -H 'Accept-Encoding: gzip' "${OURS_URL[detail]}")'; bare with gzip -> '$(enc -H 'Accept-Encoding: gzip' "${BARE_URL[detail]}")'"

rps() { wrk -t2 -c32 -d"${SECS}s" "$@" | awk '/Requests\/sec/{print $2} /Non-2xx|Socket errors/{print "  wrk: " $0 > "/dev/stderr"}'; }
# h2load over h2c (prior knowledge, as http:// URLs go): req/s, and any
# request that did not end in a 2xx on stderr.
h2rps() {
  h2load -t2 -c32 -m1 -D "$SECS" "$1" > "$TMP/h2load.out" 2>&1
  awk '/^finished in/{print $4}
       /^requests:/ && ($10 != 0 || $12 != 0) {print "  h2load: " $0 > "/dev/stderr"}
       /^status codes:/ && ($5 != 0 || $7 != 0 || $9 != 0) {print "  h2load: " $0 > "/dev/stderr"}' "$TMP/h2load.out"
}
h2load -n 10 -c 1 "${OURS_URL[search]}" > "$TMP/h2load.probe" 2>&1
echo "h2load against ours: $(grep -m1 'Application protocol' "$TMP/h2load.probe"), $(grep -m1 '^status codes' "$TMP/h2load.probe")"
for kind in search detail; do
  for f in ours log bare.rps before.rps ours.h2 bare.h2; do : > "$TMP/$kind.$f"; done
  for r in $(seq "$ROUNDS"); do
    [ -z "${BEFORE:-}" ] || rps "${BEFORE_URL[$kind]}" >> "$TMP/$kind.before.rps"
    rps "${OURS_URL[$kind]}" >> "$TMP/$kind.ours"
    rps "${LOG_URL[$kind]}" >> "$TMP/$kind.log"
    rps "${BARE_URL[$kind]}" >> "$TMP/$kind.bare.rps"
    h2rps "${OURS_URL[$kind]}" >> "$TMP/$kind.ours.h2"
    h2rps "${BARE_URL[$kind]}" >> "$TMP/$kind.bare.h2"
  done
done

MD_URL=${OURS_URL[detail]}
MD_HEADER='Accept: text/markdown'
for _ in 1 2 3; do curl -s -o /dev/null -H "$MD_HEADER" "$MD_URL"; done
MD_TYPE=$(curl -s -o /dev/null -D - -H "$MD_HEADER" "$MD_URL" | tr -d '\r' | awk -F': ' 'tolower($1)=="content-type"{print $2}')
case "$MD_TYPE" in text/markdown*) ;; *) echo "Accept: text/markdown answered '$MD_TYPE'" >&2; exit 1 ;; esac
MD_SIZE=$(curl -s -H "$MD_HEADER" "$MD_URL" | wc -c)
: > "$TMP/md.ours"; : > "$TMP/md.json"
for r in $(seq "$ROUNDS"); do
  rps -H "$MD_HEADER" "$MD_URL" >> "$TMP/md.ours"
  rps "$MD_URL" >> "$TMP/md.json"
done

echo
echo "### hotpath.sh ($(date -u +%Y-%m-%d), $(nproc) cores, wrk -t2 -c32 -d${SECS}s and h2load -t2 -c32 -m1 -D $SECS, $ROUNDS interleaved rounds, no Accept-Encoding)"
echo
# Per-round ratios (each against the run beside it in the same round) and
# their median: the machine's drift between rounds cancels out.
ratio_median() { paste "$1" "$2" | awk '{print $1/$2}' | median; }
runs() { paste -sd' ' "$1"; }
echo "HTTP/1.1 (wrk):"
echo
echo "| cached 200 | body bytes | ours req/s (runs) | access log on (runs) | bare req/s (runs) | ours median | log on median | bare median | log on/off | ours/bare |"
echo "|---|---:|---|---|---|---:|---:|---:|---:|---:|"
for kind in search detail; do
  o=$(median < "$TMP/$kind.ours"); l=$(median < "$TMP/$kind.log"); b=$(median < "$TMP/$kind.bare.rps")
  printf '| /api/%s small board | %s | %s | %s | %s | %.0f | %.0f | %.0f | %.2f | %.2f |\n' "$kind" "${SIZE[$kind]}" \
    "$(runs "$TMP/$kind.ours")" "$(runs "$TMP/$kind.log")" "$(runs "$TMP/$kind.bare.rps")" "$o" "$l" "$b" \
    "$(ratio_median "$TMP/$kind.log" "$TMP/$kind.ours")" "$(ratio_median "$TMP/$kind.ours" "$TMP/$kind.bare.rps")"
  if [ -n "${BEFORE:-}" ]; then
    f=$(median < "$TMP/$kind.before.rps")
    printf '| /api/%s, before (%s) | %s | %s | | | %.0f | | | | %.2f |\n' "$kind" "$(basename "$BEFORE")" "${SIZE[$kind]}" \
      "$(runs "$TMP/$kind.before.rps")" "$f" "$(ratio_median "$TMP/$kind.before.rps" "$TMP/$kind.bare.rps")"
  fi
done
echo
echo "HTTP/2, h2c with prior knowledge (h2load):"
echo
echo "| cached 200 | ours req/s (runs) | bare req/s (runs) | ours median | bare median | ours/bare | ours HTTP/2 / HTTP/1.1 |"
echo "|---|---|---|---:|---:|---:|---:|"
for kind in search detail; do
  o=$(median < "$TMP/$kind.ours.h2"); b=$(median < "$TMP/$kind.bare.h2")
  printf '| /api/%s small board | %s | %s | %.0f | %.0f | %.2f | %.2f |\n' "$kind" \
    "$(runs "$TMP/$kind.ours.h2")" "$(runs "$TMP/$kind.bare.h2")" "$o" "$b" \
    "$(ratio_median "$TMP/$kind.ours.h2" "$TMP/$kind.bare.h2")" "$(ratio_median "$TMP/$kind.ours.h2" "$TMP/$kind.ours")"
done
echo
lines=$(grep -c '^{"method":' "$TMP/hotlog.log" || true)
dropped=$(curl -s "http://127.0.0.1:$METRICS_PORT/metrics" | awk '/^board_api_access_log_dropped_total /{print $2}')
echo "access log (on): ${lines} lines written, ${dropped:-0} dropped (board_api_access_log_dropped_total); a line:"
grep -m1 '^{"method":' "$TMP/hotlog.log" | cut -c1-300 | sed 's/^/  /'
echo
echo "| cached 200, /api/detail small board | body bytes | req/s (runs) | median | Markdown/JSON, median of per-round ratios |"
echo "|---|---:|---|---:|---:|"
printf '| JSON | %s | %s | %.0f | |\n' "${SIZE[detail]}" "$(paste -sd' ' "$TMP/md.json")" "$(median < "$TMP/md.json")"
printf '| Markdown (%s) | %s | %s | %.0f | %.2f |\n' "$MD_HEADER" "$MD_SIZE" "$(paste -sd' ' "$TMP/md.ours")" \
  "$(median < "$TMP/md.ours")" "$(ratio_median "$TMP/md.ours" "$TMP/md.json")"
echo
log_problems hot
log_problems hotlog
