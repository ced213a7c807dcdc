"""Indexing ops: the input is read at a position loaded from an index tensor (or a scalar).

The loaded index becomes a term of the input's index with the range ``[0, size)``, which is
what torch requires of it; the input is then read like any other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.codegen import cdtypes
from fusecli.codegen.indexing import Index
from fusecli.codegen.kernel import UnsupportedError
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import OpType

if TYPE_CHECKING:
    from fusecli.codegen.emitter import Emitter, Handler


def _position(emitter: Emitter, value: str, dtype: DataType, size: int) -> Index:
    name = emitter.named(value, cdtypes.register_type(dtype), "position")
    return emitter.space.var(name, 0, size - 1)


def _index_select(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    source, positions = expr.inputs
    dim = expr.attr("dim")
    # A 0-dim index (nvFuser and torch take it as one position) is read without an index.
    loaded = emitter.value(positions, (index[dim],) if positions.ndim else ())
    source_index = list(index)
    source_index[dim] = _position(emitter, loaded, positions.dtype, emitter.ctx.shape(source)[dim])
    return emitter.value(source, tuple(source_index))


def _select(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    source, position = expr.inputs
    dim = expr.attr("dim")
    size = emitter.ctx.shape(source)[dim]
    scalar = emitter.scalar(position)
    wrapped = f"({scalar} < 0 ? {scalar} + {size} : {scalar})"
    source_index = list(index)
    source_index.insert(dim, _position(emitter, wrapped, position.dtype, size))
    return emitter.value(source, tuple(source_index))


def _gather(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    """gather and take_along_axis: the index tensor, read at the point, picks along ``dim``."""
    source, positions = expr.inputs
    dim = expr.attr("dim")
    loaded = emitter.value(positions, index)
    source_index = list(index)
    source_index[dim] = _position(emitter, loaded, positions.dtype, emitter.ctx.shape(source)[dim])
    return emitter.value(source, tuple(source_index))


def _embedding(emitter: Emitter, expr: Expr, out: TensorView, index: tuple[Index, ...]) -> str:
    if expr.attr("options"):
        raise UnsupportedError("embedding_fwd with padding_idx or max_norm has no CUDA generator")
    positions, weight = expr.inputs[:2]
    loaded = emitter.value(positions, index[:-1])
    row = _position(emitter, loaded, positions.dtype, emitter.ctx.shape(weight)[0])
    return emitter.value(weight, (row, index[-1]))


HANDLERS: dict[OpType, Handler] = {
    OpType.index_select: _index_select,
    OpType.select: _select,
    OpType.gather: _gather,
    OpType.take_along_axis: _gather,
    OpType.embedding_fwd: _embedding,
}
