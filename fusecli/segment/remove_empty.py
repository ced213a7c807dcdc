"""RemoveEmptyPass: what an empty tensor makes trivial is replaced before segmentation.

nvFuser's first pre-segmentation pass (csrc/preseg_passes/remove_empty.cpp, PR #543, July
2023; concretization gives every empty dimension the constant extent 0, #449). With the
inputs' sizes known (fusecli's ``RuntimeInfo``), a tensor is empty when one of its logical
dimensions has size 0, and

1. an empty fusion output that is no input becomes ``full(shape, 0)``: nothing computes it;
2. a cat drops its inputs that are empty along the cat dimension, and a cat left with one
   input becomes a ``set`` of it (nvFuser's ``cat()`` of one tensor);
3. a reduction (sum, prod, max, min) of an empty input becomes ``full(shape, init)``, the
   reduction's initial value;
4. a pad of an empty input becomes ``full(padded shape, pad value)``.

The exprs the replacements leave without a use are dead code, which the segmenter drops. So
an empty cat input makes the cat a copy (a pointwise segment, where fusecli without this pass
cut a resize segment), and a sum over an empty dimension is a fill. Welford-style ops (var,
var_mean) of an empty input are not replaced here (nvFuser fills their mean with NaN and
their sum of squares with 0; fusecli's ops do not split that way).
"""

from __future__ import annotations

import math
from dataclasses import replace

from fusecli.ir import dtype as dt
from fusecli.ir.builder import FusionBuilder, copy_domain
from fusecli.ir.nodes import Expr, Fusion, Scalar, TensorView, Val, Vector
from fusecli.ir.optype import OpKind, OpType
from fusecli.segment.candidate import RuntimeInfo

# A reduction's initial value (ReductionOp::init): what an empty reduction leaves.
_INIT = {OpType.sum: 0, OpType.prod: 1, OpType.max: -math.inf, OpType.min: math.inf}


def remove_empty(fusion: Fusion, runtime: RuntimeInfo) -> Fusion:
    """``fusion`` with empty tensors' trivial exprs replaced; ``fusion`` if there are none."""
    if not runtime.known:
        return fusion
    inputs = {value.uid for value in fusion.inputs}
    replaced: dict[int, Val] = {}  # tensor uid -> what replaces it
    exprs: list[Expr] = []
    for expr in fusion.exprs:
        expr = with_replacements(expr, replaced)
        new = _replacement(expr, runtime)
        if new is None:
            exprs.append(expr)
            continue
        exprs.extend(new)
        replaced[expr.output.uid] = new[-1].output
    outputs = []
    for output in fusion.outputs:
        value = replaced.get(output.value.uid, output.value)
        if (isinstance(value, TensorView) and value.uid not in inputs
                and _is_empty(value, runtime) and not _is_fill(exprs, value)):
            fill = _full(value, 0, runtime)
            exprs.append(fill)
            value = fill.output
        outputs.append(replace(output, value=value))
    if not replaced and len(exprs) == len(fusion.exprs):
        return fusion
    return Fusion(inputs=fusion.inputs, outputs=tuple(outputs), exprs=tuple(exprs))


def _replacement(expr: Expr, runtime: RuntimeInfo) -> list[Expr] | None:
    """The exprs that replace ``expr`` (the last one defines its output), or None."""
    if expr.op is OpType.cat:
        return _cat_without_empty(expr, runtime)
    tensors_in = expr.tensor_inputs()
    if not tensors_in or not _is_empty(tensors_in[0], runtime):
        return None
    if expr.op.kind is OpKind.REDUCTION and expr.op in _INIT:
        return [_full(expr.output, _INIT[expr.op], runtime)]
    if expr.op is OpType.pad:
        value = expr.inputs[1]  # pad(arg, value, *widths)
        return [_full(expr.output, value if isinstance(value, Scalar) else 0, runtime)]
    return None


def _cat_without_empty(expr: Expr, runtime: RuntimeInfo) -> list[Expr] | None:
    dim = expr.attr("dim")
    tensors = expr.tensor_inputs()
    kept = [t for t in tensors if runtime.extent(t.logical[dim].logical_extent) != 0]
    if len(kept) == len(tensors) or not kept:
        return None
    if len(kept) == 1:
        return [Expr(OpType.set, (kept[0],), expr.outputs)]
    return [Expr(OpType.cat, tuple(kept), expr.outputs, expr.attrs)]


def _full(tensor: TensorView, fill: Scalar | float | int, runtime: RuntimeInfo) -> Expr:
    """``full(shape of tensor, fill)`` with the tensor's dtype, as a new tensor."""
    sizes = [runtime.extent(d.logical_extent) for d in tensor.logical]
    shape = Vector(tuple(FusionBuilder.constant(int(s or 0), dt.DataType.Int) for s in sizes))
    if not isinstance(fill, Scalar):
        fill = FusionBuilder.constant(_typed(fill, tensor.dtype), tensor.dtype)
    out = TensorView(dtype=tensor.dtype, domain=copy_domain(tensor.logical))
    return Expr(OpType.full, (shape, fill), (out,), {"dtype": tensor.dtype})


def _typed(value: float, dtype: dt.DataType) -> bool | int | float:
    if dtype is dt.DataType.Bool:
        return bool(value)
    if dt.is_integral(dtype):
        if math.isinf(value):  # an integer max or min starts at the type's limit
            bits = dt.info(dtype).bits
            return -(1 << (bits - 1)) if value < 0 else (1 << (bits - 1)) - 1
        return int(value)
    return float(value)


def _is_empty(tensor: TensorView, runtime: RuntimeInfo) -> bool:
    return any(runtime.extent(d.logical_extent) == 0 for d in tensor.logical)


def _is_fill(exprs: list[Expr], tensor: TensorView) -> bool:
    return any(e.op is OpType.full and e.output.uid == tensor.uid for e in exprs)


def with_replacements(expr: Expr, replaced: dict[int, Val]) -> Expr:
    """``expr`` reading ``replaced[uid]`` in place of each input with that uid (itself if it
    reads none): how a pre-segmentation pass reroutes the readers of what it rewrote."""
    if not any(v.uid in replaced for v in expr.inputs):
        return expr
    inputs = tuple(replaced.get(v.uid, v) for v in expr.inputs)
    return Expr(expr.op, inputs, expr.outputs, expr.attrs)
