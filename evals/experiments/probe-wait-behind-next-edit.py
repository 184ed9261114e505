#!/usr/bin/env python3
"""How long a completion request waits for the model thread behind a running next edit (a rewrite the model
writes: a new parameter, which no repeat of the text answers). Each trial edits the document, asks for its next
edit, and while it runs (evaluating its prompt, or writing its answer: some time after its prompt was evaluated)
asks for a completion in another document, then reads the request's queue time (its job's start on the model
thread minus its post). The service is the real one with the default models, in-process (`--engine local`) or in
an engine process of its own (`--engine shared`: the cancel crosses the socket). Run with the project's venv:
`.venv/bin/python evals/experiments/probe-wait-behind-next-edit.py --engine local --trials 8`."""
import argparse
import asyncio
import os
import statistics
import tempfile
import time
from dataclasses import replace

os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp()   # an engine process of this run's own
from lsp_server.context import Document  # noqa: E402
from lsp_server.engine.shared.client import stop_all  # noqa: E402
from lsp_server.pipeline import CompletionRequest  # noqa: E402
from lsp_server.service.scheduler import CompletionService  # noqa: E402
from lsp_server.service.settings import Settings  # noqa: E402

# the drafts' acceptance learned in this run only: two runs compared start from the same priors
engine_config = Settings.engine_config
Settings.engine_config = lambda self: replace(engine_config(self), stats_path="")

SHOP = '''def summarize(orders, tax_rate=0.2):
    """Sum the orders' totals, with tax."""
    total = 0.0
    for order in orders:
        total += order.price * order.quantity
    total = total * (1 + tax_rate)
    return total


def describe(order):
    return f"{order.name}: {order.quantity} x {order.price}"
'''


async def main(engine_kind: str, trials: int, longest_s: float) -> None:
    settings = Settings(engine=engine_kind, prefetch=False, warmup_pause_ms=-1, offer_better=False,
                        early_answer_ms=0, time_budget_ms=0, engine_idle_minutes=1, max_tokens=24)
    svc = CompletionService()
    error = await svc.load(settings, lambda msg: None)
    assert error is None, error
    engine = svc.pipeline.engine
    generate = engine.generate
    written: list[float] = []   # when the running next edit's prompt was evaluated (it writes from there)

    def next_edit_says_when_it_writes(req, cancel=None):
        if req.rewrite_source:   # a next edit's rewrite
            req.on_prompt = lambda *args: written.append(time.perf_counter())
        return generate(req, cancel)

    engine.generate = next_edit_says_when_it_writes
    uri = "file:///tmp/probe/shop.py"
    svc.next_edits.opened(uri, SHOP)
    waits: dict[str, list[float]] = {"prompt": [], "answer": []}
    for i in range(trials):
        text = SHOP.replace("tax_rate=0.2)", f"tax_rate=0.2, discount_{i}=0)")
        svc.on_edit(uri, text)
        written.clear()
        asked = asyncio.ensure_future(svc.next_edits.ask(uri, text, i + 2, 4, "shop.py", "python"))
        while "next_edit" not in svc.model.queue.kinds():
            await asyncio.sleep(0.002)
        if i % 3 == 0:   # while it evaluates its prompt
            await asyncio.sleep(0.3)
        else:            # while it writes, spread over its first seconds
            while not written and "next_edit" in svc.model.queue.kinds():
                await asyncio.sleep(0.002)
            await asyncio.sleep(longest_s * (i % 3) / 3)
        phase = "answer" if written else "prompt"
        running = "next_edit" in svc.model.queue.kinds()
        other = f"def area_{i}(width, height):\n    \n"
        req = CompletionRequest(Document(f"/tmp/probe/area_{i}.py", other, "python"), 1, 4)
        await svc.complete(f"file:///tmp/probe/area_{i}.py", req)
        rec = svc.stats.records[-1]
        await asked
        if running:
            waits[phase].append(rec.queue_s)
        state = f"running, {'writing' if written else 'in its prompt'}" if running else "done"
        print(f"trial {i:2d}: the next edit {state}; the request waited {rec.queue_s * 1000:6.0f} ms ({rec.source})",
              flush=True)
    for phase, w in waits.items():
        if w:
            print(f"behind a next edit's {phase} ({len(w)}): p50 {statistics.median(w) * 1000:.0f} ms, "
                  f"max {max(w) * 1000:.0f} ms")
    print(f"next edits: {svc.next_edits.summary()}")
    svc.shutdown()
    stop_all()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", choices=("local", "shared"), default="local")
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--longest-s", type=float, default=3.0, help="how long into its answer a next edit is stopped, at most")
    args = ap.parse_args()
    t0 = time.perf_counter()
    asyncio.run(main(args.engine, args.trials, args.longest_s))
    print(f"({time.perf_counter() - t0:.0f} s)")
