#!/usr/bin/env bash
# Copies the llama.cpp sources that llama-cpp-python 0.3.36 vendors, trimmed to what libllama with the CPU and
# CUDA backends and gguf-py need, to DEST/llama.cpp (about 30 MB of 170: no models, docs, tests, tools,
# examples or other backends), for a machine that can reach nothing: the device machine takes at most 64 MiB.
set -euo pipefail
DEST=${1:?usage: trim.sh DEST}
SRC=$(bash "$(dirname "$0")/../fetch-llama-sources.sh")
rm -rf "$DEST/llama.cpp" && mkdir -p "$DEST/llama.cpp"
keep_backends="ggml-cpu ggml-cuda ggml-blas"
excludes=(--exclude=./build --exclude=./models --exclude=./docs --exclude=./tests --exclude=./tools
          --exclude=./examples --exclude=./pocs --exclude=./app --exclude=./media --exclude=./benches
          --exclude=./common --exclude=./scripts --exclude=./conversion --exclude=./.devops --exclude=./.github
          --exclude=./vendor/cpp-httplib --exclude='*.gguf')
for b in "$SRC"/ggml/src/ggml-*/; do
  name=$(basename "$b")
  case " $keep_backends " in *" $name "*) ;; *) excludes+=(--exclude="./ggml/src/$name") ;; esac
done
(cd "$SRC" && tar -cf - "${excludes[@]}" .) | (cd "$DEST/llama.cpp" && tar -xf -)
# the backends' CMake list names every backend's folder only when it is enabled; the others are absent here
du -sm "$DEST/llama.cpp" | cut -f1 | xargs -I{} echo "trimmed llama.cpp sources: {} MB in $DEST/llama.cpp" >&2
