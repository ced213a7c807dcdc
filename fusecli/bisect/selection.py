"""A part of a fusion that runs alone: some of its exprs, fed with recorded values.

A ``Selection`` names the tensor exprs kept, the values to output (``None``: the original
outputs they compute plus every value they compute that nothing kept reads, as XLA's
hlo_bisect does), size substitutions and bypasses: a removed expr whose readers read one of its
operands instead (``mul(a, b)`` -> ``a``, ``cast(x)`` -> ``x``), as C-Reduce replaces an
expression by a subexpression, so a chain keeps its shape while its links go; and merges, a
value read in place of an earlier one alike (a common subexpression, two inputs of one shape);
and folds, a view of an input made an input of its own (``fusecli.bisect.fold``).
``Slicer.build`` turns one into a runnable fusion: each value the kept exprs read but no kept
expr computes becomes an input whose example value is what the reference computed for it in
the original fusion (as the PyTorch minifier feeds placeholders their recorded values), so the
graph stays valid whatever was removed.

Scalar exprs (sizes, scalar arithmetic) are not units of their own: one is kept when everything
it reads is available, else its value becomes a scalar input.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from fusecli.bisect import fold, substitute
from fusecli.bisect.declare import example_layout
from fusecli.bisect.joined import script_ops
from fusecli.bisect.rebuild import rebuild
from fusecli.ir.nodes import Expr, Fusion, FusionOutput, Scalar, TensorView, Val, Vector
from fusecli.load.model import LoadedFusion


@dataclass(frozen=True, slots=True)
class Selection:
    exprs: frozenset[int]  # uids of kept tensor exprs
    outputs: tuple[int, ...] | None = None  # uids of output values; None: automatic
    extents: tuple[tuple[int, int], ...] = ()  # (old size, new size)
    bypass: tuple[tuple[int, int], ...] = ()  # (value uid, operand uid read in its place)
    folded: tuple[int, ...] = ()  # uids of view results fed as views of an input (``fold``)
    as_reshape: tuple[int, ...] = ()  # uids of permutes written as reshapes (``views``)
    as_pad: tuple[tuple[int, tuple[int, ...]], ...] = ()  # resizes written as pads (``resize``)


@dataclass(frozen=True, slots=True)
class Piece:
    """What a selection builds to: the plan, the definition and its inputs, ready to run."""

    selection: Selection
    exprs: tuple[Expr, ...]  # replayed, scalar exprs included, in order
    inputs: tuple[Val, ...]
    outputs: tuple[FusionOutput, ...]
    loaded: LoadedFusion
    ops: list[str] = field(compare=False)  # the ops its script calls (``joined.script_ops``)


class BuildError(ValueError):
    """A selection that makes no runnable fusion (no outputs, or the replay is invalid)."""


def _is_tensor_expr(expr: Expr) -> bool:
    return any(isinstance(o, TensorView) for o in expr.outputs)


@dataclass
class Slicer:
    """Builds selections of one fusion; ``values`` are the reference's values of every value."""

    loaded: LoadedFusion
    values: dict[int, object]
    _position: dict[int, int] = field(init=False)
    _producer: dict[int, Expr] = field(init=False)
    _inputs: dict[int, object] = field(init=False)
    _values: dict[int, Val] = field(init=False)

    def __post_init__(self) -> None:
        self._position = {e.uid: i for i, e in enumerate(self.fusion.exprs)}
        self._producer = {o.uid: e for e in self.fusion.exprs for o in e.outputs}
        self._inputs = {v.uid: x for v, x in zip(self.fusion.inputs, self.loaded.inputs)}
        self._values = {v.uid: v for e in self.fusion.exprs for v in (*_operands(e), *e.outputs)}
        self._values.update({v.uid: v for v in self.fusion.inputs})

    @property
    def fusion(self) -> Fusion:
        return self.loaded.fusion

    @property
    def units(self) -> list[Expr]:
        """The exprs minimization removes: every tensor expr, in order."""
        return [e for e in self.fusion.exprs if _is_tensor_expr(e)]

    def everything(self) -> Selection:
        return Selection(frozenset(e.uid for e in self.units))

    # -- the plan -------------------------------------------------------------------------------

    def plan(self, selection: Selection) -> tuple[list[Expr], list[Val], list[FusionOutput]]:
        kept = [e for e in self.fusion.exprs if e.uid in selection.exprs]
        kept += self._scalar_closure(kept)
        kept.sort(key=lambda e: self._position[e.uid])
        produced = {o.uid for e in kept for o in e.outputs}
        aliases = self.aliases(selection)
        outputs = self._outputs(selection, kept, produced, aliases)
        needed: dict[int, Val] = {}
        for expr in kept:
            for value in _reads(expr, aliases):
                if value.uid not in produced and not _constant(value):
                    needed.setdefault(value.uid, value)
        for output in outputs:
            if output.value.uid not in produced:
                needed.setdefault(output.value.uid, output.value)
        original = [v for v in self.fusion.inputs if v.uid in needed]
        original_uids = {v.uid for v in original}
        substituted = sorted(
            (v for uid, v in needed.items() if uid not in original_uids),
            key=lambda v: self._position.get(getattr(self._producer.get(v.uid), "uid", -1), -1),
        )
        return kept, original + substituted, outputs

    def _scalar_closure(self, kept: list[Expr]) -> list[Expr]:
        """Scalar exprs the kept exprs read, where everything they read is at hand."""
        available = {v.uid for v in self.fusion.inputs}
        available |= {o.uid for e in kept for o in e.outputs}
        chosen: dict[int, Expr] = {}
        pending = [v for e in kept for v in _operands(e)]
        while pending:
            value = pending.pop()
            producer = self._producer.get(value.uid)
            if producer is None or _is_tensor_expr(producer) or producer.uid in chosen:
                continue
            reads = _operands(producer)
            if all(_constant(v) or isinstance(v, Scalar) or v.uid in available for v in reads):
                chosen[producer.uid] = producer
                pending.extend(reads)
        return list(chosen.values())

    def _outputs(
        self, selection: Selection, kept: list[Expr], produced: set[int],
        aliases: dict[int, Val],
    ) -> list[FusionOutput]:
        by_uid = {o.value.uid: o for o in self.fusion.outputs}
        if selection.outputs is not None:
            values = {v.uid: v for e in kept for v in e.outputs}
            values.update({v.uid: v for v in self.fusion.inputs})
            return [by_uid.get(uid) or FusionOutput(values[uid]) for uid in selection.outputs
                    if uid in values]
        outputs = [o for o in self.fusion.outputs if o.value.uid in produced]
        listed = {o.value.uid for o in outputs}
        read = {v.uid for e in kept for v in _reads(e, aliases)}
        for expr in kept:
            for value in expr.tensor_outputs():
                if value.uid not in read and value.uid not in listed:
                    outputs.append(FusionOutput(value))
                    listed.add(value.uid)
        return outputs

    def live(self, selection: Selection) -> Selection:
        """``selection`` without the exprs none of its outputs needs."""
        exprs, _, outputs = self.plan(selection)
        needed = {o.value.uid for o in outputs}
        aliases = self.aliases(selection)
        keep: set[int] = set()
        for expr in reversed(exprs):
            if any(o.uid in needed for o in expr.outputs):
                keep.add(expr.uid)
                needed.update(v.uid for v in _reads(expr, aliases))
        return replace(selection, exprs=frozenset(u for u in selection.exprs if u in keep))

    def aliases(self, selection: Selection) -> dict[int, Val]:
        """Each bypassed value's replacement, chains followed (``a`` for ``cast(neg(a))``)."""
        direct = dict(selection.bypass)
        resolved: dict[int, Val] = {}
        for uid in direct:
            target = direct[uid]
            seen = {uid}
            while target in direct and target not in seen:
                seen.add(target)
                target = direct[target]
            resolved[uid] = self._values[target]
        return resolved

    def bypasses(self, selection: Selection) -> list[tuple[int, int]]:
        """(expr uid, operand uid) for each kept expr one of whose operands could stand for its
        result: a tensor of the same shape and the same broadcast dimensions (an op's first such
        operand), else one of the same shape whose expanded broadcasts stand for the result's
        dimensions (``mul(x, expand(b))`` -> ``expand(b)``). The reference's values tell the
        shapes."""
        found = []
        aliases = self.aliases(selection)
        for expr in self.fusion.exprs:
            if expr.uid not in selection.exprs or len(expr.outputs) != 1:
                continue
            result = expr.outputs[0]
            if not isinstance(result, TensorView) or result.uid not in self.values:
                continue
            operands = [aliases.get(v.uid, v) for v in _operands(expr)]
            operands = [v for v in operands if isinstance(v, TensorView)]
            for expanded in (False, True):
                alike = [v for v in operands if _same_form(
                    result, self.values[result.uid], v, self.value_of(v), expanded)]
                if alike:
                    found.append((expr.uid, alike[0].uid))
                    break
        return found

    def bypass(self, selection: Selection, pairs: list[tuple[int, int]]) -> Selection:
        """``selection`` with each (expr uid, operand uid) of ``pairs`` removed and bypassed."""
        if not pairs:
            return selection
        exprs = {e.uid: e for e in self.fusion.exprs}
        added = tuple((exprs[e].outputs[0].uid, operand) for e, operand in pairs)
        return replace(
            selection, exprs=selection.exprs - {e for e, _ in pairs},
            bypass=tuple(sorted({*selection.bypass, *added})),
        )

    def merges(self, selection: Selection, identical: bool = False) -> list[tuple[int, int]]:
        """(value uid, replacement uid): for each tensor the selection computes or reads, an
        earlier one of the same dtype and form that could be read in its place (its producer
        then goes): an identical expr first (a common subexpression), else the first alike (two
        inputs of one shape become one); with ``identical``, common subexpressions only.
        Earlier, in the original fusion's order, so that the replacement never depends on what
        it replaces and no two merges make a cycle."""
        exprs, inputs, _ = self.plan(selection)
        present = [*inputs, *(o for e in exprs if e.uid in selection.exprs for o in e.outputs)]
        present = [v for v in present if isinstance(v, TensorView)]
        present.sort(key=self._order)
        aliases = self.aliases(selection)
        found = []
        for index, value in enumerate(present):
            producer = self._producer.get(value.uid)
            if producer is not None and len(producer.outputs) != 1:
                continue  # var_mean and the like: merging one result would lose the other
            earlier = [b for b in present[:index] if b.dtype is value.dtype and _same_form(
                value, self.value_of(value), b, self.value_of(b))]
            if not earlier:
                continue
            same = [b for b in earlier if self._identical(value, b, aliases)]
            if same or not identical:
                found.append((value.uid, (same or earlier)[0].uid))
        if not identical:
            found += substitute.computed_for_inputs(self, exprs, inputs, present, aliases,
                                                    {v for v, _ in found})
        return found

    def merge(self, selection: Selection, pairs: list[tuple[int, int]]) -> Selection:
        """``selection`` with each (value uid, replacement uid) of ``pairs`` read in place of
        the value, whose producer goes."""
        if not pairs:
            return selection
        gone = {self._producer[v].uid for v, _ in pairs if v in self._producer}
        return replace(selection, exprs=selection.exprs - gone,
                       bypass=tuple(sorted({*selection.bypass, *pairs})))

    def folds(self, selection: Selection) -> list[int]:
        """Uids of the kept exprs that only view an input (``fold.foldable``)."""
        return fold.foldable(self, selection)

    def fold(self, selection: Selection, exprs: list[int]) -> Selection:
        """``selection`` with the view exprs ``exprs`` folded into inputs (``fold.fold``)."""
        return fold.fold(self, selection, exprs)

    def producer(self, value: Val) -> Expr | None:
        """The expr of the whole fusion that computes ``value``; None for its inputs."""
        return self._producer.get(value.uid)

    def _order(self, value: Val) -> tuple[int, int]:
        producer = self._producer.get(value.uid)
        return (-1 if producer is None else self._position[producer.uid], value.uid)

    def _identical(self, a: Val, b: Val, aliases: dict[int, Val]) -> bool:
        """Whether ``a`` and ``b`` are computed by the same op from the same values."""
        first, second = self._producer.get(a.uid), self._producer.get(b.uid)
        if first is None or second is None or len(first.outputs) != 1:
            return False
        return (first.op is second.op and first.attrs == second.attrs
                and [v.uid for v in _reads(first, aliases)]
                == [v.uid for v in _reads(second, aliases)])

    def value_of(self, value: Val) -> object:
        """``value``'s recorded value: the original input, or what the reference computed."""
        return self._inputs[value.uid] if value.uid in self._inputs else self.values.get(value.uid)

    def output_uids(self, selection: Selection) -> tuple[int, ...]:
        """The outputs ``selection`` has, explicitly."""
        _, _, outputs = self.plan(selection)
        return tuple(o.value.uid for o in outputs)

    # -- building ------------------------------------------------------------------------------

    def build(self, selection: Selection, name: str | None = None) -> Piece:
        from fusecli.errors import FusecliError

        exprs, inputs, outputs = self.plan(selection)
        if not outputs:
            raise BuildError("the selection computes no output")
        extents = dict(selection.extents)
        examples = {v.uid: self._fed(v, selection, extents) for v in inputs}
        declared = frozenset(v.uid for v in self.fusion.inputs)
        aliases = self.aliases(selection)
        try:
            fd = rebuild(exprs, inputs, outputs, examples, declared=declared, extents=extents,
                         aliases=aliases, reshaped={
                             e.uid: list(self.values[e.outputs[0].uid].shape) for e in exprs
                             if e.uid in selection.as_reshape}, padded=dict(selection.as_pad))
        except (ValueError, TypeError, KeyError, FusecliError) as error:
            raise BuildError(f"{type(error).__name__}: {error}") from error
        loaded = LoadedFusion(
            path=Path(self.loaded.path), name=name or self.loaded.name, fd=fd,
            inputs=[examples[v.uid] for v in inputs], line=None, source_kind="python",
            notices=self.loaded.notices,
        )
        ops = script_ops(exprs, outputs, aliases, selection.as_reshape,
                         [uid for uid, _ in selection.as_pad])
        return Piece(selection, tuple(exprs), tuple(inputs), tuple(outputs), loaded, ops)

    def _fed(self, value: Val, selection: Selection, extents: dict[int, int]) -> object:
        """``example``, or for a folded input the view it is: the strides of the storage it
        views; shrunk, its leading part laid out as any shrunk input."""
        if value.uid not in selection.folded:
            return self.example(value, extents)
        view = fold.view_of_input(self, value, selection)
        if view is None:
            raise BuildError(f"{value!r} is no longer a view of an input")
        return example_layout(value, shrink_tensor(view, extents)) if extents else view

    def example(self, value: Val, extents: dict[int, int]) -> object:
        """The value ``value`` is fed with: the original input, or what the reference computed."""
        original = value.uid in self._inputs
        example = self._inputs[value.uid] if original else self.values[value.uid]
        if not isinstance(example, torch.Tensor):
            return example
        if not isinstance(value, TensorView):
            return example
        example = example.detach()
        if extents:
            example = shrink_tensor(example, extents)
            return example_layout(value, example)
        if original:
            return _clone_exact(example)
        return example_layout(value, example)


def shrink_tensor(tensor: torch.Tensor, extents: dict[int, int]) -> torch.Tensor:
    """The leading part of ``tensor`` along every dimension whose size ``extents`` replaces."""
    for axis, size in enumerate(tensor.shape):
        new = extents.get(int(size))
        if new is not None and new < size:
            tensor = tensor.narrow(axis, 0, new)
    return tensor


def _clone_exact(tensor: torch.Tensor) -> torch.Tensor:
    from fusecli.load.inputs import clone_exact

    return clone_exact(tensor)


def _operands(expr: Expr) -> list[Val]:
    found: list[Val] = []
    for value in expr.inputs:
        found.extend(value.elements if isinstance(value, Vector) else (value,))
    return found


def _reads(expr: Expr, aliases: dict[int, Val]) -> list[Val]:
    """The values ``expr`` reads, a bypassed value replaced by what is read in its place
    (``aliases``: ``Slicer.aliases`` of the selection)."""
    return [aliases.get(v.uid, v) for v in _operands(expr)]


def _same_form(result: TensorView, result_value: object, operand: TensorView,
               operand_value: object, expanded: bool = False) -> bool:
    """Whether ``operand`` can be read where ``result`` was: same shape, same broadcasts; with
    ``expanded``, an expanded broadcast of the operand may stand for a dimension of the result."""
    if not isinstance(result_value, torch.Tensor) or not isinstance(operand_value, torch.Tensor):
        return False
    if tuple(result_value.shape) != tuple(operand_value.shape):
        return False
    if len(result.logical) != len(operand.logical):
        return False
    return all(
        (a.is_broadcast == b.is_broadcast and (a.expanded is None) == (b.expanded is None))
        or (expanded and not a.is_broadcast and b.is_broadcast and b.expanded is not None)
        for a, b in zip(result.logical, operand.logical))


def _constant(value: Val) -> bool:
    return isinstance(value, Scalar) and value.is_constant
