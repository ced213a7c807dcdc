"""Persistent-buffer sizes with scoped persistence, as nvFuser computes them.

nvFuser's ``scheduler_utils::persistentBufferSizeBit`` (csrc/scheduler/utils.cpp) does not add
up every persistent buffer of a segment. A buffer is live only at the values between it and its
resolution points, where it is read again after the reduction it feeds
(``getScopePersistenceFactors``); the size is the largest sum of the buffers live at one value.
Two buffers whose live ranges do not overlap need the larger one's room, not both.

The projected size replaces each projectable buffer by the segment inputs it is computed from
(``persistentBuffers``): a buffer is projectable when it is no segment input, the segment has no
reshape (``has_view_ops``), and each reduction it depends on is followed, before the buffer, by
a broadcast back over the reduced axes (``canProjectToInputsWithoutReduction``,
``getBufferProjectableBroadcastsTv``). A buffer computed only from other buffers needs no room
of its own (``canProjectToPersistentProducer``), and an upcast buffer is held at the width it
was cast from (``getPersistentBufferSizeBitOfTensor``, ``getUpCastInputOf``).

Under the older profiles (no ``scoped_persistence``) every buffer counts for the whole kernel
and only buffers made before any reduction project. Reachability is one bitmask per tensor (bit
i: the candidate's i-th tensor), so the analysis is a few linear passes per candidate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import OpKind, OpType
from fusecli.segment.candidate import Candidate
from fusecli.segment.heuristics import itemsize
from fusecli.segment.schedulers import common
from fusecli.segment.schedulers.persistence import holds_unmappable_dim

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

REDUCING = (OpKind.REDUCTION, OpKind.NORMALIZATION)


def persistent_bytes(candidate: Candidate, ctx: ScheduleContext) -> int | None:
    """Bytes of persistent buffers one reduction row needs (concrete sizes), or None."""
    if not candidate.reduction_exprs:
        return 0
    row = common.reduction_row(candidate, ctx)
    if row is None:
        return None
    if ctx.profile.scoped_persistence:
        return row * candidate.memo("scoped_widths", _scoped_widths).persistent
    return row * sum(map(itemsize, common.persistent_buffers(candidate)))


def projected_bytes(candidate: Candidate, ctx: ScheduleContext) -> int | None:
    """The persistent bytes per row when projectable buffers are recomputed from the segment
    inputs they come from (nvFuser's projected_persistent_buffer_size), or None when no buffer
    projects. Without ``scoped_persistence``: all buffers projected, or None (a reshape, or a
    buffer made after a reduction)."""
    row = common.reduction_row(candidate, ctx)
    if row is None:
        return None
    if ctx.profile.scoped_persistence:
        projected = candidate.memo("scoped_widths", _scoped_widths).projected
        return None if projected is None else row * projected
    if not common.persistent_buffers(candidate):
        return None
    sources = projected_sources(candidate)
    return None if sources is None else row * sum(map(itemsize, sources))


def projected_sources(candidate: Candidate) -> list[TensorView] | None:
    """The segment inputs the persistent buffers are computed from, each once, that hold a
    dimension the buffers hold across a reduction (an [N, 1] input is read again, not held);
    None where a buffer cannot be recomputed from them (a reshape in the segment, a reduction
    on the way)."""
    if OpType.reshape in candidate.ops:
        return None
    sources: dict[int, TensorView] = {}
    for buffer in common.persistent_buffers(candidate):
        found = common.segment_inputs_of(candidate, buffer, through_reductions=False)
        if found is None:
            return None
        sources.update((t.uid, t) for t in found if holds_unmappable_dim(candidate, t))
    return list(sources.values())


def _scoped_widths(candidate: Candidate) -> ScopedWidths:
    return scoped_widths(candidate, common.persistent_buffers(candidate))


@dataclass(frozen=True, slots=True)
class ScopedWidths:
    """Bytes per row element of the buffers live at once, at the worst value."""

    persistent: int
    projected: int | None  # None: no buffer projects to the segment inputs


@dataclass(slots=True)
class _Reach:
    """Per-tensor bitmasks over ``candidate.tensors`` (which is in topological order)."""

    bit: dict[int, int]
    ancestors: dict[int, int]  # the tensor and all it is computed from
    descendants: dict[int, int]  # the tensor and all computed from it

    @staticmethod
    def of(candidate: Candidate) -> _Reach:
        tensors = candidate.tensors
        bit = {t.uid: 1 << i for i, t in enumerate(tensors)}
        ancestors = {t.uid: bit[t.uid] for t in candidate.inputs}
        for expr in candidate.exprs:
            mask = 0
            for value in expr.tensor_inputs():
                mask |= ancestors.get(value.uid, 0)
            for out in expr.tensor_outputs():
                ancestors[out.uid] = mask | bit[out.uid]
        descendants: dict[int, int] = {}
        for tensor in reversed(tensors):
            below = bit[tensor.uid]
            for use in candidate.uses_inside(tensor):
                for out in use.tensor_outputs():
                    below |= descendants[out.uid]
            descendants[tensor.uid] = below
        return _Reach(bit, ancestors, descendants)

    def ancestors_of(self, tensors: Iterable[TensorView]) -> int:
        mask = 0
        for tensor in tensors:
            mask |= self.ancestors[tensor.uid]
        return mask


def scoped_widths(candidate: Candidate, buffers: list[TensorView]) -> ScopedWidths:
    """persistentBufferSizeBit over ``buffers`` (the candidate's persistent buffers), per row
    element: the persistent and the projected size."""
    reach = _Reach.of(candidate)
    points = {b.uid: resolution_points(candidate, reach, b) for b in buffers}
    live = {b.uid: _live_between(reach, b, points[b.uid]) for b in buffers}
    buffer_uids = {b.uid for b in buffers}
    persistent = _max_live(
        (b.uid, _buffer_width(candidate, b), live[b.uid]) for b in buffers
        if not _projects_to_persistent_producer(candidate, b, buffer_uids)
    )
    projectable = [b for b in buffers if _projectable(candidate, reach, b)]
    if not projectable:
        return ScopedWidths(persistent, None)
    entries = [(b.uid, _buffer_width(candidate, b), live[b.uid]) for b in buffers
               if b not in projectable]
    for buffer in projectable:
        ancestors = reach.ancestors[buffer.uid]
        for source in candidate.inputs:
            # the inputs holding the reduced dimension (projectable_buffer_inputs)
            if reach.bit[source.uid] & ancestors and source.ndim == buffer.ndim:
                entries.append((source.uid, itemsize(source),
                                _live_between(reach, source, points[buffer.uid])))
    projected = _max_live(entries)
    return ScopedWidths(persistent, projected or None)


def resolution_points(candidate: Candidate, reach: _Reach, buffer: TensorView
                      ) -> list[TensorView]:
    """Where ``buffer`` is resolved (PersistentBufferResolution::getResolutionPointsOf): walking
    the exprs after the buffer in order, a tensor made from both the buffer's path and a
    reduction's path. Every reduction after the buffer starts a reduction path, unless it
    depends on a resolution point already found; a resolution stays on the buffer's path."""
    buffer_path, reduction_path, points = reach.bit[buffer.uid], 0, 0
    found: list[TensorView] = []
    hit = False
    for expr in candidate.exprs:
        inputs = [reach.bit[v.uid] for v in expr.tensor_inputs()]
        outputs = expr.tensor_outputs()
        if not hit:
            # the walk meets the buffer after its definition, an input before its first use
            hit = any(o.uid == buffer.uid for o in outputs)
            if not (candidate.is_input(buffer) and any(b & buffer_path for b in inputs)):
                continue
            hit = True
        made = 0
        for out in outputs:
            made |= reach.bit[out.uid]
        if expr.op.kind in REDUCING:
            if not reach.ancestors_of(outputs) & points:
                reduction_path |= made
            continue
        from_reduction = any(b & reduction_path for b in inputs)
        from_buffer = any(b & buffer_path for b in inputs)
        if from_reduction and from_buffer:
            points |= made
            found.extend(outputs)
            buffer_path |= made
        elif from_reduction:
            reduction_path |= made
        elif from_buffer:
            buffer_path |= made
    return found


def _live_between(reach: _Reach, source: TensorView, points: list[TensorView]) -> int:
    """DependencyCheck::getAllValsBetween({source}, points), ``source`` itself excluded."""
    return reach.descendants[source.uid] & reach.ancestors_of(points) & ~reach.bit[source.uid]


def _max_live(entries: Iterable[tuple[int, int, int]]) -> int:
    """The largest total width of the entries (tensor uid, width, live mask) live at one value;
    a tensor in two entries counts once (masked_dot_product)."""
    by_tensor: dict[int, list[int]] = {}
    for uid, width, mask in entries:
        by_tensor.setdefault(uid, [width, 0])[1] |= mask
    everywhere = 0
    for _, mask in by_tensor.values():
        everywhere |= mask
    largest = 0
    while everywhere:
        value = everywhere & -everywhere
        everywhere ^= value
        largest = max(largest, sum(w for w, mask in by_tensor.values() if mask & value))
    return largest


def _projects_to_persistent_producer(candidate: Candidate, buffer: TensorView,
                                     buffer_uids: set[int]) -> bool:
    """canProjectToPersistentProducer: every producer is itself a persistent buffer."""
    producer = candidate.definition(buffer)
    if producer is None or not candidate.contains(producer) or producer.op.kind in REDUCING:
        return False
    sources = producer.tensor_inputs()
    return bool(sources) and all(s.uid in buffer_uids for s in sources)


def _projectable(candidate: Candidate, reach: _Reach, buffer: TensorView) -> bool:
    """Whether nvFuser recomputes ``buffer`` from the segment inputs (persistentBuffers'
    projectable_persistent_buffers)."""
    if candidate.is_input(buffer) or OpType.reshape in candidate.ops:
        return False
    ancestors = reach.ancestors[buffer.uid]
    for reduction in candidate.reduction_exprs:
        out = reduction.tensor_outputs()[0]
        if not reach.bit[out.uid] & ancestors:
            continue
        between = reach.descendants[out.uid] & ancestors
        if not any(reach.bit[t.uid] & between for t in _broadcasts_back(candidate, out)):
            return False
    return True


def _broadcasts_back(candidate: Candidate, reduced: TensorView) -> list[TensorView]:
    """Broadcast outputs of ``reduced``'s rank with a broadcast at each reduced axis
    (getBufferProjectableBroadcastsTv)."""
    positions = [i for i, d in enumerate(reduced.domain) if d.is_reduction]
    return [e.output for e in candidate.exprs if _broadcast_over(e, reduced, positions)]


def _broadcast_over(expr: Expr, reduced: TensorView, positions: list[int]) -> bool:
    if expr.op is not OpType.broadcast:
        return False
    out = expr.output
    return len(out.domain) == len(reduced.domain) and all(
        out.domain[i].is_broadcast for i in positions)


def _buffer_width(candidate: Candidate, buffer: TensorView) -> int:
    """A buffer upcast from a value made in the segment is held at the narrower width."""
    producer = candidate.definition(buffer)
    if producer is not None and candidate.contains(producer) and producer.op is OpType.cast:
        source = producer.inputs[0]
        if not candidate.is_input(source) and itemsize(source) < itemsize(buffer):
            return itemsize(source)
    return itemsize(buffer)
