"""Which files never become context: a built-in list of secret files that cannot be turned off, extra globs of
the user's, and what the workspace's `.gitignore` files and `.tandemignore` (gitignore syntax) ignore. A file
outside the workspace root is never read either (an import path or a symlink that leads out of it).

Secrets are matched against every component of the path (a `credentials/` folder hides what is in it); the
ignore files as git reads them: each `.gitignore` from the root down to the file's folder, deeper ones taking
precedence, and a file in an ignored folder stays ignored."""
from __future__ import annotations

import fnmatch
import os
import threading
import time
from collections import OrderedDict
from typing import Iterable

import pathspec

# never read as context, whatever the settings say
SECRET_GLOBS = (".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_ed25519*", "*.p12", "*.pfx", "credentials*",
                "*.keystore", ".netrc", ".npmrc", ".pypirc", "secrets.*")
# folders whose content is never context (a repository's own database)
NEVER_DIRS = (".git", ".hg", ".svn")
IGNORE_FILES = (".gitignore",)
WORKSPACE_IGNORE = ".tandemignore"
MAX_IGNORE_BYTES = 256 << 10
MAX_SPECS = 256
VERDICT_TTL_S = 2.0       # a path's verdict is kept this long (a request checks the same files at every keystroke)
MAX_VERDICTS = 4096


def is_secret(path: str) -> bool:
    """Whether a component of the path matches the built-in secret list (case-insensitive)."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    return any(fnmatch.fnmatchcase(p.lower(), g) for p in parts for g in SECRET_GLOBS)


_specs_lock = threading.Lock()
_specs: OrderedDict[str, tuple[tuple[int, int] | None, pathspec.PathSpec | None]] = OrderedDict()


def _spec_of(path: str) -> pathspec.PathSpec | None:
    """The patterns of one ignore file, parsed again only when it changes (None: no such file). Bounded."""
    try:
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None
    with _specs_lock:
        hit = _specs.get(path)
        if hit is not None and hit[0] == stamp:
            _specs.move_to_end(path)
            return hit[1]
    spec = None
    if stamp is not None and stamp[1] <= MAX_IGNORE_BYTES:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                spec = pathspec.GitIgnoreSpec.from_lines(f.read().splitlines())
        except OSError:
            spec = None
    with _specs_lock:
        _specs[path] = (stamp, spec)
        _specs.move_to_end(path)
        while len(_specs) > MAX_SPECS:
            _specs.popitem(last=False)
    return spec


class Excluder:
    """Whether a file may be read as context. `root` None: only the secret list and the extra globs apply."""

    def __init__(self, root: str | None, extra: Iterable[str] = ()):
        self.root = os.path.realpath(root) if root else None
        self.extra = tuple(extra)
        self._extra_spec = pathspec.GitIgnoreSpec.from_lines(self.extra) if self.extra else None
        self._verdicts: dict[str, tuple[float, bool]] = {}

    def excluded(self, path: str) -> bool:
        if is_secret(path):
            return True
        now = time.monotonic()
        hit = self._verdicts.get(path)
        if hit is not None and now - hit[0] < VERDICT_TTL_S:
            return hit[1]
        verdict = self._excluded(path)
        if len(self._verdicts) >= MAX_VERDICTS:
            self._verdicts.clear()
        self._verdicts[path] = (now, verdict)
        return verdict

    def _excluded(self, path: str) -> bool:
        if self.root is None:
            return self._extra_by_name(path)
        real = os.path.realpath(path)
        if is_secret(real):
            return True
        for p in {os.path.abspath(path), real}:
            rel = self.relative(p)
            if rel is None or self._ignored(rel):
                return True
        return False

    def by_user(self, path: str) -> bool:
        """Whether the user's own rules name the file, whatever .gitignore says: the secret list, the extra globs
        and the workspace's .tandemignore. Such a file gets no completion either (a file .gitignore names does:
        only its use as context from disk is off)."""
        if is_secret(path):
            return True
        rel = self.relative(os.path.abspath(path))
        if rel is None:   # outside the root (or no root)
            return self._extra_by_name(path)
        return self._ignored(rel, user_only=True)

    def _extra_by_name(self, path: str) -> bool:
        """Where no root places a file: the extra globs, against its name."""
        return bool(self._extra_spec and self._extra_spec.match_file(os.path.basename(path)))

    def relative(self, path: str) -> str | None:
        """The path relative to the root, with "/" separators; None outside it."""
        if self.root is None:
            return None
        rel = os.path.relpath(path, self.root)
        if rel == "." or rel.startswith(".." + os.sep) or rel == ".." or os.path.isabs(rel):
            return None
        return rel.replace(os.sep, "/")

    def _ignored(self, rel: str, user_only: bool = False) -> bool:
        """`user_only`: only the user's own rules (.tandemignore, the extra globs), not git's."""
        parts = rel.split("/")
        if not user_only and any(p in NEVER_DIRS for p in parts[:-1]):
            return True
        # a folder that is ignored hides all it holds (git does not look inside it to re-include anything)
        for i in range(1, len(parts)):
            if self._decide("/".join(parts[:i]) + "/", user_only):
                return True
        return self._decide(rel, user_only)

    def _decide(self, rel: str, user_only: bool = False) -> bool:
        """What the ignore files say of one path (a folder's ends with "/"): the last word wins, deeper
        files' over the root's, .tandemignore's and the extra globs' over all."""
        verdict = None
        parts = rel.rstrip("/").split("/")
        root = self.root
        if not user_only:
            info = _spec_of(os.path.join(root, ".git", "info", "exclude"))
            if info is not None:
                verdict = _check(info, rel, verdict)
            for depth in range(len(parts)):
                folder = os.path.join(root, *parts[:depth])
                sub = "/".join(parts[depth:]) + ("/" if rel.endswith("/") else "")
                for name in IGNORE_FILES:
                    spec = _spec_of(os.path.join(folder, name))
                    if spec is not None:
                        verdict = _check(spec, sub, verdict)
        tandem = _spec_of(os.path.join(root, WORKSPACE_IGNORE))
        if tandem is not None:
            verdict = _check(tandem, rel, verdict)
        if self._extra_spec is not None:
            verdict = _check(self._extra_spec, rel, verdict)
        return bool(verdict)


def _check(spec: pathspec.PathSpec, rel: str, verdict: bool | None) -> bool | None:
    result = spec.check_file(rel)
    return verdict if result.include is None else result.include
