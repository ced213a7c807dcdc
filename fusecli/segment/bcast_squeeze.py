"""RemoveBcastSqueeze: a broadcast and a squeeze that undo each other are removed.

nvFuser's pre-segmentation pass (csrc/preseg_passes/remove_bcast_squeeze.cpp, PR #2291, May
2024; the per-axis analysis of #3034 and #3189, October 2024), run after ConsecutiveCastPass
and before SegmentInplaceUpdatePass. From the fusion outputs it walks up the producers. At
each tensor made by a broadcast, a squeeze or a plain ``set`` (a cast to the same dtype) from
a tensor also made by one of these, it composes the two ops axis by axis (each axis kept,
squeezed or broadcast; a squeeze of a broadcast axis cancels it). When the composition only
keeps, only squeezes or only broadcasts, the two ops give way to that one op (or to nothing):

    T1 = sum(T0, dims=[0, 2])          T1 = sum(T0, dims=[0, 2])
    T2 = broadcast(T1, [T, F, T])      (output T1)
    T3 = set(T2)             becomes
    T4 = squeeze(T3, [0, 2])
    (output T4)

Every reader of the tensor, fusion outputs included, reads the replacement, and the walk goes
on from it. A reduction's result that was broadcast back and squeezed for the output is then
the output itself, so no meta-op segment (expr_eval) is left after it. An output is not
replaced by another output that aliases a different input.
"""

from __future__ import annotations

import enum
from dataclasses import replace

from fusecli.ir.builder import FusionBuilder
from fusecli.ir.nodes import Expr, Fusion, TensorView
from fusecli.ir.ops_shape import broadcast, squeeze
from fusecli.ir.optype import OpType
from fusecli.segment.remove_empty import with_replacements

_REPLACEABLE = (OpType.broadcast, OpType.squeeze, OpType.set)


class Axis(enum.Enum):
    KEEP = "keep"
    SQUEEZE = "squeeze"
    BROADCAST = "broadcast"


def remove_bcast_squeeze(fusion: Fusion) -> Fusion:
    """``fusion`` with cancelling broadcast/squeeze pairs removed; ``fusion`` if none."""
    state = _Rewrite(fusion)
    stack = [o.value for o in fusion.outputs if isinstance(o.value, TensorView)]
    visited: set[int] = set()
    while stack:
        tensor = stack.pop()
        if tensor.uid in visited:
            continue
        visited.add(tensor.uid)
        replacement = state.replacement(tensor)
        if replacement is not None:
            state.replace_uses(tensor, replacement)
            stack.append(replacement)
        elif (definition := state.definition(tensor)) is not None:
            stack.extend(definition.tensor_inputs())
    if not state.changed:
        return fusion
    return Fusion(inputs=fusion.inputs, outputs=tuple(state.outputs), exprs=tuple(state.exprs))


class _Rewrite:
    """The fusion being rewritten: its exprs and outputs, and who defines what."""

    def __init__(self, fusion: Fusion) -> None:
        self.exprs = list(fusion.exprs)
        self.outputs = list(fusion.outputs)
        self.changed = False

    def definition(self, tensor: TensorView) -> Expr | None:
        return next((e for e in self.exprs if any(o.uid == tensor.uid for o in e.outputs)),
                    None)

    def replacement(self, tensor: TensorView) -> TensorView | None:
        """maybeDoReplacement: what ``tensor`` can be replaced by, or None."""
        second = self.definition(tensor)
        if second is None or second.op not in _REPLACEABLE:
            return None
        first = self.definition(second.inputs[0])
        if first is None or first.op not in _REPLACEABLE:
            return None
        if _squeezes_expanded(first) or _squeezes_expanded(second):
            # an expanded broadcast axis has an extent of its own: squeezing it is no
            # inverse of a broadcast of extent 1, however the axes line up
            return None
        first_ops, second_ops = _axis_ops(first), _axis_ops(second)
        composed = _compose(first_ops, second_ops)
        kinds = set(composed) - {Axis.KEEP}
        if len(kinds) > 1:
            return None
        if composed == first_ops or not kinds:
            found = first.output if composed == first_ops else first.inputs[0]
            return None if self._aliases_differ(tensor, found) else found
        # a new op from the first one's input: its output is no fusion output yet
        changed = [op is not Axis.KEEP for op in composed]
        builder = FusionBuilder()
        if kinds == {Axis.SQUEEZE}:
            dims = [axis for axis, flag in enumerate(changed) if flag]
            found = squeeze(builder, first.inputs[0], dims)
        else:
            found = broadcast(builder, first.inputs[0], changed)
        position = self.exprs.index(second)
        self.exprs[position:position] = builder.exprs
        return found

    def _aliases_differ(self, tensor: TensorView, found: TensorView) -> bool:
        aliases = {o.value.uid: o.alias_input for o in self.outputs}
        if tensor.uid not in aliases or found.uid not in aliases:
            return False
        return aliases[tensor.uid] is not aliases[found.uid]

    def replace_uses(self, tensor: TensorView, replacement: TensorView) -> None:
        """replaceValInAllExprInputsAndFusionOutputs."""
        self.changed = True
        self.exprs = [with_replacements(e, {tensor.uid: replacement}) for e in self.exprs]
        self.outputs = [
            replace(o, value=replacement) if o.value.uid == tensor.uid else o
            for o in self.outputs
        ]


def _squeezes_expanded(expr: Expr) -> bool:
    if expr.op is not OpType.squeeze:
        return False
    domains = expr.inputs[0].logical
    return any(domains[axis].expanded is not None for axis in expr.attr("dims"))


def _axis_ops(expr: Expr) -> list[Axis]:
    """What ``expr`` does to each axis, in order (a squeeze's over its input's axes, a
    broadcast's over its output's)."""
    if expr.op is OpType.broadcast:
        return [Axis.BROADCAST if flag else Axis.KEEP for flag in expr.attr("is_broadcast_dim")]
    if expr.op is OpType.squeeze:
        squeezed = set(expr.attr("dims"))
        return [Axis.SQUEEZE if axis in squeezed else Axis.KEEP
                for axis in range(expr.inputs[0].ndim)]
    return [Axis.KEEP] * expr.inputs[0].ndim


def _compose(first: list[Axis], second: list[Axis]) -> list[Axis]:
    """composeOps: ``second`` applied after ``first`` as one list of axis ops. Axes the first
    squeezes and axes the second broadcasts have no partner in the other list."""
    composed: list[Axis] = []

    def push(op: Axis) -> None:
        if composed and {composed[-1], op} == {Axis.SQUEEZE, Axis.BROADCAST}:
            composed[-1] = Axis.KEEP
        else:
            composed.append(op)

    i = j = 0

    def unaligned() -> None:
        nonlocal i, j
        while i < len(first) and first[i] is Axis.SQUEEZE:
            push(Axis.SQUEEZE)
            i += 1
        while j < len(second) and second[j] is Axis.BROADCAST:
            push(Axis.BROADCAST)
            j += 1

    unaligned()
    while i < len(first) and j < len(second):
        if first[i] is Axis.KEEP:
            push(second[j])
        elif second[j] is Axis.KEEP:
            push(first[i])
        # else a broadcast axis squeezed again: the pair cancels, nothing is pushed
        i, j = i + 1, j + 1
        unaligned()
    return composed
