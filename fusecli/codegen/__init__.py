"""CUDA C kernels generated per segment, for the CuPy executor.

``generate(segment, sizes, inputs)`` returns a ``Kernel`` (source, launch, argument plan,
heuristics) or ``Unsupported(reason)``; the runtime compiles the first and falls back to ATen
on the second. ``fusecli.codegen.nvrtc.compile_source`` compiles a kernel without a GPU,
``fusecli.app.codegen_check.check_fusion`` does so for every segment of a fusion, and
``fusecli.codegen.emulate`` runs a kernel on the CPU (tests).

The generator is the segment's scheduler's (``GENERATORS``), and it builds the kernel from that
scheduler's heuristic parameters: ``reduction.py``'s kernels for the reduction and persistent
schedulers (``outer_reduction.py``'s where the reduced dims lead; ``inner_outer.py``'s for norm
backward's inner_outer_persistent), ``transpose.py``'s for
transpose, and for pointwise and resize the same tiled kernel, which is the pointwise one unless
an input is transposed in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

from fusecli.codegen import support
from fusecli.codegen.context import KernelContext, Sizes
from fusecli.codegen.inner_outer import build_inner_outer
from fusecli.codegen.kernel import ArgKind, Kernel, KernelArg, Unsupported, UnsupportedError
from fusecli.codegen.reduction import build_reduction
from fusecli.codegen.transpose import build_tiled_pointwise, build_transpose
from fusecli.codegen.views import split_outputs
from fusecli.ir import dtype as dt
from fusecli.ir.optype import OpKind
from fusecli.segment.heuristics import HeuristicParams, sizes_key
from fusecli.segment.result import Segment
from fusecli.segment.schedulers import REGISTRY

# Schedulers whose segments run on ATen by design: matmuls and attention through cuBLAS and
# cuDNN, as nvFuser's expr_eval does, and segments that compute nothing new (no_op).
ATEN_SCHEDULERS = tuple(name for name, scheduler in REGISTRY.items() if scheduler.runs_on_aten)

Generator = Callable[[KernelContext, str, Any], Kernel]

GENERATORS: dict[str, Generator] = {
    "pointwise": build_tiled_pointwise,
    "resize": build_tiled_pointwise,
    "transpose": build_transpose,
    "reduction": build_reduction,
    "inner_persistent": build_reduction,
    "outer_persistent": build_reduction,
    "inner_outer_persistent": build_inner_outer,
}


def generate(
    segment: Segment, sizes: Sizes, inputs: Sequence[Any], faults: frozenset[str] = frozenset(),
    views: AbstractSet[int] = frozenset(),
) -> Kernel | Unsupported:
    """A kernel for ``segment`` specialized to ``sizes`` and the ``inputs`` tensors (in
    ``segment.inputs`` order), or why there is none. ``faults`` (``FUSECLI_INJECT_FAULT``'s
    op names) are rendered wrong in the kernel: elementwise ops and casts, the values a kernel
    computes in registers; a segment that faults any other op has no kernel. ``views``: uids
    of tensors the runtime evaluates as views (``codegen.views``): the kernel does not write
    those among the segment's outputs, and its ``views`` lists the exprs that make them."""
    if segment.scheduler == "no_op" and any(e.op.kind in _COMPUTING for e in segment.exprs):
        # nvFuser's NoOp scheduler still compiles a kernel for what such a segment computes
        # (a cast of a broadcast input): the pointwise one, over its concrete extents
        segment = replace(segment, scheduler="pointwise", params=None)
    elif segment.scheduler in ATEN_SCHEDULERS:
        return Unsupported(f"{segment.scheduler} segments run on ATen")
    generator = GENERATORS.get(segment.scheduler)
    if generator is None:
        return Unsupported(f"no CUDA generator for the {segment.scheduler} scheduler")
    unsupported = support.why_not(segment.exprs)
    if unsupported is not None:
        return Unsupported(unsupported)
    unfaultable = _unfaultable(segment, faults)
    if unfaultable is not None:
        return Unsupported(unfaultable)
    written, evaluated = split_outputs(segment, views)
    if not written:
        return Unsupported("every output is a view of another tensor, evaluated by the runtime "
                           "(nvFuser's markAliases): no kernel to write")
    name = f"fusecli_{segment.scheduler}_s{segment.id}"
    try:
        ctx = KernelContext(segment, sizes, inputs, faults, written)
        empty = _zero_size_reason(ctx)
        if empty is not None:
            return Unsupported(empty)
        params = heuristics_for(ctx)
        kernel = generator(ctx, name, params)
    except UnsupportedError as error:
        return Unsupported(error.reason, splittable=True)
    return replace(kernel, params=params.describe(segment.scheduler), views=evaluated)


_FAULTABLE = frozenset({OpKind.UNARY, OpKind.BINARY, OpKind.TERNARY, OpKind.CAST})
_COMPUTING = _FAULTABLE


def _unfaultable(segment: Segment, faults: frozenset[str]) -> str | None:
    """Why a kernel cannot carry the injected faults of ``segment``'s exprs, if it cannot."""
    faulted = [expr for expr in segment.exprs if expr.op.value in faults]
    cannot = sorted({
        expr.op.value for expr in faulted
        if expr.op.kind not in _FAULTABLE
        or any(dt.is_complex(out.dtype) for out in expr.outputs if hasattr(out, "dtype"))
    })
    if cannot:
        return (f"fault injection names {', '.join(cannot)}: kernels render faults into "
                "elementwise ops and casts only")
    return None


def _zero_size_reason(ctx: KernelContext) -> str | None:
    """Why a segment with zero-size tensors gets no kernel: with every output empty there is
    nothing to launch (nvFuser's no_op); an empty input or intermediate feeding a non-empty
    output (a sum over an empty dim, a cat with an empty piece) runs on ATen."""
    segment = ctx.segment
    if segment.outputs and all(ctx.numel(out) == 0 for out in segment.outputs):
        return "every output is zero-size: no kernel to launch (nvFuser's no_op)"
    tensors = [*segment.inputs, *(o for e in segment.exprs for o in e.tensor_outputs())]
    for tensor in tensors:
        if ctx.numel(tensor) == 0:
            return f"{ctx.name(tensor)} is zero-size: no CUDA generator for empty tensors"
    return None


def heuristics_for(ctx: KernelContext) -> HeuristicParams:
    """The segment's parameters if its scheduler chose them at these sizes, else what the
    scheduler chooses at them (the segment was made without inputs, or for other sizes)."""
    segment = ctx.segment
    params = segment.params
    if params is None or params.sized_for != sizes_key(segment.candidate, ctx.sizes):
        params = REGISTRY[segment.scheduler].params_at(segment.candidate, ctx.sizes)
    if params is None:
        for tensor in (*segment.inputs, *segment.outputs):
            ctx.shape(tensor)  # names the tensor whose size is not known
        raise UnsupportedError(f"the {segment.scheduler} scheduler has no heuristics here")
    return params


__all__ = ["ATEN_SCHEDULERS", "ArgKind", "GENERATORS", "Kernel", "KernelArg", "Sizes",
           "Unsupported", "generate"]
