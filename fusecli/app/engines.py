"""``--engine`` and ``--compare-engines`` for the drivers: which engine, and two engines' cuts of
one fusion compared. The engines themselves are in ``fusecli.engines`` (one interface,
``fusecli.engines.base``); nothing here imports the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fusecli.engines.base import Engine, get_engine
from fusecli.engines.compare import (
    EngineComparison,
    compare_engines,
    fusecli_segments,
    nvfuser_segments,
)
from fusecli.engines.nvfuser import NvfuserRun, Runner
from fusecli.engines.nvfuser_log import NvfuserSegmentation, parse_log

ENGINE_NAMES = ("fusecli", "nvfuser")


@dataclass(slots=True)
class NvfuserOutcome:
    """Real nvFuser on one fusion: what it printed and raised, and that log read as data."""

    run: NvfuserRun
    parsed: NvfuserSegmentation


def resolve_engine(name: str, runner: Runner | None = None) -> Engine:
    """The engine ``name``, checked usable here (``MissingEnvironmentError``, exit 4)."""
    engine = get_engine(name, runner)
    engine.check()
    return engine


def run_nvfuser(loaded: Any, runner: Runner | None = None) -> NvfuserOutcome:
    """nvFuser on ``loaded`` through the engine interface, as the explain views want it."""
    from fusecli.app.pipeline import RunOptions

    run = resolve_engine("nvfuser", runner).execute(loaded, RunOptions(engine="nvfuser"))
    log = run.segmentation.text
    return NvfuserOutcome(NvfuserRun(log, run.outputs, run.error, run.error_text),
                          run.segmentation.log or parse_log(log, run.error))


def compare_with_fusecli(segmented: Any, nvfuser: NvfuserOutcome) -> EngineComparison:
    """fusecli's ``SegmentedFusion`` (None when its segmenter crashed) against nvFuser's log."""
    errors = {}
    if segmented is None or not segmented.ok:
        errors["fusecli"] = "no segmentation"
    if not nvfuser.parsed.ok:
        errors["nvfuser"] = nvfuser.parsed.error or "no segmentation"
    ours = fusecli_segments(segmented) if segmented is not None else []
    return compare_engines(ours, nvfuser_segments(nvfuser.parsed), errors)
