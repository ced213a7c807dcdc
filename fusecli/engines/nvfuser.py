"""Real nvFuser as an engine: run a loaded fusion through ``nvfuser_direct``, keep its log.

nvFuser is never a dependency: ``nvfuser_direct`` is imported only when this engine is asked
for, and its absence is a ``MissingEnvironmentError`` (exit 4). The published wheel needs
``sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)`` before torch is first imported (its
libraries use a c10 symbol of torch's that is only visible then); ``fusecli.cli.main`` sets the
flags when the command line asks for this engine, before anything imports torch.

A run is: the fusion written for the direct frontend (``fusecli.load.convert.to_direct``), its
definition executed with nvfuser_direct, ``fd.execute`` on the fusion's own inputs while file
descriptor 1 is captured (nvFuser's C++ prints there) with
``NVFUSER_DUMP=segmenter_logging,segmented_fusion``. The runner is a plain callable from a
``LoadedFusion`` to an ``NvfuserRun``; tests inject one that returns a recorded log.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from fusecli.errors import MissingEnvironmentError

MODULE = "nvfuser_direct"
DUMP = "segmenter_logging,segmented_fusion"
DLOPEN_HINT = (
    "run it through the fusecli command (it sets the flags itself for --engine nvfuser and "
    "--compare-engines), or call sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL) before "
    "torch is first imported"
)


@dataclass(slots=True)
class NvfuserRun:
    """What one execution with real nvFuser gave: its log, its outputs, or its error."""

    log: str
    outputs: list[Any] | None = None
    error: str | None = None  # what nvFuser raised (first line), None when it ran


Runner = Callable[[Any], NvfuserRun]  # LoadedFusion -> NvfuserRun


def wants_nvfuser(argv: list[str]) -> bool:
    """Whether a command line asks for the nvFuser engine (so the dlopen flags must be set
    before torch loads)."""
    return "--compare-engines" in argv or "--engine=nvfuser" in argv or any(
        a == "--engine" and b == "nvfuser" for a, b in zip(argv, argv[1:])
    )


def prepare_dlopen(argv: list[str]) -> None:
    if wants_nvfuser(argv) and "torch" not in sys.modules:
        sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)


def load_nvfuser() -> ModuleType:
    """Import nvfuser_direct with its segmenter dump on, or say why it is not available."""
    if MODULE in sys.modules:
        return sys.modules[MODULE]
    dump = [d for d in os.environ.get("NVFUSER_DUMP", "").split(",") if d]
    os.environ["NVFUSER_DUMP"] = ",".join(dict.fromkeys([*dump, *DUMP.split(",")]))
    try:
        import nvfuser_direct
    except ImportError as error:
        raise MissingEnvironmentError(unavailable_message(error)) from None
    return nvfuser_direct


def unavailable_message(error: ImportError) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if "undefined symbol" in text:
        return (
            f"real nvFuser ({MODULE}) is on the path but its libraries do not load ({text}): "
            f"torch was loaded before it without RTLD_GLOBAL; {DLOPEN_HINT}"
        )
    if isinstance(error, ModuleNotFoundError) and error.name == MODULE:
        return (
            f"real nvFuser is not available here: {MODULE} cannot be imported (put it on "
            "PYTHONPATH; on the GPU machine: . .nvfuser/activate.sh)"
        )
    return f"real nvFuser ({MODULE}) does not import here: {text}"


@contextlib.contextmanager
def captured_stdout() -> Iterator[Any]:
    """nvFuser's C++ writes to file descriptor 1: capture at that level."""
    sink = tempfile.TemporaryFile(mode="w+b")
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(sink.fileno(), 1)
    try:
        yield sink
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        sink.seek(0)


def direct_definition(loaded: Any) -> str:
    """The direct-frontend script of ``loaded`` up to its ``fd``: imports and definition."""
    from fusecli.load.convert import to_direct

    return to_direct(loaded).split("\ninputs = [", 1)[0]


def first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:300].strip() if text else ''}"


def run_with_nvfuser(loaded: Any) -> NvfuserRun:
    """Execute ``loaded`` with real nvFuser on (copies of) its own inputs."""
    load_nvfuser()
    import torch

    from fusecli.load.inputs import clone_exact
    from fusecli.runtime.bind import flatten_inputs

    namespace: dict[str, Any] = {"__name__": "fusecli_nvfuser_engine"}
    inputs = list(clone_exact(list(flatten_inputs(loaded.inputs))))
    try:
        exec(compile(direct_definition(loaded), f"<{loaded.name}: direct>", "exec"), namespace)
    except Exception as error:  # nvFuser refused the definition itself
        return NvfuserRun("", None, first_line(error))
    outputs, failure = None, None
    with captured_stdout() as sink:
        try:
            outputs = list(namespace["fd"].execute(inputs))
            torch.cuda.synchronize()
        except Exception as error:  # nvFuser's own failure is a result: its log says how far
            failure = first_line(error)
    log = sink.read().decode("utf-8", "replace")
    return NvfuserRun(log, outputs, failure)
