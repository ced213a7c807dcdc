"""reduction (csrc/scheduler/reduction.cpp): reductions with no persistent buffer.

- no ReductionOp or WelfordOp: "No reduction op to schedule";
- no tensor input: "Scheduling not supported with no input";
- the memory-promotion rule ("<tv>, input of <op> must be fusion input.");
- reductions over different axes: "Un-mapped multi-reduction: <a> and <b>";
- a tensor needed both before and after a reduction belongs to a persistent scheduler:
  "need persistent buffers that reduction scheduler doesn't handle".
Run time: always accepted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.segment import heuristics
from fusecli.segment.candidate import Candidate
from fusecli.segment.reasons import Reason, Rejection
from fusecli.segment.schedulers import common
from fusecli.segment.verdict import Scheduler, Verdict

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

NAME = "reduction"


def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    if not candidate.reduction_exprs:
        return Verdict.reject(NAME, Reason.NO_REDUCTION)
    reason = common.reduction_input_reason(candidate, ctx) or common.unmapped_reduction_reason(
        candidate)
    if reason:
        return Verdict.reject(NAME, reason)
    buffers = common.persistent_buffers(candidate)
    if buffers:
        names = ", ".join(candidate.graph.name(b) for b in buffers)
        return Verdict.reject(NAME, Rejection.of(Reason.NEEDS_PERSISTENCE, buffers=names))
    return Verdict.accept(NAME)


def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    """No run-time checks: nvFuser's reduction scheduler takes any sizes."""
    return Verdict.accept(NAME)


SCHEDULER = Scheduler(NAME, compile_time, run_time, heuristics.reduction)
