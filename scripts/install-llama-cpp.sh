#!/usr/bin/env bash
# Builds llama-cpp-python from source once per CPU kind and installs it into the given Python.
# The built wheel is kept in the Tandem cache under a key made of the CPU's feature flags and the build
# options, so a second install is a copy, and a machine with other CPU features never gets a wheel
# it cannot run. The flags per platform (AMX off where the CPU reports it, Metal on Apple Silicon, a GPU backend
# by TANDEM_GPU=cuda|vulkan|metal|off) come from llama-platform.sh; TANDEM_CMAKE_ARGS is added last.
# Usage: install-llama-cpp.sh PYTHON | install-llama-cpp.sh --print-cmake-args
set -euo pipefail
. "$(dirname "$0")/llama-platform.sh"
PY=${1:?usage: install-llama-cpp.sh PYTHON | --print-cmake-args}
VERSION=0.3.36
CACHE=${TANDEM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tandem}
PLATFORM_ARGS=$(tandem_cmake_args)
# one string, as scikit-build-core reads CMAKE_ARGS (split like a shell): a flag with spaces is quoted
ARGS="-DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF"
while IFS= read -r a; do
  case "$a" in *" "*) ARGS="$ARGS '$a'" ;; ?*) ARGS="$ARGS $a" ;; esac
done <<< "$PLATFORM_ARGS"
ARGS="$ARGS${TANDEM_CMAKE_ARGS:+ $TANDEM_CMAKE_ARGS}"
if [ "$PY" = --print-cmake-args ]; then echo "$ARGS"; exit 0; fi
FLAGS=$(tandem_cpu_flags)
KEY=$(printf '%s\n%s\n%s\n' "$VERSION" "$ARGS" "$FLAGS" | tandem_sha256 | cut -c1-16)
HOUSE="$CACHE/wheels/llama-cpp-$KEY"
# install-tool.sh installs the same wheel into pipx's or uv's environment
if [ -n "${WHEEL_DIR_OUT:-}" ]; then echo "$HOUSE" > "$WHEEL_DIR_OUT"; fi
STAMP="$HOUSE/.installed-$(echo "$PY" | tandem_sha256 | cut -c1-8)"
if "$PY" -c "import llama_cpp, sys; sys.exit(0 if llama_cpp.__version__ == '$VERSION' else 1)" 2>/dev/null \
   && [ -f "$STAMP" ]; then
  exit 0
fi
if ! ls "$HOUSE"/llama_cpp_python-$VERSION-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python $VERSION for this CPU (about 6-10 minutes on 2 cores, once)..." >&2
  echo "CMAKE_ARGS: $ARGS" >&2
  rm -rf "$HOUSE.tmp" && mkdir -p "$HOUSE.tmp"
  CMAKE_ARGS="$ARGS" CMAKE_BUILD_PARALLEL_LEVEL=$(tandem_nproc) \
    "$PY" -m pip wheel --no-deps --no-cache-dir --no-binary llama-cpp-python \
    -w "$HOUSE.tmp" "llama-cpp-python==$VERSION"
  rm -rf "$HOUSE" && mv "$HOUSE.tmp" "$HOUSE"
fi
"$PY" -m pip install --no-deps --force-reinstall -q "$HOUSE"/llama_cpp_python-$VERSION-*.whl
touch "$STAMP"
