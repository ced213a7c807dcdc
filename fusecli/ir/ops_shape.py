"""Shape ops: broadcast, expand, reshape, permute, squeeze, and copies (resize ops: ops_resize).

Semantics follow nvFuser's ``csrc/ops/alias.cpp``. ``broadcast_in_dim`` is not an IR op: like
nvFuser it becomes ``broadcast`` followed by ``expand`` where sizes grow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
from fusecli.ir.nodes import (
    Extent,
    ExtentOp,
    IterDomain,
    TensorView,
    Vector,
    extent_op,
    extent_product,
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
            "Invalid broadcast, number of false entries in is_broadcast_dim expected to be "
            f"{arg.ndim} but received {kept} (is_broadcast_dim {list(flags)}, a {describe(arg)})",
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
            if isinstance(source.extent, int):
                domain.append(copy_domain([source])[0])
            else:  # nvFuser's expand promotes a symbolic extent to the size asked for
                domain.append(IterDomain.iteration(target))
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
    if rank < arg.ndim:  # the checks and words of nvFuser's BroadcastInDimOpRecord
        raise DefinitionError(
            "broadcast_in_dim",
            "The new shape is expected to be greater-then-or-equal to the input: "
            f"{rank} vs {arg.ndim} (a {describe(arg)})",
        )
    if len(dims) != arg.ndim:
        raise DefinitionError(
            "broadcast_in_dim",
            f"The broadcast dimensions should match the input dimensions: {arg.ndim} vs "
            f"{len(dims)} (broadcast_dims {dims}, a {describe(arg)})",
        )
    dims = [normalize_dim("broadcast_in_dim", d, rank) for d in dims]
    if any(later <= earlier for earlier, later in zip(dims, dims[1:])):
        raise DefinitionError(
            "broadcast_in_dim",
            "Broadcast dimension is not greater than the previous value "
            f"(broadcast_dims {list(broadcast_dims)})",
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
            "permute",
            "Operator permute expects `dims` argument to have the same length as input! "
            f"(dims {list(dims)}, a {describe(arg)})",
        )
    dims = normalize_dims("permute", dims, arg.ndim)
    source = copy_domain(arg.logical)
    out = TensorView(dtype=arg.dtype, domain=tuple(source[d] for d in dims))
    b.emit(OpType.permute, [arg], [out], dims=dims)
    return out


def squeeze(
    b: FusionBuilder, arg: TensorView, dims: Sequence[int], squeeze_expanded: bool = False,
    **tags: object,
) -> TensorView:
    """``tags``: attrs the expr carries besides its own (``ops_reduction.TRIVIAL``)."""
    if len(dims) > arg.ndim:
        raise DefinitionError(
            "squeeze",
            "The dims to squeeze must be <= the number of dims of the input tensor. "
            f"Squeeze dims: {len(dims)} Input Tensor dims: {arg.ndim}",
        )
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
    b.emit(OpType.squeeze, [arg], [out], dims=dims, squeeze_expanded=bool(squeeze_expanded),
           **tags)
    return out


def reshape(b: FusionBuilder, arg: TensorView, new_shape: Vector) -> TensorView:
    """Reshape, inferring at most one -1 entry; static element counts must agree."""
    entries = shape_entries("reshape", new_shape)
    if entries.count(None) > 1:
        raise DefinitionError(
            "reshape", "A maximum of one value of -1 can be provided to reshape."
        )
    input_numel = extent_product([d.logical_extent for d in arg.logical])
    known = extent_product([e for e in entries if e is not None])
    if None in entries:
        inferred = _infer(input_numel, known)
        entries = [inferred if e is None else e for e in entries]
    elif isinstance(input_numel, int) and isinstance(known, int) and input_numel != known:
        raise DefinitionError(
            "reshape",
            f"Total element counts across view operation must match: {input_numel} vs {known} "
            f"(a tensor of shape {shape_text(arg)} into {[int(e) for e in entries]})",
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


def static_numel(tensor: TensorView) -> int | None:
    extents = [static_value(e) for e in tensor.shape]
    return None if None in extents else math.prod(extents)
