#!/usr/bin/env bash
# Builds libllama from the trimmed sources (trim.sh) and the cost tool (costs.cpp) against it; with CUDA where
# an NVIDIA GPU and nvcc are found (CUDA_ARCH, default 90: Hopper, the H100 and H200), else for the CPU
# (GPU_COSTS_CUDA=1 or 0 decides instead). Prints the tool's path.
#   build.sh SRC BUILD     (SRC: the trimmed llama.cpp folder; BUILD: where the build goes)
set -euo pipefail
SRC=${1:?usage: build.sh SRC BUILD}
BUILD=${2:?usage: build.sh SRC BUILD}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../llama-platform.sh"
JOBS=${JOBS:-$(tandem_nproc)}
cuda=OFF
if [ "${GPU_COSTS_CUDA:-auto}" = 1 ] || { [ "${GPU_COSTS_CUDA:-auto}" = auto ] && command -v nvcc >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
  cuda=ON
fi
flags=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF
       -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
       -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DGGML_CUDA=$cuda)
if [ $cuda = ON ]; then
  flags+=(-DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" -DGGML_NATIVE=ON)
else
  flags+=(-DGGML_NATIVE=ON)
  cflags=$(tandem_cpu_cflags)   # AMX off where the CPU reports it (scripts/llama-platform.sh)
  if [ -n "$cflags" ]; then flags+=(-DCMAKE_C_FLAGS="$cflags" -DCMAKE_CXX_FLAGS="$cflags"); fi
fi
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$SRC" -B "$BUILD" "${gen[@]}" "${flags[@]}" >&2
cmake --build "$BUILD" -j"$JOBS" --target llama >&2
libs=$(dirname "$(find "$BUILD" -name 'libllama.so' | head -1)")
${CXX:-c++} -O2 -std=c++17 "$HERE/costs.cpp" -I"$SRC/include" -I"$SRC/ggml/include" -L"$libs" \
  -lllama -lggml -lggml-base -Wl,-rpath,"$libs" -o "$BUILD/tandem-costs" >&2
echo "$BUILD/tandem-costs"
