"""Executing fusions: bind inputs, run segments on executors, return outputs as nvFuser does.

``execute_fusion`` runs a whole fusion; ``run_exprs`` runs a subset of its exprs in a shared
``ExecutionContext``; ``segmented.run_fusion`` segments and runs (what ``fd.execute`` calls).
Executors implement ``executor.Executor`` and are found by name in ``registry`` (``aten``:
eager torch, also every fallback; ``cupy``: generated kernels; ``auto``: cupy where usable).

Exports load their module on first use, so that ``runtime.names`` (what the CLI's ``--help``
lists) is importable without torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ATEN_OPS": "aten", "AtenExecutor": "aten", "Bindings": "bind", "bind_inputs": "bind",
    "ExecutionContext": "context", "Executor": "executor", "FaultInjectionWarning": "faults",
    "corrupt": "faults", "injected_faults": "faults", "execute_fusion": "execute",
    "execution_device": "devices", "executor_names": "execute", "get_executor": "execute",
    "run_exprs": "execute",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'fusecli.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(f"fusecli.runtime.{_EXPORTS[name]}"), name)


__all__ = sorted(_EXPORTS)
