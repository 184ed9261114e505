"""What this machine and its llama.cpp build can do: GPU offload and its backend, the CPU features llama.cpp was
built for, and a measured CPU speed. Read by `gpu: auto`, `tandem doctor` and the lab's ledger."""
from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass

from .config import GpuMode

# llama.cpp clamps the count to the model's layers (+1 for the output layer): this many means all of them
ALL_LAYERS = 0x7FFFFFFF
# the names llama_print_system_info gives the GPU backends, as a person calls them
GPU_BACKENDS = {"CUDA": "CUDA", "Metal": "Metal", "MTL": "Metal", "Vulkan": "Vulkan", "HIP": "ROCm",
                "ROCm": "ROCm", "SYCL": "SYCL", "OpenCL": "OpenCL", "CANN": "CANN", "MUSA": "MUSA"}


@dataclass(frozen=True)
class LlamaBuild:
    version: str
    gpu_offload: bool
    gpu_backend: str | None   # None where the build has none, or its name cannot be told
    cpu_features: tuple[str, ...]
    system_info: str


def llama_build() -> LlamaBuild:
    import llama_cpp
    info = llama_cpp.llama_print_system_info()
    info = info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)
    # "CPU : SSE3 = 1 | AVX2 = 1 | ... | CUDA : ARCHS = 890 | ...": a backend's name, then its features
    backends, features, current = [], [], ""
    for part in (p.strip() for p in info.split("|")):
        if " : " in part:
            current, part = (s.strip() for s in part.split(" : ", 1))
            backends.append(current)
        if current == "CPU" and part.endswith("= 1"):
            features.append(part.split("=")[0].strip())
    gpu = next((GPU_BACKENDS[b] for b in backends if b in GPU_BACKENDS), None)
    return LlamaBuild(version=getattr(llama_cpp, "__version__", "?"),
                      gpu_offload=bool(llama_cpp.llama_supports_gpu_offload()), gpu_backend=gpu,
                      cpu_features=tuple(features), system_info=info.strip())


def gpu_offload() -> bool:
    import llama_cpp
    return bool(llama_cpp.llama_supports_gpu_offload())


def offload_layers(mode: GpuMode | str) -> int:
    """The layers of each model that `gpu` puts on the GPU: all of them with `auto` on a build that can, else 0."""
    return ALL_LAYERS if GpuMode(mode) == GpuMode.AUTO and gpu_offload() else 0


def machine_speed(seconds: float = 0.5) -> dict:
    """A fixed CPU workload's rate now (single-precision matrix products, the kind of work a CPU decode does): a
    figure to set two machines, or one machine on two days, side by side, not a model speed."""
    import numpy as np
    a = np.random.default_rng(0).standard_normal((256, 256), dtype=np.float32)
    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a @ a
        done += 1
    gflops = done * 2 * 256 ** 3 / (time.perf_counter() - t0) / 1e9
    return {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "gflops": round(gflops, 1)}
