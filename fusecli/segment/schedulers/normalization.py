"""The three persistent schedulers, one definition (normalization_scheduler_utils).

A persistent kernel keeps a whole reduction row on chip, so a tensor read both before and
after a reduction (x in RMSNorm) is read from memory once. ``inner_persistent`` takes
reductions of the innermost dimension (RMSNorm, softmax), ``outer_persistent`` reductions of
outer dimensions (batch norm style), ``inner_outer_persistent`` both at once. Rules, in order:
- "needs a reduction op"; "Scheduling not supported with no input"; the memory-promotion rule;
- the reduction type (inner: the innermost dimension is reduced; outer: it is not; both:
  inner_outer) must be this scheduler's:
  "scheduler_type doesn't match with reduction type `<type>`.";
- inner and outer persistent need every reduction over the same axes:
  "Un-mapped multi-reduction: <a> and <b>";
- "no persistent buffer identified" (a plain reduction belongs to the reduction scheduler).
Run time: the persistent buffers of one row must fit in the register file (the reason is each
scheduler's own: nvFuser words it differently in each).
Heuristics: the reduction kernel's (``heuristics.reduction``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.segment import heuristics
from fusecli.segment.candidate import Candidate
from fusecli.segment.schedulers import common
from fusecli.segment.verdict import Scheduler, Verdict

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext


def persistent(name: str, too_large: str, same_axes: bool = True) -> Scheduler:
    """The persistent scheduler for the reduction type ``name``; ``same_axes``: its
    reductions must all reduce the same axes."""

    def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
        if common.has_mma(candidate) or not candidate.reduction_exprs:
            return Verdict.reject(name, "needs a reduction op")
        reason = common.reduction_input_reason(candidate)
        if reason:
            return Verdict.reject(name, reason)
        found = common.reduction_type(candidate)
        if found != name:
            return Verdict.reject(
                name, f"scheduler_type doesn't match with reduction type `{found}`.")
        reason = common.unmapped_reduction_reason(candidate) if same_axes else None
        if reason:
            return Verdict.reject(name, reason)
        if not common.persistent_buffers(candidate):
            return Verdict.reject(name, "no persistent buffer identified")
        return Verdict.accept(name)

    def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
        needed = common.persistent_bytes(candidate, ctx)
        if needed is not None and needed > ctx.device.max_persistent_bytes:
            return Verdict.reject(name, too_large, "run time")
        return Verdict.accept(name)

    return Scheduler(name, compile_time, run_time, heuristics.reduction)


INNER = persistent("inner_persistent", "not enough registers or shared memory for persistence.")
OUTER = persistent("outer_persistent", "not enough registers for persistence")
INNER_OUTER = persistent("inner_outer_persistent",
                         "not enough registers or shared memory for persistence", False)
