#!/usr/bin/env bash
# Installs `tandem` as a command of its own, as developer tools are installed: with pipx, or `uv tool install`
# where there is no pipx. llama-cpp-python comes from the wheel install-llama-cpp.sh built for this CPU (built
# here first if need be, once; the same flags as `make`), the rest from the package registry.
# Usage: scripts/install-tool.sh [PYTHON]   (the Python that builds the wheel; default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-.venv/bin/python}
OUT=$(mktemp)
WHEEL_DIR_OUT=$OUT bash scripts/install-llama-cpp.sh "$PY"
HOUSE=$(cat "$OUT")
rm -f "$OUT"
if command -v pipx >/dev/null 2>&1; then
  pipx install --force --pip-args "--find-links $HOUSE --only-binary llama-cpp-python" .
elif command -v uv >/dev/null 2>&1; then
  uv tool install --force --find-links "$HOUSE" .
else
  echo "install-tool: neither pipx nor uv is on the PATH: install one (python3 -m pip install --user pipx)," \
       "or use the checkout's .venv/bin/tandem" >&2
  exit 1
fi
echo "tandem is installed as a command: run 'tandem models pull' once; editors start 'tandem serve'"
