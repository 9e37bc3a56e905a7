#!/usr/bin/env bash
# Reads the JSON Canvas files of GET /api/canvas with a JSON Canvas reader
# nobody here wrote: pyjsoncanvas (PyPI), which checks types, integer
# geometry, colours, edge ends and node references its own way. The socket
# tests validate the same files against schema/json-canvas-1.0.schema.json,
# our reading of the spec; this is a second opinion on it. Loopback only:
#   1. installs pyjsoncanvas into .venv-canvas when missing;
#   2. builds the binary and starts `--demo` on a free 127.0.0.1 port;
#   3. downloads the canvas of each sample board and reads it.
#
#   scripts/canvas-check.sh            # exit 0 when every file reads and validates
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/demo-server.sh

VENV=${CANVAS_VENV:-.venv-canvas}
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import pyjsoncanvas' 2>/dev/null; then
  echo "== installing pyjsoncanvas into $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet 'pyjsoncanvas==1.0.2'
fi

build_binary
start_demo

OUT=$(mktemp -d)
# The demo board in the web app's shape, every other element type, the
# normalizer's edge cases, and the demo's nested boards.
for board in 1W3ZZU1Qvua02H 5Sw7Ln4Dc2Sk8e 7Ed9GeCa5eS0zZ 2Xk9PqRt7LmN4v 3Hq7ZsWd2KpL8c 4Rt5YuNm3BvC6x; do
  link="https%3A%2F%2Fapp.milanote.com%2F$board%2Fx%3Fp%3Ddemo"
  curl -fsS --max-time 30 -o "$OUT/$board.canvas" "$DEMO_BASE/api/canvas?url=$link"
done
"$VENV/bin/python" - "$OUT"/*.canvas <<'PY'
import sys
from pyjsoncanvas import Canvas

failed = 0
for path in sys.argv[1:]:
    name = path.rsplit("/", 1)[-1]
    try:
        canvas = Canvas.from_json(open(path, encoding="utf-8").read())
        canvas.validate()
        print(f"ok   {name}: {len(canvas.nodes)} nodes, {len(canvas.edges)} edges")
    except Exception as e:  # any refusal of the reader is a failure here
        failed += 1
        print(f"FAIL {name}: {type(e).__name__}: {e}")
print(f"{len(sys.argv) - 1 - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
rm -rf "$OUT"
