"""Which dimensions are the same loop: a union-find over (tensor, dimension) pairs.

nvFuser answers "does this output dimension map to that input dimension?" with its
IterDomain graph. fusecli answers it per candidate segment: every expr says which of its
output dimensions come from which input dimensions (``dim_map``), and the classes of the
union-find are the loops a kernel would run. A reshape starts new classes (it splits and
merges), as do matmul and attention (their own loops).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import OpKind, OpType

DimKey = tuple[int, int]  # (tensor uid, position in its domain, reduction domains included)


def _logical_positions(tensor: TensorView) -> list[int]:
    """Domain positions of the logical (non-reduction) dimensions."""
    return [i for i, d in enumerate(tensor.domain) if not d.is_reduction]


def _aligned(out: TensorView, source: TensorView) -> Iterator[tuple[int, int]]:
    """Right-aligned logical dims (numpy broadcasting), as domain positions."""
    out_dims, in_dims = _logical_positions(out), _logical_positions(source)
    offset = len(out_dims) - len(in_dims)
    for index, position in enumerate(in_dims):
        if index + offset >= 0:
            yield out_dims[index + offset], position


def dim_map(expr: Expr) -> Iterator[tuple[DimKey, DimKey]]:
    """Pairs (output dim, input dim) that are the same loop for ``expr``."""
    kind = expr.op.kind
    tensors_in = expr.tensor_inputs()
    for out in expr.tensor_outputs():
        if kind in (OpKind.UNARY, OpKind.BINARY, OpKind.TERNARY, OpKind.CAST, OpKind.SET,
                    OpKind.EXPAND, OpKind.SCAN, OpKind.SORT, OpKind.TRIANGULAR,
                    OpKind.RANDOM):
            for source in tensors_in:
                for o, i in _aligned(out, source):
                    yield (out.uid, o), (source.uid, i)
        elif kind in (OpKind.REDUCTION, OpKind.NORMALIZATION):
            for position in range(len(out.domain)):
                yield (out.uid, position), (tensors_in[0].uid, _logical_positions(
                    tensors_in[0])[position])
        elif kind is OpKind.BROADCAST:
            flags = expr.attr("is_broadcast_dim")
            source_dims = iter(_logical_positions(tensors_in[0]))
            for position, is_new in enumerate(flags):
                if not is_new:
                    yield (out.uid, position), (tensors_in[0].uid, next(source_dims))
        elif kind is OpKind.PERMUTE:
            source_dims = _logical_positions(tensors_in[0])
            for position, source in enumerate(expr.attr("dims")):
                yield (out.uid, position), (tensors_in[0].uid, source_dims[source])
        elif kind is OpKind.SQUEEZE:
            squeezed = set(expr.attr("dims"))
            kept = [p for i, p in enumerate(_logical_positions(tensors_in[0])) if i not in squeezed]
            for position, source in enumerate(kept):
                yield (out.uid, position), (tensors_in[0].uid, source)
        elif kind is OpKind.RESIZE:
            for source in tensors_in:
                for o, i in _aligned(out, source):
                    yield (out.uid, o), (source.uid, i)
        elif kind is OpKind.INDEX:
            yield from _index_map(expr, out, tensors_in)


def _index_map(expr: Expr, out: TensorView, tensors_in: list[TensorView]):
    dim = expr.attr("dim")
    arg = tensors_in[0]
    if expr.op is OpType.index_select:
        for position in range(out.ndim):
            if position != dim:
                yield (out.uid, position), (arg.uid, position)
        yield (out.uid, dim), (tensors_in[1].uid, 0)
    elif expr.op in (OpType.gather, OpType.take_along_axis):
        index = tensors_in[1]
        for position in range(out.ndim):
            yield (out.uid, position), (index.uid, position)
            if position != dim and expr.op is OpType.take_along_axis:
                yield (out.uid, position), (arg.uid, position)
    elif expr.op is OpType.select:
        kept = [p for p in range(arg.ndim) if p != dim]
        for position, source in enumerate(kept):
            yield (out.uid, position), (arg.uid, source)


class DimGraph:
    """Union-find over the dimensions of the tensors of some exprs."""

    def __init__(self, exprs: Iterable[Expr]) -> None:
        self._parent: dict[DimKey, DimKey] = {}
        for expr in exprs:
            for a, b in dim_map(expr):
                self.union(a, b)

    def find(self, key: DimKey) -> DimKey:
        parent = self._parent.setdefault(key, key)
        if parent != key:
            root = self.find(parent)
            self._parent[key] = root
            return root
        return key

    def union(self, a: DimKey, b: DimKey) -> None:
        root_a, root_b = self.find(a), self.find(b)
        if root_a != root_b:
            self._parent[root_a] = root_b

    def same(self, a: DimKey, b: DimKey) -> bool:
        return self.find(a) == self.find(b)

    def class_of(self, tensor: TensorView, position: int) -> DimKey:
        return self.find((tensor.uid, position))


def innermost_position(tensor: TensorView, stride_order: tuple[int, ...] = ()) -> int | None:
    """Domain position of the innermost non-broadcast dimension in memory, or None.

    With a stride order (stride_order[i] = rank of logical dim i by stride, 0 innermost) the
    innermost dimension is the one with order 0 (skipping broadcasts); without, the last one.
    """
    logical = _logical_positions(tensor)
    if stride_order and len(stride_order) == len(logical):
        ranked = sorted(range(len(logical)), key=lambda i: stride_order[i])
    else:
        ranked = list(reversed(range(len(logical))))
    for index in ranked:
        if not tensor.domain[logical[index]].is_broadcast:
            return logical[index]
    return None
