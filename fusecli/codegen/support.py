"""Which ops the CUDA generators render, and why the others are not.

The CUDA backend's op table is ``render.C_OPS`` for elementwise ops and the emitter's
``HANDLERS`` (by kind, with per-op tables for resize and indexing ops) for the rest.
``UNSUPPORTED`` names each op no generator renders, with the reason the CuPy executor gives
when it hands such a segment to ATen. ``tests/test_op_tables.py`` checks that every op is
rendered or listed here, never both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from fusecli.ir.nodes import Expr
from fusecli.ir.optype import OpKind, OpType

_EXPR_EVAL = "runs through ATen, as nvFuser's expr_eval does"
_HOST = "a scalar read off a tensor, evaluated on the host"

UNSUPPORTED: Mapping[OpType, str] = MappingProxyType({
    OpType.real: "complex dtypes have no CUDA arithmetic here",
    OpType.imag: "complex dtypes have no CUDA arithmetic here",
    OpType.cumsum: "a scan has no CUDA generator",
    OpType.cumprod: "a scan has no CUDA generator",
    OpType.cummin: "a scan has no CUDA generator",
    OpType.cummax: "a scan has no CUDA generator",
    OpType.argsort: "a sort has no CUDA generator",
    OpType.topk: "a sort has no CUDA generator",
    OpType.scatter: "a scatter has no CUDA generator",
    OpType.index_put_accumulate: _EXPR_EVAL,
    OpType.triu: "triu has no CUDA generator",
    OpType.matmul: _EXPR_EVAL,
    OpType.linear: _EXPR_EVAL,
    OpType.mma: _EXPR_EVAL,
    OpType.grouped_mm: _EXPR_EVAL,
    OpType.sdpfa_fwd: _EXPR_EVAL,
    OpType.sdpfa_bwd: _EXPR_EVAL,
    OpType.size: _HOST,
    OpType.shape: _HOST,
    OpType.at: _HOST,
})


def renders(op: OpType) -> bool:
    """Whether a CUDA generator has an entry for ``op``."""
    from fusecli.codegen import emitter, gather, render, resize

    if op.definition.is_elementwise:
        return op in render.C_OPS
    per_op = {OpKind.RESIZE: resize.HANDLERS, OpKind.INDEX: gather.HANDLERS}.get(op.kind)
    if per_op is not None:
        return op in per_op
    return op.kind in emitter.HANDLERS


def why_not(exprs: Iterable[Expr]) -> str | None:
    """The reason no kernel renders these exprs, from the first op in ``UNSUPPORTED``."""
    for expr in exprs:
        reason = UNSUPPORTED.get(expr.op)
        if reason is not None:
            return f"{expr.op.value}: {reason}"
    return None
