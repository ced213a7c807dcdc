"""``fusecli explain-segmentation`` as a library function: load, segment with the log kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusecli.errors import InputError
from fusecli.load import load_path
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

    def switches(self) -> Switches:
        return Switches(
            fuse_matmul=self.fuse_matmul,
            matmul_expr_eval=self.matmul_expr_eval,
            disabled=self.disabled,
        )


@dataclass(slots=True)
class ExplainOutcome:
    loaded: Any  # fusecli.load.LoadedFusion
    original: Any  # the fusion as defined (before profile lowering)
    segmented: SegmentedFusion
    notices: list[str] = field(default_factory=list)


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
    for loaded in load_path(path, device=options.device, seed=options.seed):
        segmented = segment_fusion(
            loaded.fusion, loaded.inputs, profile=options.rules,
            switches=options.switches(), keep_log=True,
        )
        outcomes.append(ExplainOutcome(loaded, loaded.fusion, segmented, list(loaded.notices)))
    return outcomes
