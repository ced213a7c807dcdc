"""pointwise (csrc/scheduler/pointwise.cpp): elementwise kernels over one loop nest.

Compile time: the memory-promotion rule; "no support for reduction ops"; and "cannot find
reference tensor" when no output covers every loop of the segment (an output must iterate
over all iteration dimensions, or the kernel would leave some unscheduled). Loops split or
merged by a reshape are covered by the reshape's output; the indexed dimension of a lookup
table (index_select, gather, select) is read by index, not iterated. Then a broadcast that
meets loops of two extents: "Broadcasting dimension might be broadcasting to multiple sizes."
(hasNonUniqueBcast, also asked by reduction and the persistent schedulers). In the
nvfuser-2024 profile an MmaOp segment has no reference either (its output carries a
reduction).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.ir.optype import OpKind, OpType
from fusecli.segment import heuristics
from fusecli.segment.candidate import Candidate
from fusecli.segment.reasons import Reason, Rejection
from fusecli.segment.schedulers import common
from fusecli.segment.verdict import Scheduler, Verdict

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

NAME = "pointwise"


def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    if common.has_mma(candidate):
        # nvFuser's canScheduleCompileTime searches for a reference first; an MmaOp is a
        # reduction op, refused after the search
        if find_reference(candidate, ctx) is None:
            return Verdict.reject(NAME, Reason.NO_REFERENCE)
        return Verdict.reject(NAME, Rejection.of(Reason.REDUCTION_IN_ELEMENTWISE, op="mma"))
    reason = common.elementwise_reason(candidate, ctx, Reason.NO_REFERENCE)
    if reason:
        return Verdict.reject(NAME, reason)
    if find_reference(candidate, ctx) is None:
        return Verdict.reject(NAME, Reason.NO_REFERENCE)
    reason = common.non_unique_broadcast_reason(candidate)
    if reason:
        return Verdict.reject(NAME, reason)
    return Verdict.accept(NAME)


def find_reference(candidate: Candidate, ctx: ScheduleContext):
    """An output whose loops cover every non-broadcast loop of the segment's tensors."""
    dims = candidate.dims
    lookups = _lookup_dims(candidate)
    required = set()
    for tensor in candidate.tensors:
        for position, domain in enumerate(tensor.domain):
            if (tensor.uid, position) in lookups:
                continue
            if not domain.is_broadcast and not domain.is_reduction:
                required.add(dims.class_of(tensor, position))
    best, best_size = None, -1
    for output in candidate.outputs:
        covered = {
            dims.class_of(output, position)
            for position, domain in enumerate(output.domain)
            if not domain.is_reduction
        }
        covered |= _reshaped_from(candidate, output)
        if required <= covered:
            size = ctx.runtime.numel(output) or 0
            if best is None or size > best_size:
                best, best_size = output, size
    return best


def _lookup_dims(candidate: Candidate) -> set[tuple[int, int]]:
    """The indexed dimension of each lookup table: read by index, not iterated over."""
    found = set()
    for expr in candidate.exprs_of(OpKind.INDEX):
        dim = expr.attr("dim")
        if dim is not None:
            found.add((expr.inputs[0].uid, dim))
    return found


def _reshaped_from(candidate: Candidate, output) -> set[object]:
    """Loops of tensors that reach ``output`` through a reshape: the reshape replays them."""
    covered, stack, seen = set(), [output], set()
    while stack:
        tensor = stack.pop()
        if tensor.uid in seen:
            continue
        seen.add(tensor.uid)
        producer = candidate.definition(tensor)
        if producer is None or not candidate.contains(producer):
            continue
        for source in producer.tensor_inputs():
            if producer.op is OpType.reshape:
                for position, domain in enumerate(source.domain):
                    if not domain.is_reduction:
                        covered.add(candidate.dims.class_of(source, position))
            stack.append(source)
    return covered


def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    """No run-time checks (nvFuser has some for block quantization only)."""
    return Verdict.accept(NAME)


SCHEDULER = Scheduler(NAME, compile_time, run_time, heuristics.pointwise,
                      loop_follows_outputs=True)
