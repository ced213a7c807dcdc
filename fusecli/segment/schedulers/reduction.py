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

from fusecli.segment.candidate import Candidate
from fusecli.segment.rules import ScheduleContext, Verdict
from fusecli.segment.schedulers import common

NAME = "reduction"


def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    if not candidate.reduction_exprs:
        return Verdict.reject(NAME, "No reduction op to schedule")
    if not candidate.inputs:
        return Verdict.reject(NAME, "Scheduling not supported with no input")
    reason = common.memory_promotion_reason(candidate)
    if reason:
        return Verdict.reject(NAME, reason)
    mismatch = common.reduction_signatures_agree(candidate)
    if mismatch:
        first, second = (candidate.graph.name(e.tensor_outputs()[0]) for e in mismatch)
        return Verdict.reject(NAME, f"Un-mapped multi-reduction: {first} and {second}")
    if common.persistent_buffers(candidate):
        return Verdict.reject(
            NAME, "need persistent buffers that reduction scheduler doesn't handle"
        )
    return Verdict.accept(NAME)


def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    """No run-time checks: nvFuser's reduction scheduler takes any sizes."""
    return Verdict.accept(NAME)
