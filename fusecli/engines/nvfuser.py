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

from fusecli.engines.base import EngineRun, EngineSegmentation, SegmentInfo
from fusecli.errors import MissingEnvironmentError
from fusecli.textsafe import one_line

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
    error_text: str | None = None  # all of it


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


PRELUDE = (
    "import os, sys\n"
    "# nvFuser's wheel needs torch's symbols global before torch loads (harmless elsewhere)\n"
    "sys.setdlopenflags(os.RTLD_LAZY | os.RTLD_GLOBAL)\n"
)


def direct_script(loaded: Any, exact_limit: int | None = None) -> str:
    """``loaded`` as a plain nvfuser_direct script, no fusecli import: the definition, then its
    inputs made exactly (stored values where at most ``exact_limit`` elements, else seeded),
    then ``fd.execute``."""
    from dataclasses import replace

    import torch

    from fusecli.load.convert import EXACT_LIMIT, exact_specs, to_direct

    exact = loaded if loaded.input_specs is not None else replace(
        loaded, input_specs=exact_specs(loaded, exact_limit or EXACT_LIMIT))
    device = "cuda:0" if torch.cuda.is_available() else "cpu"  # cpu: a stand-in, in tests
    return PRELUDE + to_direct(exact, device=device)


class NvfuserEngine:
    """Real nvFuser: the fusion as a direct-frontend script, executed in this process with
    nvFuser's segmenter dump on and file descriptor 1 captured. ``runner`` (tests) replaces the
    execution with one that returns a recorded ``NvfuserRun``."""

    name = "nvfuser"

    def __init__(self, runner: Runner | None = None) -> None:
        self.runner = runner

    def check(self) -> None:
        if self.runner is None:
            load_nvfuser()

    def segment(self, loaded: Any, options: Any) -> EngineSegmentation:
        """nvFuser segments a fusion when it first executes it: run it, keep the log."""
        return self.execute(loaded, options).segmentation

    def execute(self, loaded: Any, options: Any) -> EngineRun:
        from fusecli.engines.nvfuser_log import parse_log

        if self.runner is not None:
            recorded = self.runner(loaded)
            run = EngineRun(self.name, recorded.outputs, list(loaded.inputs),
                            error=recorded.error, error_text=recorded.error_text)
            log = recorded.log
        else:
            run, log = run_direct(loaded)
        parsed = parse_log(log, run.error)
        run.segmentation = EngineSegmentation(
            [SegmentInfo(s.id, s.scheduler, "nvfuser", s.ops) for s in parsed.segments],
            parsed, log, None if parsed.ok else (parsed.error or "no segmentation"),
        )
        return run


def run_direct(loaded: Any) -> tuple[EngineRun, str]:
    """Execute ``loaded``'s direct script with real nvFuser; the run and nvFuser's log. The
    inputs are the script's own (what ``python minimized.py`` would give nvFuser)."""
    load_nvfuser()
    import torch

    script = direct_script(loaded)
    definition, _, _ = script.rpartition("fd.execute(inputs)")
    namespace: dict[str, Any] = {"__name__": "fusecli_nvfuser_engine"}
    run = EngineRun("nvfuser", None, [])
    with captured_stdout() as sink:
        try:
            where = f"<{one_line(loaded.name)}: nvfuser_direct>"  # a name may hold NUL
            exec(compile(definition, where, "exec"), namespace)
        except Exception as error:  # nvFuser refused the definition itself
            _failed(run, error)
        else:
            run.inputs = list(namespace["inputs"])
            try:
                run.outputs = list(namespace["fd"].execute(run.inputs))
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
            except Exception as error:  # nvFuser's own failure is a result
                run.outputs = None
                _failed(run, error)
    log = sink.read().decode("utf-8", "replace")
    return run, log


def _failed(run: EngineRun, error: BaseException) -> None:
    run.error = first_line(error)
    run.error_type = type(error).__name__
    run.error_text = f"{type(error).__name__}: {error}"


def run_with_nvfuser(loaded: Any) -> NvfuserRun:
    """Execute ``loaded`` with real nvFuser (what ``--engine nvfuser`` runs)."""
    run, log = run_direct(loaded)
    return NvfuserRun(log, run.outputs, run.error, run.error_text)
