"""Putting a kernel's source together, and the helpers the kernel builders share.

A kernel's source reads top to bottom: a comment saying which segment it computes and how,
the prelude helpers it uses, the index type, then the one ``extern "C"`` function.
"""

from __future__ import annotations

import textwrap

from fusecli.codegen import cdtypes
from fusecli.codegen.context import KernelContext
from fusecli.codegen.emitter import Emitter
from fusecli.codegen.indexing import LANE, Index, IndexSpace, add, contiguous_strides, scale
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
    """Write ``values`` (one per lane) of ``tensor`` at ``index`` (LANE marks the lanes).

    The buffer is 1 along ``tensor``'s expanded broadcast dims (``KernelContext.buffer_shape``):
    only the lanes whose index along each of them is 0 store, each distinct value once."""
    param = emitter.ctx.output_param(tensor)
    values = [_before_rounding(emitter, tensor, value) for value in values]
    offset = Index()
    strides = param.strides or contiguous_strides(param.shape)
    for stride, position, size in zip(strides, index, param.shape):
        if size > 1:
            offset = add(offset, scale(position, stride))
    logical = param.logical_shape or param.shape
    expanded = [position for position, size, full in zip(index, param.shape, logical)
                if size < full]
    guards = [_first_along(emitter.space, expanded, lane) for lane in range(len(values))]
    if (len(values) > 1 and len(set(guards)) == 1 and guards[0] is not None
            and emitter.vectorizable(offset, 16, tensor.dtype)):
        emitter.vector_accesses.add(param.name)
        vtype = f"Vec<{cdtypes.storage_type(tensor.dtype)}, {len(values)}>"
        packed = emitter.fresh(f"{param.name.lower()}_out")
        emitter.line(f"{vtype} {packed};")
        for lane, value in enumerate(values):
            emitter.line(f"{packed}.v[{lane}] = {cdtypes.store(tensor.dtype, value)};")
        start = offset.text(0)
        written = f"*reinterpret_cast<{vtype}*>(&{param.name}[{start}]) = {packed};"
        emitter.line(f"if ({guards[0]}) {written}" if guards[0] else written)
        return
    for lane, (value, guard) in enumerate(zip(values, guards)):
        if guard is None:
            continue  # this lane's index along an expanded dim is never 0
        element = f"{param.name}[{offset.text(lane)}]"
        written = f"{element} = {cdtypes.store(tensor.dtype, value)};"
        emitter.line(f"if ({guard}) {written}" if guard else written)


def _first_along(space: IndexSpace, positions: list[Index], lane: int) -> str | None:
    """The C condition that lane ``lane`` of every one of ``positions`` is 0: "" when always,
    None when never."""
    conditions = []
    for position in positions:
        at_lane = Index(tuple((term, c) for term, c in position.terms if term != LANE),
                        position.const + position.coefficient(LANE) * lane)
        known = all(term in space.ranges for term, _ in at_lane.terms)
        low, high = space.bounds(at_lane) if known else (None, None)
        if low == high == 0:
            continue
        if known and (low > 0 or high < 0):
            return None
        if known and at_lane.const == 0 and all(
            coefficient > 0 and space.ranges[term][0] >= 0 for term, coefficient in at_lane.terms
        ):  # a sum of non-negative terms: 0 when each is
            conditions.extend(f"{Index(((term, 1),)).text(lane)} == 0"
                              for term, _ in at_lane.terms)
        else:
            conditions.append(f"{at_lane.text(lane)} == 0")
    return " && ".join(dict.fromkeys(conditions))


def _before_rounding(emitter: Emitter, tensor: TensorView, value: str) -> str:
    """A value rounded to ``tensor``'s half or bfloat16 type as it was before rounding:
    converting either for the store gives the same bits, and this skips one rounding."""
    found = emitter.unrounded.get(value)
    return found[1] if found is not None and found[0] is tensor.dtype else value
