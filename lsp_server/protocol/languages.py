"""The languages the editors start Tandem for by default: each one's LSP language id (VS Code's), Neovim filetype
and Helix language name (None where that editor has none). The editors' own lists are held equal to this one by
their tests; documents.py maps an id to the language the server completes (service/settings.py EDITOR_LANGUAGE_IDS)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    lsp_id: str
    neovim: str | None
    helix: str | None


DEFAULT_LANGUAGES: tuple[Language, ...] = (
    Language("python", "python", "python"),
    Language("typescript", "typescript", "typescript"),
    Language("typescriptreact", "typescriptreact", "tsx"),
    Language("javascript", "javascript", "javascript"),
    Language("javascriptreact", "javascriptreact", "jsx"),
    Language("go", "go", "go"),
    Language("rust", "rust", "rust"),
    Language("java", "java", "java"),
    Language("c", "c", "c"),
    Language("cpp", "cpp", "cpp"),
    Language("csharp", "cs", "c-sharp"),
    Language("lua", "lua", "lua"),
    Language("ruby", "ruby", "ruby"),
    Language("php", "php", "php"),
    Language("kotlin", "kotlin", "kotlin"),
    Language("swift", "swift", "swift"),
    Language("scala", "scala", "scala"),
    Language("shellscript", "sh", "bash"),
)
