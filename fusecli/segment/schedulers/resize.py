"""resize (csrc/scheduler/resize.cpp): slice, pad and cat with pointwise ops around them.

- no slice, pad or cat: "No resize op to schedule";
- reductions: "No support for reduction ops";
- an input whose broadcast dimensions would be expanded to different sizes:
  "Broadcasting dimension might be broadcasting to multiple sizes.".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.segment import heuristics
from fusecli.segment.candidate import Candidate
from fusecli.segment.schedulers import common
from fusecli.segment.verdict import Scheduler, Verdict

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

NAME = "resize"


def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    if not any(e.op in common.RESIZE_OPS for e in candidate.exprs):
        return Verdict.reject(NAME, "No resize op to schedule")
    if candidate.reduction_exprs:
        return Verdict.reject(NAME, "No support for reduction ops")
    return Verdict.accept(NAME)


def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    """No run-time checks."""
    return Verdict.accept(NAME)


SCHEDULER = Scheduler(NAME, compile_time, run_time, heuristics.pointwise)
