"""What the three persistent schedulers share (normalization_scheduler_utils::compileTimeCheck).

A persistent kernel keeps a whole reduction row on chip, so a tensor read both before and
after a reduction (x in RMSNorm) is read from memory once. Rules, in order:
- "needs a reduction op"; "Scheduling not supported with no input"; the memory-promotion rule;
- the reduction type (inner: the innermost dimension is reduced; outer: it is not; both:
  inner_outer) must be this scheduler's:
  "scheduler_type doesn't match with reduction type `<type>`.";
- inner and outer persistent need every reduction over the same axes:
  "Un-mapped multi-reduction: <a> and <b>";
- "no persistent buffer identified" (a plain reduction belongs to the reduction scheduler).
Run time: the persistent buffers of one row must fit in the register file
("not enough registers or shared memory for persistence.").
"""

from __future__ import annotations

from fusecli.segment.candidate import Candidate
from fusecli.segment.rules import ScheduleContext, Verdict
from fusecli.segment.schedulers import common


def compile_time_persistent(name: str, candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    if common.has_mma(candidate) or not candidate.reduction_exprs:
        return Verdict.reject(name, "needs a reduction op")
    if not candidate.inputs:
        return Verdict.reject(name, "Scheduling not supported with no input")
    reason = common.memory_promotion_reason(candidate)
    if reason:
        return Verdict.reject(name, reason)
    found = common.reduction_type(candidate)
    if found != name:
        return Verdict.reject(name, f"scheduler_type doesn't match with reduction type `{found}`.")
    if name != "inner_outer_persistent":
        mismatch = common.reduction_signatures_agree(candidate)
        if mismatch:
            first, second = (candidate.graph.name(e.tensor_outputs()[0]) for e in mismatch)
            return Verdict.reject(name, f"Un-mapped multi-reduction: {first} and {second}")
    if not common.persistent_buffers(candidate):
        return Verdict.reject(name, "no persistent buffer identified")
    return Verdict.accept(name)


def run_time_persistent(
    name: str, candidate: Candidate, ctx: ScheduleContext, too_large: str
) -> Verdict:
    needed = common.persistent_bytes(candidate, ctx)
    if needed is not None and needed > ctx.device.max_persistent_bytes:
        return Verdict.reject(name, too_large, "run time")
    return Verdict.accept(name)
