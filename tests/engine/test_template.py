"""The structural drafter on code that lists things (one character = one token here)."""
from lsp_server.engine.drafters.template import TemplateDrafter, substitute

INVOICE = '''@dataclass
class Invoice:
    id: str
    customer_id: str
    currency: str
    issue_date: date
    due_date: date

    def to_dict(self):
        return {
            "id": self.id,
            "customer_id": self.customer_id,
            "currency": self.currency,
'''


def draft(text):
    d = TemplateDrafter(lambda s: list(s)).propose(text, 200)
    return ("".join(d.tokens), d.buckets[0]) if d else None


def test_next_line_takes_the_next_name_of_an_earlier_list():
    assert draft(INVOICE) == ('            "issue_date": self.issue_date,\n', "t-next")
    # with the indentation already typed, only the rest
    assert draft(INVOICE + "            ") == ('"issue_date": self.issue_date,\n', "t-next")


def test_rest_of_line_swaps_the_names_already_swapped():
    # ... and goes on with the list's next line, whose tokens count in the "t-next" bucket
    d = TemplateDrafter(lambda s: list(s)).propose(INVOICE + '            "issue_date": self.', 200)
    assert "".join(d.tokens) == 'issue_date,\n            "due_date": self.due_date,\n'
    assert d.buckets[:12] == ["t-sub"] * 12 and set(d.buckets[12:]) == {"t-next"}
    assert draft(INVOICE + '            "issue_date": self.iss')[0].startswith("ue_date,\n")


def test_no_guess_while_a_new_name_is_still_being_written():
    # `"issue` may become `"issue_date"` or `"issued_on"`: nothing is drafted until the name is done
    assert draft(INVOICE + '            "issue') is None


def test_names_keep_their_own_case_style():
    assert substitute("last_name", {"lastName": "firstName"}) == "first_name"
    assert substitute("LastName", {"last_name": "first_name"}) == "FirstName"
    assert substitute("LAST_NAME", {"lastName": "firstName"}) == "FIRST_NAME"
    assert substitute("other", {"a": "b"}) == "other"
    ts = ("interface User { id: string; firstName: string; lastName: string; email: string }\n"
          "function toRow(u: User) {\n  return {\n    id: u.id,\n    first_name: u.firstName,\n")
    assert draft(ts + "    last_name: u.") == ("lastName,\n", "t-sub")


def test_nothing_to_copy_means_no_draft():
    assert draft("def f(x):\n    y = x * 2\n    return") is None
    assert draft("") is None
    # two lines of different shapes: no template for the next one
    assert draft("import os\nvalue = compute(1)\n") is None
