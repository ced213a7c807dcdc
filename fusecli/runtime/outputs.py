"""Turning computed values into what ``fd.execute`` returns, as nvFuser does.

- Outputs come back in ``add_output`` order, except those with ``alias_input``: their value is
  copied into that input tensor in place, and they are hidden from the results.
- Given the segmentation's ``OutputAllocations`` (``fusecli.segment.output_aliases``), each
  output is the buffer nvFuser's runtime hands out: a fusion input added as an output is that
  input; a tensor written into an input (``alias_input``) and also added as an output is that
  input; a tensor the runtime evaluates (``Evaluate``) is a view of the tensor it aliases,
  recomputed from it with ATen where an executor computed a copy; the same tensor added twice
  is one tensor. Every other tensor owns its memory: a value that shares memory with an input
  or with a tensor already handed out (a view an executor made) is copied.
- Without allocations (an evaluation with no segmentation), every output owns its memory.
- Layout of a buffer of its own: dense, in logical order, or in the ``stride_order`` that
  ``add_output`` or a ``stride_order`` expr gave; expanded broadcast dimensions stay stride 0,
  as nvFuser allocates them. A view keeps the layout it has.
- Scalar outputs come back as 0-dim tensors.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch

from fusecli.errors import InputError
from fusecli.ir import dtype as dt
from fusecli.ir.nodes import Fusion, FusionOutput, TensorView
from fusecli.ir.ops_attention import layout_source
from fusecli.ir.optype import OpType
from fusecli.runtime.aten import AtenExecutor
from fusecli.runtime.aten_elementwise import with_stride_order
from fusecli.runtime.bind import Bindings
from fusecli.runtime.context import ExecutionContext, value_of
from fusecli.segment.output_aliases import Evaluated, OutputAllocations

Tensor = torch.Tensor
_ATEN = AtenExecutor()  # evaluates the meta ops of a view, as nvFuser's ExpressionEvaluator


def collect_outputs(
    fusion: Fusion,
    env: Mapping[int, object],
    bindings: Bindings,
    ctx: ExecutionContext,
    allocations: OutputAllocations | None = None,
) -> list[Tensor]:
    """The fusion's visible outputs, after writing aliased outputs into their inputs;
    ``allocations``: which buffer each tensor comes back in (None: its own, every one)."""
    input_tensors = [
        bindings.values[value.uid] for value in fusion.inputs if isinstance(value, TensorView)
    ]
    buffers = _Buffers(fusion, env, bindings, ctx, allocations)
    results: list[Tensor] = []
    for output in fusion.outputs:
        if output.alias_input is not None:
            continue
        if isinstance(output.value, TensorView):
            results.append(buffers.output(output))
        else:
            value = value_of(output.value, env)
            dtype = dt.to_torch(output.value.dtype)
            results.append(torch.full((), value, dtype=dtype, device=ctx.device))
    _write_aliases(fusion, env, bindings, input_tensors)
    return results


class _Buffers:
    """The tensors handed out so far: each output's, and each view's root's."""

    def __init__(
        self,
        fusion: Fusion,
        env: Mapping[int, object],
        bindings: Bindings,
        ctx: ExecutionContext,
        allocations: OutputAllocations | None,
    ) -> None:
        self.fusion, self.env, self.ctx, self.allocations = fusion, env, ctx, allocations
        self.inputs = {
            value.uid: bindings.values[value.uid]
            for value in fusion.inputs if isinstance(value, TensorView)
        }
        self.layouts: dict[int, tuple[int, ...]] = {}
        orders = allocations.orders if allocations is not None else {}
        for output in reversed(fusion.outputs):  # the first layout given wins
            if not isinstance(output.value, TensorView):
                continue
            layout = (output.stride_order or _stride_order_op(fusion, output.value)
                      or orders.get(output.value.uid, ()))
            if layout or output.value.uid not in self.layouts:
                self.layouts[output.value.uid] = tuple(layout)
        self.owned = _Storages(self.inputs.values())
        self.handed: dict[int, Tensor] = {}
        # how each handed tensor was made, for a warm replay (``collection_plan``): the tensor
        # itself ("value", uid), an input ("input", uid) or materialized ("materialize", uid,
        # layout, copy); None where it took a path a replay does not repeat (a view evaluated
        # again from its root)
        self.recipes: dict[int, tuple | None] = {}

    def output(self, output: FusionOutput) -> Tensor:
        tensor = output.value
        if self.allocations is not None:
            return self.buffer(tensor)
        value = value_of(tensor, self.env)
        layout = output.stride_order or _stride_order_op(self.fusion, tensor)
        copy = self.owned.shares(value)
        result = materialize(value, tensor, layout, copy)
        self.owned.add(result)
        self.recipes.setdefault(id(result), ("materialize", tensor.uid, tuple(layout), copy))
        return result

    def buffer(self, tensor: TensorView) -> Tensor:
        """The one tensor nvFuser's runtime holds for ``tensor``."""
        uid, allocations = tensor.uid, self.allocations
        found = self.handed.get(uid)
        if found is not None:
            return found
        if uid in self.inputs:
            result, recipe = self.inputs[uid], ("input", uid)
        elif uid in allocations.reused:
            source = allocations.reused[uid].uid
            result, recipe = self.inputs[source], ("input", source)
        elif uid in allocations.evaluated:
            result = self._evaluated(tensor, allocations.evaluated[uid])
            recipe = ("value", uid) if result is self.env.get(uid) else None
        else:
            value = value_of(tensor, self.env)
            layout = self.layouts.get(uid, ())
            copy = self.owned.shares(value)
            result = materialize(value, tensor, layout, copy)
            recipe = ("materialize", uid, layout, copy)
        self.owned.add(result)
        self.handed[uid] = result
        self.recipes.setdefault(id(result), recipe)
        return result

    def _evaluated(self, tensor: TensorView, how: Evaluated) -> Tensor:
        """The view of ``how.root``'s buffer: the executor's value where it is one, else the
        meta ops run again on that buffer (a kernel wrote a copy, the reference computed it,
        or the root was copied). Under fault injection the executor's value stands: running
        the ops again would inject the fault into values no executor under test computed."""
        root = self.buffer(how.root)
        value = self.env.get(tensor.uid)
        if self.ctx.faults and isinstance(value, Tensor):
            return value
        if self.env.get(how.root.uid) is root and _same_storage(value, root):
            return value
        scratch = dict(self.env)
        scratch[how.root.uid] = root
        _ATEN.run_exprs(how.chain, scratch, self.ctx)
        return scratch[tensor.uid]


def collection_plan(
    fusion: Fusion,
    env: Mapping[int, object],
    bindings: Bindings,
    ctx: ExecutionContext,
    allocations: OutputAllocations | None,
) -> list[tuple] | None:
    """How ``collect_outputs`` makes each visible output of this environment, as recipes a
    warm replay repeats (``_Buffers.recipes``): the same decisions for the same input
    signature, without the bookkeeping. None where a replay must collect as the full run
    does: an output written into an input, a scalar output, a view evaluated again."""
    if any(o.alias_input is not None or not isinstance(o.value, TensorView)
           for o in fusion.outputs):
        return None
    buffers = _Buffers(fusion, env, bindings, ctx, allocations)
    recipes = [buffers.recipes.get(id(buffers.output(o))) for o in fusion.outputs]
    return None if any(r is None for r in recipes) else recipes


def materializer(tensor: TensorView, value: Tensor, stride_order: Sequence[int],
                 copy: bool) -> Any:
    """``materialize`` for one output of one input signature, as a function of its value:
    the expanded dimensions, the layout and the copy decided once."""
    expanded = [axis for axis, domain in enumerate(tensor.logical)
                if domain.is_broadcast and domain.expanded is not None]
    cuts = [(axis, min(1, value.shape[axis])) for axis in expanded]
    shape = tuple(value.shape)
    order = tuple(stride_order)

    def make(value: Tensor) -> Tensor:
        base = value
        for axis, length in cuts:  # one element along an expanded dim: all of them are equal
            base = base.narrow(axis, 0, length)
        laid = with_stride_order(base, order) if order else base.contiguous()
        if copy and laid is base:
            laid = laid.clone()
        return laid.expand(shape) if cuts else laid

    return make


def _stride_order_op(fusion: Fusion, tensor: TensorView) -> tuple[int, ...]:
    """The layout a ``stride_order`` expr gave ``tensor``, if one defined it; an attention
    output's, that of the input it takes its layout from (``ops_attention.layout_source``)."""
    definition = fusion.definition(tensor)
    if definition is not None and definition.op is OpType.stride_order:
        return tuple(definition.attr("stride_order"))
    source = layout_source(definition, tensor) if definition is not None else None
    return source.stride_order if source is not None else ()


def materialize(
    value: Tensor, tensor: TensorView, stride_order: Sequence[int], must_copy: bool
) -> Tensor:
    """``value`` laid out as an output of ``tensor``; a copy when ``must_copy``."""
    return materializer(tensor, value, stride_order, must_copy)(value)


def _write_aliases(
    fusion: Fusion, env: Mapping[int, object], bindings: Bindings, input_tensors: list[Tensor]
) -> None:
    """Copy aliased outputs into their inputs: all values are read before any input is written."""
    writes: list[tuple[Tensor, Tensor]] = []
    storages = _Storages(input_tensors)
    for index, output in enumerate(fusion.outputs):
        if output.alias_input is None:
            continue
        target = bindings.values[output.alias_input.uid]
        value = value_of(output.value, env)
        _check_alias(index, output, value, target, fusion)
        if storages.shares(value):
            value = value.clone()
        writes.append((target, value))
    for target, value in writes:
        target.copy_(value)


def _check_alias(
    index: int, output: FusionOutput, value: Any, target: Tensor, fusion: Fusion
) -> None:
    input_index = fusion.inputs.index(output.alias_input)
    if not isinstance(value, Tensor):
        raise InputError(f"output {index}: only a tensor can alias input {input_index}")
    if value.shape != target.shape or value.dtype != target.dtype:
        raise InputError(
            f"output {index}: aliases input {input_index} "
            f"({str(target.dtype).removeprefix('torch.')} {list(target.shape)}) but is "
            f"{str(value.dtype).removeprefix('torch.')} {list(value.shape)}"
        )


class _Storages:
    """The memory blocks already handed out, to tell whether a value would share one."""

    def __init__(self, tensors: Iterable[Tensor]) -> None:
        self._pointers: set[tuple[str, int]] = set()
        for tensor in tensors:
            self.add(tensor)

    @staticmethod
    def _key(tensor: Tensor) -> tuple[str, int] | None:
        pointer = tensor.untyped_storage().data_ptr()
        return (str(tensor.device), pointer) if pointer else None

    def add(self, tensor: Tensor) -> None:
        key = self._key(tensor)
        if key is not None:
            self._pointers.add(key)

    def shares(self, tensor: Any) -> bool:
        return isinstance(tensor, Tensor) and self._key(tensor) in self._pointers


def _same_storage(value: Any, tensor: Tensor) -> bool:
    """Whether ``value`` is a tensor in ``tensor``'s memory block (a view of it, or it)."""
    return (
        isinstance(value, Tensor) and value.device == tensor.device
        and value.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()
    )
