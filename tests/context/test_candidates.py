"""Candidate next edits from the code's structure (context/candidates/): each kind finds the edit that follows a
typical change, from the text alone, and finds nothing where its pattern does not hold. The target's verification
of what they find is tested with the real models in tests/service/."""
from __future__ import annotations

import pytest

from lsp_server.context.candidates import Candidate, find, nearest_first
from lsp_server.context.candidates import calls, lines, pattern, renames, siblings, unused
from lsp_server.context.edits import Hunk, text_change


def edit(before: str, after: str) -> tuple[str, list[Hunk]]:
    """The text after the user's change, and the change as the edit history records it."""
    h = text_change(before, after)
    assert h is not None
    return after, [h]


def one(found: list[Candidate]) -> Candidate:
    assert len(found) == 1, found
    return found[0]


def test_a_receiver_changed_on_one_method_is_changed_on_the_next_one():
    before = ("func (_ formBinding) Name() string {\n\treturn \"form\"\n}\n\n"
              "func (_ formBinding) Bind(req *http.Request) error {\n\treturn nil\n}\n")
    text, recent = edit(before, before.replace("func (_ formBinding) Name()", "func (formBinding) Name()"))
    c = one(pattern.find(text, recent, 0, "go"))
    assert (c.start, c.end) == (4, 5)
    assert c.text == "func (formBinding) Bind(req *http.Request) error {\n"
    assert c.old_text == "func (_ formBinding) Bind(req *http.Request) error {\n"


def test_a_pattern_of_several_pieces_is_made_where_both_stand():
    before = ('    if minor >= 40 {\n        println!("cargo:rustc-cfg=btreemap_get_key_value");\n    }\n'
              '    if minor >= 45 {\n        println!("cargo:rustc-cfg=btreemap_remove_entry");\n    }\n')
    after = before.replace("minor >= 40", "minor < 40").replace("cfg=btreemap_get", "cfg=no_btreemap_get")
    text, recent = edit(before, after)
    c = one(pattern.find(text, recent, 2, "rust"))
    assert (c.start, c.end) == (3, 5)
    assert c.text == '    if minor < 45 {\n        println!("cargo:rustc-cfg=no_btreemap_remove_entry");\n'


def test_no_pattern_where_the_pieces_do_not_explain_the_change():
    before = "x = compute(a, b)\ny = compute(a, b)\n"
    text, recent = edit(before, "x = other_thing(b, a, c) + 1\ny = compute(a, b)\n")
    assert pattern.find(text, recent, 0, "python") == []


def test_a_piece_too_short_to_place_is_widened_and_a_tiny_one_alone_is_refused():
    assert pattern.pieces("func (_ formBinding) Name()", "func (formBinding) Name()") == [("(_ form", "(form", False, True)]
    assert pattern.pieces("a = 1", "a = 2") is not None   # widened to `= 1` -> `= 2`
    assert pattern.pieces("", "") is None


def test_an_inserted_annotation_goes_before_the_next_method_of_that_shape():
    before = ("  public Factory<T> registerSubtype(Class<? extends T> type) {\n    return this;\n  }\n\n"
              "  public Factory<T> registerSubtype(Class<? extends T> type, String label) {\n    return this;\n  }\n")
    after = "  @CanIgnoreReturnValue\n" + before
    text, recent = edit(before, after)
    c = one(lines.find(text, recent, 1, "java"))
    assert (c.start, c.end, c.text) == (5, 5, "  @CanIgnoreReturnValue\n")


def test_an_inserted_line_is_not_proposed_where_it_stands_already():
    before = "#[derive(Debug)]\npub struct A;\n\n#[derive(Clone, Debug)]\npub struct B;\n"
    after = before.replace("#[derive(Debug)]\npub struct A;", "#[derive(Debug)]\n#[derive(Clone, Debug)]\npub struct A;")
    text, recent = edit(before, after)
    assert lines.find(text, recent, 1, "rust") == []


def test_deleted_lines_are_deleted_where_they_stand_again():
    before = ('  @SuppressWarnings("deprecation")\n  void a() {}\n\n  @SuppressWarnings("deprecation")\n  void b() {}\n')
    text, recent = edit(before, before.replace('  @SuppressWarnings("deprecation")\n  void a', "  void a", 1))
    c = one(lines.find(text, recent, 0, "java"))
    assert (c.start, c.end, c.text) == (2, 3, "")


def test_a_method_deleted_from_one_class_is_deleted_from_the_next_with_its_own_body():
    before = ("class URL(Field):\n    def _validated(self, value):\n        if value is None:\n            return None\n"
              "        return validate.URL(relative=self.relative)(value)\n\n    def other(self):\n        pass\n\n\n"
              "class Email(Field):\n    def _validated(self, value):\n        if value is None:\n"
              "            return None\n        return validate.Email()(value)\n\n\nclass Number(Field):\n    pass\n")
    old_method = before[before.index("    def _validated"):before.index("    def other")]
    text, recent = edit(before, before.replace(old_method, "", 1))
    c = one(lines.find(text, recent, 1, "python"))
    assert c.text == "" and c.old_text.startswith("    def _validated(self, value):\n")
    assert "validate.Email()(value)" in c.old_text and "class" not in c.old_text
    # a definition whose first line stands nowhere else, or lines that are not a whole definition: nothing
    text, recent = edit(before, before.replace("    def other(self):\n        pass\n", "", 1))
    assert lines.find(text, recent, 1, "python") == []
    cut = "        if value is None:\n            return None\n"
    text, recent = edit(before, before.replace(cut, "", 1))
    assert [c.old_text for c in lines.find(text, recent, 1, "python")] == [cut]   # the same lines, not the method


def test_a_go_method_deleted_goes_where_the_same_signature_stands_again():
    before = ("func (a *A) Close() error {\n\treturn a.f.Close()\n}\n\nfunc (b *B) Open() {}\n\n"
              "func (a *A) Close() error {\n\ta.done = true\n\treturn nil\n}\n")
    text, recent = edit(before, before.replace("func (a *A) Close() error {\n\treturn a.f.Close()\n}\n\n", "", 1))
    c = one(lines.find(text, recent, 0, "go"))
    assert c.old_text.startswith("func (a *A) Close() error {\n\ta.done = true") and c.text == ""


def test_a_brace_deleted_is_no_pattern():
    before = "if a {\n}\nif b {\n}\n"
    text, recent = edit(before, "if a {\nif b {\n}\n")
    assert lines.find(text, recent, 0, "go") == []


def test_a_renamed_parameter_is_renamed_at_its_uses_though_its_type_changed_too():
    before = ("static Map getSerializers(boolean special, boolean serializeLongsAsString) {\n"
              "  Map m = new HashMap();\n  m.put(Long.class, new LongSerializer(serializeLongsAsString));\n"
              "  return m;\n}\n")
    after = before.replace("boolean serializeLongsAsString)", "LongSerializationPolicy longSerializationPolicy)")
    text, recent = edit(before, after)
    assert renames.substitutions(recent[-1]) == [("serializeLongsAsString", "longSerializationPolicy")]
    c = one(renames.find(text, recent, 0, "java"))
    assert (c.start, c.end) == (2, 3)
    assert c.text == "  m.put(Long.class, new LongSerializer(longSerializationPolicy));\n"


def test_a_name_still_used_in_the_changed_lines_is_no_rename():
    before = "def f(a, b):\n    return a + b\n\nx = a\n"
    text, recent = edit(before, "def f(b, a):\n    return a + b\n\nx = a\n")
    assert renames.find(text, recent, 0, "python") == []


# a Go method (its receiver's list comes first) that fills a struct literal from its parameters
COOKIE_METHOD = ("func (c *Context) SetCookie(name, value string, path, domain string, secure bool) {\n"
                 "\thttp.SetCookie(c.Writer, &http.Cookie{\n\t\tName:   name,\n\t\tValue:  value,\n"
                 "\t\tPath:   path,\n\t\tDomain: domain,\n\t\tSecure: secure,\n\t})\n}\n")


def same_site_added(before: str):
    """The text and recent edits after a `sameSite` parameter is put in after `domain string`."""
    return edit(before, before.replace("domain string, secure", "domain string, sameSite http.SameSite, secure"))


def test_a_new_parameter_is_listed_where_its_siblings_are():
    text, recent = same_site_added("func SetCookie(name, value string, maxAge int, path, domain string, secure, "
                                   "httpOnly bool) {\n"
                                   "\thttp.SetCookie(c.Writer, &http.Cookie{\n\t\tName:     name,\n"
                                   "\t\tValue:    value,\n\t\tMaxAge:   maxAge,\n\t\tPath:     path,\n"
                                   "\t\tDomain:   domain,\n\t\tSecure:   secure,\n\t\tHttpOnly: httpOnly,\n\t})\n}\n")
    assert siblings.added_member(text, recent[-1], "go")[0] == "sameSite"
    c = one(siblings.find(text, recent, 0, "go"))
    assert (c.start, c.end, c.text) == (7, 7, "\t\tSameSite: sameSite,\n")   # the values' column kept


def test_a_new_parameter_of_a_method_is_found_in_its_own_list_not_its_receivers():
    text, recent = same_site_added(COOKIE_METHOD)
    assert siblings.added_member(text, recent[-1], "go")[0] == "sameSite"
    c = one(siblings.find(text, recent, 0, "go"))
    assert (c.start, c.end, c.text) == (6, 6, "\t\tSameSite: sameSite,\n")


@pytest.mark.parametrize("line,want", [
    ("\t\tDomain:   domain,", "\t\tSameSite: sameSite,"),       # the longer name eats the alignment
    ("\tX:        x,", "\tSameSite: sameSite,"),
    ("\tDomain: domain,", "\tSameSite: sameSite,"),             # one space at least
    ("    self.domain = domain", "    self.sameSite = sameSite"),
    ("DOMAIN    = 'domain'  # the domain", "SAMESITE  = 'sameSite' # the sameSite"),   # as near as it fits
])
def test_a_renamed_line_keeps_its_columns(line, want):
    old = "x" if line.startswith("\tX") else "domain"
    assert siblings.renamed(line, old, "sameSite") == want


def test_a_new_field_line_is_assigned_where_its_siblings_are():
    before = ("class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n\n"
              "    def __repr__(self):\n        return f'Point({self.x}, {self.y})'\n")
    after = before.replace("def __init__(self, x, y):", "def __init__(self, x, y, z):")
    text, recent = edit(before, after)
    c = one(siblings.find(text, recent, 1, "python"))
    assert (c.start, c.end, c.text) == (4, 4, "        self.z = z\n")


def test_a_parameter_added_to_a_call_is_added_to_the_others_of_the_old_arity():
    before = ("        self._apply('only', self.only)\n        x = 1\n        self._apply('exclude', excludes)\n"
              "        self._apply('load_only', a, b)\n")
    text, recent = edit(before, before.replace("self.only)", "self.only, 'intersection')"))
    got = calls.changed_call(recent[-1], "python")
    assert got == ("_apply", 2, 2, "'intersection'", False)
    c = one(calls.find(text, recent, 0, "python"))
    assert (c.start, c.end, c.text) == (2, 3, "        self._apply('exclude', excludes, 'intersection')\n")


def test_a_new_parameter_of_a_definition_is_passed_at_the_calls():
    before = "def validate(obj):\n    pass\n\ndef run(obj, parents):\n    validate(obj)\n"
    text, recent = edit(before, before.replace("def validate(obj):", "def validate(obj, parents):"))
    c = one(calls.find(text, recent, 0, "python"))
    assert (c.start, c.end, c.text) == (4, 5, "    validate(obj, parents)\n")


def test_a_method_whose_last_call_was_replaced_goes_with_its_blank_line():
    before = ("func (c *Context) Render(code int) {\n\tif err != nil {\n\t\tc.renderError(err)\n\t}\n}\n\n"
              "func (c *Context) renderError(err error) {\n\tdebugPrintError(err)\n}\n\n"
              "// HTML renders.\nfunc (c *Context) HTML() {}\n")
    text, recent = edit(before, before.replace("\t\tc.renderError(err)", "\t\tpanic(err)"))
    c = one(unused.find(text, recent, 2, "go"))
    assert (c.start, c.end, c.text) == (6, 10, "")
    assert c.old_text.startswith("func (c *Context) renderError") and c.old_text.endswith("}\n\n")


def test_a_python_method_whose_last_call_was_replaced_goes_too():
    # a method is indented: it is found from its first word, not from column 0 (its class's block)
    before = ("class Schema:\n    def dump(self, obj):\n        return self._old_dump(obj)\n\n"
              "    def _old_dump(self, obj):\n        return dict(obj)\n\n    def load(self, data):\n"
              "        return data\n")
    text, recent = edit(before, before.replace("self._old_dump(obj)", "dict(obj)"))
    c = one(unused.find(text, recent, 2, "python"))
    assert c.old_text == "    def _old_dump(self, obj):\n        return dict(obj)\n\n" and c.text == ""


def test_a_variant_whose_last_use_went_goes_with_its_doc_comment():
    before = ("fn code(e: &E) -> bool {\n    match e {\n        E::A\n        | E::Bravo => true,\n"
              "        _ => false,\n    }\n}\n\nenum E {\n    /// a.\n    A,\n\n    /// bravo.\n    Bravo,\n\n"
              "    /// c.\n    Charlie,\n}\n")
    after = before.replace("        E::A\n        | E::Bravo => true,\n", "        E::A => true,\n")
    text, recent = edit(before, after)
    c = one(unused.find(text, recent, 2, "rust"))
    assert c.old_text == "    /// bravo.\n    Bravo,\n\n" and c.text == ""


@pytest.mark.parametrize("language,public,private", [
    ("java", "  public static Builder builder(Type type) {\n    return null;\n  }\n",
     "  private static Builder builder(Type type) {\n    return null;\n  }\n"),
    ("go", "func Builder(t int) int {\n\treturn t\n}\n", "func builder(t int) int {\n\treturn t\n}\n"),
    ("rust", "pub fn builder(t: u8) -> u8 {\n    t\n}\n", "fn builder(t: u8) -> u8 {\n    t\n}\n"),
    ("typescript", "export function builder(t: number) {\n  return t\n}\n",
     "function builder(t: number) {\n  return t\n}\n"),
    ("python", "def builder(t):\n    return t\n", "def _builder(t):\n    return t\n"),
])
def test_a_function_other_files_may_call_is_not_taken_out(language, public, private):
    # its last use in this file gone is no sign it is unused: a public method of a Java class stays
    for definition, found in ((public, False), (private, True)):
        name = "Builder" if "Builder(t int)" in definition else "_builder" if "_builder" in definition else "builder"
        before = f"{definition}\nx = {name}(1)\n"
        text, recent = edit(before, before.replace(f"x = {name}(1)", "x = 1"))
        got = unused.find(text, recent, len(text.split("\n")) - 2, language)
        assert bool(got) == found, (language, definition)


def test_a_name_still_used_elsewhere_is_not_taken_out():
    before = "def helper():\n    pass\n\nhelper()\nhelper()\n"
    text, recent = edit(before, "def helper():\n    pass\n\nother()\nhelper()\n")
    assert unused.find(text, recent, 3, "python") == []


def test_a_new_import_is_listed_where_the_other_imports_are_exported():
    before = ("import warning from './utils/warning'\nimport compose from './compose'\n\nexport {\n"
              "  compose,\n  warning\n}\n")
    after = before.replace("import compose from './compose'\n",
                           "import compose from './compose'\nimport isAction from './utils/isAction'\n")
    text, recent = edit(before, after)
    c = one(siblings.find(text, recent, 2, "typescript"))
    assert c.text == "  isAction,\n" and c.start == c.end == 6


def test_find_puts_the_nearest_first_and_never_two_over_the_same_lines():
    before = "a = old_name\nb = 1\nc = old_name\n"
    text, recent = edit(before, "a = new_name\nb = 1\nc = old_name\n")
    found = find(text, recent, 0, "python")
    assert found and found[0].kind == "repeat" and found[0].text == "c = new_name\n"
    assert len({(c.start, c.end) for c in found}) == len(found)


def test_nothing_without_recent_edits():
    assert find("a = 1\n", [], 0, "python") == []


@pytest.mark.parametrize("lines_at,cursor,want", [([1, 5, 9], 4, [5, 9, 1]), ([1, 2], 7, [2, 1]), ([], 0, [])])
def test_nearest_first(lines_at, cursor, want):
    assert nearest_first(lines_at, cursor) == want


def test_a_candidate_turned_away_does_not_keep_out_another_at_its_lines():
    """The user's insertion repeated before `secure` elsewhere (`Secure: sameSite http.SameSite, secure,`) breaks
    the syntax there; dropped, it leaves room for the new field's line beside its siblings at the same place."""
    text, recent = same_site_added(COOKIE_METHOD)
    assert [c.kind for c in find(text, recent, 0, "go")] == ["repeat"]
    got = find(text, recent, 0, "go", admit=lambda c: "http.SameSite," not in c.text)
    assert [(c.kind, c.start, c.end, c.text) for c in got] == [("sibling", 6, 6, "\t\tSameSite: sameSite,\n")]
