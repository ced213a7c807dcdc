"""How each expr prints for ``nvfuser_direct`` (``translate``): one rule per op.

A rule returns the call, ``fd.ops.<name>(...)``; the translator writes the outputs in front of
it. The rules follow nvFuser's ``python_translate.cpp``: positional tensors, keyword arguments
after them, and a keyword left out where it equals its default (``keepdim=False``,
``dtype=DataType.Null``, ``bias=None``, ``squeeze_expanded=False``...). Where fusecli's IR keeps
an op whole that nvFuser's builds from smaller ones (var_mean, cat, triu...), the rule prints the
frontend call that builds the same fusion.

Where nvFuser's frontend needs a scalar handle rather than a Python number (``select``'s index,
``topk``'s k, embedding's options), a constant is defined on a line of its own, so that the
printed definition runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from fusecli.ir import attrs
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import OpKind, OpType, by_kind

if TYPE_CHECKING:
    from fusecli.frontend.translate import Translator

DirectPrinter = Callable[[Expr, "Translator"], str]


def _call(name: str, positional: Sequence[str], keywords: Sequence[tuple[str, str]] = ()) -> str:
    arguments = [*positional, *(f"{key}={value}" for key, value in keywords)]
    return f"fd.ops.{name}({', '.join(arguments)})"


def _dtype(dtype: DataType) -> str:
    return f"DataType.{dtype.name}"


def _tensor_in(expr: Expr) -> TensorView:
    tensor = expr.inputs[0]
    assert isinstance(tensor, TensorView)
    return tensor


def _positional(expr: Expr, t: Translator) -> str:
    """Unary, binary and ternary ops, and matmul: every input positional."""
    return _call(expr.op.value, [t.value(v) for v in expr.inputs])


def _cast(expr: Expr, t: Translator) -> str:
    return _call("cast", [t.value(expr.inputs[0])], [("dtype", _dtype(expr.output.dtype))])


def _set(expr: Expr, t: Translator) -> str:
    """nvFuser prints a copy (LoadStoreOp) as a cast to the dtype it has."""
    return _cast(expr, t)


def _segment_set(expr: Expr, t: Translator) -> str:
    # nvFuser prints this LoadStoreOp as a cast too, losing the segment boundary a repro needs
    return _call("segment_set", [t.value(expr.inputs[0])])


def _stride_order(expr: Expr, t: Translator) -> str:
    order = list(expr.attr("stride_order"))
    return _call("stride_order", [t.value(expr.inputs[0])], [("stride_order", str(order))])


def _reduction(expr: Expr, t: Translator) -> str:
    """``sum(tv3, dims=[2], dtype=DataType.Float)``: keepdim is a broadcast of its own;
    max and min take no dtype."""
    keywords = [("dims", str(list(expr.attr("dims"))))]
    if expr.op not in (OpType.max, OpType.min):
        keywords.append(("dtype", _dtype(expr.output.dtype)))
    return _call(expr.op.value, [t.value(expr.inputs[0])], keywords)


def _variance(expr: Expr, t: Translator) -> str:
    keywords = [("dims", str(list(expr.attr("dims")))),
                ("correction", str(expr.attr("correction")))]
    return _call(expr.op.value, [t.value(expr.inputs[0])], keywords)


def _welford(expr: Expr, t: Translator) -> str:
    return _call("welford", [t.value(expr.inputs[0])], [("dims", str(list(expr.attr("dims"))))])


def _dim_only(expr: Expr, t: Translator) -> str:
    """Scans, and the indexing ops: tensors positional, then ``dim=``."""
    return _call(expr.op.value, [t.value(v) for v in expr.inputs], [("dim", str(expr.attr("dim")))])


def _argsort(expr: Expr, t: Translator) -> str:
    keywords = [("dim", str(expr.attr("dim")))]
    keywords += [(flag, "True") for flag in ("descending", "stable") if expr.attr(flag)]
    return _call("argsort", [t.value(expr.inputs[0])], keywords)


def _topk(expr: Expr, t: Translator) -> str:
    arg, k = expr.inputs
    keywords = [("dim", str(expr.attr("dim")))]  # normalized: never the default -1
    if not expr.attr("largest"):
        keywords.append(("largest", "False"))
    if expr.attr("sorted"):
        keywords.append(("sorted", "True"))
    return _call("topk", [t.value(arg), t.handle(k)], keywords)


def _broadcast(expr: Expr, t: Translator) -> str:
    flags = [bool(f) for f in expr.attr("is_broadcast_dim")]
    return _call("broadcast", [t.value(expr.inputs[0])], [("is_broadcast_dim", str(flags))])


def _expand(expr: Expr, t: Translator) -> str:
    return _call("expand", [t.value(expr.inputs[0])], [("shape", t.shape(expr.output))])


def _reshape(expr: Expr, t: Translator) -> str:
    return _call("reshape", [t.value(expr.inputs[0])], [("new_shape", t.shape(expr.output))])


def _permute(expr: Expr, t: Translator) -> str:
    return _call("permute", [t.value(expr.inputs[0])], [("dims", str(list(expr.attr("dims"))))])


def _squeeze(expr: Expr, t: Translator) -> str:
    """``squeeze_expanded=True`` only when a squeezed dimension is an expanded broadcast."""
    dims = list(expr.attr("dims"))
    keywords = [("dims", str(dims))]
    domains = _tensor_in(expr).logical
    if any(domains[d].is_broadcast and domains[d].expanded is not None for d in dims):
        keywords.append(("squeeze_expanded", "True"))
    return _call("squeeze", [t.value(expr.inputs[0])], keywords)


def _slice(expr: Expr, t: Translator) -> str:
    """nvFuser's IR holds the normalized bounds, so it prints them with
    ``manual_normalization=True``; fusecli has them when they are all known."""
    tensor = _tensor_in(expr)
    static = expr.attr("static_bounds")
    if static is not None:
        starts, ends = [str(lo) for lo, _ in static], [str(hi) for _, hi in static]
        manual = True
    else:
        start_values, end_values = attrs.slice_bounds(expr, expr.inputs)
        starts = [t.value(v) for v in start_values]
        ends = [t.value(v) for v in end_values]
        manual = bool(expr.attr("manual_normalization"))
    keywords = [
        ("start_indices", f"[{', '.join(starts)}]"), ("end_indices", f"[{', '.join(ends)}]"),
        ("strides", str([1] * tensor.ndim)), ("manual_normalization", str(manual)),
    ]
    return _call("slice", [t.value(tensor)], keywords)


def _pad(expr: Expr, t: Translator) -> str:
    widths = attrs.pad_widths(expr.inputs)
    keywords = [("pad_widths", t.values(widths)), ("value", t.value(expr.inputs[1]))]
    return _call("pad", [t.value(expr.inputs[0])], keywords)


def _cat(expr: Expr, t: Translator) -> str:
    keywords = [("dim", str(expr.attr("dim"))),
                ("manual_padding", str(bool(expr.attr("manual_padding"))))]
    return _call("cat", [t.values(expr.inputs)], keywords)


def _select(expr: Expr, t: Translator) -> str:
    arg, index = expr.inputs
    return _call("select", [t.value(arg), t.handle(index)], [("dim", str(expr.attr("dim")))])


def _embedding(expr: Expr, t: Translator) -> str:
    options = attrs.embedding_options(expr, expr.inputs)
    keywords = [(name, t.handle(value)) for name, value in options.items()]
    return _call("embedding_fwd", [t.value(v) for v in expr.inputs[:2]], keywords)


def _full(expr: Expr, t: Translator) -> str:
    keywords = [("shape", t.shape(expr.output)), ("fill_value", t.value(expr.inputs[1])),
                ("dtype", _dtype(expr.output.dtype))]
    return _call("full", [], keywords)


def _iota(expr: Expr, t: Translator) -> str:
    length, start, step = expr.inputs
    keywords = [("length", t.value(length)), ("start", t.value(start)),
                ("step", t.value(step))]
    if expr.attr("dtype") is not DataType.Int:
        keywords.append(("dtype", _dtype(expr.attr("dtype"))))
    return _call("iota", [], keywords)


def _seed_keywords(expr: Expr, t: Translator) -> list[tuple[str, str]]:
    seeds = attrs.random_seed(expr, expr.inputs)
    if seeds is None:
        return []
    return [("rng_seed", t.value(seeds[0])), ("rng_offset", t.value(seeds[1]))]


def _random(expr: Expr, t: Translator) -> str:
    """``uniform(0.00000, 1.00000, [4, c1], dtype=DataType.BFloat16)``: the shape positional."""
    keywords = _seed_keywords(expr, t)
    if expr.attr("dtype") is not DataType.Float:
        keywords.append(("dtype", _dtype(expr.attr("dtype"))))
    positional = [t.value(expr.inputs[0]), t.value(expr.inputs[1]), t.shape(expr.output)]
    return _call(expr.op.value, positional, keywords)


def _random_like(expr: Expr, t: Translator) -> str:
    return _call(expr.op.value, [t.value(expr.inputs[0])], _seed_keywords(expr, t))


def _linear(expr: Expr, t: Translator) -> str:
    a, weight, *bias = expr.inputs
    keywords = [("bias", t.value(bias[0]))] if bias else []
    return _call("linear", [t.value(a), t.value(weight)], keywords)


def _with_options(required: int) -> DirectPrinter:
    """sdpfa_fwd and grouped_mm: ``required`` inputs positional, the given options by name."""

    def printer(expr: Expr, t: Translator) -> str:
        options = attrs.given_options(expr, expr.inputs)
        keywords = [(name, t.value(value)) for name, value in options.items()]
        return _call(expr.op.value, [t.value(v) for v in expr.inputs[:required]], keywords)

    return printer


def _sdpfa_bwd(expr: Expr, t: Translator) -> str:
    """Six tensors positional; then every keyword, None where not given, as nvFuser does."""
    given = attrs.given_options(expr, expr.inputs)
    seed, offset = expr.inputs[6:8]
    keywords = []
    for name in ("dropout_p", "is_causal", "philox_seed", "philox_offset", "scale"):
        value = {"philox_seed": seed, "philox_offset": offset}.get(name, given.get(name))
        keywords.append((name, "None" if value is None else t.value(value)))
    return _call("sdpfa_bwd", [t.value(v) for v in expr.inputs[:6]], keywords)


def _grouped_mm(expr: Expr, t: Translator) -> str:
    """Scaled (nvFuser's second form): the output dtype too, unless BFloat16."""
    options = attrs.given_options(expr, expr.inputs)
    keywords = [(name, t.value(value)) for name, value in options.items()]
    if "scale1" in options and expr.output.dtype is not DataType.BFloat16:
        keywords.append(("dtype", _dtype(expr.output.dtype)))
    return _call("grouped_mm", [t.value(v) for v in expr.inputs[:3]], keywords)


def _size(expr: Expr, t: Translator) -> str:
    return _call("size", [t.value(expr.inputs[0])], [("dim", str(expr.attr("dim")))])


def unused_results(expr: Expr) -> int:
    """Results the frontend call returns as None, printed ``_``: a scaled grouped_mm returns
    (output, block scales, global scale)."""
    if expr.op is OpType.grouped_mm and "scale1" in expr.attr("options", ()):
        return 2
    return 0


DIRECT_PRINTERS: dict[OpType, DirectPrinter] = {
    **by_kind(OpKind.UNARY, _positional),
    **by_kind(OpKind.BINARY, _positional),
    **by_kind(OpKind.TERNARY, _positional),
    **by_kind(OpKind.REDUCTION, _reduction),
    **by_kind(OpKind.SCAN, _dim_only),
    OpType.cast: _cast,
    OpType.set: _set,
    OpType.segment_set: _segment_set,
    OpType.stride_order: _stride_order,
    OpType.var: _variance,
    OpType.var_mean: _variance,
    OpType.welford: _welford,
    OpType.argsort: _argsort,
    OpType.topk: _topk,
    OpType.broadcast: _broadcast,
    OpType.expand: _expand,
    OpType.reshape: _reshape,
    OpType.permute: _permute,
    OpType.squeeze: _squeeze,
    OpType.slice: _slice,
    OpType.pad: _pad,
    OpType.cat: _cat,
    OpType.index_select: _dim_only,
    OpType.select: _select,
    OpType.gather: _dim_only,
    OpType.take_along_axis: _dim_only,
    OpType.scatter: _dim_only,
    OpType.index_put_accumulate: _positional,
    OpType.embedding_fwd: _embedding,
    OpType.full: _full,
    OpType.iota: _iota,
    OpType.uniform: _random,
    OpType.normal: _random,
    OpType.rand_like: _random_like,
    OpType.randn_like: _random_like,
    OpType.matmul: _positional,
    OpType.linear: _linear,
    OpType.grouped_mm: _grouped_mm,
    OpType.sdpfa_fwd: _with_options(3),
    OpType.sdpfa_bwd: _sdpfa_bwd,
    OpType.triu: _positional,
    OpType.size: _size,
}

# Not in any definition: mma comes only from the nvfuser-2024 lowering of a segment; shape and
# at are never exprs (their scalars are a tensor's sizes).
NOT_PRINTED = frozenset({OpType.mma, OpType.shape, OpType.at})
