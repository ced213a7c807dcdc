"""Running a fusion, or a subset of its exprs, on a named executor.

``execute_fusion`` is what ``fd.execute`` calls: bind and check the inputs, build the
execution context from the whole fusion, run every expr, and return the outputs as nvFuser does.
``run_exprs`` runs a subset (a segment) in an environment that already holds its inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping, Sequence
from typing import Any, Protocol

import torch

from fusecli.errors import InputError
from fusecli.ir.nodes import Expr, Fusion
from fusecli.runtime.aten import AtenExecutor
from fusecli.runtime.bind import Bindings, bind_inputs
from fusecli.runtime.context import ExecutionContext, check_available
from fusecli.runtime.outputs import collect_outputs


class Executor(Protocol):
    """Evaluates exprs in order, reading operands from ``env`` and writing outputs into it."""

    name: str

    def run_exprs(
        self, exprs: Iterable[Expr], env: MutableMapping[int, object], ctx: ExecutionContext
    ) -> None: ...


# Executors of expr lists. The generated-kernel executor (cupy) runs whole segments instead:
# see fusecli.runtime.segmented, which execute_fusion hands such a request to.
_EXECUTORS: dict[str, type] = {"aten": AtenExecutor, "auto": AtenExecutor}
_SEGMENT_EXECUTORS = ("cupy",)


def executor_names() -> list[str]:
    return sorted({*_EXECUTORS, *_SEGMENT_EXECUTORS})


def get_executor(name: str) -> Executor:
    """The expr-list executor called ``name``: InputError if unknown or segment-only."""
    if name in _EXECUTORS:
        return _EXECUTORS[name]()
    if name in _SEGMENT_EXECUTORS:
        raise InputError(f"the {name} executor runs whole segments, not expr lists")
    raise InputError(f"unknown executor {name!r}; choose one of: {', '.join(executor_names())}")


def execute_fusion(
    fusion: Fusion,
    inputs: Sequence[Any],
    *,
    executor: str = "aten",
    seed: int = 0,
    device: Any = None,
) -> list[torch.Tensor]:
    """Run ``fusion`` on ``inputs``; the outputs in ``add_output`` order, less aliased ones.

    ``device`` matters only without tensor inputs (creation ops allocate there); it defaults to
    the first GPU, or the CPU without one. ``seed`` seeds unseeded random ops.
    """
    if executor in _SEGMENT_EXECUTORS:
        from fusecli.runtime.segmented import run_fusion

        return run_fusion(fusion, inputs, executor=executor, seed=seed, device=device)[1].outputs
    runner = get_executor(executor)
    bindings = bind_inputs(fusion, inputs)
    ctx = ExecutionContext.for_fusion(
        fusion, device=execution_device(bindings, device), seed=seed, extents=bindings.extents
    )
    env: dict[int, object] = dict(bindings.values)
    runner.run_exprs(fusion.exprs, env, ctx)
    return collect_outputs(fusion, env, bindings, ctx)


def run_exprs(
    fusion: Fusion,
    exprs: Iterable[Expr],
    env: MutableMapping[int, object],
    ctx: ExecutionContext,
    executor: str | Executor = "aten",
) -> None:
    """Run a subset of ``fusion``'s exprs (in order) on ``executor``, updating ``env``.

    ``env`` must hold every value the subset reads and does not compute (PipelineError
    otherwise, naming the value and where it comes from).
    """
    runner = get_executor(executor) if isinstance(executor, str) else executor
    exprs = list(exprs)
    check_available(exprs, env, fusion)
    runner.run_exprs(exprs, env, ctx)


def execution_device(bindings: Bindings, device: Any = None) -> torch.device:
    """The inputs' device; else ``device`` (an int is a CUDA ordinal); else cuda:0 or the CPU."""
    if bindings.device is not None:
        return torch.device(bindings.device)
    if device is not None:
        return torch.device(f"cuda:{device}" if isinstance(device, int) else device)
    return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
