"""The generations the service has running or queued, by document: which one a request joins, which ones it
supersedes and which ones an edit stops, each keeping what the prompts share (llama.cpp's server keeps its tasks
the same way, apart from the slots that run them). Superseding here only lowers a job's flag, its task's (the
model thread stops at its next check), and the job leaves the registry when its future is done; stopping tasks by
document, kind or all at once is the model thread's queue's (queue.py)."""
from __future__ import annotations

from typing import Callable, Iterator

from ..engine import shared_prefix
from ..pipeline import Plan
from .job import Job


class Jobs:
    def __init__(self) -> None:
        self._by_uri: dict[str, list[Job]] = {}

    def add(self, job: Job) -> None:
        self._by_uri.setdefault(job.uri, []).append(job)

    def remove(self, job: Job) -> None:
        jobs = self._by_uri.get(job.uri, [])
        if job in jobs:
            jobs.remove(job)
        if not jobs:
            self._by_uri.pop(job.uri, None)

    def of(self, uri: str) -> list[Job]:
        """The document's jobs, oldest first (a copy: cancelling does not change the registry)."""
        return list(self._by_uri.get(uri, ()))

    def has(self, uri: str) -> bool:
        return bool(self._by_uri.get(uri))

    def __iter__(self) -> Iterator[Job]:
        return (job for jobs in list(self._by_uri.values()) for job in jobs)

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_uri.values())

    def extending(self, uri: str, prefix: str, suffix: str) -> Job | None:
        """The document's oldest job whose answer this place can take (the user typed what it writes)."""
        return next((job for job in self.of(uri) if job.extends(prefix, suffix)), None)

    def join_or_supersede(self, uri: str, plan: Plan) -> Job | None:
        """A request for this plan: the job it joins, if any; every other job of the document is superseded,
        its prompt evaluation going on only as far as the two prompts agree."""
        reuse = self.extending(uri, plan.prefix, plan.suffix)
        for job in self.of(uri):
            if job is not reuse:
                job.cancel.set_keeping(shared_prefix(job.plan.prompt.tokens, plan.prompt.tokens))
        return reuse

    def edited(self, uri: str, text: str, keep: Callable[[Plan], int]) -> None:
        """An edit stops the document's jobs unless it only typed what a job is writing; a stopped job keeps
        `keep(plan)` tokens of its prompt where the lines above the cursor are unchanged (none otherwise)."""
        for job in self.of(uri):
            if not job.survives(text):
                p0 = job.plan.prefix
                same_above = text.startswith(p0[:p0.rfind("\n") + 1])
                job.cancel.set_keeping(keep(job.plan) if same_above else 0)
