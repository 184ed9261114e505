"""The lines elsewhere in the cursor's file that look like the code above it (context/similar.py), and where
they go: the fast prompt's head, not the page's."""
from lsp_server.context import Document
from lsp_server.context.assemble import DefinitionIndex, gather
from lsp_server.context.similar import SKIP_ABOVE, similar_lines
from lsp_server.prompt import PromptBudget, PromptParts, build_fast_prompt, build_prompt

from chartokens import CharTokenizer, head_of

# brotli's enc/brotli_bit_stream.c, shortened: every allocation is checked the same way; the check after the last
# one is what the model should write, and a fast prompt of the nearest lines does not hold the first
ALLOC = """void StoreTrivial(MemoryManager* m, size_t length) {
  MetablockArena* arena = BROTLI_ALLOC(m, MetablockArena, 1);
  uint32_t num_distance_symbols = params->dist.alphabet_size_max;
  if (BROTLI_IS_OOM(m) || BROTLI_IS_NULL(arena)) return;
  StoreHuffmanTree(arena->depth, num_distance_symbols, storage_ix, storage);
}
"""
FILLER = "".join(f"static int helper_{i}(int x) {{\n  return x * {i} + 1;\n}}\n\n" for i in range(14))
CURSOR = """void StoreFast(MemoryManager* m, size_t length) {
  MetablockArena* arena = BROTLI_ALLOC(m, MetablockArena, 1);
  uint32_t num_command_symbols = params->cmd.alphabet_size_max;
"""


def test_the_window_most_like_the_lines_above_the_cursor_is_found_far_above():
    text = ALLOC + FILLER + CURSOR + "\n}\n"
    line = text[:text.index(CURSOR) + len(CURSOR)].count("\n")
    assert line > SKIP_ABOVE
    found = similar_lines(text, line, 2000)
    assert found and "if (BROTLI_IS_OOM(m) || BROTLI_IS_NULL(arena)) return;" in found[0].text
    assert found[0].start < 4 and found[0].score >= 0.3
    # the budget is in characters, whole lines, at least three of a window: none fits in 20
    assert similar_lines(text, line, 20) == [] and similar_lines(text, line, 0) == []


def test_nothing_is_taken_from_the_lines_the_fast_prompt_holds_or_from_unlike_code():
    # the same pattern right above the cursor is already in the fast prompt
    text = ALLOC + CURSOR + "\n}\n"
    line = text[:text.index(CURSOR) + len(CURSOR)].count("\n")
    assert similar_lines(text, line, 2000) == []
    # far above, but sharing few words with the cursor's lines
    text = FILLER * 2 + CURSOR + "\n}\n"
    line = text[:text.index(CURSOR) + len(CURSOR)].count("\n")
    assert similar_lines(text, line, 2000) == []


def test_typing_on_the_cursor_line_keeps_the_choice():
    base = ALLOC + FILLER + CURSOR
    line = base.count("\n")
    first = similar_lines(base + "\n}\n", line, 2000)
    for typed in ("  if", "  if (BROTLI_IS_OOM(m)", "  x = y + z; /* other words */"):
        assert similar_lines(base + typed + "\n}\n", line, 2000) == first


def test_the_lines_reach_the_fast_prompt_head_only_when_asked():
    text = ALLOC + FILLER + CURSOR + "  \n}\n"
    line = text.count("\n") - 2
    doc = Document("enc.c", text, "c")
    ctx = gather(doc, line, 2, [], DefinitionIndex(), 0, similar_tokens=64)
    assert ctx.similar and ctx.similar[0][0] == "enc.c" and "BROTLI_IS_NULL(arena)) return;" in ctx.similar[0][1]
    assert gather(doc, line, 2, [], DefinitionIndex(), 0).similar == []
    parts = PromptParts(ctx.prefix, ctx.suffix, path="enc.c", similar=ctx.similar)
    fast = build_fast_prompt(CharTokenizer(), parts, PromptBudget(suffix_tokens=4, similar_tokens=400), 200)
    head = head_of(fast.tokens)
    # the file's name twice: the lines from elsewhere in it, then the fast prompt's own
    assert head.startswith("<|repo_name|>workspace\n<|file_sep|>enc.c\n") and head.count("<|file_sep|>enc.c\n") == 2
    assert "BROTLI_IS_NULL(arena)) return;" in head and head.endswith("<|file_sep|>enc.c\n") and fast.files == 1
    # without the budget, and in the page's prompt, the head names the file only
    for p in (build_fast_prompt(CharTokenizer(), parts, PromptBudget(suffix_tokens=4), 200),
              build_prompt(CharTokenizer(), parts, PromptBudget(suffix_tokens=4, similar_tokens=400))):
        assert head_of(p.tokens) == "<|repo_name|>workspace\n<|file_sep|>enc.c\n"


def test_a_choice_serves_the_lines_near_it_while_its_lines_are_in_the_file():
    from lsp_server.context.similar import KEEP_LINES, SimilarChoices
    text = ALLOC + FILLER + CURSOR + "\n}\n"
    line = text[:text.index(CURSOR) + len(CURSOR)].count("\n")
    choices = SimilarChoices(limit=1)
    first = choices.get("enc.c", text, line, 2000)
    assert first
    # lines typed below: the same choice, though the lines above the cursor are others now
    typed = text.replace(CURSOR, CURSOR + "  x = 1;\n  y = 2;\n")
    assert choices.get("enc.c", typed, line + 2, 2000) is first
    # far away, or with the chosen lines edited away, it is made again
    assert choices.get("enc.c", text, line - KEEP_LINES - 1, 2000) is not first
    choices.get("enc.c", text, line, 2000)
    edited = text.replace("BROTLI_IS_NULL(arena)) return;\n  StoreHuffmanTree", "arena == 0) return;\n  Store", 1)
    assert choices.get("enc.c", edited, line, 2000) != first
    # bounded: another document's choice drops this one
    choices.get("other.c", text, line, 2000)
    assert choices.get("enc.c", text, line, 2000) is not first



def test_two_places_like_the_cursor_are_both_shown_once_in_the_file_order():
    text = ALLOC + FILLER + ALLOC.replace("StoreTrivial", "StoreOther") + FILLER + CURSOR + "\n}\n"
    line = text[:text.index(CURSOR) + len(CURSOR)].count("\n")
    found = similar_lines(text, line, 4000)
    assert [("StoreTrivial" in s.text or "BROTLI_IS_NULL(arena)" in s.text) for s in found] == [True, True]
    assert found[0].start + found[0].text.count("\n") < found[1].start   # no line twice


def test_the_setting_gives_the_fast_prompt_its_room_and_96_by_default():
    from lsp_server.service.settings import Settings
    assert Settings().prompt_budget().similar_tokens == 96
    assert Settings().merged({"fastSimilarTokens": 0}).prompt_budget().similar_tokens == 0
    assert Settings().merged({"fastSimilarTokens": 96}).prompt_budget().similar_tokens == 96
