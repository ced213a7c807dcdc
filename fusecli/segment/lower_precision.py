"""Which segment edges nvFuser once sent through half precision (nvfuser-2023 profile).

Until PR #1889 (March 2024) the segmenter ran ``castInputOutputToLowerPrecision``
(csrc/fusion_segmenter.cpp) by default. ``ForceHalfAnnotation`` marks every Float tensor that is
neither a fusion input nor a fusion output and that some Half or BFloat16 fusion output depends
on. Whenever such a tensor is a segment edge (for every candidate the segmenter asks about, the
forwarded inputs of ``forwardInputs`` included), the producing segment casts it to half and the
consuming segment casts it back before its uses. Uses by SelectOp, IndexSelectOp and
TorchGatherOp were exempt, since those ops must read a segment input; slices and pads were not
(PR #1936 added SliceOp after the default was off), so in the consuming segment a slice or pad
of such an edge reads the cast, not a segment input. Issue #1872 is that failure.
"""

from __future__ import annotations

from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Fusion, TensorView, Val, Vector

_HALF_TYPES = frozenset({DataType.Half, DataType.BFloat16})


def half_precision_edges(fusion: Fusion) -> frozenset[int]:
    """The uids of the tensors ForceHalfAnnotation marks: Float intermediates (neither fusion
    inputs nor fusion outputs) that a Half or BFloat16 fusion output depends on."""
    producers = {out.uid: expr for expr in fusion.exprs for out in expr.outputs}
    inputs = {v.uid for v in fusion.inputs}
    outputs = {o.value.uid for o in fusion.outputs}
    stack: list[Val] = [
        o.value for o in fusion.outputs
        if isinstance(o.value, TensorView) and o.value.dtype in _HALF_TYPES
    ]
    seen: set[int] = set()
    marked: set[int] = set()
    while stack:
        value = stack.pop()
        if value.uid in seen:
            continue
        seen.add(value.uid)
        if isinstance(value, TensorView) and value.dtype is DataType.Float and \
                value.uid not in inputs and value.uid not in outputs:
            marked.add(value.uid)
        producer = producers.get(value.uid)
        if producer is not None:
            for operand in producer.inputs:
                stack.extend(operand.elements if isinstance(operand, Vector) else (operand,))
    return frozenset(marked)
