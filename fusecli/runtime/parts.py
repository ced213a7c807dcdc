"""A segment no single kernel computes, run as a few kernels, one after the other.

nvFuser schedules a segment as one kernel; where fusecli's generators have no such kernel
(``codegen.generate`` answers ``Unsupported`` from the generator itself: an output off the
reduction's loop, rows too few and too long to keep for a normalization), the segment would
run op by op on ATen, a launch and a pass over memory per op. Here it is cut instead into
parts that each have a generator, run in order, with what one part computes for the next in
memory:

- one part per level of reductions (a reduction's level: how many reductions lie on the
  longest path to it from the segment's inputs), holding that level's reductions, the
  elementwise ops that feed them, and the row-sized epilogue computed from their results
  (``rsqrt(var + eps)``): the ``reduction`` scheduler's kernels;
- one last part with everything else, pointwise (``resize`` where it slices, pads or
  concatenates): the normalization's elementwise pass, outputs off the reduction's loop;
  ``expr_eval`` (ATen: a view, no kernel) where it only reshapes, squeezes or broadcasts what
  the reduction parts wrote.

Elementwise values the last part reads from a reduction part (``x.float()`` feeding both the
variance and ``x - mean``) are computed again from the segment's inputs rather than written
out and read back: the part's kernel reads the input once either way. Random ops are never
computed twice. The parts of a segment are made once (``Candidate.memo``), so the executors'
caches keyed by candidate see the same parts every call. The results are the segment's: each
part's kernel is checked as any kernel is, and a part without a kernel runs on ATen alone.
"""

from __future__ import annotations

from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import ELEMENTWISE_KINDS, OpKind
from fusecli.segment.candidate import Candidate
from fusecli.segment.result import Segment

_REDUCING = frozenset({OpKind.REDUCTION, OpKind.NORMALIZATION})
_EPILOGUE = ELEMENTWISE_KINDS | {OpKind.CAST}
# ops a part may compute again rather than read from another part (no RNG, no data movement)
_RECOMPUTABLE = _EPILOGUE | {OpKind.BROADCAST, OpKind.EXPAND}
# a last part of only these runs on ATen: views of what the parts before wrote, no kernel
_VIEWS = frozenset({OpKind.RESHAPE, OpKind.SQUEEZE, OpKind.BROADCAST})


def kernel_parts(segment: Segment) -> tuple[Segment, ...] | None:
    """``segment`` as parts run in order, or None where cutting it gains nothing (no
    reduction, or a single part)."""
    return segment.candidate.memo("kernel_parts", lambda _: _parts(segment))


def _parts(segment: Segment) -> tuple[Segment, ...] | None:
    exprs = segment.exprs
    if not any(e.op.kind in _REDUCING for e in exprs):
        return None
    producer = {out.uid: e for e in exprs for out in e.outputs}
    levels = _levels(exprs, producer)
    groups: list[list[Expr]] = []
    placed: set[int] = set()
    for level in sorted({levels[e.uid] for e in exprs if e.op.kind in _REDUCING}):
        reductions = [e for e in exprs if e.op.kind in _REDUCING and levels[e.uid] == level]
        group = _ancestors(reductions, producer, placed)
        placed |= group
        rows = {out.uid for e in reductions for out in e.outputs}
        for expr in exprs:  # the row-sized epilogue, in order
            tensors = [v for v in expr.inputs if isinstance(v, TensorView)]
            if (expr.uid not in placed and expr.op.kind in _EPILOGUE and tensors
                    and all(v.uid in rows for v in tensors)):
                group.add(expr.uid)
                placed.add(expr.uid)
                rows.update(out.uid for out in expr.outputs)
        groups.append([e for e in exprs if e.uid in group])
    rest = [e for e in exprs if e.uid not in placed]
    if not rest and len(groups) == 1:  # one reduction part: the generator refused that
        groups = _cut_group(groups[0], producer, segment.candidate.output_uids)
        if groups is None:
            return None
        placed = {e.uid for group in groups for e in group}
        rest = [e for e in exprs if e.uid not in placed]
    private: set[int] = set()
    if rest:
        again = _recomputed(rest, producer, placed, segment.candidate.output_uids)
        private = {out.uid for e in again for out in e.outputs}
        for group in groups:  # what another reduction part reads stays written
            made = {out.uid for e in group for out in e.outputs}
            private -= {v.uid for e in group for v in e.inputs if v.uid not in made}
        again = [e for e in again if all(out.uid in private for out in e.outputs)]
        rest += again  # Candidate.of puts them in the fusion's order
    graph = segment.candidate.graph
    parts = [Segment(segment.id, _scheduler(group), Candidate.of(graph, group, frozenset(private)))
             for group in groups]
    if rest:
        parts.append(Segment(segment.id, _scheduler(rest),
                             Candidate.of(graph, rest, frozenset(private))))
    return tuple(parts)


def _scheduler(exprs: list[Expr]) -> str:
    if any(e.op.kind in _REDUCING for e in exprs):
        return "reduction"
    if all(e.op.kind in _VIEWS for e in exprs):  # a reshape of a reduction's rows: a view
        return "expr_eval"
    return "resize" if any(e.op.kind is OpKind.RESIZE for e in exprs) else "pointwise"


def _cut_group(group: list[Expr], producer: dict[int, Expr],
               outputs: frozenset[int]) -> list[list[Expr]] | None:
    """A reduction part the generator refused, cut once more (None where nothing is left to
    cut): reductions of one level over rows of different lengths, one part each (their row
    epilogue then runs pointwise after them); or a lone reduction whose ancestors write a
    value off its loop (a concatenation that the reduction reads reshaped), a pointwise part
    that computes those values first, the reduction reading them back."""
    reductions = [e for e in group if e.op.kind in _REDUCING]
    if len(reductions) > 1:
        cut: list[list[Expr]] = []
        placed: set[int] = set()
        for reduction in reductions:
            found = _ancestors([reduction], producer, placed)
            placed |= found
            cut.append([e for e in group if e.uid in found])
        return cut
    before = {e.uid for e in group} - _descendants(reductions, group)
    written = [producer[uid] for uid in outputs
               if uid in producer and producer[uid].uid in before]
    if not written:
        return None
    first = _ancestors(written, producer, set())
    return [[e for e in group if e.uid in first], [e for e in group if e.uid not in first]]


def _descendants(roots: list[Expr], exprs: list[Expr]) -> set[int]:
    """The uids of ``roots`` and the exprs of ``exprs`` (in order) that read from them."""
    found = {e.uid for e in roots}
    values = {out.uid for e in roots for out in e.outputs}
    for expr in exprs:
        if any(v.uid in values for v in expr.inputs):
            found.add(expr.uid)
            values.update(out.uid for out in expr.outputs)
    return found


def _levels(exprs: tuple[Expr, ...], producer: dict[int, Expr]) -> dict[int, int]:
    """Per expr, the reductions on the longest path to its inputs from the segment's."""
    depth: dict[int, int] = {}  # value uid -> reductions behind it
    levels: dict[int, int] = {}
    for expr in exprs:
        level = max((depth.get(v.uid, 0) for v in expr.inputs if v.uid in producer), default=0)
        levels[expr.uid] = level
        for out in expr.outputs:
            depth[out.uid] = level + (expr.op.kind in _REDUCING)
    return levels


def _ancestors(roots: list[Expr], producer: dict[int, Expr], placed: set[int]) -> set[int]:
    """``roots`` and the exprs of the segment they read from, but those placed already."""
    found: set[int] = set()
    stack = list(roots)
    while stack:
        expr = stack.pop()
        if expr.uid in found or expr.uid in placed:
            continue
        found.add(expr.uid)
        stack.extend(producer[v.uid] for v in expr.inputs if v.uid in producer)
    return found


def _recomputed(rest: list[Expr], producer: dict[int, Expr], placed: set[int],
                outputs: frozenset[int]) -> list[Expr]:
    """The exprs of reduction parts that ``rest`` computes again: the elementwise chains from
    the segment's inputs to the values it reads, none past a reduction, none through an
    output of the segment (a fusion output, or another segment's input: written anyway, so
    read)."""
    again: dict[int, Expr] = {}

    def chain(expr: Expr, found: dict[int, Expr]) -> bool:
        if expr.uid in found:
            return True
        found[expr.uid] = expr
        return (expr.op.kind in _RECOMPUTABLE
                and not any(out.uid in outputs for out in expr.outputs)
                and all(chain(producer[v.uid], found) for v in expr.inputs if v.uid in producer))

    for expr in rest:
        for value in expr.inputs:
            source = producer.get(value.uid)
            if source is None or source.uid not in placed or source.uid in again:
                continue
            found: dict[int, Expr] = {}
            if chain(source, found):
                again.update(found)
    return list(again.values())
