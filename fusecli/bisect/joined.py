"""Ops a rebuilt script writes as the one frontend call that made them.

Some frontend calls build several IR exprs: ``broadcast_in_dim(x, shape, dims)`` a broadcast
and an expand; ``sum(x, dims, keepdim=True)`` the sum and a broadcast; ``sum(x, dims)`` over a
broadcast dimension a squeeze, perhaps a cast, and the sum (nvFuser's trivial reduction,
``ir.ops_reduction``). Replayed op by op, a minimized repro would spell them out: longer than
what the user wrote, and, for the reduction, another program for nvFuser (whose reshape of a
tensor of unknown sizes keeps a size-1 dimension Symbolic, where fusecli's IR has a broadcast:
squeezing it is an error there, summing it is not). ``rebuild`` writes such a group as the one
call, and bisect counts it as one op, as the minimized repro shows it. A group is joined only
when the selection keeps all of it and nothing else reads or outputs its inner values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, FusionOutput, TensorView, Val
from fusecli.ir.ops_reduction import TRIVIAL
from fusecli.ir.optype import OpType

_KEEPDIM = (OpType.sum, OpType.prod, OpType.max, OpType.min, OpType.var)  # keepdim=True
_OPENERS = (OpType.broadcast, OpType.squeeze, *_KEEPDIM)


@dataclass(slots=True)
class Joins:
    """The groups of ``exprs`` replayed as one call: the exprs replay skips, and per last expr
    of a group (by uid) the call that makes it."""

    skipped: set[int] = field(default_factory=set)
    calls: dict[int, tuple[str, Expr, Expr]] = field(default_factory=dict)  # name, first, last


def readers_of(exprs: Sequence[Expr], aliases: Mapping[int, Val]) -> dict[int, list[Expr]]:
    """The exprs of ``exprs`` that read each value (by uid), bypasses followed."""
    readers: dict[int, list[Expr]] = {}
    for expr in exprs:
        for value in expr.inputs:
            readers.setdefault(aliases.get(value.uid, value).uid, []).append(expr)
    return readers


def joins(exprs: Sequence[Expr], outputs: Sequence[FusionOutput],
          aliases: Mapping[int, Val]) -> Joins:
    readers = readers_of(exprs, aliases)
    written = {aliases.get(o.value.uid, o.value).uid for o in outputs}

    def only_reader(expr: Expr) -> Expr | None:
        uid = expr.outputs[0].uid
        read = readers.get(uid, [])
        if len(expr.outputs) != 1 or uid in written or uid in aliases or len(read) != 1:
            return None
        reader = read[0]
        return reader if aliases.get(reader.inputs[0].uid, reader.inputs[0]).uid == uid else None

    found = Joins()
    for expr in exprs:
        nxt = only_reader(expr) if expr.op in _OPENERS and expr.uid not in found.calls else None
        if nxt is None:  # (a group's last expr opens no other group)
            continue
        if expr.op in _KEEPDIM and nxt.op is OpType.broadcast and list(
                nxt.attr("is_broadcast_dim")) == [axis in expr.attr("dims") for axis in range(
                    len(nxt.attr("is_broadcast_dim")))]:
            found.skipped.add(expr.uid)
            found.calls[nxt.uid] = (expr.op.value, expr, nxt)
        elif expr.op is OpType.broadcast and nxt.op is OpType.expand:
            found.skipped.add(expr.uid)
            found.calls[nxt.uid] = ("broadcast_in_dim", expr, nxt)
        elif expr.op is OpType.squeeze and expr.attr(TRIVIAL) is not None:
            op = expr.attr(TRIVIAL)[0]
            chain = [expr]
            if nxt.op is OpType.cast:
                chain.append(nxt)
                nxt = only_reader(nxt)
            if nxt is not None and nxt.op.value == op:
                found.skipped.update(e.uid for e in chain)
                found.calls[nxt.uid] = (op, expr, nxt)
    return found


def script_ops(exprs: Sequence[Expr], outputs: Sequence[FusionOutput],
               aliases: Mapping[int, Val] | None = None, reshaped: Sequence[int] = (),
               padded: Sequence[int] = ()) -> list[str]:
    """The ops a rebuilt script of ``exprs`` calls, in order, a joined group as its one call
    (``reshaped``: permutes written as reshapes; ``padded``: resizes written as pads)."""
    found = joins(exprs, outputs, aliases or {})
    return [
        found.calls[e.uid][0] if e.uid in found.calls else
        "reshape" if e.uid in reshaped else "pad" if e.uid in padded else e.op.value
        for e in exprs
        if any(isinstance(o, TensorView) for o in e.outputs) and e.uid not in found.skipped
    ]


def replay_call(replay: Any, name: str, first: Expr, last: Any) -> Any:
    """The frontend call (``rebuild._Replay``'s ops) that makes the group ``first``..``last``."""
    if name == "reshape":  # a permute written as a reshape: ``last`` is the new shape
        return replay.ops.reshape(replay.val(first.inputs[0]), new_shape=last)
    if name == "pad":  # a resize written as a pad: ``last`` is the widths
        return replay.ops.pad(replay.val(first.inputs[0]), last)
    if name == "broadcast_in_dim":
        flags = first.attr("is_broadcast_dim")
        return replay.ops.broadcast_in_dim(
            replay.val(first.inputs[0]), shape=replay.shape(last.inputs[1]),
            broadcast_dims=[axis for axis, new in enumerate(flags) if not new])
    if first.op is OpType.squeeze:
        op, dims, dtype = first.attr(TRIVIAL)
        return getattr(replay.ops, op)(replay.val(first.inputs[0]), dims=list(dims),
                                       keepdim=False, dtype=dtype)
    options = {"correction": first.attr("correction")} if first.op is OpType.var else {
        "dtype": DataType.Null}  # the operand already has the accumulation dtype
    return getattr(replay.ops, name)(replay.val(first.inputs[0]), dims=list(first.attr("dims")),
                                     keepdim=True, **options)
