"""Checks on reshapes every scheduler but expr_eval makes (checkCanSchedule,
csrc/scheduler/registry.cpp).

SchedulerTopologyChecker::hasCyclicReshape (csrc/scheduler/registry_utils.cpp):
"Fusion has cyclic reshapes." when one reshape depends on another and a later reshape makes
dimensions exact-mapped to those an earlier one splits or merges (a group norm's [N, G, C/G,
...] -> [N, C, ...] undone in its backward), which no single loop nest can follow.
reductionInterferingView, which the reduction and persistent schedulers check ("View may
interfere with normalization scheduling."). hasIncompatibleTransforms, as fusecli sees it: a
tensor reshaped twice to different shapes ("Fusion has incompatible reshapes.", all but the
resize scheduler).
"""

from __future__ import annotations

from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import OpType
from fusecli.segment.candidate import Candidate
from fusecli.segment.dims import DimKey, reshape_transformed


def cyclic_reshape(candidate: Candidate) -> TensorView | None:
    """The later reshape's output of the first cyclic pair, or None."""
    reshapes = [e for e in candidate.exprs if e.op is OpType.reshape]
    if len(reshapes) < 2 or not _dependent(candidate, reshapes):
        return None
    dims = candidate.exact_dims
    sizes = candidate.graph.size_of
    transformed = [reshape_transformed(e, sizes) for e in reshapes]
    for i, reshape in enumerate(reshapes[:-1]):
        source = reshape.tensor_inputs()[0]
        taken = {dims.class_of(source, p) for p in transformed[i][0]}
        for j in range(i + 1, len(reshapes)):
            out = reshapes[j].tensor_outputs()[0]
            if taken & {dims.class_of(out, p) for p in transformed[j][1]}:
                return out
    return None


def _dependent(candidate: Candidate, reshapes) -> bool:
    """Whether some reshape's output is computed from another's (in the candidate)."""
    outputs = {e.output.uid for e in reshapes}
    for reshape in reshapes:
        pending, seen = list(reshape.tensor_inputs()), set()
        while pending:
            value = pending.pop()
            if value.uid in seen:
                continue
            seen.add(value.uid)
            if value.uid in outputs:
                return True
            producer = candidate.definition(value)
            if producer is not None and candidate.contains(producer):
                pending.extend(producer.tensor_inputs())
    return False


def incompatible_reshapes(candidate: Candidate) -> TensorView | None:
    """A tensor reshaped twice to different shapes: the reshapes cannot share a loop nest."""
    shapes: dict[int, tuple] = {}
    for expr in candidate.exprs:
        if expr.op is not OpType.reshape:
            continue
        source, out = expr.inputs[0], expr.output
        key = tuple(str(e) for e in out.shape)
        if shapes.setdefault(source.uid, key) != key:
            return source
    return None


def interfering_view(candidate: Candidate, reference: Expr) -> bool:
    """registry_utils::reductionInterferingView: a reshape that merges or splits dimensions
    the reduction scheduler would keep apart. The reference reduction's dimensions fall into
    at most three groups, read from the innermost: the run of its innermost kind (reduced or
    not), then the rest of that kind, then the other kind. Where some reshape merges (a
    reshape that only splits leaves them alone), the dimensions it joins (exact-mapped, and
    joined through every reshape's splits and merges) must stay within one group."""
    reshapes = [e for e in candidate.exprs if e.op is OpType.reshape]
    sizes = candidate.graph.size_of
    groups_of = [_reshape_groups(e, sizes) for e in reshapes]
    if all(len(ins) <= 1 for groups in groups_of for ins, _ in groups):
        return False
    dims = candidate.exact_dims
    joined: dict[DimKey, DimKey] = {}

    def find(key: DimKey) -> DimKey:
        key = dims.find(key)
        while joined.get(key, key) != key:
            key = joined[key]
        return key

    for reshape, groups in zip(reshapes, groups_of):
        source, out = reshape.tensor_inputs()[0], reshape.tensor_outputs()[0]
        for ins, outs in groups:
            keys = [find((source.uid, p)) for p in ins] + [find((out.uid, p)) for p in outs]
            for key in keys[1:]:
                if find(key) != find(keys[0]):
                    joined[find(key)] = find(keys[0])
    tensor = reference.tensor_outputs()[0]
    sets = [{find((tensor.uid, p)) for p in group} for group in _scheduler_groups(tensor)]
    return any(a & b for i, a in enumerate(sets) for b in sets[i + 1:])


def _scheduler_groups(tensor: TensorView) -> list[list[int]]:
    """The reference's domain positions in the groups of a (up to 3-D) reduction schedule."""
    remaining = list(range(len(tensor.domain)))
    groups = []
    for dimension in range(3):
        if not remaining:
            break
        last = tensor.domain[remaining[-1]].is_reduction
        group = []
        for position in reversed(remaining):
            if tensor.domain[position].is_reduction != last:
                if dimension == 0:
                    break
                continue
            group.append(position)
        groups.append(group)
        remaining = [p for p in remaining if p not in group]
    return groups


def _reshape_groups(expr: Expr, sizes) -> list[tuple[list[int], list[int]]]:
    """The reshape's input and output dims (domain positions) that split or merge together:
    runs of equal products from the left; dims of size one stand alone."""
    source, out = expr.tensor_inputs()[0], expr.tensor_outputs()[0]
    ins, outs = reshape_transformed(expr, sizes)

    def extent(tensor: TensorView, position: int) -> object:
        return sizes(tensor.domain[position].logical_extent)

    ins = [p for p in ins if extent(source, p) != 1]
    outs = [p for p in outs if extent(out, p) != 1]
    known = [extent(source, p) for p in ins] + [extent(out, p) for p in outs]
    if not all(isinstance(k, int) for k in known):
        return [(ins, outs)] if ins or outs else []
    groups, i, j = [], 0, 0
    while i < len(ins) and j < len(outs):
        group_in, group_out = [ins[i]], [outs[j]]
        left, right = extent(source, ins[i]), extent(out, outs[j])
        i, j = i + 1, j + 1
        while left != right:
            if left < right and i < len(ins):
                group_in.append(ins[i])
                left *= extent(source, ins[i])
                i += 1
            elif right < left and j < len(outs):
                group_out.append(outs[j])
                right *= extent(out, outs[j])
                j += 1
            else:
                break
        groups.append((group_in, group_out))
    if i < len(ins) or j < len(outs):
        groups.append((ins[i:], outs[j:]))
    return groups
