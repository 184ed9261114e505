"""The editors on PATH, their versions, and whether Tandem's extension or plugin appears installed in each (where a
look at a folder or a file can tell; None where it cannot)."""
from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

VERSION_WAIT_S = 3.0   # `code --version` starts Electron: about a second


@dataclass(frozen=True)
class EditorFound:
    name: str
    path: str | None          # None: not on PATH
    version: str | None
    tandem: bool | None       # Tandem's extension or plugin found; None: cannot tell cheaply
    where: str                # where that was looked for

    def as_dict(self) -> dict:
        return asdict(self)


def _home(var: str, default: str) -> Path:
    return Path(os.environ.get(var) or Path.home() / default)


# an extension's folder is <publisher>.<name>-<version> (editors/vscode/package.json)
EXTENSION_ID = "tandem-lsp.tandem"


def _vscode_like(folder: Path) -> tuple[bool, str]:
    return any(folder.glob(f"{EXTENSION_ID}-*")), str(folder)


def _neovim() -> tuple[bool, str]:
    data, config = _home("XDG_DATA_HOME", ".local/share") / "nvim", _home("XDG_CONFIG_HOME", ".config") / "nvim"
    places = [*data.glob("site/pack/*/*/*tandem*"), *data.glob("lazy/*tandem*"), *config.glob("pack/*/*/*tandem*"),
              *data.glob("plugged/*tandem*")]
    return bool(places), f"{data}/site/pack, {data}/lazy, {config}/pack"


def _helix() -> tuple[bool, str]:
    path = _home("XDG_CONFIG_HOME", ".config") / "helix" / "languages.toml"
    try:
        return "tandem" in path.read_text(errors="replace"), str(path)
    except OSError:
        return False, str(path)


def _tandem(name: str) -> tuple[bool | None, str]:
    if name == "code":
        return _vscode_like(Path.home() / ".vscode" / "extensions")
    if name == "code-server":
        return _vscode_like(_home("XDG_DATA_HOME", ".local/share") / "code-server" / "extensions")
    if name == "codium":
        return _vscode_like(Path.home() / ".vscode-oss" / "extensions")
    if name == "nvim":
        return _neovim()
    if name == "hx":
        return _helix()
    return None, ""


def _version(path: str) -> str | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=VERSION_WAIT_S,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = (out.stdout or out.stderr).strip().splitlines()
    return first[0].strip() if first else None


def _one(name: str) -> EditorFound:
    path = shutil.which(name)
    tandem, where = _tandem(name)
    return EditorFound(name, path, _version(path) if path else None, tandem if path else None, where)


EDITORS = ("code", "code-server", "codium", "nvim", "hx")


def editors_found() -> list[EditorFound]:
    with ThreadPoolExecutor(len(EDITORS)) as pool:
        return list(pool.map(_one, EDITORS))
