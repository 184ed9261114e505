"""Candidate next edits checked by the real target (service/edit_check.py, the `models` tier): after a rename, the
repeat of it at the old name's remaining uses is a candidate, the target fills each of its places with the new
name and so agrees, and the product proposes it; a candidate that is no follow-up of the edit (another name than
the user chose) is refused, and so is one on a line the edit does not concern. Each check is one prompt and one
verify batch: the answer drafted whole and accepted in one step."""
from lsp_server.context import Document
from lsp_server.context.candidates import make
from lsp_server.context.edits import EditHistory
from lsp_server.pipeline import CompletionRequest
from lsp_server.service.edit_check import plan_checks, run_checks
from lsp_server.service.next_edit import predict

DOC = '''def summarize(orders):
    total = 0
    for order in orders:
        total += order.price
    return total


def report(orders):
    print(summarize(orders))
'''
RENAMED = DOC.replace("    total = 0", "    amount = 0")


def place(text: str, line: int) -> CompletionRequest:
    return CompletionRequest(Document("orders.py", text, "python"), line, 0)


def test_the_repeat_of_a_rename_is_checked_by_the_target_and_proposed(pipeline):
    history = EditHistory(DOC)
    history.record(RENAMED)
    p = predict(pipeline, place(RENAMED, 1), history.diff("orders.py"), history.recent(), "orders.py")
    assert p.source == "repeat" and p.dropped is None
    assert (p.edit.start, p.edit.end) == (3, 5)
    assert p.edit.text == "        amount += order.price\n    return amount\n"
    (verdict,) = p.checks
    assert verdict.agreed and verdict.margin is not None
    assert p.generation is None   # no free rewrite was asked


def test_a_candidate_the_target_would_not_write_is_refused(pipeline):
    wrong = make(RENAMED, 3, 5, "        banana += order.price\n    return banana\n", "test")
    checks = plan_checks(pipeline, place(RENAMED, 1), wrong)
    v = run_checks(pipeline.engine, checks)
    assert not v.agreed and "banana" not in v.written


def test_a_change_to_a_line_the_edit_does_not_concern_is_refused(pipeline):
    unrelated = make(RENAMED, 8, 9, "    print(summarize(orders) * 2)\n", "test")
    v = run_checks(pipeline.engine, plan_checks(pipeline, place(RENAMED, 1), unrelated))
    assert not v.agreed


def test_a_check_is_one_verify_batch(pipeline):
    right = make(RENAMED, 4, 5, "    return amount\n", "test")
    (check,) = plan_checks(pipeline, place(RENAMED, 1), right)
    gen = pipeline.engine.generate(check.request)
    assert gen.text.startswith(check.hole.middle) and gen.steps == 1
