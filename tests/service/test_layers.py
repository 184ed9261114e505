"""The settings' layers: defaults < the user's config.toml < the workspace's tandem.toml < the editor, the origin of
each setting in effect, the editor's layer replaced wholesale, what a workspace may not set, and bad layers left
out with the others still applied."""
from dataclasses import fields

import pytest

from lsp_server.engine.config import GpuMode
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


def test_a_bad_layer_is_left_out_whole_and_said_so_the_others_apply(home):
    user_file(home).write_text("maxTokens = 20\n")
    (home / "ws" / "tandem.toml").write_text("maxTokens = 30\ndraftMax = 'many'\n")
    layers = Layers.load(str(home / "ws"))
    assert layers.effective().max_tokens == 20 and layers.origin("maxTokens") == str(user_file(home))
    [problem] = layers.problems()
    assert "tandem.toml" in problem and "draftMax" in problem and "expected int" in problem
    # a file that is not TOML
    user_file(home).write_text("maxTokens = [\n")
    layers = Layers.load(str(home / "ws"))
    assert any("config.toml" in p for p in layers.problems()) and layers.effective().max_tokens == Settings().max_tokens
    # a file whose values do not fit together: left out, naming what does not fit
    user_file(home).write_text("contextSize = 512\nmaxTokens = 600\n")
    (home / "ws" / "tandem.toml").unlink()
    layers = Layers.load(str(home / "ws"))
    assert "too small for maxTokens" in layers.problems()[0] and layers.effective() == Settings()


def test_a_bad_editor_layer_is_refused_and_the_layers_stay_as_they_were(home):
    user_file(home).write_text("contextSize = 1024\n")
    layers = Layers.load(None).with_editor({"maxTokens": 64})
    for bad, words in [({"noSuchSetting": 1}, "noSuchSetting"), ({"gpu": "cuda"}, "choose from auto, off"),
                       ({"maxTokens": 2000}, "too small for maxTokens"), ("text", "must be an object")]:
        with pytest.raises(SettingsError) as e:
            layers.with_editor(bad)
        assert words in str(e.value) and "editor settings" in str(e.value)
    assert layers.effective().max_tokens == 64 and layers.origin("contextSize") == str(user_file(home))
    assert Layers.load(None).with_editor([]).effective().context_size == 1024   # Lua's empty table


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
