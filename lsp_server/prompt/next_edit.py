"""The prompt of a next-edit prediction: the Instruct target, through its chat template, is shown the user's recent
edits as a diff and the code around the cursor, and asked to rewrite a region of it with the edit that follows
applied. The answer's opening fence is written into the prompt, so the output starts where the region starts:
the rewrite drafter can then propose the region's own tokens from where the output stands in them.

The region is the lines that can change, not a fixed block: from just above the cursor to some lines below it
(every token of it is written out again, so its size is the prediction's time). Lines above it are shown as
context, not rewritten."""
from __future__ import annotations

from dataclasses import dataclass

from ..context.edits import keep_lines

LINES_ABOVE = 1      # of the region, above the cursor's line
LINES_BELOW = 12     # of the region, below it
CONTEXT_ABOVE = 12   # lines above the region shown as context (not rewritten)

FENCE = {"python": "python", "typescript": "typescript", "javascript": "javascript", "go": "go", "rust": "rust",
         "java": "java", "c": "c", "cpp": "cpp", "csharp": "csharp", "ruby": "ruby", "php": "php", "lua": "lua",
         "kotlin": "kotlin", "swift": "swift", "scala": "scala", "shell": "bash", "tsx": "tsx"}

SYSTEM = "You are a coding assistant in a code editor. You predict the user's next edit."

ASK = ("My latest edits to `{path}`:\n```diff\n{diff}```\n\n{above}"
       "Rewrite the code below with the follow-up edits these changes require elsewhere (every other line "
       "unchanged; if nothing else needs to change, the code as it is).\n\n```{fence}\n{region}```")


@dataclass(frozen=True)
class EditPrompt:
    text: str            # the whole prompt, special tokens written as text (tokenize with special=True)
    region: str          # the text the model rewrites: whole lines, each ending in "\n"
    start: int           # the region's first line in the document (0-based)
    end: int             # the line after its last
    fence: str           # the code fence's language tag, for the answer's end
    above: str = ""      # the lines shown above the region as context


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
    region = "".join(lines[start:end])
    fence = FENCE.get(language, "")
    shown = "".join(lines[max(0, start - context_above):start])
    above_text = (f"The code above it:\n```{fence}\n{shown}```\n\n" if shown.strip() else "")
    user = ASK.format(path=path, diff=diff or "(none)\n", above=above_text, fence=fence, region=region)
    prompt = (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
              f"<|im_start|>assistant\n```{fence}\n")
    return EditPrompt(prompt, region, start, end, fence, shown if shown.strip() else "")
