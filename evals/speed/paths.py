"""The lab's additions to `tandem bench` (lsp_server/bench/run.py): a fixed draft-model path, llama.cpp's own
speculation on the same prompts, and shadow acceptance with its cost projections, each a `BenchExtension`."""
from __future__ import annotations

from lsp_server.bench.run import BenchExtension, BenchPrompt, CategoryResult, path_tok_s
from lsp_server.bench.side_by_side import BenchPath, SideBySide
from lsp_server.engine.drafters import ModelDrafter

from evals.speed import llama_reference, shadow
from evals.speed.projection import FIXED_K, MODEL



def with_model_draft(engine) -> SideBySide:
    """The bench's paths plus a fixed draft of the draft model (k=3), on a draft context of its own."""
    twin = engine.draft.another_context()
    path = BenchPath(True, SideBySide.own_controller(engine), (None, ModelDrafter(twin), None), fixed=FIXED_K)
    return SideBySide(engine, {MODEL: path}, draft_twin=twin)


class ModelDraftColumn(BenchExtension):
    columns = (("Model draft k=3", lambda r: f"{r['model_draft_k3_tok_s']:.1f} tok/s "
                                             f"({r['model_draft_k3_speedup']:.2f}x)"),)

    def add_to_row(self, result: CategoryResult, row: dict, base_tok_s: float, side_by_side: bool) -> None:
        tok_s = path_tok_s(result.passes.get(MODEL, []), side_by_side)
        row["model_draft_k3_tok_s"] = round(tok_s, 2)
        row["model_draft_k3_speedup"] = round(tok_s / base_tok_s, 3) if base_tok_s else 0.0


class LlamaReference(BenchExtension):
    """llama.cpp's llama-speculative-simple (k=3) on each prompt, timed by itself."""

    def __init__(self, binary: str):
        self.binary = binary
        self.columns = (("llama-speculative-simple (k=3)", self._cell),)

    @staticmethod
    def _cell(r: dict) -> str:
        acc = r["llama_speculative_acceptance"]
        return (f"{r['llama_speculative_tok_s']:.1f} tok/s ({r['llama_speculative_speedup']:.2f}x"
                f"{f', {acc * 100:.0f}% accepted' if acc is not None else ''})")

    def after_prompt(self, engine, p: BenchPrompt, result: CategoryResult) -> None:
        ref = llama_reference.run(self.binary, engine, p.prompt.tokens, p.max_tokens)
        tally = result.extra.setdefault("llama", [0, 0.0, []])
        tally[0] += ref["tokens"]
        tally[1] += ref["seconds"]
        if ref["acceptance"] is not None:
            tally[2].append(ref["acceptance"])

    def add_to_row(self, result: CategoryResult, row: dict, base_tok_s: float, side_by_side: bool) -> None:
        tokens, seconds, accept = result.extra.get("llama", [0, 0.0, []])
        tok_s = tokens / seconds if seconds else 0.0
        row["llama_speculative_tok_s"] = round(tok_s, 2)
        row["llama_speculative_speedup"] = round(tok_s / base_tok_s, 3) if base_tok_s else 0.0
        row["llama_speculative_acceptance"] = round(sum(accept) / len(accept), 3) if accept else None


class Shadow(BenchExtension):
    """Untimed, after each prompt's timed passes: every drafter's proposal at every position of its output; after
    the table, the speedup each cost curve projects from them beside the measured one."""

    def __init__(self, engine, curves, with_model: bool):
        from evals.speed.projected import ShadowLog
        self.log = ShadowLog(engine.controller.learned().acceptance, engine.cfg.draft_min, engine.cfg.draft_max,
                             tuple(engine.cfg.drafters))
        self.curves, self.with_model = curves, with_model

    def after_prompt(self, engine, p: BenchPrompt, result: CategoryResult) -> None:
        self.log.prompts.append((p.case.category, shadow.record(
            engine, f"{p.case.category}/{p.case.name}", p.prompt.tokens, p.prefix, p.case.document.language,
            p.max_tokens, p.prompt.stop, tuple(engine.cfg.drafters))))

    def report(self, engine, results, rows, log) -> dict:
        from evals.speed.projected import shadow_report
        return shadow_report(engine, self.log, results, rows, self.curves, self.with_model, log)


class Chart(BenchExtension):
    """An SVG bar chart of the speedups, written after the table."""

    def __init__(self, path: str):
        self.path = path

    def report(self, engine, results, rows, log) -> dict:
        from pathlib import Path

        from evals.speed.chart import speedup_svg
        Path(self.path).write_text(speedup_svg(rows, "Tandem speedup over plain greedy decoding (same run)"))
        log(f"wrote {self.path}")
        return {}
