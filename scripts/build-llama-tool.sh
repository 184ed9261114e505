#!/usr/bin/env bash
# Builds one tool of the llama.cpp that llama-cpp-python 0.3.36 vendors (e.g. llama-server,
# llama-speculative-simple) into the Tandem cache, once, and prints its path. The sources: fetch-llama-sources.sh.
# The flags are install-llama-cpp.sh's (llama-platform.sh, TANDEM_GPU included). The build folder is not keyed by
# them: a tool once built is kept; delete $CACHE/llama.cpp-0.3.36/build to build it again with other flags.
set -euo pipefail
. "$(dirname "$0")/llama-platform.sh"
TOOL=${1:?usage: build-llama-tool.sh TOOL}
VERSION=0.3.36
CACHE=${TANDEM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tandem}
DEST="$CACHE/llama.cpp-$VERSION"
BIN="$DEST/build/bin/$TOOL"
if [ ! -x "$BIN" ]; then
  bash "$(dirname "$0")/fetch-llama-sources.sh" >/dev/null
  args=$(tandem_cmake_args)
  flags=()   # macOS's bash 3.2 has no mapfile
  while IFS= read -r a; do flags+=("$a"); done <<< "$args"
  cmake -S "$DEST" -B "$DEST/build" -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release \
    "${flags[@]}" >&2
  cmake --build "$DEST/build" -j"$(tandem_nproc)" --target "$TOOL" >&2
fi
echo "$BIN"
