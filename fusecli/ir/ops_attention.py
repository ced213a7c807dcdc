"""Attention (sdpfa_fwd, sdpfa_bwd) and grouped matmul (grouped_mm): the IR of nvFuser's
composite ops that it evaluates with ATen (csrc/ops/composite.cpp, csrc/ops/arith.cpp).

Each constructor checks what nvFuser checks when the op is defined, with its words where it has
any, and lists the optional operands given after the required ones, their names in the expr's
``options`` attribute (``fusecli.ir.attrs.given_options`` reads them back).

Layouts: nvFuser lays out an attention output as the input it comes from (the query for the
output and its gradient, the key and value for theirs: allocation_order_inference.cpp's
SdpaPropagator); ``layout_source`` says which input that is.
"""

from __future__ import annotations

from fusecli.ir import dtype as dt
from fusecli.ir.builder import (
    DefinitionError,
    FusionBuilder,
    broadcast_domains,
    copy_domain,
    describe,
    extent_text,
    same_extent,
)
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, IterDomain, Scalar, TensorView
from fusecli.ir.optype import OpType

# -- attention ---------------------------------------------------------------------------------


def sdpfa_fwd(
    b: FusionBuilder,
    query: TensorView,
    key: TensorView,
    value: TensorView,
    options: dict[str, TensorView | Scalar | None],
) -> tuple[TensorView, ...]:
    """Scaled dot-product attention: q [N*, H, L, E], k [N*, H, S, E], v [N*, H, S, Ev];
    ``options``: bias, mask, dropout_p, is_causal and scale, each None when not given."""
    op = "sdpfa_fwd"
    _check_same_dtype(op, {"query": query, "key": key, "value": value})
    _check_same_rank(op, {"query": query, "key": key, "value": value})
    if query.ndim < 4:
        raise DefinitionError(op, f"query must have 4 dimensions or more, got a "
                              f"{describe(query)}")
    bias, mask = options.get("bias"), options.get("mask")
    if bias is not None:
        _check_same_rank(op, {"query": query, "bias": bias})
        _check_same_dtype(op, {"query": query, "bias": bias})
    if mask is not None:
        _check_same_rank(op, {"query": query, "mask": mask})
        if mask.dtype is not DataType.Bool:
            raise DefinitionError(op, f"mask must be a Bool tensor, got a {describe(mask)}")
    _check_scalars(op, options)
    # Batch dimensions and heads: where any of q, k and v iterates, the output does.
    leading = broadcast_domains(op, [_leading(t) for t in (query, key, value)])
    length = query.logical[-2]
    out = TensorView(query.dtype, (*leading, *copy_domain([length, value.logical[-1]])))
    logsumexp = TensorView(DataType.Float, (*copy_domain(leading), *copy_domain([length])))
    # torch >= 2.7: the philox state is flash attention's rng_state (uint64[2]) and an unused
    # uint64 scalar.
    philox_seed = TensorView(DataType.UInt64, (IterDomain.iteration(2),))
    philox_offset = TensorView(DataType.UInt64, ())
    given = {name: v for name, v in options.items() if v is not None}
    b.emit(
        OpType.sdpfa_fwd,
        [query, key, value, *given.values()],
        [out, logsumexp, philox_seed, philox_offset],
        options=tuple(given),
    )
    return out, logsumexp, philox_seed, philox_offset


def sdpfa_bwd(
    b: FusionBuilder,
    tensors: dict[str, TensorView],
    scalars: dict[str, Scalar | None],
) -> tuple[TensorView, ...]:
    """The gradients of query, key and value. ``tensors``: grad_output, query, key, value,
    output, logsumexp, philox_seed and philox_offset; ``scalars``: dropout_p, is_causal and
    scale, each None when not given."""
    op = "sdpfa_bwd"
    operands = {name: tensors[name] for name in ("grad_output", "query", "key", "value",
                                                 "output")}
    _check_same_dtype(op, operands)
    _check_same_rank(op, operands)
    query, key, value = tensors["query"], tensors["key"], tensors["value"]
    if query.ndim != 4:
        raise DefinitionError(
            op, f"Expect Q/K/V to be either 4D or 5D. If 5D, the first dimension is expected "
            f"to be device parallel during expression evaluation: got a {describe(query)}",
        )
    logsumexp = tensors["logsumexp"]
    if logsumexp.ndim != query.ndim - 1:
        raise DefinitionError(
            op, f"Expected logsumexp to have one less dimension than Q/K/V: {logsumexp.ndim} "
            f"vs {query.ndim}",
        )
    _check_scalars(op, scalars)
    grads = tuple(TensorView(t.dtype, copy_domain(t.logical)) for t in (query, key, value))
    given = {name: v for name, v in scalars.items() if v is not None}
    b.emit(OpType.sdpfa_bwd, [*tensors.values(), *given.values()], list(grads),
           options=tuple(given))
    return grads


def layout_source(expr: Expr, output: TensorView) -> TensorView | None:
    """The input whose layout attention output ``output`` of ``expr`` takes, if any."""
    if expr.op is OpType.sdpfa_fwd and output is expr.outputs[0]:
        return expr.inputs[0]
    if expr.op is OpType.sdpfa_bwd and output in expr.outputs:
        return expr.inputs[1 + expr.outputs.index(output)]  # grad_query follows query...
    return None


def _leading(tensor: TensorView) -> TensorView:
    """The batch dimensions and heads of an attention operand, as a tensor of their own."""
    return TensorView(tensor.dtype, tuple(tensor.logical[:-2]))


def _check_scalars(op: str, scalars: dict[str, object]) -> None:
    """nvFuser's checks of dropout_p, is_causal and scale (absent ones pass)."""
    for name in ("dropout_p", "scale"):
        scalar = scalars.get(name)
        if scalar is not None and not (dt.is_floating(scalar.dtype) or
                                       dt.is_integral(scalar.dtype)):
            what = "dropout" if name == "dropout_p" else name
            raise DefinitionError(op, f"Expected {what} to be a real-valued scalar.")
    is_causal = scalars.get("is_causal")
    if is_causal is not None and is_causal.dtype is not DataType.Bool:
        raise DefinitionError(op, "Expected is_causal to be a scalar boolean.")


# -- grouped matmul ----------------------------------------------------------------------------


def grouped_mm(
    b: FusionBuilder,
    mat1: TensorView,
    mat2: TensorView,
    offsets: TensorView,
    options: dict[str, TensorView | None],
    dtype: DataType | None,
) -> TensorView:
    """One matmul per group; ``offsets`` holds each group's end along the grouped dimension.

    [m, k] x [k, n] -> [g, m, n] (k grouped); [g, m, k] x [k, n] -> [m, n] (n grouped);
    [m, k] x [g, k, n] -> [m, n] (m grouped). ``options``: scale1 and scale2 (both or
    neither), alpha, bias and beta, each None when not given; ``dtype`` None: mat1's.
    """
    op = "grouped_mm"
    if offsets.ndim != 1:
        raise DefinitionError(op, "offsets needs to be 1-D for grouped mm")
    if not dt.is_integral(offsets.dtype):
        raise DefinitionError(op, f"offsets must be an integer tensor, got a "
                              f"{describe(offsets)}")
    if mat1.ndim < 2 or mat2.ndim < 2:
        raise DefinitionError(op, f"Unexpected operand ranks {mat1.ndim} and {mat2.ndim}")
    k1, k2 = mat1.logical[-1], mat2.logical[-2]
    if k1.is_broadcast != k2.is_broadcast:
        raise DefinitionError(op, "K should be broadcast in both A and B, or neither.")
    if mat1.ndim == 2 and mat2.ndim == 2:
        domain = [offsets.logical[0], mat1.logical[0], mat2.logical[1]]
        # the groups split k between them: each has its own share, so no extent check
    elif (mat1.ndim, mat2.ndim) in ((3, 2), (2, 3)):
        domain = [mat1.logical[-2], mat2.logical[-1]]
        _check_k(op, k1, k2)
    else:
        raise DefinitionError(
            op, f"Unexpected operand ranks. If two 3D tensors, you should use bmm/matmul "
            f"instead of grouped_mm: a {describe(mat1)} and a {describe(mat2)}",
        )
    scale1, scale2 = options.get("scale1"), options.get("scale2")
    if (scale1 is None) != (scale2 is None):
        raise DefinitionError(op, "scale1 and scale2 needs to be non-null or both null")
    if (options.get("bias") is None) != (options.get("beta") is None):
        raise DefinitionError(op, "bias and beta needs to be non-null or both null")
    unsupported = [n for n in ("alpha", "bias", "beta") if options.get(n) is not None]
    if unsupported:
        # nvFuser accepts them in the definition and rejects them when it evaluates the op.
        raise DefinitionError(op, f"{' and '.join(unsupported)} is not supported yet")
    out_rank = len(domain)
    for name, scale, matrix in (("scale1", scale1, mat1), ("scale2", scale2, mat2)):
        if scale is not None and scale.ndim != max(matrix.ndim, out_rank):
            raise DefinitionError(
                op, f"{name} must have rank {max(matrix.ndim, out_rank)} (that of its matrix"
                f" or of the output, whichever is larger), got a {describe(scale)}",
            )
    reduction = () if k1.is_broadcast else (IterDomain.reduction(k1.logical_extent),)
    out = TensorView(dtype or mat1.dtype, (*copy_domain(domain), *reduction))
    given = {name: v for name, v in options.items() if v is not None}
    b.emit(OpType.grouped_mm, [mat1, mat2, offsets, *given.values()], [out],
           options=tuple(given))
    return out


# -- checks ------------------------------------------------------------------------------------


def _check_same_dtype(op: str, tensors: dict[str, TensorView]) -> None:
    dtypes = {t.dtype for t in tensors.values()}
    if len(dtypes) > 1:
        listed = ", ".join(f"{name} {t.dtype.name}" for name, t in tensors.items())
        raise DefinitionError(op, f"operands must have one dtype, got {listed}")


def _check_same_rank(op: str, tensors: dict[str, TensorView]) -> None:
    ranks = {t.ndim for t in tensors.values()}
    if len(ranks) > 1:
        listed = ", ".join(f"{name} of rank {t.ndim}" for name, t in tensors.items())
        raise DefinitionError(op, f"operands must have one rank, got {listed}")


def _check_k(op: str, k1: IterDomain, k2: IterDomain) -> None:
    if same_extent(k1.logical_extent, k2.logical_extent) is False:
        raise DefinitionError(
            op, f"inner dimensions do not match: {extent_text(k1.logical_extent)} and "
            f"{extent_text(k2.logical_extent)}",
        )
