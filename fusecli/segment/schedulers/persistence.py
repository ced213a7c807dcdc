"""Which tensors a persistent kernel keeps on chip, and along which dimensions
(``scheduler_utils::persistentBuffers``, csrc/scheduler/utils.cpp).

A tensor X is persistent when one of its uses leads to a reduction R and another use depends
on R (x in x * rsqrt(mean(x * x))) or feeds pointwise ops that meet R's result
(UnmappableReductionDomains, csrc/logical_domain_map.cpp: an input read by two privatized
casts, privatize.py), and R reduces one of X's dimensions that is no broadcast: only such a
dimension is unmappable to a consumer. An [N, 1] rstd read before and after a row reduction
is read again, not held; an input of the segment without an unmappable dimension is no
buffer a projection recomputes from (``projectable_buffer_inputs``).
Reduction reachability is a bitmask per expr: linear passes.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusecli.ir.nodes import TensorView
from fusecli.segment.candidate import Candidate
from fusecli.segment.dims import DimKey


@dataclass(frozen=True, slots=True)
class Persistence:
    buffers: list[TensorView]
    unmappable: frozenset[DimKey]  # dimension classes of the buffers a reduction cuts


def persistent_buffers(candidate: Candidate) -> list[TensorView]:
    """Tensors a kernel must keep on chip across a reduction: read before it and after it."""
    return candidate.memo("persistence", _persistence).buffers


def holds_unmappable_dim(candidate: Candidate, tensor: TensorView) -> bool:
    """Whether a non-broadcast dimension of ``tensor`` is one a buffer cannot map across its
    reduction (persistentBuffers' test of the projectable buffers' inputs)."""
    unmappable = candidate.memo("persistence", _persistence).unmappable
    return any(candidate.dims.class_of(tensor, position) in unmappable
               for position in _iterated(tensor))


def _persistence(candidate: Candidate) -> Persistence:
    exprs = candidate.exprs
    bit = {e.uid: 1 << i for i, e in enumerate(candidate.reduction_exprs)}
    if not bit:
        return Persistence([], frozenset())
    leads_to: dict[int, int] = {}  # expr uid -> reductions reachable from it (itself included)
    for expr in reversed(exprs):
        mask = bit.get(expr.uid, 0)
        for out in expr.outputs:
            for consumer in candidate.uses_inside(out):
                mask |= leads_to.get(consumer.uid, 0)
        leads_to[expr.uid] = mask
    after: dict[int, int] = {}  # expr uid -> reductions it depends on (itself excluded)
    produced_after: dict[int, int] = {}  # value uid -> reductions it depends on (incl. producer)
    for expr in exprs:
        mask = 0
        for value in expr.inputs:
            mask |= produced_after.get(value.uid, 0)
        after[expr.uid] = mask
        for out in expr.outputs:
            produced_after[out.uid] = mask | bit.get(expr.uid, 0)
    meets: dict[int, int] = {}  # expr uid -> reductions met by it or the pointwise ops after it
    for expr in reversed(exprs):
        meets[expr.uid] = after[expr.uid]
        for consumer in (c for out in expr.outputs for c in candidate.uses_inside(out)):
            meets[expr.uid] |= 0 if bit.keys() & {expr.uid, consumer.uid} else meets[consumer.uid]
    buffers: list[TensorView] = []
    unmappable: set[DimKey] = set()
    for value in candidate.tensors:
        uses = candidate.uses_inside(value)
        if len(uses) < 2 or all(d.is_broadcast for d in value.logical):
            continue
        reaching = met = 0
        for use in uses:
            reaching |= leads_to[use.uid]
        for use in uses:
            met |= meets[use.uid] & reaching
        cut = _reduced_classes(candidate, met, bit) & _own_classes(candidate, value)
        if cut:
            buffers.append(value)
            unmappable |= cut
    return Persistence(buffers, frozenset(unmappable))


def _reduced_classes(candidate: Candidate, met: int, bit: dict[int, int]) -> set[DimKey]:
    """The dimension classes the reductions in ``met`` reduce."""
    return {candidate.dims.class_of(out, position)
            for e in candidate.reduction_exprs if bit[e.uid] & met
            for out in e.tensor_outputs()[:1]
            for position, domain in enumerate(out.domain) if domain.is_reduction}


def _own_classes(candidate: Candidate, tensor: TensorView) -> set[DimKey]:
    return {candidate.dims.class_of(tensor, position) for position in _iterated(tensor)}


def _iterated(tensor: TensorView) -> list[int]:
    """Domain positions of the logical dimensions that are no broadcast."""
    return [position for position, domain in enumerate(tensor.domain)
            if not domain.is_reduction and not domain.is_broadcast]
