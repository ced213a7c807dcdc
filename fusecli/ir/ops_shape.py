"""Shape ops: broadcast, expand, reshape, permute, squeeze, slice, pad, cat, and copies.

Semantics follow nvFuser's ``csrc/ops/alias.cpp``. ``broadcast_in_dim`` is not an IR op: like
nvFuser it becomes ``broadcast`` followed by ``expand`` where sizes grow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fusecli.ir import dtype as dt
from fusecli.ir.builder import (
    DefinitionError,
    FusionBuilder,
    copy_domain,
    describe,
    extent_text,
    normalize_dim,
    normalize_dims,
    normalize_stride_order,
    same_extent,
    shape_entries,
    shape_text,
)
from fusecli.ir.dtype import DataType, Operand, Promotion
from fusecli.ir.nodes import (
    Extent,
    ExtentOp,
    IterDomain,
    Scalar,
    SymbolicExtent,
    TensorView,
    Vector,
    extent_op,
    extent_product,
    extent_sum,
    static_value,
)
from fusecli.ir.optype import OpType


def set_op(b: FusionBuilder, op: OpType, arg: TensorView, **attrs: object) -> TensorView:
    """``set``, ``segment_set`` and ``stride_order``: a copy with the same shape."""
    if op is OpType.stride_order:
        attrs["stride_order"] = normalize_stride_order(
            "stride_order", attrs["stride_order"], arg.ndim
        )
    out = TensorView(dtype=arg.dtype, domain=copy_domain(arg.logical))
    b.emit(op, [arg], [out], **attrs)
    return out


def broadcast(b: FusionBuilder, arg: TensorView, is_broadcast_dim: Sequence[bool]) -> TensorView:
    flags = tuple(bool(f) for f in is_broadcast_dim)
    kept = flags.count(False)
    if kept != arg.ndim:
        raise DefinitionError(
            "broadcast",
            f"is_broadcast_dim {list(flags)} keeps {kept} dimensions of a {describe(arg)}",
        )
    if not any(flags):
        return arg
    source = iter(copy_domain(arg.logical))
    domain = tuple(IterDomain.broadcast() if flag else next(source) for flag in flags)
    out = TensorView(dtype=arg.dtype, domain=domain)
    b.emit(OpType.broadcast, [arg], [out], is_broadcast_dim=flags)
    return out


def expand(b: FusionBuilder, arg: TensorView, shape: Vector) -> TensorView:
    entries = shape_entries("expand", shape)
    if len(entries) != arg.ndim:
        raise DefinitionError(
            "expand", f"shape has {len(entries)} entries for a {describe(arg)}"
        )
    domain = []
    grows = False
    for axis, (source, target) in enumerate(zip(arg.logical, entries)):
        if target is None:
            domain.append(copy_domain([source])[0])
        elif source.is_broadcast:
            if same_extent(target, 1) is True:
                domain.append(IterDomain.broadcast())
            else:
                domain.append(IterDomain.broadcast(expanded=target))
                grows = True
        else:
            if same_extent(source.extent, target) is False:
                raise DefinitionError(
                    "expand",
                    f"cannot expand dimension {axis} of size {source.extent} to {target}: "
                    "only broadcast dimensions can be expanded",
                )
            domain.append(copy_domain([source])[0])
    if not grows:
        return arg
    out = TensorView(dtype=arg.dtype, domain=tuple(domain))
    b.emit(OpType.expand, [arg, shape], [out])
    return out


def broadcast_in_dim(
    b: FusionBuilder, arg: TensorView, shape: Vector, broadcast_dims: Sequence[int]
) -> TensorView:
    rank = shape.size
    dims = list(broadcast_dims)
    if len(dims) != arg.ndim:
        raise DefinitionError(
            "broadcast_in_dim",
            f"broadcast_dims {dims} must have one entry per dimension of the {describe(arg)}",
        )
    dims = [normalize_dim("broadcast_in_dim", d, rank) for d in dims]
    if any(later <= earlier for earlier, later in zip(dims, dims[1:])):
        raise DefinitionError(
            "broadcast_in_dim", f"broadcast_dims {list(broadcast_dims)} must be increasing"
        )
    entries = shape_entries("broadcast_in_dim", shape)
    for input_axis, output_axis in enumerate(dims):
        source = arg.logical[input_axis]
        target = entries[output_axis]
        if not source.is_broadcast and target is not None:
            if same_extent(source.extent, target) is False:
                raise DefinitionError(
                    "broadcast_in_dim",
                    f"input dimension {input_axis} of size {source.extent} cannot become "
                    f"size {target} in output dimension {output_axis}",
                )
    flags = [axis not in dims for axis in range(rank)]
    broadcasted = broadcast(b, arg, flags)
    return expand(b, broadcasted, shape)


def permute(b: FusionBuilder, arg: TensorView, dims: Sequence[int]) -> TensorView:
    if len(dims) != arg.ndim:
        raise DefinitionError(
            "permute", f"dims {list(dims)} must have one entry per dimension of a {describe(arg)}"
        )
    dims = normalize_dims("permute", dims, arg.ndim)
    source = copy_domain(arg.logical)
    out = TensorView(dtype=arg.dtype, domain=tuple(source[d] for d in dims))
    b.emit(OpType.permute, [arg], [out], dims=dims)
    return out


def squeeze(
    b: FusionBuilder, arg: TensorView, dims: Sequence[int], squeeze_expanded: bool = False
) -> TensorView:
    dims = normalize_dims("squeeze", dims, arg.ndim)
    for axis in dims:
        domain = arg.logical[axis]
        # A size known only at run time (a reshape's extent taken from a scalar) may be 1
        # then: accepted here and checked when the inputs are bound, as nvFuser does.
        squeezable = (
            domain.is_broadcast and (domain.expanded is None or squeeze_expanded)
        ) or static_value(domain.extent) in (1, None)
        if not squeezable:
            raise DefinitionError(
                "squeeze",
                f"cannot squeeze dimension {axis} of size {extent_text(domain.logical_extent)}: "
                "not a broadcast dimension",
            )
    kept = [d for axis, d in enumerate(copy_domain(arg.logical)) if axis not in dims]
    out = TensorView(dtype=arg.dtype, domain=tuple(kept))
    b.emit(OpType.squeeze, [arg], [out], dims=dims, squeeze_expanded=bool(squeeze_expanded))
    return out


def reshape(b: FusionBuilder, arg: TensorView, new_shape: Vector) -> TensorView:
    """Reshape, inferring at most one -1 entry; static element counts must agree."""
    entries = shape_entries("reshape", new_shape)
    if entries.count(None) > 1:
        raise DefinitionError("reshape", "new_shape can infer at most one dimension (-1)")
    input_numel = extent_product([d.logical_extent for d in arg.logical])
    known = extent_product([e for e in entries if e is not None])
    if None in entries:
        inferred = _infer(input_numel, known)
        entries = [inferred if e is None else e for e in entries]
    elif isinstance(input_numel, int) and isinstance(known, int) and input_numel != known:
        raise DefinitionError(
            "reshape",
            f"cannot reshape a tensor of {input_numel} elements "
            f"{shape_text(arg)} into {[int(e) for e in entries]} ({known} elements)",
        )
    domain = tuple(
        IterDomain.broadcast() if same_extent(e, 1) else IterDomain.iteration(e, rfactor=True)
        for e in entries
    )
    out = TensorView(dtype=arg.dtype, domain=domain)
    b.emit(OpType.reshape, [arg, new_shape], [out])
    return out


def _infer(total: Extent, known: Extent) -> Extent:
    if isinstance(total, int) and isinstance(known, int):
        if known == 0 or total % known:
            raise DefinitionError(
                "reshape", f"cannot infer -1: {total} elements do not divide into {known}"
            )
        return total // known
    return extent_op(ExtentOp.DIV, total, known)


# -- resize ops -----------------------------------------------------------------------------


def slice_(
    b: FusionBuilder,
    arg: TensorView,
    starts: Sequence[Scalar],
    ends: Sequence[Scalar],
    strides: Sequence[Scalar] | None = None,
    manual_normalization: bool = False,
) -> TensorView:
    rank = arg.ndim
    if len(starts) != rank or len(ends) != rank:
        raise DefinitionError(
            "slice",
            f"needs one start and end index per dimension of a {describe(arg)}, "
            f"got {len(starts)} and {len(ends)}",
        )
    strides = list(strides) if strides else [FusionBuilder.constant(1, DataType.Int)] * rank
    if len(strides) != rank:
        raise DefinitionError("slice", f"strides has {len(strides)} entries for rank {rank}")
    for stride in strides:
        if not stride.is_constant or int(stride.value) != 1:
            raise DefinitionError("slice", "only constant strides of 1 are supported")
    domain = []
    bounds = []
    for source, start, end in zip(arg.logical, starts, ends):
        extent = source.logical_extent
        lo, hi = _slice_bounds(start, end, extent, manual_normalization)
        bounds.append((lo, hi))
        if isinstance(lo, int) and isinstance(hi, int) and isinstance(extent, int):
            if lo == 0 and hi == extent:
                domain.append(copy_domain([source])[0])
                continue
            length = max(hi - lo, 0)
        elif manual_normalization:
            length = extent_op(ExtentOp.SUB, _as_extent(hi), _as_extent(lo))
        else:  # wrapped and clamped against a size known only at run time
            length = SymbolicExtent()
        domain.append(
            IterDomain.broadcast() if length == 1 and source.is_broadcast
            else IterDomain.iteration(length, rfactor=True)
        )
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


def _slice_bounds(start: Scalar, end: Scalar, extent: Extent, manual: bool):
    """Static (start, stop) when everything is constant, torch's wrap-and-clamp unless manual."""
    if not (start.is_constant and end.is_constant and isinstance(extent, int)):
        return (
            int(start.value) if start.is_constant else start,
            int(end.value) if end.is_constant else end,
        )
    lo, hi = int(start.value), int(end.value)
    if not manual:
        lo = min(max(lo + extent if lo < 0 else lo, 0), extent)
        hi = min(max(hi + extent if hi < 0 else hi, 0), extent)
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
    if len(widths) % 2 or len(widths) > 2 * rank:
        raise DefinitionError(
            "pad", f"pad_widths must be (left, right) pairs for at most {rank} dims, "
            f"got {len(widths)} entries"
        )
    if value is None:
        value = FusionBuilder.constant(False if arg.dtype is DataType.Bool else 0, arg.dtype)
    elif dt.category(value.dtype) > dt.category(arg.dtype) and not dt.is_floating(arg.dtype):
        raise DefinitionError(
            "pad", f"pad value of type {value.dtype} does not fit a {describe(arg)}"
        )
    per_dim: list[tuple[Extent, Extent]] = [(0, 0)] * rank
    for pair in range(len(widths) // 2):
        axis = rank - 1 - pair
        left, right = (_as_extent(_scalar_int(w)) for w in widths[2 * pair : 2 * pair + 2])
        per_dim[axis] = (left, right)
    domain = []
    for source, (left, right) in zip(arg.logical, per_dim):
        if left == 0 and right == 0:
            domain.append(copy_domain([source])[0])
            continue
        extent = extent_op(
            ExtentOp.ADD, extent_op(ExtentOp.ADD, source.logical_extent, left), right
        )
        if isinstance(extent, int) and extent < 0:
            raise DefinitionError("pad", f"negative padding makes a dimension of size {extent}")
        domain.append(IterDomain.iteration(extent, rfactor=True))
    out = TensorView(dtype=arg.dtype, domain=tuple(domain))
    b.emit(OpType.pad, [arg, value, *widths], [out], width_count=len(widths))
    return out


def _scalar_int(value: Scalar) -> int | Scalar:
    return int(value.value) if value.is_constant else value


def cat(
    b: FusionBuilder, tensors: Sequence[TensorView], dim: int, manual_padding: bool = False
) -> TensorView:
    if not tensors:
        raise DefinitionError("cat", "needs at least one tensor")
    rank = tensors[0].ndim
    for position, tensor in enumerate(tensors):
        if tensor.ndim != rank:
            raise DefinitionError(
                "cat",
                f"tensor {position} is a {describe(tensor)}, tensor 0 has rank {rank}",
            )
    dim = normalize_dim("cat", dim, rank)
    common, _ = dt.promote(
        [Operand(t.dtype, True, t.ndim) for t in tensors], Promotion.NO_HALF_TO_FLOAT
    )
    from fusecli.ir.ops_elementwise import cast

    tensors = [cast(b, t, common) for t in tensors]
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
    out = TensorView(dtype=common, domain=tuple(domain))
    b.emit(OpType.cat, tensors, [out], dim=dim, manual_padding=bool(manual_padding))
    return out


def static_numel(tensor: TensorView) -> int | None:
    extents = [static_value(e) for e in tensor.shape]
    return None if None in extents else math.prod(extents)
