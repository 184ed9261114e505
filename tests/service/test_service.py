"""The service's pieces that need no model: the typing-through cache and settings."""
import pytest

from lsp_server.service.cache import TypingCache
from lsp_server.service.settings import Settings, SettingsError


def test_typing_through_serves_the_rest():
    c = TypingCache()
    c.store("a", "x = ", "\n", "compute(1, 2)")
    assert c.lookup("a", "x = ", "\n") == "compute(1, 2)"
    assert c.lookup("a", "x = comp", "\n") == "ute(1, 2)"
    # typed something else, typed it all, another suffix, another document
    assert c.lookup("a", "x = y", "\n") is None
    assert c.lookup("a", "x = compute(1, 2)", "\n") is None
    assert c.lookup("a", "x = comp", "\nother") is None
    assert c.lookup("b", "x = comp", "\n") is None
    assert (c.hits, c.lookups) == (2, 6)


def test_a_hit_reports_the_gate_s_verdict_on_the_answer_it_is_the_rest_of():
    c = TypingCache()
    verdict = {"score": 0.4, "features": {"low": 1.0}}
    c.store("a", "x = ", "\n", "compute(1, 2)", confidence=verdict)
    c.store("a", "y = ", "\n", "2")
    assert c.hit("a", "x = comp", "\n") == ("ute(1, 2)", verdict)
    assert c.hit("a", "y = ", "\n") == ("2", None) and c.hit("a", "z", "\n") is None


def test_a_done_entry_says_nothing_is_to_come_at_exactly_its_place():
    # the model's text ended by writing the code below again: after accepting it, the next suggestion is none
    c = TypingCache()
    c.store("a", "x = ", "\nreturn x\n", "1")
    c.store("a", "x = 1", "\nreturn x\n", "", done=True)
    c.store("a", "y = ", "\n", "")   # an empty answer alone is not stored
    assert c.lookup("a", "x = 1", "\nreturn x\n") == ""
    assert c.lookup("a", "x = 12", "\nreturn x\n") is None and c.lookup("a", "x = 1", "\n") is None
    assert c.lookup("a", "x = ", "\nreturn x\n") == "1" and c.lookup("a", "y = ", "\n") is None


def test_the_newest_entry_wins_and_the_cache_is_bounded():
    c = TypingCache(per_document=2, total=3)
    c.store("a", "p", "", "one")
    c.store("a", "p", "", "two")
    c.store("a", "p", "", "three")
    assert c.lookup("a", "p", "") == "three"
    assert len(c) == 2
    c.store("b", "q", "", "x")
    c.store("c", "r", "", "y")
    assert len(c) <= 3
    c.forget("c")
    assert c.lookup("c", "r", "") is None


def test_settings_merge_camel_and_snake_case():
    s = Settings().merged({"maxTokens": 50, "draft_max": 4, "languages": {"markdown": False}})
    assert (s.max_tokens, s.draft_max) == (50, 4)
    assert not s.language_enabled("markdown") and s.language_enabled("python")
    assert not s.merged({"enabled": False}).language_enabled("python")
    assert Settings().merged({"languages": {"*": False, "go": True}}).language_enabled("go")


@pytest.mark.parametrize("bad, words", [({"maxTokens": "many"}, "expected int"),
                                        ({"noSuch": 1}, "unknown setting"),
                                        ({"draftMin": 9, "draftMax": 2}, "draft limits"),
                                        ({"fastSimilarTokens": -1}, "fastSimilarTokens -1: out of its bounds"),
                                        ({"contextSize": 10**8}, "contextSize 100000000: out of its bounds"),
                                        ({"maxTokens": 2.5}, "expected a whole number"),
                                        ({"fastSimilarTokens": "many"}, "expected int"),
                                        ({"contextSize": 512, "maxTokens": 600}, "too small for maxTokens"),
                                        ("not an object", "must be an object")])
def test_bad_settings_say_what_is_wrong(bad, words):
    with pytest.raises(SettingsError) as e:
        Settings().merged(bad)
    assert words in str(e.value)


def test_model_settings_ask_for_a_reload():
    s = Settings()
    assert s.merged({"contextSize": 8192}).models_differ(s)
    assert not s.merged({"maxTokens": 10}).models_differ(s)


def test_prompt_budgets_larger_than_the_context_are_accepted_and_shrunk():
    # the pipeline shrinks them to fit (and says so); only a completion that cannot fit is refused
    s = Settings().merged({"contextSize": 512})
    from lsp_server.prompt import PromptBudget
    b = PromptBudget(s.prefix_tokens, s.suffix_tokens, s.context_tokens).within(300)
    assert b.total <= 300 and b.prefix_tokens > b.context_tokens > b.suffix_tokens > 0


@pytest.mark.parametrize("bad, words", [({"backend": "gpu-box:8012"}, "http:// or https://"),
                                        ({"backendKind": "tgi"}, "choose from llama-server, openai"),
                                        ({"backendTimeoutMs": 0}, "backendTimeoutMs")])
def test_bad_backend_settings_say_what_is_wrong(bad, words):
    with pytest.raises(SettingsError) as e:
        Settings().merged(bad)
    assert words in str(e.value)


def test_backend_settings_reload_and_make_a_backend_config():
    s = Settings().merged({"backend": "http://127.0.0.1:8012", "backendTimeoutMs": 2500})
    assert s.models_differ(Settings())
    b = s.backend_config()
    assert (b.url, b.kind, b.timeout_s) == ("http://127.0.0.1:8012", "llama-server", 2.5)
    assert Settings().backend_config() is None
