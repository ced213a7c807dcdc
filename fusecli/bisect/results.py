"""What bisect found, as plain data for ``fusecli.report.bisect_view``; and its progress.

Exit codes follow DESIGN.md: 0 the failure was localized; 1 it did not reproduce; 2 bad input
or usage; 3 bisect could not localize it (a repro that does not fail alone, only untestable
commits left); 4 a missing environment. Nothing here exceeds 125.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusecli.bisect.check import Verdict
from fusecli.bisect.oracle import Target

EXIT_LOCALIZED, EXIT_NOT_REPRODUCED, EXIT_NOT_LOCALIZED = 0, 1, 3


@dataclass(frozen=True, slots=True)
class Progress:
    phase: str  # reproduce, segments, minimize, shrink, verify, git
    queries: int
    detail: str  # the current interval or size
    elapsed: float


class Tracker:
    """Counts questions and tells a callback (the CLI's progress line) what is going on."""

    def __init__(self, callback: Callable[[Progress], None] | None = None) -> None:
        self.callback = callback
        self.started = time.perf_counter()
        self.phase = ""
        self.detail = ""
        self.queries = 0

    def update(self, phase: str | None = None, detail: str | None = None) -> None:
        if phase is not None:
            self.phase = phase
        if detail is not None:
            self.detail = detail
        self._emit()

    def query_done(self) -> None:
        self.queries += 1
        self._emit()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def _emit(self) -> None:
        if self.callback:
            self.callback(Progress(self.phase, self.queries, self.detail, self.elapsed))


@dataclass(frozen=True, slots=True)
class Step:
    """One question asked along the way, and its answer."""

    phase: str
    label: str  # "segments 0..3 on aten", "12 ops", "512 -> 64"
    failing: bool
    verdict: str  # the deciding verdict's summary
    size: int | None = None  # ops, or a prefix length


@dataclass(slots=True)
class SchedulerVerdict:
    scheduler: str
    accepted: bool
    reason: str


@dataclass(slots=True)
class SegmentFinding:
    """The first segment whose run on the executor under test makes the fusion fail."""

    index: int  # in run order
    count: int  # segments in the fusion
    scheduler: str
    ops: list[str]
    decisions: list[SchedulerVerdict]  # the segmenter's verdicts for exactly these exprs
    ir: str  # the segment alone, printed as nvFuser prints a fusion
    kernel_source: str | None  # generated CUDA, when an executor generated any
    kernel_note: str
    kernel_file: Path | None = None
    repro: Path | None = None  # the segment alone, as a runnable repro
    fails_alone: bool | None = None
    queries: int = 0
    seconds: float = 0.0
    steps: list[Step] = field(default_factory=list)


@dataclass(slots=True)
class Minimized:
    ops_before: int
    ops: list[str]  # the ops left, in order
    inputs_before: int
    inputs: list[str]  # each input, e.g. "float32[1, 4]"
    outputs_before: int
    outputs: int
    repro_py: Path
    repro_yaml: Path
    verified: bool  # the written repro fails alone, in a fresh process
    verification: str
    queries: int = 0
    seconds: float = 0.0
    steps: list[Step] = field(default_factory=list)


@dataclass(slots=True)
class BisectReport:
    path: str
    name: str
    reproduced: bool
    original: Verdict | None
    target: Target | None = None
    flaky: str | None = None  # "failed 3 of 5 runs", or why bisect distrusts a step
    segments: SegmentFinding | None = None
    minimized: Minimized | None = None
    queries: int = 0
    runs: int = 0
    seconds: float = 0.0
    output_dir: Path | None = None
    replays: dict[str, str] = field(default_factory=dict)  # "last good" / "first bad" -> cmd
    notes: list[str] = field(default_factory=list)
    engine: str = "fusecli"  # the engine under test
    engine_segments: Any = None  # another engine's own segments (engine_bisect.EngineSegments)
    report_md: Path | None = None  # the bug report, for another engine's failure

    @property
    def exit_code(self) -> int:
        if not self.reproduced:
            return EXIT_NOT_REPRODUCED
        if self.minimized is not None and not self.minimized.verified:
            return EXIT_NOT_LOCALIZED
        return EXIT_LOCALIZED


@dataclass(frozen=True, slots=True)
class Commit:
    hash: str
    subject: str


@dataclass(frozen=True, slots=True)
class GitStep:
    commit: Commit
    outcome: str  # good, bad, skip
    exit_code: int | None  # the oracle command's own exit status (None: timed out or died)
    reason: str
    seconds: float


@dataclass(slots=True)
class GitReport:
    repo: str
    good: Commit
    bad: Commit
    command: str
    reproduced: bool
    first_bad: Commit | None = None
    candidates: list[Commit] = field(default_factory=list)  # when skips leave several
    steps: list[GitStep] = field(default_factory=list)
    restored: str = ""  # the branch (or commit) the checkout is on, and stays on
    seconds: float = 0.0
    replays: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if not self.reproduced:
            return EXIT_NOT_REPRODUCED
        return EXIT_LOCALIZED if self.first_bad is not None else EXIT_NOT_LOCALIZED
