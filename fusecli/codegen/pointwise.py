"""Pointwise kernels (also for the transpose and resize schedulers' segments).

The loop is the largest output's shape. Each thread of a grid-stride loop takes a group of V
consecutive elements along the innermost dimension (V lanes: 16 bytes of the widest type) and
computes every output that the loop covers at those points; an input or output whose lanes are
contiguous and aligned moves as one 16-byte access. Outputs the loop does not cover (another
shape) get a loop of their own in the same kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fusecli.codegen import cdtypes
from fusecli.codegen.context import KernelContext
from fusecli.codegen.emitter import Emitter
from fusecli.codegen.indexing import LANE, Index, IndexSpace, add, const, contiguous_strides, scale
from fusecli.codegen.kernel import Kernel
from fusecli.codegen.source import assemble, index_type_for, store
from fusecli.ir.nodes import TensorView
from fusecli.segment.heuristics import PointwiseParams, vector_width, widest_vector


@dataclass(frozen=True, slots=True)
class Nest:
    """One grid-stride loop: its shape, and per output the loop dimension of each dim."""

    shape: tuple[int, ...]
    outputs: tuple[tuple[TensorView, tuple[int | None, ...]], ...]
    lanes: int

    @property
    def groups(self) -> int:
        total = 1
        for size in self.shape:
            total *= size
        return total // self.lanes


def build_pointwise(ctx: KernelContext, name: str, params: PointwiseParams) -> Kernel:
    nests = _nests(ctx, params)
    largest = max(nest.groups for nest in nests)
    block, unroll = params.threads, params.unroll
    grid = max(1, min(-(-largest // (block * unroll)), params.max_blocks))
    index_type = index_type_for(ctx, largest + grid * block * unroll)
    emitter = Emitter(ctx, IndexSpace())
    for number, nest in enumerate(nests):
        _emit_nest(emitter, nest, f"group{number}" if len(nests) > 1 else "group", unroll)
    summary = _summary(ctx, nests, block, grid, index_type, emitter)
    source = assemble(ctx, name, block, emitter.lines, index_type, summary)
    return Kernel(name, source, (grid, 1, 1), (block, 1, 1), 0, ctx.params(), summary)


def loop_positions(ctx: KernelContext, tensor: TensorView, reference: TensorView,
                   by_size: bool = False, buffers: bool = False,
                   ) -> tuple[int | None, ...] | None:
    """For each dim of ``tensor``, the dim of ``reference`` that is the same loop (None for a
    size-1 dim); None if a dim has no such loop or the sizes differ.

    With ``by_size``, a dim with no such loop (an expanded broadcast, say) takes a free loop
    dim of its size: fine for deciding where an output is stored, since its values are computed
    at whatever index it is stored at, but not for which dims a reduction reduces. With
    ``buffers``, both are outputs taken at their buffers' shapes: an expanded broadcast dim is
    size 1 there.
    """
    dims = ctx.candidate.dims
    size_of = ctx.buffer_shape if buffers else ctx.shape
    shape, reference_shape = size_of(tensor), size_of(reference)
    if tensor is reference:
        return tuple(p if size > 1 else None for p, size in enumerate(shape))
    reference_classes = [dims.class_of(reference, p) for p in _domain_positions(reference)]
    positions: list[int | None] = []
    for position, size in zip(_domain_positions(tensor), shape):
        if size == 1:
            positions.append(None)
            continue
        free = [p for p, other in enumerate(reference_shape) if other == size
                and p not in positions]
        same = [p for p in free if reference_classes[p] == dims.class_of(tensor, position)]
        if not same and not (by_size and free):
            return None
        positions.append((same or free)[0])
    return tuple(positions)


def _domain_positions(tensor: TensorView) -> list[int]:
    return [p for p, d in enumerate(tensor.domain) if not d.is_reduction]


def covered_positions(ctx: KernelContext, tensor: TensorView, reference: TensorView,
                      needed: set[int]) -> tuple[int | None, ...] | None:
    """Where output ``tensor`` is stored in a loop over ``reference``'s buffer whose dims of
    more than one element are ``needed``; None where the loop does not cover it. Its own
    buffer's dims first (none for its expanded broadcast dims, along which it holds one
    element, ``KernelContext.buffer_shape``); else, expanded along loop dims, it is computed
    in the loop and stored where its index along them is 0 (``source.store``)."""
    for buffers in (True, False):
        positions = loop_positions(ctx, tensor, reference, by_size=True, buffers=buffers)
        if positions is not None and {p for p in positions if p is not None} == needed:
            return positions
    return None


def written(ctx: KernelContext, tensor: TensorView) -> int:
    """The elements a kernel writes for output ``tensor``: its buffer's."""
    return math.prod(ctx.buffer_shape(tensor))


def _nests(ctx: KernelContext, params: PointwiseParams) -> list[Nest]:
    """A loop over the buffer of the output that writes the most, with every output whose
    buffer or logical shape it covers; then the same for the rest. An expanded output's loop
    is its buffer's, not its logical shape's: population member fuzz_469102188's broadcast
    of [2, 8192, 2048] to 3 heads was a loop over all 3 that stored one, reading its input 3
    times; it is one loop with the outputs of that shape now."""
    outputs = sorted(ctx.outputs, key=lambda t: -written(ctx, t))
    nests: list[Nest] = []
    pending = list(outputs)
    while pending:
        reference = pending[0]
        shape = ctx.buffer_shape(reference)
        needed = {p for p, size in enumerate(shape) if size > 1}
        covered, rest = [], []
        for tensor in pending:  # the reference covers itself: every nest takes one output
            positions = covered_positions(ctx, tensor, reference, needed)
            if positions is not None:
                covered.append((tensor, positions))
            else:
                rest.append(tensor)
        cdtypes.require((*ctx.segment.inputs, *ctx.outputs))
        shape, covered = _in_stride_order(ctx, reference, shape, covered)
        lanes = params.vector_width(shape[-1] if shape else 1)
        if nests:  # another shape's loop: 16 bytes of the widest type the kernel moves
            lanes = min(lanes, vector_width(widest_vector((*ctx.segment.inputs, *ctx.outputs)),
                                            shape[-1] if shape else 1))
        nests.append(Nest(shape, tuple(covered), lanes))
        pending = rest
    return nests


def _in_stride_order(ctx: KernelContext, reference: TensorView, shape: tuple[int, ...],
                     covered: list[tuple[TensorView, tuple[int | None, ...]]],
                     ) -> tuple[tuple[int, ...], list[tuple[TensorView, tuple[int | None, ...]]]]:
    """The loop with its dims in the stride order of ``reference``'s buffer, where it has one
    (``KernelContext.output_order``), so that the output is stored as it lies in memory,
    its contiguous dim innermost (vectorized); unchanged otherwise. Population member
    fuzz_436829705 multiplies a column-major bf16 input into an output of the same order:
    the loop ran row-major, both sides read and written 2 bytes at a time along the columns."""
    order = ctx.output_order(reference)
    if not order or len(order) != len(shape):
        return shape, covered
    loop = sorted(range(len(shape)), key=lambda dim: -order[dim])  # outermost first
    dims = [dim for dim in loop if shape[dim] > 1]
    if dims == sorted(dims):  # the same loop: size-1 dims go nowhere
        return shape, covered
    moved = {old: new for new, old in enumerate(loop)}
    return tuple(shape[dim] for dim in loop), [
        (tensor, tuple(None if p is None else moved[p] for p in positions))
        for tensor, positions in covered]


def _emit_nest(emitter: Emitter, nest: Nest, group: str, unroll: int = 1) -> None:
    """The nest's grid-stride loop; with ``unroll``, each step takes that many groups a block
    apart, in an unrolled loop whose loads the compiler issues together."""
    emitter.vector_width = nest.lanes
    if unroll == 1:
        header = (f"for (index_t {group} = blockIdx.x * (index_t)blockDim.x + threadIdx.x; "
                  f"{group} < {nest.groups}; {group} += (index_t)gridDim.x * blockDim.x)")
        with emitter.block(header):
            _emit_group(emitter, nest, group)
        return
    step = f"{group}_step"
    header = (f"for (index_t {step} = blockIdx.x * (index_t)blockDim.x * {unroll} + "
              f"threadIdx.x; {step} < {nest.groups}; "
              f"{step} += (index_t)gridDim.x * blockDim.x * {unroll})")
    with emitter.block(header):
        emitter.line("#pragma unroll")
        with emitter.block(f"for (int {group}_u = 0; {group}_u < {unroll}; ++{group}_u)"):
            emitter.line(f"const index_t {group} = {step} + (index_t){group}_u * blockDim.x;")
            with emitter.block(f"if ({group} < {nest.groups})"):
                _emit_group(emitter, nest, group)


def _emit_group(emitter: Emitter, nest: Nest, group: str) -> None:
    """One group of ``nest.lanes`` elements of every output of the nest."""
    loop = _loop_index(emitter, nest, group)
    values: dict[int, list[str]] = {tensor.uid: [] for tensor, _ in nest.outputs}
    for lane in range(nest.lanes):
        emitter.lane = lane
        for tensor, positions in nest.outputs:
            values[tensor.uid].append(emitter.value(tensor, _at(loop, positions)))
    emitter.lane = 0
    for tensor, positions in nest.outputs:
        store(emitter, tensor, _at(loop, positions), values[tensor.uid])


def _loop_index(emitter: Emitter, nest: Nest, group: str) -> tuple[Index, ...]:
    """Named loop variables for the group; the innermost counts groups, scaled by the lanes
    and plus LANE, so that contiguous accesses show as multiples of the lane count."""
    space = emitter.space
    first = space.var(group, 0, nest.groups - 1)
    element = scale(first, nest.lanes)
    loop: list[Index] = []
    rank = len(nest.shape)
    suffix = group.removeprefix("group")
    for dim, (size, stride) in enumerate(zip(nest.shape, contiguous_strides(nest.shape))):
        if size == 1:
            loop.append(const(0))
            continue
        inner = dim == rank - 1
        if inner:
            position = space.remainder(first, size // nest.lanes)
        else:
            position = space.remainder(space.divide(element, stride), size)
        name = emitter.bind("index_t", f"i{suffix}{dim}", position.text())
        variable = space.var(name, 0, (size // nest.lanes if inner else size) - 1)
        if inner and nest.lanes > 1:
            variable = add(scale(variable, nest.lanes), space.var(LANE, 0, nest.lanes - 1))
        loop.append(variable)
    return tuple(loop)


def _at(loop: tuple[Index, ...], positions: tuple[int | None, ...]) -> tuple[Index, ...]:
    return tuple(const(0) if p is None else loop[p] for p in positions)


def _summary(ctx: KernelContext, nests: list[Nest], block: int, grid: int, index_type: str,
             emitter: Emitter) -> str:
    loops = "; ".join(
        f"loop {list(n.shape)} ({', '.join(ctx.name(t) for t, _ in n.outputs)}) in "
        f"{n.groups} groups of {n.lanes}" for n in nests
    )
    vectors = ", ".join(sorted(emitter.vector_accesses)) or "none"
    bits = 32 if index_type == "int" else 64
    return (f"pointwise: {loops}; block {block}, grid {grid} (grid-stride); "
            f"{bits}-bit indexing; 16-byte accesses: {vectors}")
