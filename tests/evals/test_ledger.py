"""The results ledger: a line per measurement with its date, commit, the machine's measured speed, the command and
the headline figures of the run's report, appended, never rewritten."""
import json

from evals import ledger


def test_a_line_holds_the_run_s_headline_figures_and_where_and_when_it_ran(tmp_path):
    book = tmp_path / "results.jsonl"
    book.write_text('{"date": "2026-12-01", "command": "an older line"}\n')
    report = {"summary": {"raw": {"tasks": 40, "pass_at_1": 0.4, "tokens": 999, "tok_s": 3.2},
                          "pipeline": {"tasks": 40, "pass_at_1": 0.123456, "exact_match": 0.25}},
              "results": [{"id": "a task's answers stay in the raw file"}]}
    line = ledger.record(["tandem-eval", "humaneval", "--limit", "40"], report, tmp_path / "raw.json", book,
                         machine={"cpu": "x86_64", "cores": 2, "gflops": 40.0})
    lines = book.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["command"] == "an older line"
    assert json.loads(lines[1]) == line
    assert line["command"] == "tandem-eval humaneval --limit 40" and line["raw"].endswith("raw.json")
    assert line["figures"] == {"raw": {"pass_at_1": 0.4, "tasks": 40},
                               "pipeline": {"pass_at_1": 0.123, "exact_match": 0.25, "tasks": 40}}
    assert len(line["date"]) == 10 and line["commit"] and line["machine"]["gflops"] == 40.0


def test_the_speed_table_s_rows_and_the_visits_kinds_give_their_figures():
    bench = {"rows": [{"category": "go", "speedup": 0.995, "baseline_tok_s": 14.1, "spec_tok_s": 14.0,
                       "divergences": []}]}
    assert ledger.headline(bench) == {"go": {"speedup": 0.995, "baseline_tok_s": 14.1, "spec_tok_s": 14.0}}
    visits = {"by_kind": {"open": {"p50_ms": 1829.7067, "exact": 1, "visits": 3}}}
    assert ledger.headline(visits) == {"open": {"p50_ms": 1829.707, "exact": 1}}


def test_the_machine_s_speed_is_measured_not_assumed():
    m = ledger.machine_speed(0.05)
    assert m["cores"] >= 1 and m["gflops"] > 0


def test_typing_in_real_files_gives_its_totals():
    typing = {"total": {"chars": 2317, "from_ghost_share": 0.19033, "line_starts": 66, "line_starts_right": 16,
                        "line_start_p50_ms": 966.9977}, "sessions": [{"file": "a body's record"}]}
    assert ledger.headline(typing) == {"total": {"from_ghost_share": 0.19, "line_starts": 66,
                                                 "line_starts_right": 16, "line_start_p50_ms": 966.998}}
