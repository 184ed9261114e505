"""What became of each suggestion shown: taken (the client's accept), typed through, or dismissed. A suggestion
is dismissed when the next edit of its document does not go on with it (typed over, or an edit elsewhere:
every editor hides ghost text then), when a suggestion at another place replaces it (the cursor moved), or when
the client says so (`tandem/didDismiss`: Esc where the client can tell). Clients report accepts; dismissals are
read from the edits, so every client's are counted, including those of clients that report nothing."""
from __future__ import annotations

from dataclasses import dataclass

from .predictor import Recent


@dataclass(frozen=True)
class _Shown:
    prefix: str
    suffix: str
    text: str

    def typed(self, text: str) -> str | None:
        """What the document `text` has typed (or taken) of this suggestion at its place; None where it does not go
        on with it (typed over, or edited elsewhere)."""
        if not (text.startswith(self.prefix) and text.endswith(self.suffix)
                and len(text) >= len(self.prefix) + len(self.suffix)):
            return None
        typed = text[len(self.prefix):len(text) - len(self.suffix)]
        return typed if self.text.startswith(typed) or typed.startswith(self.text) else None


class Outcomes:
    def __init__(self, stats):
        self.stats = stats
        self._shown: dict[str, _Shown] = {}
        self._recent: dict[str, Recent] = {}   # what became of each document's last suggestions (predictor.py)

    def recent(self, uri: str) -> Recent | None:
        return self._recent.get(uri)

    def _fate(self, uri: str, taken: bool) -> None:
        self._recent.setdefault(uri, Recent()).add(taken)
        if not taken:
            self.stats.dismissed += 1

    def shown(self, uri: str, prefix: str, suffix: str, text: str) -> None:
        old = self._shown.get(uri)
        if old is not None and old.typed(prefix + suffix) is None:
            self._fate(uri, False)   # replaced by a suggestion elsewhere: the cursor left it
        self._shown[uri] = _Shown(prefix, suffix, text)

    def edited(self, uri: str, text: str) -> None:
        s = self._shown.get(uri)
        if s is None:
            return
        typed = s.typed(text)
        if typed is not None and len(typed) < len(s.text):
            return   # still shown, the rest of it
        del self._shown[uri]
        self._fate(uri, typed is not None)   # typed (or taken) to its end, or typed over

    def accepted(self, uri: str | None) -> None:
        """Taken (all of it; a partial accept keeps the rest shown)."""
        if uri is not None and self._shown.pop(uri, None) is not None:
            self._fate(uri, True)

    def dismissed(self, uri: str | None) -> bool:
        """The client says the suggestion shown was dismissed; False where none was shown there."""
        if uri is None or self._shown.pop(uri, None) is None:
            return False
        self._fate(uri, False)
        return True

    def forget(self, uri: str) -> None:
        self._shown.pop(uri, None)
        self._recent.pop(uri, None)
