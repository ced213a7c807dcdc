"""Putting a kernel's source together, and the helpers the kernel builders share.

A kernel's source reads top to bottom: a comment saying which segment it computes and how,
the prelude helpers it uses, the index type, then the one ``extern "C"`` function.
"""

from __future__ import annotations

import textwrap

from fusecli.codegen import cdtypes
from fusecli.codegen.context import KernelContext
from fusecli.codegen.emitter import Emitter
from fusecli.codegen.indexing import Index, add, contiguous_strides, scale
from fusecli.codegen.prelude import prelude_for
from fusecli.ir.nodes import TensorView

INT32_LIMIT = 2**31 - 1


def assemble(
    ctx: KernelContext,
    name: str,
    launch_bounds: int,
    body: list[str],
    index_type: str,
    summary: str,
) -> str:
    candidate = ctx.candidate
    header = [
        f"// fusecli: segment {ctx.segment.id} ({ctx.segment.scheduler}): "
        f"{candidate.describe()}",
        *("// " + line for line in textwrap.wrap(summary, 96)),
    ]
    signature = ctx.signature(name, launch_bounds)
    function = "\n".join([signature + " {", *body, "}"])
    prelude = prelude_for(function)
    return "\n".join(
        [*header, "", prelude + f"typedef {index_type} index_t;", "", function, ""]
    )


def index_type_for(ctx: KernelContext, extra: int = 0) -> str:
    """``int`` when every offset and count fits in 31 bits, else ``long long``."""
    largest = extra
    for tensor in ctx.segment.inputs:
        layout = ctx.layouts[tensor.uid]
        span = sum((size - 1) * abs(stride)
                   for size, stride in zip(ctx.shape(tensor), layout.strides))
        largest = max(largest, span + 1)
    for tensor in ctx.candidate.tensors:
        largest = max(largest, ctx.numel(tensor))
    return "int" if largest < INT32_LIMIT // 2 else "long long"


def store(
    emitter: Emitter, tensor: TensorView, index: tuple[Index, ...], values: list[str]
) -> None:
    """Write ``values`` (one per lane) of ``tensor`` at ``index`` (LANE marks the lanes)."""
    param = emitter.ctx.output_param(tensor)
    shape = emitter.ctx.shape(tensor)
    values = [_before_rounding(emitter, tensor, value) for value in values]
    offset = Index()
    for stride, position, size in zip(contiguous_strides(shape), index, shape):
        if size > 1:
            offset = add(offset, scale(position, stride))
    if len(values) > 1 and emitter.vectorizable(offset, 16, tensor.dtype):
        emitter.vector_accesses.add(param.name)
        vtype = f"Vec<{cdtypes.storage_type(tensor.dtype)}, {len(values)}>"
        packed = emitter.fresh(f"{param.name.lower()}_out")
        emitter.line(f"{vtype} {packed};")
        for lane, value in enumerate(values):
            emitter.line(f"{packed}.v[{lane}] = {cdtypes.store(tensor.dtype, value)};")
        start = offset.text(0)
        emitter.line(f"*reinterpret_cast<{vtype}*>(&{param.name}[{start}]) = {packed};")
        return
    for lane, value in enumerate(values):
        element = f"{param.name}[{offset.text(lane)}]"
        emitter.line(f"{element} = {cdtypes.store(tensor.dtype, value)};")


def _before_rounding(emitter: Emitter, tensor: TensorView, value: str) -> str:
    """A value rounded to ``tensor``'s half or bfloat16 type as it was before rounding:
    converting either for the store gives the same bits, and this skips one rounding."""
    found = emitter.unrounded.get(value)
    return found[1] if found is not None and found[0] is tensor.dtype else value
