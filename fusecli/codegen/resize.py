"""slice, pad and cat as index arithmetic: an offset, and branches on which input holds a point.

A pad reads its input only where the point lies inside it and takes the pad value elsewhere; a
cat reads the one input whose range along the cat dimension holds the point. Range analysis
drops the tests it can prove, so a cat whose points all come from one input reads it directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.codegen import cdtypes
from fusecli.codegen.indexing import Index, add, const
from fusecli.codegen.kernel import UnsupportedError
from fusecli.ir.nodes import Expr, Scalar, TensorView
from fusecli.ir.ops_resize import clamp_index
from fusecli.ir.optype import OpType

if TYPE_CHECKING:
    from fusecli.codegen.emitter import Emitter, Handler


def _slice(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    bounds = expr.attr("static_bounds")
    if bounds is not None:
        starts = [start for start, _ in bounds]
    else:  # constant starts into a size the inputs give: wrapped and clamped as torch slices
        sizes = emitter.ctx.shape(expr.inputs[0])
        given = [emitter.ctx.integer_of(s) for s in expr.inputs[1 : 1 + len(sizes)]]
        if any(start is None for start in given) or expr.attr("manual_normalization"):
            raise UnsupportedError("slice bounds known only at run time have no CUDA generator")
        starts = [clamp_index(int(s), size) for s, size in zip(given, sizes)]
    source = tuple(add(i, const(start)) for i, start in zip(index, starts))
    return emitter.value(expr.inputs[0], source)


def _constant_int(emitter: Emitter, value: Scalar) -> int:
    found = emitter.ctx.integer_of(value)
    if found is None:
        raise UnsupportedError("pad widths known only at run time have no CUDA generator")
    return int(found)


def _pad(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    source, pad_value, *widths = expr.inputs
    rank = len(index)
    lefts = [0] * rank
    for pair in range(len(widths) // 2):
        lefts[rank - 1 - pair] = _constant_int(emitter, widths[2 * pair])
    source_index = tuple(add(i, const(-left)) for i, left in zip(index, lefts))
    tests = []
    for position, size in zip(source_index, emitter.ctx.shape(source)):
        low, high = emitter.space.bounds(position)
        if low < 0:
            tests.append(f"{emitter.text(position)} >= 0")
        if high >= size:
            tests.append(f"{emitter.text(position)} < {size}")
    if not tests:
        return emitter.value(source, source_index)
    fill = emitter.scalar(pad_value, out.dtype)
    name = emitter.fresh(emitter.ctx.name(out).lower())
    emitter.line(f"{cdtypes.register_type(out.dtype)} {name} = {fill};  // pad")
    with emitter.block(f"if ({' && '.join(tests)})"):
        emitter.line(f"{name} = {emitter.value(source, source_index)};")
    return name


def _cat(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    dim = expr.attr("dim")
    low, high = emitter.space.bounds(index[dim])
    pieces: list[tuple[TensorView, int, int]] = []  # (input, first position, end)
    start = 0
    for source in expr.inputs:
        end = start + emitter.ctx.shape(source)[dim]
        if start <= high and end > low:
            pieces.append((source, start, end))
        start = end
    if len(pieces) == 1:
        source, first, _ = pieces[0]
        return emitter.value(source, _shifted(index, dim, first))
    name = emitter.fresh(emitter.ctx.name(out).lower())
    emitter.line(f"{cdtypes.register_type(out.dtype)} {name};  // cat")
    position = emitter.text(index[dim])
    for number, (source, first, end) in enumerate(pieces):
        last = number == len(pieces) - 1
        header = "else" if last else f"{'else ' if number else ''}if ({position} < {end})"
        with emitter.block(header):
            emitter.line(f"{name} = {emitter.value(source, _shifted(index, dim, first))};")
    return name


def _shifted(index: tuple[Index, ...], dim: int, first: int) -> tuple[Index, ...]:
    return tuple(add(i, const(-first)) if d == dim else i for d, i in enumerate(index))


HANDLERS: dict[OpType, Handler] = {
    OpType.slice: _slice,
    OpType.pad: _pad,
    OpType.cat: _cat,
}
