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

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import OpKind, OpType

if TYPE_CHECKING:
    from fusecli.ir.printer import ValuePrinter

ExprPrinter = Callable[[Expr, "ValuePrinter"], str]


# ---------------------------------------------------------------------------------------------
# Layouts
# ---------------------------------------------------------------------------------------------


def _is_tensor_op(expr: Expr) -> bool:
    return any(isinstance(out, TensorView) for out in expr.outputs)


def _two_lines(expr: Expr, values: ValuePrinter, rhs: str) -> str:
    """``T1...`` then ``   = rhs`` on the next line: how nvFuser prints most tensor ops."""
    return f"{values.value(expr.output)}\n   = {rhs}\n"


def _one_line(expr: Expr, values: ValuePrinter, rhs: str) -> str:
    return f"{values.value(expr.output)} = {rhs}\n"


def _assign(expr: Expr, values: ValuePrinter, rhs: str) -> str:
    return (_two_lines if _is_tensor_op(expr) else _one_line)(expr, values, rhs)


def _call(name: str, args: Sequence[str], tensor_op: bool) -> str:
    """``name(a, b)``; a tensor op starts each further argument on a new line (``\\n  , b``)."""
    separator = "\n  , " if tensor_op else ", "
    return f"{name}({separator.join(args)})"


def _output_tuple(expr: Expr, values: ValuePrinter) -> str:
    return "( " + ", ".join(values.value(v) for v in expr.outputs) + " )"


def _bool(flag: object) -> str:
    return "true" if flag else "false"


def _python_bool(flag: object) -> str:
    # argsort and topk print their flags as Python spells them.
    return "True" if flag else "False"


def _flags(flags: Sequence[bool]) -> str:
    return "{" + ", ".join(_bool(f) for f in flags) + "}"


def _attr_str(value: object) -> str:
    if isinstance(value, bool):
        return _bool(value)
    if isinstance(value, DataType):
        return dt.ir_name(value)
    if isinstance(value, tuple | list):
        return "{" + ", ".join(_attr_str(v) for v in value) + "}"
    return str(value)


def _generic(expr: Expr, values: ValuePrinter) -> str:
    """``= op( inputs..., attr = value )`` for ops nvFuser has no single expr for."""
    args = [values.value(v) for v in expr.inputs]
    args += [f"{name} = {_attr_str(value)}" for name, value in expr.attrs.items()]
    call = f"{expr.op.value}( {', '.join(args)} )"
    if len(expr.outputs) > 1:
        return f"{_output_tuple(expr, values)} = {call}\n"
    return _assign(expr, values, call)


# ---------------------------------------------------------------------------------------------
# Elementwise: unary, binary, ternary, cast
# ---------------------------------------------------------------------------------------------

_INLINE_UNARY = {OpType.neg: "-", OpType.logical_not: "!", OpType.bitwise_not: "~"}

_UNARY_NAMES = {OpType.round: "nearbyint", OpType.real: "std::real", OpType.imag: "std::imag"}

# Unary functions that never take the ``f`` suffix on Float outputs (type.cpp needFloatSuffix);
# ``sign`` is no nvFuser function at all.
_NO_FLOAT_SUFFIX = frozenset(
    {
        OpType.abs, OpType.frac, OpType.imag, OpType.silu, OpType.neg, OpType.bitwise_not,
        OpType.logical_not, OpType.real, OpType.relu, OpType.reciprocal, OpType.sigmoid,
        OpType.isfinite, OpType.isinf, OpType.isnan, OpType.isneginf, OpType.isposinf,
        OpType.isreal, OpType.sign,
    }
)

_INLINE_BINARY = {
    OpType.add: "+", OpType.sub: "-", OpType.mul: "*", OpType.div: "/", OpType.truediv: "/",
    OpType.mod: "%", OpType.bitwise_left_shift: "<<", OpType.bitwise_right_shift: ">>",
    OpType.eq: "==", OpType.ne: "!=", OpType.lt: "<", OpType.le: "<=", OpType.gt: ">",
    OpType.ge: ">=", OpType.logical_and: "&&", OpType.logical_or: "||",
    OpType.bitwise_and: "&", OpType.bitwise_or: "|", OpType.bitwise_xor: "^",
}

# nvFuser's maximum/minimum are its Max/Min, which print as fmax/fmin.
_BINARY_NAMES = {OpType.maximum: "fmax", OpType.minimum: "fmin"}

_FLOAT_SUFFIX_BINARY = frozenset({OpType.atan2, OpType.fmod})


def _unary(expr: Expr, values: ValuePrinter) -> str:
    operand = values.value(expr.inputs[0])
    inline = _INLINE_UNARY.get(expr.op)
    if inline is not None:
        return _assign(expr, values, f"{inline}{operand};")
    name = _UNARY_NAMES.get(expr.op, expr.op.value)
    if expr.output.dtype is DataType.Float and expr.op not in _NO_FLOAT_SUFFIX:
        name += "f"
    return _assign(expr, values, f"{name}({operand});")


def _binary(expr: Expr, values: ValuePrinter) -> str:
    lhs, rhs = (values.value(v) for v in expr.inputs)
    tensor_op = _is_tensor_op(expr)
    inline = _INLINE_BINARY.get(expr.op)
    if inline is not None:
        line_break = "\n  " if tensor_op else ""
        return _assign(expr, values, f"{lhs}{line_break} {inline} {rhs};")
    name = _BINARY_NAMES.get(expr.op, expr.op.value)
    if expr.output.dtype is DataType.Float and expr.op in _FLOAT_SUFFIX_BINARY:
        name += "f"
    return _assign(expr, values, _call(name, [lhs, rhs], tensor_op) + ";")


def _function(expr: Expr, values: ValuePrinter) -> str:
    """Ternary and wider elementwise ops: ``where(c\\n  , a\\n  , b);``."""
    args = [values.value(v) for v in expr.inputs]
    return _assign(expr, values, _call(expr.op.value, args, _is_tensor_op(expr)) + ";")


# Short names in nvFuser's cast functions: __to_<name>, and __<narrow>2<name> (type.cpp).
_TO_NAMES = {
    DataType.Float: "float", DataType.Double: "double", DataType.Int32: "int32",
    DataType.Int: "int64", DataType.UInt64: "uint64", DataType.Bool: "bool",
    DataType.ComplexFloat: "complex_float", DataType.ComplexDouble: "complex_double",
}
_NARROW_NAMES = {
    DataType.Half: "half", DataType.BFloat16: "bfloat", DataType.Float8_e4m3fn: "e4m3",
    DataType.Float8_e5m2: "e5m2", DataType.Float8_e8m0fnu: "e8m0", DataType.Float4_e2m1fn: "e2m1",
}
# What half and bfloat16 call the types they convert to (``__half2int``, ``__bfloat2uint``).
_FROM_HALF_NAMES = {**_TO_NAMES, DataType.Int: "int", DataType.UInt64: "uint", **_NARROW_NAMES}
_WIDE_FLOATS = {DataType.Float: "float", DataType.Double: "double"}
_FLOATS_FROM_FP8 = frozenset({DataType.Float, DataType.Double, DataType.Half, DataType.BFloat16})


def cast_function(source: DataType, target: DataType) -> str:
    """nvFuser's ``cast_func_str``: ``__bfloat2float``, ``__to_double``, ``__int2half``..."""
    if source in (DataType.Half, DataType.BFloat16) and target in _FROM_HALF_NAMES:
        return f"__{_NARROW_NAMES[source]}2{_FROM_HALF_NAMES[target]}"
    if source in _NARROW_NAMES and target in _FLOATS_FROM_FP8:
        return f"__{_NARROW_NAMES[source]}2{_FROM_HALF_NAMES[target]}"
    if target in _NARROW_NAMES and source not in _NARROW_NAMES:
        if source in _WIDE_FLOATS:
            return f"__{_WIDE_FLOATS[source]}2{_NARROW_NAMES[target]}"
        if target in (DataType.Half, DataType.BFloat16):
            if dt.is_integral(source):
                return f"__int2{_NARROW_NAMES[target]}"
            if source is DataType.Bool:
                return f"__bool2{_NARROW_NAMES[target]}"
            if dt.is_complex(source):
                return f"__real_then_2{_NARROW_NAMES[target]}"
    if target in _TO_NAMES and source not in _NARROW_NAMES:
        if dt.is_complex(source) and not dt.is_complex(target):
            return f"__real_then_to_{_TO_NAMES[target]}"
        return f"__to_{_TO_NAMES[target]}"
    # A cast nvFuser does not support (fp8 to int...): still say where it goes.
    return f"__to_{_TO_NAMES.get(target) or _NARROW_NAMES.get(target) or dt.ir_name(target)}"


def _cast(expr: Expr, values: ValuePrinter) -> str:
    operand = expr.inputs[0]
    function = cast_function(operand.dtype, expr.output.dtype)
    return _assign(expr, values, f"{function}({values.value(operand)});")


# ---------------------------------------------------------------------------------------------
# Reductions and friends
# ---------------------------------------------------------------------------------------------

_REDUCTION_OPS = {OpType.sum: "add", OpType.prod: "mul", OpType.max: "fmax", OpType.min: "fmin"}


def _extreme(dtype: DataType, highest: bool) -> bool | int | float:
    """The lowest or highest value of ``dtype``: where max and min reductions start."""
    if dtype is DataType.Bool:
        return highest
    if dt.is_integral(dtype):
        bits = dt.info(dtype).bits
        if dtype is DataType.UInt64:
            return 2**bits - 1 if highest else 0
        return 2 ** (bits - 1) - 1 if highest else -(2 ** (bits - 1))
    return math.inf if highest else -math.inf


def _reduction_init(op: OpType, dtype: DataType) -> bool | int | float:
    if op is OpType.sum:
        return 0
    if op is OpType.prod:
        return 1
    return _extreme(dtype, highest=op is OpType.min)


def _reduction(expr: Expr, values: ValuePrinter) -> str:
    arg = expr.inputs[0]
    init = values.constant(_reduction_init(expr.op, arg.dtype), arg.dtype)
    return _two_lines(
        expr, values,
        f"reduction( {values.value(arg)}, op = {_REDUCTION_OPS[expr.op]}, "
        f"initial value = {init}, allreduce = false )",
    )


def _welford(expr: Expr, values: ValuePrinter) -> str:
    avg, var_sum, count = (values.value(v) for v in expr.outputs)
    return (
        f"{avg}(Avg),\n{var_sum}(Var),\n{count}(Count)\n"
        f" = Welford ( {values.value(expr.inputs[0])}(Avg), \n  allreduce = false )\n"
    )


def _cumsum(expr: Expr, values: ValuePrinter) -> str:
    arg = expr.inputs[0]
    return (
        f"{values.value(expr.output)}\n"
        f"   = scan({values.value(arg)},\n"
        f"          dim={expr.attr('dim')},\n"
        f"          op_type=add,\n"
        f"          init={values.constant(0, arg.dtype)})\n"
    )


def _argsort(expr: Expr, values: ValuePrinter) -> str:
    return _one_line(
        expr, values,
        f"argsort( {values.value(expr.inputs[0])}, dim = {expr.attr('dim')}, "
        f"descending = {_python_bool(expr.attr('descending'))}, "
        f"stable = {_python_bool(expr.attr('stable'))} )",
    )


def _topk(expr: Expr, values: ValuePrinter) -> str:
    arg, k = (values.value(v) for v in expr.inputs)
    return (
        f"{_output_tuple(expr, values)} = topk( {arg}, {k}, dim = {expr.attr('dim')}, "
        f"largest = {_python_bool(expr.attr('largest'))}, "
        f"sorted = {_python_bool(expr.attr('sorted'))} )\n"
    )


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


def _sdpa(expr: Expr, values: ValuePrinter) -> str:
    query, key, value, *given = (values.value(v) for v in expr.inputs)
    present = [n for n in ("dropout_p", "is_causal", "scale") if expr.attr(f"has_{n}")]
    scalars = {"dropout_p": "double(0)", "is_causal": "false", **dict(zip(present, given))}
    args = [query, key, value, *(f"{n} = {scalars[n]}" for n in ("dropout_p", "is_causal"))]
    outputs = ",\n".join(values.value(v) for v in expr.outputs)
    text = f"{outputs}\n   = sdpa({_ALIGNED.join(args)}"
    if "scale" in scalars:  # with nvFuser's spaces, as in linear
        text += f"  ,\n          scale = {scalars['scale']}"
    return text + "  )\n"


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------


def _by_kind(kind: OpKind, printer: ExprPrinter) -> dict[OpType, ExprPrinter]:
    return {op: printer for op in OpType if op.kind is kind}


EXPR_PRINTERS: dict[OpType, ExprPrinter] = {
    **_by_kind(OpKind.UNARY, _unary),
    **_by_kind(OpKind.BINARY, _binary),
    **_by_kind(OpKind.TERNARY, _function),
    **_by_kind(OpKind.REDUCTION, _reduction),
    OpType.cast: _cast,
    OpType.set: _set,
    OpType.stride_order: _set,
    OpType.segment_set: _segment_set,
    OpType.var: _generic,
    OpType.var_mean: _generic,
    OpType.welford: _welford,
    OpType.cumsum: _cumsum,
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
    OpType.embedding_fwd: _embedding,
    OpType.full: _full,
    OpType.iota: _iota,
    **{op: _random for op in OpType if op.kind is OpKind.RANDOM},
    OpType.matmul: _matmul,
    OpType.mma: _mma,
    OpType.linear: _linear,
    OpType.sdpfa_fwd: _sdpa,
    OpType.triu: _generic,
    **_by_kind(OpKind.SCALAR, _generic),
}

_missing = set(OpType) - set(EXPR_PRINTERS)
assert not _missing, f"ops without a printer: {sorted(op.value for op in _missing)}"
del _missing
