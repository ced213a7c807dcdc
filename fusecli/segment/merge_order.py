"""Merges that nvFuser's segmenter makes before, or instead of, its plain rounds.

- ``merge_up_and_down_casts``: MergeUpAndDownCast (``csrc/fusion_segmenter.cpp``), before the
  rounds: an up-cast, the ops after it, and the down-cast that ends them, as one segment
  (Thunder's bf16 -> float -> bf16 pattern).
- ``preferred_pairs``: PreferredMergeCandidatePicker (same file), at the start of each round of
  ``findSegments``: a lone select-like op (index_select, gather, take_along_axis producing a
  broadcast, select) pairs with the producer of the tensor it looks up, and a group holding a
  pad of a tensor another group makes pairs with the consumer of the pad's output. When any
  preferred pair merges, the round merges nothing else.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from fusecli.ir import dtype as dt
from fusecli.ir.nodes import Expr
from fusecli.ir.optype import OpType
from fusecli.segment.groups import Group, GroupGraph

Schedule = Callable[[Sequence[Expr]], "str | None"]
_SELECT_LIKE = (OpType.index_select, OpType.gather, OpType.take_along_axis, OpType.select)


def preferred_pairs(
    groups: GroupGraph, candidates: Callable[[Group], list[Group]]
) -> list[tuple[Group, Group]]:
    """The picker's (group, neighbor) pairs, in the groups' order, each group's first."""
    pairs = []
    for group in groups.alive():
        if group.merged:
            continue
        neighbor = _select_like_producer(groups, group, candidates)
        if neighbor is None:
            neighbor = _pad_consumer(groups, group, candidates)
        if neighbor is not None:
            pairs.append((group, neighbor))
    return pairs


def _select_like_producer(
    groups: GroupGraph, group: Group, candidates: Callable[[Group], list[Group]]
) -> Group | None:
    """mergeSelectLikeOpsWithProducers: a group of one select-like op whose looked-up tensor
    another group makes, the indexed dimension a broadcast in its output (any select)."""
    if len(group.exprs) != 1 or group.exprs[0].op not in _SELECT_LIKE:
        return None
    expr = group.exprs[0]
    lookup = expr.tensor_inputs()[0]
    if expr.op is not OpType.select:
        dim = expr.attr("dim") % max(1, expr.output.ndim)
        if not expr.output.logical[dim].is_broadcast:
            return None
    producer = next((g for g, values in groups.producers(group).items()
                     if any(v.uid == lookup.uid for v in values)), None)
    if producer is None or producer.merged or producer not in candidates(group):
        return None
    return producer


def _pad_consumer(
    groups: GroupGraph, group: Group, candidates: Callable[[Group], list[Group]]
) -> Group | None:
    """mergePadWithConsumers: a pad in the group whose input the group does not make (another
    group's, a fusion input, a forwarded cast of one); the first consumer group of the pad's
    output that is a merge candidate."""
    choices = candidates(group)
    if not choices:
        return None
    made_here = {o.uid for e in group.exprs for o in e.outputs}
    for expr in group.exprs:
        if expr.op is not OpType.pad or expr.tensor_inputs()[0].uid in made_here:
            continue
        for consumer, values in groups.consumers(group).items():
            if (any(v.uid == expr.output.uid for v in values) and not consumer.merged
                    and consumer in choices):
                return consumer
    return None


# -- MergeUpAndDownCast ---------------------------------------------------------------------------


def merge_cats_with_input_pads(groups: GroupGraph, schedule: Schedule) -> None:
    """MergeCatWithInputPads (csrc/fusion_segmenter.cpp), the first pre-merge: nvFuser builds a
    cat from a zero pad of each input and a CatOp, and merges the pads' groups into the cat's
    where a scheduler takes them. fusecli's cat is one expr, so what the pass changes is the
    order: the merged group is appended to the group list (``mergeAllGivenGroups``), so every
    merge round visits it last, after its neighbours have found their partners."""
    for group in [g for g in groups.alive() if len(g.exprs) == 1 and g.exprs[0].op is OpType.cat]:
        scheduler = schedule(group.exprs)
        if scheduler is not None:
            groups.join([group], scheduler)
    groups.compact()


def merge_up_and_down_casts(groups: GroupGraph, schedule: Schedule) -> None:
    """From an up-cast group, a breadth-first walk (getCandidateCastGroup): a group that is
    no down-cast brings in its consumer when it has a single consumer edge; a group that is no
    up-cast brings in each producer whose only consumer edge is to it. Two or more groups are
    merged when a scheduler accepts them together; after a merge the search starts over, and
    an up-cast already in a tried candidate is not a start again."""
    changed = True
    while changed:
        changed = False
        considered: set[int] = set()
        for start in list(groups.groups):
            if not start.alive or not _is_cast(start, up=True) or id(start) in considered:
                continue
            chosen = _cast_chain(groups, start)
            if len(chosen) < 2:
                continue
            considered.update(id(g) for g in chosen)
            scheduler = schedule([e for g in chosen for e in g.exprs])
            if scheduler is not None:
                groups.join(chosen, scheduler)
                changed = True
                break
        groups.compact()


def _cast_chain(groups: GroupGraph, start: Group) -> list[Group]:
    chosen: list[Group] = []
    queue = deque([start])
    while queue:
        group = queue.popleft()
        if not group.exprs or any(group is g for g in chosen):
            continue
        chosen.append(group)
        consumers = groups.consumers(group)
        if not _is_cast(group, up=False) and _edge_count(consumers) == 1:
            queue.append(next(iter(consumers)))
        if not _is_cast(group, up=True):
            for producer in groups.producers(group):
                if _edge_count(groups.consumers(producer)) == 1:
                    queue.append(producer)
    return chosen


def _edge_count(edges: dict) -> int:
    """Edges as nvFuser counts them: ``buildInitialSegments`` connects groups once per input of
    each expr, so ``mul(t, t)`` reading another group's ``t`` is two edges."""
    count = 0
    for consumer, values in edges.items():
        for uid in {value.uid for value in values}:
            count += sum(1 for e in consumer.exprs for v in e.inputs if v.uid == uid)
    return count


def _is_cast(group: Group, up: bool) -> bool:
    """A single cast between floating types to more bits (up) or fewer (down)."""
    if len(group.exprs) != 1 or group.exprs[0].op is not OpType.cast:
        return False
    expr = group.exprs[0]
    source, target = expr.inputs[0].dtype, expr.output.dtype
    if not (dt.is_floating(source) and dt.is_floating(target)):
        return False
    source_bits, target_bits = dt.info(source).bits, dt.info(target).bits
    return target_bits > source_bits if up else target_bits < source_bits
