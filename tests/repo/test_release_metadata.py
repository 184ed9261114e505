"""The release's metadata: the version (lsp_server.__version__) in the wheel, the sdist and the changelog's newest
entry; the declared Python (Requires-Python >=3.11: settings are read with tomllib), which the Python running the
tests satisfies and for which pip refuses the wheel on 3.10 with a message that says why. pip's refusal is checked on
every machine through `pip download --python-version 3.10` (pip's own check, for the version given); where a real
Python 3.10 is installed (pyenv, or python3.10 on the PATH) its pip is asked too; where none is, that second check
has nothing to run and the test prints which checks ran."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import HeaderParser

import pytest
from packaging.specifiers import SpecifierSet

from dist_build import build_dist, tracked_copy


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dist")
    return build_dist(tracked_copy(tmp / "src"), tmp / "out")


def metadata(wheel) -> dict:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return HeaderParser().parsestr(z.read(name).decode())


def test_the_wheel_declares_python_3_11_and_this_python_satisfies_it(dist):
    sdist, wheel = dist
    meta = metadata(wheel)
    assert meta["Requires-Python"] == ">=3.11"
    assert sys.version.split()[0] in SpecifierSet(meta["Requires-Python"])
    import lsp_server
    version = lsp_server.__version__
    assert meta["Version"] == version and wheel.name == f"tandem_lsp-{version}-py3-none-any.whl"
    assert meta["License-Expression"] == "MIT"
    assert "Programming Language :: Python :: 3.11" in meta.get_all("Classifier")
    # the sdist says the same, and carries the license and the changelog
    with tarfile.open(sdist) as t:
        names = t.getnames()
        pkg_info = HeaderParser().parsestr(t.extractfile(f"{sdist.name[:-7]}/PKG-INFO").read().decode())
    assert pkg_info["Requires-Python"] == ">=3.11"
    assert {f"{sdist.name[:-7]}/{f}" for f in ("LICENSE", "CHANGELOG.md", "README.md")} <= set(names)


def python_3_10() -> str | None:
    """A Python 3.10 that runs (a pyenv shim on the PATH may name a version it will not start)."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.10*/bin/python"))) + [
        shutil.which("python3.10")]
    for c in filter(None, candidates):
        r = subprocess.run([c, "-c", "import sys; print(sys.version_info[:2] == (3, 10))"], capture_output=True,
                           text=True, timeout=30)
        if r.stdout.strip() == "True":
            return c
    return None


def test_pip_refuses_the_wheel_for_python_3_10_saying_why(dist, tmp_path):
    _, wheel = dist
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--python-version", "3.10",
                        "--only-binary=:all:", "-d", str(tmp_path / "dl"), str(wheel)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "requires a different Python: 3.10.0 not in '>=3.11'" in r.stderr, r.stderr
    checked = ["pip download --python-version 3.10"]
    py310 = python_3_10()
    if py310:
        r = subprocess.run([py310, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index", str(wheel)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode != 0 and "requires a different Python: 3.10" in r.stderr, r.stderr
        checked.append(f"{py310} -m pip install")
    print("refusal checked with:", "; ".join(checked))


def test_the_changelog_s_newest_entry_is_this_version_with_a_date():
    import lsp_server
    from conftest import ROOT
    entries = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert entries and entries[0][0] == lsp_server.__version__, entries
    assert [v for v, _ in entries] == sorted((v for v, _ in entries), key=lambda v: tuple(map(int, v.split("."))),
                                             reverse=True)
