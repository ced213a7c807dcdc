"""The executor cache: a fusion's segmentation, kept per input signature, as nvFuser's
FusionExecutorCache keeps a FusionKernelRuntime per input signature.

A warm ``fd.execute`` (and each later fusion run of ``fusecli run``, ``bench`` and ``bisect``)
with inputs of a signature seen before skips segmentation (the scheduler proposals, the
heuristics and their checks) and the input checks, whose outcome the signature decides: it
binds the new tensors and runs the segments. The key is exact: every tensor input's dtype,
shape, strides and device, every scalar input's type and value (heuristics and run-time checks
read sizes, so sizes are in it), the rule profile, and ``FUSECLI_INJECT_FAULT`` as it reads
now. A new signature is a new entry; the oldest of more than ``CAPACITY`` entries is dropped.
Entries live on the fusion (``Fusion.memo``): a definition that goes away takes its entries
with it, and nothing else is retained (no inputs, no outputs).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fusecli.ir.nodes import ExtentExpr, Fusion, Scalar, ScalarExtent, TensorView
from fusecli.ir.optype import OpKind
from fusecli.runtime.bind import Bindings, bind_inputs, bind_scalar, flatten_inputs
from fusecli.runtime.faults import ENV_VAR
from fusecli.segment.result import SegmentedFusion
from fusecli.segment.segmenter import segment_fusion

CAPACITY = 32  # signatures kept per fusion


def input_signature(inputs: Sequence[Any], free: frozenset[int] = frozenset()) -> tuple:
    """What a segmentation may depend on, per input: a scalar's type, and its value unless
    its position is in ``free`` (``value_free_scalars``)."""
    import torch

    signature = []
    for position, value in enumerate(inputs):
        if isinstance(value, torch.Tensor):
            signature.append((
                value.dtype, tuple(value.shape), tuple(value.stride()), value.device,
                value.is_conj(), value.is_neg(),
            ))
        elif position in free:
            signature.append((type(value).__name__,))
        else:
            signature.append((type(value).__name__, repr(value)))
    return tuple(signature)


def value_free_scalars(fusion: Fusion) -> frozenset[int]:
    """Positions in ``fusion.inputs`` of the scalar inputs whose values neither segmentation
    nor code generation reads: those no size depends on (an extent of any tensor, a slice
    bound, a pad width), through scalar exprs or not. A random op's seed and offset, a
    dropout probability, a scale: a new value every call (Thunder passes a new Philox offset
    to each dropout) keeps the segmentation, the kernels and the warm run of the last, as
    nvFuser's executor cache keeps its runtime. Computed once per fusion."""
    found = fusion.memo.get("value_free_scalars")
    if found is None:
        sized = _size_scalars(fusion)
        found = fusion.memo["value_free_scalars"] = frozenset(
            position for position, value in enumerate(fusion.inputs)
            if isinstance(value, Scalar) and value.uid not in sized)
    return found


def _size_scalars(fusion: Fusion) -> set[int]:
    """The uids of the scalars some size depends on, scalar inputs among them."""
    producer = {out.uid: e for e in fusion.exprs for out in e.outputs}
    stack: list[Scalar] = []

    def extent_scalars(extent: object) -> None:
        if isinstance(extent, ScalarExtent):
            stack.append(extent.scalar)
        elif isinstance(extent, ExtentExpr):
            extent_scalars(extent.lhs)
            extent_scalars(extent.rhs)

    tensors = [v for v in fusion.inputs if isinstance(v, TensorView)]
    tensors += [out for e in fusion.exprs for out in e.outputs if isinstance(out, TensorView)]
    for tensor in tensors:
        for domain in tensor.domain:
            extent_scalars(domain.extent)
            extent_scalars(domain.expanded)
    for expr in fusion.exprs:
        if expr.op.kind is OpKind.RESIZE:  # bounds and widths, whatever the IR made of them
            stack.extend(v for v in expr.inputs if isinstance(v, Scalar))
    sized: set[int] = set()
    while stack:
        scalar = stack.pop()
        if scalar.uid in sized:
            continue
        sized.add(scalar.uid)
        expr = producer.get(scalar.uid)
        if expr is not None:
            # (a size read off a tensor, fd.ops.size, reads extents the signature holds)
            stack.extend(v for v in expr.inputs if isinstance(v, Scalar))
    return sized


@dataclass(slots=True)
class Plan:
    """What one signature of one fusion keeps: its segmentation and, once a call of that
    signature has bound, what binding gave besides the tensors themselves (the sizes of the
    symbolic extents, the device, the scalar inputs' values)."""

    segmented: SegmentedFusion
    extents: dict | None = None
    device: Any = None
    scalars: dict[int, object] = field(default_factory=dict)

    def bind(self, inputs: Sequence[Any]) -> Bindings:
        """The inputs bound to the segmented fusion: checked the first time; for later calls
        of the signature (which the checks cannot tell apart) only the tensors are new."""
        fusion = self.segmented.fusion
        if self.extents is None:
            bindings = bind_inputs(fusion, inputs)
            tensors = {v.uid for v in fusion.inputs if isinstance(v, TensorView)}
            self.extents, self.device = bindings.extents, bindings.device
            self.scalars = {uid: v for uid, v in bindings.values.items() if uid not in tensors}
            return bindings
        values = dict(self.scalars)
        free = value_free_scalars(fusion)
        for position, (definition, value) in enumerate(zip(fusion.inputs,
                                                            flatten_inputs(inputs))):
            if isinstance(definition, TensorView):
                values[definition.uid] = value
            elif position in free:  # a value of this call's own (a new Philox offset)
                values[definition.uid] = bind_scalar(position, definition, value)
        return Bindings(values, self.extents, self.device)


def cached_plan(fusion: Fusion, inputs: Sequence[Any], rules: str) -> Plan:
    """The plan of ``fusion`` for the signature of ``inputs``, segmenting on a miss."""
    entries: OrderedDict = fusion.memo.setdefault("plans", OrderedDict())
    key = (rules, os.environ.get(ENV_VAR, ""),
           input_signature(flatten_inputs(inputs), value_free_scalars(fusion)))
    plan = entries.get(key)
    if plan is not None:
        entries.move_to_end(key)
        return plan
    plan = Plan(segment_fusion(fusion, inputs, profile=rules))
    entries[key] = plan
    while len(entries) > CAPACITY:
        entries.popitem(last=False)
    return plan


def cache_size(fusion: Fusion) -> int:
    """How many signatures ``fusion`` has a segmentation for."""
    return len(fusion.memo.get("plans", ()))
