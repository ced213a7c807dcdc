"""Running a whole fusion, or a subset of its exprs, on a named executor.

``execute_fusion`` runs a fusion on ``inputs``: on the ATen executor, expr by expr without
segmenting (the plain evaluation other stages compare against); on any other executor,
segmented as ``fd.execute`` runs it (``runtime.segmented``). ``run_exprs`` runs a subset (a
segment) in an environment that already holds its inputs. Executor names come from the one
registry (``runtime.registry``).
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping, Sequence
from typing import Any

import torch

from fusecli.ir.nodes import Expr, Fusion
from fusecli.runtime.aten import AtenExecutor
from fusecli.runtime.bind import bind_inputs
from fusecli.runtime.context import ExecutionContext, check_available
from fusecli.runtime.devices import execution_device
from fusecli.runtime.names import EXECUTOR_NAMES
from fusecli.runtime.outputs import collect_outputs
from fusecli.runtime.registry import executor_named
from fusecli.runtime.segmented import run_fusion


def executor_names() -> list[str]:
    return sorted(EXECUTOR_NAMES)


def get_executor(name: str) -> Any:
    """The executor registered as ``name`` (``auto`` resolved); InputError if unknown."""
    return executor_named(name)


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
    runner = executor_named(executor)
    if not isinstance(runner, AtenExecutor):
        return run_fusion(fusion, inputs, executor=executor, seed=seed, device=device)[1].outputs
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
    executor: str | AtenExecutor = "aten",
) -> None:
    """Run a subset of ``fusion``'s exprs (in order) on the ATen executor, updating ``env``.

    ``env`` must hold every value the subset reads and does not compute (PipelineError
    otherwise, naming the value and where it comes from).
    """
    runner = executor_named(executor) if isinstance(executor, str) else executor
    if not isinstance(runner, AtenExecutor):
        raise TypeError(f"the {runner.name} executor runs whole segments, not expr lists")
    exprs = list(exprs)
    check_available(exprs, env, fusion)
    runner.run_exprs(exprs, env, ctx)
