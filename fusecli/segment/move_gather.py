"""nvFuser's MoveGatherPass (csrc/preseg_passes/move_gather.cpp, #4399, June 2025).

A take_along_axis whose lookup tensor is made by a unary pointwise op (a cast, a neg) moves
ahead of that op: it gathers from the op's input and the op runs on the gathered values. The
gather then reads what the op read (often a segment input), so the memory-promotion rule no
longer cuts the op into a segment of its own, and the op runs on the few gathered elements.
As nvFuser's pass, it applies to a fusion with exactly one gather-like op, a take_along_axis,
and repeats while the lookup's producer is unary. (nvFuser also moves the gather ahead of a
squeeze of one dimension; that case is not modelled.)
"""

from __future__ import annotations

from fusecli.ir.builder import copy_domain
from fusecli.ir.nodes import Expr, Fusion, TensorView
from fusecli.ir.optype import OpKind, OpType

GATHERS = (OpType.gather, OpType.take_along_axis)


def move_gather(fusion: Fusion) -> Fusion:
    gathers = [e for e in fusion.exprs if e.op in GATHERS]
    if len(gathers) != 1 or gathers[0].op is not OpType.take_along_axis:
        return fusion
    exprs = list(fusion.exprs)
    gather = gathers[0]
    inputs = {v.uid for v in fusion.inputs}
    while True:
        lookup, index = gather.inputs[0], gather.inputs[1]
        producer = _producer(exprs, lookup)
        if lookup.uid in inputs or producer is None:
            break
        if producer.op.kind not in (OpKind.UNARY, OpKind.CAST) or len(producer.inputs) != 1:
            break
        source = producer.inputs[0]
        gathered = TensorView(dtype=source.dtype, domain=copy_domain(gather.output.logical))
        moved = Expr(OpType.take_along_axis, (source, index, *gather.inputs[2:]),
                     (gathered,), gather.attrs)
        after = Expr(producer.op, (gathered,), gather.outputs, producer.attrs)
        position = exprs.index(gather)
        exprs[position:position + 1] = [moved, after]
        gather = moved
    if gather is gathers[0]:
        return fusion
    return Fusion(inputs=fusion.inputs, outputs=fusion.outputs, exprs=tuple(exprs))


def _producer(exprs: list[Expr], value: TensorView) -> Expr | None:
    return next((e for e in exprs if any(o.uid == value.uid for o in e.outputs)), None)
