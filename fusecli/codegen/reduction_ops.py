"""The reductions a kernel accumulates: identity, update and combine per op, and their passes.

A reduction runs in the first pass after every reduction its input depends on has finished
(softmax: the max in pass 1, the sum of exponentials in pass 2). var, var_mean and welford take
two passes: the sum for the mean, then the sum of squared deviations from that mean; or, with
``combined``, one: each thread's exact partial (its count, its mean, the squared deviations from
that), combined across threads by Chan's rule (``block_welford``).
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

    def update(self, emitter: Emitter, value: str, mean: str | None = None) -> str:
        """The statement adding ``value``; an m2 takes deviations from ``mean`` (default: the
        row's, ``mean_name``)."""
        if self.kind == "m2":
            deviation = f"({value} - {mean or self.mean_name})"
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


# var_mean's m2 in its mean's pass, each thread's partial combined by Chan's rule in one
# ``block_welford`` round, instead of a block sum for the mean and a second for the squared
# deviations. Off: at the heuristics' block sizes it is slower. Measured on an H200 (kernel
# alone, benchmarks/norm_variants.py), LayerNorm bf16 16384 x 8192 at 512 threads: 184.9 us
# one round, 145.5 us two (nvFuser 134 us); at 128 threads, 8 vectors each: 135.5 us one
# round, 147.8 us two. f32 2048 x 8192: 46.3 us at 1024 threads (two rounds), 40.4 us at 256
# (one). Fewer threads with one round is the faster kernel, not yet the default: it needs the
# full GPU check. The combined code is tested (tests/test_welford_combine.py).
COMBINED_VARIANCE = False


def accumulators(ctx: KernelContext, by_pass: bool = False, combined: bool | None = None):
    """Every accumulator of the segment's reductions; with ``by_pass``, a list per pass. With
    ``combined`` (default ``COMBINED_VARIANCE``), a var op's m2 is in its mean's pass (each
    thread's own partial, then Chan's rule across threads), and its outputs are ready a pass
    later, not two."""
    if combined is None:
        combined = COMBINED_VARIANCE
    ready: dict[int, int] = {}  # value uid -> first pass that may read it
    found: list[Accumulator] = []
    for expr in ctx.candidate.exprs:
        start = max((ready.get(v.uid, 0) for v in expr.tensor_inputs()), default=0)
        if expr.op.kind not in (OpKind.REDUCTION, OpKind.NORMALIZATION):
            for out in expr.outputs:
                ready[out.uid] = start
            continue
        found.extend(_for_expr(ctx, expr, start, combined))
        for out in expr.outputs:
            ready[out.uid] = start + (1 if expr.op in _SIMPLE or combined else 2)
    if not by_pass:
        return found
    last = max(a.pass_number for a in found)
    return [[a for a in found if a.pass_number == number] for number in range(last + 1)]


def _for_expr(ctx: KernelContext, expr: Expr, start: int, combined: bool,
              ) -> list[Accumulator]:
    out = expr.outputs[0]
    base = ctx.name(out).lower()
    dtype = expr.inputs[0].dtype if expr.op.kind is OpKind.NORMALIZATION else out.dtype
    if c_class(dtype) is CClass.BOOL:
        raise UnsupportedError(f"{expr.op.value} of Bool has no CUDA generator")
    if expr.op in _SIMPLE:
        return [Accumulator(expr, _SIMPLE[expr.op], f"acc_{base}", dtype, start)]
    return [
        Accumulator(expr, "mean", f"acc_{base}", dtype, start),
        Accumulator(expr, "m2", f"acc_{base}_m2", dtype, start + (0 if combined else 1)),
    ]


def finish(emitter: Emitter, accumulator: Accumulator, row: tuple[str, ...],
           averaged: bool = False) -> None:
    """Name the reduced values of ``accumulator`` (all threads of the row hold them); a mean's
    holds the row's sum, or, ``averaged``, its mean."""
    expr = accumulator.expr
    count = _count(emitter, expr)
    if accumulator.kind in _SIMPLE.values():
        out = expr.output
        value = cdtypes.rounded(out.dtype, accumulator.name)
        _publish(emitter, out, emitter.result(out, value, expr.op.value), row)
        return
    ctype = accumulator.ctype
    if accumulator.kind == "mean":
        mean = accumulator.name if averaged else f"{accumulator.name} / ({ctype}){count}"
        emitter.line(f"const {ctype} {accumulator.mean_name} = {mean};")
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


def declare_scratch(emitter: Emitter, found: list[Accumulator], threads: int) -> None:
    """Shared memory for the block reductions of rows wider than a warp: 32 values per type,
    64 where a var op's mean and m2 combine in one pass (``block_welford``), and 32 counts."""
    passes = {(a.expr.uid, a.kind): a.pass_number for a in found}
    paired = {a.ctype for a in found
              if a.kind == "m2" and passes[a.expr.uid, "mean"] == a.pass_number}
    if threads <= 32:
        return
    plain = [(a.pass_number, a.ctype) for a in found if a.kind in PAIRABLE]
    twos = {ctype for number, ctype in plain if plain.count((number, ctype)) > 1}
    for ctype in sorted({a.ctype for a in found}):  # block_reduce2 of two plain ones: 64 too
        size = 64 if ctype in paired | twos else 32
        emitter.line(f"__shared__ {ctype} scratch_{_word(ctype)}[{size}];")
    if paired:
        emitter.line("__shared__ int scratch_count[32];")


def combine(emitter: Emitter, threads: int, accumulator: Accumulator, row: tuple[str, ...],
            m2: Accumulator | None = None, count: str = "") -> None:
    """Combine ``accumulator`` across the row's ``threads`` and name its values. With ``m2``,
    ``accumulator`` holds the thread's mean of its ``count`` elements (a C int) and ``m2`` the
    squared deviations from it: one ``block_welford`` makes them the row's."""
    scratch = f"({accumulator.ctype}*)" + (
        f"scratch_{_word(accumulator.ctype)}" if threads > 32 else "nullptr")
    if m2 is None:
        if threads > 1:
            emitter.line(f"{accumulator.name} = block_reduce<{threads}>({accumulator.name}, "
                         f"{accumulator.combine}, {scratch});")
        finish(emitter, accumulator, row)
        return
    if threads > 1:
        counts = "scratch_count" if threads > 32 else "(int*)nullptr"
        emitter.line(f"block_welford<{threads}>({accumulator.name}, {m2.name}, {count}, "
                     f"{scratch}, {counts});")
    finish(emitter, accumulator, row, averaged=True)
    finish(emitter, m2, row)


PAIRABLE = ("sum", "prod", "max", "min")  # plain accumulators: combine_two takes two at once


def combine_pass(emitter: Emitter, threads: int, batch: list[Accumulator],
                 rows: dict[int, tuple[str, ...]], paired: dict[int, Accumulator],
                 count: str) -> None:
    """``combine`` each of a pass's accumulators (``rows``: each one's row index texts by its
    expr's uid; ``paired``: a mean's m2 of the same pass, by uid), two plain ones of a C type
    at once (``combine_two``)."""
    waiting: dict[str, Accumulator] = {}  # a plain one whose C type has no partner yet
    for a in batch:
        if a.kind not in PAIRABLE:
            m2 = paired.get(a.expr.uid) if a.kind == "mean" else None
            combine(emitter, threads, a, rows[a.expr.uid], m2, count)
        elif a.ctype in waiting:
            partner = waiting.pop(a.ctype)
            combine_two(emitter, threads, partner, a, (rows[partner.expr.uid], rows[a.expr.uid]))
        else:
            waiting[a.ctype] = a
    for a in waiting.values():
        combine(emitter, threads, a, rows[a.expr.uid])


def combine_two(emitter: Emitter, threads: int, first: Accumulator, second: Accumulator,
                rows: tuple[tuple[str, ...], tuple[str, ...]]) -> None:
    """``combine`` of two plain accumulators of one C type in one ``block_reduce2``: a pass
    of two sums (a norm backward's) pays one pair of barriers per row, not two."""
    assert first.ctype == second.ctype and {first.kind, second.kind} <= set(PAIRABLE)
    if threads > 1:
        scratch = f"({first.ctype}*)" + (
            f"scratch_{_word(first.ctype)}" if threads > 32 else "nullptr")
        emitter.line(f"block_reduce2<{threads}>({first.name}, {second.name}, {first.combine}, "
                     f"{second.combine}, {scratch});")
    finish(emitter, first, rows[0])
    finish(emitter, second, rows[1])


def _word(ctype: str) -> str:
    return ctype.replace(" ", "_")


def _publish(emitter: Emitter, out: TensorView, name: str, row: tuple[str, ...]) -> None:
    emitter.reduced[out.uid] = (name, row)


def _count(emitter: Emitter, expr: Expr) -> int:
    shape = emitter.ctx.shape(expr.inputs[0])
    total = 1
    for dim in expr.attr("dims"):
        total *= shape[dim]
    return total
