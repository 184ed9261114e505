"""Inputs a user meets that broke next edits (service/next_edit.py), with the scripted engine (tests/scripted.py):
a fenced example in the region (its fence was the answer's stop string), a prompt past the context (long lines,
a large paste: ContextFullError at every rest), and an engine that gives no margins (a remote one: the unsure
filter could not be applied). The real models' side is in test_next_edit_models.py, the real server's in
tests/protocol/test_next_edit_lsp.py and tests/engine/test_remote.py."""
from __future__ import annotations

import re

import pytest

from lsp_server.context.edits import EditHistory
from lsp_server.engine import ContextFullError
from lsp_server.pipeline import Pipeline
from lsp_server.postprocess.next_edit import Edit
from lsp_server.service.model import Model
from lsp_server.service.next_edit import NextEdits, rewrite
from lsp_server.service.settings import Settings
from lsp_server.service.stats import ServerStats
from scripted import FIM, ScriptedEngine, fills

URI = "file:///t/orders.py"
DOC = ("def summarize(orders):\n"
       "    total = 0\n"
       "    for order in orders:\n"
       "        total += order.price\n"
       "    return total\n")
RENAMED = DOC.replace("    total = 0", "    amount = 0")


def engine_of(answer, **kw) -> ScriptedEngine:
    return ScriptedEngine(answer, by_prompt=True, strict_context=True,
                          **{"token_s": 0.00002, "step_s": 0.0002, **kw})


def opening(prompt: str) -> str:
    """The backticks of the answer's opening fence, the prompt's last line."""
    return re.search(r"(`+)\w*\n$", prompt).group(1)


def rename_below(prompt: str) -> str:
    """The model's answer: the region the prompt asks for, the rename carried to it, and the closing fence."""
    t = opening(prompt)
    region = prompt.split(f"{t}python\n")[-2].split(t)[0]
    return region.replace("total", "amount") + t


def history_of(before: str, after: str) -> EditHistory:
    h = EditHistory(before)
    h.record(after)
    return h


# ---- a fenced example in the region ---------------------------------------------------------------------------

FENCED = ('def summarize(orders):\n'
          '    """The orders\' total.\n'
          '\n'
          '    ```python\n'
          '    >>> summarize([])\n'
          '    0\n'
          '    ```\n'
          '    """\n'
          '    total = 0\n'
          '    for order in orders:\n'
          '        total += order.price\n'
          '    return total\n')
TAXED = FENCED.replace("def summarize(orders):", "def summarize(orders, tax):")


@pytest.mark.parametrize("close", ["```", "the opening's"])
def test_a_fenced_example_in_the_region_does_not_end_the_answer(close):
    """The model rewrites the whole region, past the docstring's fenced example, and closes its answer with three
    backticks (as the real one does whatever the opening's length) or with the opening fence's run."""
    answer = TAXED.replace("    return total\n", "    return total * (1 + tax)\n")
    engine = engine_of(lambda prompt: answer + (close if close == "```" else opening(prompt)))
    h = history_of(FENCED, TAXED)
    p = rewrite(engine, TAXED, 0, h.diff("orders.py"), h.recent(), "orders.py", "python", below=12)
    assert p.dropped is None and p.edit == Edit(11, 12, "    return total * (1 + tax)\n", "    return total\n")
    assert p.generation.text.startswith(answer)
    assert p.region == (0, 12)


# ---- the context's size -----------------------------------------------------------------------------------------

def test_a_long_line_above_the_region_is_left_out_and_the_rest_fits():
    blob = f"BLOB = '{'x' * 6000}'\n"
    before, after = blob + "\n" + DOC, blob + "\n" + RENAMED
    engine = engine_of(rename_below)
    h = history_of(before, after)
    p = rewrite(engine, after, 3, h.diff("orders.py"), h.recent(), "orders.py", "python")
    assert p.dropped is None and p.edit.text == "        amount += order.price\n    return amount\n"
    prompt = engine.detokenize(engine.prompts[0])
    assert "xxxx" not in prompt and "-    total = 0\n+    amount = 0\n" in prompt
    assert len(engine.prompts[0]) + len(engine.tokenize(p.generation.text)) <= engine.cfg.n_ctx


def test_an_older_paste_goes_before_the_lines_above():
    lines = [f"X{i} = {i}\n" for i in range(20)]
    before = "".join(lines) + DOC
    paste = "".join(f"PASTED_{i} = '{'y' * 200}'\n" for i in range(30))
    pasted = before.replace("X2 = 2\n", "X2 = 2\n" + paste)
    h = EditHistory(before)
    h.record(pasted, 0.0)
    after = pasted.replace("    total = 0", "    amount = 0")
    h.record(after, 100.0)
    assert len(h.recent()) == 2 and len(h.diff("orders.py")) > 4000
    engine = engine_of(rename_below)
    line = after.split("\n").index("    amount = 0")
    p = rewrite(engine, after, line, h.diff("orders.py"), h.recent(), "orders.py", "python")
    assert p.edit is not None
    prompt = engine.detokenize(engine.prompts[0])
    assert "PASTED_" not in prompt.split("```diff")[1].split("```")[0]    # the paste's hunk went first
    assert "X19 = 19\n" in prompt and "+    amount = 0\n" in prompt         # the lines above and the newest stay


@pytest.mark.asyncio
async def test_a_region_too_long_for_the_context_is_skipped_and_counted():
    wide = DOC.replace("    for order in orders:\n", f"    for order in orders:  # {'z' * 6000}\n")
    engine = engine_of(rename_below)
    model = Model(ServerStats())
    s = Settings()
    model.pipeline = Pipeline(engine, s.prompt_budget(), s.fast_prefix_tokens)
    try:
        ne = NextEdits(model)
        ne.opened(URI, wide)
        # a new parameter: nothing the text alone repeats, so the model would be asked
        after = wide.replace("(orders)", "(orders, tax)")
        ne.edited(URI, after)
        assert await ne.ask(URI, after, 2, 0, "orders.py", "python") is None
        assert await ne.ask(URI, after, 2, 0, "orders.py", "python") is None   # and again: remembered
        assert engine.generations == []
        assert ne.summary()["filtered"] == {"too_long": 1} and ne.summary()["empty"] == 1
        assert ne.summary()["remembered"] == 1
    finally:
        model.shutdown()


def test_a_context_full_error_on_the_way_is_a_counted_reason_not_a_failure():
    engine = engine_of(rename_below)

    def full(req, cancel=None):
        raise ContextFullError("the draft limit went up meanwhile")

    engine.generate = full
    h = history_of(DOC, RENAMED)
    p = rewrite(engine, RENAMED, 1, h.diff("orders.py"), h.recent(), "orders.py", "python")
    assert (p.edit, p.dropped, p.generation) == (None, "too_long", None) and p.prompt_tokens > 0


# ---- an engine that gives no margins ----------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_an_engine_without_margins_is_not_asked_for_its_own_rewrite_but_candidates_are_checked():
    """A remote engine gives no margins, so the unsure filter could not judge the model's own rewrite: it is not
    asked. A candidate needs none (the target's greedy answer agrees with it or not): the rename's repeat is
    checked and proposed."""
    want = RENAMED.replace("        total += order.price\n    return total\n",
                           "        amount += order.price\n    return amount\n")
    engine = engine_of(rename_below, fim_answer=fills(want))
    engine.records_margins = False
    model = Model(ServerStats())
    s = Settings()
    model.pipeline = Pipeline(engine, s.prompt_budget(), s.fast_prefix_tokens)
    try:
        ne = NextEdits(model)
        ne.opened(URI, DOC)
        taxed = DOC.replace("(orders)", "(orders, tax)")
        ne.edited(URI, taxed)
        assert await ne.ask(URI, taxed, 2, 0, "orders.py", "python") is None
        assert engine.generations == [] and ne.summary()["filtered"] == {"no_margins": 1}
        # the user's rename: its repeat is a candidate, and the target's fill of each of its places agrees
        ne.opened(URI, DOC)
        ne.edited(URI, RENAMED)
        p = await ne.ask(URI, RENAMED, 3, 1, "orders.py", "python")
        assert p is not None and p.edit.text == "        amount += order.price\n    return amount\n"
        assert len(engine.generations) == 2 and all(FIM.middle == t[-1] for t in engine.prompts)
        assert ne.summary()["from_repeat"] == 1 and ne.summary()["checks"] == {"repeat_agreed": 1}
    finally:
        model.shutdown()
    # with the unsure filter off (the lab's tuning), margins are not needed and the model is asked
    h = history_of(DOC, RENAMED)
    p = rewrite(engine, RENAMED, 1, h.diff("orders.py"), h.recent(), "orders.py", "python",
                min_margin=0.0)
    assert p.edit is not None and len(engine.generations) == 3
