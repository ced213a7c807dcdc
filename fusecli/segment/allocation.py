"""Which tensors have an allocation order other than their logical one, before segmenting.

Schedulers ask which dimension of a segment input or output is innermost in memory (the
transpose scheduler's grouping, the resize scheduler's "Transpose-like patterns not
supported."). nvFuser answers with each tensor's allocation domain, which three things set
before the segmenter runs (csrc/preseg_passes/pre_segmenter.cpp):

- the definition: ``define_tensor(stride_order=...)``, ``add_output(t, stride_order=...)``
  and ``fd.ops.stride_order``;
- MarkAliasesPreparePass (csrc/preseg_passes/mark_aliases_prepare.cpp) gives every alias
  (``aliases.py``) that has none its preferred layout, the order it has in its root's memory;
- AllocationDomainPass (csrc/preseg_passes/allocation_order_inference.cpp, "Layout
  propagation", nvFuser #1788 and #1755, February 2024) gives every fusion output that has
  none, is not written in place and is no matmul, linear or attention result, the order of
  the fusion input it depends on with the most non-broadcast dimensions (two such inputs
  whose orders disagree: none). The input's dimensions are mapped from the innermost
  outwards to the output's through nvFuser's exact map, stopping at the first that has no
  counterpart (broadcasts are skipped, and so are dimensions the output reduces); the mapped
  ones go innermost, in the input's order, the rest stay outside them in logical order.

So an add of two column-major inputs writes a column-major output, and nothing about it is a
transpose; a column-major input that is sliced and padded gives its output the order of the
dimensions the resizes left alone. Tensors between segments keep their logical order.

Orders are stride orders over logical dimensions, as ``define_tensor`` takes them:
``order[i]`` is the rank of dimension i by stride, 0 the innermost.
"""

from __future__ import annotations

from fusecli.ir.nodes import Fusion, TensorView
from fusecli.ir.optype import OpKind, OpType
from fusecli.segment.aliases import Layout, find_aliases, given_allocations
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.dims import DimGraph, self_mapped

StrideOrder = tuple[int, ...]

# outputs AllocationDomainPass leaves alone: ATen computes them (their layout is ATen's)
_ATEN_RESULTS = frozenset({OpType.matmul, OpType.linear, OpType.mma})


def allocation_orders(fusion: Fusion, runtime: RuntimeInfo) -> dict[int, StrideOrder]:
    """Tensor uid -> stride order, for the tensors whose order is not their logical one."""
    given = given_allocations(fusion)
    analysis = find_aliases(fusion, runtime)
    has_allocation = set(given)
    orders = dict(given)
    for tensor in _tensors(fusion):
        if tensor.uid in has_allocation or analysis.root(tensor) is None or not tensor.ndim:
            continue
        has_allocation.add(tensor.uid)
        orders[tensor.uid] = _stride_order(analysis.layouts[tensor.uid])
    exact = DimGraph(fusion.exprs, exact=True, resize_splits=True,
                     sizes=lambda extent: _size(runtime, extent))
    sources = [t for t in fusion.inputs
               if isinstance(t, TensorView) and self_mapped(exact, [t]) is None]
    for output in fusion.outputs:
        target = output.value
        if (not isinstance(target, TensorView) or target.uid in has_allocation
                or output.alias_input is not None or _computed_by_aten(fusion, target)
                or self_mapped(exact, [target]) is not None):
            continue
        reference = _reference(fusion, exact, sources, orders, target)
        if reference is not None:
            order = _mapped_order(exact, reference, orders.get(reference.uid, ()), target)
            if order is not None:
                orders[target.uid] = order
    return {uid: order for uid, order in orders.items() if order != _logical(len(order))}


def _tensors(fusion: Fusion) -> list[TensorView]:
    return [v for v in fusion.vals() if isinstance(v, TensorView)]


def _computed_by_aten(fusion: Fusion, tensor: TensorView) -> bool:
    definition = fusion.definition(tensor)
    return definition is not None and (definition.op in _ATEN_RESULTS
                                       or definition.op.kind is OpKind.ATTENTION)


def _reference(
    fusion: Fusion, exact: DimGraph, sources: list[TensorView],
    orders: dict[int, StrideOrder], target: TensorView,
) -> TensorView | None:
    """The input ``target`` depends on with the most non-broadcast dimensions; None when two
    such inputs do not agree dimension by dimension in memory (nvFuser's high-water mark)."""
    ancestors = _ancestors(fusion, target)
    reference, most = None, 0
    for source in sources:
        if source.uid not in ancestors:
            continue
        count = len(_iteration_in_memory(source, orders))
        if count < most:
            continue
        if count > most:
            reference, most = source, count
        elif reference is not None:
            pairs = zip(_iteration_in_memory(reference, orders),
                        _iteration_in_memory(source, orders))
            if not all(exact.same((reference.uid, a), (source.uid, b)) for a, b in pairs):
                reference = None
    return reference


def _ancestors(fusion: Fusion, tensor: TensorView) -> set[int]:
    seen: set[int] = set()
    stack = [tensor]
    while stack:
        value = stack.pop()
        definition = fusion.definition(value)
        if definition is None:
            continue
        for operand in definition.inputs:
            if operand.uid not in seen:
                seen.add(operand.uid)
                stack.append(operand)
    return seen


def _memory_order(tensor: TensorView, order: StrideOrder) -> list[int]:
    """Domain positions of ``tensor``'s logical dimensions, outermost in memory first."""
    logical = [p for p, d in enumerate(tensor.domain) if not d.is_reduction]
    if len(order) != len(logical):
        return logical
    return [logical[i] for i in sorted(range(len(logical)), key=lambda i: -order[i])]


def _iteration_in_memory(tensor: TensorView, orders: dict[int, StrideOrder]) -> list[int]:
    return [p for p in _memory_order(tensor, orders.get(tensor.uid, ()))
            if not tensor.domain[p].is_broadcast]


def _mapped_order(
    exact: DimGraph, reference: TensorView, order: StrideOrder, target: TensorView
) -> StrideOrder | None:
    """mapAllocationDomain: ``target``'s stride order after ``reference``'s, or None when no
    innermost dimension maps (the logical order stays)."""
    by_loop = {exact.class_of(target, p): p for p in range(len(target.domain))}
    mapped: list[int] = []  # target positions, innermost first
    for position in reversed(_memory_order(reference, order)):
        counterpart = by_loop.get(exact.class_of(reference, position))
        if counterpart is None:
            if reference.domain[position].is_broadcast:
                continue
            break
        if target.domain[counterpart].is_reduction:
            continue
        mapped.append(counterpart)
    if not mapped:
        return None
    logical = [p for p, d in enumerate(target.domain) if not d.is_reduction]
    outer_first = [p for p in logical if p not in mapped] + list(reversed(mapped))
    rank = {position: index for index, position in enumerate(logical)}
    return _stride_order(Layout(tuple(rank[p] for p in outer_first), ()))


def _stride_order(layout: Layout) -> StrideOrder:
    """A layout's order (logical positions, outermost first) as a stride order."""
    count = len(layout.order)
    order = [0] * count
    for index, position in enumerate(layout.order):
        order[position] = count - 1 - index
    return tuple(order)


def _size(runtime: RuntimeInfo, extent: object) -> object:
    size = runtime.extent(extent)
    return extent if size is None else size


def _logical(rank: int) -> StrideOrder:
    return tuple(range(rank - 1, -1, -1))
