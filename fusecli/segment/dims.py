"""Which dimensions are the same loop: a union-find over (tensor, dimension) pairs.

nvFuser answers "does this output dimension map to that input dimension?" with its
IterDomain graph. fusecli answers it per candidate segment: every expr says which of its
output dimensions come from which input dimensions (``dim_map``), and the classes of the
union-find are the loops a kernel would run. A reshape starts new classes (it splits and
merges), as do matmul and attention (their own loops).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

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


DimPairs = Iterator[tuple[DimKey, DimKey]]
DimMapper = Callable[[Expr, TensorView, list[TensorView]], DimPairs]


def _elementwise_map(expr: Expr, out: TensorView, tensors_in: list[TensorView]) -> DimPairs:
    for source in tensors_in:
        for o, i in _aligned(out, source):
            yield (out.uid, o), (source.uid, i)


def _reduction_map(expr: Expr, out: TensorView, tensors_in: list[TensorView]) -> DimPairs:
    source_dims = _logical_positions(tensors_in[0])
    for position in range(len(out.domain)):
        yield (out.uid, position), (tensors_in[0].uid, source_dims[position])


def _broadcast_map(expr: Expr, out: TensorView, tensors_in: list[TensorView]) -> DimPairs:
    source_dims = iter(_logical_positions(tensors_in[0]))
    for position, is_new in enumerate(expr.attr("is_broadcast_dim")):
        if not is_new:
            yield (out.uid, position), (tensors_in[0].uid, next(source_dims))


def _permute_map(expr: Expr, out: TensorView, tensors_in: list[TensorView]) -> DimPairs:
    source_dims = _logical_positions(tensors_in[0])
    for position, source in enumerate(expr.attr("dims")):
        yield (out.uid, position), (tensors_in[0].uid, source_dims[source])


def _squeeze_map(expr: Expr, out: TensorView, tensors_in: list[TensorView]) -> DimPairs:
    squeezed = set(expr.attr("dims"))
    kept = [p for i, p in enumerate(_logical_positions(tensors_in[0])) if i not in squeezed]
    for position, source in enumerate(kept):
        yield (out.uid, position), (tensors_in[0].uid, source)


def _index_map(expr: Expr, out: TensorView, tensors_in: list[TensorView]) -> DimPairs:
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


# How each kind of op maps its output dims to its input dims. Elementwise-like kinds align
# dims from the right (numpy broadcasting); resizes keep each dim's loop (a pad or slice changes
# its extent, not its identity).
DIM_MAPS: dict[OpKind, DimMapper] = {
    **dict.fromkeys(
        (OpKind.UNARY, OpKind.BINARY, OpKind.TERNARY, OpKind.CAST, OpKind.SET, OpKind.EXPAND,
         OpKind.SCAN, OpKind.SORT, OpKind.TRIANGULAR, OpKind.RANDOM, OpKind.RESIZE),
        _elementwise_map,
    ),
    OpKind.REDUCTION: _reduction_map,
    OpKind.NORMALIZATION: _reduction_map,
    OpKind.BROADCAST: _broadcast_map,
    OpKind.PERMUTE: _permute_map,
    OpKind.SQUEEZE: _squeeze_map,
    OpKind.INDEX: _index_map,
}

# Kinds whose outputs start loops of their own: a reshape splits and merges, matmul and
# attention run their own loops, creation ops have no tensor inputs, scalars no dims.
NEW_LOOPS = frozenset(
    {OpKind.RESHAPE, OpKind.MATMUL, OpKind.ATTENTION, OpKind.CREATE, OpKind.SCALAR}
)


def dim_map(expr: Expr) -> DimPairs:
    """Pairs (output dim, input dim) that are the same loop for ``expr``."""
    mapper = DIM_MAPS.get(expr.op.kind)
    if mapper is None:
        return
    tensors_in = expr.tensor_inputs()
    for out in expr.tensor_outputs():
        yield from mapper(expr, out, tensors_in)


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
