"""Two engines' segmentations of one fusion, segment by segment, and where they first differ.

Segments are judged by their scheduler. Their ops are shown, and used to pair segments, but do
not decide agreement: nvFuser prints composite ops decomposed (``var_mean`` as two sums, ``cat``
as pads and a cat, ``truediv`` as ``/``), so op lists differ where both engines cut the fusion
the same way. nvFuser's groups are not in fusecli's run order, so segments are paired first by
scheduler and ops, then by scheduler, then in order; a segment left without a partner is a row
of its own, placed after its engine's previous segment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fusecli.engines.nvfuser_log import NvfuserSegmentation
from fusecli.segment.result import SegmentedFusion

ENGINES = ("fusecli", "nvfuser")


@dataclass(frozen=True, slots=True)
class EngineSegment:
    """One engine's segment: its position in that engine's list, scheduler and op names."""

    position: int
    scheduler: str
    ops: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.scheduler} ({', '.join(self.ops) or 'no tensor ops'})"


@dataclass(frozen=True, slots=True)
class PairedRow:
    fusecli: EngineSegment | None
    nvfuser: EngineSegment | None

    @property
    def agree(self) -> bool:
        return (
            self.fusecli is not None and self.nvfuser is not None
            and self.fusecli.scheduler == self.nvfuser.scheduler
        )


@dataclass(frozen=True, slots=True)
class EngineComparison:
    rows: tuple[PairedRow, ...]
    errors: dict[str, str]  # engine -> why it produced no segmentation

    @property
    def agree(self) -> bool:
        return not self.errors and all(row.agree for row in self.rows)

    @property
    def first_divergence(self) -> int | None:
        return next((index for index, row in enumerate(self.rows) if not row.agree), None)

    def verdict(self) -> str:
        """``segmentations agree``, or the first diverging segment and each engine's choice."""
        if self.errors:
            return "; ".join(f"{engine} failed: {why}" for engine, why in self.errors.items())
        index = self.first_divergence
        if index is None:
            return "segmentations agree"
        row = self.rows[index]
        chose = [
            f"{engine} {'chose ' + side.describe() if side else 'has no such segment'}"
            for engine, side in zip(ENGINES, (row.fusecli, row.nvfuser))
        ]
        return f"segmentations differ at segment {index}: " + "; ".join(chose)


def fusecli_segments(segmented: SegmentedFusion) -> list[EngineSegment]:
    return [
        EngineSegment(position, segment.scheduler, tuple(e.op.value for e in segment.exprs))
        for position, segment in enumerate(segmented.segments)
    ]


def nvfuser_segments(parsed: NvfuserSegmentation) -> list[EngineSegment]:
    return [
        EngineSegment(position, segment.scheduler, segment.ops)
        for position, segment in enumerate(parsed.segments)
    ]


def compare_engines(
    ours: Sequence[EngineSegment],
    theirs: Sequence[EngineSegment],
    errors: dict[str, str] | None = None,
) -> EngineComparison:
    """fusecli's segments (``ours``, in run order) against nvFuser's (``theirs``)."""
    partner: dict[int, int] = {}  # our position -> theirs
    taken: set[int] = set()
    same_ops = (lambda a, b: a.scheduler == b.scheduler and sorted(a.ops) == sorted(b.ops),
                lambda a, b: a.scheduler == b.scheduler, lambda a, b: True)
    for matches in same_ops:
        for segment in ours:
            if segment.position in partner:
                continue
            found = next((t for t in theirs if t.position not in taken and matches(segment, t)),
                         None)
            if found is not None:
                partner[segment.position] = found.position
                taken.add(found.position)
    placed: list[tuple[float, PairedRow]] = [
        (segment.position, PairedRow(segment, theirs[partner[segment.position]]
                                     if segment.position in partner else None))
        for segment in ours
    ]
    ours_of = {mine: position for position, mine in partner.items()}
    for segment in theirs:
        if segment.position in taken:
            continue
        before = [ours_of[t.position] for t in theirs[: segment.position] if t.position in taken]
        anchor = before[-1] + 0.5 if before else -0.5
        placed.append((anchor + segment.position * 1e-6, PairedRow(None, segment)))
    rows = tuple(row for _, row in sorted(placed, key=lambda item: item[0]))
    return EngineComparison(rows, dict(errors or {}))
