"""The release as a user gets it: the wheel and sdist built as `make dist` builds them (from the tracked files),
the wheel installed as `make tool` installs it (scripts/install-tool.sh: pipx, into a fresh PIPX_HOME and
PIPX_BIN_DIR, llama-cpp-python from the wheel built for this CPU, nothing compiled again, pip's cache on), then
`tandem --version`, `tandem doctor` and one completion, run outside the checkout with the model cache a user has.
It prints how long each step took."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from conftest import FIXTURES
from dist_build import build_dist, tracked_copy

# the slow tier: it builds, installs from the package registry (pip's cache) and loads the real models
pytestmark = pytest.mark.models


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_release_installs_with_pipx_and_completes_as_a_user_runs_it(tmp_path):
    import lsp_server
    took = {}
    t = time.perf_counter()
    sdist, wheel = build_dist(tracked_copy(tmp_path / "src"), tmp_path / "dist")   # the wheel is built from the sdist
    took["build sdist+wheel"] = time.perf_counter() - t

    home, bin_ = tmp_path / "pipx-home", tmp_path / "pipx-bin"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIPX_DEFAULT_PYTHON")}
    # pipx comes with the test extras, beside this Python
    env.update(PIPX_HOME=str(home), PIPX_BIN_DIR=str(bin_), PIPX_MAN_DIR=str(tmp_path / "pipx-man"),
               PATH=f"{Path(sys.executable).parent}:{env['PATH']}", PYTHON=sys.executable)
    t = time.perf_counter()
    r = subprocess.run(["bash", str(tmp_path / "src" / "scripts" / "install-tool.sh"), str(wheel)], env=env,
                       capture_output=True, text=True, timeout=900)
    took["pipx install"] = time.perf_counter() - t
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "building llama-cpp-python" not in r.stderr   # the wheel `make` built for this CPU, not compiled again

    # its own environment, with the llama.cpp library of that wheel
    (house,) = re.findall(r"llama-cpp-python: the wheel in (\S+)", r.stdout)
    (built,) = Path(house).glob("llama_cpp_python-*.whl")
    with zipfile.ZipFile(built) as z:
        lib = sha256(z.read("llama_cpp/lib/libllama.so"))
    (installed,) = (home / "venvs" / "tandem-lsp").glob("lib/python3.*/site-packages/llama_cpp/lib/libllama.so")
    assert sha256(installed.read_bytes()) == lib

    tandem = str(bin_ / "tandem")
    work = tmp_path / "work"
    work.mkdir()
    user = {k: v for k, v in env.items() if not k.startswith("PIPX_")} | {"PATH": f"{bin_}:{os.environ['PATH']}"}

    def run(*args, **over):
        t = time.perf_counter()
        out = subprocess.run([tandem, *args], cwd=work, env=user | over, capture_output=True, text=True,
                             timeout=600)
        took[args[0] + (" (no models)" if over else "")] = time.perf_counter() - t
        return out

    out = run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"tandem {lsp_server.__version__}", out.stdout + out.stderr
    # the health report: this version, in the tool's own Python, the models the user has; exit 1 where the
    # models are missing (completion is blocked)
    out = run("doctor", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    r = json.loads(out.stdout)
    assert r["ok"] and r["version"] == lsp_server.__version__
    assert r["python"]["executable"].startswith(str(home / "venvs" / "tandem-lsp"))
    assert {m["role"]: m["state"] for m in r["models"]["files"]}.get("target") == "ok", r["models"]
    out = run("doctor", TANDEM_CACHE_DIR=str(tmp_path / "empty-cache"))
    assert out.returncode == 1 and "tandem models pull" in out.stdout + out.stderr, out.stdout + out.stderr

    shutil.copy(FIXTURES / "demo" / "orders.py", work / "orders.py")
    out = run("complete", "orders.py", "--line", "40", "--col", "1", "--json")
    assert out.returncode == 0, out.stderr
    assert '"orderId": self.order_id' in json.loads(out.stdout)["completion"], out.stdout

    print("\nrelease test, seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in took.items()))
