"""Element-by-element error bounds, carried along the float64 reference: running error analysis.

For every floating-point value of the fusion the float64 reference also carries two tensors of
the value's shape, bounds on how far a correct executor's value may be:

- ``hard``: from the exact value (the float64 reference), counting every rounding the IR asks
  for (a value held in bfloat16 is rounded to it) and every float32 rounding of the arithmetic;
- ``tight``: from eager torch's value, counting only the roundings in which two correct
  implementations may differ (float32 arithmetic, the order of a sum). A rounding to a narrower
  dtype that both make resets it to 0: two float32 values within a bfloat16 ulp round to the
  same bfloat16, unless they straddle a rounding boundary ("a flip"), which is rare. A narrow
  matmul or attention is the exception: its library kernel, picked by the operands' layout,
  may round its result differently, so its ``tight`` keeps that rounding.

How a bound moves through an expr: the expr's own rule (``rules.RULES``) is evaluated again on
an operand moved by its bound, and the change of the result is that operand's contribution
(first order ``|J| e`` for ``e >= 0``). That is exact for elementwise ops and data movement,
whose Jacobians are diagonal or 0/1; a selection such as ``minimum`` is moved both ways, since
with a tie only one direction moves its result. Where the Jacobian mixes signs across the
terms it sums, moving every operand up would cancel, so:

- matmul, linear, mma and attention move ``|operand|`` with the others at ``|other|``:
  ``|A| e_B``, the bound of a sum of products;
- ``prod``, ``var``, ``var_mean`` and ``welford`` move each element in the direction that
  raises its output (the sign of the gradient), so that its contributions add.

A float scalar operand is rounded by eager torch and by an executor alike to the dtype it is
held in, and kept in float64 here: it carries half an ulp of that dtype at its magnitude in
``hard`` (the same rounding on both sides: 0 in ``tight``). It is held in its own
dtype (the IR casts it to the one arithmetic computes in), or in the output's where that is
narrower and the op stores the scalar without arithmetic (``full``, ``pad``'s value, ``where``,
``clamp``) or computes in the output's dtype (``iota``): a Double -3.38953e38 filled into
bfloat16 is bfloat16's largest value, 1.4e31 away.

An expr's own roundings, relative to a magnitude ``|y|`` (``u(T) = eps(T) / 2``):

- data movement, selection (``max``, ``where``, ``abs``, ``floor``...) and casts' arithmetic: 0;
- float arithmetic: ``K u(float32) |y|``, or ``K u(float64) |y|`` for a float64 value.
  ``K = 4`` allows math functions within 2 ulp, a fused multiply-add rounding once where the
  reference rounds twice, and float32 constants. For a sum of terms (``add``, ``sub``,
  ``addcmul``, ``lerp``..., and matmuls) ``|y|`` is the sum of the terms' magnitudes, since
  their rounding does not shrink with a result that cancels;
- a value held in (or cast to) a dtype ``T`` narrower than its arithmetic: ``u(T) |y|`` (and
  half of ``T``'s smallest subnormal) more in ``hard``, and ``tight`` reset as above; a narrow
  linear with a bias may also round its product before adding the bias, and a narrow attention
  its probabilities (``inner_rounding``);
- a sum, scan, matmul, normalization or accumulation (``index_put_accumulate``, in its
  output's dtype) over ``n`` elements: ``K (ceil(log2 n) + sqrt(n)) u S``, where ``S`` is
  the result over ``|x|`` (``sum |x|``, ``|A| |B|``): a tree of ``log2 n`` levels over serial
  partial sums whose roundings grow like a random walk; a product of ``n`` factors
  ``K (n - 1) u |y|``; a variance also the square of its mean's error, the one second-order
  term that matters (``mean_error_squared``);
- underflow: an absolute ``K`` smallest normals over ``eps`` of the arithmetic's dtype
  (``underflow``).

Where moving an operand makes a finite result infinite or NaN (``log`` of a value that may be
0), the bound there is infinite: nothing can be said. Where the result itself is not finite the
bound is 0: an executor must produce the same NaN or infinity.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from fusecli.ir import dtype as dt
from fusecli.ir.nodes import Expr, Scalar, TensorView
from fusecli.ir.optype import OpKind, OpType
from fusecli.reference.context import OpContext
from fusecli.reference.roundings import (
    ULPS_PER_OP,
    half_ulp,
    inner_rounding,
    mean_error_squared,
    real_float,
    term_magnitude,
    underflow,
    unit_roundoff,
)

_MOVES_DATA = frozenset({
    OpKind.SET, OpKind.BROADCAST, OpKind.EXPAND, OpKind.RESHAPE, OpKind.PERMUTE,
    OpKind.SQUEEZE, OpKind.RESIZE, OpKind.INDEX, OpKind.TRIANGULAR, OpKind.SORT,
})
_SELECTS = frozenset({
    OpType.max, OpType.min, OpType.minimum, OpType.maximum, OpType.where, OpType.clamp,
    OpType.threshold, OpType.abs, OpType.neg, OpType.relu, OpType.sign, OpType.ceil,
    OpType.floor, OpType.round, OpType.trunc, OpType.real, OpType.imag, OpType.cummin,
    OpType.cummax, OpType.full,  # full: every element is its fill
})
_NO_BOUNDS = frozenset({OpKind.RANDOM, OpKind.SCALAR})
_PRODUCTS = frozenset({OpKind.MATMUL, OpKind.ATTENTION})  # |operands|
_ALIGNED = frozenset({OpType.prod, OpType.cumprod, OpType.var, OpType.var_mean,
                      OpType.welford})  # by gradient
_SUMS = frozenset({OpKind.REDUCTION, OpKind.NORMALIZATION, OpKind.SCAN, OpKind.MATMUL,
                   OpKind.ATTENTION})
# An index op that adds what it moves: each element sums its own value and the values the index
# sends to it, in the output's dtype and in any order (atomics), so two correct runs differ.
_ACCUMULATES = frozenset({OpType.index_put_accumulate})


@dataclass(frozen=True, slots=True)
class Bounds:
    """Per-element bounds of one value: from the exact value, and from eager torch's."""

    hard: torch.Tensor
    tight: torch.Tensor


UNKNOWN = "unknown"  # a value whose bounds could not be computed: nothing downstream has any


def expr_bounds(
    expr: Expr,
    ctx: OpContext,
    rule: Callable[..., object],
    operands: Sequence[object],
    results: Sequence[object],
    known: dict[int, Bounds | str],
) -> list[Bounds | str | None]:
    """The bounds of each of ``expr``'s results (None for what is not a real float tensor).

    ``operands`` and ``results`` are the float64 reference's values; ``known`` holds the bounds
    of values computed so far, by uid (a fusion input has none: its bits are the same on every
    side).
    """
    if expr.op.kind in _NO_BOUNDS or not any(real_float(r) for r in results):
        return [None] * len(results)
    if any(known.get(v.uid) is UNKNOWN for v in expr.inputs if isinstance(v, TensorView)):
        return [UNKNOWN] * len(results)
    moved = _moved_operands(expr, operands, known)
    # The rule over |operands|, once: the base a sum of products moves from, the scale of a
    # sum's rounding growth (sum |x|, |A| |B|).
    at_magnitudes = None
    sums = (expr.op.kind in _SUMS and expr.op not in _SELECTS) or expr.op in _ACCUMULATES
    if expr.op.kind in _PRODUCTS or sums:
        at_magnitudes = _evaluate(rule, ctx, [o.abs() if real_float(o) else o for o in operands])
    propagated_hard = _propagate(expr, ctx, rule, operands, results, moved, "hard", at_magnitudes)
    propagated_tight = _propagate(
        expr, ctx, rule, operands, results, moved, "tight", at_magnitudes
    )
    growth = _growth(expr, operands, results, at_magnitudes)
    # A sum of products rounds relative to |A| |B|, a sum of terms to the terms, not to |y|.
    products = at_magnitudes if expr.op.kind in _PRODUCTS or expr.op in _ACCUMULATES else None
    sum_of_terms = term_magnitude(expr.op, operands)
    bounds: list[Bounds | str | None] = []
    for index, (out, result) in enumerate(zip(expr.outputs, results, strict=True)):
        if not real_float(result) or not isinstance(out, TensorView):
            bounds.append(None)
            continue
        magnitude = result.abs()
        terms = sum_of_terms
        if products is not None and real_float(products[index]):
            terms = products[index].to(torch.float64).abs()
        if terms is not None:
            magnitude = torch.maximum(magnitude, torch.as_tensor(terms, dtype=magnitude.dtype))
        held = dt.to_torch(out.dtype)
        computed_in = torch.float64 if held == torch.float64 else torch.float32
        arithmetic = ULPS_PER_OP * unit_roundoff(computed_in)
        moves = expr.op.kind in _MOVES_DATA and expr.op not in _ACCUMULATES
        own = 0.0 if (moves or expr.op in _SELECTS or expr.op.kind is OpKind.CAST) else arithmetic
        floor = underflow(computed_in) if own else 0.0
        hard = propagated_hard[index] + own * magnitude + floor + growth[index]
        tight = propagated_tight[index] + own * magnitude + floor + growth[index]
        narrow = unit_roundoff(held) > unit_roundoff(torch.float32)
        if expr.op.kind is OpKind.CAST or (narrow and own):
            info = torch.finfo(held)
            hard = hard + unit_roundoff(held) * magnitude + info.smallest_normal * info.eps / 2
            inner = unit_roundoff(held) * inner_rounding(expr, operands, result) if index == 0 \
                else 0.0
            hard = hard + inner
            if narrow and expr.op.kind in _PRODUCTS:
                # A narrow GEMM's internal roundings depend on the library's kernel, which the
                # operands' layout picks: two correct runs may round its result differently,
                # by an ulp.
                tight = tight + unit_roundoff(held) * result.abs()
            elif narrow and expr.op not in _ACCUMULATES:
                tight = torch.zeros_like(tight)
        if expr.op in _VARIANCES and index == _VARIANCES[expr.op]:
            second_order = mean_error_squared(expr, ctx, operands, result, moved)
            hard, tight = hard + second_order, tight + second_order
        finite = torch.isfinite(result)
        bounds.append(Bounds(
            torch.where(finite, hard, 0.0).expand(result.shape),
            torch.where(finite, tight, 0.0).expand(result.shape),
        ))
    return bounds


_VARIANCES = {OpType.var: 0, OpType.var_mean: 0, OpType.welford: 1}  # the variance's output


def _moved_operands(
    expr: Expr, operands: Sequence[object], known: dict[int, Bounds]
) -> dict[int, Bounds]:
    """Operand position -> its bounds, for the real float tensor operands that have any."""
    moved = {}
    stored_in = _scalars_stored_in(expr)
    for position, (value, operand) in enumerate(zip(expr.inputs, operands)):
        if isinstance(value, Scalar) and isinstance(operand, float):
            # Rounded to the dtype it is held in on both sides, exact here (module docstring).
            held = dt.to_torch(value.dtype) if dt.is_floating(value.dtype) else torch.float64
            if stored_in is not None and unit_roundoff(stored_in) > unit_roundoff(held):
                held = stored_in
            if held != torch.float64 and math.isfinite(operand):
                exact = torch.tensor(half_ulp(operand, held), dtype=torch.float64)
                moved[position] = Bounds(exact, torch.zeros_like(exact))
            continue
        bounds = known.get(value.uid) if isinstance(value, TensorView) else None
        if bounds is not None and real_float(operand):
            moved[position] = bounds
    return moved


def _scalars_stored_in(expr: Expr) -> torch.dtype | None:
    """The floating dtype an op stores its scalar operands in without an IR cast: its
    output's, for data movement, selections and creation; None for arithmetic."""
    out = expr.outputs[0] if expr.outputs else None
    stores = expr.op.kind in _MOVES_DATA or expr.op in _SELECTS or expr.op.kind is OpKind.CREATE
    if not (stores and isinstance(out, TensorView) and dt.is_floating(out.dtype)):
        return None
    return dt.to_torch(out.dtype)


def _evaluate(rule, ctx, operands) -> tuple[object, ...]:
    results = rule(ctx, *operands)
    return results if isinstance(results, tuple) else (results,)


def _change(moved: object, base: object) -> torch.Tensor | float:
    if not (real_float(moved) and real_float(base)):
        return 0.0
    moved = moved.to(torch.float64)
    change = (moved - base).abs()
    # Moving an operand within its bound made a finite result infinite or NaN: unbounded.
    return torch.where(torch.isfinite(base) & ~torch.isfinite(moved), math.inf, change)


def _propagate(
    expr, ctx, rule, operands, results, moved, which, at_magnitudes
) -> list[torch.Tensor | float]:
    """Per result, the sum over operands of how far moving that operand by its bound moves it.
    A sum of products moves from ``at_magnitudes``, the rule over |operands|."""
    total: list[torch.Tensor | float] = [0.0] * len(results)
    products = expr.op.kind in _PRODUCTS
    base_operands = [o.abs() if products and real_float(o) else o for o in operands]
    base = at_magnitudes if products else tuple(results)
    for position, bounds in moved.items():
        step = getattr(bounds, which)
        if not bool((step != 0).any()):
            continue
        if expr.op in _ALIGNED:
            for index in range(len(results)):
                direction = _gradient_sign(rule, ctx, operands, position, index)
                shifted = list(operands)
                shifted[position] = _shifted(operands[position], step * direction)
                total[index] = total[index] + _change(
                    _evaluate(rule, ctx, shifted)[index], base[index]
                )
            continue
        # A selection with a tie (minimum(a, a)) does not move when one side moves up: try
        # both directions, and keep the larger change.
        directions = (1.0, -1.0) if expr.op in _SELECTS else (1.0,)
        changes: list[list[object]] = [[] for _ in results]
        for direction in directions:
            shifted = list(base_operands)
            shifted[position] = _shifted(base_operands[position], direction * step)
            for index, result in enumerate(_evaluate(rule, ctx, shifted)):
                changes[index].append(_change(result, base[index]))
        for index, found in enumerate(changes):
            largest = found[0]
            for other in found[1:]:
                largest = _larger(largest, other)
            total[index] = total[index] + largest
    return total


def _shifted(operand: object, step: torch.Tensor) -> object:
    """``operand`` moved by ``step``; a Python number stays a Python number for the rule."""
    if isinstance(operand, float):
        return operand + float(step)
    return operand + step


def _larger(first, second):
    if isinstance(first, torch.Tensor) or isinstance(second, torch.Tensor):
        return torch.maximum(torch.as_tensor(first), torch.as_tensor(second))
    return max(first, second)


def _gradient_sign(rule, ctx, operands, position, index) -> torch.Tensor:
    """The sign (+1 where 0) of d(sum of result ``index``)/d(operand ``position``)."""
    if not isinstance(operands[position], torch.Tensor):
        return 1.0
    with torch.enable_grad():
        leaf = operands[position].detach().clone().requires_grad_(True)
        arguments = list(operands)
        arguments[position] = leaf
        result = _evaluate(rule, ctx, arguments)[index]
        if not real_float(result) or not result.requires_grad:
            return torch.ones_like(leaf)
        (gradient,) = torch.autograd.grad(result.sum(), leaf, allow_unused=True)
    if gradient is None:
        return torch.ones_like(leaf)
    return torch.where(gradient < 0, -1.0, 1.0).to(leaf.dtype)


def _growth(expr, operands, results, at_magnitudes) -> list[torch.Tensor | float]:
    """Per result, the rounding a sum of ``n`` terms adds (module docstring); the sums are
    accumulated in float32, an accumulation in its output's dtype. ``at_magnitudes`` is the
    rule over |operands|."""
    accumulates = expr.op in _ACCUMULATES
    if (expr.op.kind not in _SUMS or expr.op in _SELECTS) and not accumulates:
        return [0.0] * len(results)  # max and min select: exact
    first = next((o for o in operands if real_float(o)), None)
    if first is None:
        return [0.0] * len(results)
    size = _terms(expr, operands, results, first)
    if size <= 1:
        return [0.0] * len(results)
    unit = ULPS_PER_OP * unit_roundoff(torch.float32)
    if accumulates:
        unit = max(unit, ULPS_PER_OP * unit_roundoff(dt.to_torch(expr.outputs[0].dtype)))
    if expr.op in (OpType.prod, OpType.cumprod):
        return [unit * (size - 1) * r.abs() if real_float(r) else 0.0 for r in results]
    factor = unit * (math.ceil(math.log2(size)) + math.sqrt(size))
    growth: list[torch.Tensor | float] = []
    for result, magnitude in zip(results, at_magnitudes):
        if not real_float(result):
            growth.append(0.0)
            continue
        scale = result.abs()
        if real_float(magnitude) and magnitude.shape == result.shape:
            scale = torch.maximum(scale, magnitude.to(torch.float64).abs())
        growth.append(factor * scale)
    return growth


def _terms(expr: Expr, operands: Sequence[object], results: Sequence[object], first) -> int:
    """How many terms each element of the result sums (at most, for an accumulation)."""
    if expr.op in _ACCUMULATES:
        rows = int(first.shape[0])
        index = operands[1].long().flatten()
        return 1 + int(torch.bincount(index % rows, minlength=1).max()) if rows else 1
    if expr.op.kind is OpKind.MATMUL:
        return int(first.shape[-1]) if first.dim() else 1
    if expr.op.kind is OpKind.ATTENTION:
        key = operands[1]
        return max(int(first.shape[-1]), int(key.shape[-2]) if key.dim() >= 2 else 1)
    if expr.op.kind is OpKind.SCAN:
        return max(first.shape, default=1)
    out = next((r for r in results if isinstance(r, torch.Tensor)), None)
    return first.numel() // max(out.numel(), 1) if out is not None else 1
