"""Build the cases of the next-edit suite (issue 52, part 4) from the git history of public repositories.

Run by hand, on a machine that has the repositories' mirrors (bare git directories; here the session's `fetch`
tool put them under /work/.mirror/OWNER+NAME/repo):

    PYTHONPATH=. python -m evals.suites.next_edit.build --mirrors /work/.mirror \
        --out evals/suites/next_edit/cases.jsonl.gz

It walks each repository's non-merge commits reachable from the pinned head (`PROJECTS`: repo, head commit,
language, licence), looks at the source files of one language (tests, docs, examples, generated and vendored
files left out), and splits each file's change into hunks (`git log -p -U0`, hunks closer than `MERGE_GAP`
unchanged lines joined into one, as a user would see one edit):

- an *edit* case from a file whose change has 2..`MAX_HUNKS` hunks, each of at most `MAX_HUNK_LINES` changed
  lines: the first k hunks (k drawn in 1..n-1) applied to the file as it was before the commit (the user's recent
  edits), the cursor at the end of hunk k; the expected answer is hunk k+1, as a replacement of lines of that
  state;
- a *no-edit* case from a file whose change is a single small hunk: that hunk applied, the cursor at its end,
  and nothing more to propose (expected null).

At most one case per commit. Cases are drawn with a fixed seed (per project) so that a rebuild from the same
heads gives the same file. Only a window of the file is stored (`WINDOW_MARGIN` lines either side of the hunks,
at most `MAX_WINDOW` lines), so the file stays small; see the package docstring (`__init__.py`) for the format.
"""
from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from evals.common.halves import half_of

SEED = 52
MAX_HUNKS = 6            # more hunks in one file: likely a mechanical change (rename, reformat)
MAX_HUNK_LINES = 15      # removed + added lines of one hunk
MERGE_GAP = 2            # hunks with at most this many unchanged lines between them are one edit
WINDOW_MARGIN = 20       # lines of context kept either side of the hunks
MAX_WINDOW = 100         # lines of the stored window, at most
MAX_SPAN = 60            # the expected hunk must start within this many lines of the cursor
MAX_FILE_BYTES = 300_000


@dataclass(frozen=True)
class Project:
    name: str        # the key of the tune/confirm split (evals/common/halves.py)
    repo: str        # owner/name on GitHub
    head: str        # the commit the history is walked from
    language: str
    licence: str     # SPDX
    exts: tuple[str, ...]
    edits: int = 30  # edit cases drawn
    none: int = 14   # no-edit cases drawn


# Two projects per language, one in each half (half_of(name)), and reselect to make up redux's short history:
# tune gets marshmallow, redux, reselect, gin, serde_json, gson; confirm gets attrs, zod, chi, log, javapoet.
# Not the held-out projects of issue 52 (requests, rxjs, cobra, click, anyhow, @trpc/server).
PROJECTS: tuple[Project, ...] = (
    Project("attrs", "python-attrs/attrs", "c1dc5dcba16ed827aa6dcad896b41a3afedb4e32", "python", "MIT", (".py",)),
    Project("marshmallow", "marshmallow-code/marshmallow", "341b927f219205704728c05cd61f04d7e9727523", "python",
            "MIT", (".py",)),
    Project("zod", "colinhacks/zod", "e516c3baf22615e20934116abebfed6c000222c2", "typescript", "MIT", (".ts",)),
    Project("redux", "reduxjs/redux", "3084fc33bb23ab4cab4796172eafe342da4e73d9", "typescript", "MIT", (".ts",)),
    Project("reselect", "reduxjs/reselect", "93bb49091fc5e0e0569c745a7240df433548f386", "typescript", "MIT",
            (".ts",), edits=7, none=0),
    Project("chi", "go-chi/chi", "735ae2b87f8c733d616e809ae86e0985c1bc3350", "go", "MIT", (".go",)),
    Project("gin", "gin-gonic/gin", "dcaa4296d111981ffb31ac3eba90bb63e1eb5ab9", "go", "MIT", (".go",)),
    Project("serde_json", "serde-rs/json", "827a315bf2198558f0325b07bcc1e2cd973aba2f", "rust", "MIT OR Apache-2.0",
            (".rs",)),
    Project("log", "rust-lang/log", "037d7a58f6ad184abb3afc4db81d37c43a5696ec", "rust", "MIT OR Apache-2.0",
            (".rs",)),
    Project("gson", "google/gson", "9835b6f90192f79cdf5300c528fc6212455fb6c1", "java", "Apache-2.0", (".java",)),
    Project("javapoet", "square/javapoet", "b9017a9503b76e11b4ad4c1a9f050e2d29112cb0", "java", "Apache-2.0",
            (".java",)),
)

SKIP_DIRS = {"test", "tests", "__tests__", "testing", "testdata", "test-d", "typetests", "examples", "example",
             "_examples", "_example", "docs", "doc", "vendor", "third_party", "benches", "bench", "benchmarks", "fixtures", "scripts",
             "deno", "dist", "build", "node_modules", "website", "changelog.d", "playground", "play"}
SKIP_NAME = re.compile(r"(^test_|_test\.(py|go)$|\.(test|spec|bench)\.tsx?$|\.d\.ts$|Test\.java$|^Test.*\.java$|"
                       r"_gen\.|\.pb\.|generated|^conftest\.py$|^setup\.py$|^noxfile\.py$)", re.IGNORECASE)


def wanted(path: str, exts: tuple[str, ...]) -> bool:
    p = PurePosixPath(path)
    if p.suffix not in exts or SKIP_NAME.search(p.name):
        return False
    return not any(part.lower() in SKIP_DIRS for part in p.parts[:-1])


@dataclass
class Hunk:
    old_start: int          # 0-based index of the first replaced line of the old file
    old: list[str]          # the replaced lines
    new: list[str]          # the lines put there


HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def git(mirror: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(mirror), *args], check=True, capture_output=True).stdout.decode(
        "utf-8", "replace")


def file_changes(mirror: Path, project: Project):
    """(commit, parent, path, [Hunk]) for each wanted file of each non-merge commit with one parent."""
    out = git(mirror, "log", "--no-merges", "--no-renames", "-p", "-U0", "--no-color", "--no-ext-diff",
              "--format=%x00COMMIT %H %P", project.head, "--", *(f"*{e}" for e in project.exts))
    for block in out.split("\0COMMIT ")[1:]:
        head, _, body = block.partition("\n")
        ids = head.split()
        if len(ids) != 2:
            continue
        commit, parent = ids
        for fdiff in re.split(r"^diff --git ", body, flags=re.MULTILINE)[1:]:
            lines = fdiff.split("\n")
            path = None
            hunks: list[Hunk] = []
            ok = True
            for ln in lines[1:]:
                if ln.startswith("+++ "):
                    path = ln[6:] if ln.startswith("+++ b/") else None
                elif ln.startswith("--- ") and not hunks:
                    if ln == "--- /dev/null":
                        ok = False
                elif ln.startswith("Binary files"):
                    ok = False
                elif (m := HUNK_RE.match(ln)):
                    start, count = int(m.group(1)), int(m.group(2) or 1)
                    hunks.append(Hunk(start if count == 0 else start - 1, [], []))
                elif hunks and ln.startswith("-"):
                    hunks[-1].old.append(ln[1:])
                elif hunks and ln.startswith("+"):
                    hunks[-1].new.append(ln[1:])
            if ok and path and hunks and wanted(path, project.exts):
                yield commit, parent, path, hunks


def merge_close(hunks: list[Hunk], old_lines: list[str]) -> list[Hunk]:
    """Join hunks with at most MERGE_GAP unchanged lines between them (the lines between become part of both
    sides)."""
    out: list[Hunk] = []
    for h in hunks:
        if out:
            prev = out[-1]
            prev_end = prev.old_start + len(prev.old)
            if h.old_start - prev_end <= MERGE_GAP:
                gap = old_lines[prev_end:h.old_start]
                out[-1] = Hunk(prev.old_start, prev.old + gap + h.old, prev.new + gap + h.new)
                continue
        out.append(Hunk(h.old_start, list(h.old), list(h.new)))
    return out


def norm(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


def as_text(lines: list[str]) -> str:
    return "".join(ln + "\n" for ln in lines)


def apply(old_lines: list[str], hunks: list[Hunk]) -> tuple[list[str], list[int]]:
    """The file with the hunks applied, and where each hunk starts in it (0-based)."""
    state: list[str] = []
    starts = []
    pos = 0
    for h in hunks:
        state.extend(old_lines[pos:h.old_start])
        starts.append(len(state))
        state.extend(h.new)
        pos = h.old_start + len(h.old)
    state.extend(old_lines[pos:])
    return state, starts


def diff_text(path: str, hunks: list[Hunk], new_starts: list[int]) -> str:
    """The applied hunks as a unified diff without context, line numbers of the whole file."""
    out = [f"--- a/{path}", f"+++ b/{path}"]
    for h, ns in zip(hunks, new_starts):
        o_start = h.old_start + (1 if h.old else 0)
        n_start = ns + (1 if h.new else 0)
        out.append(f"@@ -{o_start},{len(h.old)} +{n_start},{len(h.new)} @@")
        out.extend("-" + ln for ln in h.old)
        out.extend("+" + ln for ln in h.new)
    return "\n".join(out) + "\n"


def make_case(project: Project, commit: str, path: str, old_lines: list[str], hunks: list[Hunk], k: int | None):
    """k applied hunks and hunk k (0-based) expected; k None: all (one) applied, nothing expected."""
    applied = hunks if k is None else hunks[:k]
    state, starts = apply(old_lines, applied)
    last, last_start = applied[-1], starts[-1]
    if last.new:
        cur_line = last_start + len(last.new) - 1
        cur_col = len(state[cur_line])
    else:
        cur_line, cur_col = min(last_start, max(len(state) - 1, 0)), 0
    delta = sum(len(h.new) - len(h.old) for h in applied)
    lo, hi = last_start, last_start + max(len(last.new), 1)
    expected = None
    if k is not None:
        nxt = hunks[k]
        e_start = nxt.old_start + delta
        e_end = e_start + len(nxt.old)
        if e_start - cur_line > MAX_SPAN:
            return None
        lo, hi = min(lo, e_start), max(hi, e_end)
    # the window: the last applied hunk and the expected one with a margin, widened to earlier hunks while small
    w_lo, w_hi = max(0, lo - WINDOW_MARGIN), min(len(state), hi + WINDOW_MARGIN)
    for h, s in zip(applied[:-1], starts[:-1]):
        if max(w_hi, s + len(h.new) + 3) - min(w_lo, max(0, s - 3)) <= MAX_WINDOW:
            w_lo, w_hi = min(w_lo, max(0, s - 3)), max(w_hi, min(len(state), s + len(h.new) + 3))
    if w_hi - w_lo > MAX_WINDOW:
        return None
    if k is not None:
        expected = {"start_line": e_start - w_lo, "end_line": e_end - w_lo, "text": as_text(nxt.new),
                    "old_text": as_text(nxt.old)}
    kind = "none" if k is None else "edit"
    return {
        "id": f"{project.name}/{commit[:10]}/{kind}",
        "project": project.name, "language": project.language, "licence": project.licence,
        "repo": project.repo, "commit": commit, "path": path, "kind": kind,
        "half": half_of(project.name),
        "window_start": w_lo, "file_lines": len(state),
        "before_window": as_text(state[w_lo:w_hi]),
        "cursor": {"line": cur_line - w_lo, "character": cur_col},
        "recent_edits": diff_text(path, applied, starts),
        "hunks": len(hunks), "applied": len(applied),
        "expected": expected,
    }


def candidates(mirror: Path, project: Project):
    edits, nones = [], []
    seen: set[str] = set()
    for commit, parent, path, hunks in file_changes(mirror, project):
        if commit in seen:
            continue
        if any(len(h.old) + len(h.new) > MAX_HUNK_LINES for h in hunks):
            continue
        if all(norm(h.old) == norm(h.new) for h in hunks):
            continue   # whitespace only
        if len(hunks) == 1:
            nones.append((commit, parent, path, hunks))
        elif len(hunks) <= MAX_HUNKS + 2:   # before merging close hunks
            edits.append((commit, parent, path, hunks))
        seen.add(commit)
    return edits, nones


def read_blob(mirror: Path, rev: str, path: str) -> list[str] | None:
    try:
        data = subprocess.run(["git", "--git-dir", str(mirror), "show", f"{rev}:{path}"], check=True,
                              capture_output=True).stdout
    except subprocess.CalledProcessError:
        return None
    if len(data) > MAX_FILE_BYTES or b"\0" in data[:8192]:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\r" in text:
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def build_project(mirror: Path, project: Project, log=print) -> list[dict]:
    edits, nones = candidates(mirror, project)
    rng = random.Random(f"{SEED}:{project.name}")
    rng.shuffle(edits)
    rng.shuffle(nones)
    cases: list[dict] = []
    want = {"edit": project.edits, "none": project.none}
    got = Counter()
    for kind, pool in (("edit", edits), ("none", nones)):
        for commit, parent, path, hunks in pool:
            if got[kind] >= want[kind]:
                break
            old = read_blob(mirror, parent, path)
            if old is None:
                continue
            merged = merge_close(hunks, old)
            if kind == "edit" and not (2 <= len(merged) <= MAX_HUNKS):
                continue
            if kind == "none" and len(merged) != 1:
                continue
            if any(len(h.old) + len(h.new) > MAX_HUNK_LINES for h in merged):
                continue
            if apply(old, merged)[0] != read_blob(mirror, commit, path):
                continue   # the hunks do not rebuild the commit's file (a parse this builder got wrong): skip
            k = None
            if kind == "edit":
                k = rng.randint(1, len(merged) - 1)
                if norm(merged[k].old) == norm(merged[k].new):
                    continue
            case = make_case(project, commit, path, old, merged, k)
            if case is None:
                continue
            cases.append(case)
            got[kind] += 1
    log(f"{project.name:12} {project.language:10} {half_of(project.name):8} candidates: {len(edits)} edit, "
        f"{len(nones)} no-edit; drawn: {got['edit']} edit, {got['none']} no-edit")
    return cases


def mirror_of(root: Path, repo: str) -> Path:
    return root / repo.replace("/", "+") / "repo"


def summary(cases: list[dict]) -> str:
    rows = Counter((c["half"], c["language"], c["kind"]) for c in cases)
    out = [f"{'half':8} {'language':10} {'edit':>5} {'none':>5}"]
    for half in ("tune", "confirm"):
        for lang in sorted({c["language"] for c in cases}):
            out.append(f"{half:8} {lang:10} {rows[(half, lang, 'edit')]:5} {rows[(half, lang, 'none')]:5}")
    kinds = Counter(c["kind"] for c in cases)
    out.append(f"all: {len(cases)} cases, {kinds['edit']} edit, {kinds['none']} no-edit "
               f"({100 * kinds['none'] / max(len(cases), 1):.0f} %)")
    return "\n".join(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"),
                    help="folder of bare mirrors, OWNER+NAME/repo")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("cases.jsonl.gz"))
    ap.add_argument("--only", nargs="*", help="projects to build (default: all)")
    args = ap.parse_args(argv)
    cases: list[dict] = []
    for p in PROJECTS:
        if args.only and p.name not in args.only:
            continue
        m = mirror_of(args.mirrors, p.repo)
        if not m.is_dir():
            sys.exit(f"no mirror of {p.repo} at {m}")
        cases.extend(build_project(m, p))
    cases.sort(key=lambda c: c["id"])
    # no name nor time in the gzip header: the same cases give the same bytes, wherever written
    with open(args.out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
        for c in cases:
            f.write((json.dumps(c, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
    print(summary(cases))
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
