"""``fusecli explain-segmentation`` as a library function: load, segment with the log kept."""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusecli.engines.nvfuser import Runner
from fusecli.errors import InputError
from fusecli.ir.nodes import Fusion
from fusecli.load import LoadedFusion, load_path
from fusecli.segment.result import SegmentedFusion
from fusecli.segment.rules import PROFILES, SCHEDULER_NAMES, Switches
from fusecli.segment.segmenter import segment_fusion


@dataclass(frozen=True, slots=True)
class ExplainOptions:
    rules: str = "nvfuser"
    disabled: frozenset[str] = frozenset()
    fuse_matmul: bool = False
    matmul_expr_eval: bool = True
    device: str = "auto"
    seed: int = 0
    debug: bool = False  # let an internal error propagate, with its traceback
    engine: str = "fusecli"  # or "nvfuser": real nvFuser's own segmenter log
    compare_engines: bool = False  # both, their segmentations compared

    @property
    def runs_fusecli(self) -> bool:
        return self.engine == "fusecli" or self.compare_engines

    @property
    def runs_nvfuser(self) -> bool:
        return self.engine == "nvfuser" or self.compare_engines

    def switches(self) -> Switches:
        return Switches(
            fuse_matmul=self.fuse_matmul,
            matmul_expr_eval=self.matmul_expr_eval,
            disabled=self.disabled,
        )


@dataclass(slots=True)
class ExplainOutcome:
    """One fusion's segmentation; or, when the segmenter itself crashed on it, ``error`` (a
    line) and ``detail`` (the traceback) with no ``segmented``."""

    loaded: LoadedFusion
    original: Fusion  # the fusion as defined (before profile lowering)
    segmented: SegmentedFusion | None
    notices: list[str] = field(default_factory=list)
    error: str | None = None
    detail: str | None = None
    nvfuser: Any = None  # fusecli.app.engines.NvfuserOutcome, with --engine nvfuser
    comparison: Any = None  # fusecli.engines.compare.EngineComparison, with --compare-engines

    @property
    def ok(self) -> bool:
        fusecli_ok = self.segmented is not None and self.segmented.ok
        nvfuser_ok = self.nvfuser is not None and self.nvfuser.parsed.ok
        if self.nvfuser is None:
            return fusecli_ok
        return nvfuser_ok and (fusecli_ok or self.comparison is None)  # --engine nvfuser: its own


def validate_options(options: ExplainOptions) -> None:

    if options.rules not in PROFILES:
        raise InputError(f"unknown rule profile {options.rules!r}; choose from {sorted(PROFILES)}")
    unknown = sorted(options.disabled - set(SCHEDULER_NAMES))
    if unknown:
        raise InputError(
            f"unknown scheduler(s) {unknown}; choose from {', '.join(SCHEDULER_NAMES)}"
        )


def explain_path(
    path: Path, options: ExplainOptions, runner: Runner | None = None
) -> list[ExplainOutcome]:
    """Segment every fusion in ``path`` under ``options``, keeping the decision log; with the
    nvFuser engine, also run it through real nvFuser (``runner``: how; tests inject one)."""

    validate_options(options)
    if options.runs_nvfuser:
        from fusecli.app.engines import compare_with_fusecli, resolve_engine, run_nvfuser

        resolve_engine("nvfuser", runner)  # exit 4 here, before any work, without nvFuser
    outcomes = []
    for loaded in load_path(path, device=options.device, seed=options.seed, evaluate=False):
        outcome = ExplainOutcome(loaded, loaded.fusion, None, list(loaded.notices))
        if options.runs_nvfuser:
            outcome.nvfuser = run_nvfuser(loaded, runner)
        if options.runs_fusecli:
            _segment(outcome, options)
        if options.compare_engines:
            outcome.comparison = compare_with_fusecli(outcome.segmented, outcome.nvfuser)
        outcomes.append(outcome)
    return outcomes


def _segment(outcome: ExplainOutcome, options: ExplainOptions) -> None:
    loaded = outcome.loaded
    try:
        outcome.segmented = segment_fusion(
            loaded.fusion, loaded.inputs, profile=options.rules,
            switches=options.switches(), keep_log=True,
        )
    except Exception as error:  # one fusion's crash is its record; the others go on
        if options.debug:
            raise
        lines = str(error).strip().splitlines()
        outcome.error = f"internal error: {type(error).__name__}: {lines[0] if lines else ''}"
        outcome.detail = "".join(traceback.format_exception(error))
