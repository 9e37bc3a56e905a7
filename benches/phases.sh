#!/usr/bin/env bash
# The cold load by phase: `Server-Timing` `upstream` and `build` of cold
# requests for the 7,000-card board (5.3 MB raw), the end-to-end time of
# each, beside the same raw body read by curl from the same nginx and the
# serde_json round trip of it (examples/json_roundtrip).
#
#   benches/phases.sh [runs=9]
#   BEFORE=/path/to/older/shared-board-api benches/phases.sh 9   # both, interleaved
#   GZIP_UPSTREAM=1 benches/phases.sh 9   # the upstream sends the board gzip (level 6)
#   UP_LIMIT_RATE=100m benches/phases.sh 9   # ... at most 100 MB/s (nginx limit_rate)
#
# Needs the release binary and examples, nginx, curl, python3. With BEFORE,
# both binaries run side by side on the same upstream and every run asks
# each of them in turn (a new permission id each, so every request is a
# cold load), so the machine's drift falls on both alike. One unrecorded
# cold warm-up each. Medians; ratios against the round trip's median.
source "$(dirname "$0")/lib_upstream.sh"
RUNS=${1:-9}
watchdog $(( 60 + RUNS * 8 ))
RUN=$RANDOM$$
ROUNDTRIP=${ROUNDTRIP:-$TARGET/release/examples/json_roundtrip}
[ -x "$ROUNDTRIP" ] || { echo "no $ROUNDTRIP (cargo build --release --examples)" >&2; exit 1; }

gen_boards 7000 26
CURL_GZIP=()
READ_KIND=raw
if [ -n "${GZIP_UPSTREAM:-}" ]; then
  # As the provider answers: gzip to a client that asks for it. curl then
  # reads the compressed body, as the service does.
  gzip -6 -k -f "$BIG_FILE" "$SMALL_FILE"
  export UP_GZIP_STATIC=on
  CURL_GZIP=(-H 'Accept-Encoding: gzip')
  READ_KIND=gzip
fi
start_nginx
NAMES=(now)
start_service now; PORT_now=$SVC_PORT
if [ -n "${BEFORE:-}" ]; then
  NAMES=(before now)
  NOW_BIN=$BIN; BIN=$BEFORE; CONF_FORM=
  start_service before; PORT_before=$SVC_PORT
  BIN=$NOW_BIN
fi
UP="http://127.0.0.1:$UP_PORT/api/boards?ids=$BIG&tokens=t0k3n&excludeSelf=false&loadAncestors=false&canvasOrder=true"
echo "phases.sh: raw board $(wc -c <"$BIG_FILE") bytes${GZIP_UPSTREAM:+ ($(wc -c <"$BIG_FILE.gz") bytes gzip)}, $RUNS runs, ${NAMES[*]}"

# one NAME ENDPOINT TAG: a cold request; appends "end-to-end upstream build
# after" (ms), where after is Server-Timing's total less upstream and build:
# the render, and any wait for the work pool before it.
one() {
  local port_var=PORT_$1 out
  out=$(curl -s -o /dev/null -D - --max-time 60 -w 'TOTAL %{time_total} %{http_code}\n' \
    "http://127.0.0.1:${!port_var}/api/$2?$(share_q "$BIG" "$3")")
  awk -v f="$TMP/$1-$2.txt" '
    tolower($1) == "server-timing:" {
      if (match($0, /upstream;dur=[0-9.]+/)) up = substr($0, RSTART + 13, RLENGTH - 13)
      if (match($0, /build;dur=[0-9.]+/)) bu = substr($0, RSTART + 10, RLENGTH - 10)
      if (match($0, /total;dur=[0-9.]+/)) to = substr($0, RSTART + 10, RLENGTH - 10)
    }
    $1 == "TOTAL" {
      if ($3 != 200) print "HTTP " $3 > "/dev/stderr"
      print $2 * 1000, up, bu, to - up - bu >> f
    }' <<<"$out"
}
for n in "${NAMES[@]}"; do one "$n" detail "warm$n$RUN"; : > "$TMP/$n-detail.txt"; : > "$TMP/$n-search.txt"; done
: > "$TMP/read.txt"
for i in $(seq "$RUNS"); do
  curl -s -o /dev/null "${CURL_GZIP[@]}" -w '%{time_total}\n' "$UP" | awk '{print $1 * 1000}' >> "$TMP/read.txt"
  for n in "${NAMES[@]}"; do one "$n" detail "d$n${RUN}r$i"; done
  for n in "${NAMES[@]}"; do one "$n" search "s$n${RUN}r$i"; done
done
rt=$("$ROUNDTRIP" "$BIG_FILE" "$RUNS" | sed -n 's/.*roundtrip \([0-9.]*\) ms.*/\1/p')
col() { awk -v c="$1" '{print $c}' "$2" | median; }
read_ms=$(median < "$TMP/read.txt")

echo
echo "### phases.sh ($(nproc) cores, $RUNS runs, medians)"
echo
printf '| measure |'; for n in "${NAMES[@]}"; do printf ' %s |' "$n"; done; echo
printf '|---|'; for _ in "${NAMES[@]}"; do printf -- '---:|'; done; echo
row() { # label endpoint column [ratio]
  printf '| %s |' "$1"
  for n in "${NAMES[@]}"; do
    local v; v=$(col "$3" "$TMP/$n-$2.txt")
    if [ "${4:-}" = rt ]; then printf ' %.1f ms = %.2fx |' "$v" "$(awk -v a="$v" -v b="$rt" 'BEGIN{print a/b}')"
    elif [ "${4:-}" = read ]; then printf ' %.1f ms = %.1fx read |' "$v" "$(awk -v a="$v" -v b="$read_ms" 'BEGIN{print a/b}')"
    elif [ "${4:-}" = max ]; then printf ' %.1f ms (max %.1f) |' "$v" "$(awk -v c="$3" '$c > m {m = $c} END {print m}' "$TMP/$n-$2.txt")"
    else printf ' %.1f ms |' "$v"; fi
  done; echo
}
row "cold full, end to end / round trip" detail 1 rt
row "cold compact, end to end / round trip" search 1 rt
row "Server-Timing upstream, cold full" detail 2 read
row "Server-Timing build, cold full" detail 3
row "Server-Timing build, cold compact" search 3
row "Server-Timing total - upstream - build, cold full" detail 4 max
row "Server-Timing total - upstream - build, cold compact (render, wait for the pool)" search 4 max
printf "| %s body read by curl from nginx | %.1f ms |\n" "$READ_KIND" "$read_ms"
printf '| serde_json round trip (examples/json_roundtrip) | %s ms |\n' "$rt"
