"""docs/settings.md's table lists every setting the server reads, with its default (package.json is held to the same
in test_editor_settings.py): a setting added, renamed or given another default shows up here until the docs say so."""
import json
import re
from dataclasses import fields

from conftest import ROOT
from lsp_server.service.settings import Settings, _snake

DOC = ROOT / "docs" / "settings.md"


def _split(cell: str) -> list[str]:
    """A cell's comma-separated values; a comma inside brackets, braces, parentheses or quotes does not split."""
    out, depth, quoted, cur = [], 0, False, ""
    for ch in cell:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "([{":
            depth += 1
        elif not quoted and ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0 and not quoted:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + [cur.strip()]


def _documented() -> dict[str, str]:
    rows = {}
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        names = re.findall(r"`(\w+)`", cells[0]) if len(cells) >= 3 else []
        if not names or not re.fullmatch(r"(`\w+`,?\s*)+", cells[0]):
            continue
        values = _split(cells[1])
        assert len(values) == len(names), f"docs/settings.md: {cells[0]} has defaults {cells[1]!r}"
        for name, value in zip(names, values):
            assert name not in rows, f"docs/settings.md lists {name} twice"
            rows[name] = value
    return rows


def _as_written(value: str) -> str:
    """A default as the table writes it: backticks and a trailing "(what it means)" aside, quotes optional on
    a string, an integer of whole MiB as "N MiB"."""
    value = re.sub(r"\s*\([^()]*\)$", "", value.replace("`", "")).strip()
    if m := re.fullmatch(r"(\d+) MiB", value):
        return str(int(m[1]) << 20)
    return value


def test_the_settings_doc_lists_every_setting_with_its_default():
    documented = _documented()
    assert {_snake(k) for k in documented} == {f.name for f in fields(Settings)}
    server = Settings()
    for key, written in documented.items():
        want = getattr(server, _snake(key))
        want = list(want) if isinstance(want, tuple) else want
        expected = {json.dumps(want)} | ({want} if isinstance(want, str) else set())
        assert _as_written(written) in expected, f"docs/settings.md: {key} says {written!r}, the server {want!r}"
