"""The llama.cpp build flags per platform (scripts/llama-platform.sh, through install-llama-cpp.sh
--print-cmake-args): AMX off only on x86-64 Linux whose CPU reports it, Metal on Apple Silicon, no x86 flags on
arm64, the GPU backend TANDEM_GPU names; the string is parsed as scikit-build-core parses CMAKE_ARGS. The
platform is given by TANDEM_UNAME_S/TANDEM_UNAME_M/TANDEM_CPU_FLAGS, so each case runs on any machine."""
import hashlib
import os
import shlex
import shutil
import subprocess

import pytest

from conftest import ROOT

NOAMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
X86_AMX = "flags\t\t: fpu vme sse4_2 avx2 avx512f amx_bf16 avx512_fp16 amx_tile amx_int8"
X86 = "flags\t\t: fpu vme sse4_2 avx2 avx512f avx512_vnni"
ARM = "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics asimddp sve"
APPLE = "Apple M2 hw.optional.arm.FEAT_DotProd hw.optional.arm.FEAT_I8MM hw.optional.neon"


def cmake_args(os_name: str | None, arch: str | None, cpu: str | None, **env) -> list[str]:
    r = run_args(os_name, arch, cpu, **env)
    assert r.returncode == 0, r.stderr
    return shlex.split(r.stdout)


def run_args(os_name, arch, cpu, **env) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("TANDEM_GPU", "TANDEM_CMAKE_ARGS", "TANDEM_UNAME",
                                                                 "TANDEM_CPU_FLAGS"))}
    for k, v in (("TANDEM_UNAME_S", os_name), ("TANDEM_UNAME_M", arch), ("TANDEM_CPU_FLAGS", cpu)):
        if v is not None:
            e[k] = v
    e.update(env)
    return subprocess.run(["bash", "scripts/install-llama-cpp.sh", "--print-cmake-args"], cwd=ROOT, env=e,
                          capture_output=True, text=True, timeout=30)


def test_linux_x86_64_turns_amx_off_only_where_the_cpu_reports_it():
    with_amx = cmake_args("Linux", "x86_64", X86_AMX)
    assert f"-DCMAKE_C_FLAGS={NOAMX}" in with_amx and f"-DCMAKE_CXX_FLAGS={NOAMX}" in with_amx
    without = cmake_args("Linux", "x86_64", X86)
    assert not [a for a in without if "amx" in a or a.startswith("-DCMAKE_C")]
    for args in (with_amx, without):
        assert "-DGGML_NATIVE=ON" in args and "-DLLAMA_CURL=OFF" in args
        assert not [a for a in args if a.startswith(("-DGGML_METAL", "-DGGML_CUDA", "-DGGML_VULKAN", "-DCMAKE_OSX"))]


def test_linux_aarch64_gets_no_x86_flags_even_from_a_flag_list_naming_amx():
    for cpu in (ARM, ARM + " amx_tile"):
        args = cmake_args("Linux", "aarch64", cpu)
        assert "-DGGML_NATIVE=ON" in args
        assert not [a for a in args if "-m" in a.split("=", 1)[-1] or a.startswith(("-DGGML_METAL", "-DCMAKE_OSX"))]


def test_apple_silicon_builds_metal_for_arm64_with_no_x86_flags_unless_the_gpu_is_off():
    args = cmake_args("Darwin", "arm64", APPLE)
    assert {"-DGGML_METAL=ON", "-DCMAKE_OSX_ARCHITECTURES=arm64", "-DGGML_NATIVE=ON"} <= set(args)
    assert not [a for a in args if "amx" in a or a.startswith(("-DCMAKE_C_FLAGS", "-DCMAKE_CXX_FLAGS"))]
    off = cmake_args("Darwin", "arm64", APPLE, TANDEM_GPU="off")
    assert "-DGGML_METAL=OFF" in off and "-DGGML_METAL=ON" not in off
    # an Intel Mac: llama.cpp would turn Metal on by itself, the default here is the CPU
    intel = cmake_args("Darwin", "x86_64", "GenuineIntel AVX2")
    assert "-DGGML_METAL=OFF" in intel and "-DCMAKE_OSX_ARCHITECTURES=arm64" not in intel


@pytest.mark.parametrize("gpu,flag", [("cuda", "-DGGML_CUDA=ON"), ("vulkan", "-DGGML_VULKAN=ON")])
def test_tandem_gpu_adds_its_backend(gpu, flag):
    for os_name, arch, cpu in (("Linux", "x86_64", X86), ("Linux", "aarch64", ARM)):
        args = cmake_args(os_name, arch, cpu, TANDEM_GPU=gpu)
        assert flag in args and "-DGGML_METAL=ON" not in args


def test_a_gpu_the_platform_cannot_have_or_an_unknown_one_is_refused_clearly():
    r = run_args("Linux", "x86_64", X86, TANDEM_GPU="metal")
    assert r.returncode != 0 and "TANDEM_GPU=metal needs macOS" in r.stderr and not r.stdout
    r = run_args("Linux", "x86_64", X86, TANDEM_GPU="rocm")
    assert r.returncode != 0 and "expected cuda, vulkan, metal or off" in r.stderr


def test_tandem_cmake_args_come_last_so_they_win():
    args = cmake_args("Linux", "x86_64", X86_AMX, TANDEM_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON")
    assert args[-2:] == ["-DGGML_NATIVE=OFF", "-DGGML_AVX2=ON"]


def test_without_overrides_the_choice_follows_this_machine():
    lines = open("/proc/cpuinfo").read().splitlines() if os.path.exists("/proc/cpuinfo") else []
    flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
    args = cmake_args(None, None, None)
    amx = (os.uname().sysname, os.uname().machine) == ("Linux", "x86_64") and any(f.startswith("amx") for f in flags)
    assert (f"-DCMAKE_C_FLAGS={NOAMX}" in args) == amx


def platform(script: str, path: str | None = None) -> str:
    env = dict(os.environ, PATH=path) if path else None
    return subprocess.run(["bash", "-c", f". scripts/llama-platform.sh; {script}"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True, timeout=30).stdout.strip()


def test_hashing_and_core_count_work_without_sha256sum_and_nproc(tmp_path):
    assert platform("printf abc | tandem_sha256") == hashlib.sha256(b"abc").hexdigest()
    assert platform("tandem_nproc") == str(len(os.sched_getaffinity(0)))
    # a PATH as on macOS: no sha256sum, no nproc (shasum and getconf are what a Mac has)
    have = ["bash", "cut", "grep", "tr", "uname", "awk", "shasum", "getconf"]
    missing = [t for t in ("shasum", "getconf") if not shutil.which(t)]
    assert not missing, f"this machine lacks {missing}, which the fallbacks are checked with"
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in have:
        (bin_ / tool).symlink_to(shutil.which(tool))
    assert platform("command -v sha256sum nproc || true", str(bin_)) == ""
    assert platform("printf abc | tandem_sha256", str(bin_)) == hashlib.sha256(b"abc").hexdigest()
    assert platform("tandem_nproc", str(bin_)) == str(os.cpu_count())
