"""The reductions a kernel accumulates: identity, update and combine per op, and their passes.

A reduction runs in the first pass after every reduction its input depends on has finished
(softmax: the max in pass 1, the sum of exponentials in pass 2). var, var_mean and welford take
two passes: the sum for the mean, then the sum of squared deviations from that mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fusecli.codegen import cdtypes
from fusecli.codegen.kernel import UnsupportedError
from fusecli.codegen.render import CClass, c_class
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import OpKind, OpType

if TYPE_CHECKING:
    from fusecli.codegen.context import KernelContext
    from fusecli.codegen.emitter import Emitter

# op -> (identity per class, C combine of a and b)
_FLOAT_INF = {CClass.FLOAT: "__int_as_float(0x7f800000)",
              CClass.DOUBLE: "__longlong_as_double(0x7ff0000000000000LL)"}
_INT_LIMITS = {
    DataType.Int: ("(-9223372036854775807LL - 1)", "9223372036854775807LL"),
    DataType.Int32: ("(-2147483647 - 1)", "2147483647"),
    DataType.UInt64: ("0ULL", "18446744073709551615ULL"),
}


@dataclass(frozen=True, slots=True)
class Accumulator:
    expr: Expr
    kind: str  # sum, prod, max, min; mean (first pass of var ops), m2 (second pass)
    name: str
    dtype: DataType  # the accumulation's dtype (the reduction output's)
    pass_number: int

    @property
    def ctype(self) -> str:
        return cdtypes.register_type(self.dtype)

    @property
    def identity(self) -> str:
        cls = c_class(self.dtype)
        if self.kind in ("sum", "mean", "m2"):
            return cdtypes.literal(0, self.dtype)
        if self.kind == "prod":
            return cdtypes.literal(1, self.dtype)
        if cls in _FLOAT_INF:
            return ("-" if self.kind == "max" else "") + _FLOAT_INF[cls]
        lowest, highest = _INT_LIMITS[self.dtype]
        return lowest if self.kind == "max" else highest

    @property
    def combine(self) -> str:
        operation = {"prod": "a * b", "max": "maximum_(a, b)", "min": "minimum_(a, b)"}
        body = operation.get(self.kind, "a + b")
        return f"[]({self.ctype} a, {self.ctype} b) {{ return {body}; }}"

    @property
    def mean_name(self) -> str:
        return f"{self.name.removeprefix('acc_').removesuffix('_m2')}_mean"

    def update(self, emitter: Emitter, value: str) -> str:
        if self.kind == "m2":
            deviation = f"({value} - {self.mean_name})"
            return f"{self.name} += {deviation} * {deviation};"
        if self.kind in ("sum", "mean"):
            return f"{self.name} += {value};"
        if self.kind == "prod":
            return f"{self.name} *= {value};"
        return f"{self.name} = {'maximum_' if self.kind == 'max' else 'minimum_'}" \
               f"({self.name}, {value});"

    def describe(self, ctx: KernelContext) -> str:
        source = ctx.name(self.expr.inputs[0])
        what = {"mean": "sum for the mean of", "m2": "squared deviations of"}
        return f"{what.get(self.kind, self.kind)} {source}"


_SIMPLE = {OpType.sum: "sum", OpType.prod: "prod", OpType.max: "max", OpType.min: "min"}


def accumulators(ctx: KernelContext, by_pass: bool = False):
    """Every accumulator of the segment's reductions; with ``by_pass``, a list per pass."""
    ready: dict[int, int] = {}  # value uid -> first pass that may read it
    found: list[Accumulator] = []
    for expr in ctx.candidate.exprs:
        start = max((ready.get(v.uid, 0) for v in expr.tensor_inputs()), default=0)
        if expr.op.kind not in (OpKind.REDUCTION, OpKind.NORMALIZATION):
            for out in expr.outputs:
                ready[out.uid] = start
            continue
        found.extend(_for_expr(ctx, expr, start))
        for out in expr.outputs:
            ready[out.uid] = start + (1 if expr.op in _SIMPLE else 2)
    if not by_pass:
        return found
    last = max(a.pass_number for a in found)
    return [[a for a in found if a.pass_number == number] for number in range(last + 1)]


def _for_expr(ctx: KernelContext, expr: Expr, start: int) -> list[Accumulator]:
    out = expr.outputs[0]
    base = ctx.name(out).lower()
    dtype = expr.inputs[0].dtype if expr.op.kind is OpKind.NORMALIZATION else out.dtype
    if c_class(dtype) is CClass.BOOL:
        raise UnsupportedError(f"{expr.op.value} of Bool has no CUDA generator")
    if expr.op in _SIMPLE:
        return [Accumulator(expr, _SIMPLE[expr.op], f"acc_{base}", dtype, start)]
    return [
        Accumulator(expr, "mean", f"acc_{base}", dtype, start),
        Accumulator(expr, "m2", f"acc_{base}_m2", dtype, start + 1),
    ]


def finish(emitter: Emitter, accumulator: Accumulator, row: tuple[str, ...]) -> None:
    """Name the reduced values of ``accumulator`` (all threads of the row hold them)."""
    expr = accumulator.expr
    count = _count(emitter, expr)
    if accumulator.kind in _SIMPLE.values():
        out = expr.output
        value = cdtypes.rounded(out.dtype, accumulator.name)
        _publish(emitter, out, emitter.result(out, value, expr.op.value), row)
        return
    ctype = accumulator.ctype
    if accumulator.kind == "mean":
        emitter.line(f"const {ctype} {accumulator.mean_name} = "
                     f"{accumulator.name} / ({ctype}){count};")
        mean_out = expr.outputs[0] if expr.op is OpType.welford else expr.outputs[-1]
        if expr.op is not OpType.var:
            _publish(emitter, mean_out, accumulator.mean_name, row)
        return
    if expr.op is OpType.welford:
        _publish(emitter, expr.outputs[1], accumulator.name, row)
        _publish(emitter, expr.outputs[2], cdtypes.literal(count, DataType.Int), row)
        return
    # torch's rule: the degrees of freedom are max(0, count - correction). A single element
    # deviates from its mean by exactly 0 (the kernel's recomputed value may differ from the
    # one it summed by a contracted multiply-add: say 0, as the math does).
    divisor = max(0, count - int(expr.attr("correction")))
    numerator = f"({ctype})0" if count == 1 else accumulator.name
    variance = emitter.result(expr.outputs[0], f"{numerator} / ({ctype}){divisor}",
                              "variance")
    _publish(emitter, expr.outputs[0], variance, row)


def _publish(emitter: Emitter, out: TensorView, name: str, row: tuple[str, ...]) -> None:
    emitter.reduced[out.uid] = (name, row)


def _count(emitter: Emitter, expr: Expr) -> int:
    shape = emitter.ctx.shape(expr.inputs[0])
    total = 1
    for dim in expr.attr("dims"):
        total *= shape[dim]
    return total
