"""Transpose kernels: tiles staged through shared memory so that both sides stay coalesced.

An input whose contiguous dimension is not the loop's innermost (the output's) is read a tile
at a time (64 x 64, or 32 x 32 where 64 does not divide the dims or the tiles would not fit)
with consecutive threads along *its* contiguous dimension, parked in shared memory, and read
back transposed while the outputs are computed with consecutive threads along the output's;
each thread takes TILE / 32 columns and TILE / 8 rows of the tile, so that many loads are in
flight. Everything else is computed as in a pointwise kernel; a read of the staged input at any
other index than the tile's (after a reshape, say) goes to global memory as usual. Segments
that do not fit (a tile would not divide the two dimensions, several output shapes) get the
pointwise kernel instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusecli.codegen import cdtypes
from fusecli.codegen.context import KernelContext
from fusecli.codegen.emitter import Emitter
from fusecli.codegen.indexing import Index, IndexSpace, add, const, contiguous_strides
from fusecli.codegen.kernel import Kernel
from fusecli.codegen.pointwise import build_pointwise, loop_positions
from fusecli.codegen.source import assemble, index_type_for, store
from fusecli.ir.nodes import TensorView
from fusecli.segment.heuristics import PointwiseParams, TransposeParams


@dataclass(frozen=True, slots=True)
class TilePlan:
    shape: tuple[int, ...]  # the loop: the largest output's shape
    inner: int  # the loop dim the outputs are contiguous in
    across: int  # the loop dim the staged inputs are contiguous in
    staged: tuple[tuple[TensorView, tuple[int | None, ...]], ...]
    outputs: tuple[tuple[TensorView, tuple[int | None, ...]], ...]
    tile: int  # the tile's edge
    params: TransposeParams

    @property
    def tiles(self) -> int:
        total = 1
        for dim, size in enumerate(self.shape):
            total *= size // self.tile if dim in (self.inner, self.across) else size
        return total

    def within(self) -> list[tuple[int, int]]:
        """(column offset, row offset) of each element a thread takes in a tile."""
        return [(column, row) for column in range(0, self.tile, self.params.columns)
                for row in range(0, self.tile, self.params.rows)]


def build_tiled_pointwise(ctx: KernelContext, name: str, params: PointwiseParams) -> Kernel:
    """The pointwise and resize schedulers' kernel: pointwise, but an input transposed in
    memory is staged through tiles of the default shape (as fusecli has always done)."""
    return build_transpose(ctx, name, TransposeParams(params))


def build_transpose(ctx: KernelContext, name: str, params: TransposeParams) -> Kernel:
    plan = _plan(ctx, params)
    if plan is None:
        return build_pointwise(ctx, name, params.pointwise)
    grid = max(1, min(plan.tiles, params.pointwise.max_blocks))
    emitter = Emitter(ctx, IndexSpace())
    _emit(emitter, plan)
    index_type = index_type_for(ctx, plan.tiles + grid)
    staged = ", ".join(ctx.name(t) for t, _ in plan.staged)
    bits = 32 if index_type == "int" else 64
    tile, threads, columns, rows = plan.tile, params.threads, params.columns, params.rows
    summary = (
        f"transpose: loop {list(plan.shape)}, {plan.tiles} tiles of {tile}x{tile} over dims "
        f"{plan.across} and {plan.inner}; {staged} staged through shared memory "
        f"({_tile_bytes(plan.staged, tile)} bytes); block {threads} ({columns} x {rows}, "
        f"{tile // columns} x {tile // rows} elements per thread), grid {grid} (grid-stride "
        f"over tiles); {bits}-bit indexing"
    )
    source = assemble(ctx, name, threads, emitter.lines, index_type, summary)
    return Kernel(name, source, (grid, 1, 1), (threads, 1, 1), 0, ctx.params(), summary)


def _tile_bytes(staged, tile: int) -> int:
    return sum(tile * (tile + 1) * cdtypes.itemsize_of_register(t.dtype) for t, _ in staged)


def _plan(ctx: KernelContext, params: TransposeParams) -> TilePlan | None:
    outputs = sorted(ctx.outputs, key=lambda t: -ctx.numel(t))
    reference = outputs[0]
    shape = ctx.shape(reference)
    needed = {p for p, size in enumerate(shape) if size > 1}
    mapped = []
    for tensor in outputs:
        positions = loop_positions(ctx, tensor, reference, by_size=True)
        if positions is None or {p for p in positions if p is not None} != needed:
            return None
        mapped.append((tensor, positions))
    inner = max(needed, default=None)
    if inner is None:
        return None
    staged, across = [], None
    for tensor in ctx.segment.inputs:
        layout = ctx.layouts[tensor.uid]
        positions = loop_positions(ctx, tensor, reference)
        if layout.host_scalar or positions is None:
            continue
        contiguous = [d for d, (size, stride) in enumerate(zip(ctx.shape(tensor), layout.strides))
                      if stride == 1 and size > 1]
        if not contiguous or positions[contiguous[0]] in (None, inner):
            continue
        if across not in (None, positions[contiguous[0]]):
            continue
        across = positions[contiguous[0]]
        staged.append((tensor, positions))
    if across is None:
        return None
    for tile in params.tiles:
        if (shape[inner] % tile == 0 and shape[across] % tile == 0
                and _tile_bytes(staged, tile) <= params.max_tile_bytes):
            return TilePlan(shape, inner, across, tuple(staged), tuple(mapped), tile, params)
    return None


def _emit(emitter: Emitter, plan: TilePlan) -> None:
    e, tile = emitter, plan.tile
    for tensor, _ in plan.staged:
        e.line(f"__shared__ {cdtypes.register_type(tensor.dtype)} "
               f"tile_{e.ctx.name(tensor)}[{tile}][{tile + 1}];  // +1: no bank conflicts")
    columns = plan.params.columns
    e.line(f"const int column = threadIdx.x % {columns}, row = threadIdx.x / {columns};")
    header = (f"for (index_t tile = blockIdx.x; tile < {plan.tiles}; "
              "tile += (index_t)gridDim.x)")
    with e.block(header):
        corner = _tile_corner(e, plan)
        e.line(f"// read the staged inputs along their contiguous dim: {tile // columns} x "
               f"{tile // plan.params.rows} elements per thread")
        for column, row in _offsets(e, plan):
            point = _point(corner, plan, {plan.inner: row, plan.across: column})
            for tensor, positions in plan.staged:
                value = e.value(tensor, _at(point, positions))
                e.line(f"tile_{e.ctx.name(tensor)}[{e.text(row)}][{e.text(column)}] = {value};")
        e.line("__syncthreads();")
        for tensor, positions in plan.staged:
            e.staged[tensor.uid] = _reader(e, plan, corner, tensor, positions)
        e.line("// compute and store the outputs along their contiguous dim")
        for column, row in _offsets(e, plan):
            point = _point(corner, plan, {plan.inner: column, plan.across: row})
            values = [(t, p, e.value(t, _at(point, p))) for t, p in plan.outputs]
            for tensor, positions, value in values:
                store(e, tensor, _at(point, positions), [value])
        e.staged.clear()
        e.line("__syncthreads();  // the tile is refilled next")


def _offsets(e: Emitter, plan: TilePlan) -> list[tuple[Index, Index]]:
    """(column, row) within the tile of each element this thread takes."""
    column = e.space.var("column", 0, plan.params.columns - 1)
    row = e.space.var("row", 0, plan.params.rows - 1)
    return [(add(column, const(c)), add(row, const(r))) for c, r in plan.within()]


def _tile_corner(e: Emitter, plan: TilePlan) -> dict[int, Index]:
    """The loop coordinates of the tile's first element, per loop dim."""
    sizes = [size // plan.tile if dim in (plan.inner, plan.across) else size
             for dim, size in enumerate(plan.shape)]
    tile = e.space.var("tile", 0, plan.tiles - 1)
    corner: dict[int, Index] = {}
    for dim, (count, stride) in enumerate(zip(sizes, contiguous_strides(tuple(sizes)))):
        if plan.shape[dim] == 1:
            continue
        position = e.space.remainder(e.space.divide(tile, stride), count)
        tiled = dim in (plan.inner, plan.across)
        name = e.bind("index_t", f"first{dim}" if tiled else f"i{dim}",
                      f"({position.text()}) * {plan.tile}" if tiled else position.text())
        high = plan.shape[dim] - (plan.tile if tiled else 1)
        corner[dim] = e.space.var(name, 0, high)
    return corner


def _point(corner: dict[int, Index], plan: TilePlan, within: dict[int, Index]
           ) -> tuple[Index, ...]:
    return tuple(
        add(corner[dim], within[dim]) if dim in within else corner.get(dim, const(0))
        for dim in range(len(plan.shape))
    )


def _at(point: tuple[Index, ...], positions: tuple[int | None, ...]) -> tuple[Index, ...]:
    return tuple(const(0) if p is None else point[p] for p in positions)


def _reader(e: Emitter, plan: TilePlan, corner: dict[int, Index], tensor: TensorView,
            positions: tuple[int | None, ...]):
    """Where the staged ``tensor`` at an index is found in its tile, if the index is the
    tile's point of this thread (inner = column, across = row)."""
    def read(index: tuple[Index, ...]) -> str | None:
        requested = tuple(e.text(i) for i in index)
        for column, row in _offsets(e, plan):
            point = _point(corner, plan, {plan.inner: column, plan.across: row})
            expected = tuple(e.text(i) for i in _at(point, positions))
            if requested == tuple(e.text(const(0)) if s == 1 else t for s, t in
                                  zip(e.ctx.shape(tensor), expected)):
                return f"tile_{e.ctx.name(tensor)}[{e.text(column)}][{e.text(row)}]"
        return None

    return read
