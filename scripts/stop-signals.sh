#!/usr/bin/env bash
# Ctrl-C (SIGINT) and SIGTERM close the desktop app and stop its embedded redis-server: no
# frozen window, no orphaned Redis (issue 20). Runs the built app (target/debug/ratelockr-app)
# under the X display it is given (scripts/e2e.sh calls it inside Xvfb), once per signal.
set -euo pipefail
cd "$(dirname "$0")/.."
APP=${RATELOCKR_APP:-target/debug/ratelockr-app}

for sig in INT TERM; do
  data=$(mktemp -d)
  # No Redis configured and none reachable on a private URL: the app starts its embedded one.
  REDIS_URL=redis://127.0.0.1:1 RATELOCKR_DATA_DIR=$data "$APP" >"$data/app.log" 2>&1 &
  app=$!
  redis=""
  for _ in $(seq 1 300); do
    redis=$(pgrep -P "$app" -x redis-server || true)
    [[ -n "$redis" ]] && break
    sleep 0.1
  done
  [[ -n "$redis" ]] || { echo "stop-signals: the app started no embedded redis-server" >&2; cat "$data/app.log" >&2; kill -9 "$app"; exit 1; }
  kill -s "$sig" "$app"
  for _ in $(seq 1 200); do
    kill -0 "$app" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$app" 2>/dev/null; then
    echo "stop-signals: SIG$sig left the app running (a frozen window)" >&2
    kill -9 "$app" "$redis" 2>/dev/null || true
    exit 1
  fi
  wait "$app" || true
  for _ in $(seq 1 50); do
    kill -0 "$redis" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$redis" 2>/dev/null; then
    echo "stop-signals: SIG$sig left the embedded redis-server (pid $redis) running" >&2
    kill -9 "$redis" || true
    exit 1
  fi
  echo "stop-signals: SIG$sig closed the app and its redis-server"
  rm -rf "$data"
done
