#!/usr/bin/env bash
# A cached `GET /api/changes` against a cached `GET /api/detail` of the same
# board, side by side in one run, on the 7,000-card board (5.3 MB) served by
# the nginx upstream of lib_upstream.sh, with versions kept in a SQLite file.
#
#   benches/changes.sh [rounds=5] [seconds=5]
#
# The service runs with a one-hour cache. It reads the board (version V1,
# kept in the file), is stopped, the upstream's board is replaced by a later
# version (benches/edit_board.py), and it is started again on the same file:
# the board is now V2, and `/api/changes?since=V1` compares the kept V1 with
# it. After one warming request of each, wrk -t2 -c32 runs SECONDS on each of
# `/api/detail` (full JSON, 5.7 MB), `/api/detail?view=compact` and
# `/api/changes?since=V1` (JSON) in interleaved rounds; medians and the ratios
# are printed, with the bytes kept per version. Needs the release binary,
# nginx, wrk, curl and python3.
set -euo pipefail
ROUNDS=${1:-5}
SECS=${2:-5}
# shellcheck source=benches/lib_upstream.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_upstream.sh"
watchdog $(( 60 + ROUNDS * SECS * 3 + 60 ))
gen_boards 7000 26
start_nginx
DB=$TMP/versions.sqlite
EXTRA=$(printf '  cache:\n    ttl_seconds: 3600\n  changes:\n    store: sqlite\n    path: %s' "$DB")
Q=$(share_q "$BIG" p1)

version_of() { # URL -> the Board-Version header of a GET
  curl -s -D - -o /dev/null "$1" | tr -d '\r' | awk 'tolower($1)=="board-version:" {print $2}'
}
kept() { # VERSION -> true once the file holds it
  python3 - "$DB" "$1" <<'PY'
import sqlite3, sys
try:
    n = sqlite3.connect(sys.argv[1]).execute(
        "SELECT COUNT(*) FROM board_versions WHERE version = ?", (sys.argv[2],)).fetchone()[0]
except sqlite3.Error:
    n = 0
sys.exit(0 if n else 1)
PY
}

start_service first "$EXTRA"
V1=$(version_of "http://127.0.0.1:$SVC_PORT/api/detail?$Q")
[ -n "$V1" ] || { echo "no Board-Version" >&2; exit 1; }
for _ in $(seq 200); do kept "$V1" && break; sleep 0.05; done
kept "$V1" || { echo "V1 was not kept" >&2; exit 1; }
kill "$SVC_PID"; wait "$SVC_PID" 2>/dev/null || true

python3 "$ROOT/benches/edit_board.py" < "$BIG_FILE" > "$TMP/later.json"
mv "$TMP/later.json" "$BIG_FILE"; chmod 644 "$BIG_FILE"
start_service second "$EXTRA"
BASE=http://127.0.0.1:$SVC_PORT
V2=$(version_of "$BASE/api/detail?$Q")
[ -n "$V2" ] && [ "$V2" != "$V1" ] || { echo "the board did not change ($V1, $V2)" >&2; exit 1; }
for _ in $(seq 200); do kept "$V2" && break; sleep 0.05; done

DETAIL="$BASE/api/detail?$Q"
COMPACT="$BASE/api/detail?$Q&view=compact"
CHANGES="$BASE/api/changes?$Q&since=$V1"
for target in "$DETAIL" "$COMPACT" "$CHANGES"; do
  code=$(curl -s -o "$TMP/warm.out" -w '%{http_code}' "$target")
  [ "$code" = 200 ] || { echo "$target: $code" >&2; cat "$TMP/warm.out" >&2; exit 1; }
done
curl -s "$CHANGES" > "$TMP/changes.json"
python3 - "$TMP/changes.json" "$DB" "$V1" "$V2" <<'PY'
import json, sqlite3, sys
data = json.load(open(sys.argv[1]))["data"]
counts = ", ".join(f"{len(data[k])} {k}" for k in ("added", "removed", "changed", "moved"))
print(f"changes: {counts}; answer {len(open(sys.argv[1], 'rb').read())} bytes")
db = sqlite3.connect(sys.argv[2])
for v in sys.argv[3:]:
    n = db.execute("SELECT length(value) FROM board_versions WHERE version = ?", (v,)).fetchone()[0]
    print(f"kept version {v}: {n} bytes")
PY

rps() { # URL -> requests/sec; fails on any non-2xx
  local out
  out=$(wrk -t2 -c32 -d"${SECS}s" "$1")
  if grep -q 'Non-2xx' <<<"$out"; then echo "non-2xx answers from $1" >&2; echo "$out" >&2; exit 1; fi
  awk '/Requests\/sec/ {print $2}' <<<"$out"
}
D=(); C=(); X=()
for r in $(seq "$ROUNDS"); do
  d=$(rps "$DETAIL"); c=$(rps "$COMPACT"); x=$(rps "$CHANGES")
  D+=("$d"); C+=("$c"); X+=("$x")
  printf 'round %d: /api/detail %s req/s, /api/detail compact %s req/s, /api/changes %s req/s\n' "$r" "$d" "$c" "$x"
done
python3 - "${D[*]}" "${C[*]}" "${X[*]}" <<'PY'
import statistics, sys
d, c, x = ([float(v) for v in a.split()] for a in sys.argv[1:4])
md, mc, mx = statistics.median(d), statistics.median(c), statistics.median(x)
print(f"median: detail {md:.0f} req/s, detail compact {mc:.0f} req/s, changes {mx:.0f} req/s")
print(f"time per request, changes / detail: {md / mx:.3f}; changes / detail compact: {mc / mx:.3f}")
PY
log_problems second
