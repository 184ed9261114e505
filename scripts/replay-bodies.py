"""Typing in real files (`tandem replay --real`), on chosen bodies only: those of the seeded draws of a half
(`--real N --seed S` for the seeds given) whose key (project/file:line) is listed, or whose language and text
match. For a side-by-side on the bodies a change is about; run it from a worktree of the code before to compare
(the server is started from the current folder). Each project's bodies on a server of its own, as the command.

    .venv/bin/python scripts/replay-bodies.py HALF OUT.json [--keys K1,K2] [--draw N] [--seeds 0-11]
                                              [--language python] [--containing '\"\"\"' ...]

Example (the tune half's Python bodies with a docstring or a comment, docs/quality.md "A docstring being typed"):
`tune /tmp/doc.json --language python --containing '\"\"\"' "'''" '#'`."""
import argparse
import asyncio
import json
import sys

from lsp_server.bench.real import load_projects
from lsp_server.bench.real_typing import pick_bodies, print_real, run_real


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("half", choices=("tune", "confirm"))
    ap.add_argument("out")
    ap.add_argument("--keys", help="comma-separated project/file:line keys")
    ap.add_argument("--draw", type=int, default=24, help="bodies per draw (--real N)")
    ap.add_argument("--seeds", default="0-11", help="the draws' seeds: A-B or A,B,...")
    ap.add_argument("--language")
    ap.add_argument("--containing", nargs="*", default=[], help="keep a body whose text holds one of these")
    a = ap.parse_args()
    seeds = range(int(a.seeds.split("-")[0]), int(a.seeds.split("-")[1]) + 1) if "-" in a.seeds \
        else [int(s) for s in a.seeds.split(",")]
    _, projects = load_projects(None, None, a.half, lambda m: print(m, file=sys.stderr))
    pool = {}
    for seed in seeds:
        for b in pick_bodies(projects, a.draw, seed):
            pool.setdefault(f"{b.project}/{b.file}:{b.line}", b)
    if a.keys:
        missing = [k for k in a.keys.split(",") if k not in pool]
        if missing:
            sys.exit(f"not in these draws: {', '.join(missing)}")
        bodies = [pool[k] for k in a.keys.split(",")]
    else:
        bodies = [b for b in pool.values() if (not a.language or b.language == a.language)
                  and (not a.containing or any(c in b.typed for c in a.containing))]
    if not bodies:
        sys.exit("no body matches")
    print(f"{len(bodies)} bodies: {', '.join(f'{b.project}/{b.file}:{b.line}' for b in bodies)}", file=sys.stderr)
    cmd = [sys.executable, "-m", "lsp_server.cli.main", "serve"]
    r = asyncio.run(run_real(projects, bodies, cmd, {}, log=lambda m: print(m, file=sys.stderr, flush=True)))
    r.update(half=a.half, seeds=a.seeds, keys=[f"{b.project}/{b.file}:{b.line}" for b in bodies])
    print_real(r)
    with open(a.out, "w") as f:
        json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
