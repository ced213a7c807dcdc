"""ConsecutiveCastPass: down-casts lifted above meta ops, chains of casts folded.

nvFuser's pre-segmentation pass (csrc/preseg_passes/consecutive_cast.cpp; run by
pre_segmenter.cpp after RemoveEmptyPass). It visits the casts from the last to the first and,
for each, repeats two rewrites until neither applies:

1. Swap: a cast that does not widen (input bits >= output bits) whose input is made by a meta
   op (a plain ``set``, a ``squeeze`` or a ``reshape``) used by this cast only and no fusion
   output moves above it: ``cast(meta(x))`` becomes ``meta(cast(x))``. Lifting a down-cast
   shrinks the buffers and may put it next to another cast.
2. Fold: the chain of casts above the cast (each intermediate used once and no fusion output)
   collapses. Walking down from the chain's first input (the anchor), a cast to a type that
   holds the anchor's (``isInclusiveType``) replaces it as the anchor, a cast to a type the
   anchor holds is dropped, and a cast to a type neither holds (bf16 and fp16) is kept. If the
   final type holds the anchor's, the cast reads from the first kept value (or disappears when
   that value has the final type); otherwise it reads the anchor.

So ``cast(set(cast(x: half -> float)) -> half)`` (an empty cat input dropped by RemoveEmptyPass
leaves the ``set``) becomes ``set(x)``: pointer arithmetic, which expr_eval takes.
"""

from __future__ import annotations

from dataclasses import replace

from fusecli.ir import dtype as dt
from fusecli.ir.builder import copy_domain
from fusecli.ir.nodes import Expr, Fusion, TensorView, Val
from fusecli.ir.optype import OpType

D = dt.DataType
_FLOATS_UNDER_FLOAT = {D.Float, D.Half, D.BFloat16, D.Float8_e4m3fn, D.Float8_e5m2,
                       D.Float8_e8m0fnu, D.Float4_e2m1fn}
_FP8_AND_FP4 = {D.Float8_e4m3fn, D.Float8_e5m2, D.Float4_e2m1fn}

# isInclusiveType (csrc/type.cpp): wider type -> the narrower types it holds exactly
_HOLDS: dict[D, set[D]] = {
    D.Double: _FLOATS_UNDER_FLOAT | {D.Double, D.Int32},
    D.ComplexDouble: _FLOATS_UNDER_FLOAT | {D.Double, D.Int32, D.ComplexFloat},
    D.Float: _FLOATS_UNDER_FLOAT,
    D.ComplexFloat: _FLOATS_UNDER_FLOAT,
    D.Half: set(_FP8_AND_FP4),
    D.BFloat16: _FP8_AND_FP4 | {D.Float8_e8m0fnu},
    D.Float8_e4m3fn: {D.Float4_e2m1fn},
    D.Float8_e5m2: {D.Float4_e2m1fn},
    D.Int: {D.Int32},
}

_SWAPPABLE_META = frozenset({OpType.set, OpType.squeeze, OpType.reshape})


def is_inclusive(base: D, wider: D) -> bool:
    """Whether every value of ``base`` is exactly a value of ``wider``."""
    return base == wider or base is D.Bool or base in _HOLDS.get(wider, set())


def consecutive_casts(fusion: Fusion) -> Fusion:
    """``fusion`` with down-casts swapped above meta ops and cast chains folded; ``fusion``
    itself when nothing changes."""
    state = _Rewrite(fusion)
    folded: set[int] = set()
    for original in reversed(fusion.exprs):
        if original.uid in folded or not _is_tensor_cast(original):
            continue
        expr = state.current(original)
        if expr is None:
            continue
        changed = True
        while changed:
            changed = False
            if _should_swap(state, expr):
                expr = state.swap(expr)
                changed = True
            folded_into = _fold_chain(state, expr, folded)
            if folded_into is not expr:
                expr = folded_into
                changed = True
    return state.result()


def _is_tensor_cast(expr: Expr | None) -> bool:
    return (expr is not None and expr.op is OpType.cast
            and isinstance(expr.outputs[0], TensorView))


def _should_swap(state: _Rewrite, cast: Expr) -> bool:
    source, out = cast.inputs[0], cast.outputs[0]
    if D.Int in (source.dtype, out.dtype):  # DataType::Index has no fusecli twin; Int is near
        return False
    if dt.info(source.dtype).bits < dt.info(out.dtype).bits:
        return False
    meta = state.definition(source)
    return (meta is not None and meta.op in _SWAPPABLE_META
            and not state.is_output(meta.outputs[0]) and len(state.uses(meta.outputs[0])) == 1)


def _fold_chain(state: _Rewrite, expr: Expr, folded: set[int]) -> Expr:
    """removeChainedCasts: the cast that replaces ``expr`` (``expr`` when none does)."""
    chain: list[Val] = []
    previous = state.definition(expr.inputs[0])
    while _is_tensor_cast(previous):
        between = previous.outputs[0]
        if state.is_output(between) or len(state.uses(between)) > 1:
            break
        folded.add(state.origin(previous))
        chain.insert(0, between)
        previous = state.definition(previous.inputs[0])
    if not chain:
        return expr
    anchor = state.definition(chain[0]).inputs[0]
    start = anchor
    for value in chain:
        if is_inclusive(anchor.dtype, value.dtype):
            continue
        if not is_inclusive(value.dtype, anchor.dtype):  # bf16 and fp16: keep the cast
            anchor = state.reroute(anchor, start)
            value = state.reroute(value, anchor)
            start = value
        anchor = value
    out = expr.outputs[0]
    if is_inclusive(out.dtype, anchor.dtype):
        if start.dtype == out.dtype:
            state.replace_value(out, start)
            return expr
        return state.definition(state.reroute(out, start))
    anchor = state.reroute(anchor, start)
    return state.definition(state.reroute(out, anchor))


class _Rewrite:
    """The fusion being rewritten: its exprs, outputs, and uses counted over live exprs only
    (nvFuser's uses after a replacement no longer see the dead expr)."""

    def __init__(self, fusion: Fusion) -> None:
        self.fusion = fusion
        self.exprs = list(fusion.exprs)
        self.outputs = list(fusion.outputs)
        self.changed = False
        self._origins: dict[int, int] = {}  # a rewritten expr's uid -> the original's
        self._index()

    def _index(self) -> None:
        self._definition = {o.uid: e for e in self.exprs for o in e.outputs}
        live, stack = set(), [o.value for o in self.outputs]
        while stack:
            value = stack.pop()
            expr = self._definition.get(value.uid)
            if expr is None or expr.uid in live:
                continue
            live.add(expr.uid)
            stack.extend(expr.inputs)
        self._live = live
        self._uses: dict[int, list[Expr]] = {}
        for expr in self.exprs:
            if expr.uid in live:
                for value in expr.inputs:
                    self._uses.setdefault(value.uid, []).append(expr)
        self._output_uids = {o.value.uid for o in self.outputs}

    def definition(self, value: Val) -> Expr | None:
        return self._definition.get(value.uid)

    def uses(self, value: Val) -> list[Expr]:
        return self._uses.get(value.uid, [])

    def is_output(self, value: Val) -> bool:
        return value.uid in self._output_uids

    def origin(self, expr: Expr) -> int:
        return self._origins.get(expr.uid, expr.uid)

    def current(self, original: Expr) -> Expr | None:
        """The live expr that ``original`` became, or None when it is gone."""
        for expr in self.exprs:
            if self.origin(expr) == original.uid and (
                self.uses(expr.outputs[0]) or self.is_output(expr.outputs[0])
            ):
                return expr
        return None

    def _replace_expr(self, old: Expr, new: Expr) -> None:
        self._origins[new.uid] = self.origin(old)
        self.exprs[self.exprs.index(old)] = new
        self.changed = True
        self._index()

    def reroute(self, cast_output: Val, new_input: Val) -> Val:
        """replaceInputInCast: the cast making ``cast_output`` reads ``new_input`` instead."""
        cast = self.definition(cast_output)
        if cast_output is new_input or cast.inputs[0] is new_input:
            return cast_output
        rerouted = Expr(cast.op, (new_input, *cast.inputs[1:]), cast.outputs, cast.attrs)
        self._replace_expr(cast, rerouted)
        return cast_output

    def replace_value(self, old: Val, new: Val) -> None:
        """Every use of ``old``, fusion outputs included, reads ``new``."""
        for position, expr in enumerate(self.exprs):
            if any(v is old for v in expr.inputs):
                inputs = tuple(new if v is old else v for v in expr.inputs)
                self.exprs[position] = Expr(expr.op, inputs, expr.outputs, expr.attrs)
                self._origins[self.exprs[position].uid] = self.origin(expr)
        self.outputs = [replace(o, value=new) if o.value is old else o for o in self.outputs]
        self.changed = True
        self._index()

    def swap(self, cast: Expr) -> Expr:
        """``cast(meta(x))`` as ``meta(cast(x))``; returns the new cast."""
        meta = self.definition(cast.inputs[0])
        source, out = meta.inputs[0], cast.outputs[0]
        lifted = TensorView(out.dtype, copy_domain(source.logical))
        new_cast = Expr(OpType.cast, (source,), (lifted,), cast.attrs)
        new_out = TensorView(out.dtype, copy_domain(meta.outputs[0].domain, keep_rfactor=True))
        new_meta = Expr(meta.op, (lifted, *meta.inputs[1:]), (new_out,), meta.attrs)
        position = self.exprs.index(cast)
        self.exprs[position:position] = [new_cast, new_meta]
        self._origins[new_cast.uid] = self.origin(cast)
        self.replace_value(out, new_out)
        return new_cast

    def result(self) -> Fusion:
        if not self.changed:
            return self.fusion
        # the exprs a rewrite left without a use go: later passes count uses
        live = tuple(e for e in self.exprs if e.uid in self._live)
        return Fusion(inputs=self.fusion.inputs, outputs=tuple(self.outputs), exprs=live)

