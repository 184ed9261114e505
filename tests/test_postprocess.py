"""Golden cases for each post-processing filter, one TOML file per filter in tests/golden/postprocess/:
prefix + suffix around the cursor, the raw completion, and what the filter must leave of it."""
import tomllib
from pathlib import Path

import pytest

from lsp_server import postprocess
from lsp_server.postprocess import FILTERS, Around

GOLDEN = Path(__file__).parent / "golden" / "postprocess"


def cases():
    for path in sorted(GOLDEN.glob("*.toml")):
        for case in tomllib.loads(path.read_text())["case"]:
            yield pytest.param(path.stem, case, id=f"{path.stem}: {case['name']}")


def around(case) -> Around:
    return Around(case.get("prefix", ""), case.get("suffix", ""), case.get("language", "text"),
                  case.get("multiline", True), case.get("truncated", False))


def test_every_filter_has_golden_cases():
    assert {p.stem for p in GOLDEN.glob("*.toml")} == set(FILTERS)


@pytest.mark.parametrize("name, case", list(cases()))
def test_golden(name, case):
    assert FILTERS[name](case["completion"], around(case)) == case["expected"]


def test_the_chain_applies_the_filters_in_order():
    # a duplicated closer, trailing blank lines and a repeat of the line below, all at once
    a = Around("def f(a):\n    x = g(", ")\n    return x\n", "python", True)
    assert postprocess.run("a, 1)\n\n", a) == "a, 1"
    b = Around("def f(a):\n    ", "\n    return b\n", "python", True)
    assert postprocess.run("b = a * 2\n    return b\n\n\ndef g():\n    pass", b) == "b = a * 2"
