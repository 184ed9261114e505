"""The README is a product page: short, what it is and how to install it first, every link and image it names
present in the repository."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_the_readme_is_short_and_starts_with_what_it_is_and_how_to_install():
    lines = README.splitlines()
    assert len(lines) < 150
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[:2] == ["## What to expect", "## Install"]
    # the test command .ci/run calls is the one the README names
    assert "make test" in README and "make test" in (ROOT / ".ci" / "run").read_text()


def test_every_relative_link_and_image_of_the_readme_exists():
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert "docs/vscode-ghost-text.png" in local
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, missing
