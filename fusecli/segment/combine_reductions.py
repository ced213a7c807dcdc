"""nvFuser's CombineReductions pre-merge pass (csrc/fusion_segmenter.cpp).

Before the level-based merges, groups holding reductions of the same signature (the output's
rank and which of its axes are reduced) are merged when a scheduler takes them together:

- *vertically*, when one feeds the other: the two and every group on a path between them;
- *horizontally*, when neither feeds the other but they share a producer: for a nearest
  common producer, one of its consumers with everything between it and the first reduction,
  and one with everything between it and the second (batch norm backward's two channel sums,
  which read one cast, become one reduction segment).

A set is refused when a fusion output crosses an edge inside it or it holds reductions of
another signature. After each merge the search starts over. It runs only when two groups
have reductions of one signature (``CombineReductions::shouldRun``).
"""

from __future__ import annotations

from collections.abc import Callable

from fusecli.ir.nodes import TensorView
from fusecli.ir.optype import OpKind
from fusecli.segment.groups import Group, GroupGraph

Signature = tuple[int, tuple[int, ...]]  # (the output's rank, its reduced positions)
TrySchedule = Callable[[list], str | None]


def signature(group: Group) -> Signature | None:
    """The group's reduction signature (its last reduction's, as nvFuser's), or None."""
    found = None
    for expr in group.exprs:
        if expr.op.kind in (OpKind.REDUCTION, OpKind.NORMALIZATION):
            out = expr.tensor_outputs()[0]
            reduced = tuple(i for i, d in enumerate(out.domain) if d.is_reduction)
            if reduced:
                found = (len(out.domain), reduced)
    return found


def combine_reductions(
    groups: GroupGraph, try_schedule: TrySchedule, inputs: list[TensorView]
) -> None:
    """``inputs``: the fusion inputs and the ends of forwarded chains, which nvFuser gives
    auxiliary groups that count as producers of their readers."""
    signed = {id(g): s for g in groups.alive() if (s := signature(g)) is not None}
    if len(signed) == len(set(signed.values())):
        return  # shouldRun: no two groups reduce alike
    merged = True
    while merged:
        merged = False
        with_reductions = [g for g in groups.alive() if id(g) in signed]
        for index, first in enumerate(with_reductions):
            for second in with_reductions[index + 1:]:
                if signed[id(first)] != signed[id(second)]:
                    continue
                joined = _vertical(groups, signed, first, second, try_schedule)
                if joined is None:
                    joined = _horizontal(groups, signed, first, second, try_schedule, inputs)
                if joined is not None:
                    signed[id(joined)] = signed[id(first)]
                    merged = True
                    break
            if merged:
                break
    groups.compact()


def _vertical(groups, signed, first, second, try_schedule) -> Group | None:
    if groups.reaches(second, first):
        producer, consumer = second, first
    elif groups.reaches(first, second):
        producer, consumer = first, second
    else:
        return None
    return _merge(groups, _between(groups, signed, producer, consumer), try_schedule)


def _horizontal(groups, signed, first, second, try_schedule, inputs) -> Group | None:
    above_first, above_second = groups.upstream(first), groups.upstream(second)
    if id(second) in above_first or id(first) in above_second:
        return None
    # producers: groups, and the inputs' auxiliary groups, each by the groups it feeds
    producers = [(g, list(groups.consumers(g))) for g in groups.alive()
                 if g is not first and g is not second]
    producers += [(None, _readers(groups, value)) for value in inputs]
    common = [(group, consumers) for group, consumers in producers
              if any(id(c) in above_first for c in consumers)
              and any(id(c) in above_second for c in consumers)]
    # the nearest: no common producer of another common producer (auxiliary groups have none)
    common_groups = {id(group) for group, _ in common if group is not None}
    nearest = []
    for group, consumers in common:
        below = set().union(*(groups.downstream(c) for c in consumers))
        if not (below & common_groups) - {id(group)}:
            nearest.append(consumers)
    for consumers in nearest:
        for to_first in consumers:
            with_first = _between(groups, signed, to_first, first)
            if not with_first:
                continue
            for to_second in consumers:
                with_second = _between(groups, signed, to_second, second)
                if not with_second:
                    continue
                chosen = list({id(g): g for g in (*with_first, *with_second)}.values())
                joined = _merge(groups, chosen, try_schedule)
                if joined is not None:
                    return joined
    return None


def _readers(groups: GroupGraph, value: TensorView) -> list[Group]:
    found: dict[int, Group] = {}
    for expr in groups.graph.consumers.get(value.uid, []):
        owner = groups.group_of.get(expr.uid)
        if owner is not None and owner.alive:
            found.setdefault(id(owner), owner)
    return list(found.values())


def _between(groups, signed, producer: Group, consumer: Group) -> list[Group]:
    """getValidMinVerticalMergedGroupSet: ``producer``, ``consumer`` and every group on a
    path between them, or nothing when a fusion output crosses an edge among them or their
    reductions differ."""
    if producer is consumer:
        return [consumer]
    below = groups.downstream(producer)
    if id(consumer) not in below:
        return []
    on_paths = below & groups.upstream(consumer)
    chosen = [g for g in groups.alive() if id(g) in on_paths]
    members = {id(g) for g in chosen}
    outputs = groups.graph.output_uids
    signatures = set()
    for group in chosen:
        for other, values in groups.consumers(group).items():
            if id(other) in members and any(v.uid in outputs for v in values):
                return []
        if id(group) in signed:
            signatures.add(signed[id(group)])
    return chosen if len(signatures) <= 1 else []


def _merge(groups: GroupGraph, chosen: list[Group], try_schedule) -> Group | None:
    if len(chosen) < 2:
        return None
    scheduler = try_schedule([e for g in chosen for e in g.exprs])
    if scheduler is None:
        return None
    return groups.join(chosen, scheduler)
