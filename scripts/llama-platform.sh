# Sourced by the scripts that build llama.cpp (install-llama-cpp.sh, build-llama-tool.sh, gpu-costs/build.sh):
# what this platform is, which CMake flags llama.cpp gets here, and the portable forms of nproc and sha256sum
# (macOS has neither). TANDEM_UNAME_S, TANDEM_UNAME_M and TANDEM_CPU_FLAGS stand in for the machine's own
# answers, so that tests/repo/test_build_flags.py can ask what another platform would get.

tandem_os() { echo "${TANDEM_UNAME_S:-$(uname -s)}"; }
tandem_arch() { echo "${TANDEM_UNAME_M:-$(uname -m)}"; }

tandem_nproc() {
  nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || sysctl -n hw.ncpu 2>/dev/null || echo 2
}

# sha256 of stdin, hex only
tandem_sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum | cut -d' ' -f1
  else shasum -a 256 | cut -d' ' -f1; fi
}

# The CPU's feature flags, one line: they key the wheel cache (a CPU with other features gets its own build)
# and decide the AMX workaround.
tandem_cpu_flags() {
  if [ -n "${TANDEM_CPU_FLAGS:-}" ]; then echo "$TANDEM_CPU_FLAGS"; return; fi
  case "$(tandem_os)" in
    Darwin)
      # Intel Macs list their features in machdep.cpu; Apple Silicon names them hw.optional.arm.FEAT_*
      { sysctl -n machdep.cpu.brand_string machdep.cpu.features machdep.cpu.leaf7_features 2>/dev/null
        sysctl hw.optional 2>/dev/null | awk -F': ' '$2 == 1 { print $1 }'
      } | tr '\n' ' ' ;;
    *)
      # x86 says `flags`, arm64 `Features`
      grep -m1 -E '^(flags|Features)' /proc/cpuinfo 2>/dev/null || tandem_arch ;;
  esac
}

# metal on Apple Silicon, off elsewhere; TANDEM_GPU=cuda|vulkan|metal|off chooses
tandem_gpu() {
  local gpu=${TANDEM_GPU:-}
  if [ -z "$gpu" ]; then
    if [ "$(tandem_os)" = Darwin ] && [ "$(tandem_arch)" = arm64 ]; then gpu=metal; else gpu=off; fi
  fi
  case "$gpu" in
    cuda|vulkan|off) ;;
    metal) if [ "$(tandem_os)" != Darwin ]; then
             echo "TANDEM_GPU=metal needs macOS (this is $(tandem_os)); use cuda, vulkan or off" >&2; return 1
           fi ;;
    *) echo "TANDEM_GPU=$gpu: expected cuda, vulkan, metal or off" >&2; return 1 ;;
  esac
  echo "$gpu"
}

# -mno-amx-* where the CPU reports AMX: on the x86-64 Linux VMs this was written on, the CPU advertises it but
# executing it raises SIGILL, and GGML_NATIVE would use it. Empty elsewhere (clang on arm64 refuses x86 flags).
tandem_cpu_cflags() {
  if [ "$(tandem_os)" = Linux ] && [ "$(tandem_arch)" = x86_64 ] \
     && tandem_cpu_flags | grep -qE '(^|[[:space:]])amx'; then
    echo "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  fi
}

# The CMake flags a llama.cpp build gets on this platform, one per line (the caller quotes them as it needs):
# native CPU code, the CPU flags above, the GPU backend.
tandem_cmake_args() {
  local gpu cflags
  gpu=$(tandem_gpu) || return 1
  cflags=$(tandem_cpu_cflags)
  echo "-DGGML_NATIVE=ON"
  if [ -n "$cflags" ]; then
    echo "-DCMAKE_C_FLAGS=$cflags"
    echo "-DCMAKE_CXX_FLAGS=$cflags"
  fi
  if [ "$(tandem_os)" = Darwin ] && [ "$(tandem_arch)" = arm64 ]; then
    # an x86-64 Python under Rosetta would otherwise build an x86 library (llama-cpp-python's macOS advice)
    echo "-DCMAKE_OSX_ARCHITECTURES=arm64"
    echo "-DCMAKE_APPLE_SILICON_PROCESSOR=arm64"
  fi
  case "$gpu" in
    cuda) echo "-DGGML_CUDA=ON" ;;
    vulkan) echo "-DGGML_VULKAN=ON" ;;
    metal) echo "-DGGML_METAL=ON" ;;
  esac
  # llama.cpp turns Metal on by itself on macOS
  if [ "$(tandem_os)" = Darwin ] && [ "$gpu" != metal ]; then echo "-DGGML_METAL=OFF"; fi
}
