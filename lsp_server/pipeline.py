"""One completion request through every stage: context -> prompt -> engine -> postprocess.
The `tandem` CLI and the language server both call this."""
from __future__ import annotations

import threading
from dataclasses import dataclass

from . import postprocess
from .context import Document
from .engine import Engine, Generation, GenerationRequest
from .prompt import Prompt, PromptBudget, PromptParts, build_prompt


@dataclass
class CompletionRequest:
    document: Document
    line: int                 # 0-based
    col: int                  # 0-based, in characters
    max_tokens: int = 64
    speculative: bool = True
    time_budget_s: float | None = None
    record_margins: bool = False


@dataclass
class Completion:
    text: str                 # what the editor inserts at the cursor
    raw: str                  # what the model wrote, before post-processing
    generation: Generation
    prompt: Prompt


class Pipeline:
    def __init__(self, engine: Engine, budget: PromptBudget | None = None):
        self.engine = engine
        reserve = 64 + engine.cfg.draft_max + 16
        self.budget = budget or PromptBudget(
            prefix_tokens=min(1536, engine.cfg.n_ctx // 2), suffix_tokens=256,
            context_tokens=max(0, engine.cfg.n_ctx - min(1536, engine.cfg.n_ctx // 2) - 256 - reserve - 16))

    def prompt_for(self, doc: Document, line: int, col: int) -> tuple[Prompt, str, str]:
        prefix, suffix = doc.split(line, col)
        return build_prompt(self.engine, PromptParts(prefix, suffix, path=doc.path), self.budget), prefix, suffix

    def complete(self, req: CompletionRequest, cancel: threading.Event | None = None) -> Completion:
        prompt, prefix, suffix = self.prompt_for(req.document, req.line, req.col)
        gen = self.engine.generate(GenerationRequest(
            prompt.tokens, max_tokens=req.max_tokens, stop=prompt.stop, language=req.document.language,
            speculative=req.speculative, time_budget_s=req.time_budget_s, record_margins=req.record_margins,
            left_text=prefix),
            cancel)
        return Completion(postprocess.run(gen.text, prefix, suffix), gen.text, gen, prompt)
