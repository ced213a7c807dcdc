"""``fusecli explain-segmentation`` as a library function: load, segment with the log kept."""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path

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

    @property
    def ok(self) -> bool:
        return self.segmented is not None and self.segmented.ok


def validate_options(options: ExplainOptions) -> None:

    if options.rules not in PROFILES:
        raise InputError(f"unknown rule profile {options.rules!r}; choose from {sorted(PROFILES)}")
    unknown = sorted(options.disabled - set(SCHEDULER_NAMES))
    if unknown:
        raise InputError(
            f"unknown scheduler(s) {unknown}; choose from {', '.join(SCHEDULER_NAMES)}"
        )


def explain_path(path: Path, options: ExplainOptions) -> list[ExplainOutcome]:
    """Segment every fusion in ``path`` under ``options``, keeping the decision log."""

    validate_options(options)
    outcomes = []
    for loaded in load_path(path, device=options.device, seed=options.seed, evaluate=False):
        outcome = ExplainOutcome(loaded, loaded.fusion, None, list(loaded.notices))
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
        outcomes.append(outcome)
    return outcomes
