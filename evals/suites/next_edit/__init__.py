"""The next-edit suite (issue 52, part 4): real edits from the history of public repositories, for the proposal
of the edit that follows a user's change.

`cases.jsonl.gz` holds the cases (440: 300 *edit*, 140 *no-edit*; 88 per language over Python, TypeScript, Go,
Rust and Java), built by hand with `build.py` from pinned heads of 11 repositories (`build.PROJECTS`, all MIT or
Apache-2.0; never the held-out projects of issue 52) and committed: the lab's machines reach only the package
registries, not GitHub. One JSON object a line:

- `id` (`project/commit10/kind`), `project` (the key of the tune/confirm split: `half_of(project)`, stored as
  `half`), `language`, `licence`, `repo` (owner/name on GitHub), `commit` (the commit the edit comes from),
  `path` (the file in that repository), `kind`: `edit` or `none`;
- `before_window`: a window of the file (at most 100 lines) as the user has it: the file before the commit with
  the earlier hunks applied; `window_start` (0-based line of the file where the window starts), `file_lines`;
- `cursor`: `{line, character}`, 0-based in the window: the end of the last applied hunk (its last added
  line's end; the line where lines were deleted for a deletion);
- `recent_edits`: the applied hunks as a unified diff without context (`--- a/path`, `+++ b/path`, `@@` headers
  in the line numbers of the whole file);
- `hunks`, `applied`: the hunks of the file's change and how many of them are applied;
- `expected`: for an edit case the next hunk as a replacement of lines of the window, `{start_line, end_line,
  text, old_text}` (0-based, end exclusive: `start_line == end_line` is an insertion; `text` and `old_text`
  end each line with a newline); null for a no-edit case (the commit's only hunk in that file is applied and
  nothing more should be proposed).

`score.py` scores proposals against them (exact after whitespace normalisation, location, precision, silence
where nothing should be proposed); `load_cases` reads and filters them.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from evals.common.halves import in_half

DEFAULT_CASES = Path(__file__).with_name("cases.jsonl.gz")


def load_cases(path: Path = DEFAULT_CASES, half: str = "all", languages=None) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        cases = [json.loads(line) for line in f if line.strip()]
    return [c for c in cases if in_half(c["project"], half) and (not languages or c["language"] in languages)]
