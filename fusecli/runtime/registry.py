"""The one registry of executors, by the names the CLI offers (``runtime.names``).

``executor_named("auto")`` is the CuPy executor where a GPU and CuPy are usable, else ATen;
``aten`` and ``cupy`` are what they say. Executors are made once and shared, so the CuPy
executor's kernel cache and warm launches serve every run of the process.
"""

from __future__ import annotations

from collections.abc import Callable

from fusecli.errors import InputError, MissingEnvironmentError
from fusecli.runtime.aten import AtenExecutor
from fusecli.runtime.cupy_executor import CupyExecutor
from fusecli.runtime.executor import Executor
from fusecli.runtime.names import EXECUTOR_NAMES

EXECUTORS: dict[str, Callable[[], Executor]] = {"aten": AtenExecutor, "cupy": CupyExecutor}
AUTO_ORDER = ("cupy", "aten")  # what ``auto`` tries, first usable wins

_made: dict[str, Executor] = {}


def executor_named(name: str) -> Executor:
    """The shared executor ``name``: InputError for an unknown name, the executor's own
    MissingEnvironmentError (exit 4) when it cannot work here."""
    if name == "auto":
        return auto_executor()
    factory = EXECUTORS.get(name)
    if factory is None:
        raise InputError(f"unknown executor {name!r}; choose one of: {', '.join(EXECUTOR_NAMES)}")
    made = _made.get(name)
    if made is None:
        made = _made[name] = factory()
    return made


def install(name: str, executor: Executor) -> None:
    """Make ``executor`` the shared one named ``name``: a stand-in with the same protocol (the
    fuzz benchmark's CPU emulation of the CuPy executor's kernels, a test's double)."""
    if name not in EXECUTORS:
        raise InputError(f"unknown executor {name!r}; choose one of: {', '.join(EXECUTOR_NAMES)}")
    _made[name] = executor


def auto_executor() -> Executor:
    for name in AUTO_ORDER:
        try:
            return executor_named(name)
        except MissingEnvironmentError:
            continue
    raise MissingEnvironmentError("no executor can run here")  # ATen always can


def fallback_executor() -> Executor:
    """What runs a segment another executor declines: ATen, which runs every op."""
    return executor_named("aten")
