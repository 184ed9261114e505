"""Tab until done: what a user gets who accepts every suggestion and asks again at the new cursor, as an editor
does after an acceptance, through the server's own path (CompletionService: the typing-through cache, the
continued next line, the prefetched next suggestion, a running generation joined).

A user stops when the suggestion is empty, when it repeats the code below (the hole is filled), or when the
answer has grown `PAST_HOLE_LINES` lines past the hole's length (the completion runs away). Each step's latency
is what the request took on this machine; the text does not depend on it: time budgets, early answers and fast
answers are off, so that the figure is about what the model writes."""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace

from lsp_server.context import Document
from lsp_server.engine import Engine
from lsp_server.pipeline import CompletionRequest, Pipeline
from lsp_server.postprocess.drop_suffix_repeat import same_code
from lsp_server.service.scheduler import CompletionService
from lsp_server.service.settings import Settings

PAST_HOLE_LINES = 5
MAX_STEPS = 24
# between an accept and the editor's next request (an edit and a request over stdio): the prefetch starts
EDITOR_GAP_S = 0.02


@dataclass
class TabRun:
    middle: str                       # everything accepted, in order
    steps: int = 0                    # suggestions accepted
    step_ms: list[float] = field(default_factory=list)   # each request's latency, the last (stopping) one too
    sources: list[str] = field(default_factory=list)     # where each answer came from (model, cache, reuse...)
    stop: str = ""                    # empty | repeats | grown | steps


def first_code_line(text: str) -> str:
    return same_code(next((l.strip() for l in text.split("\n") if l.strip()), ""))


def repeats_below(shown: str, below: str) -> bool:
    """The suggestion writes the code that already follows the cursor: the hole is filled."""
    first = first_code_line(shown)
    return bool(first) and first == first_code_line(below)


class TabUntilDone:
    def __init__(self, engine: Engine, settings: Settings):
        # deterministic text: no time budget, no early or fast answers, no filling ahead between the steps
        self.settings = replace(settings, time_budget_ms=0, early_answer_ms=0, prompt_budget_ms=-1,
                                warmup_pause_ms=-1)
        self.loop = asyncio.new_event_loop()
        self.svc = CompletionService()
        self.svc.settings = self.settings
        self.svc.pipeline = Pipeline(engine, self.settings.prompt_budget(), self.settings.fast_prefix_tokens)
        self._n = 0

    def run(self, path: str, language: str, prefix: str, suffix: str, hole_lines: int,
            speculative: bool = True) -> TabRun:
        self._n += 1
        return self.loop.run_until_complete(self._run(f"file:///tab/{self._n}/{path}", path, language, prefix,
                                                      suffix, hole_lines, speculative))

    async def _run(self, uri: str, path: str, language: str, prefix: str, suffix: str, hole_lines: int,
                   speculative: bool) -> TabRun:
        out = TabRun("")
        svc = self.svc
        try:
            for _ in range(MAX_STEPS):
                text = prefix + out.middle + suffix
                at = prefix + out.middle
                line, col = at.count("\n"), len(at) - (at.rfind("\n") + 1)
                req = CompletionRequest(Document(path, text, language), line, col, speculative=speculative)
                t0 = time.perf_counter()
                ans = await svc.complete(uri, req)
                out.step_ms.append(round((time.perf_counter() - t0) * 1000, 1))
                out.sources.append(ans.source)
                if not ans.text.strip():
                    out.stop = "empty"
                    break
                if repeats_below(ans.text, suffix):
                    out.stop = "repeats"
                    break
                out.middle += ans.text
                out.steps += 1
                svc.on_edit(uri, prefix + out.middle + suffix)   # as the editor's didChange after the accept
                await asyncio.sleep(EDITOR_GAP_S)   # the accept, the edit and the next request take a moment
                if out.middle.count("\n") + 1 > hole_lines + PAST_HOLE_LINES:
                    out.stop = "grown"
                    break
            else:
                out.stop = "steps"
        finally:
            await self._settle(uri)
        return out

    async def _settle(self, uri: str) -> None:
        """Let this task's prefetch end before the next task starts (it would share the model thread)."""
        svc = self.svc
        svc.on_close(uri)   # cancels its jobs
        while svc.jobs.has(uri):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0)

    def close(self) -> None:
        self.svc.shutdown()
        self.loop.close()
