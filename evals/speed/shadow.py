"""Shadow acceptance: what each drafter's proposal would have had accepted at every position of a generation,
measured with the real models and no verify batch.

Lossless greedy speculation accepts a draft up to its first token that differs from the target's own greedy
continuation. So once the plain greedy output of a prompt is known, asking every drafter at every position for
its proposal (up to `SHADOW_DRAFT` tokens) and comparing it with that output gives exactly what verification
would accept there, whatever a machine's costs would make the controller choose. The projection
(`projection.py`) replays the controller's choices on these records with any machine's cost curve.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from lsp_server.engine import Engine, GenerationRequest
from lsp_server.engine.drafters import ModelDrafter, NgramDrafter, TemplateDrafter
from lsp_server.engine.llama import shared_prefix
from lsp_server.engine.speculative import StopReason

SHADOW_DRAFT = 16   # the longest draft the controller may verify (EngineConfig.draft_max's default)


@dataclass
class Proposal:
    """One drafter's proposal at one position, and how many of its tokens verification accepts there."""
    tokens: list[int]
    buckets: list[str]   # the model drafter's confidence buckets, the template's kinds; the n-gram's: see `source`
    matched: int         # leading tokens equal to the target's greedy continuation
    ngram: tuple[int, int] | None = None   # the n-gram drafter's (n, source position): its bucket ("run" or
                                           # "nN") depends on its previous proposal, so it is decided in replay

    def to_json(self) -> list:
        return [self.tokens, self.buckets, self.matched, list(self.ngram) if self.ngram else None]

    @classmethod
    def from_json(cls, d: list) -> "Proposal":
        return cls(d[0], d[1], d[2], tuple(d[3]) if d[3] else None)


@dataclass
class ShadowPrompt:
    """A prompt's greedy output and every drafter's proposal after each of its output tokens."""
    name: str
    language: str
    prompt: list[int]          # the prompt's tokens
    tokens: list[int]          # the target's plain greedy output
    stop: str                  # why it ended (StopReason's value)
    margins: list[float]       # each output token's top-2 logit gap (near-ties are re-decoded when verified)
    max_tokens: int
    # states[j - 1]: after the first j output tokens, drafter name -> its proposal (absent: it proposed nothing)
    states: list[dict[str, Proposal]] = field(default_factory=list)

    @property
    def steps(self) -> int:
        """Decode steps after the first output token (which comes from the prompt's own logits): one per token
        but the last, and one more for the end of generation when the model ended it."""
        return len(self.tokens) - (0 if self.stop == StopReason.EOG else 1)

    def to_json(self) -> dict:
        return {"name": self.name, "language": self.language, "prompt": self.prompt, "tokens": self.tokens,
                "stop": str(self.stop), "margins": [round(m, 3) for m in self.margins],
                "max_tokens": self.max_tokens,
                "states": [{k: p.to_json() for k, p in s.items()} for s in self.states]}

    @classmethod
    def from_json(cls, d: dict) -> "ShadowPrompt":
        return cls(d["name"], d["language"], d["prompt"], d["tokens"], d["stop"], d["margins"], d["max_tokens"],
                   [{k: Proposal.from_json(p) for k, p in s.items()} for s in d["states"]])


def record(engine: Engine, name: str, prompt: list[int], left_text: str, language: str, max_tokens: int,
           stop: tuple[str, ...] = (), drafters: tuple[str, ...] = ("ngram", "template", "model"),
           draft_len: int = SHADOW_DRAFT) -> ShadowPrompt:
    """The greedy output of `prompt` and, after each of its tokens where the loop would take a step, each
    drafter's proposal of up to `draft_len` tokens with what verification would accept of it."""
    g = engine.generate(GenerationRequest(prompt, max_tokens=max_tokens, stop=stop, language=language,
                                          speculative=False, record_margins=True, left_text=left_text))
    out = g.tokens
    sp = ShadowPrompt(name, language, list(prompt), list(out), str(g.stop_reason), list(g.margins), max_tokens)
    ngram = NgramDrafter() if "ngram" in drafters else None
    template = TemplateDrafter(engine.target.tokenize) if "template" in drafters else None
    model = ModelDrafter(engine.draft) if "model" in drafters and engine.draft is not None else None
    if ngram:
        ngram.start(prompt)
    raw = bytearray()
    prev: Proposal | None = None
    for j in range(1, sp.steps + 1):
        tok, rest = out[j - 1], out[j:]
        raw += engine.target.piece(tok)
        state: dict[str, Proposal] = {}
        if ngram:
            ngram.extend([tok])
            found = ngram.lookup()
            if found:
                n, pos = found
                cont = ngram.ctx[pos + 1:pos + 1 + draft_len]
                state["ngram"] = Proposal(cont, [], shared_prefix(cont, rest), (n, pos))
        if template:
            d = template.propose(left_text + raw.decode("utf-8", errors="ignore"), draft_len)
            if d and d.tokens:
                state["template"] = Proposal(d.tokens, d.buckets, shared_prefix(d.tokens, rest))
        if model:
            prev = _model_proposal(model, prompt + out[:j], tok, prev, draft_len)
            if prev.tokens:
                prev.matched = shared_prefix(prev.tokens, rest)
                state["model"] = prev
        sp.states.append(state)
    return sp


def _model_proposal(model: ModelDrafter, ctx: list[int], tok: int, prev: Proposal | None,
                    draft_len: int) -> Proposal:
    """The draft model's greedy continuation of ctx. Where its proposal one position back began with the token
    that came (`tok`), this one is the rest of it: only its last token is new (drafting is greedy, so the draft
    model's continuation of the same context is the same), which saves most of the draft model's decoding."""
    always = lambda d: True
    if prev is not None and prev.tokens and prev.tokens[0] == tok:
        tokens, buckets = prev.tokens[1:], prev.buckets[1:]
        if len(prev.tokens) < draft_len:    # the draft model had ended its proposal there: it ends it again
            return Proposal(tokens, buckets, 0)
        more = model.propose(ctx + tokens, 1, always)
        return Proposal(tokens + more.tokens, buckets + more.buckets, 0)
    d = model.propose(ctx, draft_len, always)
    return Proposal(d.tokens, d.buckets, 0)


@dataclass
class ShadowSummary:
    """Per drafter: positions with a proposal, and what verification accepts of a proposal of up to 16."""
    positions: int = 0
    proposals: dict[str, int] = field(default_factory=dict)
    accepted: dict[str, int] = field(default_factory=dict)    # tokens accepted, summed over proposals
    proposed: dict[str, int] = field(default_factory=dict)    # tokens proposed, summed over proposals
    first_right: dict[str, int] = field(default_factory=dict)

    def add(self, sp: ShadowPrompt) -> None:
        self.positions += len(sp.states)
        for state in sp.states:
            for k, p in state.items():
                self.proposals[k] = self.proposals.get(k, 0) + 1
                self.accepted[k] = self.accepted.get(k, 0) + p.matched
                self.proposed[k] = self.proposed.get(k, 0) + len(p.tokens)
                self.first_right[k] = self.first_right.get(k, 0) + (p.matched > 0)

    def row(self) -> dict:
        return {k: {"proposals": n, "positions": self.positions,
                    "mean_accepted": round(self.accepted[k] / n, 2),
                    "token_acceptance": round(self.accepted[k] / self.proposed[k], 3) if self.proposed[k] else 0.0,
                    "first_token_right": round(self.first_right[k] / n, 3)}
                for k, n in sorted(self.proposals.items())}
