"""Special tokens the engine needs, and whether a draft model may draft for a target."""
from __future__ import annotations

from dataclasses import dataclass

import llama_cpp

from .llama import LlamaModel

# llama.cpp's own rule (common/speculative.cpp): the vocabularies may differ in size by this much.
MAX_VOCAB_SIZE_DIFF = 128
CHECK_FROM_TOKEN = 5


@dataclass(frozen=True)
class FimTokens:
    prefix: int
    suffix: int
    middle: int
    repo_name: int | None
    file_sep: int | None


def fim_tokens(m: LlamaModel) -> FimTokens | None:
    v = m.vocab
    pre, suf, mid = (llama_cpp.llama_vocab_fim_pre(v), llama_cpp.llama_vocab_fim_suf(v),
                     llama_cpp.llama_vocab_fim_mid(v))
    if min(pre, suf, mid) < 0:
        return None
    rep, sep = llama_cpp.llama_vocab_fim_rep(v), llama_cpp.llama_vocab_fim_sep(v)
    return FimTokens(pre, suf, mid, rep if rep >= 0 else None, sep if sep >= 0 else None)


def incompatibility(target: LlamaModel, draft: LlamaModel) -> str | None:
    """None when the draft's tokens mean the same as the target's; otherwise the reason, for the user."""
    tv, dv = target.vocab, draft.vocab
    if llama_cpp.llama_vocab_type(tv) != llama_cpp.llama_vocab_type(dv):
        return "the vocabulary types differ"
    for what, fn in (("BOS", llama_cpp.llama_vocab_bos), ("EOS", llama_cpp.llama_vocab_eos)):
        if fn(tv) != fn(dv):
            return f"the {what} tokens differ ({fn(tv)} vs {fn(dv)})"
    for what, fn in (("add-BOS", llama_cpp.llama_vocab_get_add_bos),
                     ("add-EOS", llama_cpp.llama_vocab_get_add_eos)):
        if fn(tv) != fn(dv):
            return f"the {what} settings differ"
    if abs(target.n_vocab - draft.n_vocab) > MAX_VOCAB_SIZE_DIFF:
        return f"the vocabulary sizes differ too much ({target.n_vocab} vs {draft.n_vocab})"
    for t in range(CHECK_FROM_TOKEN, min(target.n_vocab, draft.n_vocab)):
        a, b = llama_cpp.llama_vocab_get_text(tv, t), llama_cpp.llama_vocab_get_text(dv, t)
        if a != b:
            return f"token {t} differs ({a!r} vs {b!r})"
    return None
