"""The better answer, offered: where an answer came from a prompt shorter than the page's (a fast answer: the
page was too far from cached for the prompt budget), the fill goes on to evaluate the page while the user reads;
once the page's prompt at the cursor is cached, its own answer is generated there, and where it differs from
what was shown it goes into the typing cache and the client is told (`tandem/betterCompletion`), so it asks again
and the cache answers. The generation is a job like a prefetch's: a request at the place joins it, any other
request or an edit stops it, and the answer shown is never replaced without the client asking.

The same goes for an answer shown early (a line or block the generation was still writing when the early answer's
time came: its finished part): once that generation ends, where it wrote more at the place, the client is told
too, so the ghost text becomes the whole line within moments instead of staying cut until the next keystroke."""
from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

from ..pipeline import CompletionRequest, Plan
from .cache import TypingCache
from .job import Job
from .model import Model

log = logging.getLogger("tandem.offer")


@dataclass
class Shown:
    """An answer shown from a prompt other than the page's at rest: where, what, and from which prompt."""
    request: CompletionRequest
    prefix: str
    suffix: str
    text: str
    prompt: list[int]


@dataclass
class Early:
    """An answer shown while its generation went on: where, what, and the job that goes on writing it."""
    request: CompletionRequest
    prefix: str
    suffix: str
    text: str
    job: Job


@dataclass
class OfferStats:
    waiting: int = 0      # answers shown from a fast prompt, or while typing (candidates)
    generated: int = 0    # the page's answer generated for one
    same: int = 0         # ... and it was what had been shown
    silent: int = 0       # ... and the page's prompt said nothing there (the shown answer stays)
    offered: int = 0      # ... and it differed: in the cache, and the client told
    stopped: int = 0      # the generation was stopped (a request elsewhere, an edit)
    prompt: str = ""      # the digest of the latest generation's prompt (Prompt.digest)
    early: int = 0        # answers shown early, their generation going on (candidates for completing)
    completed: int = 0    # ... whose generation then wrote more there: told (the protocol only if unchanged)
    early_kept: int = 0   # ... whose generation ended with what was shown, or was stopped (nothing said)
    taken: int = 0        # a better answer told (offered or completed) that the client asked for again at its place


def same_place(a: CompletionRequest, b: CompletionRequest) -> bool:
    return (a.line, a.col, a.document.path) == (b.line, b.col, b.document.path) and \
        a.document.text == b.document.text


class Offers:
    """The answers shown that the page may better, and what comes of each; the service generates the page's
    answer (`CompletionService._offer`: a job of kind offer on the model thread) and hands it here to judge."""

    def __init__(self, model: Model, notify: Callable[[str, CompletionRequest], None] | None = None):
        self.model = model
        # where a better answer is found: (uri, the request it answers); the protocol stage tells the client
        self.notify = notify or (lambda uri, req: None)
        self._shown: dict[str, Shown] = {}   # uri -> its latest answer from a short prompt (one per document)
        self._running: tuple[str, CompletionRequest, Job] | None = None
        self._early: dict[str, Early] = {}   # uri -> its latest answer shown early (one per document)
        self._told: dict[str, tuple[CompletionRequest, str]] = {}   # uri -> the better answer told, and its place
        self.stats = OfferStats()

    def shown(self, uri: str, plan: Plan, answered_by: Plan, text: str) -> None:
        """An answer was shown for `plan`'s place; `answered_by` is the plan whose prompt wrote it."""
        # a fast prompt's answer, or the page's while typing (its suffix may be shorter than the one at rest)
        if (answered_by.fast or not answered_by.request.at_rest) and self.model.settings.offer_better \
                and plan.mode.complete:
            self._shown[uri] = Shown(plan.request, plan.prefix, plan.suffix, text, answered_by.prompt.tokens)
            self.stats.waiting += 1
        else:
            self._shown.pop(uri, None)

    def forget(self, uri: str) -> None:
        self._shown.pop(uri, None)
        self._early.pop(uri, None)
        self._told.pop(uri, None)

    def asked_again(self, uri: str, req: CompletionRequest, text: str) -> None:
        """The cache answered `text` at `req`'s place: where that is the better answer the client was told of, the
        client took it up (`taken`: the clients' side of an offer, which the server cannot see otherwise)."""
        told = self._told.get(uri)
        if told is not None and same_place(told[0], req):
            del self._told[uri]
            self.stats.taken += text.rstrip() == told[1].rstrip()

    def early(self, uri: str, plan: Plan, job: Job, text: str) -> None:
        """An answer was shown early for `plan`'s place: `job` goes on writing it (see `finished`)."""
        if self.model.settings.offer_better and plan.mode.complete:
            if self._early.pop(uri, None) is not None:
                self.stats.early_kept += 1   # a newer one at the document replaces it
            self._early[uri] = Early(plan.request, plan.prefix, plan.suffix, text, job)
            self.stats.early += 1

    def finished(self, uri: str, job: Job, cache: TypingCache) -> bool:
        """`job` ended (its answers are in the cache, or it was stopped): where it was answering early and wrote
        more at that place than was shown, the client is told. True when it was."""
        e = self._early.get(uri)
        if e is None or e.job is not job:
            return False
        del self._early[uri]
        text = cache.lookup(uri, e.prefix, e.suffix, count=False)
        if not text or not text.strip() or text.rstrip() == e.text.rstrip():
            self.stats.early_kept += 1
            return False
        shown = self._shown.get(uri)
        if shown is not None and same_place(shown.request, e.request):
            shown.text = text   # what the client shows once it asks again: a page's offer is compared with it
        self.stats.completed += 1
        self._told[uri] = (e.request, text)
        self.notify(uri, e.request)
        return True

    def moved(self, uri: str, req: CompletionRequest) -> None:
        """The user is elsewhere now (a cursor move, an edit): a generation for an offer at the old place stops
        (its prompt stays cached; an edit or a request stops it through the jobs too)."""
        e = self._early.get(uri)
        if e is not None and not same_place(e.request, req):
            del self._early[uri]
            self.stats.early_kept += 1
        running = self._running
        if running is not None and not (running[0] == uri and same_place(running[1], req)):
            job = running[2]
            job.cancel.set_keeping(len(job.plan.prompt.tokens))

    def due(self, uri: str, req: CompletionRequest) -> Shown | None:
        """The answer shown at exactly this place (the document unchanged since), if the page may do better."""
        s = self._shown.get(uri)
        return s if s is not None and same_place(s.request, req) else None

    def claim(self, uri: str, req: CompletionRequest) -> Shown | None:
        """The answer shown at this place that the page's answer may better, taken (once: whatever comes of it,
        it is not looked at again); None where there is none or offers are off."""
        shown = self.due(uri, req)
        if shown is None or not self.model.settings.offer_better:
            return None
        del self._shown[uri]
        return shown

    @staticmethod
    def worth_generating(plan: Plan, shown: Shown) -> bool:
        """The page's prompt at rest is another prompt than the one that answered (whether the fill has it cached
        is the model's to say: Model.too_far)."""
        return not plan.fast and plan.prompt.tokens != shown.prompt

    @contextmanager
    def running(self, uri: str, shown: Shown, job: Job):
        """While the page's answer for `shown` is generated by `job` (a move elsewhere stops it)."""
        self._running = (uri, shown.request, job)
        try:
            yield
        finally:
            self._running = None

    def stopped(self) -> None:
        self.stats.stopped += 1

    def generated(self, plan: Plan) -> None:
        """The page's answer was generated from `plan`'s prompt (judged once post-processed)."""
        self.stats.generated += 1
        self.stats.prompt = plan.prompt.digest()

    def judge(self, shown: Shown, text: str) -> bool:
        """The page's answer `text` (post-processed) at `shown`'s place: True where it differs from what was
        shown and is to be offered (the service stores it, then calls `offer`)."""
        if not text.strip():
            self.stats.silent += 1
            return False
        if text.rstrip() == shown.text.rstrip():
            self.stats.same += 1
            return False
        return True

    def offer(self, uri: str, shown: Shown, text: str) -> None:
        """The page's better answer is in the cache: tell the client to ask again."""
        self.stats.offered += 1
        self._told[uri] = (shown.request, text)
        log.debug("offer at %s:%d: %r instead of %r", uri.rsplit("/", 1)[-1], shown.request.line + 1, text[:40],
                  shown.text[:40])
        self.notify(uri, shown.request)

    def summary(self) -> dict:
        return dict(vars(self.stats))
