"""Incremental document sync: 10,000 random edits over stdio (multi-byte characters, UTF-16 surrogate pairs, all
three line breaks, and separators an editor does not break lines at) leave the server's copy of the document identical to a shadow copy kept here."""
from __future__ import annotations

import hashlib
import random

import pytest

from conftest import FIXTURES
from rawlsp import RawServer

pytestmark = pytest.mark.models

EDITS = 10_000
URI = "file:///sync/shadow.py"
# ASCII code, two-byte and three-byte UTF-8, astral characters (a surrogate pair in UTF-16), tabs, the three
# line breaks, and separators that are not line breaks for an editor (Python's splitlines breaks at them)
ALPHABET = list("abcdefxyz_ ():=.,'0123456789") + ["é", "ß", "中", "文", "😀", "𝄞", "🐍", "\t", "\n", "\n", "\r\n",
                                                    "\r", "\u2028", "\x85", "\x0c"]
LINE_BREAKS = ("\r\n", "\n", "\r")


def position(text: str, offset: int) -> dict:
    """The LSP position of a character offset: lines end at \\n, \\r\\n or \\r; columns count UTF-16 units."""
    line, start, i = 0, 0, 0
    while i < offset:
        if text.startswith("\r\n", i) and i + 2 <= offset:
            line, start, i = line + 1, i + 2, i + 2
        elif text[i] in "\r\n":
            line, start, i = line + 1, i + 1, i + 1
        else:
            i += 1
    return {"line": line, "character": len(text[start:offset].encode("utf-16-le")) // 2}


def cut_point(text: str, rng: random.Random) -> int:
    """A random offset a client could address: never between the \\r and \\n of one line break."""
    while True:
        k = rng.randint(0, len(text))
        if not (0 < k < len(text) and text[k - 1] == "\r" and text[k] == "\n"):
            return k


def random_text(rng: random.Random) -> str:
    if rng.random() < 0.05:   # a paste
        return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(40, 200)))
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 6)))


def random_change(text: str, rng: random.Random) -> tuple[str, dict]:
    a = cut_point(text, rng)
    b = a
    if rng.random() < 0.45 and text:
        b = min(len(text), a + rng.randint(1, 25 if len(text) < 6000 else 400))
        if 0 < b < len(text) and text[b - 1] == "\r" and text[b] == "\n":
            b += 1
    new = "" if b > a and rng.random() < 0.5 else random_text(rng)
    change = {"range": {"start": position(text, a), "end": position(text, b)}, "text": new}
    return text[:a] + new + text[b:], change


@pytest.fixture(scope="module")
def server():
    s = RawServer()
    s.initialize({}, root=FIXTURES / "lsp")
    yield s
    s.close()


def server_copy(s: RawServer) -> dict:
    res = s.request("tandem/document", {"uri": URI, "text": True}, timeout=120)
    assert "result" in res, res
    return res["result"]


def test_ten_thousand_random_edits_keep_the_server_in_step(server: RawServer):
    rng = random.Random(20261129)
    shadow = (FIXTURES / "lsp" / "inventory.py").read_text()
    server.open(URI, shadow)
    version, edits, checks, answered = 1, 0, 0, 0
    while edits < EDITS:
        changes = []
        for _ in range(rng.choice((1, 1, 1, 2, 3))):   # several changes in one notification apply in order
            shadow, change = random_change(shadow, rng)
            changes.append(change)
        edits += len(changes)
        version += 1
        server.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": version},
                                                 "contentChanges": changes})
        if version % 200 == 0:   # completions in between, as an editor asks for them while typing
            p = position(shadow, cut_point(shadow, rng))
            res = server.wait(server.inline(URI, p["line"], p["character"]), timeout=120)
            assert "result" in res, res
            answered += 1
        if version % 1000 == 0:
            copy = server_copy(server)
            assert copy["version"] == version
            assert copy["text"] == shadow, f"out of step after {edits} edits"
            checks += 1
    copy = server_copy(server)
    data = shadow.encode("utf-8")
    assert (copy["text"], copy["bytes"], copy["sha256"]) == (shadow, len(data), hashlib.sha256(data).hexdigest())
    assert any(ord(c) > 0xFFFF for c in shadow) and "\r\n" in shadow and "\r" in shadow.replace("\r\n", "")
    assert "\u2028" in shadow
    assert answered >= 10 and checks >= 5
    assert server.alive()
    # nothing is kept per notification handled (pygls kept every one's future: 6,263 after these edits)
    stats = server.request("tandem/stats", {}, timeout=60)["result"]
    assert stats["memory"]["handlers_in_flight"] <= 2, stats["memory"]
    print(f"\nsync: {edits} edits in {version - 1} notifications, {checks + 1} full comparisons, "
          f"{answered} completions answered in between; final document {len(shadow):,} characters")
