"""How many values each output element's rounding errors accumulate over, and the tolerances
``fd.validate`` grants for it as nvFuser's does.

Two counts, walking the fusion from its inputs:

- fusecli's (``compound=False``): the largest reduction feeding the output (a sum of 4096
  values, a matmul over K); the growth of ``tolerance_for`` applies to it;
- nvFuser's (``compound=True``, ``ReductionSizeMapper`` in ``csrc/validator_utils.cpp``): each
  tensor's own reduced extent times the largest count among its producers, so a linear of an
  RMSNorm over 4096 features with K = 4096 counts 4096 * 4096.

``validation_tolerance`` is the looser of fusecli's tolerance and nvFuser's ``getTolerance``
(same file; the tables are ``ValidationConstants`` in ``csrc/validator_utils.h``, measured by
nvFuser on a randn sum against float64): ``fd.validate`` must not reject what nvFuser's accepts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from fusecli.compare.tolerance import Tolerance, dtype_name, tolerance_for

# (reduction size, largest error measured), nvFuser's ValidationConstants
SUM_TOLERANCES_FLOAT = (
    (4, 1.68222e-06), (8, 2.23704e-06), (16, 2.95788e-06), (32, 4.4778e-06),
    (64, 6.75395e-06), (128, 8.57934e-06), (256, 1.30594e-05), (512, 2.19122e-05),
    (1024, 3.3451e-05), (2048, 5.78476e-05), (4096, 0.000108292), (8192, 0.00012207),
    (16384, 0.000136882), (32768, 0.000248561), (65536, 0.000407594), (131072, 0.000500901),
    (262144, 0.000923019), (524288, 0.00156909), (1048576, 0.00223107), (2097152, 0.00343043),
)
SUM_TOLERANCES_HALF = (
    (4, 0.00390625), (8, 0.0078125), (16, 0.0078125), (32, 0.0155334), (64, 0.0156269),
    (128, 0.0312042), (256, 0.0312548), (512, 0.0619979), (1024, 0.0625103),
    (2048, 0.124686), (4096, 0.12501), (8192, 0.24945), (16384, 0.250049),
    (32768, 0.498946), (65536, 0.500071), (131072, 0.985087), (262144, 1.00006),
    (524288, 1.99234), (1048576, 2.00032), (2097152, 3.99073),
)
_FLOAT_TABLE = {torch.float32, torch.float64, torch.complex64, torch.complex128}
_HALF_TABLE = {torch.float16}  # bfloat16 and the 8- and 4-bit floats: the half table, x10


def reduction_sizes(
    fusion: Any, inputs: Sequence[Any], *, compound: bool = False
) -> dict[int, int]:
    """Per visible output (by position), the number of values its elements reduce: the largest
    reduction feeding it, or with ``compound`` nvFuser's product along the way (see above).
    Computed from the input shapes; an extent that cannot be bound counts as the largest input."""
    from fusecli.ir.nodes import SymbolicExtent, TensorView, evaluate_extent
    from fusecli.ir.optype import OpKind

    bindings: dict[object, int] = {}
    for value, tensor in zip(fusion.inputs, inputs):
        if isinstance(value, TensorView) and hasattr(tensor, "shape"):
            for domain, size in zip(value.logical, tensor.shape):
                for extent in (domain.extent, domain.expanded):
                    if isinstance(extent, SymbolicExtent):
                        bindings[extent] = int(size)
    largest_input = max((math.prod(t.shape) for t in inputs if hasattr(t, "shape")), default=1)

    def size_of(extent: object) -> int:
        try:
            return evaluate_extent(extent, bindings)
        except (KeyError, TypeError):
            return largest_input

    reducing = (OpKind.REDUCTION, OpKind.NORMALIZATION, OpKind.SCAN, OpKind.MATMUL,
                OpKind.ATTENTION)
    reduced: dict[int, int] = {}
    for expr in fusion.exprs:
        incoming = max(
            (reduced.get(v.uid, 1) for v in expr.inputs if isinstance(v, TensorView)), default=1
        )
        local = 1
        if expr.op.kind in reducing:
            for out in expr.tensor_outputs():
                local = max(local, math.prod(size_of(d.extent) for d in out.domain
                                             if d.is_reduction) or 1)
            if expr.op.kind in (OpKind.SCAN, OpKind.ATTENTION):
                local = max(local, largest_input)
        for out in expr.outputs:
            reduced[out.uid] = incoming * local if compound else max(incoming, local)
    visible = [o for o in fusion.outputs if o.alias_input is None]
    return {index: reduced.get(o.value.uid, 1) for index, o in enumerate(visible)}


def nvfuser_tolerance(dtype: torch.dtype, reduction_size: int) -> Tolerance:
    """nvFuser's ``getTolerance`` for an output of ``dtype`` reducing ``reduction_size`` values
    (exact for integers and bool)."""
    if not (dtype.is_floating_point or dtype.is_complex):
        return Tolerance(0.0, 0.0, f"{dtype_name(dtype)}: exact")
    if dtype in _FLOAT_TABLE:
        table, scale = SUM_TOLERANCES_FLOAT, 1.0
    elif dtype in _HALF_TABLE:
        table, scale = SUM_TOLERANCES_HALF, 1.0
    else:
        table, scale = SUM_TOLERANCES_HALF, 10.0
    if reduction_size <= 1:  # nvFuser's base tolerances are unset: its first two entries
        return Tolerance(table[1][1], table[0][1],
                         f"{dtype_name(dtype)}: nvFuser's elementwise validation tolerance")
    entry = next((i for i, (size, _) in enumerate(table) if size >= reduction_size), len(table))
    atol = table[entry + 1][1] if entry + 1 < len(table) else table[-1][1] * 2.0
    return Tolerance(atol * 0.01 * scale, atol * scale,
                     f"{dtype_name(dtype)}: nvFuser's validation tolerance for a reduction of "
                     f"{reduction_size} values")


def validation_tolerance(dtype: torch.dtype, own_size: int, nvfuser_size: int) -> Tolerance:
    """The looser of fusecli's tolerance (``tolerance_for`` at ``own_size``) and nvFuser's
    (``nvfuser_tolerance`` at ``nvfuser_size``): what ``fd.validate`` accepts."""
    own = tolerance_for(dtype, own_size)
    theirs = nvfuser_tolerance(dtype, nvfuser_size)
    if theirs.atol <= own.atol and theirs.rtol <= own.rtol:
        return own
    return Tolerance(max(own.rtol, theirs.rtol), max(own.atol, theirs.atol),
                     f"{own.source}; widened to {theirs.source}")
