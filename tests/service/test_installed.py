"""tandem doctor's editors: found on PATH, and Tandem's extension told by its folder, whose name is the
extension's id (publisher.name in editors/vscode/package.json) and its version."""
import json
import os
from pathlib import Path

from lsp_server.service import installed

ROOT = Path(__file__).resolve().parents[2]


def test_the_extension_id_is_the_packages(tmp_path):
    pkg = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
    assert installed.EXTENSION_ID == f"{pkg['publisher']}.{pkg['name']}"


def test_vscode_with_the_extension_installed_and_without(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    code = bin_dir / "code"
    code.write_text("#!/bin/sh\necho 1.99.0\n")
    code.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("HOME", str(tmp_path))
    found = {e.name: e for e in installed.editors_found()}
    assert found["code"].path == str(code) and found["code"].version == "1.99.0"
    assert found["code"].tandem is False
    assert found["nvim"].path is None and found["nvim"].tandem is None
    (tmp_path / ".vscode" / "extensions" / f"{installed.EXTENSION_ID}-0.2.0").mkdir(parents=True)
    assert {e.name: e for e in installed.editors_found()}["code"].tandem is True
