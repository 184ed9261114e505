"""`tandem-eval`: the lab's command. Quality suites (humaneval, safim, real), typing sessions against `tandem serve`
(replay, visits, soak), and speed measurements beyond `tandem bench` (speed, kv-bench). Every command writes its
raw result as JSON to evals/out/ (git-ignored) unless --json says where; --record adds a line with its headline
figures to the ledger, evals/results.jsonl."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lsp_server.cli.main import die, load_engine
from lsp_server.cli.options import add_engine_options

from evals import ledger


def cmd_humaneval(args) -> None:
    from evals.suites.humaneval import default_data, load_tasks, run_eval
    try:
        load_tasks(args.data or default_data())   # a bad data file fails before the models load
    except ValueError as e:
        die(str(e))
    engine, _ = load_engine(args)
    try:
        run_eval(engine, args)
    except (ValueError, OSError) as e:   # --tasks that match nothing, a --resume file that does not fit
        die(str(e), 1)
    finally:
        engine.close()


def cmd_safim(args) -> None:
    from evals.suites.safim import cli_main
    cli_main(args, load_engine, die)


def cmd_real(args) -> None:
    from evals.common.own_engine import own_engine
    from evals.real.suite import cli_main
    with own_engine(not args.shared_engine):
        cli_main(args, load_engine, die)


def cmd_replay(args) -> None:
    from evals.common.own_engine import own_engine
    if args.real is not None:
        from evals.real.typing import cli as run
    else:
        from evals.sessions.replay import run_replay as run
    try:
        with own_engine(not args.shared_engine):
            run(args)
    except (FileNotFoundError, RuntimeError, ValueError, OSError) as e:
        die(str(e), 1)


def cmd_visits(args) -> None:
    from evals.common.own_engine import own_engine
    from evals.sessions.visits import cli
    try:
        with own_engine(not args.shared_engine):
            cli(args)
    except (FileNotFoundError, RuntimeError, ValueError) as e:
        die(str(e), 1)


def cmd_soak(args) -> None:
    from evals.sessions.soak import run_soak
    try:
        run_soak(args)
    except (FileNotFoundError, RuntimeError, ValueError) as e:
        die(str(e), 1)


def cmd_kv_bench(args) -> None:
    from evals.speed.kvbench import run
    result = run(args)
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


def cmd_speed(args) -> None:
    from evals.speed.cli import run_speed
    run_speed(args)


def cmd_next_edit(args) -> None:
    from evals.suites.next_edit.run import cli_main
    cli_main(args, load_engine)


def cmd_gate_fit(args) -> None:
    from evals.real.gate_fit import cli
    try:
        cli(args)
    except (OSError, ValueError, KeyError) as e:
        die(str(e), 1)


def own_engine_argument(parser) -> None:
    parser.add_argument("--shared-engine", action="store_true",
                        help="the servers use this user's running shared engine (its KV store holds what earlier "
                             "runs evaluated: a second run finds the first one's pages cached); default: an engine "
                             "of this run's own, started fresh and stopped at the end (evals/common/own_engine.py)")


def suite_arguments(e) -> None:
    e.add_argument("--half", choices=("tune", "confirm", "all"), default="all",
                   help="the development data's half, split by problem or project: tune on one, confirm on the other")
    e.add_argument("--data", metavar="PATH", help="a JSONL file of tasks, gzip or not (default: the suite's data in "
                   "../shared/data, else the copy in fixtures/)")
    e.add_argument("--limit", type=int, default=0, help="at most N tasks (default: all)")
    e.add_argument("--tasks", nargs="*", metavar="ID", help="only the tasks whose id ends so "
                   "(e.g. HumanEval/56/L3_L6)")
    e.add_argument("--seed", type=int, help="with --limit: a random sample of tasks drawn with this seed")
    e.add_argument("--resume", metavar="PATH", help="take the answers of the tasks an earlier run's JSON has "
                   "(written every 50 tasks) and compute only the others")
    e.add_argument("--timeout", type=float, default=10.0, help="seconds each task's tests may run (default 10)")
    e.add_argument("--max-tokens", type=int, default=64, help="token limit of raw FIM (default 64); the "
                   "pipeline uses the server's limits")
    e.add_argument("--suffix-tokens", type=int, help="the pipeline's suffix budget (default: the server's)")
    e.add_argument("--suffix-tokens-in-block", type=int, help="the pipeline's suffix budget where code of the "
                   "cursor's block follows (default: the server's)")
    e.add_argument("--skip", nargs="*", choices=("raw", "plain", "pipeline", "tab"), help="answers not to compute")
    add_engine_options(e)
    e.set_defaults(stats="")


def build_parser() -> argparse.ArgumentParser:
    from evals.real import suite as real
    from evals.speed.cli import add_arguments as speed_arguments
    from evals.suites import safim
    p = argparse.ArgumentParser(prog="tandem-eval", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", metavar="PATH", help="where the raw result goes (default: evals/out/)")
    common.add_argument("--record", action="store_true",
                        help="add a line with the headline figures to the ledger, evals/results.jsonl")

    h = sub.add_parser("humaneval", parents=[common], help="HumanEval infilling, scored by running its tests")
    suite_arguments(h)
    h.set_defaults(func=cmd_humaneval)
    s = sub.add_parser("safim", parents=[common], help="SAFIM blocks, control flow and API calls (tests run)")
    suite_arguments(s)
    safim.add_arguments(s)
    s.set_defaults(func=cmd_safim)
    r = sub.add_parser("real", parents=[common],
                       help="holes cut in real projects' files, asked of `tandem serve` (exact match, similarity)")
    suite_arguments(r)
    real.add_arguments(r)
    own_engine_argument(r)
    r.set_defaults(func=cmd_real)

    r = sub.add_parser("replay", parents=[common],
                       help="replay typing sessions against `tandem serve` and report what users feel")
    r.add_argument("--sessions", help="a sessions.json (default: fixtures/replays/sessions.json)")
    r.add_argument("--only", nargs="*", help="only these session files (by name)")
    r.add_argument("--speed", type=float, default=1.0, help="typing speed factor (2 = twice as fast)")
    r.add_argument("--limit-chars", type=int, help="type at most this many characters per session")
    r.add_argument("--options", help="initializationOptions for the server, as JSON")
    r.add_argument("--server-cmd", help="the server to drive, as a shell command (default: this tandem's serve)")
    own_engine_argument(r)
    g = r.add_argument_group("typing in real projects' files (instead of the sessions)")
    g.add_argument("--real", type=int, metavar="N",
                   help="type N function bodies of 3-12 lines drawn from the real suite's pinned projects, as a "
                        "careful person: steady pace, waiting at line starts, accepting only exact lines")
    g.add_argument("--half", choices=("tune", "confirm", "all"), default="confirm",
                   help="the projects' half to draw from (default confirm)")
    g.add_argument("--seed", type=int, default=0, help="the seed that draws the bodies (default 0)")
    g.add_argument("--projects", nargs="*", metavar="NAME", help="only these projects")
    g.add_argument("--corpus", metavar="DIR",
                   help="a local folder of projects (each subfolder one) instead of the pinned ones (no network)")
    g.add_argument("--cps", type=float, default=6.0, help="characters a second (default 6)")
    g.add_argument("--wait", type=float, default=3.0, help="seconds waited for ghost text at a line start (default 3)")
    g.add_argument("--next-edit-asks", choices=("off", "on", "both"), default="off",
                   help="the client asks for next edits as VS Code's does, 500 ms after the typing rests (on); "
                        "both: each body typed twice in one run, asks off and on interleaved, with what the asks "
                        "cost the line starts (default off)")
    g.add_argument("--gate", choices=("off", "on", "both"),
                   help="the confidence gate: off (suggestions eager), on (--gate-level), both: each body typed "
                        "twice in one server, the setting changed between them, which first alternating (default: "
                        "the server's own setting)")
    g.add_argument("--gate-level", choices=("balanced", "quiet"), default="balanced",
                   help="the suggestions level the gate runs at (default balanced)")
    r.set_defaults(func=cmd_replay)

    v = sub.add_parser("visits", parents=[common], help="open, jump, switch, return and type in real-size files "
                                                        "against `tandem serve`; latency per kind of visit")
    v.add_argument("--visits", help="a visits.json (default: fixtures/real/visits.json)")
    v.add_argument("--limit", type=int, default=0, help="only the first N visits")
    v.add_argument("--options", help="initializationOptions for the server, as JSON")
    v.add_argument("--server-cmd", help="the server to drive, as a shell command (default: this tandem's serve)")
    v.add_argument("--think", type=float, default=1.0, help="seconds at a new spot before editing (default 1)")
    v.add_argument("--read", type=float, default=1.0, help="seconds reading each answer (default 1)")
    v.add_argument("--no-cursor", action="store_true",
                   help="a plain LSP client: no tandem/didMoveCursor when the cursor lands somewhere")
    own_engine_argument(v)
    v.set_defaults(func=cmd_visits)

    k = sub.add_parser("soak", parents=[common],
                       help="replay typing for a long time against one server and watch its memory")
    k.add_argument("--minutes", type=float, default=60, help="minutes of the users' own typing time (default 60)")
    k.add_argument("--speed", type=float, default=10, help="time compression of the typing (default 10)")
    k.add_argument("--patience", type=float, default=1.5,
                   help="seconds the typist waits for ghost text at a line end or an accept (default 1.5)")
    k.add_argument("--sample-s", type=float, default=10, help="seconds between memory samples (default 10)")
    k.add_argument("--sessions", help="a sessions.json (default: fixtures/replays/sessions.json)")
    k.add_argument("--options", help="initializationOptions for the server, as JSON")
    k.set_defaults(func=cmd_soak)

    q = sub.add_parser("kv-bench", parents=[common],
                       help="RAM snapshots of KV states against one unified llama.cpp cache, measured")
    q.add_argument("--target", metavar="GGUF", help="the model (default: the cached default target)")
    q.add_argument("--tokens", type=int, default=1500, help="tokens per prompt (default 1500, a page)")
    q.add_argument("--sequences", type=int, nargs="*", default=[1, 4, 8], help="unified caches to try (default 1 4 8)")
    q.add_argument("--threads", type=int, default=0, help="CPU threads (default 2)")
    q.add_argument("--reps", type=int, default=5, help="repetitions; the best is reported (default 5)")
    q.set_defaults(func=cmd_kv_bench)

    n = sub.add_parser("next-edit", parents=[common], help="next-edit proposals over real edits from commit "
                       "histories, beside the plain prompted model and no prediction (--speed: speculation side by side)")
    from evals.suites.next_edit.run import add_arguments as next_edit_arguments
    next_edit_arguments(n)
    add_engine_options(n)
    n.set_defaults(func=cmd_next_edit, stats="")

    f = sub.add_parser("gate-fit", help="fit the confidence gate and the predictor (lsp_server/service/gate.json, "
                                        "predictor.json) on typing sessions of the tune half (replay --real N "
                                        "--half tune --gate off|both --json ...)")
    f.add_argument("runs", nargs="+", help="the replays' JSON files")
    f.add_argument("--write", metavar="DIR", help="write gate.json and predictor.json into this folder (the "
                                                  "package's: lsp_server/service)")
    f.set_defaults(func=cmd_gate_fit, json="", record=False)

    b = sub.add_parser("speed", parents=[common], help="`tandem bench` with the lab's columns: a fixed draft-model "
                       "path, llama.cpp's own speculation, shadow acceptance and cost projections, servers")
    speed_arguments(b)
    b.set_defaults(func=cmd_speed, stats="")
    return p


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.json is None:
        args.json = str(ledger.out_path(args.cmd))
    machine = ledger.machine_speed() if args.record else None   # as fast as the machine was when the run began
    args.func(args)
    if args.record:
        path = Path(args.json)
        if not path.exists():
            die(f"--record: the command wrote no {path}", 1)
        line = ledger.record(["tandem-eval", *(argv if argv is not None else sys.argv[1:])],
                             json.loads(path.read_text()), path, machine=machine)
        print(f"recorded in {ledger.LEDGER}: {json.dumps(line['figures'])}", file=sys.stderr)


if __name__ == "__main__":
    main()
