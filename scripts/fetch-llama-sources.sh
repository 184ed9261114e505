#!/usr/bin/env bash
# Fetches, once, the llama.cpp sources that llama-cpp-python 0.3.36 vendors (its sdist, from the package
# registry) into the Tandem cache, and prints their folder. Shared by every tool built from them.
set -euo pipefail
VERSION=0.3.36
CACHE=${TANDEM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tandem}
DEST="$CACHE/llama.cpp-$VERSION"
if [ ! -f "$DEST/CMakeLists.txt" ]; then
  PY=${PYTHON:-python3}
  tmp=$(mktemp -d)
  "$PY" -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$tmp" >&2
  tar -xzf "$tmp"/llama_cpp_python-$VERSION.tar.gz -C "$tmp"
  rm -rf "$DEST" && mkdir -p "$CACHE" && mv "$tmp/llama_cpp_python-$VERSION/vendor/llama.cpp" "$DEST"
  rm -rf "$tmp"
fi
echo "$DEST"
