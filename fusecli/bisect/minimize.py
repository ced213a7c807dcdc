"""Op-level minimization: the smallest part of the fusion that still fails the same way.

1. ddmin over the fusion's tensor exprs (removed producers become inputs fed with their
   recorded values; unread results become outputs), after one question with every cast,
   copy and unary op bypassed (step 2's bypass, all at once: a traced fusion's float casts);
2. ddmin over bypasses: an expr whose readers can read one of its operands instead (same
   shape, same broadcasts) is removed without cutting the chain (``neg(cast(x))`` -> ``x``),
   then ddmin over merges: a value read in place of an earlier one of the same dtype and form
   (a common subexpression goes; two inputs of one shape become one), then ddmin over folds:
   an op that only views an input (permute, broadcast, expand, squeeze, a reshape torch can
   ``view`` from the input's storage) goes, with the links of such a chain before it that
   nothing else reads, and its readers read a new input fed with that view of the input's
   value (the same values, the view's strides: a stride order for a permute, stride 0 in
   nvFuser's expanded form for an expand, a gapped buffer's gaps), where step 1's removal of
   one link of ``permute(reshape(x))`` leaves a view of a new input or a new output and feeds
   a removed op's result dense (``fusecli.bisect.fold``); then permutes of size-1 dimensions
   written as reshapes and reshapes only reshapes read collapsed (``fusecli.bisect.views``);
   then a cat or pad of slices of one value written as one pad of it (``fusecli.bisect.resize``);
   then step 1 again while these remove something: a failure that needs the chain's two ends
   (a reshape feeding a cat through casts and arithmetic) keeps its ends alone;
3. ddmin over the outputs left, then the exprs no output needs are dropped; inputs nothing
   reads are never declared;
4. shrinking of input sizes.

Every candidate a step accepts is asked again before it is accepted ("re-verified"); a failure
that does not come back is reported as flaky and the step is not taken. Questions stop at
``max_queries``: the smallest failing fusion found so far is kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

from fusecli.bisect import resize, views
from fusecli.bisect.ddmin import Budget, ddmin
from fusecli.bisect.oracle import Oracle
from fusecli.bisect.prober import Prober, stop_on_signals
from fusecli.bisect.results import Step, Tracker
from fusecli.bisect.selection import Piece, Selection, Slicer
from fusecli.bisect.shrink import shrink, sizes_of
from fusecli.ir.optype import OpKind


@dataclass(slots=True)
class Minimization:
    selection: Selection
    piece: Piece
    steps: list[Step] = field(default_factory=list)
    flaky: str | None = None
    last_passing: Piece | None = None  # the smallest candidate seen to pass, for replay
    queries: int = 0
    seconds: float = 0.0
    others: dict = field(default_factory=dict)  # another failure's signature -> smallest Piece
    out_of_budget: str | None = None  # which budget stopped it early, if one did


def minimize(
    slicer: Slicer,
    start: Selection,
    oracle: Oracle,
    tracker: Tracker,
    *,
    shrink_sizes: bool = True,
    max_queries: int = 1000,
    max_seconds: float | None = None,
) -> Minimization:
    prober = Prober(slicer, oracle, tracker, max_queries, max_seconds)
    with stop_on_signals(prober):
        return _minimize(slicer, start, oracle, tracker, prober, shrink_sizes)


def _minimize(
    slicer: Slicer, start: Selection, oracle: Oracle, tracker: Tracker, prober: Prober,
    shrink_sizes: bool,
) -> Minimization:
    started, asked = time.perf_counter(), oracle.queries
    order = {e.uid: i for i, e in enumerate(slicer.units)}
    selection = _without_dead_code(slicer, start, prober, tracker)
    selection = _smallest_failing_cone(slicer, selection, prober, tracker)

    def report(current: list, granularity: int) -> None:
        chunk = max(1, len(current) // granularity)
        tracker.update("minimize", f"{len(current)} ops, removing ~{chunk} at a time")

    def test_exprs(batch: list[list[int]]) -> list[bool]:
        candidates = [replace(selection, exprs=frozenset(b)) for b in batch]
        return prober.fails(candidates, "minimize", [f"{len(b)} ops" for b in batch])

    width = oracle.jobs if oracle.isolate else 1
    piece = slicer.build(selection)
    if shrink_sizes and _elements(piece) > _LARGE:
        # every question of a large fusion moves its inputs and computes its reference:
        # smaller sizes first make the many questions of ddmin cheap
        selection = _shrink(selection, sizes_of(piece), prober, tracker, width)
    selection = _common_subexpressions(slicer, selection, prober, tracker)
    selection = _unary_links(slicer, selection, prober, tracker)

    def rounds(selection: Selection) -> Selection:
        for _ in range(_BYPASS_ROUNDS):
            kept = ddmin(sorted(selection.exprs, key=order.__getitem__), test_exprs,
                         width=width, on_step=report)
            selection = replace(selection, exprs=frozenset(kept))
            if prober.out_of_budget:
                break
            simpler = selection
            for step in _SIMPLIFICATIONS:
                if prober.out_of_budget:
                    break
                simpler = step(slicer, simpler, prober, tracker, width)
            if simpler == selection:
                break
            selection = simpler
        return _minimize_outputs(slicer, selection, prober, tracker, oracle)

    selection = rounds(selection)
    for number in range(_PASSES):
        if not shrink_sizes or prober.out_of_budget:
            break
        shrunk = _shrink(selection, sizes_of(slicer.build(selection)), prober, tracker, width)
        if shrunk == selection or number == _PASSES - 1 or prober.out_of_budget:
            selection = shrunk
            break
        # smaller sizes can open simplifications that did not apply before (a permute of a
        # dimension now of size 1 is a reshape, and a reshape of a reshape one reshape): the
        # rounds again, as a second bisect of minimized.py would ask them (llama_rope: 7 -> 6)
        selection = rounds(shrunk)
    return Minimization(
        selection, slicer.build(selection), prober.steps, prober.flaky, prober.last_passing,
        oracle.queries - asked, time.perf_counter() - started, others=prober.others,
        out_of_budget=prober.out_of_budget,
    )


_BYPASS_ROUNDS = 4  # ddmin, bypasses, merges, folds, ddmin, ...: each round removes exprs
_PASSES = 2  # smaller sizes after the rounds (and fewer outputs); the rounds again if they shrank
_LARGE = 1 << 22  # input elements above which sizes are shrunk before ops are removed


def _elements(piece: Piece) -> int:
    return sum(x.numel() for x in piece.loaded.inputs if hasattr(x, "numel"))


def _shrink(
    selection: Selection, sizes: list[int], prober: Prober, tracker: Tracker, width: int
) -> Selection:
    tracker.update("shrink", f"sizes {sizes}")
    return shrink(
        selection, sizes,
        lambda trial, label: _shrink_step(prober, tracker, trial, label),
        fails_many=lambda trials, labels: prober.fails(trials, "shrink", labels),
        width=width,
    )


@dataclass(frozen=True, slots=True)
class _Step:
    """A simplification of step 2: its candidates, how they apply, how progress names them."""

    phase: str
    candidates: Callable[[Slicer, Selection], list]
    apply: Callable[[Slicer], Callable[[Selection, list], Selection]]
    found: str  # "{n} <found>" while asking
    what: str  # "{k} of {n} <what>" per question


# ddmin over each kind of candidate; the ones the failure needs are left as they were
_BYPASS = _Step("bypass", Slicer.bypasses, lambda s: s.bypass,
                "ops could read an operand instead", "ops bypassed")
_MERGE = _Step("merge", Slicer.merges, lambda s: s.merge,
               "values could read an earlier one alike", "values merged")
_FOLD = _Step("fold", Slicer.folds, lambda s: s.fold,  # views of inputs made inputs
              "ops only view an input", "views folded into inputs")
_RESIZE = _Step("resize", resize.collapsible, lambda s: resize.as_pad,
                "resizes of slices could be one pad", "resizes written as pads")


def _simplify(step: _Step, slicer: Slicer, selection: Selection, prober: Prober,
              tracker: Tracker, width: int) -> Selection:
    """``selection`` with as many of ``step``'s candidates applied as the failure allows."""
    candidates = step.candidates(slicer, selection)
    if candidates:
        tracker.update(step.phase, f"{len(candidates)} {step.found}")
    return _replace_many(selection, candidates, step.apply(slicer), prober, width, step.phase,
                         step.what)


def _collapse_views(
    slicer: Slicer, selection: Selection, prober: Prober, tracker: Tracker, width: int
) -> Selection:
    """``selection`` with its permutes of size-1 dimensions written as reshapes, then its
    reshapes that only reshapes read bypassed, as far as the failure allows (``views``)."""
    candidates = views.reshapeable(slicer, selection)
    if candidates:
        tracker.update("views", f"{len(candidates)} permutes move only size-1 dimensions")
    selection = _replace_many(selection, candidates, views.as_reshape, prober, width, "views",
                              "permutes written as reshapes")
    if prober.out_of_budget:
        return selection
    pairs = views.collapsible(slicer, selection)
    if pairs:
        tracker.update("views", f"{len(pairs)} reshapes only reshapes read")
    return _replace_many(selection, pairs, slicer.bypass, prober, width, "views",
                         "reshapes of reshapes collapsed")


_SIMPLIFICATIONS = (partial(_simplify, _BYPASS), partial(_simplify, _MERGE),
                    partial(_simplify, _FOLD), _collapse_views, partial(_simplify, _RESIZE))


def _unary_links(
    slicer: Slicer, selection: Selection, prober: Prober, tracker: Tracker
) -> Selection:
    """``selection`` with every cast, copy and unary op bypassed, when the failure stays: one
    question before ddmin. A traced fusion is mostly casts to float and back around the ops
    that matter (llama_rope: 20 of 36), which ddmin would otherwise remove a few at a time."""
    units = {e.uid: e for e in slicer.units}
    pairs = [p for p in slicer.bypasses(selection) if units[p[0]].op.kind in _UNARY_KINDS]
    if len(pairs) < 2:
        return selection
    return _all_at_once(slicer.bypass(selection, pairs), selection, prober, tracker, "bypass",
                        f"{len(pairs)} casts and unary ops")


_UNARY_KINDS = frozenset({OpKind.UNARY, OpKind.CAST, OpKind.SET})


def _common_subexpressions(
    slicer: Slicer, selection: Selection, prober: Prober, tracker: Tracker
) -> Selection:
    """``selection`` with every common subexpression read once (a traced fusion repeats a
    broadcast or a cast per use), when the failure stays: one question before ddmin, which
    would otherwise remove the copies one at a time."""
    pairs = slicer.merges(selection, identical=True)
    if not pairs:
        return selection
    return _all_at_once(slicer.merge(selection, pairs), selection, prober, tracker, "merge",
                        f"{len(pairs)} common subexpressions")


def _all_at_once(trial: Selection, selection: Selection, prober: Prober, tracker: Tracker,
                 phase: str, what: str) -> Selection:
    """``trial`` (``selection`` with all of ``what`` applied) where it fails the same way, one
    question; else ``selection``."""
    tracker.update(phase, what)
    try:
        return trial if prober.fails([trial], phase, [f"all {what}"])[0] else selection
    except Budget:
        return selection


def _replace_many(
    selection: Selection, candidates: list, apply: Callable[[Selection, list], Selection],
    prober: Prober, width: int, phase: str, what: str,
) -> Selection:
    """All ``candidates`` applied when the failure stays, else ddmin over them: the ones
    left out are those the failure needs."""
    if not candidates:
        return selection

    def trial(kept: list) -> Selection:
        return apply(selection, [c for c in candidates if c not in kept])

    def test(batch: list[list]) -> list[bool]:
        trials = [trial(b) for b in batch]
        labels = [f"{len(candidates) - len(b)} of {len(candidates)} {what}" for b in batch]
        return prober.fails(trials, phase, labels)

    try:
        if prober.fails([trial([])], phase, [f"all {len(candidates)} {what}"])[0]:
            return trial([])
    except Budget:
        return selection
    kept = ddmin(candidates, test, width=width)
    return trial(kept) if len(kept) < len(candidates) else selection


def _without_dead_code(
    slicer: Slicer, start: Selection, prober: Prober, tracker: Tracker
) -> Selection:
    """``start`` less the exprs none of the fusion's own outputs needs, when that still fails;
    else the fusion as it was given: its own outputs, its dead code defined and read by no
    output, when that fails; else ``start`` with its dead ends as outputs. Both are asked at
    once. Removing dead code op by op with each dead end an output in turn asks about fusions
    nvFuser never saw; and dead code can matter to nvFuser (fuzz_700046 of
    tests/nvfuser_failures asserts in predicate indexing only while 19 ops no output reads
    are defined; with them gone, or made outputs, it fails elsewhere), so when the live part
    fails otherwise, minimization keeps dead code dead and removes it like any op."""
    start = replace(start, outputs=None)
    own = {o.value.uid for o in slicer.fusion.outputs}
    kept = tuple(uid for uid in slicer.output_uids(start) if uid in own)
    if not kept:
        return start
    live = replace(slicer.live(replace(start, outputs=kept)), outputs=None)
    if live.exprs == start.exprs or not live.exprs:
        return start
    as_given = replace(start, outputs=kept)
    tracker.update("dead code", f"{len(start.exprs) - len(live.exprs)} ops no output needs")
    try:
        failed = prober.fails(
            [live, as_given], "dead code",
            [f"{len(live.exprs)} ops the outputs need",
             f"{len(start.exprs)} ops, {len(start.exprs) - len(live.exprs)} of them read by no "
             "output, as given"])
    except Budget:
        return start
    if failed[0]:
        return live
    return as_given if failed[1] else start


def _smallest_failing_cone(
    slicer: Slicer, selection: Selection, prober: Prober, tracker: Tracker
) -> Selection:
    """The exprs one output needs, for the smallest such cone that still fails: a handful of
    questions (one per output, asked at once) that often removes most of a generated or
    traced fusion before ddmin starts. ``selection`` when no cone alone fails."""
    outputs = slicer.output_uids(selection)
    if len(outputs) < 2:
        return selection
    cones = {slicer.live(replace(selection, outputs=(uid,))) for uid in outputs}
    cones = sorted(
        (c for c in cones if c.exprs and c.exprs != selection.exprs),
        key=lambda c: (len(c.exprs), sorted(c.exprs)),
    )
    candidates = [replace(cone, outputs=None) for cone in cones]
    if not candidates:
        return selection
    tracker.update("cones", f"{len(candidates)} outputs' cones of {len(selection.exprs)} ops")
    try:
        results = prober.fails(candidates, "cones",
                               [f"{len(c.exprs)} ops one output needs" for c in candidates])
    except Budget:
        return selection
    return next((c for c, failed in zip(candidates, results) if failed), selection)


def _shrink_step(prober: Prober, tracker: Tracker, trial: Selection, label: str) -> bool:
    tracker.update("shrink", label)
    return prober.fails_one(trial, "shrink", label)


def _minimize_outputs(
    slicer: Slicer, selection: Selection, prober: Prober, tracker: Tracker, oracle: Oracle
) -> Selection:
    """Fewer outputs, then the exprs no remaining output needs."""
    outputs = list(slicer.output_uids(selection))
    if len(outputs) > 1:
        tracker.update("outputs", f"{len(outputs)} outputs")

        def test_outputs(batch: list[list[int]]) -> list[bool]:
            candidates = [replace(selection, outputs=tuple(b)) for b in batch]
            return prober.fails(candidates, "outputs", [f"{len(b)} outputs" for b in batch])

        outputs = ddmin(outputs, test_outputs, width=oracle.jobs if oracle.isolate else 1)
    explicit = replace(selection, outputs=tuple(outputs))
    live = slicer.live(explicit)
    if live != explicit and live.exprs:
        try:
            if prober.fails_one(live, "outputs", f"{len(live.exprs)} ops after dropping outputs"):
                return live
        except Budget:
            pass
    return explicit
