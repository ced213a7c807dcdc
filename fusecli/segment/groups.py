"""The segmenter's working graph: groups of exprs and the edges between them.

A ``Group`` is a would-be segment; ``GroupGraph`` keeps which group owns each expr, answers
producer and consumer queries (memoized until a join changes the edges), assigns the levels of
the level-based merge, and orders groups for running. The merge algorithm itself is in
``segmenter.py``; this module only knows the graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusecli.ir.nodes import Expr, TensorView
from fusecli.segment.candidate import FusionGraph


@dataclass(eq=False, slots=True)
class Group:
    exprs: list[Expr]
    scheduler: str | None = None
    level: int = 0
    merged: bool = False
    alive: bool = True


Edges = dict[Group, list[TensorView]]


class GroupGraph:
    def __init__(self, graph: FusionGraph) -> None:
        self.graph = graph
        self.groups: list[Group] = []
        self.group_of: dict[int, Group] = {}  # expr uid -> group
        self._producer_cache: dict[int, Edges] = {}
        self._consumer_cache: dict[int, Edges] = {}
        # nvFuser makes its first groups and their edges in its exprs() order
        self.walk = graph.position

    def in_walk_order(self, exprs: list[Expr]) -> list[Expr]:
        """``exprs`` in nvFuser's exprs() order (``ir.order``), where its first groups come."""
        return sorted(exprs, key=lambda e: self.walk.get(e.uid, len(self.walk)))

    def add(self, group: Group, own_exprs: bool = True) -> Group:
        """Add ``group``; with ``own_exprs`` it becomes the owner of each of its exprs."""
        self.groups.append(group)
        if own_exprs:
            for expr in group.exprs:
                self.group_of[expr.uid] = group
        return group

    def alive(self) -> list[Group]:
        return [g for g in self.groups if g.alive]

    def invalidate(self) -> None:
        """Edges changed: producers and consumers are recomputed on demand."""
        self._producer_cache.clear()
        self._consumer_cache.clear()

    def join(self, groups: list[Group], scheduler: str) -> Group:
        """One group of ``groups``' exprs; the originals die (``compact`` drops them)."""
        joined = Group([e for g in groups for e in g.exprs], scheduler)
        for group in groups:
            group.alive = False
        self.invalidate()
        return self.add(joined)

    def compact(self) -> None:
        self.groups = self.alive()

    # -- edges -----------------------------------------------------------------------------------

    def producers(self, group: Group) -> Edges:
        cached = self._producer_cache.get(id(group))
        if cached is not None:
            return cached
        found: Edges = {}
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

    def consumers(self, group: Group) -> Edges:
        cached = self._consumer_cache.get(id(group))
        if cached is not None:
            return cached
        found: Edges = {}
        for expr in group.exprs:
            for value in expr.tensor_outputs():
                for consumer in self.graph.consumers.get(value.uid, []):
                    owner = self.group_of.get(consumer.uid)
                    if owner is not None and owner is not group:
                        found.setdefault(owner, []).append(value)
        found = dict(sorted(found.items(), key=lambda edge: min(
            self.walk.get(e.uid, len(self.walk)) for e in edge[0].exprs)))
        self._consumer_cache[id(group)] = found
        return found

    def neighbors(self, group: Group) -> list[Group]:
        """Producers and consumers, except through edges that are all fusion outputs."""
        neighbors = []
        for table in (self.producers(group), self.consumers(group)):
            for other, values in table.items():
                if any(v.uid not in self.graph.output_uids for v in values):
                    if other not in neighbors:
                        neighbors.append(other)
        return neighbors

    def downstream(self, start: Group) -> set[int]:
        """``start`` and every group it feeds, directly or not, by ``id``."""
        return self._closure(start, self.consumers)

    def upstream(self, start: Group) -> set[int]:
        """``start`` and every group that feeds it, directly or not, by ``id``."""
        return self._closure(start, self.producers)

    @staticmethod
    def _closure(start: Group, step) -> set[int]:
        seen, stack = {id(start)}, [start]
        while stack:
            for other in step(stack.pop()):
                if id(other) not in seen:
                    seen.add(id(other))
                    stack.append(other)
        return seen

    def reaches(self, start: Group, goal: Group) -> bool:
        stack, seen = [start], set()
        while stack:
            group = stack.pop()
            if group is goal:
                return True
            if id(group) in seen:
                continue
            seen.add(id(group))
            stack.extend(self.consumers(group))
        return False

    # -- orders ----------------------------------------------------------------------------------

    def reset_levels(self) -> None:
        for group in self.toposort(self.alive()):
            producers = self.producers(group)
            group.level = 1 + max((p.level for p in producers), default=-1)

    def toposort(self, groups: list[Group]) -> list[Group]:
        pending = {id(g): len(self.producers(g)) for g in groups}
        ready = [g for g in groups if pending[id(g)] == 0]
        order = []
        while ready:
            group = ready.pop(0)
            order.append(group)
            for consumer in self.consumers(group):
                pending[id(consumer)] -= 1
                if pending[id(consumer)] == 0:
                    ready.append(consumer)
        if len(order) != len(groups):
            raise RuntimeError("segment graph is not a DAG")
        return order

    def run_order(self, groups: list[Group]) -> list[Group]:
        """Run order: a group runs after every group producing a value it reads.

        Unlike ``toposort`` this looks at what each group computes itself, so an expr that
        two groups share (a forwarded input chain joined to several consumers) orders both.
        A group that reads such a value without computing it (the consumer that rejected the
        chain) reads it from the smallest group computing it: the chain's own group, which
        reads only fusion inputs. Any other copy may itself wait for that reader (a chain
        joined to the pointwise group after a linear that reads the chain: a cycle).
        """
        produced_by: dict[int, Group] = {}
        for group in sorted(groups, key=lambda g: len(g.exprs)):
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
