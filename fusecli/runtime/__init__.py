"""Executing fusions: bind inputs, run exprs on an executor, return outputs as nvFuser does.

``execute_fusion`` runs a whole fusion (what ``fd.execute`` calls); ``run_exprs`` runs a subset
of its exprs, as the segmenter does per segment, in a shared ``ExecutionContext``. Executors:
``aten`` (eager torch, also the GPU fallback) and ``auto`` (aten until the CuPy executor exists).
"""

from fusecli.runtime.aten import ATEN_OPS, AtenExecutor
from fusecli.runtime.bind import Bindings, bind_inputs
from fusecli.runtime.context import ExecutionContext
from fusecli.runtime.execute import (
    Executor,
    execute_fusion,
    execution_device,
    executor_names,
    get_executor,
    run_exprs,
)
from fusecli.runtime.faults import FaultInjectionWarning, corrupt, injected_faults

__all__ = [
    "ATEN_OPS",
    "AtenExecutor",
    "Bindings",
    "ExecutionContext",
    "Executor",
    "FaultInjectionWarning",
    "bind_inputs",
    "corrupt",
    "execute_fusion",
    "execution_device",
    "executor_names",
    "get_executor",
    "injected_faults",
    "run_exprs",
]
