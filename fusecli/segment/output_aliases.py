"""Which buffer each fusion output comes back in, as nvFuser's runtime decides it.

nvFuser gives every segment output an allocation type (csrc/fusion.h, ``AllocationType``):

- ``ReuseBuffer``: ``add_output(out, alias_input)``. The output is written into the input, and
  every visible ``add_output`` of the same tensor returns that input tensor itself
  (csrc/runtime/allocations.cpp hands the input out as the output).
- ``Evaluate``: no kernel writes it; the runtime evaluates the meta ops from the tensor it
  aliases with ATen (allocations.cpp, ExprEvalExecutor), so it comes back a view of that
  tensor. The expr_eval scheduler marks every output of its segment so
  (csrc/scheduler/expr_eval_sched.cpp); the no_op, pointwise, reduction and resize schedulers
  call ``markAliases`` (csrc/scheduler/mark_aliases.cpp), which marks an output whose alias
  root inside the segment is a segment input or another segment output. The transpose,
  persistent and matmul schedulers do not: their outputs get buffers of their own even where
  they alias.
- ``New``: a buffer of its own.

The runtime returns, per fusion output, its entry in one tensor map
(FusionKernelRuntime::runWithInputs): a fusion input added as an output is that input, and a
tensor added twice is the same tensor twice. That part needs no segmentation; ``Evaluate``
does. Alias roots come from the alias analysis of the whole fusion (``aliases.py``), as the
expr_eval scheduler's check reads it (see there why it holds inside a segment).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fusecli.ir.nodes import Expr, Fusion, TensorView
from fusecli.segment.aliases import AliasAnalysis, find_aliases
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.result import Segment, SegmentedFusion
from fusecli.segment.schedulers import REGISTRY

# Schedulers whose outputs may be evaluated views: expr_eval's all are, the rest call markAliases
EVALUATING_SCHEDULERS = frozenset({"expr_eval", "no_op", "pointwise", "reduction", "resize"})


@dataclass(frozen=True, slots=True)
class Evaluated:
    """A tensor the runtime evaluates as ``chain`` (meta ops, in order) applied to ``root``."""

    root: TensorView
    chain: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class OutputAllocations:
    """Per tensor uid: the input it is written into (``reused``), or how it is evaluated
    (``evaluated``); any other tensor gets a buffer of its own."""

    reused: dict[int, TensorView] = field(default_factory=dict)
    evaluated: dict[int, Evaluated] = field(default_factory=dict)
    orders: dict[int, tuple[int, ...]] = field(default_factory=dict)  # ``_output_orders``

    def roots(self) -> frozenset[int]:
        """Uids of the tensors evaluated outputs are views of."""
        return frozenset(how.root.uid for how in self.evaluated.values())


def reused_buffers(fusion: Fusion) -> dict[int, TensorView]:
    """Tensor uid -> the fusion input an ``add_output(out, alias_input)`` writes it into."""
    return {o.value.uid: o.alias_input for o in fusion.outputs if o.alias_input is not None}


def output_allocations(segmented: SegmentedFusion) -> OutputAllocations:
    """The allocation of every segment output of ``segmented`` that is no new buffer."""
    fusion = segmented.fusion
    reused = reused_buffers(fusion)
    orders = _output_orders(segmented)
    evaluating = [s for s in segmented.segments if s.scheduler in EVALUATING_SCHEDULERS]
    if not evaluating:
        return OutputAllocations(reused, orders=orders)
    runtime = evaluating[0].candidate.graph.runtime or RuntimeInfo(fusion, None)
    analysis = find_aliases(fusion, runtime)
    evaluated: dict[int, Evaluated] = {}
    for segment in evaluating:
        evaluated.update(_marked(segment, analysis, reused))
    return OutputAllocations(reused, evaluated, orders)


def _marked(
    segment: Segment, analysis: AliasAnalysis, reused: dict[int, TensorView]
) -> dict[int, Evaluated]:
    """markAliases on one segment: outputs whose alias chain inside the segment starts at a
    segment input or at another segment output; never an in-place update."""
    candidate = segment.candidate
    marked: dict[int, Evaluated] = {}
    for out in candidate.outputs:
        if out.uid in reused:
            continue
        chain: list[Expr] = []
        value = out
        while (source := analysis.source.get(value.uid)) is not None:
            definition = candidate.definition(value)
            if definition is None or not candidate.contains(definition):
                break
            chain.append(definition)
            value = source
        if chain and (candidate.is_input(value) or value.uid in candidate.output_uids):
            marked[out.uid] = Evaluated(value, tuple(reversed(chain)))
    return marked


def _output_orders(segmented: SegmentedFusion) -> dict[int, tuple[int, ...]]:
    """``FusionGraph.output_orders`` of the outputs whose segment writes them in that order
    (``Scheduler.orders_outputs``); the others are row-major."""
    if not segmented.segments:
        return {}
    orders = segmented.segments[0].candidate.graph.output_orders
    ordered = {t.uid for s in segmented.segments if REGISTRY[s.scheduler].orders_outputs
               for t in s.outputs}
    return {uid: order for uid, order in orders.items() if uid in ordered}
