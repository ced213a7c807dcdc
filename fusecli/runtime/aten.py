"""The ATen executor: evaluates exprs with eager torch calls, one table entry per op.

``ATEN_OPS`` maps every ``OpType`` to ``function(expr, args, ctx) -> tuple of outputs``, where
``args`` are the runtime values of ``expr.inputs`` (tensors, Python numbers, tuples of ints for
vectors). The executor reads operands from the environment, calls the entry, conforms the results
to the IR (dtype cast where torch returned another; shape checked against the IR's extents),
corrupts them when fault injection names the op, and writes them back. A subclass or an
``ops=`` override replaces single entries, as a backend overrides a renderer's.

This is also the GPU fallback: entries run on whatever device their operands are on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

import torch

from fusecli.errors import PipelineError
from fusecli.ir import dtype as dt
from fusecli.ir.nodes import Expr, Scalar, TensorView
from fusecli.ir.optype import OpType
from fusecli.runtime.aten_attention import ATTENTION_OPS
from fusecli.runtime.aten_elementwise import ELEMENTWISE_OPS, AtenFn
from fusecli.runtime.aten_other import OTHER_OPS
from fusecli.runtime.aten_reduction import REDUCTION_OPS
from fusecli.runtime.aten_shape import SHAPE_OPS
from fusecli.runtime.context import (
    ExecutionContext,
    MissingValueError,
    expected_shape,
    python_scalar,
    shape_agrees,
    value_of,
)
from fusecli.runtime.faults import corrupt
from fusecli.segment.result import Segment

ATEN_OPS: dict[OpType, AtenFn] = {
    **ELEMENTWISE_OPS, **SHAPE_OPS, **REDUCTION_OPS, **OTHER_OPS, **ATTENTION_OPS
}
# Ops without an ATen entry, each with why (tests/test_op_tables.py checks the coverage): none.
UNSUPPORTED: frozenset[OpType] = frozenset()


class AtenExecutor:
    """Runs exprs in order through ``ops`` (default ``ATEN_OPS``); every op, every segment."""

    name = "aten"
    injects_faults = True  # computes FUSECLI_INJECT_FAULT's ops wrongly, expr by expr

    def __init__(self, ops: Mapping[OpType, AtenFn] | None = None) -> None:
        self.ops: dict[OpType, AtenFn] = dict(ATEN_OPS if ops is None else ops)

    def run_exprs(
        self, exprs: Iterable[Expr], env: MutableMapping[int, object], ctx: ExecutionContext
    ) -> None:
        """Evaluate ``exprs`` in order, reading operands from ``env`` and writing outputs to it."""
        for expr in exprs:
            self.run_expr(expr, env, ctx)

    def attempt(
        self, segment: Segment, env: MutableMapping[int, object], ctx: ExecutionContext
    ) -> str | None:
        """The executor protocol's step: ATen runs any segment."""
        self.run_exprs(segment.exprs, env, ctx)
        return None

    def run_expr(self, expr: Expr, env: MutableMapping[int, object], ctx: ExecutionContext) -> None:
        where = f"{self.name}: expr {ctx.position(expr)} ({expr.op.value})"
        compute = self.ops.get(expr.op)
        if compute is None:
            raise PipelineError(f"{where}: the {self.name} executor has no entry for this op")
        try:
            args = [value_of(value, env) for value in expr.inputs]
        except MissingValueError as error:
            raise PipelineError(f"{where}: {error}") from None
        try:
            results = tuple(compute(expr, args, ctx))
            results = tuple(_conform(where, out, result, ctx, env)
                            for out, result in zip(expr.outputs, results, strict=True))
        except PipelineError:
            raise
        except Exception as error:  # torch reports bad shapes and dtypes as assorted errors
            raise PipelineError(f"{where}: {_one_line(error)}") from error
        if expr.op.value in ctx.faults:
            # Tensors only: scalar results are mostly sizes, and a corrupted size turns a
            # wrong-value fault (what bisect is tested on) into a crash.
            results = tuple(
                corrupt(result) if isinstance(out, TensorView) else result
                for out, result in zip(expr.outputs, results)
            )
        for out, result in zip(expr.outputs, results):
            env[out.uid] = result


def _conform(
    where: str, out: object, result: Any, ctx: ExecutionContext, env: Mapping[int, object]
) -> Any:
    """``result`` in ``out``'s dtype; PipelineError if its shape is not the IR's."""
    if isinstance(out, Scalar):
        return python_scalar(result, out.dtype)
    if not isinstance(out, TensorView):
        return result
    if not isinstance(result, torch.Tensor):
        raise PipelineError(f"{where}: produced a {type(result).__name__}, not a tensor")
    expected_dtype = dt.to_torch(out.dtype)
    if result.dtype != expected_dtype:
        result = result.to(expected_dtype)
    expected = expected_shape(out, ctx, env)
    if not shape_agrees(result.shape, expected):
        shown = ["?" if size is None else size for size in expected]
        raise PipelineError(
            f"{where}: produced shape {list(result.shape)} but the IR gives the output "
            f"shape {shown}"
        )
    return result


def _one_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    message = text[0] if text else ""
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
