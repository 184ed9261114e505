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


def place(text: str, line: int, path: str = "orders.py") -> CompletionRequest:
    return CompletionRequest(Document(path, text, "python"), line, 0)


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



FIELDS = '''class URL(Field):
    """A URL."""

    def _validated(self, value):
        if value is None:
            return None
        return validate.URL(relative=self.relative)(value)


class Email(Field):
    """An email address."""

    def _validated(self, value):
        if value is None:
            return None
        return validate.Email()(value)

    def _serialize(self, value, attr, obj):
        return str(value)


class Number(Field):
    """A number."""

    def _format_num(self, value):
        return float(value)
'''


def without_urls_override(text: str) -> tuple[str, EditHistory]:
    cut = text.index("    def _validated(self, value):\n        if value is None:\n            return None\n"
                     "        return validate.URL")
    after = text[:cut].rstrip(" \n") + "\n\n\n" + text[text.index("class Email"):]
    history = EditHistory(text)
    history.record(after)
    return after, history


def test_a_method_taken_out_of_one_class_is_taken_out_of_the_next_where_the_target_agrees(pipeline):
    # the override goes from URL: the same override in Email is the candidate, and the target, asked to fill the
    # place where it stood, goes on with Email's next method
    after, history = without_urls_override(FIELDS)
    line = history.recent()[-1].start   # where the lines were taken out
    p = predict(pipeline, place(after, line, "fields.py"), history.diff("fields.py"), history.recent(), "fields.py")
    assert p.source == "delete" and p.dropped is None, (p.source, p.dropped, p.checks)
    assert p.edit.text == "" and p.edit.old_text.startswith("    def _validated(self, value):\n")
    assert "validate.Email()(value)" in p.edit.old_text and "_serialize" not in p.edit.old_text


def test_a_method_taken_out_where_the_target_writes_something_else_is_not_proposed(pipeline):
    # the override is Email's last method: where it stood, the target writes a class of its own before Number
    text = FIELDS.replace("\n    def _serialize(self, value, attr, obj):\n        return str(value)\n", "")
    after, history = without_urls_override(text)
    p = predict(pipeline, place(after, history.recent()[-1].start, "fields.py"), history.diff("fields.py"),
                history.recent(), "fields.py")
    (verdict,) = p.checks
    assert verdict.candidate.kind == "delete" and not verdict.agreed and verdict.written.strip()
    assert p.edit is None and p.source == "candidates"
