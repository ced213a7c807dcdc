"""The text of each kind of expr, as nvFuser's ``Expr::toString`` methods print them.

``EXPR_PRINTERS`` maps every ``OpType`` to a function ``(expr, values) -> str``, where ``values``
(a ``printer.ValuePrinter``) gives each operand's text. The layouts are those of current nvFuser
(csrc/ir/internal_nodes.cpp, csrc/type.cpp), checked against real logs, quirks included: the
spaces before the closing parenthesis of ``linear`` and ``sdpa`` are nvFuser's. Tensor ops put
the output on its own line (``T2...\\n   = T0...\\n   + T1...;``); scalar exprs take one line
(``i5 = i2 + i3;``).

Ops that nvFuser builds from several exprs (``addcmul``, ``var_mean``, ``triu``, ``sign``...)
print under their fusecli name in the closest nvFuser layout, or as
``= op( inputs..., attr = value )``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.ir import dtype as dt
from fusecli.ir import printer_attention
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr
from fusecli.ir.optype import OpKind, OpType, by_kind
from fusecli.ir.printer_casts import cast_function
from fusecli.ir.printer_layout import (
    ExprPrinter,
    _assign,
    _call,
    _flags,
    _generic,
    _is_tensor_op,
    _one_line,
    _two_lines,
)
from fusecli.ir.printer_reductions import (
    _argsort,
    _cumsum,
    _reduction,
    _topk,
    _welford,
)

if TYPE_CHECKING:
    from fusecli.ir.printer import ValuePrinter



# ---------------------------------------------------------------------------------------------
# Elementwise: unary, binary, ternary, cast
# ---------------------------------------------------------------------------------------------

# How each elementwise op prints comes from its record: ``symbol`` (an inline operator),
# ``printed`` (a function name other than the op's: ``nearbyint``, nvFuser's Max as ``fmax``)
# and ``float_suffix`` (type.cpp needFloatSuffix: ``expf`` on Float outputs).


def _unary(expr: Expr, values: ValuePrinter) -> str:
    operand = values.value(expr.inputs[0])
    definition = expr.op.definition
    if definition.symbol is not None:
        return _assign(expr, values, f"{definition.symbol}{operand};")
    return _assign(expr, values, f"{_function_name(expr)}({operand});")


def _binary(expr: Expr, values: ValuePrinter) -> str:
    lhs, rhs = (values.value(v) for v in expr.inputs)
    tensor_op = _is_tensor_op(expr)
    symbol = expr.op.definition.symbol
    if symbol is not None:
        line_break = "\n  " if tensor_op else ""
        return _assign(expr, values, f"{lhs}{line_break} {symbol} {rhs};")
    return _assign(expr, values, _call(_function_name(expr), [lhs, rhs], tensor_op) + ";")


def _function_name(expr: Expr) -> str:
    definition = expr.op.definition
    name = definition.printed or definition.name
    if expr.output.dtype is DataType.Float and definition.float_suffix:
        name += "f"
    return name


def _function(expr: Expr, values: ValuePrinter) -> str:
    """Ternary and wider elementwise ops: ``where(c\\n  , a\\n  , b);``."""
    args = [values.value(v) for v in expr.inputs]
    return _assign(expr, values, _call(expr.op.value, args, _is_tensor_op(expr)) + ";")


def _cast(expr: Expr, values: ValuePrinter) -> str:
    operand = expr.inputs[0]
    function = cast_function(operand.dtype, expr.output.dtype)
    return _assign(expr, values, f"{function}({values.value(operand)});")


# ---------------------------------------------------------------------------------------------
# Shape ops and copies
# ---------------------------------------------------------------------------------------------


def _set(expr: Expr, values: ValuePrinter) -> str:
    # stride_order is a Set whose output has an allocation domain: it prints as a Set.
    return _two_lines(expr, values, f"Set( {values.value(expr.inputs[0])}, cache_op=Streaming )")


def _segment_set(expr: Expr, values: ValuePrinter) -> str:
    return _two_lines(expr, values, f"SegmenterSet( {values.value(expr.inputs[0])} )")


def _permute(expr: Expr, values: ValuePrinter) -> str:
    arg = values.value(expr.inputs[0])
    return _two_lines(expr, values, f"Set.Permute( {arg}, cache_op=Streaming )")


def _broadcast(expr: Expr, values: ValuePrinter) -> str:
    flags = _flags(expr.attr("is_broadcast_dim"))
    return _two_lines(expr, values, f"broadcast( {values.value(expr.inputs[0])}, flags = {flags} )")


def _squeeze(expr: Expr, values: ValuePrinter) -> str:
    arg = expr.inputs[0]
    flags = _flags([axis in expr.attr("dims") for axis in range(arg.ndim)])
    return _two_lines(expr, values, f"squeeze( {values.value(arg)}, flags = {flags} )")


def _expand(expr: Expr, values: ValuePrinter) -> str:
    return _one_line(expr, values, f"expand( {values.value(expr.inputs[0])} )")


def _reshape(expr: Expr, values: ValuePrinter) -> str:
    return _one_line(expr, values, f"reshape( {values.value(expr.inputs[0])} )")


def _slice(expr: Expr, values: ValuePrinter) -> str:
    arg = expr.inputs[0]
    bounds = expr.attr("static_bounds")
    if bounds is None:
        starts, ends = expr.inputs[1 : 1 + arg.ndim], expr.inputs[1 + arg.ndim :]
        bounds = [(values.value(s), values.value(e)) for s, e in zip(starts, ends)]
    ranges = "".join(f" {{{start}, {stop}, 1}}" for start, stop in bounds)
    return _two_lines(expr, values, f"slice( {values.value(arg)}, {{{ranges} }} )")


def _pad(expr: Expr, values: ValuePrinter) -> str:
    """Widths of every dimension, outermost first: the IR keeps torch's innermost-first pairs."""
    arg, widths = expr.inputs[0], expr.inputs[2:]
    per_dim = [("0", "0")] * arg.ndim
    for pair in range(len(widths) // 2):
        left, right = widths[2 * pair : 2 * pair + 2]
        per_dim[arg.ndim - 1 - pair] = (values.value(left), values.value(right))
    flat = ", ".join(width for pair in per_dim for width in pair)
    return _two_lines(expr, values, f"pad( {values.value(arg)}, {{{flat}}} )")


def _cat(expr: Expr, values: ValuePrinter) -> str:
    tensors = ", ".join(values.value(v) for v in expr.inputs)
    return _two_lines(expr, values, f"cat( {tensors}, {expr.attr('dim')} )")


# ---------------------------------------------------------------------------------------------
# Indexing, creation, random numbers
# ---------------------------------------------------------------------------------------------


def _index_select(expr: Expr, values: ValuePrinter) -> str:
    arg, index = (values.value(v) for v in expr.inputs)
    return _two_lines(expr, values, f"indexSelect( {arg}, dim = {expr.attr('dim')}, {index} )")


def _select(expr: Expr, values: ValuePrinter) -> str:
    arg, index = expr.inputs
    axis = values.iter_domain(arg.logical[expr.attr("dim")])
    return _two_lines(
        expr, values, f"select( {values.value(arg)}, axis = {axis}, index = {values.value(index)} )"
    )


def _gather(expr: Expr, values: ValuePrinter) -> str:
    arg, index = (values.value(v) for v in expr.inputs)
    dim = expr.attr("dim")
    if expr.op is OpType.take_along_axis:
        return _two_lines(expr, values, f"takeAlongAxis( {arg}, {index}, dim = {dim} )")
    return _two_lines(expr, values, f"torchGather( {arg}, dim = {dim}, {index} )")


def _scatter(expr: Expr, values: ValuePrinter) -> str:
    arg, index, src = (values.value(v) for v in expr.inputs)
    return _two_lines(
        expr, values, f"scatter(in = {arg}, dim = {expr.attr('dim')}, src = {src}, idx = {index} )"
    )


def _index_put_accumulate(expr: Expr, values: ValuePrinter) -> str:
    acc, index, value = (values.value(v) for v in expr.inputs)
    return _two_lines(expr, values, f"indexPutAccumulate( {acc}, {index}, {value} )")


_EMBEDDING_DEFAULTS = {"norm_type": "double(2)", "scale_grad_by_freq": "false", "sparse": "false"}


def _embedding(expr: Expr, values: ValuePrinter) -> str:
    indices, weight, *given = (values.value(v) for v in expr.inputs)
    options = {**_EMBEDDING_DEFAULTS, **dict(zip(expr.attr("options"), given))}
    names = [n for n in ("padding_idx", "max_norm") if n in options] + list(_EMBEDDING_DEFAULTS)
    args = [indices, weight, *(f"{name} = {options[name]}" for name in names)]
    # nvFuser ends the output line with a comma here.
    return f"{values.value(expr.output)},\n   = embedding({_ALIGNED.join(args)})\n"


def _output_extents(expr: Expr, values: ValuePrinter) -> list[str]:
    return [values.extent(d.extent) for d in expr.output.logical]


def _full(expr: Expr, values: ValuePrinter) -> str:
    extents = _output_extents(expr, values)
    fill = values.value(expr.inputs[1])
    shape = "{" + ", ".join(extents) + "}" + (", " if extents else "")
    return _two_lines(expr, values, f"full({shape}{fill});")


def _iota(expr: Expr, values: ValuePrinter) -> str:
    length, start, step = (values.value(v) for v in expr.inputs)
    dtype = dt.ir_name(expr.attr("dtype"))
    return _two_lines(expr, values, f"iota({length}, {start}, {step}, {dtype});")


_RNG_NAMES = {
    OpType.uniform: "rng_uniform_range", OpType.normal: "rng_normal_general",
    OpType.rand_like: "rng_uniform", OpType.randn_like: "rng_normal_standard",
}


def _random(expr: Expr, values: ValuePrinter) -> str:
    """``rng_uniform_range({i0, i1}, double(0), double(1), float)``; seed and offset last."""
    if expr.op in (OpType.uniform, OpType.normal):
        parameters, seeds = list(expr.inputs[:2]), expr.inputs[3:]
    else:
        parameters, seeds = [], expr.inputs[1:]
    args = [
        "{" + ", ".join(_output_extents(expr, values)) + "}",
        *(values.value(v) for v in parameters),
        dt.ir_name(expr.output.dtype),
        *(values.value(v) for v in seeds),
    ]
    return _two_lines(expr, values, f"{_RNG_NAMES[expr.op]}({', '.join(args)});")


# ---------------------------------------------------------------------------------------------
# Matmul and attention
# ---------------------------------------------------------------------------------------------


# How nvFuser's matmul, linear, sdpa and embedding separate arguments: aligned under the first.
_ALIGNED = ",\n            "


def _matmul(expr: Expr, values: ValuePrinter) -> str:
    a, b = (values.value(v) for v in expr.inputs)
    return f"{values.value(expr.output)}\n   = matmul({a}{_ALIGNED}{b})\n"


def _mma(expr: Expr, values: ValuePrinter) -> str:
    a, b = (values.value(v) for v in expr.inputs)
    return f"{values.value(expr.output)}\n   = mma({a},\n         {b})\n"


def _linear(expr: Expr, values: ValuePrinter) -> str:
    a, weight, *bias = (values.value(v) for v in expr.inputs)
    # nvFuser indents before ",\n" and ")" here, hence the two spaces.
    text = f"{values.value(expr.output)}\n   = linear({a}{_ALIGNED}{weight}"
    if bias:
        text += f"  ,\n          {bias[0]}"
    return text + "  )\n"


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------


EXPR_PRINTERS: dict[OpType, ExprPrinter] = {
    **by_kind(OpKind.UNARY, _unary),
    **by_kind(OpKind.BINARY, _binary),
    **by_kind(OpKind.TERNARY, _function),
    **by_kind(OpKind.REDUCTION, _reduction),
    OpType.cast: _cast,
    OpType.set: _set,
    OpType.stride_order: _set,
    OpType.segment_set: _segment_set,
    OpType.var: _generic,
    OpType.var_mean: _generic,
    OpType.welford: _welford,
    OpType.cumsum: _cumsum,
    OpType.cumprod: _cumsum,
    OpType.cummin: _cumsum,
    OpType.cummax: _cumsum,
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
    OpType.index_select: _index_select,
    OpType.select: _select,
    OpType.gather: _gather,
    OpType.take_along_axis: _gather,
    OpType.scatter: _scatter,
    OpType.index_put_accumulate: _index_put_accumulate,
    OpType.embedding_fwd: _embedding,
    OpType.full: _full,
    OpType.iota: _iota,
    **{op: _random for op in OpType if op.kind is OpKind.RANDOM},
    OpType.matmul: _matmul,
    OpType.mma: _mma,
    OpType.linear: _linear,
    OpType.grouped_mm: printer_attention.grouped_mm,
    OpType.sdpfa_fwd: printer_attention.sdpa,
    OpType.sdpfa_bwd: printer_attention.sdpa_bwd,
    OpType.triu: _generic,
    **by_kind(OpKind.SCALAR, _generic),
}

_missing = set(OpType) - set(EXPR_PRINTERS)
assert not _missing, f"ops without a printer: {sorted(op.value for op in _missing)}"
del _missing
