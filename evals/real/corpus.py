"""The corpus of `tandem-eval real`: released source of real projects, fetched from the package registries by
pinned name and version with their ordinary clients (PyPI sdists with pip, npm tarballs with npm, Debian's Go
and Rust source packages with apt-get), checked against the sha256 recorded here the first time, extracted
once under the cache (`$TANDEM_CACHE_DIR/real`, else ~/.cache/tandem/real).

A local folder of projects (`--real-corpus DIR`) stands in for it where there is no network (the tests): each
subfolder is a project, and files lying in DIR itself make one more, named after DIR."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from lsp_server.context.document import language_for_path


class CorpusError(RuntimeError):
    pass


@dataclass(frozen=True)
class Spec:
    name: str            # as the registry spells it; also the project's key for the tune/confirm split
    registry: str        # pypi | npm | debian
    version: str
    language: str        # the language whose files get holes
    licence: str         # SPDX, as the package declares it
    file: str            # the archive the registry hands out
    sha256: str | None   # of that archive; None: not recorded yet (the first fetch prints it)
    root: str            # the project's folder inside the extracted archive: the workspace root of its server
    dirs: tuple[str, ...] = ()   # holes only in files under these folders of the root (default: all)


# Pinned projects: at least two per language, chosen so that each half of the tune/confirm split (a hash of the
# name, bench/halves.py) has every language: tune gets toolz, marshmallow, redux, reselect, express, ws,
# gorilla-mux, testify, serde_json, memchr, lz4; confirm the others.
PROJECTS: tuple[Spec, ...] = (
    # Python: PyPI sdists
    Spec("attrs", "pypi", "24.2.0", "python", "MIT",
         "attrs-24.2.0.tar.gz",
         "5cfb1b9148b5b086569baec03f20d7b6bf3bcacc9a42bebf87ffaaca362f6346",
         "attrs-24.2.0", ("src",)),
    Spec("jinja2", "pypi", "3.1.4", "python", "BSD-3-Clause",
         "jinja2-3.1.4.tar.gz",
         "4a3aee7acbbe7303aede8e9648d13b8bf88a429282aa6122a993f0ac800cb369",
         "jinja2-3.1.4", ("src",)),
    Spec("toolz", "pypi", "1.0.0", "python", "BSD-3-Clause",
         "toolz-1.0.0.tar.gz",
         "2c86e3d9a04798ac556793bced838816296a2f085017664e4995cb40a1047a02",
         "toolz-1.0.0", ("toolz",)),
    Spec("marshmallow", "pypi", "3.23.1", "python", "MIT",
         "marshmallow-3.23.1.tar.gz",
         "3a8dfda6edd8dcdbf216c0ede1d1e78d230a6dc9c5a088f58c4083b974a0d468",
         "marshmallow-3.23.1", ("src",)),
    # TypeScript: npm packages that ship their sources
    Spec("immer", "npm", "11.2.14", "typescript", "MIT",
         "immer-11.2.14.tgz",
         "590d2d7d6b5a114cbbe07af2ca99ee9c4fd362f135d1757b14c869c445e9dc22",
         "package", ("src",)),
    Spec("mobx", "npm", "6.15.0", "typescript", "MIT",
         "mobx-6.15.0.tgz",
         "20639283edb77187166a98ddc4620ee5c60bb83a6cc304506bb59545bd44ae29",
         "package", ("src",)),
    Spec("redux", "npm", "5.0.1", "typescript", "MIT",
         "redux-5.0.1.tgz",
         "adacd4f8a377e638a3feb568e45e8b8ff22c926516941db25b1acfc34d94398b",
         "package", ("src",)),
    Spec("reselect", "npm", "5.1.1", "typescript", "MIT",
         "reselect-5.1.1.tgz",
         "4c290048eca74d445731822dca4024fb21e13418d394e99e76d2a6164b478062",
         "package", ("src",)),
    # JavaScript: npm packages whose sources are plain JavaScript
    Spec("express", "npm", "4.21.2", "javascript", "MIT",
         "express-4.21.2.tgz",
         "fc43a91e7dc7affb53c6ad7123a4f35485ed3c45226ae7a3847b7738e783e008",
         "package", ("lib",)),
    Spec("ws", "npm", "8.18.3", "javascript", "MIT",
         "ws-8.18.3.tgz",
         "424be604c8e7926fc29a1f067bf2dac256af3bcea62fe30395018bbaf8a9be2a",
         "package", ("lib",)),
    Spec("marked", "npm", "4.3.0", "javascript", "MIT",
         "marked-4.3.0.tgz",
         "bc795399d6e7c096521080d66ce6ca96a00875b4bb0df36e0f041815484f633b",
         "package", ("src",)),
    Spec("koa", "npm", "2.15.3", "javascript", "MIT",
         "koa-2.15.3.tgz",
         "23b9a334640c93f61306e1941dc87b6001b0273230482fb9138243de870727f1",
         "package", ("lib",)),
    # Go: Debian's source packages (the sources under /usr/share/gocode)
    Spec("golang-github-gorilla-mux-dev", "debian", "1.8.0-1", "go", "BSD-3-Clause",
         "golang-github-gorilla-mux-dev_1.8.0-1_all.deb",
         "0880a4019fe68496a0e0a749c2948c029e489f49edd448bed2fedaba33f848c2",
         "usr/share/gocode/src/github.com/gorilla/mux"),
    Spec("golang-github-stretchr-testify-dev", "debian", "1.8.1-1", "go", "MIT",
         "golang-github-stretchr-testify-dev_1.8.1-1_all.deb",
         "214a31391cf60e1d1abd9f218cb5134a1fd646340a147a04c2d95a981024a305",
         "usr/share/gocode/src/github.com/stretchr/testify"),
    Spec("golang-github-sirupsen-logrus-dev", "debian", "1.9.0-1", "go", "MIT",
         "golang-github-sirupsen-logrus-dev_1.9.0-1_all.deb",
         "51fb87b05452e96be38b97c03d5f997f6ce3a144421f911338d6c4ea2e8aa118",
         "usr/share/gocode/src/github.com/sirupsen/logrus"),
    Spec("golang-gopkg-yaml.v3-dev", "debian", "3.0.1-3", "go", "MIT AND Apache-2.0",
         "golang-gopkg-yaml.v3-dev_3.0.1-3_all.deb",
         "3ad4febd49700bc670f0f143f3291ecab4e032cc227d69521bacadbc493cfbbe",
         "usr/share/gocode/src/gopkg.in/yaml.v3"),
    # Rust: Debian's crate packages (the sources under /usr/share/cargo/registry)
    Spec("librust-serde-json-dev", "debian", "1.0.87-1", "rust", "MIT OR Apache-2.0",
         "librust-serde-json-dev_1.0.87-1_amd64.deb",
         "2d053de630af6649c40a39d9ab6268d5469385289016a1205d0dec196e7b77d2",
         "usr/share/cargo/registry/serde_json-1.0.87", ("src",)),
    Spec("librust-memchr-dev", "debian", "2.5.0-1", "rust", "Unlicense OR MIT",
         "librust-memchr-dev_2.5.0-1_amd64.deb",
         "9b0f9497acbf8d8e706181a248a31624c6215ce86353a972d19d0cf0252f4183",
         "usr/share/cargo/registry/memchr-2.5.0", ("src",)),
    Spec("librust-semver-dev", "debian", "1.0.14-1", "rust", "MIT OR Apache-2.0",
         "librust-semver-dev_1.0.14-1_amd64.deb",
         "bf3719b7aac4b7f16f0d68a7037306dbc1532758fe7a5dea01254e85cecaca8c",
         "usr/share/cargo/registry/semver-1.0.14", ("src",)),
    Spec("librust-regex-syntax-dev", "debian", "0.6.27-1", "rust", "MIT OR Apache-2.0",
         "librust-regex-syntax-dev_0.6.27-1_amd64.deb",
         "16c9879e07d6f9c6b2618906126d17e51ec8b04bced0fe3bb0cf0f3062f8a353",
         "usr/share/cargo/registry/regex-syntax-0.6.27", ("src",)),
    # C: PyPI sdists that carry a C library's own sources
    Spec("brotli", "pypi", "1.1.0", "c", "MIT",
         "Brotli-1.1.0.tar.gz",
         "81de08ac11bcb85841e440c13611c00b67d3bf82698314928d0b676362546724",
         "Brotli-1.1.0", ("c",)),
    Spec("lz4", "pypi", "4.3.3", "c", "BSD-3-Clause AND BSD-2-Clause",
         "lz4-4.3.3.tar.gz",
         "01fe674ef2889dbb9899d8a67361e0c4a2c833af5aeb37dd505727cf5d2a131e",
         "lz4-4.3.3", ("lz4libs", "lz4")),
)

# the file name endings of each language's sources; `index` also takes headers (for C's names)
EXTENSIONS = {"python": (".py",), "typescript": (".ts",), "javascript": (".js", ".mjs", ".cjs"), "go": (".go",),
              "rust": (".rs",), "c": (".c",)}
INDEX_EXTENSIONS = {**EXTENSIONS, "c": (".c", ".h")}
LANGUAGE_OF_EXT = {ext: lang for lang, exts in INDEX_EXTENSIONS.items() for ext in exts}
# not the project's own code, or not code a person writes
SKIP_DIRS = {"test", "tests", "__tests__", "testdata", "testing", "node_modules", "dist", "build", "vendor",
             "examples", "example", "benches", "docs", ".git"}
SKIP_SUFFIXES = (".d.ts", ".min.js", "_test.go", ".test.ts", ".test.js", ".spec.ts", ".spec.js")


@dataclass
class Project:
    name: str
    language: str            # the table's; "" for a local folder (every known language there)
    root: Path
    registry: str = "local"
    version: str = ""
    licence: str = ""
    licence_files: list[str] = field(default_factory=list)
    dirs: tuple[str, ...] = ()

    def languages(self) -> tuple[str, ...]:
        return (self.language,) if self.language else tuple(EXTENSIONS)

    def source_files(self, index: bool = False) -> list[tuple[Path, str]]:
        """(path, language) of the project's own sources, sorted: those holes are cut in, or with `index` also
        those whose names count as defined in the project (all folders, headers too)."""
        table = INDEX_EXTENSIONS if index else EXTENSIONS
        langs = self.languages()
        out = []
        tops = [self.root / d for d in self.dirs] if self.dirs and not index else [self.root]
        for top in tops:
            for dirpath, dirnames, filenames in os.walk(top):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
                for f in sorted(filenames):
                    if f.endswith(SKIP_SUFFIXES) or f.startswith("test_") or f.endswith("_test.py"):
                        continue
                    lang = LANGUAGE_OF_EXT.get(os.path.splitext(f)[1].lower())
                    if lang in langs and os.path.splitext(f)[1].lower() in table[lang]:
                        out.append((Path(dirpath) / f, lang))
        return sorted(set(out))


def cache_root() -> Path:
    from lsp_server.engine.registry import cache_dir
    return cache_dir() / "real"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify(spec: Spec, path: Path) -> str:
    """The archive's sha256; a CorpusError where it is not the one recorded for this name and version."""
    digest = sha256_of(path)
    if spec.sha256 is not None and digest != spec.sha256:
        raise CorpusError(f"{path.name}: sha256 {digest} is not the recorded {spec.sha256} for {spec.name} "
                          f"{spec.version} ({spec.registry}); refusing it (delete it to fetch it again)")
    return digest


def _run(cmd: list[str], cwd: Path, log) -> subprocess.CompletedProcess:
    log(f"  $ {' '.join(cmd)}")
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    except FileNotFoundError as e:
        raise CorpusError(f"{cmd[0]} is not installed: needed to fetch from {cwd}") from e
    except subprocess.TimeoutExpired as e:
        raise CorpusError(f"{' '.join(cmd)} took over 10 minutes") from e


def download(spec: Spec, dest: Path, log=print) -> Path:
    """Fetch the archive with the registry's own client into `dest`; its path."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        tmp = Path(tmp)
        if spec.registry == "pypi":
            cmds = [[sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q",
                     "-d", str(tmp), f"{spec.name}=={spec.version}"]]
        elif spec.registry == "npm":
            cmds = [["npm", "pack", "--silent", f"{spec.name}@{spec.version}"]]
        elif spec.registry == "debian":
            cmds = [["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root" if os.geteuid() == 0 else
                     "APT::Sandbox::User=_apt", f"{spec.name}={spec.version}"]]
        else:
            raise CorpusError(f"{spec.name}: unknown registry {spec.registry!r}")
        got = _run(cmds[0], tmp, log)
        if got.returncode != 0 and spec.registry == "debian" and os.geteuid() == 0:
            log("  apt-get update (once, for the package lists)")
            _run(["apt-get", "update", "-q"], tmp, log)
            got = _run(cmds[0], tmp, log)
        if got.returncode != 0:
            raise CorpusError(f"fetching {spec.name} {spec.version} from {spec.registry} failed: "
                              f"{(got.stderr or got.stdout).strip().splitlines()[-1:] or ['no output']}")
        files = [p for p in tmp.iterdir() if p.is_file()]
        match = [p for p in files if p.name == spec.file] or files
        if len(match) != 1:
            raise CorpusError(f"fetching {spec.name} {spec.version}: expected {spec.file}, got "
                              f"{', '.join(p.name for p in files) or 'nothing'}")
        final = dest / spec.file
        shutil.move(str(match[0]), final)
    return final


def extract(archive: Path, into: Path) -> None:
    tmp = into.with_name(into.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if archive.suffix == ".deb":
        got = subprocess.run(["dpkg-deb", "-x", str(archive), str(tmp)], capture_output=True, text=True)
        if got.returncode != 0:
            raise CorpusError(f"dpkg-deb -x {archive.name}: {got.stderr.strip()}")
    else:
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(tmp, filter="data")
            else:   # pragma: no cover (Python < 3.10.12)
                tar.extractall(tmp)
    shutil.rmtree(into, ignore_errors=True)
    tmp.rename(into)


def licence_files(spec: Spec, base: Path, root: Path) -> list[str]:
    found = [p for p in sorted(root.iterdir()) if p.is_file()
             and p.name.upper().startswith(("LICENSE", "LICENCE", "COPYING", "UNLICENSE", "NOTICE"))]
    if spec.registry == "debian":
        found += [p for p in [base / "usr/share/doc" / spec.name / "copyright"] if p.exists()]
    return [str(p.relative_to(base)) for p in found]


def ensure(spec: Spec, cache: Path | None = None, log=print) -> Project:
    """The project fetched, checked and extracted (each only once)."""
    cache = cache or cache_root()
    archive = cache / "downloads" / spec.file
    into = cache / "src" / f"{spec.name}-{spec.version}"
    stamp = into / ".tandem-sha256"
    if not archive.exists():
        log(f"fetching {spec.name} {spec.version} ({spec.registry})")
        archive = download(spec, cache / "downloads", log)
    digest = verify(spec, archive)
    if spec.sha256 is None:
        log(f"  {spec.file}: sha256 {digest} (not recorded yet: add it to PROJECTS)")
    if not stamp.exists() or stamp.read_text().strip() != digest:
        extract(archive, into)
        stamp.write_text(digest + "\n")
    root = into / spec.root
    if not root.is_dir():
        raise CorpusError(f"{spec.name} {spec.version}: {spec.root} is not in {spec.file}")
    return Project(spec.name, spec.language, root, spec.registry, spec.version, spec.licence,
                   licence_files(spec, into, root), spec.dirs)


def local_projects(folder: Path) -> list[Project]:
    """Each subfolder of `folder` a project; files lying in `folder` itself one more, named after it."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CorpusError(f"{folder}: no such folder of projects")
    out = [Project(d.name, "", d) for d in sorted(folder.iterdir()) if d.is_dir() and not d.name.startswith(".")
           and d.name not in SKIP_DIRS]
    if any(language_for_path(p.name) in EXTENSIONS for p in folder.iterdir() if p.is_file()):
        out.append(_Loose(folder.name, "", folder))
    return [p for p in out if p.source_files()]


class _Loose(Project):
    """The files lying in the corpus folder itself (not its subfolders, which are projects of their own)."""

    def source_files(self, index: bool = False) -> list[tuple[Path, str]]:
        return sorted((p, LANGUAGE_OF_EXT[p.suffix.lower()]) for p in self.root.iterdir()
                      if p.is_file() and p.suffix.lower() in LANGUAGE_OF_EXT
                      and (index or p.suffix.lower() in EXTENSIONS[LANGUAGE_OF_EXT[p.suffix.lower()]])
                      and not p.name.endswith(SKIP_SUFFIXES))
