"""Each fusion output's rounding budget: the ``B`` of ``fusecli.compare.analytic``, from the IR.

A walk over the exprs in order: an expr's result carries the summed budgets of its tensor
operands plus its own rounding. What an expr costs depends on what it does:

- data movement (broadcast, expand, reshape, permute, squeeze, set, resize, index, triu) moves
  values without rounding them: 0;
- a cast rounds once, correctly: ``u(target)``;
- arithmetic held in dtype ``T``: ``K * u(float32)`` for the float32 math (2-ulp functions, FMA,
  float32 constants), plus ``u(T)`` when ``T`` is narrower than float32 (the result is rounded
  to it), or ``K * u(T)`` when ``T`` is float64 (computed in float64 then).
"""

from __future__ import annotations

import torch

from fusecli.compare.analytic import ULPS_PER_OP, ErrorBudget, unit_roundoff
from fusecli.ir.dtype import to_torch
from fusecli.ir.nodes import Fusion, TensorView
from fusecli.ir.optype import OpKind

_MOVES_DATA = frozenset({
    OpKind.SET, OpKind.BROADCAST, OpKind.EXPAND, OpKind.RESHAPE, OpKind.PERMUTE,
    OpKind.SQUEEZE, OpKind.RESIZE, OpKind.INDEX, OpKind.TRIANGULAR, OpKind.SORT,
})
_FLOAT32_ROUNDOFF = unit_roundoff(torch.float32)


def _held_in(value: object) -> torch.dtype | None:
    try:
        return to_torch(value.dtype)
    except (ValueError, AttributeError, KeyError):
        return None


def expr_cost(kind: OpKind, result_dtype: torch.dtype | None) -> float:
    """One expr's rounding, relative to its result (module docstring)."""
    if result_dtype is None or kind in _MOVES_DATA:
        return 0.0
    result_roundoff = unit_roundoff(result_dtype)
    if result_roundoff == 0.0:
        return 0.0
    if kind is OpKind.CAST:
        return result_roundoff
    if result_roundoff <= _FLOAT32_ROUNDOFF:  # float32 or float64 arithmetic
        return ULPS_PER_OP * result_roundoff
    return ULPS_PER_OP * _FLOAT32_ROUNDOFF + result_roundoff


def _rounds_narrow(dtype: torch.dtype | None) -> bool:
    return dtype is not None and unit_roundoff(dtype) > _FLOAT32_ROUNDOFF


# Where a value stands against "computed in float32 from exact inputs, rounded once at the end":
_EXACT, _ROUNDED_ONCE, _ROUNDED_INSIDE = 0, 1, 2


def _status(kind: OpKind, result_dtype: torch.dtype | None, incoming: int) -> int:
    if kind in _MOVES_DATA:
        return incoming
    if kind is OpKind.CAST and not _rounds_narrow(result_dtype):
        return incoming  # widening (bf16 to float) is exact; the next op decides
    if _rounds_narrow(result_dtype):
        return _ROUNDED_INSIDE if incoming != _EXACT else _ROUNDED_ONCE
    return _ROUNDED_INSIDE if incoming != _EXACT else _EXACT


def rounding_budgets(fusion: Fusion) -> dict[int, float | None]:
    """Per visible output (by index), the summed roundings of everything it depends on.

    None where a value is rounded to a dtype narrower than float32 inside the fusion and then
    computed with (a bfloat16 matmul result fed to ``exp``): its error is amplified by the
    conditioning of what follows, which this first-order sum does not bound.
    """
    budget: dict[int, float] = {}
    status: dict[int, int] = {}
    for expr in fusion.exprs:
        operands = {v.uid: v for v in expr.inputs if isinstance(v, TensorView)}
        incoming = sum(budget.get(uid, 0.0) for uid in operands)
        incoming_status = max((status.get(uid, _EXACT) for uid in operands), default=_EXACT)
        for out in expr.outputs:
            held_in = _held_in(out)
            budget[out.uid] = incoming + expr_cost(expr.op.kind, held_in)
            status[out.uid] = _status(expr.op.kind, held_in, incoming_status)
    visible = [o for o in fusion.outputs if o.alias_input is None]
    return {
        index: None if status.get(o.value.uid, _EXACT) == _ROUNDED_INSIDE
        else budget.get(o.value.uid, 0.0)
        for index, o in enumerate(visible)
    }


def output_budgets(fusion: Fusion, reductions: dict[int, int]) -> dict[int, ErrorBudget | None]:
    """Per visible output, its ``ErrorBudget`` (None: not bounded, see ``rounding_budgets``)."""
    return {
        index: None if roundings is None else ErrorBudget(roundings, reductions.get(index, 1))
        for index, roundings in rounding_budgets(fusion).items()
    }
