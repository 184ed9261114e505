"""Run untrusted model-written Python the way HumanEval scores it: a child process in a fresh temporary folder,
with a timeout, memory and process limits, no network, and no calls that start processes or remove files."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass

# Runs first in the child. Sockets are blocked even where no network namespace can be made, and the calls
# that start processes or delete, move or re-own files outside the child's folder are taken away (as
# HumanEval's own harness does): model code that tries them fails, and the task with it.
_GUARD = """\
import os as _os, shutil as _sh, socket as _s, subprocess as _sp
def _refused(*a, **k):
    raise OSError("not allowed in the HumanEval sandbox")
_s.socket = _s.create_connection = _s.socketpair = _s.getaddrinfo = _refused
for _n in ("system", "popen", "kill", "killpg", "fork", "forkpty", "execv", "execve", "execvp", "spawnv",
           "remove", "unlink", "rmdir", "removedirs", "rename", "renames", "replace", "truncate", "chmod",
           "chown", "lchown", "setuid", "putenv"):
    if hasattr(_os, _n):
        setattr(_os, _n, _refused)
_sh.rmtree = _sh.move = _sh.chown = _refused
_sp.Popen = _sp.run = _sp.call = _sp.check_call = _sp.check_output = _refused
del _os, _sh, _s, _sp, _n
"""


def _limits() -> None:   # runs in the child before exec
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))
    resource.setrlimit(resource.RLIMIT_NPROC, (256, 256))
    os.setsid()


def _unshare() -> list[str]:
    """`unshare --net` (a network namespace with only a down loopback) when this machine lets us make one."""
    exe = shutil.which("unshare")
    if not exe:
        return []
    for cmd in ([exe, "--net"], [exe, "--net", "--map-root-user"]):
        try:
            if subprocess.run(cmd + ["true"], capture_output=True, timeout=10).returncode == 0:
                return cmd
        except (OSError, subprocess.TimeoutExpired):
            pass
    return []


@dataclass
class Outcome:
    passed: bool
    error: str = ""        # the last line of stderr, "timeout", or "" when passed


class Sandbox:
    def __init__(self, timeout_s: float = 10.0):
        self.timeout_s = timeout_s
        self.prefix = _unshare()

    @property
    def isolation(self) -> str:
        return "network namespace + guard" if self.prefix else "guard (no network namespace here)"

    def run(self, program: str) -> Outcome:
        with tempfile.TemporaryDirectory(prefix="tandem-eval-") as tmp:
            path = os.path.join(tmp, "program.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(_GUARD + program)
            env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "TMPDIR": tmp, "PYTHONHASHSEED": "0",
                   "PYTHONDONTWRITEBYTECODE": "1"}
            p = subprocess.Popen(self.prefix + [sys.executable, "-I", path], cwd=tmp, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                 preexec_fn=_limits)
            try:
                _, err = p.communicate(timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                # the child leads its own session: kill everything it started, not only itself
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.communicate()
                return Outcome(False, f"timeout after {self.timeout_s:g}s")
            if p.returncode == 0:
                return Outcome(True)
            lines = [ln for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
            return Outcome(False, lines[-1][:200] if lines else f"exit code {p.returncode}")
