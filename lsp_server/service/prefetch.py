"""The next suggestion, generated before it is asked for: after a block is shown, what follows it as if it were
accepted, so that typing it through or accepting it finds the next completion in the cache. Any real request
pre-empts it (a request that agrees with it joins it instead, see Jobs); its answer reaches the cache through
the service's store of every finished generation. The service runs it (`CompletionService._prefetch`: a job of
kind prefetch on the model thread); here, what it decides."""
from __future__ import annotations

from dataclasses import replace

from ..context import Document
from ..engine import ENDS_HOLE, Generation
from ..pipeline import CompletionRequest, Plan


def worth_it(plan: Plan, shown: str, gen: Generation | None) -> bool:
    """A block was shown and the model did not say the hole ends there (then there is nothing to prefetch)."""
    return bool(shown) and plan.mode.multiline and gen is not None and gen.stop_reason not in ENDS_HOLE


def after_accept(plan: Plan, shown: str) -> CompletionRequest:
    """The request an editor sends once `shown` is accepted: the document with it, the cursor at its end."""
    prefix = plan.prefix + shown
    req = plan.request
    doc = Document(req.document.path, prefix + plan.suffix, req.document.language)
    line, col = prefix.count("\n"), len(prefix) - (prefix.rfind("\n") + 1)
    return replace(req, document=doc, line=line, col=col)
