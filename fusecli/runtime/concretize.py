"""Checks nvFuser makes when it concretizes a fusion for its inputs: sizes only the inputs tell.

A definition with symbolic sizes (``-1``, or a reshape to sizes taken from scalars) cannot be
checked when it is written; nvFuser checks it when ``fd.execute`` binds the inputs, and so does
fusecli, before any evaluation: a reshape must keep the element count, a squeezed dimension
must have size 1, no size may come out negative (a pad, a slice, a topk's k), the operands of an
elementwise op or a cat must agree on the sizes they share, an output aliased to an input must
have its shape. A violation is the user's (exit 2), named by op and expr position, in nvFuser's
words where nvFuser reports the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, MutableMapping

from fusecli.errors import InputError
from fusecli.ir.nodes import Fusion, Scalar, TensorView, evaluate_extent
from fusecli.ir.opdefs import ELEMENTWISE_KINDS
from fusecli.ir.ops_resize import slice_lengths
from fusecli.ir.optype import OpType

_CONFLICT = (
    "When trying to propagate constant tensor sizes through the graph a conflict was found with "
    "2 different sizes across dimensions that are expected to match"
)


def bind_slice_lengths(fusion: Fusion, extents: MutableMapping[object, int],
                       values: Mapping[int, object]) -> None:
    """The length of each slice whose input's size is bound and whose bounds are constants,
    scalar inputs or sizes of tensors (``ir.ops_resize.slice_lengths``): kernels need it
    before the slice runs."""

    def size_of(extent: object) -> int | None:
        try:
            return evaluate_extent(extent, extents)
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            return None

    sizes = {expr.outputs[0].uid: expr for expr in fusion.exprs if expr.op is OpType.size}

    def scalar_of(scalar: Scalar) -> int | None:
        value = values.get(scalar.uid)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        expr = sizes.get(scalar.uid)
        return None if expr is None else size_of(
            expr.inputs[0].logical[expr.attr("dim")].logical_extent)

    for expr in fusion.exprs:
        for extent, length in slice_lengths(expr, size_of, scalar_of):
            extents.setdefault(extent, length)


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
        if expr.op is OpType.size:  # a size read off a tensor: later extents may use it
            extent = size(expr.inputs[0].logical[expr.attr("dim")].logical_extent)
            if extent is not None:
                known[expr.outputs[0]] = extent
            continue
        if expr.op.kind in ELEMENTWISE_KINDS or expr.op is OpType.cat:
            _check_shared_sizes(expr, where, sizes)
        for tensor in expr.outputs:
            if not isinstance(tensor, TensorView):
                continue
            for axis, extent in enumerate(sizes(tensor)):
                if extent is not None and extent < 0:
                    raise InputError(
                        f"{where}: Invalid resized domain extent {extent} for dimension {axis} "
                        "of its output with these inputs"
                        + (" (negative padding)" if expr.op is OpType.pad else "")
                    )
        if expr.op is OpType.reshape:
            before, after = sizes(expr.inputs[0]), sizes(expr.outputs[0])
            if None not in before and None not in after and math.prod(before) != math.prod(after):
                raise InputError(
                    f"{where}: Total element counts across view operation must match: "
                    f"{math.prod(before)} vs {math.prod(after)} (the inputs make a tensor of "
                    f"shape {before}, to be reshaped into {after})"
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


def _check_shared_sizes(expr, where: str, sizes) -> None:
    """The tensor operands of an elementwise op (all of its dims) or a cat (all but the cat
    dim) must have equal sizes where neither is a broadcast. A dimension defined symbolic
    (``-1``) is an iteration dimension even when an input gives it size 1: it does not
    broadcast (define it as ``1``, or with ``from_pytorch``, to broadcast), as in nvFuser."""
    tensors = [t for t in expr.inputs if isinstance(t, TensorView)]
    skip = expr.attr("dim") if expr.op is OpType.cat else None
    rank = max((t.ndim for t in tensors), default=0)
    first: dict[int, tuple[int, int]] = {}  # output axis -> (size, operand)
    for operand, tensor in enumerate(tensors):
        offset = rank - tensor.ndim  # operands of lower rank align to the right, as in torch
        for axis, (domain, extent) in enumerate(zip(tensor.logical, sizes(tensor)), offset):
            if axis == skip or extent is None or domain.is_broadcast:
                continue
            seen = first.setdefault(axis, (extent, operand))
            if seen[0] != extent:
                raise InputError(
                    f"{where}: {_CONFLICT}: dimension {axis} has size {seen[0]} in operand "
                    f"{seen[1]} and {extent} in operand {operand} for these inputs"
                )
