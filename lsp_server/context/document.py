"""A document's text, its language, and the split at a cursor position."""
from __future__ import annotations

import os
from dataclasses import dataclass

MAX_FILE_BYTES = 4 << 20   # larger files are refused with a message, not read into a prompt

LANGUAGES = {
    ".py": "python", ".pyi": "python", ".ts": "typescript", ".tsx": "tsx", ".js": "javascript",
    ".jsx": "javascript", ".mjs": "javascript", ".go": "go", ".rs": "rust", ".java": "java", ".c": "c",
    ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".cs": "csharp", ".rb": "ruby", ".php": "php",
    ".lua": "lua", ".sh": "bash", ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml",
    ".kt": "kotlin", ".swift": "swift", ".scala": "scala", ".sql": "sql", ".html": "html", ".css": "css",
}


class DocumentError(ValueError):
    """Bad input about a document or a position; the message is for the user."""


def language_for_path(path: str) -> str:
    return LANGUAGES.get(os.path.splitext(path)[1].lower(), "text")


@dataclass
class Document:
    path: str
    text: str
    language: str = ""

    def __post_init__(self):
        if not self.language:
            self.language = language_for_path(self.path)

    @classmethod
    def read(cls, path: str, language: str = "") -> "Document":
        try:
            size = os.path.getsize(path)
        except OSError as e:
            raise DocumentError(f"{path}: cannot read ({e.strerror})") from e
        if size > MAX_FILE_BYTES:
            raise DocumentError(f"{path}: {size:,} bytes is larger than the {MAX_FILE_BYTES:,}-byte limit")
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data[:8192]:
            raise DocumentError(f"{path}: looks like a binary file (NUL bytes); not completing")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DocumentError(f"{path}: not UTF-8 text (byte {e.start})") from e
        return cls(path, text, language)

    def offset(self, line: int, col: int) -> int:
        """Character offset of a 0-based line and 0-based column (in characters)."""
        lines = self.text.split("\n")
        if not 0 <= line < len(lines):
            raise DocumentError(f"line {line + 1} is outside the file ({len(lines)} lines)")
        if not 0 <= col <= len(lines[line]):
            raise DocumentError(f"column {col + 1} is outside line {line + 1} "
                                f"({len(lines[line])} characters; the end of the line is column "
                                f"{len(lines[line]) + 1})")
        return sum(map(len, lines[:line])) + line + col   # the lines before it, each with its "\n"

    def split(self, line: int, col: int) -> tuple[str, str]:
        off = self.offset(line, col)
        return self.text[:off], self.text[off:]
