"""A scheduler's answer for one candidate segment, and what a scheduler is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from fusecli.segment import tuning
from fusecli.segment.candidate import Candidate
from fusecli.segment.heuristics import HeuristicParams, Sizes
from fusecli.segment.reasons import Reason, Rejection

if TYPE_CHECKING:  # the context holds the profile, whose orders name registered schedulers
    from fusecli.segment.rules import ScheduleContext


@dataclass(frozen=True, slots=True)
class Verdict:
    """One scheduler's answer for one candidate: accepted, or why it was rejected.

    A rejection by fusecli carries its reason as data (``reasons.py``): ``code`` names it,
    ``reason`` is nvFuser's text, ``evidence`` the offending tensors, exprs and sizes as
    ``(name, printed value)`` pairs. A verdict parsed from nvFuser's own log has its text
    only. An acceptance at known sizes carries the scheduler's heuristics (``params``); they
    are not part of what the verdict says, so verdicts compare without them.
    """

    scheduler: str
    accepted: bool
    reason: str = ""
    stage: str = ""  # where a rejection came from: "common", "compile time" or "run time"
    params: HeuristicParams | None = field(default=None, compare=False)
    code: str = ""
    evidence: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    # where the answer rests on what nvFuser asks the GPU (hardware.py): the note saying so
    hardware: str = field(default="", compare=False)

    @staticmethod
    def accept(scheduler: str) -> Verdict:
        return Verdict(scheduler, True)

    @staticmethod
    def reject(
        scheduler: str, why: Rejection | Reason | str, stage: str = "compile time"
    ) -> Verdict:
        """A rejection for a Rejection (reason and evidence), a Reason needing no evidence, or
        a text alone (what nvFuser's log said)."""
        if isinstance(why, Reason):
            why = Rejection.of(why)
        if isinstance(why, Rejection):
            return Verdict(scheduler, False, why.text, stage, code=why.reason.code,
                           evidence=why.evidence)
        return Verdict(scheduler, False, why, stage)

    def depending_on_gpu(self, note: str) -> Verdict:
        """This verdict, noted as resting on a device query fusecli answers for an H200."""
        return replace(self, hardware=note)

    @property
    def facts(self) -> dict[str, str]:
        """The evidence by name."""
        return dict(self.evidence)


Check = Callable[[Candidate, "ScheduleContext"], Verdict]


def _no_heuristics(candidate: Candidate, sizes: Sizes) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Scheduler:
    """One scheduler: its checks (compile time: the segment's structure; run time: its sizes),
    the heuristics it picks at concrete sizes (the defaults; ``params_at`` applies the measured
    table), whether its segments run on ATen by design (no CUDA kernel is generated for
    them) and whether its kernel's loop follows its outputs (``orders_outputs``)."""

    name: str
    compile_time: Check
    run_time: Check
    heuristics: Callable[[Candidate, Sizes], HeuristicParams | None] = _no_heuristics
    runs_on_aten: bool = False
    loop_follows_outputs: bool = False

    @property
    def orders_outputs(self) -> bool:
        """Whether its segments write a fusion output in nvFuser's allocation order
        (``FusionGraph.output_orders``): ATen's (a layout given to the result) and a kernel
        whose loop follows its outputs (pointwise, resize: stored as read). A reduction's or a
        transpose's loop is laid out for its reads, and an output of another order is written
        row-major there: on an H100, population member fuzz_967576896's reduction took 676 us
        storing a [2, 4096, 4096] output in its input's order, nvFuser's 174 us."""
        return self.runs_on_aten or self.loop_follows_outputs

    def params_at(self, candidate: Candidate, sizes: Sizes) -> HeuristicParams | None:
        """The params a segment gets at ``sizes``: the heuristics' defaults with the measured
        table's choice for their size class (``tuning.py``), where it is valid here."""
        return tuning.tuned(self.name, candidate, sizes, self.heuristics(candidate, sizes))
