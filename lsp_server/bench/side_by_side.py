"""Generations run side by side, a step each in turn, so that every path is timed through the same moments.

This host's speed drifts by ~10 % over seconds (other tenants), and consecutive whole passes of one prompt
differ as much: alternating whole passes leaves 1-4 % between two runs of the same code. Taking turns step by
step (each path its own model context, one step at a time), what the host does in any second falls on all
paths alike, and what differs between their sums is what they do."""
from __future__ import annotations

import itertools
import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Callable

from ..engine.acceptance import AcceptanceStats
from ..engine.controller import Controller
from ..engine.speculative import Generation, GenerationRequest, StepObserver, generate

# a path's generation, given the call that hands the turn on after each of its steps
Job = Callable[[Callable[[], None]], Generation]


class Rotation:
    """Whose turn it is. A path holds the turn from when its wait returns until it calls `step` (the next
    path's turn, then waits for its own again) or `leave` (done: the others go on without it)."""

    def __init__(self, names):
        self._order = list(names)
        self._turn = 0
        self._cv = threading.Condition()

    def _mine(self, name: str) -> bool:
        return bool(self._order) and self._order[self._turn] == name

    def wait(self, name: str) -> None:
        with self._cv:
            self._cv.wait_for(lambda: self._mine(name))

    def step(self, name: str) -> None:
        with self._cv:
            self._turn = (self._turn + 1) % len(self._order)
            self._cv.notify_all()
            self._cv.wait_for(lambda: self._mine(name))

    def leave(self, name: str) -> None:
        with self._cv:
            i = self._order.index(name)
            del self._order[i]
            if self._order:
                self._turn = (self._turn - (i < self._turn)) % len(self._order)
            self._cv.notify_all()


class DecodeThread:
    """The thread that made it runs what the paths' threads ask of it (`LlamaModel.runs_on`): every decode of a
    run on the one thread that decodes everything else in this process. llama.cpp runs a batch on an OpenMP team
    of the calling thread, and with a team per path every decode, of every path, ran about 20 ms slower on a
    2-core machine. A hand-over costs two thread wake-ups a decode."""

    def __init__(self):
        self.owner = threading.get_ident()
        self._asked: queue.SimpleQueue = queue.SimpleQueue()

    def __call__(self, fn, *args):
        if threading.get_ident() == self.owner:
            return fn(*args)
        done: Future = Future()
        self._asked.put((fn, args, done))
        return done.result()

    def serve(self, futures) -> None:
        """Run what is asked until every one of `futures` is done (on the owner's thread)."""
        for f in futures:
            f.add_done_callback(lambda _: self._asked.put(None))
        while not all(f.done() for f in futures):
            asked = self._asked.get()
            if asked is None:
                continue
            fn, args, done = asked
            try:
                done.set_result(fn(*args))
            except BaseException as e:   # the asking path raises it (a decode that failed, a cancel)
                done.set_exception(e)


def side_by_side(jobs: dict[str, Job], decodes: DecodeThread | None = None) -> dict[str, Generation]:
    """Run the jobs in turn, a step each, in the order given; an error in one ends its turns and is raised
    once all have ended. With `decodes`, the caller's thread runs what the jobs hand it while they run."""
    rotation = Rotation(jobs)

    def run(name: str, job: Job) -> Generation:
        rotation.wait(name)
        try:
            return job(lambda: rotation.step(name))
        finally:
            rotation.leave(name)

    with ThreadPoolExecutor(len(jobs), thread_name_prefix="bench-path") as pool:
        futures = {name: pool.submit(run, name, job) for name, job in jobs.items()}
        if decodes is not None:
            decodes.serve(list(futures.values()))
        return {name: f.result() for name, f in futures.items()}


class TakesTurns(StepObserver):
    """A path's observer: after each of its steps it hands the turn on, a wait not counted as the path's time."""

    def __init__(self, hand_on: Callable[[], None]):
        self.hand_on = hand_on

    def between_steps(self) -> None:
        self.hand_on()


PLAIN, AGAIN, TANDEM = "plain", "plain again", "tandem"
# a path's request: (speculative, fixed model draft length) -> the request
Requests = Callable[[bool, int], GenerationRequest]


@dataclass
class BenchPath:
    speculative: bool
    controller: Controller
    drafters: tuple = (None, None, None)      # n-gram, model, template
    fixed: int = 0                            # a fixed draft-model draft length (0: the controller's)


class SideBySide:
    """The in-process engine's paths for the bench: plain decoding, plain decoding again (the A/A check: the
    same code, so what it reads apart is what this run cannot tell), Tandem (the engine's own controller and
    drafters) and any `extra` paths a lab adds (with `draft_twin`, a draft-model context of their own). Each has
    its own target context on the one copy of the weights; the contexts go round the paths from pass to pass,
    and so does who steps first, so neither a context's place in memory nor its place in the turn favours a
    path."""

    side_by_side = True

    def __init__(self, engine, extra: dict[str, BenchPath] | None = None, draft_twin=None):
        self.engine = engine
        self.paths = {PLAIN: BenchPath(False, self.own_controller(engine)),
                      AGAIN: BenchPath(False, self.own_controller(engine)),
                      TANDEM: BenchPath(engine.cfg.speculation, engine.controller,
                                        (engine.ngram, engine.model_drafter, engine.template)),
                      **(extra or {})}
        self._draft_twin = draft_twin
        self.contexts = [engine.target] + [engine.target.another_context() for _ in range(len(self.paths) - 1)]
        self.names = list(self.paths)

    @staticmethod
    def own_controller(engine) -> Controller:
        """A comparison path's controller: it learns nothing that the Tandem path would then use."""
        return Controller(engine.costs.snapshot(), AcceptanceStats(None), engine.cfg.draft_min, engine.cfg.draft_max)

    def prewarm(self, tokens: list[int]) -> None:
        self.engine.prewarm(tokens, draft=self._draft_twin is not None)
        for m in self.contexts[1:] + ([self._draft_twin] if self._draft_twin is not None else []):
            m.prefill(tokens)

    def run_pass(self, requests: Requests, n: int) -> dict[str, Generation]:
        """Pass n of every path, side by side."""
        orders = list(itertools.permutations(self.names))
        jobs = {}
        for name in orders[n % len(orders)]:
            path = self.paths[name]
            ctx = self.contexts[(self.names.index(name) + n) % len(self.contexts)]
            jobs[name] = partial(self._generate, path, ctx, requests(path.speculative, path.fixed))
        models = self.contexts + [m for m in (self.engine.draft, self._draft_twin) if m is not None]
        decodes = DecodeThread()
        for m in models:
            m.runs_on = decodes
        try:
            return side_by_side(jobs, decodes)
        finally:
            for m in models:
                m.runs_on = None

    @staticmethod
    def _generate(path: BenchPath, ctx, req: GenerationRequest, hand_on) -> Generation:
        req.observer = TakesTurns(hand_on)
        ngram, model, template = path.drafters
        return generate(ctx, path.controller, req, None, ngram, model, template)

    def close(self) -> None:
        for ctx in self.contexts[1:] + [self._draft_twin]:
            if ctx is not None:
                ctx.close()
