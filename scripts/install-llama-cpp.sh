#!/usr/bin/env bash
# Builds llama-cpp-python from source once per CPU kind and installs it into the given Python.
# The built wheel is kept in the Tandem cache under a key made of the CPU's feature flags and the build
# options, so a second install is a copy, and a machine with other CPU features never gets a wheel
# it cannot run. AMX is switched off: on the VMs here the CPU reports it but executing it raises SIGILL.
set -euo pipefail
PY=${1:?usage: install-llama-cpp.sh PYTHON}
VERSION=0.3.36
CACHE=${TANDEM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tandem}
NOAMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
ARGS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DCMAKE_C_FLAGS='$NOAMX' -DCMAKE_CXX_FLAGS='$NOAMX' ${TANDEM_CMAKE_ARGS:-}"
FLAGS=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || uname -m)
KEY=$(printf '%s\n%s\n%s\n' "$VERSION" "$ARGS" "$FLAGS" | sha256sum | cut -c1-16)
HOUSE="$CACHE/wheels/llama-cpp-$KEY"
# install-tool.sh installs the same wheel into pipx's or uv's environment
if [ -n "${WHEEL_DIR_OUT:-}" ]; then echo "$HOUSE" > "$WHEEL_DIR_OUT"; fi
if "$PY" -c "import llama_cpp, sys; sys.exit(0 if llama_cpp.__version__ == '$VERSION' else 1)" 2>/dev/null \
   && [ -f "$HOUSE/.installed-$(echo "$PY" | sha256sum | cut -c1-8)" ]; then
  exit 0
fi
if ! ls "$HOUSE"/llama_cpp_python-$VERSION-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python $VERSION for this CPU (about 6-10 minutes on 2 cores, once)..." >&2
  mkdir -p "$HOUSE.tmp"
  CMAKE_ARGS="$ARGS" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
    "$PY" -m pip wheel --no-deps --no-cache-dir --no-binary llama-cpp-python \
    -w "$HOUSE.tmp" "llama-cpp-python==$VERSION"
  rm -rf "$HOUSE" && mv "$HOUSE.tmp" "$HOUSE"
fi
"$PY" -m pip install --no-deps --force-reinstall -q "$HOUSE"/llama_cpp_python-$VERSION-*.whl
touch "$HOUSE/.installed-$(echo "$PY" | sha256sum | cut -c1-8)"
