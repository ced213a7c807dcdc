"""The op families random fusions are drawn from, each a builder that keeps shapes valid.

A builder takes the ``Draw`` (the fusion being built, its pool of values, a seeded
``random.Random``) and returns the new ``Node`` or None when nothing in the pool fits it.
Each node knows its concrete sizes (at the inputs the fusion will run on), so every op is
valid by construction: binary operands broadcast, reshapes keep the element count, slices
stay in range. ``exact`` marks values computed without rounding (inputs, neg, abs, max,
shape ops, ...): only they feed discontinuous ops (floor, comparisons, casts to integer),
so a last-bit difference between two correct executors never becomes a jump of 1.0. For the
same reason ops that amplify a relative error (exp and its kin, a reciprocal or log near zero,
atan2 near the origin) read rounded values only through a bound (tanh first, abs + 0.5): the
fuzzer hunts wrong answers, not the conditioning of the problems it makes up.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fusecli.frontend import DataType
from fusecli.ir import dtype as dt

FLOATS = (DataType.Float, DataType.BFloat16, DataType.Half, DataType.Double)
SMOOTH_UNARY = (
    "exp", "exp2", "expm1", "tanh", "sin", "cos", "sigmoid", "silu", "erf", "erfc", "atan",
    "asinh", "sinh", "cosh",
)
GROWING_UNARY = frozenset({"exp", "exp2", "expm1", "sinh", "cosh"})
BOUNDED_DOMAIN_UNARY = ("asin", "acos", "atanh", "erfinv")  # applied to tanh(x) / 2
EXACT_UNARY = ("neg", "abs", "relu")
DISCONTINUOUS_UNARY = ("floor", "ceil", "round", "trunc", "sign", "frac")
DOMAIN_UNARY = ("sqrt", "log1p", "rsqrt", "log", "log2", "log10", "reciprocal", "lgamma")
PREDICATES = ("isfinite", "isnan", "isinf", "signbit")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
ARITHMETIC = ("add", "sub", "mul", "maximum", "minimum")
INT_BINARY = ("bitwise_and", "bitwise_or", "bitwise_xor", "gcd")
SHIFTS = ("bitwise_left_shift", "bitwise_right_shift")
INT_DIVISION = ("div", "fmod", "remainder")
BOOL_BINARY = ("logical_and", "logical_or", "bitwise_and", "bitwise_or", "bitwise_xor")


@dataclass(slots=True)
class Node:
    tensor: Any  # fusecli.frontend.state.Tensor
    sizes: tuple[int, ...]
    exact: bool = True

    @property
    def dtype(self) -> DataType:
        return self.tensor.dtype

    @property
    def kind(self) -> str:
        if self.dtype is DataType.Bool:
            return "bool"
        return "float" if dt.is_floating(self.dtype) else "int"

    @property
    def broadcast(self) -> tuple[bool, ...]:
        return tuple(d.is_broadcast for d in self.tensor.val.logical)

    @property
    def numel(self) -> int:
        return math.prod(self.sizes)


@dataclass(slots=True)
class Draw:
    rng: random.Random
    fd: Any
    pool: list[Node]
    add_input: Callable[[tuple[int, ...], DataType], Node]  # a new tensor input, mid-definition
    ops: dict[str, int] = field(default_factory=dict)  # op name -> uses
    scalar_inputs: list[Any] = field(default_factory=list)  # fd.define_scalar(dtype) inputs

    def pick(self, accept: Callable[[Node], bool] = lambda n: True) -> Node | None:
        fitting = [n for n in self.pool if accept(n)]
        if not fitting:
            return None
        recent = fitting[-4:]
        return self.rng.choice(recent if self.rng.random() < 0.7 else fitting)

    def call(self, op: str, *args: Any, **kwargs: Any) -> Any:
        self.ops[op] = self.ops.get(op, 0) + 1
        return getattr(self.fd.ops, op)(*args, **kwargs)

    def scalar(self, kind: str) -> Any:
        if kind == "int":
            return self.fd.define_scalar(self.rng.randint(1, 3), dtype=DataType.Int)
        if kind == "bool":
            return self.fd.define_scalar(self.rng.random() < 0.5, dtype=DataType.Bool)
        if self.scalar_inputs and self.rng.random() < 0.4:
            return self.rng.choice(self.scalar_inputs)
        return self.fd.define_scalar(self.rng.choice((0.5, -1.25, 2.0, 3.0)), dtype=DataType.Double)

    def scalar_value(self, value: float) -> Any:
        return self.fd.define_scalar(value, dtype=DataType.Double)


def broadcast_sizes(a: Node, b: Node) -> tuple[int, ...] | None:
    """The sizes of ``a op b``, or None when they do not broadcast (nvFuser: same rank, each
    dim equal or one side a size-1 broadcast)."""
    if len(a.sizes) != len(b.sizes):
        return None
    out = []
    for sa, ba, sb, bb in zip(a.sizes, a.broadcast, b.sizes, b.broadcast):
        if sa == sb:
            out.append(sa)
        elif ba and sa == 1:
            out.append(sb)
        elif bb and sb == 1:
            out.append(sa)
        else:
            return None
    return tuple(out)


def _partner(draw: Draw, x: Node, accept: Callable[[Node], bool] = lambda n: True):
    return draw.pick(lambda n: accept(n) and broadcast_sizes(x, n) is not None)


# -- elementwise -------------------------------------------------------------------------------


def unary(draw: Draw) -> Node | None:
    x = draw.pick()
    if x is None:
        return None
    rng = draw.rng
    if x.kind == "bool":
        op = rng.choice(("logical_not", "bitwise_not"))
        return Node(draw.call(op, x.tensor), x.sizes, x.exact)
    if x.kind == "int":
        op = rng.choice(("neg", "abs", "bitwise_not", "logical_not"))
        return Node(draw.call(op, x.tensor), x.sizes, x.exact)
    roll = rng.random()
    if roll < 0.4:
        op = rng.choice(SMOOTH_UNARY)
        operand = x.tensor
        if op in GROWING_UNARY and not x.exact:
            operand = draw.call("tanh", operand)
        return Node(draw.call(op, operand), x.sizes, False)
    if roll < 0.6:
        return Node(draw.call(rng.choice(EXACT_UNARY), x.tensor), x.sizes, x.exact)
    if roll < 0.7:  # abs first: in the domain; away from zero unless exact
        positive = draw.call("abs", x.tensor)
        if not x.exact:
            positive = draw.call("add", positive, draw.scalar_value(0.5))
        return Node(draw.call(rng.choice(DOMAIN_UNARY), positive), x.sizes, False)
    if roll < 0.75:
        inside = draw.call("mul", draw.call("tanh", x.tensor), draw.scalar_value(0.5))
        return Node(draw.call(rng.choice(BOUNDED_DOMAIN_UNARY), inside), x.sizes, False)
    if x.exact:
        op = rng.choice(DISCONTINUOUS_UNARY + PREDICATES)
        return Node(draw.call(op, x.tensor), x.sizes, True)
    return Node(draw.call("isfinite", x.tensor), x.sizes, True)


def binary(draw: Draw) -> Node | None:
    x = draw.pick()
    if x is None:
        return None
    rng = draw.rng
    y = _partner(draw, x) if rng.random() < 0.8 else None
    if y is None:  # a scalar operand, either side
        other, sizes, exact = draw.scalar(x.kind), x.sizes, x.exact
        if x.kind == "bool":
            return Node(draw.call("logical_and", x.tensor, other), sizes, exact)
        op = rng.choice(("add", "sub", "mul", "maximum", "minimum"))
        args = (x.tensor, other) if rng.random() < 0.7 else (other, x.tensor)
        return Node(draw.call(op, *args), sizes, exact and op in ("maximum", "minimum"))
    sizes = broadcast_sizes(x, y)
    exact = x.exact and y.exact
    kinds = {x.kind, y.kind}
    if exact and rng.random() < 0.25:
        return Node(draw.call(rng.choice(COMPARISONS), x.tensor, y.tensor), sizes, True)
    if kinds == {"bool"}:
        return Node(draw.call(rng.choice(BOOL_BINARY), x.tensor, y.tensor), sizes, exact)
    if kinds == {"int"}:
        roll = rng.random()
        if roll < 0.4:
            op = rng.choice(ARITHMETIC)
            return Node(draw.call(op, x.tensor, y.tensor), sizes, exact)
        if roll < 0.65:
            return Node(draw.call(rng.choice(INT_BINARY), x.tensor, y.tensor), sizes, exact)
        if roll < 0.7:
            shift = draw.fd.define_scalar(rng.randint(0, 3), dtype=DataType.Int)
            return Node(draw.call(rng.choice(SHIFTS), x.tensor, shift), sizes=x.sizes,
                        exact=x.exact)
        divisor = draw.call("add", draw.call("abs", y.tensor), draw.scalar("int"))
        return Node(draw.call(rng.choice(INT_DIVISION), x.tensor, divisor), sizes, exact)
    if "bool" in kinds and len(kinds) > 1:
        op = rng.choice(("add", "mul", "maximum"))
    else:
        op = rng.choice(ARITHMETIC + ("div", "atan2", "pow", "fmod", "remainder"))
    if op == "pow":  # a small integer power: no NaN from a negative base
        power = draw.fd.define_scalar(rng.choice((2, 3)), dtype=DataType.Int)
        return Node(draw.call("pow", x.tensor, power), x.sizes, False)
    if op in ("fmod", "remainder"):
        if not exact:  # x mod y jumps where x crosses a multiple of y: exact operands only
            op = "mul"
        else:
            divisor = draw.call("add", draw.call("abs", y.tensor), draw.scalar_value(0.5))
            return Node(draw.call(op, x.tensor, divisor), sizes, False)
    if op == "atan2" and not exact:
        op = "mul"
    if op == "div":
        if not exact:  # a divisor bounded away from zero: no cancellation-amplified error
            safe = draw.call("add", draw.call("abs", y.tensor), draw.scalar("float"))
            return Node(draw.call("div", x.tensor, safe), sizes, False)
    keeps = op in ("maximum", "minimum") or (op in ("add", "sub", "mul") and kinds == {"int"})
    return Node(draw.call(op, x.tensor, y.tensor), sizes, exact and keeps)


def ternary(draw: Draw) -> Node | None:
    rng = draw.rng
    x = draw.pick(lambda n: n.kind == "float")
    if x is None:
        return None
    roll = rng.random()
    if roll < 0.45:  # the condition from exact values: no flip on a last-bit difference
        condition = _partner(draw, x, lambda n: n.kind == "bool")
        if condition is not None:
            condition_tensor, sizes = condition.tensor, broadcast_sizes(x, condition)
        else:
            source = _partner(draw, x, lambda n: n.exact)
            if source is None:
                return None
            condition_tensor = draw.call("gt", source.tensor, draw.scalar(source.kind))
            sizes = broadcast_sizes(x, source)
        y = _partner(draw, x, lambda n: n.kind == x.kind and broadcast_sizes(
            n, Node(condition_tensor, sizes)) is not None)
        if y is None:
            result = draw.call("where", condition_tensor, x.tensor, draw.scalar("float"))
            return Node(result, sizes, x.exact)
        out = broadcast_sizes(Node(condition_tensor, sizes), y)
        return Node(draw.call("where", condition_tensor, x.tensor, y.tensor), out, False)
    if roll < 0.65:
        low = draw.fd.define_scalar(-0.5, dtype=DataType.Double)
        high = draw.fd.define_scalar(rng.choice((0.5, 1.5)), dtype=DataType.Double)
        return Node(draw.call("clamp", x.tensor, low, high), x.sizes, x.exact)
    y = _partner(draw, x, lambda n: n.kind == "float")
    if y is None:
        if not x.exact:  # threshold jumps at the threshold
            return None
        return Node(draw.call("threshold", x.tensor, draw.scalar("float"),
                              draw.scalar("float")), x.sizes, x.exact)
    sizes = broadcast_sizes(x, y)
    if roll < 0.85:
        weight = draw.fd.define_scalar(rng.choice((0.25, 0.5)), dtype=DataType.Double)
        return Node(draw.call("lerp", x.tensor, y.tensor, weight), sizes, False)
    value = draw.scalar("float")
    return Node(draw.call("addcmul", x.tensor, y.tensor, x.tensor, value), sizes, False)


def cast(draw: Draw) -> Node | None:
    rng = draw.rng
    x = draw.pick()
    if x is None:
        return None
    if x.exact and rng.random() < 0.3:
        target = rng.choice((DataType.Int, DataType.Int32, DataType.Bool))
    else:
        target = rng.choice((DataType.BFloat16, DataType.Half, DataType.Float, DataType.Double))
    exact = x.exact and (target is not DataType.BFloat16 and target is not DataType.Half)
    if target is DataType.Half and x.kind == "float" and not x.exact:
        x = Node(draw.call("tanh", x.tensor), x.sizes, False)  # in half's range
    if x.kind == "bool" or x.kind == "int":
        exact = True
    return Node(draw.call("cast", x.tensor, dtype=target), x.sizes, exact)
