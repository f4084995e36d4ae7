#!/usr/bin/env bash
# Runs the end-to-end test of the desktop app: Xvfb, tauri-driver (with WebKitWebDriver) and
# the webdriverio test in ui/e2e/, then scripts/stop-signals.sh (Ctrl-C and SIGTERM close it).
# Expects the app built (target/debug/ratelockr-app) and `npm ci` done in ui/. Cleans up
# everything it started. E2E_ONLY=<regex> runs the matching tests alone (while working on one).
# The screenshots land in target/e2e-shots/ (docs/ with `make screenshots`), for a look.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$HOME/.cargo/bin:$PATH"
command -v tauri-driver >/dev/null || cargo install tauri-driver --locked
WEBKIT_DRIVER=$(command -v WebKitWebDriver || true)
[[ -n "$WEBKIT_DRIVER" ]] || { echo "e2e: WebKitWebDriver missing (scripts/deps.sh e2e)" >&2; exit 1; }
[[ -x target/debug/ratelockr-app ]] || { echo "e2e: build the app first (cargo build -p ratelockr-app)" >&2; exit 1; }

run_inside_x() {
  local log port
  log=$(mktemp)
  # The app inherits these from tauri-driver; the test reads them too.
  RATELOCKR_DATA_DIR=$(mktemp -d)
  RATELOCKR_EXPORT_DIR=$(mktemp -d)
  # The Replay panel's open dialog answers with the sample log.
  RATELOCKR_OPEN_LOG=$PWD/samples/access.log.gz
  # The Watch card's open dialog answers with a policies file the test writes there.
  RATELOCKR_OPEN_POLICIES=$RATELOCKR_EXPORT_DIR/watch-policies.toml
  # The save dialog answers with the path the test writes in this file, while it exists.
  RATELOCKR_E2E_SAVE_ANSWER=$RATELOCKR_EXPORT_DIR/save-answer.txt
  RATELOCKR_SCREENSHOT_DIR=${RATELOCKR_SCREENSHOT_DIR:-$PWD/target/e2e-shots}
  mkdir -p "$RATELOCKR_SCREENSHOT_DIR"
  export RATELOCKR_DATA_DIR RATELOCKR_EXPORT_DIR RATELOCKR_OPEN_LOG RATELOCKR_OPEN_POLICIES RATELOCKR_E2E_SAVE_ANSWER RATELOCKR_SCREENSHOT_DIR
  # Free loopback ports for tauri-driver and the WebKitWebDriver behind it (4444/4445 by
  # default, which another test on the machine may hold).
  read -r port native < <(node -e '
    const net = require("net");
    const one = () => new Promise((ok) => { const s = net.createServer(); s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => ok(p)); }); });
    Promise.all([one(), one()]).then(([a, b]) => console.log(a, b));')
  tauri-driver --port "$port" --native-port "$native" --native-driver "$WEBKIT_DRIVER" >"$log" 2>&1 &
  DRIVER_PID=$!
  trap 'kill "$DRIVER_PID" 2>/dev/null || true; wait "$DRIVER_PID" 2>/dev/null || true; rm -rf "$RATELOCKR_DATA_DIR" "$RATELOCKR_EXPORT_DIR"' EXIT
  local status=0
  (cd ui && TAURI_DRIVER_URL="http://127.0.0.1:$port" node --test --test-reporter=spec ${E2E_ONLY:+--test-name-pattern="$E2E_ONLY"} e2e/app.e2e.test.mjs) || status=$?
  if [[ $status -ne 0 ]]; then
    echo "--- tauri-driver log ---" >&2
    tail -n 50 "$log" >&2
  fi
  rm -f "$log"
  # Ctrl-C and SIGTERM close the window and its embedded Redis (the whole run only).
  if [[ $status -eq 0 && -z "${E2E_ONLY:-}" ]]; then
    scripts/stop-signals.sh || status=$?
  fi
  return "$status"
}
if [[ "${1:-}" == "--inside-x" ]]; then
  run_inside_x
else
  # The screen is the window's size, so the screenshot is the window.
  xvfb-run -a -s "-screen 0 1360x900x24" "$0" --inside-x
fi
