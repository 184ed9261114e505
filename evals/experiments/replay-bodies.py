"""Typing in real files (`tandem-eval replay --real`), on chosen bodies only: those of the seeded draws of a half
(`--real N --seed S` for the seeds given) whose key (project/file:line) is listed, or whose language and text
match. For a side-by-side on the bodies a change is about; run it from a worktree of the code before to compare
(the server is started from the current folder). Each project's bodies on a server of its own, as the command.

    .venv/bin/python scripts/replay-bodies.py HALF OUT.json [--keys K1,K2] [--draw N] [--seeds 0-11]
                                              [--language python] [--containing '\"\"\"' ...]

Example (the tune half's Python bodies with a docstring or a comment):
`tune /tmp/doc.json --language python --containing '\"\"\"' "'''" '#'`."""
import argparse
import asyncio
import json
import sys

from evals.real.suite import load_projects
from evals.real.typing import pick_bodies, print_real, run_real


def seed_list(text: str) -> list[int]:
    """`A-B` or `A,B,...`."""
    try:
        if "-" in text:
            first, last = (int(x) for x in text.split("-"))
            return list(range(first, last + 1))
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds are A-B or A,B,...: {text!r}") from None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("half", choices=("tune", "confirm"))
    ap.add_argument("out")
    ap.add_argument("--keys", help="comma-separated project/file:line keys")
    ap.add_argument("--draw", type=int, default=24, help="bodies per draw (--real N)")
    ap.add_argument("--seeds", type=seed_list, default="0-11", help="the draws' seeds: A-B or A,B,...")
    ap.add_argument("--language")
    ap.add_argument("--containing", nargs="*", default=[], help="keep a body whose text holds one of these")
    a = ap.parse_args()
    _, projects = load_projects(None, None, a.half, lambda m: print(m, file=sys.stderr))
    pool = {}
    for seed in a.seeds:
        for b in pick_bodies(projects, a.draw, seed):
            pool.setdefault(b.key, b)
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
    print(f"{len(bodies)} bodies: {', '.join(b.key for b in bodies)}", file=sys.stderr)
    cmd = [sys.executable, "-m", "lsp_server.cli.main", "serve"]
    r = asyncio.run(run_real(projects, bodies, cmd, {}, log=lambda m: print(m, file=sys.stderr, flush=True)))
    r.update(half=a.half, seeds=a.seeds, keys=[b.key for b in bodies])
    print_real(r)
    with open(a.out, "w") as f:
        json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
