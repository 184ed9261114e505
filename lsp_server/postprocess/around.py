"""What a filter knows of the place a completion goes."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Around:
    prefix: str
    suffix: str
    language: str = "text"
    multiline: bool = True
    truncated: bool = False   # the generation hit its token limit or time budget mid-way

    @property
    def line_before(self) -> str:
        return self.prefix.rsplit("\n", 1)[-1]

    @property
    def line_after(self) -> str:
        return self.suffix.split("\n", 1)[0]
