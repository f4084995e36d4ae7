#!/usr/bin/env bash
# Measures the webview's CPU and main-thread lag during a 200,000-request run at the maximum
# rate in the real window (docs/app-performance.md). Needs the app built and the E2E packages
# (make test-e2e's prerequisites). REQUESTS=<n> changes the run's size.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
inside() {
  RATELOCKR_DATA_DIR=$(mktemp -d)
  RATELOCKR_EXPORT_DIR=$(mktemp -d)
  export RATELOCKR_DATA_DIR RATELOCKR_EXPORT_DIR
  port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
  native=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
  tauri-driver --port "$port" --native-port "$native" --native-driver "$(command -v WebKitWebDriver)" >/dev/null 2>&1 &
  trap 'kill $! 2>/dev/null || true; rm -rf "$RATELOCKR_DATA_DIR" "$RATELOCKR_EXPORT_DIR"' EXIT
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/status" >/dev/null && break; sleep 0.2; done
  (cd ui && TAURI_DRIVER_URL="http://127.0.0.1:$port" node e2e/measure-webview.mjs)
}
if [[ "${1:-}" == "--inside-x" ]]; then inside; else xvfb-run -a -s "-screen 0 1360x900x24" "$0" --inside-x; fi
