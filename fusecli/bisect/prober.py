"""Asking the oracle about selections, for minimization: each candidate built, each answer
cached, each success asked again before it is accepted ("re-verified"), the budgets checked, and
the smallest passing candidate and the other failures seen kept aside.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator

from fusecli.bisect.ddmin import Budget
from fusecli.bisect.oracle import Oracle
from fusecli.bisect.questions import Question
from fusecli.bisect.results import Step, Tracker
from fusecli.bisect.selection import BuildError, Piece, Selection, Slicer


class Prober:
    """Asks the oracle about selections: builds them, caches answers, re-verifies successes."""

    def __init__(
        self, slicer: Slicer, oracle: Oracle, tracker: Tracker, max_queries: int,
        max_seconds: float | None = None,
    ) -> None:
        self.slicer = slicer
        self.oracle = oracle
        self.tracker = tracker
        self.max_queries = max_queries
        self.deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        self.max_seconds = max_seconds
        self.out_of_budget: str | None = None
        self.stopped: str | None = None  # a signal asked to stop (``stop_on_signals``)
        self.known: dict[Selection, bool] = {}
        self.steps: list[Step] = []
        self.flaky: str | None = None
        self.last_passing: Piece | None = None
        self.others: dict[str, Piece] = {}  # failures that are not the target: other bugs

    def fails(self, selections: list[Selection], phase: str, labels: list[str]) -> list[bool]:
        results: list[bool | None] = [self.known.get(s) for s in selections]
        pieces: dict[int, Piece] = {}
        for index, selection in enumerate(selections):
            if results[index] is not None:
                continue
            try:
                pieces[index] = self.slicer.build(selection)
            except BuildError:
                results[index] = self.known[selection] = False
        todo = [i for i in pieces]
        if todo:
            self._check_budget()
        answers = self.oracle.ask_many([Question(loaded=pieces[i].loaded) for i in todo])
        for index, answer in zip(todo, answers):
            piece = pieces[index]
            self.steps.append(Step(phase, labels[index], answer.failing,
                                   answer.verdict.summary(), len(piece.ops)))
            if not answer.failing:
                results[index] = self.known[selections[index]] = False
                if answer.verdict.failed:  # a different failure: another bug, kept aside
                    self._other(answer.verdict.signature, piece)
                else:
                    self._passed(piece)
        for index, answer in zip(todo, answers):
            if answer.failing and all(results[i] is not True for i in range(index)):
                results[index] = self._verify(selections[index], pieces[index], phase)
            elif answer.failing:
                results[index] = None  # not needed: an earlier candidate already won
        return [bool(r) for r in results]

    def _check_budget(self) -> None:
        if self.stopped is not None:
            self.out_of_budget = self.stopped
        elif self.oracle.queries >= self.max_queries:
            self.out_of_budget = f"--max-queries {self.max_queries} reached"
        elif self.deadline is not None and time.perf_counter() >= self.deadline:
            self.out_of_budget = f"--max-seconds {self.max_seconds:g} spent"
        if self.out_of_budget:
            raise Budget()

    def fails_one(self, selection: Selection, phase: str, label: str) -> bool:
        return self.fails([selection], phase, [label])[0]

    def _verify(self, selection: Selection, piece: Piece, phase: str) -> bool:
        """Ask an accepted candidate again; a failure that does not come back is flaky."""
        again = self.oracle.ask(Question(loaded=piece.loaded))
        self.steps.append(Step(phase, f"re-verify {len(piece.ops)} ops", again.failing,
                               again.verdict.summary(), len(piece.ops)))
        self.known[selection] = again.failing
        if not again.failing:
            self.flaky = (
                f"a {phase} step failed once and then passed: the failure is flaky "
                "(try --repeat N)"
            )
        return again.failing

    def _other(self, signature: str, piece: Piece) -> None:
        known = self.others.get(signature)
        if known is None or len(piece.ops) < len(known.ops):
            self.others[signature] = piece

    def _passed(self, piece: Piece) -> None:
        if self.last_passing is None or len(piece.ops) <= len(self.last_passing.ops):
            self.last_passing = piece


@contextlib.contextmanager
def stop_on_signals(prober: Prober) -> Iterator[None]:
    """SIGTERM or Ctrl-C while minimizing (a CI job's time limit, a user who has seen enough):
    no new question is asked, the ones in flight end, and the smallest failing fusion found so
    far is written and checked as at the end of a budget. A second signal stops at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}

    def stop(signum: int, frame: object) -> None:
        for number, handler in previous.items():
            signal.signal(number, handler)
        prober.stopped = f"stopped by {signal.Signals(signum).name}"  # no I/O in a handler

    for number in previous:
        signal.signal(number, stop)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
