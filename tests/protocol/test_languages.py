"""The default languages the editors start Tandem for (each editor's own test holds its list to this one): each is
one the server completes in (documents.py's mapping of an editor's id lands on a language of context/document.py)."""
from lsp_server.context.document import LANGUAGES
from lsp_server.protocol.documents import LANGUAGE_IDS
from lsp_server.protocol.languages import DEFAULT_LANGUAGES


def test_every_default_language_is_one_the_server_completes_in():
    assert len(DEFAULT_LANGUAGES) == 18
    known = set(LANGUAGES.values())
    for lang in DEFAULT_LANGUAGES:
        assert LANGUAGE_IDS.get(lang.lsp_id, lang.lsp_id) in known, lang
    for field in ("lsp_id", "neovim", "helix"):
        names = [getattr(lang, field) for lang in DEFAULT_LANGUAGES if getattr(lang, field)]
        assert len(names) == len(set(names)), field

