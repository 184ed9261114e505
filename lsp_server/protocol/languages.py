"""The languages the editor clients start the server for by default: one list, each with its name in the LSP (VS
Code's language id), Neovim (its filetype) and Helix (its language name); None where the client has none. The
clients' own lists are held equal to it by tests."""
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
