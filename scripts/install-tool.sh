#!/usr/bin/env bash
# Installs `tandem` as a command of its own, as developer tools are installed: with pipx, or `uv tool install`
# where there is no pipx, from a wheel of the package (the one given, else one built here from the checkout).
# llama-cpp-python comes from the wheel install-llama-cpp.sh builds for this CPU (once, cached; the same flags as
# `make`), the rest from the package registry. No development venv is needed: a throwaway venv of $PYTHON
# (default python3; Tandem needs 3.11 or later) builds the wheels, and the tool's environment uses that Python.
# Usage: scripts/install-tool.sh [TANDEM_WHEEL]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
WHEEL=${1:-}
if command -v pipx >/dev/null 2>&1; then installer=pipx
elif command -v uv >/dev/null 2>&1; then installer=uv
else
  echo "install-tool: neither pipx nor uv is on the PATH: install one (python3 -m pip install --user pipx)," \
       "or use the checkout's .venv/bin/tandem" >&2
  exit 1
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "install-tool: Tandem needs Python 3.11 or later; $PYTHON is $("$PYTHON" -V 2>&1 || echo missing)" \
       "(PYTHON=python3.12 make tool chooses another)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PYTHON" -m venv "$tmp/venv"
WHEEL_DIR_OUT="$tmp/house" bash scripts/install-llama-cpp.sh "$tmp/venv/bin/python"
HOUSE=$(cat "$tmp/house")
echo "llama-cpp-python: the wheel in $HOUSE"
if [ -z "$WHEEL" ]; then
  "$tmp/venv/bin/python" -m pip wheel -q --no-deps -w "$tmp/dist" .
  WHEEL=$(ls "$tmp"/dist/tandem_lsp-*.whl)
fi
if [ $installer = pipx ]; then
  pipx install --force --python "$PYTHON" --pip-args "--find-links '$HOUSE' --only-binary llama-cpp-python" "$WHEEL"
else
  uv tool install --force --python "$PYTHON" --find-links "$HOUSE" --no-build-package llama-cpp-python "$WHEEL"
fi
echo "tandem is installed as a command: run 'tandem models pull' once; editors start 'tandem serve'"
