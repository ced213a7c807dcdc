"""How ``fd.execute`` runs, and who is listening.

The loader and the CLI set the executor and device policy and collect every definition and
execute call a script makes; a plain ``import fusecli.frontend`` segments fusions with the
default rules and runs them on the default executor, with no one listening (and nothing kept).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fusecli.ir.nodes import flatten_inputs
from fusecli.reference import run_reference
from fusecli.runtime.bind import bind_inputs
from fusecli.runtime.segmented import execute as run_warm
from fusecli.runtime.segmented import execute_segmented
from fusecli.segment.rules import Switches
from fusecli.segment.segmenter import segment_fusion

if TYPE_CHECKING:
    from fusecli.frontend.definition import FusionDefinition
    from fusecli.ir.nodes import Fusion


@dataclass(slots=True)
class ExecuteCall:
    """One ``fd.execute(inputs)`` made by a script, with what it returned."""

    fd: FusionDefinition
    inputs: list[Any]
    outputs: list[Any] | None = None


@dataclass(slots=True)
class Session:
    executor: str = "auto"
    rules: str = "nvfuser"
    map_cuda_to_cpu: bool = False
    run_executes: bool = True  # False: record calls and return the reference's outputs
    listening: bool = True  # False (the default session): keep no definition and no call
    definitions: list[FusionDefinition] = field(default_factory=list)
    calls: list[ExecuteCall] = field(default_factory=list)


# Nobody listens by default: a program that calls ``fd.execute`` in a loop keeps nothing alive.
_current = Session(listening=False)


def current() -> Session:
    return _current


@contextlib.contextmanager
def capturing(session: Session) -> Iterator[Session]:
    """Route definitions and execute calls into ``session`` for the duration."""
    global _current
    previous, _current = _current, session
    try:
        yield session
    finally:
        _current = previous


def cpu_tensors_allowed() -> bool:
    """CPU tensors stand in for CUDA ones when scripts are mapped, or when there is no GPU."""
    if _current.map_cuda_to_cpu:
        return True
    import torch

    return not torch.cuda.is_available()


def definition_finished(fd: FusionDefinition) -> None:
    if _current.listening and fd not in _current.definitions:
        _current.definitions.append(fd)


def run(fd: FusionDefinition | None, fusion: Fusion, inputs: list[Any], device: Any,
        switches: Switches | None = None) -> list[Any]:
    """``fd.execute``: straight to the executors where nobody listens (the default) or where
    no definition asks (an executor run by hand), else through ``execute``. ``switches``:
    nvFuser's enable/disable options that change how the fusion is segmented (a run of its
    own, not the warm path's)."""
    if runs_directly(fd):
        return _run_fusion(fusion, inputs, device, switches)
    return execute(fd, inputs, device, switches)


def runs_directly(fd: FusionDefinition | None) -> bool:
    """Whether ``run`` goes straight to the executors (nothing records the call)."""
    return fd is None or (not _current.listening and _current.run_executes)


def execute(fd: FusionDefinition, inputs: list[Any], device: Any,
            switches: Switches | None = None) -> list[Any]:
    call = ExecuteCall(fd, list(inputs))
    if _current.listening:
        _current.calls.append(call)  # a listener may answer the call itself (call.outputs)
    if not _current.run_executes:
        if call.outputs is None:
            bind_inputs(fd.fusion, list(inputs))  # nvFuser's checks at execute, before any math
            call.outputs = run_reference(fd.fusion, list(inputs)).outputs
        return call.outputs
    call.outputs = _run_fusion(fd.fusion, inputs, device, switches)
    return call.outputs


def _run_fusion(fusion: Fusion, inputs: list[Any], device: Any,
                switches: Switches | None) -> list[Any]:
    if switches is None:
        return run_warm(fusion, inputs, _current.rules, _current.executor, device)
    flat = flatten_inputs(inputs)
    segmented = segment_fusion(fusion, flat, profile=_current.rules, switches=switches)
    return execute_segmented(segmented, inputs, executor=_current.executor,
                             device=device).outputs
