"""`tandem-eval speed --shadow / --costs FILE / --shadow-from RUN`: shadow acceptance recorded with a run, and the
speedup each cost curve projects from it, printed beside what the run measured."""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

from evals.speed.projection import FIXED_K, MODEL, CostCurve, Projected, project
from evals.speed.shadow import ShadowPrompt, ShadowSummary
from lsp_server.bench.side_by_side import PLAIN, TANDEM

DRAFTER_LABELS = {"ngram": "n-gram", "template": "template", "model": "draft model"}


class ShadowLog:
    """The shadow records of a run, in its order, and the acceptance statistics it started from."""

    def __init__(self, acceptance: dict, draft_min: int, draft_max: int, drafters: tuple[str, ...]):
        self.acceptance, self.draft_min, self.draft_max = acceptance, draft_min, draft_max
        self.drafters = drafters
        self.prompts: list[tuple[str, ShadowPrompt]] = []

    def to_json(self) -> dict:
        return {"acceptance_before": {k: list(v) for k, v in self.acceptance.items()},
                "draft_min": self.draft_min, "draft_max": self.draft_max, "drafters": list(self.drafters),
                "prompts": [{"category": c, **sp.to_json()} for c, sp in self.prompts]}

    @classmethod
    def from_json(cls, d: dict) -> "ShadowLog":
        log = cls({k: tuple(v) for k, v in d["acceptance_before"].items()}, d["draft_min"], d["draft_max"],
                  tuple(d["drafters"]))
        log.prompts = [(p["category"], ShadowPrompt.from_json(p)) for p in d["prompts"]]
        return log

    def summaries(self) -> dict[str, dict]:
        out: dict[str, ShadowSummary] = {}
        for category, sp in self.prompts:
            out.setdefault(category, ShadowSummary()).add(sp)
        return {c: s.row() for c, s in out.items()}

    def project(self, curve: CostCurve, fixed: int = 0) -> dict[str, Projected]:
        if fixed:   # the bench's fixed draft-model path: the draft model alone, a controller learning nothing
            return project(self.prompts, curve, {}, self.draft_min, self.draft_max, ("model",), fixed)
        return project(self.prompts, curve, self.acceptance, self.draft_min, self.draft_max, self.drafters)


def load_costs(paths: list[str] | None) -> list[CostCurve]:
    return [CostCurve.load(p) for p in paths or []]


def projection_rows(log: ShadowLog, curves: list[CostCurve], fixed: int = 0,
                    done: dict[str, dict[str, Projected]] | None = None) -> dict[str, dict[str, dict]]:
    """category -> curve name -> its projected speedup and what was drafted and accepted; `done`: curve name ->
    a projection already made with it (not made again)."""
    out: dict[str, dict[str, dict]] = {}
    for curve in curves:
        projected = (done or {}).get(curve.name) or log.project(curve, fixed)
        for category, p in projected.items():
            out.setdefault(category, {})[curve.name] = {
                "projected_speedup": round(p.speedup, 3), "tokens": p.tokens, "steps": p.steps,
                "plain_s": round(p.plain_s, 4), "spec_s": round(p.spec_s, 4),
                "drafted": {k: {"drafted": d, "accepted": a} for k, (d, a) in p.drafted.items()}}
    return out


def print_shadow(summaries: dict[str, dict], labels: dict[str, str], out=None) -> None:
    out = out or sys.stdout
    drafters = sorted({d for s in summaries.values() for d in s})
    print("\nShadow acceptance (every position of the plain greedy output; a proposal of up to 16 tokens, what "
          "verification accepts of it):", file=out)
    head = "| Task type | positions | " + " | ".join(f"{DRAFTER_LABELS.get(d, d)}: proposals, mean accepted, "
                                                    f"first right" for d in drafters) + " |"
    print(head, file=out)
    print("|" + "---|" * (head.count("|") - 1), file=out)
    for category, s in summaries.items():
        positions = next(iter(s.values()))["positions"] if s else 0
        cells = []
        for d in drafters:
            r = s.get(d)
            cells.append("-" if r is None else f"{r['proposals']}, {r['mean_accepted']:.2f}, "
                                               f"{r['first_token_right'] * 100:.0f}%")
        print(f"| {labels.get(category, category)} | {positions} | " + " | ".join(cells) + " |", file=out)


def print_projection(rows: dict[str, dict[str, dict]], curves: list[CostCurve], labels: dict[str, str],
                     measured: dict[str, dict] | None = None, out=None) -> None:
    """The projected speedups, each column named by its cost file; beside them the measured speedup and its
    A/A noise where this run measured them (the projection with this machine's own curve must agree)."""
    out = out or sys.stdout
    print("\nProjected speedup (the controller planning each step with the cost file's curve and the shadow "
          "acceptance; projected, not measured):", file=out)
    for c in curves:
        where = ", ".join(x for x in (c.machine, c.models, f"depth {c.depth}" if c.depth else "") if x)
        print(f"  {c.name}: T(1) {c.target_s[1] * 1e3:.2f} ms"
              + (f", T(16) {c.cost_model().target(16) * 1e3:.2f} ms" if c.target_s else "")
              + (f", draft token {c.draft_token_s * 1e3:.2f} ms" if c.draft_token_s is not None else ", no draft model")
              + (f" ({where})" if where else ""), file=out)
    head = ("| Task type | " + ("Measured speedup | A/A | " if measured else "")
            + " | ".join(f"Projected ({c.name})" for c in curves) + " |")
    print(head, file=out)
    print("|" + "---|" * (head.count("|") - 1), file=out)
    for category, per in rows.items():
        cells = []
        if measured:
            m = measured.get(category, {})
            aa = m.get("aa_noise")
            cells += [f"{m['speedup']:.3f}x" if "speedup" in m else "-", "-" if aa is None else f"{aa * 100:.1f}%"]
        for c in curves:
            r = per.get(c.name)
            if r is None:
                cells.append("-")
                continue
            used = ", ".join(f"{DRAFTER_LABELS.get(k, k)} {v['accepted']}/{v['drafted']}"
                             for k, v in r["drafted"].items())
            cells.append(f"{r['projected_speedup']:.3f}x" + (f" ({used})" if used else " (no drafts)"))
        print(f"| {labels.get(category, category)} | " + " | ".join(cells) + " |", file=out)


def print_fixed_check(rows: dict[str, dict[str, dict]], curves: list[CostCurve], labels: dict[str, str],
                      measured: dict[str, dict], k: int, out=None) -> None:
    """The fixed draft-model path (k tokens every step): measured against projected with this machine's curves.
    Unlike the controller's path on a CPU (which drafts little), it drafts every step, so it checks the
    projection's arithmetic where the speedup is far from 1."""
    out = out or sys.stdout
    print(f"\nFixed draft-model speculation (k={k}), measured side by side against its projection:", file=out)
    head = ("| Task type | Measured | A/A | " + " | ".join(f"Projected ({c.name})" for c in curves)
            + " | Draft tokens accepted (shadow) |")
    print(head, file=out)
    print("|" + "---|" * (head.count("|") - 1), file=out)
    for category, per in rows.items():
        m = measured.get(category, {})
        aa = m.get("aa_noise")
        d = next((r.get("drafted", {}).get("model") for r in per.values()), None)
        print(f"| {labels.get(category, category)} | "
              + (f"{m['model_draft_k3_speedup']:.3f}x" if "model_draft_k3_speedup" in m else "-")
              + f" | {'-' if aa is None else f'{aa * 100:.1f}%'} | "
              + " | ".join(f"{per[c.name]['projected_speedup']:.3f}x" if c.name in per else "-" for c in curves)
              + " | " + (f"{d['accepted']}/{d['drafted']}" if d else "-") + " |", file=out)


def reproject(run_path: str, cost_paths: list[str] | None, json_path: str | None, labels: dict[str, str]) -> dict:
    """`--shadow-from RUN`: the projection from a saved run's shadow records (its JSON, or that gzipped), with no
    model loaded."""
    try:
        raw = Path(run_path).read_bytes()
        data = json.loads(gzip.decompress(raw) if run_path.endswith(".gz") else raw)
    except OSError as e:
        raise ValueError(f"cannot read {run_path}: {e.strerror or e}")
    except ValueError as e:
        raise ValueError(f"{run_path} is not JSON: {e}")
    if not isinstance(data, dict) or not data.get("shadow"):
        raise ValueError(f"{run_path} holds no shadow acceptance: run `tandem bench --shadow --json {run_path}` "
                         f"first")
    try:
        log = ShadowLog.from_json(data["shadow"])
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise ValueError(f"{run_path}: its shadow records are damaged ({type(e).__name__}: {e})")
    # the run's own controller's curve (its calibration at the end of the run), then the one measured after it
    curves = []
    if data.get("costs"):
        c = data["costs"]
        curves.append(CostCurve("the run's controller", {int(k): v for k, v in c["batch_s"].items()},
                                c.get("draft_token_s")))
    if data.get("costs_curve"):
        curves.append(CostCurve.from_json(data["costs_curve"], "this machine"))
    for c in curves:   # the run's own per-step work (runs before it kept no such figure: 0)
        c.step_s = c.step_s or planning_s(data.get("in_run_costs") or {})
    curves += load_costs(cost_paths)
    if not curves:
        raise ValueError("nothing to project with: give --costs FILE")
    rows = projection_rows(log, curves)
    measured = {r["category"]: r for r in data.get("rows", [])}
    print_shadow(log.summaries(), labels)
    print_projection(rows, curves, labels, measured)
    report = {"from": run_path, "curves": [c.to_json() for c in curves], "projection": rows,
              "shadow_acceptance": log.summaries()}
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=1))
        print(f"wrote {json_path}", file=sys.stderr)
    return report


def in_run_costs(results: dict) -> dict[str, dict]:
    """What each path's steps cost in the run: batch size -> (seconds, verifies), the mean draft-model proposal
    that was verified, and the loop's own seconds per step beyond those (emitting, planning, lookups)."""
    out: dict[str, dict] = {}
    for r in results.values():
        for path, prompts in r.passes.items():
            p = out.setdefault(path, {"verify": {}, "drafts": [0.0, 0], "loop": [0.0, 0]})
            for gens in prompts:
                for g in gens:
                    for n, secs in g.verify_s.items():
                        t, c = p["verify"].get(n, (0.0, 0))
                        p["verify"][n] = (t + sum(secs), c + len(secs))
                    p["drafts"][0] += sum(g.model_draft_s)
                    p["drafts"][1] += len(g.model_draft_s)
                    p["loop"][0] += g.gen_s - sum(map(sum, g.verify_s.values())) - sum(g.model_draft_s)
                    p["loop"][1] += g.steps
    for p in out.values():
        total, count = p.pop("drafts")
        p["model_draft_s"] = total / count if count else None
        total, count = p.pop("loop")
        p["loop_s"] = total / count if count else None
    return out


def planning_s(steps: dict) -> float:
    """Tandem's own work per step beyond plain decoding's, as the run measured it (0 where unknown)."""
    tandem, plain = (steps.get(k, {}).get("loop_s") for k in (TANDEM, PLAIN))
    return max(0.0, tandem - plain) if tandem is not None and plain is not None else 0.0


def shadow_report(engine, shadows: ShadowLog, results: dict, rows: list[dict], cost_files: list[CostCurve],
                  with_model: bool, log) -> dict:
    """After a `--shadow` run: this machine's curve measured now (at the run's mean prompt depth, with the engine's
    own models), the projections beside the measured rows, and what goes into the run's JSON."""
    depth = round(sum(len(sp.prompt) for _, sp in shadows.prompts) / len(shadows.prompts))
    log(f"measuring this machine's cost curve at depth {depth} (target and draft, n = 1..17)...")
    apart = CostCurve.measured_here(engine.target, engine.draft, depth, "this machine, after the run")
    # the fixed k=3 path meets only T(1), T(4) and draft-model proposals, all of which the run's own steps measured
    # (at the run's moments, contexts taking turns): projected with those costs it checks the shadow acceptance and
    # the step arithmetic at the costs the run met. The controller's path plans on the whole curve, whose other sizes
    # no step of the run met: it is projected with the curve measured apart.
    steps = in_run_costs(results)
    # Tandem's own work per step (planning, the drafters' checks), measured in the run, is this machine's too
    apart.step_s = planning_s(steps)
    draft_scale = 1.0
    fixed_apart = shadows.project(apart, FIXED_K) if with_model else {}
    if with_model and steps.get(MODEL, {}).get("model_draft_s"):
        replayed = list(fixed_apart.values())
        replayed_s = sum(p.model_draft_s for p in replayed) / max(1, sum(p.model_proposals for p in replayed))
        draft_scale = steps[MODEL]["model_draft_s"] / replayed_s if replayed_s else 1.0
    verify: dict[int, tuple[float, int]] = {}
    for path in steps.values():
        for n, (total, count) in path["verify"].items():
            t, c = verify.get(n, (0.0, 0))
            verify[n] = (t + total, c + count)
    in_run = apart.scaled_to("this run's steps", {n: t / c for n, (t, c) in verify.items()}, draft_scale)
    # first the curve the run's own controller planned with (its calibration, kept current by the steps): the
    # projection with it must make the run's decisions and agree with the measured column within the A/A
    curves = [CostCurve.of_engine(engine.costs, "the run's controller"), apart] + cost_files
    curves[0].step_s = apart.step_s
    projected = projection_rows(shadows, curves)
    labels = {r["category"]: r["label"] for r in rows}
    measured = {r["category"]: r for r in rows}
    print_shadow(shadows.summaries(), labels)
    print_projection(projected, curves, labels, measured)
    extra = {"costs_curve": apart.to_json(), "costs_curve_in_run": in_run.to_json(),
             "costs_curve_controller": curves[0].to_json(),
             "cost_files": [c.to_json() for c in cost_files],
             "in_run_costs": {k: {"verify_s": {n: round(t / c, 5) for n, (t, c) in v["verify"].items()},
                                  "verifies": {n: c for n, (t, c) in v["verify"].items()},
                                  "model_draft_s": v.get("model_draft_s"), "loop_s": v.get("loop_s")}
                              for k, v in steps.items()},
             "projection": projected, "shadow_acceptance": shadows.summaries(), "shadow": shadows.to_json()}
    if with_model:
        fixed = projection_rows(shadows, [apart, in_run], FIXED_K, done={apart.name: fixed_apart})
        print_fixed_check(fixed, [apart, in_run], labels, measured, FIXED_K)
        extra["projection_model_draft_k3"] = fixed
    return extra
