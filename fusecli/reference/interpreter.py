"""The reference interpreter: a fusion evaluated op by op in eager torch.

In the style of JAX's ``eval_jaxpr``: an environment from value uid to value, a loop over the
exprs in order, and a table lookup from ``OpType`` to a small rule (``rules.RULES``). The
table shares nothing with the executors' (DESIGN.md: a wrong table would otherwise agree with
itself); it is the independent answer every output is diffed against.

The environment holds tensors for TensorViews and Python numbers for Scalars; a Vector is read
as the list of its elements' ints. After every expr, each result is converted to its output's IR
dtype and its rank and static sizes are checked against the IR, so a rule cannot silently change
what the fusion means.

In float64 mode every floating-point value (complex: complex128) is held in float64 instead,
inputs and casts included, and the outputs stay float64: a higher-precision answer to settle
which of an executor and eager torch is closer. Integer and boolean values are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from fusecli.errors import FusecliError
from fusecli.ir import dtype as dt
from fusecli.ir.nodes import Expr, Fusion, Scalar, TensorView, Val, Vector, flatten_inputs
from fusecli.ir.optype import OpKind
from fusecli.reference import bounds as error_bounds
from fusecli.reference import promotion
from fusecli.reference.context import OpContext, compute_dtype, python_scalar, with_stride_order
from fusecli.reference.rules import RULES

Number = bool | int | float | complex


class ReferenceError(FusecliError):  # shadows the builtin: the name callers import
    """An expr the reference cannot evaluate; the message names the expr and the op.

    A fusion that fails here fails in eager torch too (a reshape to the wrong size, an index
    out of range), or asks for something that cannot be reproduced (dropout): exit code 3.
    """

    exit_code = 3

    def __init__(self, message: str, position: int | None = None, op: str | None = None):
        super().__init__(message)
        self.position = position
        self.op = op


class ReferenceInputError(ReferenceError):
    """The inputs do not fit the fusion (count, kind, dtype, rank or static size): exit code 2."""

    exit_code = 2


@dataclass(slots=True)
class ReferenceResult:
    outputs: list[torch.Tensor | Number]  # fusion.outputs order, aliased outputs left out
    values: dict[int, object] = field(default_factory=dict)  # uid -> value, if kept
    float64: bool = False
    # With ``bounds``: per output in ``outputs``, its ``bounds.Bounds`` (error analysis), None
    # for a value that is not a real float tensor, ``bounds.UNKNOWN`` where they failed.
    bounds: list[object] | None = None


def run_reference(
    fusion: Fusion,
    inputs: Sequence[object],
    *,
    float64: bool = False,
    seed: int = 0,
    keep_intermediates: bool = False,
    device: torch.device | str | None = None,
    bounds: bool = False,
) -> ReferenceResult:
    """Evaluate ``fusion`` on ``inputs`` (tensors, and numbers or 0-dim tensors for scalars).

    Outputs aliased to an input are written into that input in place, as nvFuser does, and
    left out of ``outputs``; a caller evaluating the same inputs twice must pass clones.
    ``seed`` seeds the random exprs that have no seed of their own. ``device`` (default: that
    of the first tensor input, else the CPU) is where inputs are moved and tensors created.
    ``bounds`` (float64 mode only) also carries each value's error bounds (``bounds``).
    """
    device = _pick_device(inputs, device)
    env = _bind_inputs(fusion, inputs, float64, device)
    random_offsets = _random_offsets(fusion)
    known: dict[int, object] | None = {} if bounds and float64 else None
    for position, expr in enumerate(fusion.exprs):
        ctx = OpContext(expr, float64, device, seed, random_offsets.get(expr.uid, 0))
        results = _evaluate(position, expr, ctx, env)
        if known is not None:
            _carry_bounds(expr, ctx, env, results, known)
        for out, value in zip(expr.outputs, results):
            env[out.uid] = value
    outputs = _write_outputs(fusion, inputs, env, float64)
    carried = None
    if known is not None:
        carried = [known.get(o.value.uid) for o in fusion.outputs if o.alias_input is None]
    return ReferenceResult(outputs, env if keep_intermediates else {}, float64, carried)


def _carry_bounds(
    expr: Expr, ctx: OpContext, env: dict[int, object], results: list[object],
    known: dict[int, object],
) -> None:
    """Each result's error bounds (``bounds.expr_bounds``); UNKNOWN where they cannot be had
    (a rule that cannot be re-evaluated or differentiated), which only loosens the check."""
    try:
        operands = [_read(env, value, ctx.float64) for value in expr.inputs]
        carried = error_bounds.expr_bounds(expr, ctx, RULES[expr.op], operands, results, known)
    except Exception:  # any failure of the analysis is "no bound" (looser), never an error
        carried = [error_bounds.UNKNOWN] * len(expr.outputs)
    for out, value in zip(expr.outputs, carried):
        if value is not None:
            known[out.uid] = value


def _evaluate(position: int, expr: Expr, ctx: OpContext, env: dict[int, object]) -> list[object]:
    where = f"reference: expr {position} (fd.ops.{expr.op.value})"
    rule = RULES.get(expr.op)
    if rule is None:
        raise ReferenceError(
            f"{where}: the reference has no rule for {expr.op.value}", position, expr.op.value
        )
    try:
        operands = [_read(env, value, ctx.float64) for value in expr.inputs]
        results = rule(ctx, *operands)
        if len(expr.outputs) == 1:
            results = (results,)
        own = _own_dtype(expr, operands, ctx.float64)
        return [
            _conform(out, value, ctx.float64, own)
            for out, value in zip(expr.outputs, results, strict=True)
        ]
    except Exception as error:  # torch raises RuntimeError, IndexError, ValueError, ...
        detail = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ReferenceError(f"{where}: {detail}", position, expr.op.value) from error


def _read(env: dict[int, object], value: Val, float64: bool) -> object:
    """A value as rules receive it: tensor, Python number, or (for a Vector) a list of ints."""
    if isinstance(value, Vector):
        return [int(_read(env, element, float64)) for element in value.elements]
    if isinstance(value, Scalar) and value.is_constant:
        return python_scalar(value.value, compute_dtype(value.dtype, float64))
    if value.uid not in env:
        raise ValueError(f"{value!r} is used before it is defined")
    return env[value.uid]


def _own_dtype(expr: Expr, operands: list[object], float64: bool) -> torch.dtype | None:
    """An elementwise result's dtype by the reference's own promotion table, from the dtypes
    of the operands the reference holds: not the IR's, so a wrong IR rule shows as a dtype
    mismatch instead of agreeing with itself. None for ops the table does not cover."""
    if float64 or len(expr.outputs) != 1 or expr.op.value not in promotion.CONFIG:
        return None
    args = []
    for value, operand in zip(expr.inputs, operands):
        if isinstance(operand, torch.Tensor):
            args.append(promotion.Arg(operand.dtype, True, operand.dim()))
        elif isinstance(value, TensorView | Scalar):
            args.append(promotion.Arg(compute_dtype(value.dtype, False), False))
    return promotion.output_dtype(expr.op.value, args) if args else None


def _conform(out: Val, value: object, float64: bool, own: torch.dtype | None = None) -> object:
    """``value`` in the dtype of ``out`` (the reference's ``own`` where it has one, else the
    IR's), checked against its rank and static sizes."""
    dtype = own if own is not None and isinstance(out, TensorView) else compute_dtype(
        out.dtype, float64
    )
    if isinstance(out, Scalar):
        return python_scalar(value, dtype)
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"the rule returned {type(value).__name__} for a tensor output")
    _check_shape(out, value, "computed a tensor")
    return value if value.dtype == dtype else value.to(dtype)


def _check_shape(tensor_view: TensorView, value: torch.Tensor, what: str) -> None:
    expected = [extent if isinstance(extent, int) else "?" for extent in tensor_view.shape]
    fits = value.dim() == len(expected) and all(
        e == "?" or e == size for e, size in zip(expected, value.shape)
    )
    if not fits:
        raise ValueError(
            f"{what} of shape {list(value.shape)}, the fusion defines "
            f"[{', '.join(str(e) for e in expected)}]"
        )


# -- inputs ------------------------------------------------------------------------------------


def _pick_device(inputs: Sequence[object], device: torch.device | str | None) -> torch.device:
    if device is not None:
        return torch.device(device)
    for value in inputs:
        if isinstance(value, torch.Tensor) and value.dim() > 0:
            return value.device
    return torch.device("cpu")


def _bind_inputs(
    fusion: Fusion, inputs: Sequence[object], float64: bool, device: torch.device
) -> dict[int, object]:
    inputs = flatten_inputs(inputs)  # a define_vector(n) input is given as a list of n values
    if len(inputs) != len(fusion.inputs):
        raise ReferenceInputError(
            f"reference: the fusion has {len(fusion.inputs)} inputs, got {len(inputs)}"
        )
    env: dict[int, object] = {}
    for index, (val, value) in enumerate(zip(fusion.inputs, inputs)):
        try:
            if isinstance(val, TensorView):
                env[val.uid] = _bind_tensor(val, value, float64, device)
            else:
                env[val.uid] = python_scalar(value, compute_dtype(val.dtype, float64))
        except (TypeError, ValueError, RuntimeError) as error:
            raise ReferenceInputError(f"reference: input {index}: {error}") from error
    return env


def _bind_tensor(
    val: TensorView, value: object, float64: bool, device: torch.device
) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"expected a tensor, got {type(value).__name__}")
    expected = dt.to_torch(val.dtype)
    if value.dtype != expected:
        raise TypeError(
            f"expected a {str(expected).removeprefix('torch.')} tensor, "
            f"got {str(value.dtype).removeprefix('torch.')}"
        )
    _check_shape(val, value, "got a tensor")
    return value.to(device=device, dtype=compute_dtype(val.dtype, float64))


def _random_offsets(fusion: Fusion) -> dict[int, int]:
    """Each random expr's position among the fusion's random exprs: its unseeded offset."""
    random_exprs = [expr for expr in fusion.exprs if expr.op.kind is OpKind.RANDOM]
    return {expr.uid: offset for offset, expr in enumerate(random_exprs)}


# -- outputs -----------------------------------------------------------------------------------


def _write_outputs(
    fusion: Fusion, inputs: Sequence[object], env: dict[int, object], float64: bool
) -> list[torch.Tensor | Number]:
    """The visible outputs, laid out as asked; aliased outputs written into their inputs.

    Every output is computed before any input is written, as in nvFuser, so a visible output
    that shares memory with a written input (a permute or a set of it) is cloned first. A
    written input added as an output itself comes back written: nvFuser returns the input.
    """
    visible: list[tuple[int, object]] = []
    writes: list[tuple[torch.Tensor, torch.Tensor]] = []
    written: dict[int, torch.Tensor] = {}  # input uid -> the value written into it
    for output in fusion.outputs:
        value = _read(env, output.value, float64)
        if isinstance(value, torch.Tensor):
            value = with_stride_order(value, output.stride_order)
        if output.alias_input is None:
            visible.append((output.value.uid, value))
            continue
        position = next(i for i, val in enumerate(fusion.inputs) if val is output.alias_input)
        writes.append((inputs[position], value.clone()))
        written[output.alias_input.uid] = writes[-1][1]
    targets = [target for target, _ in writes]
    results = [
        written[uid].clone() if uid in written
        else value.clone() if isinstance(value, torch.Tensor) and _shares_memory(value, targets)
        else value
        for uid, value in visible
    ]
    for target, value in writes:
        target.copy_(value)
    return results


def _shares_memory(value: torch.Tensor, targets: list[torch.Tensor]) -> bool:
    pointer = value.untyped_storage().data_ptr()
    return any(target.untyped_storage().data_ptr() == pointer for target in targets)
