"""TranslateApplicableWelford: a Welford that would make a persistent kernel becomes two passes.

nvFuser's segmenter (csrc/fusion_segmenter.cpp, ``TranslateApplicableWelford``), when the whole
fusion is not one segment: right after the initial segments are built (one per expr), each
segment holding a WelfordOp (fusecli's ``var_mean``) is tried translated on a copy:

    sum(x) / N = mean;  sum((x - broadcast(mean))^2) = M2     (the variance: M2 / (N - c))

with the segment's inputs and outputs (mean and M2) as its boundary. If the persistent scheduler
of the copy's reduction type accepts it (compile time and run time) and its heuristics make a
persistent kernel that is no cross-grid outer reduction (a grid synchronization costs more than
the second pass saves), the Welford is translated in the complete fusion and the segments are
built again. A translated layer norm reads x twice: a persistent buffer, so the reduction
scheduler no longer takes it ("need persistent buffers that reduction scheduler doesn't
handle") and the normalization schedulers do. fusecli's ``welford`` op (whose count output
would become the constant N) is not translated.

N is the product of the reduced sizes, read off the tensor (``size``) as nvFuser's
``numFeatures`` does; the denominator N - correction is kept at least 0, as ``variance()``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fusecli.ir.builder import FusionBuilder
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, Fusion, FusionOutput, TensorView, Val
from fusecli.ir.ops_elementwise import cast, elementwise, where
from fusecli.ir.ops_other import size
from fusecli.ir.ops_reduction import reduction
from fusecli.ir.ops_shape import broadcast
from fusecli.ir.optype import OpType
from fusecli.ir.order import in_dependency_order
from fusecli.segment.candidate import Candidate, FusionGraph
from fusecli.segment.rules import ScheduleContext
from fusecli.segment.schedulers import check, common, normalization


def translate_applicable_welfords(
    fusion: Fusion, ctx: ScheduleContext, live_exprs: list[Expr]
) -> Fusion | None:
    """``fusion`` with every live Welford that passes the test translated; None if none does."""
    live = {e.uid for e in live_exprs}
    if not ctx.runtime.known:
        return None
    chosen: dict[int, tuple[list[Expr], dict[int, Val]]] = {}
    for expr in fusion.exprs:
        if expr.uid not in live or expr.op is not OpType.var_mean:
            continue
        test = _two_pass(expr, ctx, {})  # its own broadcast: the test sees the whole graph
        if test is not None and _would_be_persistent(test, ctx):
            two_pass = _two_pass(expr, ctx, _mean_broadcasts(fusion, expr, live))
            variance, mean = expr.tensor_outputs()
            chosen[expr.uid] = (two_pass.exprs, {variance.uid: two_pass.variance,
                                                 mean.uid: two_pass.mean})
    if not chosen:
        return None
    exprs: list[Expr] = []
    replaced: dict[int, Val] = {}
    for expr in fusion.exprs:
        # a translated Welford reads the translation of one before it (a var_mean of a
        # variance): its new exprs read the replacements too
        new_exprs, outputs = chosen.get(expr.uid, ([expr], {}))
        for new in new_exprs:
            if any(v.uid in replaced for v in new.inputs):
                inputs = tuple(replaced.get(v.uid, v) for v in new.inputs)
                new = Expr(new.op, inputs, new.outputs, new.attrs)
            exprs.append(new)
        replaced.update(outputs)
    outputs = tuple(replace(o, value=replaced.get(o.value.uid, o.value)) for o in fusion.outputs)
    return Fusion(inputs=fusion.inputs, outputs=outputs, exprs=in_dependency_order(exprs))


@dataclass(frozen=True, slots=True)
class _TwoPass:
    exprs: list[Expr]
    mean: Val
    squares: Val  # M2
    variance: Val


def _mean_broadcasts(fusion: Fusion, welford: Expr, live: set[int]) -> dict[tuple, Val]:
    """The broadcasts of the Welford's mean already in the fusion, by their flags."""
    mean = welford.tensor_outputs()[1]
    return {tuple(e.attr("is_broadcast_dim")): e.outputs[0] for e in fusion.exprs
            if e.uid in live and e.op is OpType.broadcast and e.inputs[0] is mean}


def _two_pass(welford: Expr, ctx: ScheduleContext, broadcasts: dict[tuple, Val]
              ) -> _TwoPass | None:
    """translateSingleWelford, then the frontend's M2 * 1 / (N - correction). The mean's
    broadcast is one the fusion has already where there is one (as nvFuser reuses it)."""
    (source,) = welford.tensor_inputs()
    variance, mean = welford.tensor_outputs()
    dims = tuple(welford.attr("dims"))
    b = FusionBuilder()
    count = _product(b, [size(b, source, axis) for axis in dims])
    total = reduction(b, OpType.sum, source, dims)
    new_mean = elementwise(b, OpType.div, [total, count])
    flags = tuple(axis in dims for axis in range(source.ndim))
    spread = broadcasts.get(flags) or broadcast(b, new_mean, flags)
    centered = elementwise(b, OpType.sub, [source, spread])
    squares = reduction(b, OpType.sum, elementwise(b, OpType.mul, [centered, centered]), dims)
    # variance: M2 * 1 / (N - correction), the denominator at least 0 (inf past N, as torch)
    zero = b.constant(0, DataType.Int)
    denominator = elementwise(b, OpType.sub, [count, b.constant(welford.attr("correction"),
                                                                 DataType.Int)])
    denominator = where(b, elementwise(b, OpType.ge, [denominator, zero]), denominator, zero)
    inverse = elementwise(b, OpType.reciprocal, [cast(b, denominator, DataType.Double)])
    new_variance = elementwise(b, OpType.mul, [squares, inverse])
    if new_mean.dtype != mean.dtype or new_variance.dtype != variance.dtype:
        return None
    return _TwoPass(b.exprs, new_mean, squares, new_variance)


def _product(b: FusionBuilder, factors: list[Val]) -> Val:
    product = factors[0]
    for factor in factors[1:]:
        product = elementwise(b, OpType.mul, [product, factor])
    return product


def _would_be_persistent(two_pass: _TwoPass, ctx: ScheduleContext) -> bool:
    """wouldTranslateToPersistent on the Welford's own segment: mean and M2 its outputs (the
    variance's scaling is the frontend's, outside the Welford)."""
    last = next(i for i, e in enumerate(two_pass.exprs) if two_pass.squares in e.outputs)
    exprs = [e for e in two_pass.exprs[:last + 1] if any(
        isinstance(o, TensorView) for o in e.outputs)]
    inputs = tuple({v.uid: v for e in exprs for v in e.tensor_inputs()
                    if all(v not in x.outputs for x in exprs)}.values())
    outputs = (FusionOutput(two_pass.mean), FusionOutput(two_pass.squares))
    test = Fusion(inputs=inputs, outputs=outputs, exprs=tuple(exprs))
    candidate = Candidate.of(FusionGraph(test, ctx.runtime), exprs)
    kind = common.reduction_type(candidate)
    if kind is None:
        return False
    if not check(kind, candidate, ctx).accepted:
        return False
    return not (kind == "outer_persistent" and normalization.crosses_grid(candidate, ctx))
