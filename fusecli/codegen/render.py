"""Rendering as data: each op's C expression, per class of compute dtype.

``C_OPS`` maps an ``OpType`` to a function from the operands' C expressions and the compute
dtype (that of operand 0: the IR has already cast operands to it) to the C expression of the
result. Ops that are one CUDA math function take their entry from the ``cuda`` name of their
record (``fusecli.ir.opdefs``); the others are written here, most in one line, the few that are
not calling a prelude helper. An op or dtype without an entry raises ``UnsupportedError`` naming
both, and the segment falls back to ATen; ``codegen.support.UNSUPPORTED`` lists the ops left out
on purpose.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from fusecli.codegen import cdtypes
from fusecli.codegen.kernel import UnsupportedError
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.ir.optype import OpType

Render = Callable[[Sequence[str], DataType], str]


class CClass(enum.Enum):
    """How a dtype computes in C: single floats (half and bfloat16 included), doubles, ints."""

    FLOAT = "float"
    DOUBLE = "double"
    INT = "int"
    BOOL = "bool"


def c_class(dtype: DataType) -> CClass:
    if dtype is DataType.Double:
        return CClass.DOUBLE
    if dtype in (DataType.Float, DataType.Half, DataType.BFloat16):
        return CClass.FLOAT
    if dtype in (DataType.Int, DataType.Int32, DataType.UInt64):
        return CClass.INT
    if dtype is DataType.Bool:
        return CClass.BOOL
    raise UnsupportedError(f"the CUDA renderer has no arithmetic for {dtype.name}")


def _per_class(op: str, **forms: Callable[..., str]) -> Render:
    """A renderer choosing its form by the compute dtype's class (``float=``, ``int=``...)."""

    def render(args: Sequence[str], dtype: DataType) -> str:
        form = forms.get(c_class(dtype).value)
        if form is None:
            raise UnsupportedError(f"the CUDA renderer has no {op} for {dtype.name}")
        return form(*args)

    return render


def _math(name: str, op: str | None = None) -> Render:
    """A CUDA math function: ``expf`` for floats, ``exp`` for doubles."""
    return _per_class(
        op or name, float=lambda *a: f"{name}f({', '.join(a)})",
        double=lambda *a: f"{name}({', '.join(a)})",
    )


def _numeric(op: str, form: Callable[..., str]) -> Render:
    """The same C text for every numeric class; booleans too where C's promotion agrees."""
    return _per_class(op, float=form, double=form, int=form, bool=form)


def _one(dtype: DataType) -> str:
    return "1.0f" if c_class(dtype) is CClass.FLOAT else "1.0"


def _float_only(op: str, form: Callable[[str, str], str]) -> Render:
    """``form(x, one)`` for floats and doubles, with ``one`` the literal 1 of that type."""

    def render(args: Sequence[str], dtype: DataType) -> str:
        if c_class(dtype) not in (CClass.FLOAT, CClass.DOUBLE):
            raise UnsupportedError(f"the CUDA renderer has no {op} for {dtype.name}")
        return form(*args, _one(dtype))

    return render


def _zero_below(args: Sequence[str], dtype: DataType) -> str:
    (x,) = args
    zero = {CClass.FLOAT: "0.0f", CClass.DOUBLE: "0.0", CClass.INT: "0"}.get(c_class(dtype))
    if zero is None:
        raise UnsupportedError(f"the CUDA renderer has no relu for {dtype.name}")
    return f"({x} < {zero} ? {zero} : {x})"


def _sign(args: Sequence[str], dtype: DataType) -> str:
    # torch.sign on both devices: (0 < x) - (x < 0), so NaN and -0 give +0.
    (x,) = args
    if c_class(dtype) is CClass.INT:
        return f"(({x} > 0) - ({x} < 0))"
    register = cdtypes.register_type(dtype)
    return f"({register})(({x} > 0) - ({x} < 0))"


def _signbit(args: Sequence[str], dtype: DataType) -> str:
    (x,) = args
    if c_class(dtype) in (CClass.FLOAT, CClass.DOUBLE):
        return f"signbit({x})"
    return f"({x} < 0)" if dtype in (DataType.Int, DataType.Int32) else "false"


def _float_test(function: str, otherwise: str) -> Render:
    """A predicate on floats (``isnan``...); a constant answer for integers and booleans."""

    def render(args: Sequence[str], dtype: DataType) -> str:
        (x,) = args
        if c_class(dtype) in (CClass.FLOAT, CClass.DOUBLE):
            return function.format(x=x)
        return otherwise

    return render


def _pow(args: Sequence[str], dtype: DataType) -> str:
    a, b = args
    return {
        CClass.FLOAT: f"powf({a}, {b})",
        CClass.DOUBLE: f"pow({a}, {b})",
        CClass.INT: f"int_pow_({a}, {b})",
    }.get(c_class(dtype)) or _unsupported("pow", dtype)


def _lerp(args: Sequence[str], dtype: DataType) -> str:
    start, end, weight = args
    if c_class(dtype) is CClass.INT:
        return f"({start} + {weight} * ({end} - {start}))"
    return f"lerp_({start}, {end}, {weight})"


def _unsupported(op: str, dtype: DataType) -> str:
    raise UnsupportedError(f"the CUDA renderer has no {op} for {dtype.name}")


C_OPS: dict[OpType, Render] = {
    # ops that are one CUDA math function, named in their records (``expf``/``exp``)
    **{op: _math(op.definition.cuda, op.value) for op in OpType if op.definition.cuda},
    OpType.reciprocal: _float_only("reciprocal", lambda x, one: f"({one} / {x})"),
    OpType.sigmoid: _float_only(
        "sigmoid", lambda x, one: f"({one} / ({one} + exp{_f(one)}(-{x})))"
    ),
    OpType.silu: _float_only("silu", lambda x, one: f"({x} / ({one} + exp{_f(one)}(-{x})))"),
    OpType.frac: _float_only("frac", lambda x, one: f"({x} - trunc{_f(one)}({x}))"),
    OpType.neg: _per_class("neg", float=lambda x: f"(-{x})", double=lambda x: f"(-{x})",
                           int=lambda x: f"(-{x})"),
    OpType.sign: _sign,
    OpType.abs: _per_class(
        "abs", float=lambda x: f"fabsf({x})", double=lambda x: f"fabs({x})",
        int=lambda x: f"({x} < 0 ? -{x} : {x})", bool=lambda x: x,
    ),
    OpType.relu: _zero_below,
    OpType.bitwise_not: _per_class("bitwise_not", int=lambda x: f"(~{x})",
                                   bool=lambda x: f"(!{x})"),
    OpType.logical_not: _numeric("logical_not", lambda x: f"(!{x})"),
    OpType.isfinite: _float_test("isfinite({x})", "true"),
    OpType.isinf: _float_test("isinf({x})", "false"),
    OpType.isnan: _float_test("isnan({x})", "false"),
    OpType.isneginf: _float_test("(isinf({x}) && {x} < 0)", "false"),
    OpType.isposinf: _float_test("(isinf({x}) && {x} > 0)", "false"),
    OpType.isreal: _numeric("isreal", lambda x: "true"),
    OpType.signbit: _signbit,
    # binary
    OpType.add: _numeric("add", lambda a, b: f"({a} + {b})"),
    OpType.sub: _per_class(
        "sub", float=lambda a, b: f"({a} - {b})", double=lambda a, b: f"({a} - {b})",
        int=lambda a, b: f"({a} - {b})", bool=lambda a, b: f"({a} != {b})",
    ),
    OpType.mul: _numeric("mul", lambda a, b: f"({a} * {b})"),
    OpType.div: _per_class(
        "div", float=lambda a, b: f"({a} / {b})", double=lambda a, b: f"({a} / {b})",
        int=lambda a, b: f"({a} / {b})",  # C truncates, as nvFuser's integer div does
    ),
    OpType.truediv: _per_class(
        "truediv", float=lambda a, b: f"({a} / {b})", double=lambda a, b: f"({a} / {b})"
    ),
    OpType.mod: _per_class(
        "mod", float=lambda a, b: f"fmodf({a}, {b})", double=lambda a, b: f"fmod({a}, {b})",
        int=lambda a, b: f"({a} % {b})",
    ),
    OpType.fmod: _per_class(
        "fmod", float=lambda a, b: f"fmodf({a}, {b})", double=lambda a, b: f"fmod({a}, {b})",
        int=lambda a, b: f"({a} % {b})",
    ),
    OpType.remainder: _per_class(
        "remainder", float=lambda a, b: f"remainder_({a}, {b})",
        double=lambda a, b: f"remainder_({a}, {b})", int=lambda a, b: f"remainder_({a}, {b})",
    ),
    OpType.pow: _pow,
    OpType.minimum: _numeric("minimum", lambda a, b: f"minimum_({a}, {b})"),
    OpType.maximum: _numeric("maximum", lambda a, b: f"maximum_({a}, {b})"),
    OpType.eq: _numeric("eq", lambda a, b: f"({a} == {b})"),
    OpType.ne: _numeric("ne", lambda a, b: f"({a} != {b})"),
    OpType.lt: _numeric("lt", lambda a, b: f"({a} < {b})"),
    OpType.le: _numeric("le", lambda a, b: f"({a} <= {b})"),
    OpType.gt: _numeric("gt", lambda a, b: f"({a} > {b})"),
    OpType.ge: _numeric("ge", lambda a, b: f"({a} >= {b})"),
    OpType.logical_and: _numeric("logical_and", lambda a, b: f"({a} && {b})"),
    OpType.logical_or: _numeric("logical_or", lambda a, b: f"({a} || {b})"),
    OpType.bitwise_and: _per_class("bitwise_and", int=lambda a, b: f"({a} & {b})",
                                   bool=lambda a, b: f"({a} & {b})"),
    OpType.bitwise_or: _per_class("bitwise_or", int=lambda a, b: f"({a} | {b})",
                                  bool=lambda a, b: f"({a} | {b})"),
    OpType.bitwise_xor: _per_class("bitwise_xor", int=lambda a, b: f"({a} ^ {b})",
                                   bool=lambda a, b: f"({a} ^ {b})"),
    OpType.bitwise_left_shift: _per_class("bitwise_left_shift",
                                          int=lambda a, b: f"shift_left_({a}, {b})"),
    OpType.bitwise_right_shift: _per_class("bitwise_right_shift",
                                           int=lambda a, b: f"shift_right_({a}, {b})"),
    OpType.logical_right_shift: _per_class("logical_right_shift",
                                           int=lambda a, b: f"logical_shift_right_({a}, {b})"),
    OpType.gcd: _per_class("gcd", int=lambda a, b: f"gcd_({a}, {b})"),
    # ternary (where's operand 0 is the Bool condition: see ``render``)
    OpType.where: lambda args, dtype: f"({args[0]} ? {args[1]} : {args[2]})",
    OpType.lerp: _lerp,
    OpType.clamp: _numeric("clamp", lambda x, lo, hi: f"minimum_(maximum_({x}, {lo}), {hi})"),
    OpType.threshold: _numeric("threshold", lambda x, t, v: f"({x} <= {t} ? {v} : {x})"),
    # torch's order: (value * b) * c, so that inf * tiny * tiny is inf, not inf * 0 = NaN
    OpType.addcmul: _numeric("addcmul", lambda a, b, c, v: f"({a} + {v} * {b} * {c})"),
    OpType.add_alpha: _numeric("add_alpha", lambda a, b, alpha: f"({a} + {alpha} * {b})"),
    OpType.sub_alpha: _numeric("sub_alpha", lambda a, b, alpha: f"({a} - {alpha} * {b})"),
}


def _f(one: str) -> str:
    """The float-function suffix that goes with the literal ``one``: ``expf`` vs ``exp``."""
    return "f" if one.endswith("f") else ""


def render(op: OpType, args: Sequence[str], dtype: DataType) -> str:
    """The C expression of ``op`` over ``args``, computed in ``dtype``."""
    entry = C_OPS.get(op)
    if entry is None:
        raise UnsupportedError(f"the CUDA renderer has no entry for {op.value} ({dtype.name})")
    return entry(args, dtype)


def injected_fault(value: str, dtype: DataType) -> str:
    """``value`` made wrong as ``FUSECLI_INJECT_FAULT`` asks (``runtime.faults.corrupt``'s
    rule, in C: the prelude's ``injected_fault_``), in ``dtype``'s register type."""
    register = cdtypes.register_type(dtype)
    return f"injected_fault_(({register})({value}))"


def cast(value: str, source: DataType, target: DataType) -> str:
    """``value`` (a register value of ``source``) converted to ``target``'s register type."""
    if source is target:
        return value
    c_class(source)
    if target is DataType.Bool:
        return f"({value} != 0)"
    converted = f"({cdtypes.register_type(target)})({value})"
    if cdtypes.register_type(source) == cdtypes.register_type(target):
        converted = value
    if dt.is_reduced_float(target):
        return cdtypes.rounded(target, converted)
    return converted
