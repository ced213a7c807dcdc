"""What generation knows about one segment: concrete shapes, input layouts, kernel parameters.

Kernels are specialized: every size and stride is a constant in the source, as is whether each
input is aligned for vector loads, so the source itself is the cache key. Sizes come from a
``Sizes`` (the segmenter's ``RuntimeInfo``, or the runtime's view of the environment), strides
and alignment from the actual input tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fusecli.codegen import cdtypes
from fusecli.codegen.kernel import ArgKind, KernelArg, UnsupportedError
from fusecli.ir import dtype as dt
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import Expr, Scalar, ScalarExtent, TensorView
from fusecli.ir.optype import OpType
from fusecli.segment.heuristics import Sizes
from fusecli.segment.result import Segment
from fusecli.segment.schedulers import REGISTRY


@dataclass(frozen=True, slots=True)
class InputLayout:
    strides: tuple[int, ...]
    alignment: int  # bytes: the largest power of two (at most 16) dividing the address
    host_scalar: bool  # a 0-dim CPU tensor: read on the host and passed by value


def ordered_strides(shape: Sequence[int], stride_order: Sequence[int]) -> tuple[int, ...]:
    """The strides of a dense buffer of ``shape`` laid out in ``stride_order`` (``order[i]``:
    dim i's rank by stride, 0 the innermost), as torch lays out ``contiguous()`` of the
    permuted tensor."""
    strides, step = [0] * len(shape), 1
    for axis in sorted(range(len(shape)), key=lambda axis: stride_order[axis]):
        strides[axis] = step
        step *= max(1, shape[axis])
    return tuple(strides)


def layout_of(tensor: Any) -> InputLayout:
    """The layout of an actual input (a torch tensor, or anything with shape and stride)."""
    address = tensor.data_ptr() if hasattr(tensor, "data_ptr") else 0
    alignment = 16
    while alignment > 1 and address % alignment:
        alignment //= 2
    on_cpu = getattr(getattr(tensor, "device", None), "type", "cuda") == "cpu"
    return InputLayout(tuple(int(s) for s in tensor.stride()), alignment,
                       on_cpu and tensor.dim() == 0)


def _number(name: str) -> int:
    """12 for ``T12`` and ``T12_value``: parameters in the IR's order."""
    digits = name[1:].split("_")[0]
    return int(digits) if name.startswith("T") and digits.isdigit() else 0


def _converted(value: object, source: DataType, target: DataType) -> object | None:
    import torch

    if not all(dt.info(d).torch_name for d in (source, target)):
        return None
    return torch.tensor(value, dtype=dt.to_torch(source)).to(dt.to_torch(target)).item()


class KernelContext:
    """One segment being generated: its shapes, its inputs' layouts, the parameters found."""

    def __init__(self, segment: Segment, sizes: Sizes, inputs: Sequence[Any],
                 faults: frozenset[str] = frozenset(),
                 outputs: Sequence[TensorView] | None = None) -> None:
        self.segment = segment
        self.faults = faults  # FUSECLI_INJECT_FAULT's op names: rendered wrong
        self.candidate = segment.candidate
        # The outputs the kernel writes: the segment's, less those the runtime evaluates as
        # views (``codegen.views``).
        self.outputs = tuple(segment.outputs if outputs is None else outputs)
        self.sizes = sizes
        if len(inputs) != len(segment.inputs):
            raise ValueError(f"segment {segment.id} has {len(segment.inputs)} tensor inputs, "
                             f"got {len(inputs)} values")
        self.layouts = {
            value.uid: layout_of(actual) for value, actual in zip(segment.inputs, inputs)
        }
        self._shapes: dict[int, tuple[int, ...]] = {}
        self._params: dict[int | str, KernelArg] = {}  # by value uid, workspace or random expr

    def name(self, tensor: TensorView) -> str:
        return self.candidate.graph.name(tensor)

    def shape(self, tensor: TensorView) -> tuple[int, ...]:
        if tensor.uid not in self._shapes:
            sizes = [self.sizes.extent(d.logical_extent) for d in tensor.logical]
            if any(size is None for size in sizes):
                raise UnsupportedError(f"the size of {self.name(tensor)} is not known here")
            self._shapes[tensor.uid] = tuple(int(s) for s in sizes)
        return self._shapes[tensor.uid]

    def buffer_shape(self, tensor: TensorView) -> tuple[int, ...]:
        """The shape of the memory a kernel writes for output ``tensor``: 1 along its expanded
        broadcast dims, whose elements are all one value (the runtime expands it)."""
        return tuple(
            1 if domain.is_broadcast and domain.expanded is not None else size
            for domain, size in zip(tensor.logical, self.shape(tensor))
        )

    def numel(self, tensor: TensorView) -> int:
        total = 1
        for size in self.shape(tensor):
            total *= size
        return total

    def constant_of(self, scalar: Scalar, dtype: DataType | None = None) -> object | None:
        """The value of a constant, or of casts of one (the IR casts constants to compute
        types with scalar exprs outside the segment), converted to ``dtype`` as torch
        converts; None for a value known only at run time."""
        if scalar.is_constant:
            value = scalar.value
        else:
            expr = self.candidate.definition(scalar)
            if expr is None or expr.op is not OpType.cast:
                return None
            value = self.constant_of(expr.inputs[0], scalar.dtype)
        if value is None or dtype is None or dtype is scalar.dtype:
            return value
        return _converted(value, scalar.dtype, dtype)

    def integer_of(self, scalar: Scalar) -> int | None:
        """An integer that decides sizes (a pad width, a slice bound): a constant, or the
        value the inputs bind to a scalar of the fusion. Kernels are specialized on sizes, so
        they may be on these too: a segmentation is made per value of each scalar a size
        depends on (``runtime.cache.value_free_scalars`` says which do not)."""
        found = self.constant_of(scalar)
        if found is None and dt.is_integral(scalar.dtype):
            found = self.sizes.extent(ScalarExtent(scalar))
        return None if found is None else int(found)

    # -- parameters -------------------------------------------------------------------------

    def input_param(self, tensor: TensorView) -> KernelArg:
        if tensor.uid not in self._params:
            layout = self.layouts[tensor.uid]
            if layout.host_scalar:
                self._add(ArgKind.HOST_SCALAR, f"{self.name(tensor)}_value",
                          cdtypes.register_type(tensor.dtype), tensor)
            else:
                self._add(ArgKind.INPUT, self.name(tensor),
                          f"const {cdtypes.storage_type(tensor.dtype)}* __restrict__", tensor)
        return self._params[tensor.uid]

    def output_param(self, tensor: TensorView) -> KernelArg:
        if tensor.uid not in self._params:
            shape, buffer = self.shape(tensor), self.buffer_shape(tensor)
            order = self.output_order(tensor)
            self._add(ArgKind.OUTPUT, self.name(tensor),
                      f"{cdtypes.storage_type(tensor.dtype)}* __restrict__", tensor,
                      shape=buffer, logical_shape=shape if buffer != shape else (),
                      strides=ordered_strides(buffer, order) if order else ())
        return self._params[tensor.uid]

    def output_order(self, tensor: TensorView) -> tuple[int, ...] | None:
        """The stride order the kernel writes a fusion output in (``FusionGraph.output_orders``)
        where its scheduler orders outputs (``Scheduler.orders_outputs``); None: row-major."""
        if not REGISTRY[self.segment.scheduler].orders_outputs:
            return None
        return self.candidate.graph.output_orders.get(tensor.uid)

    def scalar_param(self, scalar: Scalar) -> KernelArg:
        if scalar.uid not in self._params:
            count = sum(1 for p in self._params.values() if p.kind is ArgKind.SCALAR)
            self._add(ArgKind.SCALAR, f"s{count}", cdtypes.register_type(scalar.dtype), scalar)
        return self._params[scalar.uid]

    def rng_params(self, expr: Expr) -> tuple[KernelArg, KernelArg]:
        """A random expr's Philox seed and offset, 64-bit parameters (the launch fills them
        from the expr's ``rng_seed`` and ``rng_offset``, or the execution's seed and the
        expr's offset: the kernel's source does not depend on them)."""
        out = expr.output
        found = []
        for kind, suffix in ((ArgKind.RNG_SEED, "seed"), (ArgKind.RNG_OFFSET, "offset")):
            key = f"{kind.value} {expr.uid}"
            if key not in self._params:
                self._params[key] = KernelArg(kind, f"{self.name(out)}_{suffix}",
                                              "unsigned long long", DataType.UInt64, out,
                                              expr=expr)
            found.append(self._params[key])
        return found[0], found[1]

    def workspace_param(self, name: str, ctype: str, nbytes: int, zeroed: bool) -> KernelArg:
        """``nbytes`` of device scratch memory the launch provides (zero on entry if
        ``zeroed``: the kernel must leave it zero); ``ctype`` its C pointer type."""
        key = f"workspace {name}"
        if key not in self._params:
            self._params[key] = KernelArg(ArgKind.WORKSPACE, name, ctype, DataType.Int32, None,
                                          nbytes=nbytes, zeroed=zeroed)
        return self._params[key]

    def _add(self, kind: ArgKind, name: str, ctype: str, value: Any, **extra: Any) -> None:
        self._params[value.uid] = KernelArg(kind, name, ctype, value.dtype, value, **extra)

    def params(self) -> tuple[KernelArg, ...]:
        """Parameters in a fixed order: inputs, scalars, each random expr's seed and offset,
        outputs, workspaces."""
        order = [ArgKind.INPUT, ArgKind.HOST_SCALAR, ArgKind.SCALAR, ArgKind.RNG_SEED,
                 ArgKind.OUTPUT, ArgKind.WORKSPACE]
        rank = {kind: order.index(kind) for kind in order} | {
            ArgKind.RNG_OFFSET: order.index(ArgKind.RNG_SEED)  # after its seed, found first
        }
        found = list(self._params.values())  # in the order found: scalars keep it
        return tuple(sorted(found, key=lambda p: (rank[p.kind], _number(p.name))))

    def signature(self, name: str, launch_bounds: int) -> str:
        params = ",\n    ".join(f"{p.ctype} {p.name}" for p in self.params())
        return (f'extern "C" __global__ void __launch_bounds__({launch_bounds}) {name}(\n'
                f"    {params})")
