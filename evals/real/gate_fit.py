"""`tandem-eval gate-fit`: the confidence gate's weights and thresholds (lsp_server/service/gate.json) and the
acceptance predictor's (predictor.json), fitted on what typing sessions showed.

Input: the JSON of `tandem-eval replay --real N --half tune --gate off|both` (one or more runs). Every suggestion
seen there (at a line start, or in time between keys) that the server scored carries the gate's features in its
accept command; the typist recorded how much of it was taken (`took`: whole lines exactly right). Runs with the
gate off give every answer; runs with it on add the answers a gated server judges, which are more and later ones
(the predictor's skips free the model thread, so more answers arrive between keys); what the gate held back there
was not shown and is not an example. The fit:

1. a logistic model of "its first line was taken" over the features (Newton's method, a little L2);
2. for each level, the least score shown: the threshold that maximises, over the suggestions seen, the
   characters taken minus `cost` characters for each wrong one shown (balanced 2, quiet 10: a wrong suggestion
   is read, then typed over). Per language and mode where that cell has at least `MIN_CELL` examples, else per
   mode, else one for all;
3. for each level, the margin below which a later line ends what is shown: the one that maximises the
   characters of taken lines kept minus `cost / 4` for each untaken later line kept;
4. the predictor (features known before generation, which the server reports in the accept command as
   `asked`): a logistic model of "taken" again, and per level the least probability asked of the model, chosen
   with the gate's threshold in place (what the gate would not show anyway gains nothing from a skip) to
   maximise the same characters minus cost; it skips a request only where that pays on the tune half.

Only the tune half's sessions are to be given (the confirm half checks the result)."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from lsp_server.service.gate import Suggestions, Weights

FEATURES = ("low", "mean", "first", "tokens", "lines", "mid")
ASKED = ("mid", "after_opener", "word", "open", "space", "length", "rest", "comment", "taken", "typing")
COSTS = {"balanced": 2.0, "quiet": 10.0}
MIN_CELL = 60
L2 = 0.1


def examples(runs: list[dict]) -> list[dict]:
    """Every scored suggestion seen: {language, mode, features, took, got, line_lows}."""
    out = []
    for r in runs:
        if r.get("half") not in (None, "tune"):
            raise ValueError(f"a run of the {r.get('half')} half: fit on the tune half only")
        for s in r["sessions"]:
            lang = s["body"]["language"]
            for seen in s["tally"]["line_start_seen"] + s["tally"]["in_time_seen"]:
                conf = seen.get("confidence") or {}
                f = conf.get("features")
                if not f or not seen.get("got"):
                    continue
                out.append({"language": lang, "mode": "mid" if f.get("mid") else "line", "features": f,
                            "took": int(seen.get("took") or 0), "got": seen["got"],
                            "line_lows": conf.get("line_lows") or [],
                            "asked": (seen.get("asked") or {}).get("features")})
    return out


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = L2, steps: int = 50) -> np.ndarray:
    """Weights (bias first) of a logistic model by Newton's method with an L2 penalty (not on the bias)."""
    X = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(X.shape[1])
    reg = np.full(X.shape[1], l2)
    reg[0] = 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-np.clip(X @ w, -30, 30)))
        grad = X.T @ (p - y) + reg * w
        hess = (X * (p * (1 - p))[:, None]).T @ X + np.diag(reg) + 1e-9 * np.eye(X.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def best_threshold(scores: list[float], took: list[int], cost: float) -> tuple[float, float]:
    """The least score shown that maximises taken characters minus `cost` per wrong one shown; (threshold, gain)."""
    pairs = sorted(zip(scores, took))
    best_t, best = 0.0, sum(t if t else -cost for _, t in pairs)
    total = best
    for i, (s, t) in enumerate(pairs):   # raise the threshold past pairs[i]
        total -= t if t else -cost
        nxt = pairs[i + 1][0] if i + 1 < len(pairs) else s + 1e-3
        if total > best and nxt > s:
            best_t, best = (s + nxt) / 2, total
    return best_t, best


def best_cut(ex: list[dict], cost: float) -> float:
    """The margin below which a later line ends what is shown (see the module's docstring); 0: never cut."""
    rows = []   # (least margin of the later line, its characters, taken, the margins of the lines before it)
    for e in ex:
        if not e["took"] or not e["line_lows"]:
            continue
        lines = e["got"].strip("\n").split("\n")[1:]
        taken_lines = e["got"][:e["took"]].strip("\n").count("\n")
        for i, low in enumerate(e["line_lows"][:len(lines)]):
            rows.append((low, len(lines[i]) + 1, i < taken_lines, min(e["line_lows"][:i + 1])))
    best_m, best = 0.0, None
    for m in sorted({0.0} | {round(r[0], 2) for r in rows if math.isfinite(r[0])}):
        gain = sum((chars if taken else -cost / 4) for low, chars, taken, upto in rows if upto >= m)
        if best is None or gain > best:
            best_m, best = m, gain
    return best_m


def fit(runs: list[dict], min_cell: int = MIN_CELL) -> tuple[dict, dict, dict]:
    ex = examples(runs)
    if len(ex) < 20:
        raise ValueError(f"{len(ex)} scored suggestions: too few to fit (run the replay with more bodies)")
    x = np.array([[e["features"].get(k, 0.0) for k in FEATURES] for e in ex])
    y = np.array([1.0 if e["took"] else 0.0 for e in ex])
    w = fit_logistic(x, y)
    scores = list(1 / (1 + np.exp(-np.clip(np.hstack([np.ones((len(x), 1)), x]) @ w, -30, 30))))
    took = [e["took"] for e in ex]
    thresholds, report = {}, {"examples": len(ex), "taken": int(y.sum()), "cells": {}}
    for level, cost in COSTS.items():
        t_all, _ = best_threshold(scores, took, cost)
        chosen = {"*": round(t_all, 4)}
        for mode in ("line", "mid"):
            idx = [i for i, e in enumerate(ex) if e["mode"] == mode]
            if len(idx) >= min_cell:
                chosen[f"*/{mode}"] = round(best_threshold([scores[i] for i in idx], [took[i] for i in idx],
                                                           cost)[0], 4)
            for lang in sorted({ex[i]["language"] for i in idx}):
                cell = [i for i in idx if ex[i]["language"] == lang]
                report["cells"][f"{lang}/{mode}"] = len(cell)
                if len(cell) >= min_cell:
                    chosen[f"{lang}/{mode}"] = round(best_threshold([scores[i] for i in cell],
                                                                    [took[i] for i in cell], cost)[0], 4)
        thresholds[level] = chosen
    weights = {"bias": round(float(w[0]), 4), "weights": {k: round(float(v), 4) for k, v in zip(FEATURES, w[1:])},
               "thresholds": thresholds,
               "cut_margin": {level: best_cut(ex, cost) for level, cost in COSTS.items()}}
    for level in COSTS:   # what each level keeps of the examples it was fitted on
        kept = [i for i, s in enumerate(scores) if s >= _threshold(weights, level, ex[i])]
        report[level] = {"shown": len(kept), "wrong": sum(1 for i in kept if not took[i]),
                         "taken_chars": sum(took[i] for i in kept)}
    report["eager"] = {"shown": len(ex), "wrong": int(len(ex) - y.sum()), "taken_chars": sum(took)}
    predictor = fit_predictor(ex, report, weights, scores)
    return weights, report, predictor


def fit_predictor(ex: list[dict], report: dict, gate: dict, scores: list[float]) -> dict:
    """The predictor's weights and per-level thresholds (see the module's docstring)."""
    use = [i for i, e in enumerate(ex) if e.get("asked")]
    if len(use) < 20:
        raise ValueError(f"{len(use)} suggestions with the predictor's features: too few to fit")
    x = np.array([[ex[i]["asked"].get(k, 0.0) for k in ASKED] for i in use])
    y = np.array([1.0 if ex[i]["took"] else 0.0 for i in use])
    w = fit_logistic(x, y)
    probs = 1 / (1 + np.exp(-np.clip(np.hstack([np.ones((len(x), 1)), x]) @ w, -30, 30)))
    thresholds = {}
    for level, cost in COSTS.items():
        # the gate's verdict stays: a skip changes only what the gate would have shown
        shown = [scores[i] >= _threshold(gate, level, ex[i]) for i in use]
        value = [(ex[i]["took"] if ex[i]["took"] else -cost) if s else 0.0 for i, s in zip(use, shown)]
        best_t, best = 0.0, sum(value)
        for t in sorted(set(np.round(probs, 4))):
            total = sum(v for v, p in zip(value, probs) if p >= t)
            if total > best:
                best_t, best = float(t), total
        thresholds[level] = round(best_t, 4)
        kept = [k for k, p in enumerate(probs) if p >= best_t]
        report[f"predictor_{level}"] = {"asked": len(kept), "of": len(use),
                                        "shown": sum(1 for k in kept if shown[k]),
                                        "wrong": sum(1 for k in kept if shown[k] and not ex[use[k]]["took"]),
                                        "taken_chars": sum(ex[use[k]]["took"] for k in kept if shown[k])}
    return {"bias": round(float(w[0]), 4), "weights": {k: round(float(v), 4) for k, v in zip(ASKED, w[1:])},
            "thresholds": thresholds}


def _threshold(weights: dict, level: str, e: dict) -> float:
    """The threshold the server would use for this example (gate.Weights.threshold: its cell, its mode, or all)."""
    return Weights(0.0, {}, weights["thresholds"], {}).threshold(Suggestions(level), e["language"], e["mode"])


def cli(args) -> None:
    runs = [json.loads(Path(p).read_text()) for p in args.runs]
    weights, report, predictor = fit(runs)
    print(json.dumps(report, indent=2))
    print(json.dumps({"gate": weights, "predictor": predictor}, indent=2))
    if args.write:
        folder = Path(args.write)
        (folder / "gate.json").write_text(json.dumps(weights, indent=2) + "\n")
        (folder / "predictor.json").write_text(json.dumps(predictor, indent=2) + "\n")
        print(f"written to {folder}/gate.json and predictor.json", file=sys.stderr)
