"""Resize ops: slice, pad and cat, with nvFuser's definition-time checks in its words.

Semantics follow nvFuser's ``csrc/ops/alias.cpp``; the argument checks follow its frontends'
slice, pad and cat bindings. Sizes known only at run time are checked when the inputs are bound
(``fusecli.runtime.concretize``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fusecli.ir import dtype as dt
from fusecli.ir.attrs import slice_bounds
from fusecli.ir.builder import (
    DefinitionError,
    FusionBuilder,
    copy_domain,
    describe,
    normalize_dim,
    same_extent,
)
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import (
    Expr,
    Extent,
    ExtentOp,
    IterDomain,
    IterType,
    Scalar,
    SymbolicExtent,
    TensorView,
    extent_op,
    extent_sum,
)
from fusecli.ir.ops_shape import set_op
from fusecli.ir.optype import OpType


def slice_(
    b: FusionBuilder,
    arg: TensorView,
    starts: Sequence[Scalar],
    ends: Sequence[Scalar],
    strides: Sequence[Scalar] | None = None,
    manual_normalization: bool = False,
) -> TensorView:
    rank = arg.ndim
    # nvFuser's checks, in its order and words (the frontend's slice binding and SliceOpRecord)
    if strides and len(strides) != len(starts):
        raise DefinitionError(
            "slice",
            f"Slice start_indices and strides don't match! Start Indices: {len(starts)} "
            f"Strides: {len(strides)}",
        )
    if len(starts) != rank:
        raise DefinitionError(
            "slice",
            "Number of tensor dimensions does not match slice dimensions! "
            f"Tensor-dims: {rank} Slice-dims: {len(starts)}",
        )
    if len(starts) != len(ends):
        raise DefinitionError(
            "slice",
            "Slice indexing attribute dimensions don't match! Start Indices: "
            f"{len(starts)} End Indices: {len(ends)}",
        )
    strides = list(strides) if strides else [FusionBuilder.constant(1, DataType.Int)] * rank
    for start, end, stride in zip(starts, ends, strides):
        if start.is_constant and int(start.value) < 0:
            raise DefinitionError(
                "slice",
                "Slice operation start_indices must be greater than or equal to 0. "
                f"Start Indices: {int(start.value)}",
            )
        if start.is_constant and end.is_constant and int(end.value) < int(start.value):
            raise DefinitionError(
                "slice",
                "Slice operation end_indices must be greater than or equal to start_indices. "
                f"Start Indices: {int(start.value)} End Indices: {int(end.value)}",
            )
        if not stride.is_constant or int(stride.value) != 1:
            raise DefinitionError(
                "slice", "nvFuser Limitation: All slice operation strides must be of const size 1."
            )
    domain = []
    bounds = []
    sliced = False  # whether any dim needs slicing: none makes the slice nvFuser's set
    for source, start, end in zip(arg.logical, starts, ends):
        extent = source.logical_extent
        lo, hi = _slice_bounds(start, end, extent, manual_normalization)
        bounds.append((lo, hi))
        if isinstance(lo, int) and isinstance(hi, int) and isinstance(extent, int):
            if lo == 0 and hi == extent:  # this dim needs no slicing
                domain.append(copy_domain([source])[0])
                continue
            length = max(hi - lo, 0)
        elif manual_normalization:
            length = extent_op(ExtentOp.SUB, _as_extent(hi), _as_extent(lo))
        else:  # wrapped and clamped against a size known only at run time
            length = SymbolicExtent()
        # nvFuser's IterDomain::resize: a size known to be 1 from known bounds makes a broadcast
        # dimension (a sum over it is then a squeeze)
        static_one = length == 1 and (isinstance(extent, int) or source.is_broadcast)
        sliced = True
        domain.append(
            IterDomain(IterType.BROADCAST, 1, rfactor=True) if static_one
            else IterDomain.iteration(length, rfactor=True)
        )
    if not sliced:  # a copy, as nvFuser's slice returns set(inp)
        return set_op(b, OpType.set, arg)
    out = TensorView(dtype=arg.dtype, domain=tuple(domain))
    b.emit(
        OpType.slice,
        [arg, *starts, *ends],
        [out],
        manual_normalization=bool(manual_normalization),
        static_bounds=tuple(bounds)
        if all(isinstance(x, int) for lh in bounds for x in lh)
        and all(isinstance(d.logical_extent, int) for d in arg.logical)
        else None,
    )
    return out


def _as_extent(value: int | Scalar) -> Extent:
    from fusecli.ir.builder import extent_from_scalar

    return value if isinstance(value, int) else extent_from_scalar(value)


def clamp_index(index: int, size: int) -> int:
    """A slice bound as torch takes it: a negative one wraps, then it is clamped to [0, size]."""
    return min(max(index + size if index < 0 else index, 0), size)


def slice_lengths(
    expr: Expr, size_of: Callable[[Extent], int | None],
    scalar_of: Callable[[Scalar], int | None] = lambda scalar: None,
) -> list[tuple[SymbolicExtent, int]]:
    """(extent, length) for each dimension of the slice ``expr`` whose length the IR gives a
    symbol of its own (its input's size or a bound is known only with the inputs), where
    ``size_of`` knows that size and each bound is a constant or a value ``scalar_of`` knows
    (a scalar input's, a tensor's size): wrapped and clamped as torch slices."""
    if expr.op is not OpType.slice or expr.attr("manual_normalization"):
        return []
    found = []
    starts, ends = slice_bounds(expr, expr.inputs)
    for before, after, start, end in zip(expr.inputs[0].logical, expr.outputs[0].logical,
                                         starts, ends):
        extent = after.logical_extent
        if not isinstance(extent, SymbolicExtent):
            continue
        size = size_of(before.logical_extent)
        bounds = [int(b.value) if b.is_constant else scalar_of(b) for b in (start, end)]
        if size is None or None in bounds:
            continue
        lo, hi = (clamp_index(b, size) for b in bounds)
        found.append((extent, max(hi, lo) - lo))
    return found


def _slice_bounds(start: Scalar, end: Scalar, extent: Extent, manual: bool):
    """Static (start, stop) when everything is constant, torch's wrap-and-clamp unless manual."""
    if not (start.is_constant and end.is_constant and isinstance(extent, int)):
        return (
            int(start.value) if start.is_constant else start,
            int(end.value) if end.is_constant else end,
        )
    lo, hi = int(start.value), int(end.value)
    if not manual:
        lo, hi = clamp_index(lo, extent), clamp_index(hi, extent)
        hi = max(hi, lo)
    elif not (0 <= lo <= hi <= extent):
        raise DefinitionError(
            "slice", f"manual_normalization needs 0 <= start <= stop <= {extent}, got {lo}:{hi}"
        )
    return lo, hi


def pad(
    b: FusionBuilder, arg: TensorView, widths: Sequence[Scalar], value: Scalar | None
) -> TensorView:
    """torch.nn.functional.pad order: innermost dimension first, (left, right) pairs."""
    rank = arg.ndim
    if len(widths) > 2 * rank:
        raise DefinitionError(
            "pad", "Number of pad widths must be at most twice the input dimension "
            f"({len(widths)} widths for a {describe(arg)})"
        )
    if value is None:
        value = FusionBuilder.constant(False if arg.dtype is DataType.Bool else 0, arg.dtype)
    elif not _similar_dtype(arg.dtype, value.dtype):
        raise DefinitionError(
            "pad", "Tensor arg and pad value must have the same dtype. "
            f"(a {value.dtype} value for a {describe(arg)})"
        )
    if len(widths) % 2:
        raise DefinitionError(
            "pad", f"Invalid number of padding widths: {len(widths)} (widths come in pairs)"
        )
    per_dim: list[tuple[Extent, Extent]] = [(0, 0)] * rank
    for pair in range(len(widths) // 2):
        axis = rank - 1 - pair
        left, right = (_as_extent(_scalar_int(w)) for w in widths[2 * pair : 2 * pair + 2])
        per_dim[axis] = (left, right)
    if all(left == 0 and right == 0 for left, right in per_dim):  # nvFuser's: then a set
        return set_op(b, OpType.set, arg)
    domain = []
    for source, (left, right) in zip(arg.logical, per_dim):
        if left == 0 and right == 0:
            domain.append(copy_domain([source])[0])
            continue
        extent = extent_op(
            ExtentOp.ADD, extent_op(ExtentOp.ADD, source.logical_extent, left), right
        )
        if isinstance(extent, int) and extent < 0:
            raise DefinitionError(
                "pad",
                f"Invalid resized domain extent {extent}: negative padding makes a dimension "
                f"of size {extent}",
            )
        domain.append(IterDomain.iteration(extent, rfactor=True))
    out = TensorView(dtype=arg.dtype, domain=tuple(domain))
    b.emit(OpType.pad, [arg, value, *widths], [out], width_count=len(widths))
    return out


def _before_padding(
    b: FusionBuilder, tensors: Sequence[TensorView], dim: int
) -> list[TensorView]:
    """The tensors a ``cat(..., manual_padding=True)`` concatenates: each input is a pad of one
    along ``dim`` only, to the output's extent, as nvFuser's printer writes out a user's cat
    (``translate_fusion``: the pads, then the cat of the padded tensors); what was padded is
    the user's operand, and their cat is the user's cat."""
    producers = {out.uid: expr for expr in b.exprs for out in expr.outputs}
    originals = []
    for position, tensor in enumerate(tensors):
        producer = producers.get(tensor.uid)
        widths = producer.inputs[2:] if producer is not None and producer.op is OpType.pad else ()
        rank = tensor.ndim
        others = [w for pair in range(len(widths) // 2) if rank - 1 - pair != dim
                  for w in widths[2 * pair: 2 * pair + 2]]
        if not widths or any(_scalar_int(w) != 0 for w in others):
            raise DefinitionError(
                "cat", f"manual_padding: tensor {position} is not a pad along dimension {dim} "
                "(a cat with manual padding takes the pads nvFuser's printer writes for a cat)",
            )
        originals.append(producer.inputs[0])
    return originals


def _similar_dtype(base: DataType, other: DataType) -> bool:
    """nvFuser's ``hasSimilarDtype``: the same kind (complex, floating, boolean, integral)."""
    kinds = (dt.is_complex, dt.is_floating, dt.is_boolean, dt.is_integral)
    return base is other or any(kind(base) and kind(other) for kind in kinds)


def _scalar_int(value: Scalar) -> int | Scalar:
    return int(value.value) if value.is_constant else value


def cat(
    b: FusionBuilder, tensors: Sequence[TensorView], dim: int, manual_padding: bool = False
) -> TensorView:
    if not tensors:
        raise DefinitionError("cat", "Attempting to concatenate empty list of tensors")
    rank = tensors[0].ndim
    for position, tensor in enumerate(tensors):
        if tensor.ndim != rank:
            raise DefinitionError(
                "cat",
                f"Unexpected number of dimensions: tensor {position} is a {describe(tensor)}, "
                f"expected: {rank}",
            )
    dim = normalize_dim("cat", dim, rank)
    if len(tensors) == 1:  # nvFuser's cat of one input is a set of it
        return set_op(b, OpType.set, tensors[0])
    if manual_padding:
        return cat(b, _before_padding(b, tensors, dim), dim)
    dtype = tensors[0].dtype
    for tensor in tensors:  # csrc/ops/alias.cpp cat: no promotion, as torch.cat would do
        if tensor.dtype is not dtype:
            raise DefinitionError(
                "cat", f"Can't concatenate tensors with different data types: "
                f"{dt.ir_name(dtype)}, {dt.ir_name(tensor.dtype)}",
            )
    domain = []
    for axis in range(rank):
        column = [t.logical[axis] for t in tensors]
        if axis == dim:
            domain.append(
                IterDomain.iteration(
                    extent_sum([d.logical_extent for d in column]), rfactor=True
                )
            )
            continue
        extents = [d.logical_extent for d in column]
        for position, extent in enumerate(extents[1:], start=1):
            if same_extent(extents[0], extent) is False:
                raise DefinitionError(
                    "cat",
                    f"tensor {position} has size {extent} in dimension {axis}, "
                    f"tensor 0 has {extents[0]}",
                )
        static = [e for e in extents if isinstance(e, int)]
        extent = static[0] if static else extents[0]
        domain.append(
            # an expanded broadcast stays expanded, as nvFuser's newOutputIterDomain keeps it
            IterDomain.broadcast(next((d.expanded for d in column if d.expanded), None))
            if all(d.is_broadcast for d in column) else IterDomain.iteration(extent)
        )
    out = TensorView(dtype=dtype, domain=tuple(domain))
    b.emit(OpType.cat, tensors, [out], dim=dim, manual_padding=bool(manual_padding))
    return out


