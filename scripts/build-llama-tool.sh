#!/usr/bin/env bash
# Builds one tool of the llama.cpp that llama-cpp-python 0.3.36 vendors (e.g. llama-server,
# llama-speculative-simple) into the Tandem cache, once, and prints its path. The sources: fetch-llama-sources.sh.
set -euo pipefail
TOOL=${1:?usage: build-llama-tool.sh TOOL}
VERSION=0.3.36
CACHE=${TANDEM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tandem}
DEST="$CACHE/llama.cpp-$VERSION"
BIN="$DEST/build/bin/$TOOL"
if [ ! -x "$BIN" ]; then
  bash "$(dirname "$0")/fetch-llama-sources.sh" >/dev/null
  NOAMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"   # see install-llama-cpp.sh
  cmake -S "$DEST" -B "$DEST/build" -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DGGML_NATIVE=ON \
    -DCMAKE_C_FLAGS="$NOAMX" -DCMAKE_CXX_FLAGS="$NOAMX" -DCMAKE_BUILD_TYPE=Release >&2
  cmake --build "$DEST/build" -j"$(nproc)" --target "$TOOL" >&2
fi
echo "$BIN"
