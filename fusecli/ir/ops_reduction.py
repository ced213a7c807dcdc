"""Reductions (sum, prod, max, min), var / var_mean / welford, cumsum, argsort and topk.

A reduction's output keeps the reduced dimensions as reduction domains (``rS5{i1}``), as
nvFuser's does; ``keepdim=True`` is a reduction followed by a broadcast, again as in nvFuser.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusecli.ir import dtype as dt
from fusecli.ir.builder import (
    DefinitionError,
    FusionBuilder,
    copy_domain,
    describe,
    extent_from_scalar,
    normalize_dim,
    normalize_dims,
)
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import IterDomain, Scalar, TensorView
from fusecli.ir.ops_elementwise import cast, elementwise
from fusecli.ir.ops_other import size
from fusecli.ir.ops_shape import broadcast, set_op, squeeze
from fusecli.ir.optype import OpType


def _reduced_domain(arg: TensorView, dims: Sequence[int]) -> tuple[IterDomain, ...]:
    domain = []
    for axis, source in enumerate(copy_domain(arg.logical)):
        if axis in dims:
            if source.is_broadcast and source.expanded is None:
                domain.append(IterDomain.reduction(1))
            else:
                domain.append(IterDomain.reduction(source.logical_extent))
        else:
            domain.append(source)
    return tuple(domain)


def _normalize_reduction_dims(op: str, arg: TensorView, dims: Sequence[int] | None):
    if dims is None:
        return tuple(range(arg.ndim))
    return tuple(sorted(normalize_dims(op, dims, arg.ndim)))


TRIVIAL = "trivial_reduction"  # a squeeze's attr: (op, dims, dtype) of the reduction it opens


def _keepdim(b: FusionBuilder, out: TensorView, dims: Sequence[int], keepdim: bool) -> TensorView:
    if not keepdim:
        return out
    rank = out.ndim + len(dims)
    return broadcast(b, out, [axis in dims for axis in range(rank)])


def reduction(
    b: FusionBuilder,
    op: OpType,
    arg: TensorView,
    dims: Sequence[int] | None,
    keepdim: bool = False,
    dtype: DataType = DataType.Null,
) -> TensorView:
    """sum / prod (ints and bools accumulate in Int) and max / min (keep the input dtype)."""
    if not isinstance(arg, TensorView):
        raise TypeError(f"fd.ops.{op.value}: expected a Tensor, got {arg!r}")
    dims = _normalize_reduction_dims(op.value, arg, dims)
    if op in (OpType.max, OpType.min) and dtype is not DataType.Null:
        raise DefinitionError(op.value, "dtype must be DataType.Null for max and min")
    if any(arg.logical[axis].is_broadcast for axis in dims):
        return _trivial_reduction(b, op, arg, dims, keepdim, dtype)
    return _reduce(b, op, arg, dims, keepdim, dtype)


def _trivial_reduction(
    b: FusionBuilder,
    op: OpType,
    arg: TensorView,
    dims: Sequence[int],
    keepdim: bool,
    dtype: DataType,
) -> TensorView:
    """nvFuser's [Trivial reductions] (csrc/ops/arith.cpp reductionOp): reduced broadcast
    dimensions are squeezed first; a sum over an expanded broadcast bS{1 ex n} becomes a
    multiplication by n and a product a power of n. What is left is reduced as usual, and
    ``keepdim`` restores the squeezed dimensions as broadcasts. A reduction over broadcasts
    alone is then no reduction at all: nvFuser schedules it as a pointwise segment."""
    squeezed_dims = [axis for axis in dims if arg.logical[axis].is_broadcast]
    factors = [
        size(b, arg, axis) for axis in squeezed_dims
        if arg.logical[axis].expanded is not None and op in (OpType.sum, OpType.prod)
    ]
    remaining = [axis - sum(1 for s in squeezed_dims if s < axis)
                 for axis in dims if axis not in squeezed_dims]
    opens = remaining and not factors and not keepdim  # one call in a script (bisect.joined)
    squeezed = squeeze(b, arg, squeezed_dims, squeeze_expanded=True,
                       **({TRIVIAL: (op.value, tuple(dims), dtype)} if opens else {}))
    if remaining:
        out = _reduce(b, op, squeezed, remaining, keepdim, dtype)
    else:
        out = squeezed
        wanted = _reduction_dtype(op, squeezed, dtype)
        if wanted is not out.dtype:
            out = cast(b, out, wanted)
    result_dtype = out.dtype
    for factor in factors:
        combine = OpType.mul if op is OpType.sum else OpType.pow
        out = cast(b, elementwise(b, combine, [out, factor]), result_dtype)
    if keepdim:
        flags = [axis in squeezed_dims for axis in range(arg.ndim)]
        out = broadcast(b, out, flags)
    if out is arg:
        out = set_op(b, OpType.set, arg)
    return out


def _reduction_dtype(op: OpType, arg: TensorView, dtype: DataType) -> DataType:
    if op in (OpType.max, OpType.min):
        return arg.dtype
    if dtype is not DataType.Null:
        return dtype
    if dt.is_integral(arg.dtype) or dt.is_boolean(arg.dtype):
        return DataType.Int
    return arg.dtype


def _reduce(
    b: FusionBuilder,
    op: OpType,
    arg: TensorView,
    dims: Sequence[int],
    keepdim: bool,
    dtype: DataType,
) -> TensorView:
    out_dtype = _reduction_dtype(op, arg, dtype)
    if op not in (OpType.max, OpType.min):
        arg = cast(b, arg, out_dtype)  # sums and products accumulate in their output dtype
    out = TensorView(dtype=out_dtype, domain=_reduced_domain(arg, dims))
    b.emit(op, [arg], [out], dims=dims)
    return _keepdim(b, out, dims, keepdim)


def _float_input(b: FusionBuilder, op: str, arg: TensorView) -> TensorView:
    if not (dt.is_floating(arg.dtype) or dt.is_complex(arg.dtype)):
        raise DefinitionError(op, f"needs a floating-point tensor, got a {describe(arg)}")
    if dt.is_reduced_float(arg.dtype):
        return cast(b, arg, DataType.Float)
    return arg


# nvFuser's variance_mean refuses these ("there are compilation errors for half precision");
# its variance (var) computes them through mean and sum, which upcast.
_NO_VARIANCE_MEAN = frozenset(
    {DataType.Half, DataType.BFloat16, DataType.Float8_e4m3fn, DataType.Float8_e5m2}
)


def var_mean(
    b: FusionBuilder,
    arg: TensorView,
    dims: Sequence[int],
    correction: int,
    keepdim: bool,
    with_mean: bool,
) -> tuple[TensorView, ...]:
    """``var`` (one output) and ``var_mean`` (variance, mean), computed in Float for half types."""
    op = OpType.var_mean if with_mean else OpType.var
    dims = _normalize_reduction_dims(op.value, arg, dims)
    if with_mean and arg.dtype in _NO_VARIANCE_MEAN:  # csrc/ops/normalization.cpp
        raise DefinitionError(op.value, f"variance_mean is not supported for "
                              f"{dt.ir_name(arg.dtype)} please upcast to float")
    arg = _float_input(b, op.value, arg)
    real = dt.complex_to_real(arg.dtype)
    variance = TensorView(dtype=real, domain=_reduced_domain(arg, dims))
    outputs = [variance]
    if with_mean:
        outputs.append(TensorView(dtype=arg.dtype, domain=_reduced_domain(arg, dims)))
    b.emit(op, [arg], outputs, dims=dims, correction=int(correction))
    return tuple(_keepdim(b, out, dims, keepdim) for out in outputs)


def welford(b: FusionBuilder, arg: TensorView, dims: Sequence[int]) -> tuple[TensorView, ...]:
    """``(avg, var_sum, n)``: the mean, the sum of squared deviations, and the count."""
    dims = _normalize_reduction_dims("welford", arg, dims)
    arg = _float_input(b, "welford", arg)
    outputs = (
        TensorView(dtype=arg.dtype, domain=_reduced_domain(arg, dims)),
        TensorView(dtype=arg.dtype, domain=_reduced_domain(arg, dims)),
        TensorView(dtype=DataType.Int, domain=_reduced_domain(arg, dims)),
    )
    b.emit(OpType.welford, [arg], outputs, dims=dims)
    return outputs


def scan(b: FusionBuilder, op: OpType, arg: TensorView, dim: int) -> TensorView:
    """A running sum, product, minimum or maximum along ``dim``. Sums and products of integers
    and booleans accumulate in Int (as torch.cumsum and torch.cumprod do)."""
    dim = normalize_dim(op.value, dim, arg.ndim, scalar_ok=False)
    accumulates = op in (OpType.cumsum, OpType.cumprod)
    if accumulates and (dt.is_integral(arg.dtype) or dt.is_boolean(arg.dtype)):
        arg = cast(b, arg, DataType.Int)
    out = TensorView(dtype=arg.dtype, domain=copy_domain(arg.logical))
    b.emit(op, [arg], [out], dim=dim)
    return out



def argsort(
    b: FusionBuilder, arg: TensorView, dim: int, descending: bool, stable: bool
) -> TensorView:
    dim = normalize_dim("argsort", dim, arg.ndim)
    out = TensorView(dtype=DataType.Int, domain=copy_domain(arg.logical))
    b.emit(OpType.argsort, [arg], [out], dim=dim, descending=bool(descending), stable=bool(stable))
    return out


def topk(
    b: FusionBuilder, arg: TensorView, k: Scalar, dim: int, largest: bool, sorted_: bool
) -> tuple[TensorView, TensorView]:
    dim = normalize_dim("topk", dim, arg.ndim)
    if not dt.is_integral(k.dtype):
        raise DefinitionError("topk", f"k must be an integer scalar, got a {describe(k)}")
    domain = list(copy_domain(arg.logical))
    domain[dim] = IterDomain.iteration(extent_from_scalar(k))
    values = TensorView(dtype=arg.dtype, domain=tuple(domain))
    indices = TensorView(dtype=DataType.Int, domain=copy_domain(domain))
    b.emit(
        OpType.topk, [arg, k], [values, indices], dim=dim, largest=bool(largest),
        sorted=bool(sorted_),
    )
    return values, indices
