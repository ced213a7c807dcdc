"""Whether the reduction and persistent schedulers' reference covers the segment.

nvFuser's DomainMap::isValidReference (csrc/scheduler/tools/domain_map.cpp), with the first
reduction's output as the reference, as ReductionScheduler and the persistent schedulers take
it. Loops are fusecli's dimension classes (``segment/dims.py``); a reshape's split and merged
loops are followed back to the loops they are made from, as nvFuser follows an IterDomain to
its source IterDomains.
"""

from __future__ import annotations

from fusecli.ir.nodes import TensorView
from fusecli.ir.optype import OpKind, OpType
from fusecli.segment.candidate import Candidate
from fusecli.segment.reasons import Reason, Rejection


def reference_coverage_reason(candidate: Candidate, check_inputs: bool) -> Rejection | None:
    """nvFuser's DomainMap::isValidReference with the first reduction's output as reference
    (the reduction and persistent schedulers' reference): every output's dimensions must come
    from the reference's source dimensions (a reshape's splits and merges followed back), and,
    with ``check_inputs``, every input's dimensions must be the reference's or be what a
    reshape made the reference's from. A segment whose input is only reshaped after the
    reduction (sum, reshape, then multiply by that input) has no such reference."""
    reductions = candidate.reduction_exprs
    if not reductions:
        return None
    reference = reductions[0].tensor_outputs()[0]
    dims = candidate.dims
    ref_classes = {dims.class_of(reference, p) for p in range(len(reference.domain))}
    made_from = _reshape_sources(candidate)
    ref_sources = _sources(ref_classes, made_from)
    covered_inputs = ref_classes | ref_sources
    name = candidate.graph.name
    for output in candidate.outputs:
        if output.uid == reference.uid:
            continue
        classes = _iteration_classes(candidate, output)
        if not _sources(classes, made_from) <= ref_sources:
            return Rejection.of(Reason.REFERENCE_NOT_COVERING, tensor=name(output),
                                reference=name(reference))
    if check_inputs:
        for tensor in candidate.inputs:  # a segment input has no reduction dimensions
            if not _iteration_classes(candidate, tensor, reductions=False) <= covered_inputs:
                return Rejection.of(Reason.REFERENCE_NOT_COVERING, tensor=name(tensor),
                                    reference=name(reference))
    return None


def _iteration_classes(
    candidate: Candidate, tensor: TensorView, reductions: bool = True
) -> set[object]:
    lookups = {(e.inputs[0].uid, e.attr("dim")) for e in candidate.exprs_of(OpKind.INDEX)}
    return {
        candidate.dims.class_of(tensor, p) for p, d in enumerate(tensor.domain)
        if not d.is_broadcast and (tensor.uid, p) not in lookups
        and (reductions or not d.is_reduction)
    }


def _reshape_sources(candidate: Candidate) -> dict[object, set[object]]:
    """For each loop a reshape of the segment splits or merges into being, the loops of its
    input it is made from."""
    dims = candidate.dims
    made_from: dict[object, set[object]] = {}
    for expr in candidate.exprs:
        if expr.op is not OpType.reshape:
            continue
        source, out = expr.tensor_inputs()[0], expr.tensor_outputs()[0]
        out_classes = {dims.class_of(out, p) for p in range(len(out.domain))}
        in_classes = {dims.class_of(source, p) for p, d in enumerate(source.domain)
                      if not d.is_broadcast}
        new = out_classes - in_classes
        for loop in new:
            made_from.setdefault(loop, set()).update(in_classes - out_classes)
    return made_from


def _sources(classes: set[object], made_from: dict[object, set[object]]) -> set[object]:
    """The loops ``classes`` come from, reshapes followed back to where nothing made them."""
    found, stack, seen = set(), list(classes), set()
    while stack:
        loop = stack.pop()
        if loop in seen:
            continue
        seen.add(loop)
        parents = made_from.get(loop)
        if parents:
            stack.extend(parents)
        else:
            found.add(loop)
    return found
