"""The release's packages built as `make dist` builds them (PyPA build: the sdist, then the wheel from the sdist),
from a copy of what git tracks, so that the build leaves nothing in the checkout and sees no untracked file."""
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def tracked_copy(dest: Path) -> Path:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for f in filter(None, files.split("\0")):
        if (ROOT / f).is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, dest / f)
    return dest


def build_dist(src: Path, out: Path) -> tuple[Path, Path]:
    """(sdist, wheel) of the tree at src, in out."""
    r = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(src)], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (sdist,) = out.glob("tandem_lsp-*.tar.gz")
    (wheel,) = out.glob("tandem_lsp-*-py3-none-any.whl")
    return sdist, wheel
