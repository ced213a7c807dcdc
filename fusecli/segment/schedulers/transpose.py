"""transpose (csrc/scheduler/transpose.cpp): pointwise fusions whose inputs and outputs
disagree on which dimension is innermost in memory.

Compile time: reductions ("no support for reduction ops"), the memory-promotion rule, and
"cannot find two mismatching inner most dimensions" when every input and output has the
same innermost loop. Run time: fewer elements than SMs x 32 x 32 tiles is "Transpose
scheduler does not perform well on small problem sizes.".
In the nvfuser-2024 profile an MmaOp is "no support for mma ops.".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.segment import heuristics
from fusecli.segment.candidate import Candidate
from fusecli.segment.dims import innermost_position
from fusecli.segment.schedulers import common
from fusecli.segment.verdict import Scheduler, Verdict

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

NAME = "transpose"
TILE = 32


def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    reason = common.elementwise_reason(candidate, "no support for mma ops.")
    if reason:
        return Verdict.reject(NAME, reason)
    groups = inner_dim_groups(candidate)
    if len(groups) < 2:
        return Verdict.reject(NAME, "cannot find two mismatching inner most dimensions")
    return Verdict.accept(NAME)


def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    sizes = [ctx.runtime.numel(t) for t in candidate.tensors]
    if None in sizes:
        return Verdict.accept(NAME)
    if max(sizes, default=0) < ctx.device.sm_count * TILE * TILE:
        return Verdict.reject(
            NAME, "Transpose scheduler does not perform well on small problem sizes.", "run time"
        )
    return Verdict.accept(NAME)


def inner_dim_groups(candidate: Candidate) -> set[object]:
    """The distinct loops that are innermost in memory for some segment input or output."""
    groups = set()
    for tensor in (*candidate.inputs, *candidate.outputs):
        stride_order = tensor.stride_order if candidate.graph.fusion.inputs and \
            tensor.uid in candidate.graph.input_uids else ()
        position = innermost_position(tensor, stride_order)
        if position is not None:
            groups.add(candidate.dims.class_of(tensor, position))
    return groups


SCHEDULER = Scheduler(NAME, compile_time, run_time, heuristics.transpose)
