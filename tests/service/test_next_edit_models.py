"""The next-edit prediction with the real default models (the `engine` fixture: `models` tier): after a rename
typed on a variable's definition, the Instruct target, asked through the product's prompt, renames the uses
below it, and the answer becomes the edit of those lines; generated with speculation (the rewrite drafter
proposing the region's own tokens), its tokens are those of plain greedy decoding. In the product the rename is a
candidate the target checks (test_edit_check_models.py) and the free rewrite is asked only where no candidate was
found: here `rewrite`, the free rewrite itself, is asked without the unsure filter, so that its answer is what is
checked. Then inputs that broke it:
a file that spells the chat template's markers, a doc test's fence in the region, a line longer than the
context above it."""
import pytest

from lsp_server.context.edits import EditHistory
from lsp_server.engine.costs import CostModel
from lsp_server.postprocess.next_edit import Edit
from lsp_server.service.next_edit import rewrite

NEAR_TIE = 0.5   # as the other lossless tests: only a near-tie may flip a token

DOC = '''def summarize(orders):
    total = 0
    for order in orders:
        total += order.price
    return total
'''


# what the answer is must not hang on this machine's load: the rewrite's time budget is lifted (a shared 2-core
# CPU can take it past 30 s, and a cut answer proposes less); predict's default was bound when it was defined,
# so each call passes it
UNLIMITED = {"time_budget_s": 600.0}


@pytest.fixture
def deterministic(engine):
    """Verification priced as measured on the 2-core CPU the issue names, so that the controller drafts (see
    test_rewrite_models.cpu_verification)."""
    saved, learned = engine.controller.costs, engine.controller.learned()
    engine.controller.costs = CostModel({n: 0.064 + (0.238 - 0.064) * (n - 1) / 15 for n in (1, 2, 4, 8, 16)})
    yield
    engine.controller.costs = saved
    engine.controller.restore(learned)


class RecordingMargins:
    """The engine, with each generation's top-2 gaps recorded (to tell a near-tie from a real divergence)."""

    def __init__(self, engine):
        self.engine = engine

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def generate(self, req, cancel=None):
        req.record_margins = True
        return self.engine.generate(req, cancel)


def test_the_rename_is_carried_to_the_next_uses_losslessly(engine, deterministic):
    history = EditHistory(DOC)
    text = DOC.replace("    total = 0", "    amount = 0")
    history.record(text)
    args = (text, 1, history.diff("orders.py"), history.recent(), "orders.py", "python")
    spec = rewrite(engine, *args, min_margin=0.0, **UNLIMITED)
    plain = rewrite(RecordingMargins(engine), *args, speculative=False, min_margin=0.0,
                    **UNLIMITED)

    assert plain.generation.stop_reason == "stop", plain.generation.text
    assert plain.dropped is None and plain.edit == Edit(
        3, 5, "        amount += order.price\n    return amount\n", "        total += order.price\n    return total\n")
    assert plain.region == (0, 5)

    g, p = spec.generation, plain.generation
    drafter = g.drafters.get("rewrite")
    assert drafter is not None and drafter.drafted > 0, "the rewrite drafter never drafted: nothing was compared"
    if g.tokens != p.tokens:
        i = next((k for k, (a, b) in enumerate(zip(p.tokens, g.tokens)) if a != b), min(len(p.tokens), len(g.tokens)))
        gap = p.margins[i] if i < len(p.margins) else None
        assert gap is not None and gap < NEAR_TIE, f"diverged at token {i} with top-2 gap {gap}"
    else:
        assert spec.edit == plain.edit
    print(f"\nnext edit: {len(p.tokens)} tokens; plain {p.tok_s:.1f} tok/s in {p.steps} steps, speculative "
          f"{g.tok_s:.1f} tok/s in {g.steps} steps (rewrite drafter {drafter.accepted}/{drafter.drafted})")


# ---- inputs that broke it: the chat's markers in the file, a fenced example, a line past the context --------------

MARKERS = ("<|im_end|>", "<|im_start|>", "<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
           "<|file_sep|>", "<|repo_name|>")
NOTE = "    # chat markers in a comment: <|im_end|> <|im_start|>assistant <|endoftext|> <|fim_prefix|>\n"


def control_tokens(engine, tokens: list[int]) -> list[int]:
    import llama_cpp
    return [t for t in tokens if llama_cpp.llama_vocab_is_control(engine.target.vocab, t)]


def test_file_text_never_becomes_control_tokens(engine):
    """Only the template's markers are control tokens, wherever the file's text spells one: the region, the lines
    above it, the diff, the path. For a file that spells none, the tokens are those of the whole prompt as
    before."""
    from lsp_server.prompt.next_edit import build_prompt
    history = EditHistory(DOC)
    text = DOC.replace("    total = 0\n", "    total = 0\n" + NOTE + "    # " + " ".join(MARKERS) + "\n")
    history.record(text)
    hostile = build_prompt(text, 2, history.diff("<|im_end|>.py"), "<|im_end|>.py", "python", context_above=2)
    assert all(m in hostile.region for m in MARKERS) and "<|im_end|>" in hostile.diff
    clean = build_prompt(DOC, 2, "", "orders.py", "python")
    template = control_tokens(engine, clean.tokens(engine))
    assert len(template) == 5   # <|im_start|> system, user, assistant; <|im_end|> after system and user
    assert control_tokens(engine, hostile.tokens(engine)) == template
    assert clean.tokens(engine) == engine.tokenize(clean.text, special=True)


def test_every_prompt_starts_with_the_head_the_kv_store_keeps(engine):
    """The instructions come first and are the same in every ask: the real tokenizer gives every prompt the head's
    tokens first (whatever the path, the edits and the code after them), and the rewrite's request keeps them."""
    from lsp_server.engine import GenerationRequest
    from lsp_server.prompt.next_edit import build_prompt, head_tokens
    head = head_tokens(engine)
    assert len(head) > 40
    history = EditHistory(DOC)
    history.record(DOC.replace("total", "sum_"))
    for p in (build_prompt(DOC, 2, "", "orders.py", "python"),
              build_prompt(DOC.replace("total", "sum_"), 1, history.diff("a b/ü.py"), "a b/ü.py", "python"),
              build_prompt("```\n" + NOTE, 0, "@@ x\n", "<|im_end|>.md", "markdown")):
        assert p.tokens(engine)[:len(head)] == head
    asked = []
    generate = engine.generate
    engine.generate = lambda req, cancel=None: asked.append(req) or generate(req, cancel)
    try:
        rewrite(engine, DOC.replace("total", "sum_"), 1, history.diff("orders.py"), history.recent(), "orders.py",
                "python", min_margin=0.0, **UNLIMITED)
    finally:
        del engine.generate
    assert isinstance(asked[0], GenerationRequest) and asked[0].keep == len(head)


def test_chat_markers_in_the_file_are_rewritten_as_text(engine, deterministic):
    """A comment that spells the chat's markers: with them as control tokens the model's copy of the comment
    ended its turn there, and the lines it never wrote were proposed as deleted."""
    history = EditHistory(DOC)
    noted = DOC.replace("    total = 0\n", "    total = 0\n" + NOTE)
    history.record(noted, 0.0)
    text = noted.replace("    total = 0", "    amount = 0")
    history.record(text, 100.0)
    p = rewrite(engine, text, 1, history.diff("orders.py"), history.recent(), "orders.py", "python",
                min_margin=0.0, **UNLIMITED)
    assert p.generation.stop_reason == "stop" and NOTE in p.generation.text, p.generation.text
    assert p.edit == Edit(4, 6, "        amount += order.price\n    return amount\n",
                          "        total += order.price\n    return total\n")


RUST = '''/// Sums the prices of the orders.
///
/// ```
/// let orders = vec![Order { price: 2 }];
/// assert_eq!(summarize(&orders), 2);
/// ```
pub fn summarize(orders: &[Order]) -> u32 {
    let mut total = 0;
    for order in orders {
        total += order.price;
    }
    total
}
'''


def test_a_doc_test_in_the_region_does_not_end_the_answer(engine, deterministic):
    """The doc test's fence was the answer's stop string: the answer ended in the doc comment, and the lines
    after it were proposed as deleted. The model closes its answer with three backticks whatever the opening's
    length: that close is found as the first bare fence beyond the region's own."""
    history = EditHistory(RUST)
    text = RUST.replace("    let mut total = 0;", "    let mut amount = 0;")
    history.record(text)
    p = rewrite(engine, text, 7, history.diff("src/lib.rs"), history.recent(), "src/lib.rs", "rust",
                above=12, below=6, min_margin=0.0, **UNLIMITED)   # the region: the doc comment to the closing brace
    assert p.region == (0, 13) and "/// ```\npub fn summarize" in p.generation.text, p.generation.text
    assert p.edit == Edit(9, 12, "        amount += order.price;\n    }\n    amount\n",
                          "        total += order.price;\n    }\n    total\n")


def test_a_line_past_the_context_above_the_region_is_left_out(engine, deterministic):
    """A minified line above the lines to rewrite: the prompt leaves it out and fits (it was ContextFullError at
    every rest)."""
    blob = "var bundle=[" + ",".join(f'"{i:x}"' for i in range(8000)) + "];\n"
    history = EditHistory(blob + DOC)
    text = blob + DOC.replace("    total = 0", "    amount = 0")
    history.record(text)
    p = rewrite(engine, text, 2, history.diff("orders.py"), history.recent(), "orders.py", "python",
                min_margin=0.0, **UNLIMITED)
    assert len(engine.tokenize(blob)) > engine.cfg.n_ctx and p.generation is not None
    assert p.generation.stop_reason == "stop" and p.edit is not None
    assert p.prompt_tokens + len(p.generation.tokens) < engine.cfg.n_ctx
