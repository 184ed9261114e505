"""The VS Code extension's manifest agrees with the server: every setting the server reads is declared in
package.json (so it has a UI and validation there), with the server's own default and a description; the basics come
first in a section of their own; the extension starts for the server's one list of default languages."""
import json
import logging
from dataclasses import fields

from conftest import ROOT
from lsp_server.protocol.languages import DEFAULT_LANGUAGES
from lsp_server.service.settings import Settings, _snake

PACKAGE = ROOT / "editors" / "vscode" / "package.json"
EXTENSION_ONLY = {"serverPath", "logLevel"}
BASICS = {"enabled", "languages", "target", "draft", "gpu", "backend", "exclude"}


def manifest() -> dict:
    return json.loads(PACKAGE.read_text())


def sections() -> list[dict]:
    return manifest()["contributes"]["configuration"]


def properties() -> dict:
    return {k.removeprefix("tandem."): v for s in sections() for k, v in s["properties"].items()}


def test_vscode_declares_every_server_setting_with_its_default():
    declared = {k: v for k, v in properties().items() if k not in EXTENSION_ONLY}
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


def test_every_setting_says_what_it_does_and_the_basics_come_first():
    for key, spec in properties().items():
        assert (spec.get("description") or spec.get("markdownDescription") or "").strip(), f"tandem.{key}"
    first, advanced = sorted(sections(), key=lambda s: s["order"])
    assert (first["title"], advanced["title"]) == ("Tandem", "Tandem: Advanced")
    basics = {k.removeprefix("tandem.") for k in first["properties"]}
    assert BASICS | EXTENSION_ONLY <= basics and len(basics) <= 12, basics
    assert not basics & {k.removeprefix("tandem.") for k in advanced["properties"]}


def test_the_log_level_is_what_the_server_reads_from_TANDEM_LOG():
    spec = properties()["logLevel"]
    # lsp_server/protocol/app.py: a logging level's name, any case
    assert all(isinstance(getattr(logging, v.upper(), None), int) for v in spec["enum"]), spec["enum"]
    assert spec["default"] == "info" and {"debug", "info", "warning", "error"} <= set(spec["enum"])


def test_the_extension_starts_for_the_servers_default_languages():
    events = manifest()["activationEvents"]
    assert events == [f"onLanguage:{lang.lsp_id}" for lang in DEFAULT_LANGUAGES]


def test_integer_settings_are_integers_with_the_servers_bounds():
    """VS Code's settings UI and its JSON validation refuse what the server would refuse: a fractional count, a size
    beyond its bounds."""
    from lsp_server.service.settings import BOUNDS
    server = Settings()
    for key, spec in properties().items():
        if key in EXTENSION_ONLY:
            continue
        value = getattr(server, _snake(key))
        if isinstance(value, int) and not isinstance(value, bool):
            assert spec["type"] == "integer", key
            if _snake(key) in BOUNDS:
                assert (spec.get("minimum"), spec.get("maximum")) == BOUNDS[_snake(key)], key
        else:
            assert spec["type"] != "integer", key


def test_a_workspace_cannot_choose_the_program_nor_in_an_untrusted_workspace_what_it_takes():
    """serverPath is the user's machine's own: a workspace's settings.json cannot point it at a program it brings.
    In a workspace not trusted, the settings a workspace's tandem.toml may only narrow are restricted (their
    workspace values are not taken), beside the machine-scoped ones VS Code never takes from a workspace."""
    from lsp_server.service.layers import LOWER_ONLY
    props = properties()
    assert props["serverPath"]["scope"] == "machine"
    trust = manifest()["capabilities"]["untrustedWorkspaces"]
    assert trust["supported"] == "limited" and trust["description"]
    restricted = {k.removeprefix("tandem.") for k in trust["restrictedConfigurations"]}
    narrowed = {k for k in props if _snake(k) in LOWER_ONLY + ("exclude", "languages", "enabled")}
    assert {k for k in narrowed if props[k].get("scope") != "machine"} <= restricted
    assert all(props[k].get("scope") != "machine" for k in restricted)
