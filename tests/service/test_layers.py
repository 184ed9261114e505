"""The settings' layers: defaults < the user's config.toml < the workspace's tandem.toml < the editor, the origin of
each setting in effect, the editor's layer replaced wholesale, what a workspace may not set, and bad layers left
out with the others still applied."""
from dataclasses import fields

import pytest

from lsp_server.engine.config import GpuMode
from lsp_server.service.gate import Suggestions
from lsp_server.service.layers import DEFAULT, EDITOR, Layers
from lsp_server.service.settings import Settings, SettingsError, _snake, camel


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    (tmp_path / "cfg" / "tandem").mkdir(parents=True)
    (tmp_path / "ws").mkdir()
    return tmp_path


def user_file(home):
    return home / "cfg" / "tandem" / "config.toml"


def origins(layers: Layers) -> dict:
    return {e.key: e.origin for e in layers.entries()}


def test_each_setting_comes_from_the_highest_layer_that_sets_it(home):
    user_file(home).write_text('maxTokens = 20\nspeculation = false\nbackend = "http://team:8012"\n')
    (home / "ws" / "tandem.toml").write_text("[tandem]\nmax_tokens = 30\nprefixTokens = 512\n")
    layers = Layers.load(str(home / "ws"))
    s = layers.effective()
    assert (s.max_tokens, s.speculation, s.prefix_tokens, s.backend) == (30, False, 512, "http://team:8012")
    got = origins(layers)
    assert got["maxTokens"] == got["prefixTokens"] == str(home / "ws" / "tandem.toml")
    assert got["speculation"] == got["backend"] == str(user_file(home))
    assert got["timeBudgetMs"] == DEFAULT and not layers.problems()

    edited = layers.with_editor({"maxTokens": 64, "gpu": "off", "serverPath": "/x", "logLevel": "debug"})
    s = edited.effective()
    assert (s.max_tokens, s.gpu, s.prefix_tokens) == (64, GpuMode.OFF, 512)
    assert origins(edited)["maxTokens"] == origins(edited)["gpu"] == EDITOR
    assert edited.origin("prefix_tokens") == str(home / "ws" / "tandem.toml")
    # the next change replaces the editor's layer: a key it no longer holds falls back to the files' value
    again = edited.with_editor({"gpu": "off"})
    assert again.effective().max_tokens == 30 and again.origin("maxTokens") == str(home / "ws" / "tandem.toml")
    assert again.with_editor({}).effective() == layers.effective()
    # every setting is listed once, camelCase, with a value JSON can write
    entries = again.entries()
    assert [_snake(e.key) for e in entries] == [f.name for f in fields(Settings)]
    assert {e.key: e.value for e in entries}["drafters"] == list(Settings().drafters)
    assert {e.key: e.value for e in entries}["gpu"] == "off"


def test_camel_case_names_go_back_to_the_settings_names():
    for f in fields(Settings):
        assert _snake(camel(f.name)) == f.name
    assert camel("kv_store_mib") == "kvStoreMiB"


def test_a_workspace_file_may_not_choose_the_backend_or_model_files(home):
    user_file(home).write_text('backend = "http://team:8012"\nbackendApiKeyEnv = "TEAM_KEY"\n')
    (home / "ws" / "tandem.toml").write_text('[tandem]\nbackend = "http://elsewhere:1"\ndraft = "x.gguf"\n'
                                             'backendApiKeyEnv = "AWS_SECRET"\nbackendTimeoutMs = 3000\n'
                                             'maxTokens = 30\n')
    told = []
    layers = Layers.load(str(home / "ws"), warn=told.append)
    s = layers.effective()
    # the user's own choices stand; the workspace's harmless settings apply
    assert (s.backend, s.backend_api_key_env, s.draft) == ("http://team:8012", "TEAM_KEY", "")
    assert (s.max_tokens, s.backend_timeout_ms) == (30, 3000)
    assert layers.origin("backend") == str(user_file(home)) and layers.origin("draft") == DEFAULT
    assert len(told) == 1 and all(k in told[0] for k in ("backend", "backendApiKeyEnv", "draft", "config.toml"))
    assert "maxTokens" not in told[0] and layers.notes == told
    # the user's own file and the editor may set them all
    assert layers.with_editor({"draft": "none"}).effective().draft == "none"
    (home / "ws" / "tandem.toml").unlink()
    told.clear()
    assert Layers.load(str(home / "ws"), warn=told.append).effective().backend == "http://team:8012" and not told


def test_a_bad_value_is_refused_alone_naming_its_setting_and_layer(home):
    user_file(home).write_text("maxTokens = 20\n")
    ws = str(home / "ws" / "tandem.toml")
    (home / "ws" / "tandem.toml").write_text("maxTokens = 30\ndraftMax = 'many'\n")
    layers = Layers.load(str(home / "ws"))
    # the file's other value applies
    assert layers.effective().max_tokens == 30 and layers.origin("maxTokens") == ws
    [problem] = layers.problems()
    assert problem.startswith(ws) and "draftMax" in problem and "expected int" in problem
    assert layers.effective().draft_max == Settings().draft_max and layers.origin("draftMax") == DEFAULT
    # a file that is not TOML is left out whole
    user_file(home).write_text("maxTokens = [\n")
    (home / "ws" / "tandem.toml").unlink()
    layers = Layers.load(str(home / "ws"))
    assert any("config.toml" in p for p in layers.problems()) and layers.effective() == Settings()
    # values that do not fit together: the one that does not fit is refused, naming what does not fit
    user_file(home).write_text("contextSize = 512\nmaxTokens = 600\nspeculation = false\n")
    layers = Layers.load(str(home / "ws"))
    [problem] = layers.problems()
    assert "too small for maxTokens" in problem and str(user_file(home)) in problem
    s = layers.effective()
    assert (s.context_size, s.max_tokens, s.speculation) == (512, Settings().max_tokens, False)
    # one that fits only beside another of its file is taken with it, in any order
    user_file(home).write_text("draftMin = 20\ndraftMax = 24\n")
    layers = Layers.load(str(home / "ws"))
    assert (layers.effective().draft_min, layers.effective().draft_max) == (20, 24) and not layers.problems()


def test_sizes_and_counts_have_bounds_in_every_layer(home):
    user_file(home).write_text("contextSize = 100000000\nkvStoreMiB = 10000000\nthreads = 8\n")
    layers = Layers.load(None).with_editor({"engineIdleMinutes": 100000, "maxTokens": 64,
                                            "backendMaxInFlight": 0})
    s = layers.effective()
    assert (s.context_size, s.kv_store_mib, s.threads) == (Settings().context_size, Settings().kv_store_mib, 8)
    assert (s.engine_idle_minutes, s.max_tokens) == (Settings().engine_idle_minutes, 64)
    problems = layers.problems()
    assert len(problems) == 4, problems
    for key, layer in [("contextSize", str(user_file(home))), ("kvStoreMiB", str(user_file(home))),
                       ("engineIdleMinutes", "editor settings"), ("backendMaxInFlight", "editor settings")]:
        assert any(p.startswith(layer) and key in p and "bounds" in p for p in problems), (key, problems)


def test_a_fractional_integer_is_refused_alone(home):
    layers = Layers.load(None).with_editor({"maxTokens": 2.5, "gpu": "off", "timeBudgetMs": 900.0})
    s = layers.effective()
    assert (s.max_tokens, s.gpu, s.time_budget_ms) == (Settings().max_tokens, GpuMode.OFF, 900)
    [problem] = layers.problems()
    assert "editor settings" in problem and "maxTokens" in problem and "whole number" in problem
    assert layers.origin("gpu") == EDITOR and layers.origin("maxTokens") == DEFAULT


def test_a_bad_editor_layer_is_refused_value_by_value(home):
    user_file(home).write_text("contextSize = 1024\n")
    layers = Layers.load(None).with_editor({"maxTokens": 64})
    for bad, words in [({"noSuchSetting": 1}, "noSuchSetting"), ({"gpu": "cuda"}, "choose from auto, off"),
                       ({"maxTokens": 2000}, "too small for maxTokens")]:
        edited = layers.with_editor({**bad, "prefixTokens": 300})
        [problem] = edited.problems()
        assert words in problem and problem.startswith("editor settings"), problem
        assert edited.effective().prefix_tokens == 300 and edited.origin("contextSize") == str(user_file(home))
    # not a set of settings at all: refused whole, the layers stay as they were
    with pytest.raises(SettingsError, match="must be an object"):
        layers.with_editor("text")
    assert layers.effective().max_tokens == 64 and layers.origin("contextSize") == str(user_file(home))
    assert Layers.load(None).with_editor([]).effective().context_size == 1024   # Lua's empty table


def test_a_workspace_file_may_only_narrow_what_the_user_allows(home):
    user_file(home).write_text('exclude = ["*.secret"]\nlanguages = { markdown = false }\ncontextSize = 8192\n'
                               'kvStoreMiB = 512\nthreads = 2\n')
    ws = home / "ws" / "tandem.toml"
    ws.write_text('exclude = []\nlanguages = { markdown = true, python = false }\ncontextSize = 100000\n'
                  'kvStoreMiB = 4096\nthreads = 0\nengineIdleMinutes = 600\nmaxFileBytes = 1000\n')
    told = []
    layers = Layers.load(str(home / "ws"), warn=told.append)
    s = layers.effective()
    assert s.exclude == ("*.secret",)   # an empty list in the repository does not re-include the user's files
    assert not s.language_enabled("markdown") and not s.language_enabled("python") and s.language_enabled("go")
    assert (s.context_size, s.kv_store_mib, s.threads) == (8192, 512, 2)
    assert s.engine_idle_minutes == Settings().engine_idle_minutes and s.max_file_bytes == 1000   # lowered: taken
    # said as notes (the repository's doing, not the user's: nothing of the user's is left out)
    assert told == layers.notes and not layers.problems()
    for key in ("languages", "contextSize", "kvStoreMiB", "threads", "engineIdleMinutes"):
        assert any(n.startswith(str(ws)) and key in n for n in told), (key, told)
    assert not any("maxFileBytes" in n or "exclude" in n for n in told), told
    # its own exclusions add to the user's, and stay whatever the editor lists
    ws.write_text('exclude = ["generated/"]\ncontextSize = 2048\nkvStoreMiB = 0\nthreads = 1\n')
    layers = Layers.load(str(home / "ws"))
    s = layers.effective()
    assert s.exclude == ("*.secret", "generated/") and (s.context_size, s.kv_store_mib, s.threads) == (2048, 0, 1)
    assert not layers.problems() and not layers.notes
    assert layers.with_editor({"exclude": ["*.log"]}).effective().exclude == ("*.log", "*.secret", "generated/")
    # completion turned off by the user stays off
    user_file(home).write_text("enabled = false\n")
    ws.write_text("enabled = true\n")
    layers = Layers.load(str(home / "ws"))
    assert not layers.effective().enabled and any("enabled" in n for n in layers.notes)
    # the user's editor may turn on what the repository turned off
    ws.write_text("enabled = false\n")
    assert Layers.load(str(home / "ws")).with_editor({"enabled": True}).effective().enabled


def test_gpu_replaces_the_layer_counts():
    off = Settings().merged({"gpu": "off"}).engine_config()
    assert (off.n_gpu_layers, off.n_gpu_layers_draft) == (0, 0)
    import llama_cpp
    auto = Settings().engine_config()
    assert (auto.n_gpu_layers > 0) == bool(llama_cpp.llama_supports_gpu_offload())
    assert auto.n_gpu_layers == auto.n_gpu_layers_draft
    assert Settings().merged({"gpu": "off"}).models_differ(Settings())
    with pytest.raises(SettingsError, match="gpuLayers"):
        Settings().merged({"gpuLayers": 20})


def test_a_workspace_the_editor_does_not_trust_has_no_say(home):
    user_file(home).write_text("maxTokens = 20\n")
    (home / "ws" / "tandem.toml").write_text("maxTokens = 30\n")
    told = []
    layers = Layers.load(str(home / "ws"), warn=told.append, trusted=False)
    assert layers.effective().max_tokens == 20 and layers.origin("maxTokens") == str(user_file(home))
    assert len(told) == 1 and "not trusted" in told[0] and "tandem.toml" in told[0]
    # the client's own word is not a setting
    assert layers.with_editor({"workspaceTrusted": False}).effective() == layers.effective()


def test_suggestions_come_through_every_layer_and_a_workspace_may_only_quiet_them(home):
    assert Layers.load(str(home / "ws")).effective().suggestions == Suggestions.BALANCED
    user_file(home).write_text('suggestions = "eager"\n')
    (home / "ws" / "tandem.toml").write_text('suggestions = "quiet"\n')
    layers = Layers.load(str(home / "ws"))
    assert layers.effective().suggestions == Suggestions.QUIET
    assert origins(layers)["suggestions"] == str(home / "ws" / "tandem.toml")
    edited = layers.with_editor({"suggestions": "balanced"})
    assert edited.effective().suggestions == Suggestions.BALANCED and origins(edited)["suggestions"] == EDITOR
    # a repository's file may not make them louder than the user's settings
    user_file(home).write_text('suggestions = "quiet"\n')
    (home / "ws" / "tandem.toml").write_text('suggestions = "eager"\n')
    told: list[str] = []
    layers = Layers.load(str(home / "ws"), warn=told.append)
    assert layers.effective().suggestions == Suggestions.QUIET
    assert any("suggestions" in n and "quieter" in n for n in layers.notes + told), (layers.notes, told)
    # a value that is none of the three is refused alone, saying the choices
    user_file(home).unlink()
    bad = Layers.load(None).with_editor({"suggestions": "loud", "maxTokens": 64})
    assert bad.effective().suggestions == Suggestions.BALANCED and bad.effective().max_tokens == 64
    assert any("suggestions" in p and "eager, balanced, quiet" in p for p in bad.problems()), bad.problems()
