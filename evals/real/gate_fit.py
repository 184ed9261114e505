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
   characters taken minus `cost` characters for each wrong one shown (balanced 0.5, quiet 3: a wrong suggestion
   is read, then typed over, and its rest is shown again at each key typed along it). Per language and mode
   where that cell has at least `MIN_CELL` examples, else per mode, else one for all; quiet's never below
   balanced's;
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
COSTS = {"balanced": 0.5, "quiet": 3.0}
MIN_CELL = 60
L2 = 0.1


def examples(runs: list[dict]) -> list[dict]:
    """Every scored suggestion seen: {language, mode, features, took, got, line_lows, reshown}. The rest of an
    answer shown again from the typing cache, as the typist typed along it, is a suggestion shown too (wrong
    where its line was): the server reports the verdict on the answer it is the rest of, so it is an example of
    its own. From a server that did not, `reshown` counts these for the answer they were the rest of."""
    out = []
    for r in runs:
        if r.get("half") not in (None, "tune"):
            raise ValueError(f"a run of the {r.get('half')} half: fit on the tune half only")
        for s in r["sessions"]:
            lang = s["body"]["language"]
            seen_all = s["tally"]["line_start_seen"] + s["tally"]["in_time_seen"]
            mine = []
            for seen in seen_all:
                conf = seen.get("confidence") or {}
                f = conf.get("features")
                if not f or not seen.get("got"):
                    continue
                mine.append({"language": lang, "mode": "mid" if f.get("mid") else "line", "features": f,
                             "took": int(seen.get("took") or 0), "got": seen["got"], "want": seen.get("want", ""),
                             "line_lows": conf.get("line_lows") or [], "reshown": 0,
                             "asked": (seen.get("asked") or {}).get("features")})
            for seen in seen_all:   # (a server that reports the verdict with a cache answer made it an example)
                if seen.get("got") and seen.get("source") == "cache" and not (seen.get("confidence") or {}).get(
                        "features"):
                    e = reshown_of(seen, mine)
                    if e is not None:
                        e["reshown"] += 1
            out += mine
    return out


def reshown_of(seen: dict, scored: list[dict]) -> dict | None:
    """The scored suggestion whose rest a cache answer showed (its text ends with the answer's, and the line the
    typist was to type then ends with the line wanted now), the shortest such; None where none was seen (an
    answer that came too late to be seen, stored in the cache all the same)."""
    got, want = seen["got"], seen.get("want", "")
    match = [e for e in scored if len(e["got"]) > len(got) and e["got"].endswith(got) and e["want"].endswith(want)]
    return min(match, key=lambda e: len(e["got"])) if match else None


def wrong_count(e: dict) -> int:
    """The wrong suggestions a scored one counts for where it is shown: itself and its rest shown again."""
    return 0 if e["took"] else 1 + e.get("reshown", 0)


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


def best_threshold(scores: list[float], took: list[int], cost: float,
                   wrong: list[int] | None = None) -> tuple[float, float]:
    """The least score shown that maximises taken characters minus `cost` per wrong one shown (`wrong`: how many
    each counts for, 1 each by default); (threshold, gain)."""
    wrong = wrong if wrong is not None else [0 if t else 1 for t in took]
    pairs = sorted(zip(scores, took, wrong))
    best_t, best = 0.0, sum(t - cost * n for _, t, n in pairs)
    total = best
    for i, (s, t, n) in enumerate(pairs):   # raise the threshold past pairs[i]
        total -= t - cost * n
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
    wrong = [wrong_count(e) for e in ex]
    thresholds, report = {}, {"examples": len(ex), "taken": int(y.sum()), "cells": {}}

    def best(idx: list[int], cost: float) -> float:
        return round(best_threshold([scores[i] for i in idx], [took[i] for i in idx], cost,
                                    [wrong[i] for i in idx])[0], 4)

    for level, cost in COSTS.items():
        chosen = {"*": best(list(range(len(ex))), cost)}
        for mode in ("line", "mid"):
            idx = [i for i, e in enumerate(ex) if e["mode"] == mode]
            if len(idx) >= min_cell:
                chosen[f"*/{mode}"] = best(idx, cost)
            for lang in sorted({ex[i]["language"] for i in idx}):
                cell = [i for i in idx if ex[i]["language"] == lang]
                report["cells"][f"{lang}/{mode}"] = len(cell)
                if len(cell) >= min_cell:
                    chosen[f"{lang}/{mode}"] = best(cell, cost)
        thresholds[level] = chosen
    thresholds["quiet"] = quiet_not_below_balanced(thresholds)
    weights = {"bias": round(float(w[0]), 4), "weights": {k: round(float(v), 4) for k, v in zip(FEATURES, w[1:])},
               "thresholds": thresholds,
               "cut_margin": {level: best_cut(ex, cost) for level, cost in COSTS.items()}}
    for level in COSTS:   # what each level keeps of the examples it was fitted on
        kept = [i for i, s in enumerate(scores) if s >= _threshold(weights, level, ex[i])]
        report[level] = {"shown": len(kept), "wrong": sum(wrong[i] for i in kept),
                         "taken_chars": sum(took[i] for i in kept)}
    report["eager"] = {"shown": len(ex), "wrong": sum(wrong), "taken_chars": sum(took)}
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
        value = [ex[i]["took"] - cost * wrong_count(ex[i]) if s else 0.0 for i, s in zip(use, shown)]
        best_t, best = 0.0, sum(value)
        for t in sorted(set(np.round(probs, 4))):
            total = sum(v for v, p in zip(value, probs) if p >= t)
            if total > best:
                best_t, best = float(t), total
        thresholds[level] = round(best_t, 4)
        kept = [k for k, p in enumerate(probs) if p >= best_t]
        report[f"predictor_{level}"] = {"asked": len(kept), "of": len(use),
                                        "shown": sum(1 for k in kept if shown[k]),
                                        "wrong": sum(wrong_count(ex[use[k]]) for k in kept if shown[k]),
                                        "taken_chars": sum(ex[use[k]]["took"] for k in kept if shown[k])}
    return {"bias": round(float(w[0]), 4), "weights": {k: round(float(v), 4) for k, v in zip(ASKED, w[1:])},
            "thresholds": thresholds}


def quiet_not_below_balanced(thresholds: dict) -> dict:
    """Quiet's thresholds, each at least balanced's for the same cell (as the server looks a cell up: its own, its
    mode's, or all), so quiet never shows what balanced holds back."""
    table = Weights(0.0, {}, thresholds, {})
    out = {}
    for key in set(thresholds["quiet"]) | set(thresholds["balanced"]):
        lang, _, mode = key.partition("/")
        out[key] = max(table.threshold(Suggestions.QUIET, lang, mode) or 0.0,
                       table.threshold(Suggestions.BALANCED, lang, mode) or 0.0)
    return out


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
