"""`make tool`: tandem installed as a command of its own with pipx (installed here from the package registry into
a throwaway venv), llama-cpp-python from the wheel built for this CPU, nothing compiled again; the command runs
and sees the model cache."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT

# the slow tier (it installs from the package registries): with the models' tests in `make test`
pytestmark = pytest.mark.models


def test_pipx_installs_tandem_as_a_command(tmp_path):
    venv = tmp_path / "pipx-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "pipx"], check=True, timeout=600)
    env = dict(os.environ, PIPX_HOME=str(tmp_path / "home"), PIPX_BIN_DIR=str(tmp_path / "bin"),
               PATH=f"{venv / 'bin'}:{os.environ['PATH']}")
    r = subprocess.run(["bash", "scripts/install-tool.sh", sys.executable], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "building llama-cpp-python" not in r.stderr   # the wheel make built, not compiled again
    tandem = tmp_path / "bin" / "tandem"
    out = subprocess.run([str(tandem), "models", "list"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "target" in out.stdout, out.stdout + out.stderr
    # its own environment, not the checkout's
    shown = subprocess.run([str(tandem), "--version"], capture_output=True, text=True).stdout
    assert shown.startswith("tandem ") and (tmp_path / "home" / "venvs" / "tandem-lsp").is_dir()
