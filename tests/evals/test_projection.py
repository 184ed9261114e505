"""The projection's arithmetic on made-up curves and made-up shadow records (no models)."""
import gzip
import json
import subprocess

import pytest

from evals.speed.projected import ShadowLog, projection_rows, reproject
from evals.speed.projection import (CostCurve, _ReplayModelDrafter, project, project_prompt, verdict)
from evals.speed.shadow import Proposal, ShadowPrompt, ShadowSummary
from lsp_server.engine.acceptance import AcceptanceStats
from lsp_server.engine.controller import Controller
from lsp_server.engine.llama import shared_prefix

from conftest import eval_cmd

PROMPT = list(range(1, 11))
OUT = list(range(100, 120))      # 20 output tokens, ended by the model


def flat(t: float = 1.0, draft: float | None = None) -> CostCurve:
    return CostCurve("flat", {n: t for n in range(1, 18)}, draft)


def record(margins=None, wrong_at: dict | None = None, drafter="template", bucket="t-same") -> ShadowPrompt:
    """A prompt whose drafter proposes the true continuation (up to 16 tokens) everywhere, except where
    `wrong_at` = {position j: index in the proposal} puts a wrong token."""
    sp = ShadowPrompt("made-up", "python", PROMPT, OUT, "eog", margins or [1.0] * len(OUT), 64)
    for j in range(1, sp.steps + 1):
        toks = list(OUT[j:j + 16])
        if wrong_at and j in wrong_at and wrong_at[j] < len(toks):
            toks[wrong_at[j]] = 999
        if toks:
            sp.states.append({drafter: Proposal(toks, [bucket] * len(toks), shared_prefix(toks, OUT[j:]))})
        else:
            sp.states.append({})
    return sp


def trusting(drafter="template", bucket="t-same", rate=1.0) -> dict:
    """Acceptance statistics that have seen this drafter's drafts accepted (at `rate`) many times."""
    stats = AcceptanceStats(None)
    for i in range(300):
        stats.record("python", drafter, [bucket] * 16, 16 if i < rate * 300 else 0)
    return stats.snapshot()


def controller(curve: CostCurve, acceptance: dict) -> Controller:
    stats = AcceptanceStats(None)
    stats.restore(acceptance)
    return Controller(curve.cost_model(), stats, 0, 16)


def test_flat_curve_long_drafts_all_accepted():
    # step 1 verifies 16 drafted tokens (T(17)), all right: 18 tokens out; step 2 the last 2 and the end
    sp = record()
    p = project_prompt(sp, controller(flat(), trusting()), flat(), ("template",))
    assert (p.steps, p.spec_s, p.plain_s) == (2, 2.0, 20.0)
    assert p.speedup == 10.0
    assert p.drafted == {"template": [18, 18]}


def test_near_tie_row_is_decoded_again_and_charged():
    # the row that predicts output token 5 is a near-tie: the verify stops there (4 accepted), that row is
    # decoded alone (one more T(1)), and the next step goes on from token 6
    margins = [1.0] * len(OUT)
    margins[5] = 0.1
    sp = record(margins)
    assert verdict(sp, 1, OUT[1:17]) == (4, True, 1)
    p = project_prompt(sp, controller(flat(), trusting()), flat(), ("template",))
    assert (p.steps, p.spec_s) == (2, 3.0)
    assert p.drafted == {"template": [16 + 14, 4 + 14]}


def test_wrong_token_ends_acceptance():
    sp = record(wrong_at={1: 2})
    assert verdict(sp, 1, sp.states[0]["template"].tokens) == (2, False, 0)
    p = project_prompt(sp, controller(flat(), trusting()), flat(), ("template",))
    # 2 accepted + the target's own token: the next step starts after 4 tokens and takes the other 16
    assert p.steps == 2 and p.spec_s == 2.0
    assert p.drafted["template"] == [16 + 16, 2 + 16]


def test_linear_curve_never_drafts():
    # where a batch of n costs n tokens (a CPU), no draft can pay: plain decoding, speedup exactly 1
    cpu = CostCurve("cpu", {n: 0.05 * n for n in range(1, 18)})
    p = project_prompt(record(), controller(cpu, trusting()), cpu, ("template",))
    assert p.drafted == {} and p.steps == 20 and p.speedup == pytest.approx(1.0)


def test_projection_learns_across_prompts_from_the_run_start():
    # from no statistics, the controller explores and learns; the second prompt profits from the first
    curve = flat()
    rows = project([("a", record()), ("b", record())], curve, {}, 0, 16, ("template",))
    assert rows["b"].speedup >= rows["a"].speedup > 1.0


def test_draft_model_cost_catch_up_and_cache():
    curve = CostCurve("c", {1: 1.0, 2: 1.0}, draft_token_s=0.1, draft_batch_s={1: 0.1, 8: 0.2})
    m = _ReplayModelDrafter(curve, PROMPT)
    m.state = {"model": Proposal(OUT[1:9], ["p90"] * 8, 8)}
    d = m.propose(PROMPT + OUT[:1], 5, lambda d: True)
    # one token to catch up (the output's first), then 4 decodes: every drafted token but the last
    assert d.tokens == OUT[1:6] and d.cost_s == pytest.approx(0.1 + 4 * 0.1)
    assert m.model.tokens == PROMPT + OUT[:1] + OUT[1:5]
    # after 5 accepted and the target's own token, two tokens are new to the draft model
    assert m.model.cached_prefix(PROMPT + OUT[:7]) == len(PROMPT) + 5
    m.state = {"model": Proposal(OUT[7:9], ["p90"] * 2, 2)}
    d = m.propose(PROMPT + OUT[:7], 16, lambda d: True)
    assert d.cost_s == pytest.approx(curve.draft_batch(2) + 0.1)


def test_cost_curve_errors(tmp_path):
    with pytest.raises(ValueError, match="T\\(1\\)"):
        CostCurve("x", {2: 1.0, 4: 2.0})
    with pytest.raises(ValueError, match="positive"):
        CostCurve("x", {1: 0.0, 2: 1.0})
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        CostCurve.load(str(bad))
    bad.write_text(json.dumps({"batch": {}}))
    with pytest.raises(ValueError, match="not a cost file"):
        CostCurve.load(str(bad))
    with pytest.raises(ValueError, match="cannot read"):
        CostCurve.load(str(tmp_path / "missing.json"))


def test_shadow_json_round_trip_and_reprojection(tmp_path, capsys):
    log = ShadowLog(trusting(), 0, 16, ("template",))
    log.prompts = [("python-boilerplate", record())]
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"rows": [{"category": "python-boilerplate", "speedup": 1.0, "aa_noise": 0.01}],
                               "costs_curve": flat(0.05).to_json(), "shadow": log.to_json()}))
    again = ShadowLog.from_json(json.loads(run.read_text())["shadow"])
    assert again.prompts[0][1] == log.prompts[0][1]
    costs = tmp_path / "gpu.json"
    costs.write_text(json.dumps(flat(0.01, 0.001).to_json()))
    report = reproject(str(run), [str(costs)], str(tmp_path / "p.json"), {})
    assert report["projection"]["python-boilerplate"]["gpu.json"]["projected_speedup"] == 10.0
    assert report["projection"] == projection_rows(log, [flat(0.05), CostCurve.load(str(costs))])
    printed = capsys.readouterr().out
    assert "Projected (gpu.json)" in printed and "10.000x" in printed and "1.000x" in printed
    # a run kept gzipped projects the same
    packed = tmp_path / "run.json.gz"
    packed.write_bytes(gzip.compress(run.read_bytes()))
    assert reproject(str(packed), [str(costs)], None, {})["projection"] == report["projection"]


def test_shadow_summary():
    s = ShadowSummary()
    s.add(record(wrong_at={1: 0}))
    row = s.row()["template"]
    assert row["proposals"] == 19 and row["positions"] == 20
    assert row["first_token_right"] == round(18 / 19, 3)


@pytest.mark.slow
def test_bench_refuses_bad_cost_files_before_loading_models(tmp_path):
    r = subprocess.run(eval_cmd() + ["speed", "--costs", str(tmp_path / "none.json")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "cannot read the cost file" in r.stderr and "Traceback" not in r.stderr
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"rows": []}))
    r = subprocess.run(eval_cmd() + ["speed", "--shadow-from", str(plain), "--costs", str(plain)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "holds no shadow acceptance" in r.stderr
    plain.write_text(json.dumps({"shadow": {"prompts": [{"category": "x"}]}}))
    r = subprocess.run(eval_cmd() + ["speed", "--shadow-from", str(plain)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "damaged" in r.stderr and "Traceback" not in r.stderr
    # a run with shadow records but no curve of its own, and no --costs: nothing to project with
    log = ShadowLog({}, 0, 16, ("template",))
    log.prompts = [("python-boilerplate", record())]
    plain.write_text(json.dumps({"shadow": log.to_json()}))
    r = subprocess.run(eval_cmd() + ["speed", "--shadow-from", str(plain)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "give --costs FILE" in r.stderr
    # shadow records need the in-process models: refused with a server backend, before anything is reached
    r = subprocess.run(eval_cmd() + ["speed", "--shadow", "--backend", "http://127.0.0.1:9"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "not with --backend" in r.stderr


def test_fixed_model_draft_path():
    # the bench's fixed k=3 path: every step drafts 3 model tokens (a catch-up batch, 2 decodes) and verifies 4
    sp = record(drafter="model", bucket="p90")
    curve = CostCurve("c", {n: 1.0 for n in range(1, 18)}, draft_token_s=0.1, draft_batch_s={1: 0.1, 16: 0.1})
    p = project_prompt(sp, controller(curve, {}), curve, ("model",), fixed=3)
    assert p.steps == 5 and p.drafted == {"model": [15, 15]}
    assert p.spec_s == pytest.approx(5 * (1.0 + 0.1 + 2 * 0.1))
    assert p.speedup == pytest.approx(20 / 6.5)


def test_tandem_own_work_per_step_is_charged():
    # where nothing is drafted, Tandem's planning per step is what it costs over plain decoding
    cpu = CostCurve("cpu", {n: 0.05 * n for n in range(1, 18)}, step_s=0.005)
    p = project_prompt(record(), controller(cpu, trusting()), cpu, ("template",))
    assert p.drafted == {} and p.speedup == pytest.approx(0.05 / 0.055)
    from evals.speed.projected import planning_s
    assert planning_s({"tandem": {"loop_s": 0.0012}, "plain": {"loop_s": 0.0010}}) == pytest.approx(0.0002)
    assert planning_s({"plain": {"loop_s": 0.001}}) == 0.0


@pytest.mark.models
def test_the_lab_s_speed_table_writes_its_chart_and_json(tmp_path):
    js, chart = tmp_path / "speed.json", tmp_path / "speed.svg"
    r = subprocess.run(eval_cmd() + ["speed", "--categories", "json-api", "--limit", "1", "--max-tokens", "16",
                                     "--repeat", "1", "--no-memory", "--json", str(js), "--chart", str(chart)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "| JSON schema & API mappings |" in r.stdout
    assert json.loads(js.read_text())["rows"][0]["baseline_tok_s"] > 0
    assert chart.read_text().startswith("<svg")
