"""nvFuser's segmentation algorithm (csrc/fusion_segmenter.cpp), with its decisions logged.

0. The profile's pre-segmentation rewrites run (``lowering.py``: under ``nvfuser``,
   MarkAliasesPrepare's segment_set hints before outputs' meta ops); exprs no fusion output
   depends on are dropped (dead code).
1. Without ``segment_set`` hints, try the whole fusion as one segment. Otherwise a var_mean
   that would make a persistent kernel becomes two passes (``welford.py``).
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

from fusecli.ir.nodes import Expr, Fusion, TensorView
from fusecli.ir.optype import OpKind, OpType
from fusecli.segment.aliases import find_aliases
from fusecli.segment.candidate import Candidate, FusionGraph, RuntimeInfo
from fusecli.segment.combine_reductions import combine_reductions
from fusecli.segment.diagnosis import advise
from fusecli.segment.groups import Group, GroupGraph
from fusecli.segment.heuristics import HeuristicParams
from fusecli.segment.lowering import pre_segmentation
from fusecli.segment.merge_order import (
    merge_cats_with_input_pads,
    merge_up_and_down_casts,
    preferred_pairs,
)
from fusecli.segment.privatize import Privatized, privatize_ops, revert_privatized
from fusecli.segment.result import Diagnosis, LogEntry, Segment, SegmentedFusion
from fusecli.segment.rules import PROFILES, ScheduleContext, Switches, Verdict
from fusecli.segment.schedulers import check, propose
from fusecli.segment.welford import translate_applicable_welfords

_FORWARDABLE = frozenset({OpKind.UNARY, OpKind.CAST})


class Segmenter:
    def __init__(
        self,
        fusion: Fusion,
        inputs: Sequence[object] | None,
        profile: str = "nvfuser",
        switches: Switches | None = None,
        keep_log: bool = False,
    ) -> None:
        self.profile = PROFILES[profile]
        runtime = RuntimeInfo(fusion, inputs)  # the rewrites keep the inputs and their sizes
        self.fusion = pre_segmentation(fusion, self.profile, runtime)
        self.graph = FusionGraph(self.fusion, runtime, self.profile.allocation_order_inference)
        self.ctx = ScheduleContext(runtime, self.profile, switches or Switches(),
                                   aliases=find_aliases(self.fusion, runtime))
        self.log: list[LogEntry] | None = [] if keep_log else None
        self.groups = GroupGraph(self.graph)
        self.forwarded: list[list[Expr]] = []
        self._copied: frozenset[int] = frozenset()  # exprs of forwarded fulls (_forward_inputs)
        self.privatized = Privatized(self.fusion)  # copies of up-casts (privatize.py)
        self._answers: dict[frozenset[int], tuple[str | None, list[Verdict], str | None]] = {}

    # -- asking the schedulers ----------------------------------------------------------------

    def try_schedule(self, exprs: Sequence[Expr], phase: str) -> str | None:
        """Ask the schedulers about ``exprs`` as one segment; answers are memoized per set."""
        key = frozenset(e.uid for e in exprs)
        known = self._answers.get(key)
        if known is not None and self.log is None:
            return known[0]
        candidate = self._candidate(exprs)
        if known is not None:
            scheduler, verdicts, skipped = known
        else:
            skipped = candidate.segment_set_violation()
            scheduler, verdicts = (None, []) if skipped else propose(candidate, self.ctx)
            self._answers[key] = (scheduler, verdicts, skipped)
        self._record(phase, candidate, tuple(verdicts), skipped)
        return scheduler

    def params_of(self, exprs: Sequence[Expr]) -> HeuristicParams | None:
        """The heuristics of the verdict that accepted ``exprs`` (asked before)."""
        verdicts = self._answers[frozenset(e.uid for e in exprs)][1]
        return verdicts[-1].params if verdicts else None

    def gpu_notes_of(self, exprs: Sequence[Expr]) -> tuple[str, ...]:
        """Where the scheduler of ``exprs`` (asked before) rests on a GPU query: the notes of
        its verdicts, one per scheduler (hardware.py)."""
        verdicts = self._answers[frozenset(e.uid for e in exprs)][1]
        return tuple(f"{v.scheduler}: {v.hardware}" for v in verdicts if v.hardware)

    def _record(self, phase, candidate, verdicts, skipped=None) -> None:
        if self.log is not None:
            self.log.append(LogEntry(len(self.log), phase, candidate, verdicts, skipped))

    # -- the algorithm ------------------------------------------------------------------------

    def run(self) -> SegmentedFusion:
        result = SegmentedFusion(self.fusion, self.profile.name, log=self.log)
        tensor_exprs = self.graph.live_tensor_exprs()
        has_hints = any(e.op is OpType.segment_set for e in tensor_exprs)
        if not has_hints:
            scheduler = self.try_schedule(tensor_exprs, "whole")
            if scheduler is not None:
                candidate = Candidate.of(self.graph, tensor_exprs)
                params = self.params_of(tensor_exprs)
                result.segments = [Segment(0, scheduler, candidate, params,
                                           self.gpu_notes_of(tensor_exprs))]
                return result
        # privatizeOps runs in SegmentCandidateFinder's constructor, before findSegments
        # translates var_mean: a cast a var_mean and one other op read gets one copy, not two
        if self.profile.privatize_ops:
            self.privatized = privatize_ops(self.fusion, tensor_exprs)
            if self.privatized.original_of:
                self._adopt(self.privatized.fusion)
                tensor_exprs = self.graph.live_tensor_exprs()
        translated = translate_applicable_welfords(self.fusion, self.ctx, tensor_exprs)
        if translated is not None:  # the segments are built again from the two-pass fusion
            self._adopt(translated)
            tensor_exprs = self.graph.live_tensor_exprs()
            # the copies keep their uids through the translation
            self.privatized = Privatized(translated, dict(self.privatized.original_of))
        result = SegmentedFusion(self.fusion, self.profile.name, log=self.log)
        self._initial_groups(self.groups.in_walk_order(tensor_exprs))
        for group in self.groups.groups:
            if self._produces_fusion_output(group):
                group.scheduler = self.try_schedule(group.exprs, "initial")
                if group.scheduler is None:
                    result.failure = self._diagnose(group.exprs)
                    return result
        if self.profile.merge_cat_with_input_pads:
            merge_cats_with_input_pads(self.groups, lambda e: self.try_schedule(e, "pre_merge"))
        if self.profile.merge_up_and_down_casts:
            merge_up_and_down_casts(self.groups, lambda e: self.try_schedule(e, "pre_merge"))
        forwarded_ends = [chain[-1].output for chain in self.forwarded]
        combine_reductions(self.groups, lambda exprs: self.try_schedule(exprs, "combine"),
                           [*self.fusion.inputs, *forwarded_ends])
        self._merge_rounds()
        self._final_merge()
        self._resolve_forwarded()
        self._revert_privatized()
        return self._finalize(SegmentedFusion(self.fusion, self.profile.name, log=self.log))

    def _adopt(self, fusion: Fusion) -> None:
        """Segment ``fusion`` (a rewrite of the one segmented so far) from here on."""
        self.fusion = fusion
        self.graph = FusionGraph(fusion, self.ctx.runtime,
                                 self.profile.allocation_order_inference)
        self.ctx.aliases = find_aliases(fusion, self.ctx.runtime)
        self.groups = GroupGraph(self.graph)
        self._answers.clear()

    def _initial_groups(self, tensor_exprs: list[Expr]) -> None:
        forwarded_uids = self._forward_inputs(tensor_exprs)
        for expr in tensor_exprs:
            if expr.uid in forwarded_uids:
                continue
            self.groups.add(Group([expr]))

    def _forward_inputs(self, tensor_exprs: list[Expr]) -> set[int]:
        """Unary chains from fusion inputs (and from full), each value with one use that is no
        output."""
        excluded: set[int] = set()
        live = {e.uid for e in tensor_exprs}

        def uses_of(value) -> list[Expr]:  # dead tensor exprs neither use nor keep a value
            return [
                use for use in self.graph.consumers.get(value.uid, [])
                if use.uid in live or not self.graph.is_tensor_expr(use)
            ]

        # nvFuser's forwardInputs treats the output of a FullOp that is no fusion output as a
        # fusion input too: the full joins each consumer segment (a copy in each)
        factories = [
            expr for expr in tensor_exprs
            if expr.op is OpType.full and expr.output.uid not in self.graph.output_uids
        ] if self.profile.forward_full else []
        starts = [(value, []) for value in self.fusion.inputs]
        starts += [(expr.output, [expr]) for expr in factories]
        for value, first in starts:
            chain: list[Expr] = list(first)
            current = value
            while True:
                uses = uses_of(current)
                if len(uses) != 1 or uses[0].op.kind not in _FORWARDABLE:
                    break
                use = uses[0]
                out = use.output
                if out.uid in self.graph.output_uids:
                    break
                if any(c.op is OpType.segment_set for c in uses_of(out)):
                    break
                if not isinstance(out, TensorView):
                    break
                chain.append(use)
                current = out
            if chain and uses_of(current):
                self.forwarded.append(chain)
                excluded.update(e.uid for e in chain)
        self._copied = frozenset(
            e.uid for chain in self.forwarded if chain[0].op is OpType.full for e in chain
        )
        return excluded

    def _produces_fusion_output(self, group: Group) -> bool:
        return any(o.uid in self.graph.output_uids for e in group.exprs for o in e.outputs)

    # -- merging --------------------------------------------------------------------------------

    def _merge_candidates(self, group: Group) -> list[Group]:
        if group.merged:
            return []
        neighbors = self.groups.neighbors(group)
        if any(n.merged and abs(n.level - group.level) <= 1 for n in neighbors):
            return []
        chosen = []
        for neighbor in neighbors:
            if neighbor.merged or abs(neighbor.level - group.level) > 1:
                continue
            blocked = any(
                other.merged
                and (abs(other.level - group.level) <= 1 or abs(other.level - neighbor.level) <= 1)
                for other in self.groups.neighbors(neighbor)
            )
            if not blocked:
                chosen.append(neighbor)
        return chosen

    def _merge_rounds(self) -> None:
        """findSegments' rounds: the preferred pairs first (``merge_order.preferred_pairs``),
        and only when none merges, every group with its first candidate that schedules."""
        while True:
            self.groups.reset_levels()
            pairs: list[tuple[Group, Group, str]] = []
            for group, neighbor in preferred_pairs(self.groups, self._merge_candidates):
                if not (group.merged or neighbor.merged):
                    self._try_pair(group, neighbor, pairs)
            for group in [] if pairs else self.groups.alive():
                for neighbor in self._merge_candidates(group):
                    if self._try_pair(group, neighbor, pairs):
                        break
            if not pairs:
                return
            for first, second, scheduler in pairs:
                self.groups.join([first, second], scheduler)
            self.groups.compact()

    def _try_pair(self, group: Group, neighbor: Group, pairs: list) -> bool:
        scheduler = self.try_schedule(group.exprs + neighbor.exprs, "merge")
        if scheduler is not None:
            group.merged = neighbor.merged = True
            pairs.append((group, neighbor, scheduler))
        return scheduler is not None

    def _final_merge(self) -> None:
        merged = True
        while merged:
            merged = False
            self.groups.reset_levels()
            for producer in sorted(self.groups.groups, key=lambda g: g.level):
                consumers = list(self.groups.consumers(producer))
                for consumer in consumers:
                    others = [c for c in consumers if c is not consumer]
                    if any(self.groups.reaches(other, consumer) for other in others):
                        continue
                    scheduler = self.try_schedule(producer.exprs + consumer.exprs, "final_merge")
                    if scheduler is not None:
                        self.groups.join([producer, consumer], scheduler)
                        self.groups.compact()
                        merged = True
                        break
                if merged:
                    break

    def _resolve_forwarded(self) -> None:
        """Join each forwarded chain to each consumer group that accepts it, else its own."""
        self.groups.invalidate()
        for chain in self.forwarded:
            end = chain[-1].output
            consumers = []
            for expr in self.graph.consumers.get(end.uid, []):
                owner = self.groups.group_of.get(expr.uid)
                if owner is not None and owner.alive and owner not in consumers:
                    consumers.append(owner)
            standalone = False
            for consumer in consumers:
                if self.profile.forward_unconditionally:
                    # resolveInputsInGroup (nvFuser before #1825): no scheduler is asked here;
                    # the segment's scheduler is asked again when segments are finalized
                    consumer.exprs = chain + consumer.exprs
                    continue
                scheduler = self.try_schedule(chain + consumer.exprs, "forward")
                if scheduler is not None:
                    consumer.exprs = chain + consumer.exprs
                    consumer.scheduler = scheduler
                else:
                    standalone = True
            if standalone or not consumers:
                group = self.groups.add(Group(list(chain)), own_exprs=False)
            for expr in chain:
                self.groups.group_of.setdefault(expr.uid, consumers[0] if consumers else group)

    def _revert_privatized(self) -> None:
        """revertPrivatizedOps on the final groups; their schedulers are asked again."""
        groups = self.groups.alive()
        fusion, reverted = revert_privatized(self.privatized, [g.exprs for g in groups])
        if self.privatized.original_of and fusion is not self.fusion:
            self._adopt(fusion)
            for group, exprs in zip(groups, reverted, strict=True):
                self.groups.add(Group(exprs, group.scheduler))

    def _finalize(self, result: SegmentedFusion) -> SegmentedFusion:
        for group in self.groups.run_order(self.groups.alive()):
            scheduler = self.try_schedule(group.exprs, "finalize")
            if scheduler is None:
                result.failure = self._diagnose(group.exprs)
                return result
            candidate = self._candidate(group.exprs)
            result.segments.append(Segment(len(result.segments), scheduler, candidate,
                                           self.params_of(group.exprs),
                                           self.gpu_notes_of(group.exprs)))
        return result

    def _candidate(self, exprs: Sequence[Expr]) -> Candidate:
        """``exprs`` as a candidate; a forwarded full copied into it is its own business."""
        copied = self._copied
        private = frozenset(
            out.uid for e in exprs if e.uid in copied for out in e.outputs
        ) if copied and any(e.uid not in copied for e in exprs) else frozenset()
        return Candidate.of(self.graph, exprs, private)

    def _diagnose(self, exprs: Sequence[Expr]) -> Diagnosis:
        candidate = self._candidate(exprs)
        verdicts = tuple(check(name, candidate, self.ctx) for name in self.ctx.order)
        return Diagnosis(candidate, verdicts, advise(candidate, verdicts, self.profile.name))


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
