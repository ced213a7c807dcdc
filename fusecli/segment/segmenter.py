"""nvFuser's segmentation algorithm (csrc/fusion_segmenter.cpp), with its decisions logged.

0. Exprs no fusion output depends on are dropped (dead code).
1. Without ``segment_set`` hints, try the whole fusion as one segment.
2. Otherwise: one group per tensor expr; chains of unary ops reading a fusion input are
   forwarded (kept out of the groups and joined to their consumers at the end); groups that
   produce fusion outputs must have a scheduler.
   Pre-merge: an up-cast, what follows it and the down-cast ending it join first.
3. Level-based pairwise merging (Herrmann et al.): each round, each group merges with at most
   one neighbour within one level, so the group graph stays acyclic; repeated until no merge.
4. A final merge of producer-consumer pairs, edges through fusion outputs included.
5. Every final group gets a scheduler, or segmentation fails with a diagnosis.

The decision log records every candidate and every verdict, but only when asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fusecli.ir.nodes import Expr, Fusion, TensorView, Vector
from fusecli.ir.optype import OpKind, OpType
from fusecli.segment.candidate import Candidate, FusionGraph, RuntimeInfo
from fusecli.segment.heuristics import HeuristicParams
from fusecli.segment.result import Diagnosis, LogEntry, Segment, SegmentedFusion
from fusecli.segment.rules import PROFILES, ScheduleContext, Switches, Verdict
from fusecli.segment.schedulers import propose

_FORWARDABLE = frozenset({OpKind.UNARY, OpKind.CAST})


@dataclass(eq=False, slots=True)
class _Group:
    exprs: list[Expr]
    scheduler: str | None = None
    level: int = 0
    merged: bool = False
    alive: bool = True


class Segmenter:
    def __init__(
        self,
        fusion: Fusion,
        inputs: Sequence[object] | None,
        profile: str = "nvfuser",
        switches: Switches | None = None,
        keep_log: bool = False,
    ) -> None:
        from fusecli.segment.lowering import lower_for_profile

        self.profile = PROFILES[profile]
        self.fusion = lower_for_profile(fusion, self.profile)
        self.graph = FusionGraph(self.fusion)
        self.ctx = ScheduleContext(
            RuntimeInfo(self.fusion, inputs), self.profile, switches or Switches()
        )
        self.log: list[LogEntry] | None = [] if keep_log else None
        self.groups: list[_Group] = []
        self.group_of: dict[int, _Group] = {}  # expr uid -> group
        self.forwarded: list[list[Expr]] = []
        self._producer_cache: dict[int, dict[_Group, list[TensorView]]] = {}
        self._consumer_cache: dict[int, dict[_Group, list[TensorView]]] = {}
        self._answers: dict[frozenset[int], tuple[str | None, list[Verdict], str | None]] = {}

    # -- asking the schedulers ----------------------------------------------------------------

    def try_schedule(self, exprs: Sequence[Expr], phase: str) -> str | None:
        """Ask the schedulers about ``exprs`` as one segment; answers are memoized per set."""
        key = frozenset(e.uid for e in exprs)
        known = self._answers.get(key)
        if known is not None and self.log is None:
            return known[0]
        candidate = Candidate.of(self.graph, exprs)
        if known is not None:
            scheduler, verdicts, skipped = known
        else:
            skipped = _segment_set_violation(candidate)
            scheduler, verdicts = (None, []) if skipped else propose(candidate, self.ctx)
            self._answers[key] = (scheduler, verdicts, skipped)
        self._record(phase, candidate, tuple(verdicts), skipped)
        return scheduler

    def params_of(self, exprs: Sequence[Expr]) -> HeuristicParams | None:
        """The heuristics of the verdict that accepted ``exprs`` (asked before)."""
        verdicts = self._answers[frozenset(e.uid for e in exprs)][1]
        return verdicts[-1].params if verdicts else None

    def _record(self, phase, candidate, verdicts, skipped=None) -> None:
        if self.log is not None:
            self.log.append(LogEntry(len(self.log), phase, candidate, verdicts, skipped))

    # -- the algorithm ------------------------------------------------------------------------

    def run(self) -> SegmentedFusion:
        result = SegmentedFusion(self.fusion, self.profile.name, log=self.log)
        live = self._live_exprs()
        tensor_exprs = [
            e for e in self.fusion.exprs if self.graph.is_tensor_expr(e) and e.uid in live
        ]
        has_hints = any(e.op is OpType.segment_set for e in tensor_exprs)
        if not has_hints:
            scheduler = self.try_schedule(tensor_exprs, "whole")
            if scheduler is not None:
                candidate = Candidate.of(self.graph, tensor_exprs)
                params = self.params_of(tensor_exprs)
                result.segments = [Segment(0, scheduler, candidate, params)]
                return result
        self._initial_groups(tensor_exprs)
        for group in self.groups:
            if self._produces_fusion_output(group):
                group.scheduler = self.try_schedule(group.exprs, "initial")
                if group.scheduler is None:
                    result.failure = self._diagnose(group.exprs)
                    return result
        self._merge_up_and_down_casts()
        self._merge_rounds()
        self._final_merge()
        self._resolve_forwarded()
        return self._finalize(result)

    def _live_exprs(self) -> set[int]:
        """Exprs some fusion output depends on; the rest is dead code no kernel computes."""
        live: set[int] = set()
        stack = [o.value for o in self.fusion.outputs]
        seen: set[int] = set()
        while stack:
            value = stack.pop()
            if value.uid in seen:
                continue
            seen.add(value.uid)
            producer = self.graph.producer.get(value.uid)
            if producer is not None and producer.uid not in live:
                live.add(producer.uid)
                for operand in producer.inputs:  # a shape vector's scalars are read too
                    stack.extend(operand.elements if isinstance(operand, Vector) else (operand,))
        return live

    def _initial_groups(self, tensor_exprs: list[Expr]) -> None:
        forwarded_uids = self._forward_inputs(tensor_exprs)
        for expr in tensor_exprs:
            if expr.uid in forwarded_uids:
                continue
            group = _Group([expr])
            self.groups.append(group)
            self.group_of[expr.uid] = group

    def _forward_inputs(self, tensor_exprs: list[Expr]) -> set[int]:
        """Unary chains from fusion inputs, each value with one use that is not an output."""
        excluded: set[int] = set()
        for value in self.fusion.inputs:
            chain: list[Expr] = []
            current = value
            while True:
                uses = self.graph.consumers.get(current.uid, [])
                if len(uses) != 1 or uses[0].op.kind not in _FORWARDABLE:
                    break
                use = uses[0]
                out = use.output
                if out.uid in self.graph.output_uids:
                    break
                if any(c.op is OpType.segment_set for c in self.graph.consumers.get(out.uid, [])):
                    break
                if not isinstance(out, TensorView):
                    break
                chain.append(use)
                current = out
            if chain and self.graph.consumers.get(current.uid):
                self.forwarded.append(chain)
                excluded.update(e.uid for e in chain)
        return excluded

    def _produces_fusion_output(self, group: _Group) -> bool:
        return any(o.uid in self.graph.output_uids for e in group.exprs for o in e.outputs)

    # -- the group graph ------------------------------------------------------------------------

    def _producers(self, group: _Group) -> dict[_Group, list[TensorView]]:
        cached = self._producer_cache.get(id(group))
        if cached is not None:
            return cached
        found: dict[_Group, list[TensorView]] = {}
        for expr in group.exprs:
            for value in expr.tensor_inputs():
                producer = self.graph.producer.get(value.uid)
                if producer is None:
                    continue
                owner = self.group_of.get(producer.uid)
                if owner is not None and owner is not group:
                    found.setdefault(owner, []).append(value)
        self._producer_cache[id(group)] = found
        return found

    def _consumers(self, group: _Group) -> dict[_Group, list[TensorView]]:
        cached = self._consumer_cache.get(id(group))
        if cached is not None:
            return cached
        found: dict[_Group, list[TensorView]] = {}
        for expr in group.exprs:
            for value in expr.tensor_outputs():
                for consumer in self.graph.consumers.get(value.uid, []):
                    owner = self.group_of.get(consumer.uid)
                    if owner is not None and owner is not group:
                        found.setdefault(owner, []).append(value)
        self._consumer_cache[id(group)] = found
        return found

    def _neighbors(self, group: _Group) -> list[_Group]:
        """Producers and consumers, except through edges that are all fusion outputs."""
        neighbors = []
        for table in (self._producers(group), self._consumers(group)):
            for other, values in table.items():
                if any(v.uid not in self.graph.output_uids for v in values):
                    if other not in neighbors:
                        neighbors.append(other)
        return neighbors

    def _reset_levels(self) -> None:
        alive = [g for g in self.groups if g.alive]
        order = self._toposort(alive)
        for group in order:
            producers = self._producers(group)
            group.level = 1 + max((p.level for p in producers), default=-1)

    def _toposort(self, groups: list[_Group]) -> list[_Group]:
        pending = {id(g): len(self._producers(g)) for g in groups}
        ready = [g for g in groups if pending[id(g)] == 0]
        order = []
        while ready:
            group = ready.pop(0)
            order.append(group)
            for consumer in self._consumers(group):
                pending[id(consumer)] -= 1
                if pending[id(consumer)] == 0:
                    ready.append(consumer)
        if len(order) != len(groups):
            raise RuntimeError("segment graph is not a DAG")
        return order

    # -- merging --------------------------------------------------------------------------------

    def _merge_candidates(self, group: _Group) -> list[_Group]:
        if group.merged:
            return []
        neighbors = self._neighbors(group)
        if any(n.merged and abs(n.level - group.level) <= 1 for n in neighbors):
            return []
        chosen = []
        for neighbor in neighbors:
            if neighbor.merged or abs(neighbor.level - group.level) > 1:
                continue
            blocked = any(
                other.merged
                and (abs(other.level - group.level) <= 1 or abs(other.level - neighbor.level) <= 1)
                for other in self._neighbors(neighbor)
            )
            if not blocked:
                chosen.append(neighbor)
        return chosen

    def _merge_rounds(self) -> None:
        while True:
            self._reset_levels()
            pairs: list[tuple[_Group, _Group, str]] = []
            for group in [g for g in self.groups if g.alive]:
                if group.merged:
                    continue
                for neighbor in self._merge_candidates(group):
                    scheduler = self.try_schedule(group.exprs + neighbor.exprs, "merge")
                    if scheduler is not None:
                        group.merged = neighbor.merged = True
                        pairs.append((group, neighbor, scheduler))
                        break
            if not pairs:
                return
            for first, second, scheduler in pairs:
                self._join(first, second, scheduler)
            self._compact()

    def _join(self, first: _Group, second: _Group, scheduler: str) -> _Group:
        return self._join_all([first, second], scheduler)

    def _join_all(self, groups: list[_Group], scheduler: str) -> _Group:
        joined = _Group([e for g in groups for e in g.exprs], scheduler)
        for group in groups:
            group.alive = False
        for expr in joined.exprs:
            self.group_of[expr.uid] = joined
        self._producer_cache.clear()  # edges changed: recomputed on demand
        self._consumer_cache.clear()
        self.groups.append(joined)  # dead groups are dropped by _compact
        return joined

    def _compact(self) -> None:
        self.groups = [g for g in self.groups if g.alive]

    def _merge_up_and_down_casts(self) -> None:
        """nvFuser's MergeUpAndDownCast: an up-cast, the ops after it, and the down-cast that
        ends them, as one segment (Thunder's bf16 -> float -> bf16 pattern).

        From a single up-cast group, follow single consumers until a down-cast or a fork;
        along the way pull in producers whose only consumer is on the path. Two or more
        groups are merged when a scheduler accepts them together.
        """
        changed = True
        while changed:
            changed = False
            for start in [g for g in self.groups if _is_cast(g, up=True)]:
                if not start.alive:
                    continue
                chosen = self._cast_chain(start)
                if len(chosen) < 2 or not all(g.alive for g in chosen):
                    continue
                scheduler = self.try_schedule([e for g in chosen for e in g.exprs], "pre_merge")
                if scheduler is not None:
                    self._join_all(chosen, scheduler)
                    changed = True
            self._compact()

    def _cast_chain(self, start: _Group) -> list[_Group]:
        chosen, current = [start], start
        while not (current is not start and _is_cast(current, up=False)):
            consumers = list(self._consumers(current))
            if len(consumers) != 1 or consumers[0] in chosen:
                break
            current = consumers[0]
            chosen.append(current)
            if not _is_cast(current, up=True):
                for producer in self._producers(current):
                    if producer not in chosen and len(self._consumers(producer)) == 1:
                        chosen.append(producer)
        return chosen

    def _final_merge(self) -> None:
        merged = True
        while merged:
            merged = False
            self._reset_levels()
            for producer in sorted(self.groups, key=lambda g: g.level):
                consumers = list(self._consumers(producer))
                for consumer in consumers:
                    others = [c for c in consumers if c is not consumer]
                    if any(self._reaches(other, consumer) for other in others):
                        continue
                    scheduler = self.try_schedule(producer.exprs + consumer.exprs, "final_merge")
                    if scheduler is not None:
                        self._join(producer, consumer, scheduler)
                        self._compact()
                        merged = True
                        break
                if merged:
                    break

    def _reaches(self, start: _Group, goal: _Group) -> bool:
        stack, seen = [start], set()
        while stack:
            group = stack.pop()
            if group is goal:
                return True
            if id(group) in seen:
                continue
            seen.add(id(group))
            stack.extend(self._consumers(group))
        return False

    def _resolve_forwarded(self) -> None:
        """Join each forwarded chain to each consumer group that accepts it, else its own."""
        self._producer_cache.clear()
        self._consumer_cache.clear()
        for chain in self.forwarded:
            end = chain[-1].output
            consumers = []
            for expr in self.graph.consumers.get(end.uid, []):
                owner = self.group_of.get(expr.uid)
                if owner is not None and owner.alive and owner not in consumers:
                    consumers.append(owner)
            standalone = False
            for consumer in consumers:
                scheduler = self.try_schedule(chain + consumer.exprs, "forward")
                if scheduler is not None:
                    consumer.exprs = chain + consumer.exprs
                    consumer.scheduler = scheduler
                else:
                    standalone = True
            if standalone or not consumers:
                group = _Group(list(chain))
                self.groups.append(group)
            for expr in chain:
                self.group_of.setdefault(expr.uid, consumers[0] if consumers else group)

    def _finalize(self, result: SegmentedFusion) -> SegmentedFusion:
        alive = [g for g in self.groups if g.alive]
        for group in self._toposort_with_duplicates(alive):
            scheduler = self.try_schedule(group.exprs, "finalize")
            if scheduler is None:
                result.failure = self._diagnose(group.exprs)
                return result
            candidate = Candidate.of(self.graph, group.exprs)
            result.segments.append(Segment(len(result.segments), scheduler, candidate,
                                           self.params_of(group.exprs)))
        return result

    def _toposort_with_duplicates(self, groups: list[_Group]) -> list[_Group]:
        """Run order: a group runs after every group producing a value it reads."""
        produced_by: dict[int, _Group] = {}
        for group in groups:
            for expr in group.exprs:
                for out in expr.outputs:
                    produced_by.setdefault(out.uid, group)
        own = {id(g): {o.uid for e in g.exprs for o in e.outputs} for g in groups}
        needs = {
            id(g): {
                id(produced_by[v.uid])
                for e in g.exprs for v in e.tensor_inputs()
                if v.uid in produced_by and v.uid not in own[id(g)]
            }
            for g in groups
        }
        order, done = [], set()
        while len(order) < len(groups):
            progressed = False
            for group in groups:
                if id(group) not in done and needs[id(group)] <= done:
                    order.append(group)
                    done.add(id(group))
                    progressed = True
            if not progressed:
                raise RuntimeError("segment graph is not a DAG")
        return order

    def _diagnose(self, exprs: Sequence[Expr]) -> Diagnosis:
        from fusecli.segment.diagnosis import advise
        from fusecli.segment.schedulers import check

        candidate = Candidate.of(self.graph, exprs)
        verdicts = tuple(check(name, candidate, self.ctx) for name in self.ctx.order)
        return Diagnosis(candidate, verdicts, advise(candidate, verdicts, self.profile.name))


def _is_cast(group: _Group, up: bool) -> bool:
    """A single cast between floating types to more bits (up) or fewer (down)."""
    from fusecli.ir import dtype as dt

    if len(group.exprs) != 1 or group.exprs[0].op is not OpType.cast:
        return False
    expr = group.exprs[0]
    source, target = expr.inputs[0].dtype, expr.output.dtype
    if not (dt.is_floating(source) and dt.is_floating(target)):
        return False
    source_bits, target_bits = dt.info(source).bits, dt.info(target).bits
    return target_bits > source_bits if up else target_bits < source_bits


def _segment_set_violation(candidate: Candidate) -> str | None:
    """tryingToMergeSegmenterSet: a segment_set output must end its segment."""
    for expr in candidate.exprs:
        if expr.op is OpType.segment_set:
            out = expr.output
            if out.uid not in candidate.output_uids or candidate.uses_inside(out):
                return "segment_set output must be a segment output with no use inside it"
    return None


def segment_fusion(
    fusion: Fusion,
    inputs: Sequence[object] | None = None,
    *,
    profile: str = "nvfuser",
    switches: Switches | None = None,
    keep_log: bool = False,
) -> SegmentedFusion:
    """Segment ``fusion`` for ``inputs`` (concrete sizes enable run-time checks)."""
    return Segmenter(fusion, inputs, profile, switches, keep_log).run()
