"""Whether to complete at a cursor, and how much: one line mid-statement, a block where one is opened, and on a
new line between a block's statements either (`Mode.maybe_block`): the code there cannot tell a line missing
from a block missing (the signals that announce a block, such as names used below and bound nowhere, a `return`
right below, a dedent, fire as often at one-line holes), so the model writes on and its end decides."""
from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Tree

from .near_lines import first_above, first_below, line_after, line_before
from .syntax import parse

# what may stand right of the cursor when ghost text is still right: closers and terminators, and the brace that
# opens the statement's block (`if (|) {`: a condition, 65 % of SAFIM's control-flow holes)
CLOSERS = set(")]}>\"'`;,: \t")
BLOCK_OPENER = "{"
OPENERS = (":", "{", "(", "[", "=>", "->")
TOP_LEVEL = {"module", "program", "source_file", "translation_unit", "compilation_unit"}
BLOCKS = ("block", "body", "compound_statement", "declaration_list")
DEFINITIONS = {"function_definition", "class_definition", "decorated_definition"}


@dataclass
class Mode:
    complete: bool
    multiline: bool
    why: str
    # one line or a block, as the model decides: generate a block; show it whole where the model ends it by
    # itself (end of the middle, or the code below again), else its first line, the rest kept as the next
    # suggestion (postprocess.Around.ended)
    maybe_block: bool = False


def decide(prefix: str, suffix: str, language: str, tree: Tree | None | bool = False) -> Mode:
    """`tree`: the parse of prefix + suffix if the caller has one (None: no grammar); parsed here if not."""
    before, after = line_before(prefix), line_after(suffix)
    rest = after.rstrip()
    if not set(rest[:-1] if rest.endswith(BLOCK_OPENER) else rest) <= CLOSERS:
        return Mode(False, False, "text right of the cursor")
    if before.strip():
        return Mode(True, False, "mid-statement")
    above, below = first_above(prefix) or "", first_below(suffix) or ""
    # a block opener right above an empty line asks for its body, unless the body is already below: then
    # the cursor's line is one more line of that body (or an opener for the deeper lines below it)
    if above.rstrip().endswith(OPENERS) and not _indent(below) > _indent(above):
        return Mode(True, True, "after a block opener")
    if tree is False:
        tree = parse(prefix + suffix, language)
    if tree is None:
        return Mode(True, False, "no grammar")
    row = prefix.count("\n")
    col = len(before.encode("utf-8"))
    node = tree.root_node.descendant_for_point_range((row, col), (row, col))
    while node is not None and not (node.type in TOP_LEVEL or node.type in DEFINITIONS
                                    or any(b in node.type for b in BLOCKS)):
        node = node.parent
    if node is None or node.type in TOP_LEVEL:
        return Mode(True, True, "new top-level definition")
    if node.type in DEFINITIONS:
        # reached without passing its block: the code being written broke the parse (an `elif` whose `if` is
        # the missing line), and the error node hides the block; the cursor is still among the body's lines
        return Mode(True, False, "inside a definition", maybe_block=not after.strip())
    named = [c for c in node.named_children if c.type != "comment"]
    if not named:
        return Mode(True, True, "empty block")
    return Mode(True, False, "inside a block", maybe_block=not after.strip())


def _indent(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


def code_follows(prefix: str, suffix: str) -> bool:
    """Whether code of the cursor's own block follows the cursor's line: the lines below then say what the
    completion must fit (the names it must define, the indentation it must meet), and are worth more suffix.
    At the end of a block (the next function below, closers) they say little."""
    before = line_before(prefix)
    base = _indent(before) if before.strip() else len(before.expandtabs(4))
    line = first_below(suffix)
    return line is not None and _indent(line) >= base and not set(line.strip()) <= set(")]};,")
