"""matmul (csrc/scheduler/matmul_utils.cpp): the MMA kernel scheduler.

Profile ``nvfuser`` (today):
- no MatmulOp/LinearOp/MmaOp: "No matmul patterns were found";
- MatmulOp/LinearOp need NVFUSER_ENABLE=fuse_matmul: "MatmulOp and LinearOp fusion is
  disabled by default. Enable it using NVFUSER_ENABLE=fuse_matmul";
- with it: one pattern only ("Only a single matmul pattern can currently be fused"), no 1-D
  operand ("Cannot fuse matrix-vector products"), fp16/bf16 operands ("Unsupported operand
  type. Operands must be fp16 or bf16"), and on Hopper operands reached from segment inputs
  through set, broadcast and squeeze only ("Operand <tv> must have only trivial prologue ops
  (set, broadcast, squeeze) but found <expr>").

Profile ``nvfuser-2024`` (commit ac599aa6, before PR #2221): exactly one MmaOp ("Matmul
scheduler supports fusions only with a single mma opor supports a mul-sum pair which can be
replaced with a mma op", nvFuser's two strings concatenated without a space), and each MmaOp
operand defined by a BroadcastOp whose input is a segment input or the output of a LoadStoreOp
(set, permute): otherwise "MmaOp input has unsupported dependency".

Profile ``nvfuser-2023`` (December 2023): the same rules, the count worded "Matmul scheduler
supports fusions only with a single MMA op, got: <n>" (until PR #1507, January 2024).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import OpType
from fusecli.segment.candidate import Candidate
from fusecli.segment.reasons import Reason, Rejection
from fusecli.segment.verdict import Scheduler, Verdict

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

NAME = "matmul"

_LOAD_STORE = frozenset({OpType.set, OpType.permute, OpType.segment_set, OpType.stride_order})
# LoadStoreOp, BroadcastOp and SqueezeOp: what may stand between an operand and the segment
# input it reads on sm_90 (a cast may not)
_TRIVIAL_PROLOGUE = _LOAD_STORE | {OpType.broadcast, OpType.squeeze}


def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    if ctx.profile.matmul_as_mma:
        return _can_schedule_2024(candidate, ctx)
    patterns = [e for e in candidate.exprs if e.op in (OpType.matmul, OpType.linear, OpType.mma)]
    if not patterns:
        return Verdict.reject(NAME, Reason.NO_MATMUL)
    # isMatmulFusionDefinitionSupported's order (matmul_utils.cpp): per pattern the operands'
    # prologue (sm_90), then the MatmulOp/LinearOp checks; the pattern count after all
    for pattern in patterns:
        operands = pattern.tensor_inputs()[:2]
        for operand in operands:
            offending = _non_trivial_prologue(candidate, operand)
            if offending is not None:
                return Verdict.reject(NAME, Rejection.of(
                    Reason.NON_TRIVIAL_PROLOGUE, operand=candidate.graph.name(operand),
                    expr=_expr_text(candidate, offending), op=offending.op.value,
                ))
        if pattern.op is OpType.mma:
            continue
        if not ctx.switches.fuse_matmul:
            return Verdict.reject(NAME, Reason.MATMUL_FUSION_DISABLED)
        if any(operand.ndim < 2 for operand in operands):
            return Verdict.reject(NAME, Reason.MATRIX_VECTOR)
        if any(o.dtype not in (DataType.Half, DataType.BFloat16) for o in operands):
            return Verdict.reject(NAME, Reason.OPERAND_DTYPE)
    if len(patterns) > 1:
        return Verdict.reject(NAME, Rejection.of(Reason.MULTIPLE_MATMULS, count=len(patterns)))
    return Verdict.accept(NAME)


def _non_trivial_prologue(candidate: Candidate, operand: TensorView) -> Expr | None:
    stack = [operand]
    while stack:
        value = stack.pop()
        if candidate.is_input(value):
            continue
        producer = candidate.definition(value)
        if producer is None or not candidate.contains(producer):
            continue
        if producer.op not in _TRIVIAL_PROLOGUE:
            return producer
        stack.extend(producer.tensor_inputs())
    return None


def _can_schedule_2024(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    mmas = [e for e in candidate.exprs if e.op is OpType.mma]
    if len(mmas) != 1 and ctx.profile.mma_count_wording_2023:
        return Verdict.reject(NAME, Rejection.of(Reason.MMA_COUNT_2023, count=len(mmas)))
    if len(mmas) != 1:
        return Verdict.reject(NAME, Rejection.of(Reason.MMA_COUNT, count=len(mmas)))
    for operand in mmas[0].tensor_inputs():
        offending = _invalid_dependency(candidate, operand)
        if offending is not None:
            return Verdict.reject(NAME, Rejection.of(
                Reason.MMA_DEPENDENCY, expr=offending, operand=candidate.graph.name(operand)
            ))
    return Verdict.accept(NAME)


def _invalid_dependency(candidate: Candidate, operand: TensorView) -> str | None:
    """areMmaOpInputDependeciesValid: an operand must be a broadcast of a segment input or of
    a LoadStoreOp. What breaks the rule (the operand's producer when it is no broadcast, else
    what the broadcast reads), as text, or None when the operand is valid."""
    producer = candidate.definition(operand)  # the complete fusion's, as in nvFuser
    if producer is None:
        return f"{candidate.graph.name(operand)}, an input and no broadcast"
    if producer.op is not OpType.broadcast:
        return _expr_text(candidate, producer)
    source = producer.inputs[0]
    if candidate.is_input(source):
        return None
    source_producer = candidate.definition(source)
    if source_producer is not None and source_producer.op in _LOAD_STORE:
        return None
    return _expr_text(candidate, source_producer or producer)


def _expr_text(candidate: Candidate, expr: Expr) -> str:
    """``T7 = reshape(T3)``: an expr by its op and the names fusecli prints."""
    outputs = ", ".join(candidate.graph.name(v) for v in expr.outputs)
    inputs = ", ".join(candidate.graph.name(v) for v in expr.tensor_inputs())
    return f"{outputs} = {expr.op.value}({inputs})"


def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    """No run-time checks here (nvFuser's one limits Hopper dims to 2^31)."""
    return Verdict.accept(NAME)


SCHEDULER = Scheduler(NAME, compile_time, run_time, runs_on_aten=True)
