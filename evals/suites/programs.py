"""SAFIM's programs compiled and run against their problem's tests: Python, C++ and Java (C# with a dotnet SDK),
each run in a fresh folder under limits, its output compared as Codeforces' checkers compare."""
from __future__ import annotations

import functools
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import re
from dataclasses import dataclass

from evals.common.sandbox import _GUARD, _unshare

COMPILE_TIMEOUT_S = 120
YES_NO = ("yes", "no")
TESTED = ("block", "control")          # the kinds scored by running tests; API tasks have none
APT = {"cpp": "g++", "java": "default-jdk-headless"}


def same_code(a: str, b: str) -> bool:
    """Exact match up to whitespace (runs of it count as one space)."""
    return a.split() == b.split()


def same_output(got: str, want: str) -> bool:
    """Whitespace-separated tokens equal, or numbers within 1e-6 (relative, absolute below 1), or YES/NO in
    any case (Codeforces' checkers take them so, and some ground truths print `yes`)."""
    a, b = got.split(), want.split()
    return len(a) == len(b) and all(x == y or _close(x, y) or x.lower() == y.lower() in YES_NO
                                    for x, y in zip(a, b))


def _close(x: str, y: str) -> bool:
    try:
        fx, fy = float(x), float(y)
    except ValueError:
        return False
    return math.isfinite(fx) and math.isfinite(fy) and abs(fx - fy) <= 1e-6 * max(1.0, abs(fy))


# --- running the programs ---------------------------------------------------------------------------------

@dataclass
class Outcome:
    passed: bool
    error: str = ""


def _limits(address_space: bool) -> None:   # in the child before exec
    import resource
    if address_space:   # not for the JVM, which reserves far more than it uses (-Xmx bounds it instead)
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))   # stdout goes to a file: a runaway
    os.setsid()                                                          # print loop stops at 64 MiB


def toolchains(langs: tuple[str, ...], install: bool = True) -> dict[str, str]:
    """Why each language cannot be compiled and run here ("" where it can). g++ and a JDK are installed with
    apt-get when missing and this runs as root."""
    def missing(lang: str) -> list[str]:
        need = {"python": [], "cpp": ["g++"], "java": ["javac", "java"], "csharp": ["dotnet"]}[lang]
        return [c for c in need if not shutil.which(c)]
    wanted = [APT[lang] for lang in langs if lang in APT and missing(lang)]
    if wanted and install and os.geteuid() == 0 and shutil.which("apt-get"):
        print(f"SAFIM: installing {' '.join(wanted)} to compile the tasks (apt-get)", file=sys.stderr)
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL,
                 "env": {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}}
        if subprocess.run(["apt-get", "install", "-y", *wanted], **quiet).returncode != 0:
            subprocess.run(["apt-get", "update"], **quiet)   # package lists not fetched yet
            subprocess.run(["apt-get", "install", "-y", *wanted], **quiet)
    why = {}
    for lang in langs:
        gone = missing(lang)
        why[lang] = "" if not gone else ("no dotnet SDK on this machine (Debian ships none)" if lang == "csharp"
                                         else f"{', '.join(gone)} not found")
    return why


class Runner:
    """Compiles a program once and runs each test with its input on stdin, in a fresh temporary folder, in a
    network namespace where one can be made, with time, memory and output limits."""

    def __init__(self, timeout_s: float = 10.0):
        self.timeout_s = timeout_s
        self.prefix = _unshare()

    @property
    def isolation(self) -> str:
        return ("network namespace" if self.prefix else "no network namespace here") + "; Python: guard"

    def score(self, task, middle: str) -> Outcome:
        """`task`: a safim.Task; block and control tasks run their tests, API tasks are matched exactly."""
        if task.kind not in TESTED:
            return Outcome(same_code(middle, task.ground_truth), "" if same_code(middle, task.ground_truth)
                           else "not the ground truth")
        with tempfile.TemporaryDirectory(prefix="tandem-safim-") as tmp:
            try:
                cmd, space = self._build(task, task.program(middle), tmp)
            except _Failed as e:
                return Outcome(False, str(e))
            for n, test in enumerate(task.tests, 1):
                got = self._run(cmd, space, test.input, tmp)
                if isinstance(got, Outcome):
                    return Outcome(False, f"test {n}: {got.error}")
                if not any(same_output(got, want) for want in test.outputs):
                    return Outcome(False, f"test {n}: wrong answer")
        return Outcome(True)

    def _build(self, task, program: str, tmp: str) -> tuple[list[str], bool]:
        """The command that runs the program, and whether its address space may be limited."""
        src = os.path.join(tmp, task.path)
        with open(src, "w", encoding="utf-8") as f:
            f.write(program)
        if task.lang == "python":   # the guard runs first; runpy keeps the program's `from __future__` valid
            with open(os.path.join(tmp, "run.py"), "w") as f:
                f.write(_GUARD + f"import runpy\nrunpy.run_path({task.path!r}, run_name='__main__')\n")
            return [sys.executable, "-I", "run.py"], True
        if task.lang == "cpp":
            self._compile(["g++", "-O2", "-std=c++17", "-o", "prog", task.path], tmp)
            return [os.path.join(tmp, "prog")], True
        if task.lang == "java":
            self._compile(["javac", "-encoding", "UTF-8", "-nowarn", "-d", "classes", task.path], tmp)
            pkg = re.search(r"^\s*package\s+([\w.]+)\s*;", program, re.M)
            main = (pkg.group(1) + "." if pkg else "") + task.path[:-len(".java")]
            return ["java", "-Xmx1g", "-Xss256m", "-XX:+UseSerialGC", "-cp", "classes", main], False
        # C#: untested here (no SDK on this machine)
        with open(os.path.join(tmp, "p.csproj"), "w") as f:
            f.write('<Project Sdk="Microsoft.NET.Sdk"><PropertyGroup><OutputType>Exe</OutputType>'
                    '<TargetFramework>net8.0</TargetFramework><Nullable>disable</Nullable>'
                    '<AllowUnsafeBlocks>true</AllowUnsafeBlocks></PropertyGroup></Project>')
        self._compile(["dotnet", "build", "-c", "Release", "-o", "out", "--nologo", "-v", "q"], tmp)
        return ["dotnet", os.path.join(tmp, "out", "p.dll")], False

    def _compile(self, cmd: list[str], tmp: str) -> None:
        try:
            p = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S,
                               env={**os.environ, "HOME": tmp, "DOTNET_CLI_TELEMETRY_OPTOUT": "1"})
        except subprocess.TimeoutExpired:
            raise _Failed(f"compile: timeout after {COMPILE_TIMEOUT_S}s") from None
        if p.returncode != 0:
            err = next((ln for ln in (p.stderr + p.stdout).splitlines() if "error" in ln.lower()), "")
            raise _Failed(f"compile error: {err.strip()[:200] or f'exit code {p.returncode}'}")

    def _run(self, cmd: list[str], space: bool, stdin: str, tmp: str) -> str | Outcome:
        """The program's stdout for this input, or why it has none."""
        out_path = os.path.join(tmp, "stdout")
        with open(os.path.join(tmp, "stdin"), "w") as f:
            f.write(stdin if stdin.endswith("\n") else stdin + "\n")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "TMPDIR": tmp,
               "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
        with open(os.path.join(tmp, "stdin")) as fin, open(out_path, "w") as fout:
            p = subprocess.Popen(self.prefix + cmd, cwd=tmp, env=env, stdin=fin, stdout=fout,
                                 stderr=subprocess.PIPE, preexec_fn=functools.partial(_limits, space))
            try:
                _, err = p.communicate(timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                try:   # the child leads its own session: kill all it started
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.communicate()
                return Outcome(False, f"timeout after {self.timeout_s:g}s")
        if p.returncode != 0:
            lines = [ln for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
            return Outcome(False, lines[-1][:200] if lines else f"exit code {p.returncode}")
        with open(out_path, encoding="utf-8", errors="replace") as f:
            return f.read()


class _Failed(Exception):
    pass


# --- the answers -------------------------------------------------------------------------------------------

