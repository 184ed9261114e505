"""The default languages the editors start Tandem for (each editor's own test holds its list to this one): each is
one the server completes in (documents.py's mapping of an editor's id lands on a language of context/document.py)."""
from lsp_server.context.document import LANGUAGES
from lsp_server.service.settings import EDITOR_LANGUAGE_IDS as LANGUAGE_IDS, Settings
from lsp_server.protocol.languages import DEFAULT_LANGUAGES


def test_every_default_language_is_one_the_server_completes_in():
    assert len(DEFAULT_LANGUAGES) == 18
    known = set(LANGUAGES.values())
    for lang in DEFAULT_LANGUAGES:
        assert LANGUAGE_IDS.get(lang.lsp_id, lang.lsp_id) in known, lang
    for field in ("lsp_id", "neovim", "helix"):
        names = [getattr(lang, field) for lang in DEFAULT_LANGUAGES if getattr(lang, field)]
        assert len(names) == len(set(names)), field



def test_the_languages_setting_takes_the_editors_ids_or_the_servers_names():
    # VS Code's per-language switch writes its own id ("typescriptreact"); the server completes "tsx"
    off = Settings().merged({"languages": {"typescriptreact": False, "shellscript": False}})
    assert not off.language_enabled("tsx") and not off.language_enabled("bash")
    assert off.language_enabled("typescript") and off.language_enabled("python")
    # the server's own name wins over an editor id that maps to it, and "*" is the rest
    mixed = Settings().merged({"languages": {"javascriptreact": False, "javascript": True, "*": False}})
    assert mixed.language_enabled("javascript") and not mixed.language_enabled("go")
