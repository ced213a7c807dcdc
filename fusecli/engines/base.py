"""One interface for every engine that can segment and run a fusion.

fusecli's own pipeline (its segmenter, generated kernels and ATen) and real nvFuser
(``nvfuser_direct``) sit behind the same small protocol, so ``run``, ``explain-segmentation``,
``bisect`` and corpus runs take ``--engine NAME`` without branching on it:

- ``check()``: the engine is usable here, else ``MissingEnvironmentError`` (exit 4);
- ``segment(loaded)``: how the engine cuts the fusion, with its decision log;
- ``execute(loaded, options)``: the outputs, or the failure, with the segmentation that ran.

A failure is data (``EngineRun.error`` and its ``signature``), never an exception: a crash of
the engine under test is a result. A third engine (a user's own nvFuser build, Thunder's
executor) is one more class registered in ``ENGINES``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from fusecli.engines.signature import ErrorSignature, error_signature


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """One segment as an engine ran (or would run) it."""

    id: int
    scheduler: str | None
    executor: str  # cupy, aten, nvfuser
    exprs: tuple[str, ...]  # fd.ops names
    fallback: str | None = None  # why a generated kernel did not run it


@dataclass(slots=True)
class EngineSegmentation:
    """An engine's cut of a fusion: its segments in run order, and its decision log in the
    engine's own form (fusecli's ``SegmentedFusion``, nvFuser's parsed log), or why not."""

    segments: list[SegmentInfo] = field(default_factory=list)
    log: Any = None
    text: str = ""  # the engine's own log text, where it prints one
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.segments)


@dataclass(slots=True)
class EngineRun:
    """What executing a fusion gave: outputs, or an error; ``inputs`` are the values it ran on
    (judge against these)."""

    engine: str
    outputs: list[Any] | None
    inputs: list[Any]
    segmentation: EngineSegmentation = field(default_factory=EngineSegmentation)
    error: str | None = None  # one line
    error_text: str | None = None  # everything the engine raised, for signatures and reports
    error_type: str | None = None
    failure_exit: int = 3  # the exit code the error stands for (2: the input is bad)
    notices: list[str] = field(default_factory=list)

    @property
    def signature(self) -> ErrorSignature | None:
        if self.error is None:
            return None
        return error_signature(self.error_text or self.error, self.error_type)


class Engine(Protocol):
    name: str

    def check(self) -> None:
        """Raise MissingEnvironmentError when this engine cannot run here."""

    def segment(self, loaded: Any, options: Any) -> EngineSegmentation:
        """How the engine cuts ``loaded`` (a LoadedFusion), with its decision log."""

    def execute(self, loaded: Any, options: Any) -> EngineRun:
        """Run ``loaded`` on its inputs; failures are data."""


def get_engine(name: str, runner: Any = None) -> Engine:
    """The engine called ``name``; ``runner`` replaces real nvFuser's execution (tests)."""
    from fusecli.errors import InputError

    if name == "fusecli":
        from fusecli.engines.fusecli_engine import FusecliEngine

        return FusecliEngine()
    if name == "nvfuser":
        from fusecli.engines.nvfuser import NvfuserEngine

        return NvfuserEngine(runner)
    raise InputError(f"unknown engine {name!r}: expected one of {', '.join(ENGINES)}")


ENGINES = ("fusecli", "nvfuser")
