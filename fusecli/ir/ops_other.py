"""Indexing, creation, random numbers, matmul / linear, triu, and shape queries (attention and
grouped_mm: ``ops_attention``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from fusecli.ir import dtype as dt
from fusecli.ir.builder import (
    DefinitionError,
    FusionBuilder,
    broadcast_domains,
    copy_domain,
    describe,
    extent_from_scalar,
    extent_text,
    normalize_dim,
    out_of_range_text,
    same_extent,
    shape_entries,
)
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import IterDomain, Scalar, TensorView, Vector
from fusecli.ir.ops_elementwise import cast
from fusecli.ir.optype import OpType

# -- indexing --------------------------------------------------------------------------------


def _check_index(op: str, index: TensorView) -> None:
    if not dt.is_integral(index.dtype):
        raise DefinitionError(op, f"index must be an integer tensor, got a {describe(index)}")


def index_select(b: FusionBuilder, arg: TensorView, index: TensorView, dim: int) -> TensorView:
    _check_index("index_select", index)
    if index.ndim > 1:
        raise DefinitionError("index_select", f"index must be 1-D, got a {describe(index)}")
    dim = normalize_dim("index_select", dim, arg.ndim)
    domain = list(copy_domain(arg.logical))
    # A 0-dim index selects one position (as torch.index_select takes it): the dim keeps size 1.
    extent = index.logical[0].logical_extent if index.ndim else 1
    domain[dim] = IterDomain.iteration(extent)
    out = TensorView(dtype=arg.dtype, domain=tuple(domain))
    b.emit(OpType.index_select, [arg, index], [out], dim=dim)
    return out


def select(b: FusionBuilder, arg: TensorView, index: Scalar, dim: int) -> TensorView:
    if not dt.is_integral(index.dtype):
        raise DefinitionError("select", f"index must be an integer scalar, got {describe(index)}")
    dim = normalize_dim("select", dim, arg.ndim)
    domain = [d for axis, d in enumerate(copy_domain(arg.logical)) if axis != dim]
    out = TensorView(dtype=arg.dtype, domain=tuple(domain))
    b.emit(OpType.select, [arg, index], [out], dim=dim)
    return out


def gather(
    b: FusionBuilder, op: OpType, arg: TensorView, index: TensorView, dim: int
) -> TensorView:
    """``gather`` (index extents at most the input's) and ``take_along_axis`` (equal)."""
    _check_index(op.value, index)
    if index.ndim != arg.ndim:
        raise DefinitionError(
            op.value,
            f"Tensor arguments have different dimensions {arg.ndim} and {index.ndim} "
            f"(the input is a {describe(arg)}, the index a {describe(index)})",
        )
    dim = normalize_dim(op.value, dim, arg.ndim)
    if op is OpType.take_along_axis:
        for axis, (a, i) in enumerate(zip(arg.logical, index.logical)):
            if axis != dim and not a.is_broadcast and not i.is_broadcast:
                if same_extent(a.extent, i.extent) is False:
                    raise DefinitionError(
                        op.value,
                        f"input and index differ in dimension {axis}: {extent_text(a.extent)} vs "
                        f"{extent_text(i.extent)}",
                    )
    domain = index.logical
    if op is OpType.take_along_axis:
        domain = tuple(
            _take_along_domain(a, i, axis == dim)
            for axis, (a, i) in enumerate(zip(arg.logical, index.logical))
        )
    out = TensorView(dtype=arg.dtype, domain=copy_domain(domain))
    b.emit(op, [arg, index], [out], dim=dim)
    return out


def _take_along_domain(arg: IterDomain, index: IterDomain, indexed: bool) -> IterDomain:
    """The output dimension of take_along_axis (csrc/ops/indexing.cpp takeAlongAxis): the
    index's along ``dim``; elsewhere the two broadcast against each other as in
    torch.take_along_dim, the index's where only it iterates or only it is expanded."""
    if indexed or arg.is_broadcast and (not index.is_broadcast or index.expanded is not None):
        return index
    return arg


def scatter(
    b: FusionBuilder, arg: TensorView, index: TensorView, src: TensorView | Scalar, dim: int
) -> TensorView:
    _check_index("scatter", index)
    dim = normalize_dim("scatter", dim, arg.ndim)
    src = cast(b, src, arg.dtype)
    out = TensorView(dtype=arg.dtype, domain=copy_domain(arg.logical))
    b.emit(OpType.scatter, [arg, index, src], [out], dim=dim)
    return out


def index_put_accumulate(
    b: FusionBuilder, acc: TensorView, index: TensorView, value: TensorView
) -> TensorView:
    """acc [N, ...] plus, for each i, value[i] added to row index[i] (csrc/ops/indexing.cpp
    indexPutAccumulate); the output is a new tensor like acc."""
    op = "index_put_accumulate"
    _check_index(op, index)
    if index.ndim != 1:
        raise DefinitionError(op, f"index must be 1-D, got a {describe(index)}")
    if acc.ndim == 0 or value.ndim != acc.ndim:
        raise DefinitionError(
            op, f"acc needs a dimension and value acc's rank; got acc a {describe(acc)}, "
            f"value a {describe(value)}",
        )
    if value.dtype is not acc.dtype:  # at::index_put's check, made at definition
        raise DefinitionError(
            op, "Index put requires the source and destination dtypes match, got "
            f"{acc.dtype} for acc and {value.dtype} for value",
        )
    pairs = [(index.logical[0], value.logical[0], "index and value")]
    pairs += [(a, v, "acc and value") for a, v in zip(acc.logical[1:], value.logical[1:])]
    for first, second, names in pairs:
        if first.is_broadcast or second.is_broadcast:
            continue
        if same_extent(first.extent, second.extent) is False:
            raise DefinitionError(
                op, f"{names} differ in size: {extent_text(first.extent)} vs "
                f"{extent_text(second.extent)}",
            )
    out = TensorView(dtype=acc.dtype, domain=copy_domain(acc.logical))
    b.emit(OpType.index_put_accumulate, [acc, index, value], [out])
    return out


def embedding_fwd(
    b: FusionBuilder, indices: TensorView, weight: TensorView, options: dict[str, object]
) -> TensorView:
    _check_index("embedding_fwd", indices)
    if weight.ndim != 2:
        raise DefinitionError("embedding_fwd", f"weight must be 2-D, got a {describe(weight)}")
    domain = (*copy_domain(indices.logical), *copy_domain(weight.logical[1:]))
    out = TensorView(dtype=weight.dtype, domain=domain)
    given = [(name, value) for name, value in options.items() if value is not None]
    b.emit(
        OpType.embedding_fwd,
        [indices, weight, *(value for _, value in given)],
        [out],
        options=tuple(name for name, _ in given),
    )
    return out


# -- creation and random numbers ---------------------------------------------------------------


def _shape_domain(op: str, shape: Vector) -> tuple[IterDomain, ...]:
    domain = []
    for entry in shape_entries(op, shape):
        if entry is None:
            raise DefinitionError(op, "shape entries must be known sizes, not -1")
        domain.append(
            IterDomain.broadcast() if same_extent(entry, 1) else IterDomain.iteration(entry)
        )
    return tuple(domain)


def full(b: FusionBuilder, shape: Vector, fill_value: Scalar, dtype: DataType) -> TensorView:
    out = TensorView(dtype=dtype, domain=_shape_domain("full", shape))
    b.emit(OpType.full, [shape, cast(b, fill_value, dtype)], [out], dtype=dtype)
    return out


def iota(
    b: FusionBuilder, length: Scalar, start: Scalar | None, step: Scalar | None, dtype: DataType
) -> TensorView:
    # nvFuser's checks and words (csrc/ops/arith.cpp iota)
    if not dt.is_integral(length.dtype):
        raise DefinitionError("iota", f"length must be integer, but get dtype {length.dtype}")
    start = start if start is not None else FusionBuilder.constant(0, dtype)
    step = step if step is not None else FusionBuilder.constant(1, dtype)
    for name, value in (("start", start), ("step", step)):
        if dt.is_complex(value.dtype) or (
            dt.is_integral(value.dtype), dt.is_floating(value.dtype)
        ) != (dt.is_integral(dtype), dt.is_floating(dtype)):
            raise DefinitionError(
                "iota", f"iota: {name} dtype does not match specified dtype argument, should be "
                f"{dtype} but get {value.dtype}",
            )
        if value.is_constant and dt.is_floating(value.dtype) and not math.isfinite(value.value):
            raise DefinitionError("iota", "iota: length, start, step must be finite numbers.")
    if step.is_constant and step.value == 0:
        raise DefinitionError("iota", "iota: step value must not equal zero.")
    out = TensorView(dtype=dtype, domain=(IterDomain.iteration(extent_from_scalar(length)),))
    b.emit(OpType.iota, [length, start, step], [out], dtype=dtype)
    return out


def random(
    b: FusionBuilder,
    op: OpType,
    first: Scalar,
    second: Scalar,
    shape: Vector,
    rng_seed: Scalar | None,
    rng_offset: Scalar | None,
    dtype: DataType,
) -> TensorView:
    """``uniform(low, high, shape)`` and ``normal(mean, std, shape)``."""
    if not dt.is_floating(dtype):
        raise DefinitionError(
            op.value, f"Random distributions only create floating point types! {dtype}"
        )
    if (rng_seed is None) != (rng_offset is None):
        raise DefinitionError(op.value, "rng_seed and rng_offset must be given together")
    out = TensorView(dtype=dtype, domain=_shape_domain(op.value, shape))
    seeds = [rng_seed, rng_offset] if rng_seed is not None else []
    b.emit(op, [first, second, shape, *seeds], [out], dtype=dtype, seeded=bool(seeds))
    return out


def random_like(
    b: FusionBuilder,
    op: OpType,
    arg: TensorView,
    rng_seed: Scalar | None,
    rng_offset: Scalar | None,
) -> TensorView:
    if not dt.is_floating(arg.dtype):
        raise DefinitionError(op.value, f"needs a floating-point tensor, got a {describe(arg)}")
    out = TensorView(dtype=arg.dtype, domain=copy_domain(arg.logical))
    seeds = [rng_seed, rng_offset] if rng_seed is not None else []
    b.emit(op, [arg, *seeds], [out], seeded=bool(seeds))
    return out


# -- matmul and linear -----------------------------------------------------------------------


def matmul(b: FusionBuilder, a: TensorView, w: TensorView) -> TensorView:
    """torch.matmul's rank rules; the output carries the K dimension as a reduction domain."""
    _check_same_dtype("matmul", a, w)
    if a.ndim == 0 or w.ndim == 0:
        raise DefinitionError("matmul", "both operands need at least one dimension")
    a_k = a.logical[-1]
    w_k = w.logical[0] if w.ndim == 1 else w.logical[-2]
    _check_k("matmul", a_k, w_k)
    a_rows = () if a.ndim == 1 else (a.logical[-2],)
    w_cols = () if w.ndim == 1 else (w.logical[-1],)
    a_batch = a.logical[:-2] if a.ndim > 2 else ()
    w_batch = w.logical[:-2] if w.ndim > 2 else ()
    batch: tuple[IterDomain, ...] = ()
    if a_batch or w_batch:
        batch = broadcast_domains(
            "matmul",
            [TensorView(a.dtype, tuple(a_batch)), TensorView(w.dtype, tuple(w_batch))],
        )
    domain = (
        *copy_domain(batch), *copy_domain(a_rows), *copy_domain(w_cols),
        IterDomain.reduction(a_k.logical_extent),
    )
    out = TensorView(dtype=a.dtype, domain=domain)
    b.emit(OpType.matmul, [a, w], [out])
    return out


def linear(
    b: FusionBuilder, a: TensorView, weight: TensorView, bias: TensorView | None
) -> TensorView:
    """F.linear: ``a @ weight.T + bias`` with weight [out, in] (or [in])."""
    _check_same_dtype("linear", a, weight)
    if weight.ndim not in (1, 2):
        raise DefinitionError("linear", f"weight must be 1-D or 2-D, got a {describe(weight)}")
    if a.ndim == 0:
        raise DefinitionError("linear", "input needs at least one dimension")
    _check_k("linear", a.logical[-1], weight.logical[-1])
    out_features = copy_domain(weight.logical[:1]) if weight.ndim == 2 else ()
    domain = (
        *copy_domain(a.logical[:-1]), *out_features,
        IterDomain.reduction(a.logical[-1].logical_extent),
    )
    inputs = [a, weight]
    if bias is not None:
        _check_same_dtype("linear", a, bias)
        inputs.append(bias)
    out = TensorView(dtype=a.dtype, domain=domain)
    b.emit(OpType.linear, inputs, [out], has_bias=bias is not None)
    return out


def _check_same_dtype(op: str, a: TensorView, w: TensorView) -> None:
    if a.dtype is not w.dtype:
        raise DefinitionError(
            op, f"operands must have the same dtype, got {a.dtype} and {w.dtype}"
        )


def _check_k(op: str, a_k: IterDomain, w_k: IterDomain) -> None:
    if same_extent(a_k.logical_extent, w_k.logical_extent) is False:
        raise DefinitionError(
            op,
            f"inner dimensions do not match: {extent_text(a_k.logical_extent)} and "
            f"{extent_text(w_k.logical_extent)}",
        )


def triu(b: FusionBuilder, arg: TensorView, diagonal: Scalar | None) -> TensorView:
    if arg.ndim < 2:
        raise DefinitionError(
            "triu",
            f"input tensor for triu must have 2 or more dims, but got {arg.ndim} dims",
        )
    inputs = [arg] if diagonal is None else [arg, diagonal]
    out = TensorView(dtype=arg.dtype, domain=copy_domain(arg.logical))
    b.emit(OpType.triu, inputs, [out])
    return out


# -- shape queries -----------------------------------------------------------------------------


def size(b: FusionBuilder, arg: TensorView, dim: int) -> Scalar:
    dim = normalize_dim("size", dim, arg.ndim, scalar_ok=False)
    extent = arg.logical[dim].logical_extent
    if isinstance(extent, int):
        return FusionBuilder.constant(extent, DataType.Int)
    out = Scalar(dtype=DataType.Int)
    b.emit(OpType.size, [arg], [out], dim=dim)
    return out


def shape(b: FusionBuilder, arg: TensorView) -> Vector:
    return Vector(tuple(size(b, arg, dim) for dim in range(arg.ndim)))


def at(vector: Vector, index: int) -> Scalar:
    if not -vector.size <= index < vector.size:
        raise DefinitionError("at", out_of_range_text("at", index, vector.size))
    return vector.elements[index]


def vector_of(values: Sequence[Scalar]) -> Vector:
    return Vector(tuple(values))
