"""Which dimensions are the same loop: a union-find over (tensor, dimension) pairs.

nvFuser answers "does this output dimension map to that input dimension?" with its
IterDomain graph. fusecli answers it per candidate segment: every expr says which of its
output dimensions come from which input dimensions (``dim_map``), and the classes of the
union-find are the loops a kernel would run. A reshape keeps the dimensions it passes through
and starts new classes for those it splits and merges; matmul and attention start their own.
"""

from __future__ import annotations

import itertools
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


def _reshape_map(expr: Expr, sizes: Callable[[object], object] | None) -> DimPairs:
    """A reshape splits and merges only some dimensions: the leading and trailing ones it
    passes through unchanged (equal sizes from either end; ``sizes`` gives an extent's size
    where the inputs tell it) keep their loops, as nvFuser's reshape keeps those IterDomains;
    the rest start loops of their own."""
    source, out = expr.tensor_inputs()[0], expr.tensor_outputs()[0]
    size = sizes or (lambda extent: extent)
    in_dims, out_dims = _logical_positions(source), _logical_positions(out)

    def same(i: int, o: int) -> bool:
        return size(source.domain[i].logical_extent) == size(out.domain[o].logical_extent)

    kept = 0
    for i, o in zip(in_dims, out_dims):
        if not same(i, o):
            break
        yield (out.uid, o), (source.uid, i)
        kept += 1
    for i, o in zip(reversed(in_dims[kept:]), reversed(out_dims[kept:])):
        if not same(i, o):
            break
        yield (out.uid, o), (source.uid, i)


def reshape_transformed(expr: Expr, sizes: Callable[[object], object] | None
                        ) -> tuple[list[int], list[int]]:
    """The domain positions of a reshape's input dims it splits or merges, and of the output
    dims it makes (``ir_utils::getReshapeInputAndOutputIds``): those it does not pass
    through (``_reshape_map``)."""
    source, out = expr.tensor_inputs()[0], expr.tensor_outputs()[0]
    passed = list(_reshape_map(expr, sizes))
    kept_in = {i for _, (_, i) in passed}
    kept_out = {o for (_, o), _ in passed}
    return ([i for i in _logical_positions(source) if i not in kept_in],
            [o for o in _logical_positions(out) if o not in kept_out])


# How each kind of op maps its output dims to its input dims. Elementwise-like kinds align
# dims from the right (numpy broadcasting); resizes keep each dim's loop (a pad or slice changes
# its extent, not its identity). Kinds not here start loops of their own: matmul and attention
# run their own loops, creation ops have no tensor inputs, scalars no dims (a reshape is
# ``_reshape_map``).
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

def dim_map(expr: Expr) -> DimPairs:
    """Pairs (output dim, input dim) that are the same loop for ``expr``."""
    mapper = DIM_MAPS.get(expr.op.kind)
    if mapper is None:
        return
    tensors_in = expr.tensor_inputs()
    for out in expr.tensor_outputs():
        yield from mapper(expr, out, tensors_in)


class DimGraph:
    """Union-find over the dimensions of the tensors of some exprs.

    ``exact=True`` is nvFuser's exact map: a broadcast dimension is not the same loop as the
    iteration dimension it meets (PairwiseLogicalDomainMap with mapBroadcast(false)).
    ``resize_splits=True`` keeps a dimension that a slice, pad or cat resizes apart from its
    input's, as nvFuser's Resize expr makes a new IterDomain. ``reshape_inner=True`` joins the
    innermost dimensions of a reshape's input and output, as nvFuser's inner-dimension
    propagation (getInputsOutputsWithInnerDim) follows a split's inner or a merge's output.
    """

    def __init__(
        self,
        exprs: Iterable[Expr],
        exact: bool = False,
        resize_splits: bool = False,
        reshape_inner: bool = False,
        sizes: Callable[[object], object] | None = None,
    ) -> None:
        self._parent: dict[DimKey, DimKey] = {}
        for expr in exprs:
            pairs = _reshape_map(expr, sizes) if expr.op is OpType.reshape else dim_map(expr)
            if reshape_inner and expr.op is OpType.reshape:
                pairs = itertools.chain(pairs, _reshape_inner_map(expr))
            if exact:
                pairs = _same_broadcastness(expr, pairs)
            if resize_splits and expr.op.kind is OpKind.RESIZE:
                pairs = _unresized(expr, pairs)
            for a, b in pairs:
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


def _same_broadcastness(expr: Expr, pairs: DimPairs) -> DimPairs:
    tensors = {t.uid: t for t in (*expr.tensor_inputs(), *expr.tensor_outputs())}
    for a, b in pairs:
        domain_a, domain_b = tensors[a[0]].domain, tensors[b[0]].domain
        if a[1] >= len(domain_a) or b[1] >= len(domain_b):
            continue  # a zero-dim index tensor: no dimension to map
        if domain_a[a[1]].is_broadcast == domain_b[b[1]].is_broadcast:
            yield a, b


def _reshape_inner_map(expr: Expr) -> DimPairs:
    source, out = expr.tensor_inputs()[0], expr.tensor_outputs()[0]
    in_dims = [p for p in _logical_positions(source) if not source.domain[p].is_broadcast]
    out_dims = [p for p in _logical_positions(out) if not out.domain[p].is_broadcast]
    if in_dims and out_dims:
        yield (out.uid, out_dims[-1]), (source.uid, in_dims[-1])


def _unresized(expr: Expr, pairs: DimPairs) -> DimPairs:
    outputs = {t.uid: t for t in expr.tensor_outputs()}
    for a, b in pairs:
        if not outputs[a[0]].domain[a[1]].rfactor:
            yield a, b


def self_mapped(graph: DimGraph, tensors: Iterable[TensorView]) -> TensorView | None:
    """A tensor two of whose dimensions are the same loop in ``graph`` (nvFuser's
    IterDomainGraph::hasSelfMapping), or None."""
    for tensor in tensors:
        classes = [graph.class_of(tensor, p) for p in range(len(tensor.domain))]
        if len(set(classes)) < len(classes):
            return tensor
    return None


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
