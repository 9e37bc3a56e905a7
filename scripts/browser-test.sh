#!/usr/bin/env bash
# Drives the playground in headless Chromium against the real service, page
# and API on two loopback origins (http://127.0.0.1:PORT serves the page,
# http://localhost:PORT is the API base it queries), so every answer passes
# through CORS. Installs Debian's chromium (apt) and playwright-core (npm,
# scripts/browser/) when missing. Screenshots go to target/browser-test/.
#
#   scripts/browser-test.sh             # PROFILE=release for the release binary
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/demo-server.sh

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
  echo "== installing chromium (apt)" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium
fi
"$CHROMIUM" --version 2>/dev/null | grep -i chromium || true
if [ ! -d scripts/browser/node_modules/playwright-core ]; then
  echo "== installing playwright-core (npm)" >&2
  (cd scripts/browser && npm install --no-audit --no-fund --loglevel=error)
fi

build_binary
# The bundled boards plus a board in the web app's captured shape (grid units).
start_demo tests/fixtures/captured-board

# The sample upstream's edit URL for the demo board, from the curl line the
# demo prints at start: the "What changed" view's check edits the board.
DEMO_EDIT=$(grep -o 'http://127\.0\.0\.1:[0-9]*/demo/edit/1W3ZZU1Qvua02H' "$DEMO_DIR/server.log" | head -n 1 || true)
export DEMO_EDIT

SHOT=${SHOT:-${CARGO_TARGET_DIR:-target}/browser-test/playground.png}
mkdir -p "$(dirname "$SHOT")"
CHROMIUM="$CHROMIUM" node scripts/browser/playground-test.mjs \
  "$DEMO_BASE" "http://localhost:$DEMO_PORT" "$SHOT"
echo "screenshots: ${SHOT%.png}{,-workbench,-error,-canvas,-nested,-markdown,-constructed,-captured,-not-sent,-mentions,-changes,-live}.png" >&2
