"""nvFuser's alias analysis (csrc/alias_analysis.cpp, ``findAliases``) on fusecli's IR.

An op that only changes how memory is read makes its output an *alias* of its input: the
LoadStoreOps (set, segment_set, stride_order, permute), broadcast, squeeze, expand, slice, and
a reshape whose merges join dimensions that are adjacent in memory. Walking the exprs in
topological order, each such op carries its input's *preferred layout* through to its output
(the order of its dimensions in memory, outermost first, and each one's contiguity); the output
is an alias when a layout comes out and agrees with an allocation the output already has (an
``add_output`` or ``stride_order`` with a stride order). A tensor's *root* is the non-alias at
the top of its chain of aliases.

nvFuser runs this on a concretized fusion, so a reshape's dimensions have sizes: here they
come from the inputs (``RuntimeInfo``), and a reshape whose sizes are unknown is no alias.
Layouts are over logical dimensions (reductions left out, as nvFuser's map from a producer's
logical domain to its consumer's root does). This is the analysis with empty allocations left
undetermined (``EmptyAllocationAs::kUndetermined``), as MarkAliasesPrepare runs it
(``mark_aliases.py``). The expr_eval scheduler's pointer-arithmetic check reads it too: nvFuser
runs it per segment with empty allocations taken as logical, but MarkAliasesPrepare has given
every alias its preferred layout as its allocation by then, so the answers agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from fusecli.ir.nodes import Expr, Fusion, IterDomain, TensorView
from fusecli.ir.optype import OpType
from fusecli.segment.candidate import RuntimeInfo

Contiguity = bool | None  # None: a broadcast dimension (nvFuser's nullopt)


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a tensor's logical dimensions sit in memory: ``order`` lists logical positions
    outermost first, ``contiguity`` the contiguity of each, in the same order."""

    order: tuple[int, ...]
    contiguity: tuple[Contiguity, ...]

    def entries(self) -> list[tuple[int, Contiguity]]:
        return list(zip(self.order, self.contiguity))

    @staticmethod
    def of(entries: list[tuple[int, Contiguity]]) -> Layout:
        return Layout(tuple(p for p, _ in entries), tuple(c for _, c in entries))


@dataclass(slots=True)
class AliasAnalysis:
    """Which tensors are aliases, of what, and in which layout."""

    source: dict[int, TensorView] = field(default_factory=dict)  # alias uid -> what it aliases
    layouts: dict[int, Layout] = field(default_factory=dict)  # alias uid -> preferred layout
    roots: dict[int, TensorView] = field(default_factory=dict)  # alias uid -> its chain's top

    def root(self, tensor: TensorView) -> TensorView | None:
        """The non-alias ``tensor`` aliases (nvFuser's getRoot), None for a non-alias."""
        return self.roots.get(tensor.uid)


def find_aliases(
    fusion: Fusion, runtime: RuntimeInfo, ops: frozenset[OpType] | None = None
) -> AliasAnalysis:
    """nvFuser's ``findAliases(fusion, EmptyAllocationAs::kUndetermined)``; ``ops`` limits it
    to the ops an older analysis knew (``RuleProfile.no_op_aliases``)."""
    analysis = AliasAnalysis()
    allocations = given_allocations(fusion)
    reuse_buffers = {o.value.uid for o in fusion.outputs if o.alias_input is not None}

    def preferred(tensor: TensorView) -> Layout:
        carried = analysis.layouts.get(tensor.uid)
        return carried if carried is not None else _canonical(tensor, allocations)

    for expr in fusion.exprs:
        carry = _CARRY.get(expr.op) if ops is None or expr.op in ops else None
        tensors_in = expr.tensor_inputs()
        if carry is None or not tensors_in or not isinstance(expr.output, TensorView):
            continue
        source, out = tensors_in[0], expr.output
        layout = carry(expr, source, out, preferred(source), runtime)
        if layout is None:
            continue
        if out.uid in allocations and not _compliant(layout, _canonical(out, allocations)):
            continue  # okToRelayout: a tensor given an allocation keeps it
        analysis.source[out.uid] = source
        analysis.layouts[out.uid] = layout
    for uid, source in analysis.source.items():
        if uid in reuse_buffers:  # an in-place update is written, not aliased
            continue
        root = source
        while root.uid in analysis.source:
            root = analysis.source[root.uid]
        analysis.roots[uid] = root
    return analysis


# -- layouts a tensor has of its own ----------------------------------------------------------


def given_allocations(fusion: Fusion) -> dict[int, tuple[int, ...]]:
    """Stride orders of tensors given an allocation: inputs declared with one, outputs added
    with one, and ``stride_order`` results (stride_order[i]: dim i's rank, 0 innermost)."""
    found: dict[int, tuple[int, ...]] = {}
    for value in fusion.inputs:
        if isinstance(value, TensorView) and value.stride_order:
            found[value.uid] = value.stride_order
    for output in fusion.outputs:
        if output.stride_order:
            found[output.value.uid] = output.stride_order
    for expr in fusion.exprs:
        if expr.op is OpType.stride_order and expr.attr("stride_order"):
            found[expr.output.uid] = tuple(expr.attr("stride_order"))
    return found


def _canonical(tensor: TensorView, allocations: dict[int, tuple[int, ...]]) -> Layout:
    """canonicalizeLayout: the allocation order if there is one, else the logical order; a
    declared input's own contiguity, else contiguous (broadcasts: None)."""
    logical = tensor.logical
    stride_order = allocations.get(tensor.uid, ())
    if stride_order:
        order = tuple(sorted(range(len(logical)), key=lambda i: -stride_order[i]))
    else:
        order = tuple(range(len(logical)))
    if tensor.contiguity and len(tensor.contiguity) == len(order):
        contiguity = tuple(tensor.contiguity)
    else:
        contiguity = tuple(None if logical[p].is_broadcast else True for p in order)
    return Layout(order, contiguity)


def _compliant(layout: Layout, required: Layout) -> bool:
    """isCompliantWith: the same order; contiguous where non-contiguous is asked is fine."""
    if layout.order != required.order:
        return False
    return all(
        actual == wanted or (actual is True and wanted is False)
        for actual, wanted in zip(layout.contiguity, required.contiguity)
    )


# -- carrying a layout through an op ----------------------------------------------------------

Carry = Callable[[Expr, TensorView, TensorView, Layout, RuntimeInfo], Layout | None]


def _mapped(layout: Layout, to_out: dict[int, int]) -> list[tuple[int, Contiguity]]:
    """mapInLayoutToOutRoot: input positions to output positions; unmapped ones drop out."""
    return [(to_out[p], c) for p, c in layout.entries() if p in to_out]


def _with_new_dims(
    mapped: list[tuple[int, Contiguity]], new: list[bool], contiguity: Contiguity = None
) -> Layout:
    """New dimensions sit at their logical positions; the rest keep their order around them
    (nvFuser's BroadcastOp rule: allocation stays close to logical)."""
    rest = iter(mapped)
    return Layout.of([(i, contiguity) if is_new else next(rest) for i, is_new in enumerate(new)])


def _identity(expr, source, out, layout, runtime) -> Layout | None:
    return layout


def _permute(expr, source, out, layout, runtime) -> Layout | None:
    to_out = {dim: position for position, dim in enumerate(expr.attr("dims"))}
    return Layout.of(_mapped(layout, to_out))


def _broadcast(expr, source, out, layout, runtime) -> Layout | None:
    flags = list(expr.attr("is_broadcast_dim"))
    kept = [position for position, is_new in enumerate(flags) if not is_new]
    return _with_new_dims(_mapped(layout, dict(enumerate(kept))), flags)


def _squeeze(expr, source, out, layout, runtime) -> Layout | None:
    squeezed = set(expr.attr("dims"))
    kept = [p for p in range(source.ndim) if p not in squeezed]
    return Layout.of(_mapped(layout, {p: i for i, p in enumerate(kept)}))


def _slice(expr, source, out, layout, runtime) -> Layout | None:
    """The input's order; the dimension next outside a sliced one is no longer contiguous."""
    if any(d.expanded is not None and not o.is_broadcast
           for d, o in zip(source.logical, out.logical)):
        return None  # slicing an expanded dimension does not keep it a broadcast in nvFuser
    entries = layout.entries()
    refined: list[tuple[int, Contiguity]] = []
    outer_of_sliced = False
    for position, contiguity in reversed(entries):
        if out.logical[position].is_broadcast:
            contiguity = None
        elif outer_of_sliced:
            contiguity, outer_of_sliced = False, False
        if _sliced(source.logical[position], out.logical[position]):
            outer_of_sliced = True
        refined.append((position, contiguity))
    return Layout.of(list(reversed(refined)))


def _sliced(before: IterDomain, after: IterDomain) -> bool:
    return after.logical_extent != before.logical_extent


def _reshape(expr, source, out, layout, runtime) -> Layout | None:
    """The reshape's merges must join dimensions adjacent in memory, outer right outside inner,
    and all but the innermost of them contiguous; splits always keep an alias."""
    groups = _reshape_groups(source, out, runtime)
    if groups is None:
        return None
    grouped = {p for in_dims, _ in groups for p in in_dims}
    entries = [(p, c) for p, c in layout.entries() if p in grouped]
    index = {p: i for i, (p, _) in enumerate(entries)}
    replaced: dict[int, list[tuple[int, Contiguity]]] = {}
    for in_dims, out_dims in groups:
        start = index[in_dims[0]]
        run = entries[start:start + len(in_dims)]
        if [p for p, _ in run] != in_dims:
            return None  # outer and inner are not adjacent in allocation order
        expanded = [source.logical[p].expanded is not None for p in in_dims]
        if any(expanded) and (len(in_dims) > 1 or len(out_dims) > 1):
            return None  # nvFuser materializes a split or merged expanded broadcast
        if any(c is not True for _, c in run[:-1]):
            return None  # a non-contiguous outer dimension cannot merge
        last = run[-1][1]
        replaced[in_dims[0]] = [(q, True) for q in out_dims[:-1]] + [(out_dims[-1], last)]
    mapped = [entry for p, _ in entries if p in replaced for entry in replaced[p]]
    placed = {q for _, out_dims in groups for q in out_dims}
    new = [q not in placed for q in range(out.ndim)]
    return _with_new_dims(mapped, new)


def _reshape_groups(
    source: TensorView, out: TensorView, runtime: RuntimeInfo
) -> list[tuple[list[int], list[int]]] | None:
    """Smallest runs of input and output dimensions with equal sizes (size-1 dimensions are
    squeezed or broadcast apart from the view, as nvFuser's reshape does), or None when a size
    is unknown."""
    in_sizes = [runtime.extent(d.logical_extent) for d in source.logical]
    out_sizes = [runtime.extent(d.logical_extent) for d in out.logical]
    if None in in_sizes or None in out_sizes:
        return None
    in_dims = [p for p, size in enumerate(in_sizes) if size != 1]
    out_dims = [q for q, size in enumerate(out_sizes) if size != 1]
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(in_dims) and j < len(out_dims):
        ins, outs = [in_dims[i]], [out_dims[j]]
        in_total, out_total = in_sizes[in_dims[i]], out_sizes[out_dims[j]]
        i, j = i + 1, j + 1
        while in_total != out_total:
            if in_total < out_total and i < len(in_dims):
                ins.append(in_dims[i])
                in_total *= in_sizes[in_dims[i]]
                i += 1
            elif out_total < in_total and j < len(out_dims):
                outs.append(out_dims[j])
                out_total *= out_sizes[out_dims[j]]
                j += 1
            else:
                return None
        groups.append((ins, outs))
    if i != len(in_dims) or j != len(out_dims):
        return None  # a zero-size dimension: no view analysis
    return groups


_CARRY: dict[OpType, Carry] = {
    OpType.set: _identity,
    OpType.segment_set: _identity,
    OpType.stride_order: _identity,
    OpType.expand: _identity,
    OpType.permute: _permute,
    OpType.broadcast: _broadcast,
    OpType.squeeze: _squeeze,
    OpType.slice: _slice,
    OpType.reshape: _reshape,
}
