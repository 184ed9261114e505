"""Golden cases for the completion mode (one line, a block, or either as the model decides) at places in real
code of Python, TypeScript and Go (tests/context/golden/mode.toml, on fixtures/real/)."""
import tomllib
from pathlib import Path

import pytest

from lsp_server.context.document import language_for_path as language_of
from lsp_server.context.trigger import Mode, decide

ROOT = Path(__file__).resolve().parents[2]
CASES = tomllib.loads((Path(__file__).parent / "golden" / "mode.toml").read_text())["case"]


def place(case) -> tuple[str, str]:
    """(prefix, suffix) of the case's cursor."""
    lines = (ROOT / "fixtures" / "real" / case["file"]).read_text().split("\n")
    if "hole" in case:
        first, last = case["hole"]
        taken = lines[first - 1]
        head = taken[:len(taken) - len(taken.lstrip())]
        return "\n".join(lines[:first - 1] + [head]), "\n" + "\n".join(lines[last:])
    at = case["line"] - 1
    text, col = lines[at], case["col"] - 1
    right = text[col:] if case.get("keep_right") else ""
    return "\n".join(lines[:at] + [text[:col]]), right + "\n" + "\n".join(lines[at + 1:])


def named(mode: Mode) -> str:
    if not mode.complete:
        return "none"
    return "block" if mode.multiline else "line or block" if mode.maybe_block else "line"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_mode(case):
    prefix, suffix = place(case)
    mode = decide(prefix, suffix, language_of(case["file"]))
    assert (named(mode), mode.why) == (case["mode"], case["why"])


def test_the_cases_cover_each_language_and_mode():
    seen = {(language_of(c["file"]), c["mode"]) for c in CASES}
    for lang in ("python", "typescript", "go"):
        assert {m for l, m in seen if l == lang} >= {"line", "block", "line or block"}
