"""Checks nvFuser makes when it concretizes a fusion for its inputs: sizes only the inputs tell.

A definition with symbolic sizes (``-1``, or a reshape to sizes taken from scalars) cannot be
checked when it is written; nvFuser checks it when ``fd.execute`` binds the inputs, and so does
fusecli, before any evaluation: a reshape must keep the element count, a squeezed dimension
must have size 1, a pad must not make a size negative, an output aliased to an input must have
its shape. A violation is the user's (exit 2), named by op and expr position.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from fusecli.errors import InputError
from fusecli.ir.nodes import Fusion, Scalar, TensorView, evaluate_extent
from fusecli.ir.optype import OpType


def check_concrete_sizes(
    fusion: Fusion, values: Mapping[int, object], extents: Mapping[object, int]
) -> None:
    """Raise InputError where the bound sizes break the definition (module docstring)."""
    known: dict[object, int] = dict(extents)
    for value in fusion.inputs:
        if isinstance(value, Scalar) and isinstance(values.get(value.uid), int):
            known[value] = int(values[value.uid])

    def size(extent: object) -> int | None:
        try:
            return evaluate_extent(extent, known)
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            return None  # from a computed scalar: the evaluation itself will tell

    def sizes(tensor: TensorView) -> list[int | None]:
        return [size(extent) for extent in tensor.shape]

    for position, expr in enumerate(fusion.exprs):
        where = f"{expr.op.value} (expr {position})"
        if expr.op is OpType.reshape:
            before, after = sizes(expr.inputs[0]), sizes(expr.outputs[0])
            if None not in before and None not in after and math.prod(before) != math.prod(after):
                raise InputError(
                    f"{where}: the inputs make a tensor of {math.prod(before)} elements {before}, "
                    f"which cannot be reshaped into {after} ({math.prod(after)} elements)"
                )
        elif expr.op is OpType.squeeze:
            source = expr.inputs[0]
            for axis in expr.attr("dims"):
                extent = size(source.logical[axis].logical_extent)
                if extent is not None and extent != 1 and not source.logical[axis].is_broadcast:
                    raise InputError(
                        f"{where}: dimension {axis} is squeezed but has size {extent} for these "
                        "inputs (a squeezed dimension must have size 1)"
                    )
        elif expr.op is OpType.pad:
            for axis, extent in enumerate(sizes(expr.outputs[0])):
                if extent is not None and extent < 0:
                    raise InputError(
                        f"{where}: negative padding makes dimension {axis} of size {extent} "
                        "for these inputs"
                    )
    for index, output in enumerate(fusion.outputs):
        if output.alias_input is None or not isinstance(output.value, TensorView):
            continue
        have, want = sizes(output.value), sizes(output.alias_input)
        if None not in have and None not in want and have != want:
            position = fusion.inputs.index(output.alias_input)
            raise InputError(
                f"add_output (output {index}): aliased to input {position} of shape {want}, "
                f"but of shape {have} for these inputs"
            )
