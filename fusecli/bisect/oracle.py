"""The oracle every bisect mode asks: does this fusion still fail the way the original does?

A ``Target`` is the failure being chased, learned from the original's verdict: ``accuracy`` (a
mismatch against eager torch), ``crash`` (the same exception type and normalized message, or
the ``--check-str`` text), ``hang`` (no answer within the timeout), or ``any`` failure.

The ``Oracle`` answers questions. By default each one runs in a process of its own with a
timeout, so a hang is a verdict of its own and a dying interpreter is caught: a child forked
from a preloaded server, or a new ``python -m fusecli.bisect`` (``fusecli.bisect.fresh``).
In-process answers are faster still and serve tests. With ``repeat`` N a
question runs up to N times and fails as soon as one run fails: flaky failures are still
found, and the original question runs all N times to say how flaky the failure is. Several
questions run in parallel, up to ``jobs`` at a time.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from fusecli.app.pipeline import RunOptions
from fusecli.bisect.check import FAILURES, Verdict, evaluate, load_verdict
from fusecli.bisect.fresh import can_fork, run_exec, zygotes
from fusecli.bisect.questions import (
    BUNDLE_SUFFIX,
    Question,
    child_command,
    load_source,
    write_bundle,
)

KINDS = ("auto", "accuracy", "crash", "hang", "any")


@dataclass(frozen=True, slots=True)
class Target:
    kind: str  # accuracy, crash, hang, any
    signature: str | None = None  # a crash's signature, learned from the original
    check_str: str | None = None

    @staticmethod
    def learn(original: Verdict, kind: str = "auto", check_str: str | None = None) -> Target:
        if kind == "auto":
            kind = {"mismatch": "accuracy", "hang": "hang"}.get(original.status, "crash")
        signature = original.signature if original.status in ("crash", "died") else None
        return Target(kind, signature, check_str)

    def matches(self, verdict: Verdict) -> bool:
        if not verdict.failed:
            return False
        if self.check_str is not None:
            return self.check_str in verdict.message and (
                self.kind == "any" or _kind_of(verdict) == self.kind
            )
        if self.kind == "any":
            return True
        if _kind_of(verdict) != self.kind:
            return False
        return self.kind != "crash" or self.signature is None or verdict.signature == self.signature

    def describe(self) -> str:
        text = {"accuracy": "accuracy (mismatch against eager torch)",
                "hang": "hang (no answer within the timeout)",
                "any": "any failure"}.get(self.kind, f"crash ({self.signature})")
        return text + (f", with {self.check_str!r} in the message" if self.check_str else "")


def _kind_of(verdict: Verdict) -> str:
    return {"mismatch": "accuracy", "hang": "hang"}.get(verdict.status, "crash")


@dataclass(slots=True)
class Answer:
    failing: bool  # the target failure showed up in some run
    verdicts: list[Verdict] = field(default_factory=list)
    command: list[str] | None = None  # how to ask again, in a fresh interpreter

    @property
    def verdict(self) -> Verdict:
        """The verdict that decided: the first failing run, else the last one."""
        return next((v for v in self.verdicts if v.failed), self.verdicts[-1])


class Oracle:
    def __init__(
        self,
        options: RunOptions,
        workdir: Path,
        *,
        isolate: bool = True,
        fork: bool = True,
        timeout: float = 120.0,
        repeat: int = 1,
        jobs: int = 1,
        target: Target | None = None,
        on_query: Callable[[], None] | None = None,
    ) -> None:
        self.options = options
        self.workdir = Path(workdir)
        self.isolate = isolate
        # Real nvFuser's library needs torch's symbols global: its zygotes load torch so, and
        # each child imports nvFuser itself. FUSECLI_FORK=0 asks every question in a new
        # interpreter instead (slower by the interpreter's start and torch's import).
        forkable = (fork and can_fork() and options.engine in ("fusecli", "nvfuser")
                    and os.environ.get("FUSECLI_FORK", "1") != "0")
        self.zygotes = (zygotes(max(1, jobs), global_symbols=options.engine == "nvfuser")
                        if forkable else None)
        self.timeout = timeout
        self.repeat = max(1, repeat)
        self.jobs = max(1, jobs)
        self.target = target
        self.on_query = on_query
        self.queries = 0  # questions asked
        self.runs = 0  # runs, repeats included
        self._lock = threading.Lock()
        self._names = itertools.count()

    # -- asking -------------------------------------------------------------------------------

    def ask(
        self, question: Question, *, every_run: bool = False, fresh: bool = False
    ) -> Answer:
        """Run ``question`` up to ``repeat`` times; stop at the first run that fails the target,
        unless ``every_run`` (to measure how often the original fails). ``fresh`` asks in a
        fresh interpreter even when the oracle runs questions in this process."""
        with self._lock:
            self.queries += 1
        answer = Answer(False)
        try:
            for _ in range(self.repeat):
                verdict = self._run(question, answer, fresh)
                answer.verdicts.append(verdict)
                if self._fails(verdict):
                    answer.failing = True
                    if not every_run:
                        break
        finally:
            self._remove_bundle(question, answer)
        if self.on_query:
            self.on_query()
        return answer

    def ask_many(self, questions: Sequence[Question]) -> list[Answer]:
        """Answers in order; up to ``jobs`` questions at a time in subprocess mode."""
        if self.jobs == 1 or not self.isolate or len(questions) < 2:
            return [self.ask(q) for q in questions]
        with ThreadPoolExecutor(max_workers=min(self.jobs, len(questions))) as pool:
            return list(pool.map(self.ask, questions))

    def _fails(self, verdict: Verdict) -> bool:
        if self.target is None:
            return verdict.status in FAILURES
        return self.target.matches(verdict)

    def _run(self, question: Question, answer: Answer, fresh: bool) -> Verdict:
        with self._lock:
            self.runs += 1
        if not (self.isolate or fresh):
            return self._run_here(question)
        return self._run_child(question, answer, fresh)

    # -- in this process ----------------------------------------------------------------------

    def _run_here(self, question: Question) -> Verdict:
        loaded = question.loaded
        if loaded is None:
            try:
                fusions = load_source(question.path, device=self.options.device,
                                      seed=self.options.seed)
                loaded = fusions[question.index]
            except Exception as error:
                return load_verdict(error)
        log_to = None if question.log_to is None else str(question.log_to)
        return evaluate(loaded, self.options, question.segments, log_to)

    # -- in a fresh interpreter ---------------------------------------------------------------

    def command(self, question: Question, keep_as: Path | None = None) -> list[str]:
        """The command that asks ``question`` again; an in-memory fusion is saved first."""
        source = question.path
        if source is None:
            source = keep_as or self.workdir / f"q{next(self._names):05d}{BUNDLE_SUFFIX}"
            write_bundle(question.loaded, source)
        return child_command(Path(source), question, self.options)

    def _run_child(self, question: Question, answer: Answer, fresh: bool) -> Verdict:
        """In a forked child of the preloaded server, or (``fresh``, or no fork here) in a new
        interpreter: a hang is killed at the timeout, a death is a verdict."""
        if answer.command is None:
            answer.command = self.command(question)
        if self.zygotes is not None and not fresh:
            return self.zygotes.run(answer.command[3:], self.timeout, self._child_env(),
                                    answer.command, self.workdir)
        return run_exec(answer.command, self.timeout, self._child_env())

    def _child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.jobs > 1:  # share the cores between parallel children
            threads = max(1, (os.cpu_count() or 1) // self.jobs)
            env.setdefault("OMP_NUM_THREADS", str(threads))
        return env

    def _remove_bundle(self, question: Question, answer: Answer) -> None:
        """The temporary bundle of an in-memory question goes once it is answered."""
        if question.path is None and answer.command is not None:
            Path(answer.command[3]).unlink(missing_ok=True)
            answer.command = None
