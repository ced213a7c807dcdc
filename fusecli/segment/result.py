"""What segmentation produces: segments in run order, the decision log, or a diagnosis."""

from __future__ import annotations

from dataclasses import dataclass, field

from fusecli.ir.nodes import Expr, Fusion, TensorView
from fusecli.segment.candidate import Candidate
from fusecli.segment.heuristics import HeuristicParams
from fusecli.segment.rules import Verdict


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One candidate the segmenter considered, and what each scheduler said."""

    index: int
    phase: str  # whole, initial, merge, final_merge, forward, finalize
    candidate: Candidate
    verdicts: tuple[Verdict, ...]
    skipped: str | None = None  # why no scheduler was asked (segment_set rule)

    @property
    def accepted(self) -> str | None:
        return next((v.scheduler for v in self.verdicts if v.accepted), None)


@dataclass(frozen=True, slots=True)
class Segment:
    id: int
    scheduler: str
    candidate: Candidate
    params: HeuristicParams | None = field(default=None, compare=False)  # at the sizes known
    # notes of the verdicts that chose the scheduler where they rest on a GPU query
    # (hardware.py): the acceptance, and earlier schedulers' run-time rejections
    gpu_notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def exprs(self) -> tuple[Expr, ...]:
        return self.candidate.exprs

    @property
    def inputs(self) -> tuple[TensorView, ...]:
        return self.candidate.inputs

    @property
    def outputs(self) -> tuple[TensorView, ...]:
        return self.candidate.outputs


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Why segmentation failed: the segment no scheduler accepts, and each one's reason."""

    candidate: Candidate
    verdicts: tuple[Verdict, ...]
    advice: tuple[str, ...]


@dataclass(slots=True)
class SegmentedFusion:
    fusion: Fusion  # the fusion segmented (lowered, under nvfuser-2024)
    profile: str
    segments: list[Segment] = field(default_factory=list)
    log: list[LogEntry] | None = None
    failure: Diagnosis | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    def edges(self) -> list[tuple[int, int, TensorView]]:
        """(producer segment, consumer segment, value) for every value crossing segments."""
        producer_of = {}
        for segment in self.segments:
            for out in segment.outputs:
                producer_of.setdefault(out.uid, segment.id)
        found = []
        for segment in self.segments:
            for value in segment.inputs:
                source = producer_of.get(value.uid)
                if source is not None and source != segment.id:
                    found.append((source, segment.id, value))
        return found
