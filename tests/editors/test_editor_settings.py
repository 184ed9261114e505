"""The editors' declared settings agree with the server's: every setting the server reads is declared in the VS Code
extension's package.json (so it has a UI and validation there), with the server's own default."""
import json
from dataclasses import fields

from conftest import ROOT
from lsp_server.service.settings import Settings, _snake

PACKAGE = ROOT / "editors" / "vscode" / "package.json"
EXTENSION_ONLY = {"serverPath"}


def test_vscode_declares_every_server_setting_with_its_default():
    props = json.loads(PACKAGE.read_text())["contributes"]["configuration"]["properties"]
    declared = {k.removeprefix("tandem."): v for k, v in props.items() if k.removeprefix("tandem.") not in EXTENSION_ONLY}
    server = Settings()
    assert {_snake(k) for k in declared} == {f.name for f in fields(Settings)}
    for key, spec in declared.items():
        want = getattr(server, _snake(key))
        want = list(want) if isinstance(want, tuple) else want
        assert spec["default"] == want, f"tandem.{key}: package.json says {spec['default']!r}, the server {want!r}"
        # what a machine may hold alone (a model file, a URL the code goes to) cannot come from a workspace
        if _snake(key) in Settings.USER_ONLY:
            assert spec.get("scope") == "machine", key
    # and the server takes package.json's defaults as they are
    assert Settings().merged({k: v["default"] for k, v in declared.items()}) == server
