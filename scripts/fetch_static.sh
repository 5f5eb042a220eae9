#!/usr/bin/env bash
# Vendor the browser scripts the book needs into _vendor/ (git-ignored; served as the book's static files), from the npm registry,
# so that the rendered book works offline: MathJax 3 (math) and RequireJS + the Jupyter widgets
# HTML manager (static widgets). Safe to run again: it skips when the pinned versions are present.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS="mathjax@3.2.2 requirejs@2.3.7 @jupyter-widgets/html-manager@1.0.15"
dest=_vendor
if [ "$(cat "$dest/.versions" 2>/dev/null)" = "$PKGS" ]; then
  echo "[static] vendored scripts are up to date"; exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "[static] fetching $PKGS"
(cd "$tmp" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund $PKGS)
rm -rf "$dest" && mkdir -p "$dest/mathjax" "$dest/requirejs" "$dest/html-manager"
cp -r "$tmp/node_modules/mathjax/es5/." "$dest/mathjax/"
cp "$tmp/node_modules/requirejs/require.js" "$dest/requirejs/"
cp -r "$tmp/node_modules/@jupyter-widgets/html-manager/dist/." "$dest/html-manager/"
echo "$PKGS" > "$dest/.versions"
