"""The prompt of a next-edit prediction: the Instruct target, through its chat template, is shown the user's recent
edits as a diff and the code around the cursor, and asked to rewrite a region of it with the edit that follows
applied. The answer's opening fence is written into the prompt, so the output starts where the region starts:
the rewrite drafter can then propose the region's own tokens from where the output stands in them.

The region is the lines that can change, not a fixed block: from just above the cursor to some lines below it
(every token of it is written out again, so its size is the prediction's time). Lines above it are shown as
context, not rewritten.

The prompt keeps its parts (EditPrompt): its tokens come from them with only the template's markers as control
tokens (prompt/chat.py), its fences are longer than any run of backticks in the code shown, and where it does not
fit the context it is trimmed, its context first (`trimmed`, prompt/budget.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..context.edits import keep_lines
from .budget import fit
from .chat import Piece, Tokenizer, chat, text_of, tokens_of

LINES_ABOVE = 1      # of the region, above the cursor's line
LINES_BELOW = 4      # of the region, below it (its every token is written again: its size is the rewrite's time)
CONTEXT_ABOVE = 4    # lines above the region shown as context (not rewritten; evaluated afresh at every ask)

FENCE = {"python": "python", "typescript": "typescript", "javascript": "javascript", "go": "go", "rust": "rust",
         "java": "java", "c": "c", "cpp": "cpp", "csharp": "csharp", "ruby": "ruby", "php": "php", "lua": "lua",
         "kotlin": "kotlin", "swift": "swift", "scala": "scala", "shell": "bash", "tsx": "tsx"}

SYSTEM = "You are a coding assistant in a code editor. You predict the user's next edit."

# the user's turn opens with the instructions, the same in every ask: the prompt's head (`head_tokens`), whose
# state the KV store keeps, so that an ask evaluates only what is its own (the edits, the code); it ends a line,
# so the tokens of the whole prompt start with the head's own
HEAD = ("I show you my latest edits to a file, then the lines just above the code to rewrite (to read, not to "
        "write again), then the code to rewrite. Rewrite that code with the follow-up edits these changes require "
        "elsewhere (every other line unchanged; if nothing else needs to change, the code as it is).\n\n")
ASK = ("My latest edits to `{path}`:\n{t}diff\n{diff}{t}\n\n{above}"
       "The code to rewrite:\n{t}{fence}\n{region}{t}")

_BACKTICKS = re.compile(r"`+")


_FENCE_LINE = re.compile(r"[ \t]*`{3,}[ \t]*\n?")


def fence_ticks(*shown: str) -> str:
    """The backticks of the fences around code that holds `shown`: a run longer than any in it (Markdown closes a
    fence only with a run at least as long as the one that opened it), three where it has none. The run is the
    answer's stop string too, so a region with a fenced example in it (a Rust doc test, Markdown in a docstring)
    is not cut at the example's fence (answer_end finds the close where the model writes a shorter one)."""
    return "`" * max([3] + [len(m) + 1 for s in shown for m in _BACKTICKS.findall(s)])


def answer_end(answer: str, region: str, above: str = "") -> tuple[str, bool]:
    """The answer up to the fence that closes it, and whether it has one. The stop string ends it where the model
    closes with the opening fence's run; it often closes with three backticks whatever the opening's length, then
    ends its turn. That close is its first line of bare backticks beyond those of the region it copies (the
    lines shown above it, where the answer starts by writing them again, are skipped first)."""
    start = 0
    shown = keep_lines(above)
    for k in range(len(shown), 0, -1):
        head = "".join(shown[-k:])
        if answer.startswith(head) and not region.startswith(head):
            start = len(head)
            break
    own = sum(1 for line in keep_lines(region) if _FENCE_LINE.fullmatch(line))
    for line in keep_lines(answer[start:]):
        if _FENCE_LINE.fullmatch(line):
            if own == 0:
                return answer[:start], True
            own -= 1
        start += len(line)
    return answer, False


@dataclass(frozen=True)
class EditPrompt:
    region: str          # the text the model rewrites: whole lines, each ending in "\n"
    start: int           # the region's first line in the document (0-based)
    end: int             # the line after its last
    fence: str           # the code fence's language tag
    above: str = ""      # the lines shown above the region as context
    diff: str = ""       # the recent edits as a unified diff ("" where there are none)
    path: str = ""

    @property
    def ticks(self) -> str:
        """The fences' backticks, and the answer's stop string."""
        return fence_ticks(self.diff, self.above, self.region)

    @property
    def pieces(self) -> tuple[Piece, ...]:
        t, f = self.ticks, self.fence
        above = f"The lines just above the code to rewrite:\n{t}{f}\n{self.above}{t}\n\n" if self.above else ""
        # the diff without its `---`/`+++` lines: they name the path the sentence already names, and every token
        # of an ask is evaluated afresh
        shown = "".join(_hunks(self.diff)[1])
        user = HEAD + ASK.format(path=self.path, diff=shown or "(none)\n", above=above, fence=f,
                                 region=self.region, t=t)
        return chat(user, f"{t}{f}\n", system=SYSTEM)

    def head_tokens(self, tokenizer: Tokenizer) -> list[int]:
        """The tokens of the prompt's head (the same in every ask: see HEAD)."""
        return head_tokens(tokenizer)

    @property
    def text(self) -> str:
        """The whole prompt, for reading (its markers spelled out: tokenize it with `tokens`, never as text)."""
        return text_of(self.pieces)

    def tokens(self, tokenizer: Tokenizer) -> list[int]:
        return tokens_of(self.pieces, tokenizer)

    def answer(self, generated: str) -> tuple[str, bool]:
        """The rewritten region in what the model wrote, and whether its closing fence was found there."""
        return answer_end(generated, self.region, self.above)

    # ---- trimming to fit the context -----------------------------------------------------------------------

    @property
    def trims(self) -> int:
        """How many trimming steps this prompt has: the older hunks of the diff (the oldest first), the lines
        shown above the region (the farthest first), then the newest hunk's lines (the last of its longer side
        first, one line of each side kept). The region is never trimmed."""
        hunks = _hunks(self.diff)[1]
        old, new = _sides(hunks[-1]) if hunks else ([], [])
        return (max(0, len(hunks) - 1) + len(keep_lines(self.above)) + max(0, len(old) - 1)
                + max(0, len(new) - 1))

    def trimmed(self, k: int) -> EditPrompt:
        """This prompt with its first `k` trimming steps taken."""
        if k <= 0:
            return self
        head, hunks = _hunks(self.diff)
        drop = min(k, max(0, len(hunks) - 1))
        hunks, k = hunks[drop:], k - drop
        above = keep_lines(self.above)
        drop = min(k, len(above))
        above, k = above[drop:], k - drop
        if k and hunks:
            old, new = _sides(hunks[-1])
            for _ in range(k):
                if max(len(old), len(new)) < 2:
                    break
                side = old if len(old) >= len(new) else new
                side.pop()
            hunks[-1] = keep_lines(hunks[-1])[0] + "".join(old) + "".join(new)
        shown = "".join(above)
        return replace(self, diff=head + "".join(hunks), above=shown if shown.strip() else "")


def head_tokens(tokenizer: Tokenizer) -> list[int]:
    """The tokens every next-edit prompt starts with: the system turn and the instructions (HEAD)."""
    return tokens_of(chat(HEAD, "", system=SYSTEM)[:-4], tokenizer)   # up to the user's turn's end


def _hunks(diff: str) -> tuple[str, list[str]]:
    """A unified diff's header (the `---`/`+++` lines) and its hunks' texts, in order (their body lines start with
    "-", "+" or " ", so only a hunk's header starts with "@@")."""
    head, hunks = "", []
    for line in keep_lines(diff):
        if line.startswith("@@"):
            hunks.append(line)
        elif hunks:
            hunks[-1] += line
        else:
            head += line
    return head, hunks


def _sides(hunk: str) -> tuple[list[str], list[str]]:
    body = keep_lines(hunk)[1:]
    return [line for line in body if line.startswith("-")], [line for line in body if line.startswith("+")]


def fitted(p: EditPrompt, tokenizer: Tokenizer, room: int) -> tuple[EditPrompt, list[int]] | None:
    """The least trimmed version of the prompt whose tokens fit `room` (budget.prompt_room), and its tokens; None
    where the region with the least context does not fit."""
    return fit(p.trimmed, p.trims, lambda q: q.tokens(tokenizer), room)


def region_lines(n_lines: int, cursor_line: int, above: int = LINES_ABOVE, below: int = LINES_BELOW
                 ) -> tuple[int, int]:
    start = max(0, cursor_line - above)
    return start, min(n_lines, max(start + 1, cursor_line + 1 + below))


def build_prompt(text: str, cursor_line: int, diff: str, path: str, language: str,
                 above: int = LINES_ABOVE, below: int = LINES_BELOW, context_above: int = CONTEXT_ABOVE
                 ) -> EditPrompt:
    lines = keep_lines(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    start, end = region_lines(len(lines), min(cursor_line, max(0, len(lines) - 1)), above, below)
    shown = "".join(lines[max(0, start - context_above):start])
    return EditPrompt("".join(lines[start:end]), start, end, FENCE.get(language, ""),
                      shown if shown.strip() else "", diff, path)
