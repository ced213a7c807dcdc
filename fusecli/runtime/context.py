"""What an executor needs besides the values: the device, the random stream, the faults to inject.

An ``ExecutionContext`` is built once per execution from the whole fusion, so that a segment
(a subset of the exprs) computes exactly what it would compute inside the whole fusion: random
exprs keep their offsets and exprs keep the positions that error messages name.

Values live in an environment ``dict[int, object]`` keyed by value uid: tensors as
``torch.Tensor``, scalars as Python numbers. Constant scalars are never stored; ``value_of``
reads them off the IR.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fusecli.errors import PipelineError
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import (
    Expr,
    Fusion,
    Scalar,
    SymbolicExtent,
    TensorView,
    Val,
    Vector,
    evaluate_extent,
)
from fusecli.ir.optype import OpKind, OpType


@dataclass(frozen=True, slots=True)
class ExecutionContext:
    """Per-execution settings shared by every executor and every segment.

    ``random_offsets`` maps a random expr's uid to its offset in the random stream (its position
    among the fusion's random exprs; see docs/ir.md); ``expr_positions`` maps every expr's uid to
    its position in ``fusion.exprs``; ``faults`` holds the op names whose results are corrupted
    (``FUSECLI_INJECT_FAULT``); ``extents`` the concrete size of each symbolic input extent;
    ``views`` the uids of tensors the runtime evaluates as views of another (nvFuser's
    ``AllocationType::Evaluate``, ``segment.output_aliases``): kernels do not write them.
    """

    device: Any
    seed: int = 0
    random_offsets: Mapping[int, int] = field(default_factory=dict)
    expr_positions: Mapping[int, int] = field(default_factory=dict)
    faults: frozenset[str] = frozenset()
    extents: Mapping[SymbolicExtent, int] = field(default_factory=dict)
    views: frozenset[int] = frozenset()

    @staticmethod
    def for_fusion(
        fusion: Fusion,
        *,
        device: Any = "cpu",
        seed: int = 0,
        faults: frozenset[str] | None = None,
        extents: Mapping[SymbolicExtent, int] | None = None,
        views: frozenset[int] = frozenset(),
    ) -> ExecutionContext:
        """A context for one execution of ``fusion``; ``faults`` default to the environment's."""
        if faults is None:
            from fusecli.runtime.faults import injected_faults

            faults = injected_faults()
        numbering = fusion.memo.get("numbering")  # the fusion's alone: computed once
        if numbering is None:
            numbering = fusion.memo["numbering"] = (
                random_offsets(fusion),
                {expr.uid: position for position, expr in enumerate(fusion.exprs)},
            )
        return ExecutionContext(
            device=device,
            seed=int(seed),
            random_offsets=numbering[0],
            expr_positions=numbering[1],
            faults=faults,
            extents=dict(extents or {}),
            views=views,
        )

    def position(self, expr: Expr) -> int | str:
        return self.expr_positions.get(expr.uid, "?")


def random_offsets(fusion: Fusion) -> dict[int, int]:
    """Each random expr's offset: its position among the fusion's random exprs.

    sdpfa_fwd exprs (whose dropout draws random numbers too) follow, numbered after the random
    exprs, so that adding attention to a fusion does not shift the offsets of ``uniform``. On
    CUDA, where torch's flash kernel computes an sdpfa_fwd, its dropout draws from torch's CUDA
    generator instead, as nvFuser's does, and its offset here goes unused.
    """
    offsets: dict[int, int] = {}
    for expr in fusion.exprs:
        if expr.op.kind is OpKind.RANDOM:
            offsets[expr.uid] = len(offsets)
    for expr in fusion.exprs:
        if expr.op is OpType.sdpfa_fwd:
            offsets[expr.uid] = len(offsets)
    return offsets


# ---------------------------------------------------------------------------------------------
# Reading values
# ---------------------------------------------------------------------------------------------


class MissingValueError(LookupError):
    """An expr's operand is not in the environment: it was neither bound nor computed."""

    def __init__(self, value: Val) -> None:
        super().__init__(f"operand {value!r} has not been computed")
        self.value = value


def value_of(value: Val, env: Mapping[int, object]) -> object:
    """The runtime value of ``value``: a tensor, a Python number, or a tuple for a vector."""
    if isinstance(value, Vector):
        return tuple(value_of(element, env) for element in value.elements)
    if value.uid in env:
        return env[value.uid]
    if isinstance(value, Scalar) and value.is_constant:
        return value.value
    raise MissingValueError(value)


def python_scalar(value: object, dtype: DataType) -> bool | int | float | complex:
    """``value`` (a number or a 0-dim tensor) as the Python type of ``dtype``."""
    if hasattr(value, "item"):
        value = value.item()
    if dt.is_boolean(dtype):
        return bool(value)
    if dt.is_integral(dtype):
        return int(value)
    if dt.is_complex(dtype):
        return complex(value)
    return float(value)


class _ExtentValues(Mapping):
    """What ``evaluate_extent`` looks up: symbolic extents and scalars (by object)."""

    def __init__(self, extents: Mapping[SymbolicExtent, int], env: Mapping[int, object]) -> None:
        self._extents = extents
        self._env = env

    def __getitem__(self, key: object) -> int:
        if isinstance(key, SymbolicExtent):
            return self._extents[key]
        if isinstance(key, Scalar):
            return int(value_of(key, self._env))
        raise KeyError(key)

    def __iter__(self):
        return iter(self._extents)

    def __len__(self) -> int:
        return len(self._extents)


def expected_shape(
    tensor: TensorView, ctx: ExecutionContext, env: Mapping[int, object]
) -> tuple[int | None, ...]:
    """The concrete sizes the IR gives ``tensor``; None for a size only the run decides (an
    extent bound to no input, such as a slice's clamped length)."""
    lookup = _ExtentValues(ctx.extents, env)
    sizes: list[int | None] = []
    for extent in tensor.shape:
        try:
            sizes.append(evaluate_extent(extent, lookup))
        except (KeyError, MissingValueError, ZeroDivisionError):
            sizes.append(None)
    return tuple(sizes)


def shape_agrees(actual: Sequence[int], expected: Sequence[int | None]) -> bool:
    return len(actual) == len(expected) and all(
        size == want for size, want in zip(actual, expected) if want is not None
    )


def check_available(exprs: Iterable[Expr], env: Mapping[int, object], fusion: Fusion) -> None:
    """Raise PipelineError unless every operand of ``exprs`` is bound or computed by them."""
    produced: set[int] = set()
    for expr in exprs:
        for operand in expr.inputs:
            for value in operand.elements if isinstance(operand, Vector) else (operand,):
                if value.uid in env or value.uid in produced:
                    continue
                if isinstance(value, Scalar) and value.is_constant:
                    continue
                producer = fusion.definition(value)
                origin = (
                    f"produced by expr {fusion.exprs.index(producer)} ({producer.op.value})"
                    if producer is not None
                    else "a fusion input"
                )
                raise PipelineError(
                    f"expr {fusion.exprs.index(expr)} ({expr.op.value}) reads {value!r}, "
                    f"{origin}, which is neither an input of these exprs nor computed by them"
                )
        produced.update(out.uid for out in expr.outputs)
