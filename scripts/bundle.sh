#!/usr/bin/env bash
# Packages the release build of the desktop app as a .deb: target/release/bundle/deb/.
# The Tauri CLI's bundler wants tauri.conf.json beside src-tauri/Cargo.toml, and this project
# keeps it at the root (design.md), so the package is laid out here with dpkg-deb. Its name,
# version, description and icon come from tauri.conf.json, the one source of truth.
set -euo pipefail
cd "$(dirname "$0")/.."

conf() { python3 -c "import json,sys; c=json.load(open('tauri.conf.json')); print(eval(sys.argv[1]))" "$1"; }
name=ratelockr
product=$(conf "c['productName']")
version=$(conf "c['version']")
summary=$(conf "c['bundle']['shortDescription']")
binary=target/release/ratelockr-app
[[ -x "$binary" ]] || { echo "bundle: build first: cargo build --release -p ratelockr-app" >&2; exit 1; }
arch=$(dpkg --print-architecture)

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
chmod 755 "$root"
install -Dm755 "$binary" "$root/usr/bin/ratelockr-app"
for size in 32x32 128x128 256x256 512x512; do
  install -Dm644 "src-tauri/icons/$size.png" "$root/usr/share/icons/hicolor/$size/apps/ratelockr-app.png"
done
install -d "$root/usr/share/applications" "$root/DEBIAN"
cat >"$root/usr/share/applications/ratelockr-app.desktop" <<DESKTOP
[Desktop Entry]
Type=Application
Name=$product
Comment=$summary
Exec=ratelockr-app
Icon=ratelockr-app
Categories=Development;
Terminal=false
DESKTOP
cat >"$root/DEBIAN/control" <<CONTROL
Package: $name
Version: $version
Architecture: $arch
Maintainer: RateLockr developers
Section: devel
Priority: optional
Depends: libwebkit2gtk-4.1-0, libgtk-3-0, redis-server
Description: $summary
 Tune, compare and watch Redis-backed rate limiters: token bucket, sliding window log and
 fixed window side by side, with a traffic simulator, live charts and CSV export.
CONTROL
out=target/release/bundle/deb
mkdir -p "$out"
dpkg-deb --root-owner-group --build "$root" "$out/${name}_${version}_${arch}.deb" >/dev/null
echo "bundle: $out/${name}_${version}_${arch}.deb"
