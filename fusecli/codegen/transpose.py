"""Transpose kernels: tiles staged through shared memory so that both sides stay coalesced.

An input whose contiguous dimension is not the loop's innermost (the output's) is read a tile
at a time (64 x 64, or 32 x 32 where 64 does not divide the dims or the tiles would not fit)
with consecutive threads along *its* contiguous dimension, parked in shared memory, and read
back transposed while the outputs are computed with consecutive threads along the output's;
each thread takes TILE / 32 columns and TILE / 8 rows of the tile, so that many loads are in
flight. An output laid out like the staged inputs (contiguous along their dimension, as
nvFuser's second group of tensors) is computed and stored right after the read instead, from
the values just read, with consecutive threads along its own contiguous dimension: so both
groups store coalesced. That holds when it reads nothing but staged inputs, scalars and tensors
broadcast along both tile dimensions (anything else read there would be transposed itself);
other outputs stay in the second phase (with none there, no tile is kept). An input constant
along the outputs' contiguous dim (a norm's per-channel weight, broadcast over the rest) is not
staged: a warp reads one address of it, and a batch norm's pointwise part was tiled for its
four [C] inputs alone. Everything else is
computed as in a pointwise kernel; a read of the staged input at any other index than the
tile's (after a reshape, say) goes to global memory as usual. Segments that do not fit (a tile
would not divide the two dimensions, several output shapes) get the pointwise kernel instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusecli.codegen import cdtypes
from fusecli.codegen.context import KernelContext
from fusecli.codegen.emitter import Emitter
from fusecli.codegen.indexing import Index, IndexSpace, add, const, contiguous_strides
from fusecli.codegen.kernel import Kernel
from fusecli.codegen.pointwise import (
    build_pointwise,
    covered_positions,
    loop_positions,
    written,
)
from fusecli.codegen.source import assemble, index_type_for, store
from fusecli.ir.nodes import TensorView
from fusecli.segment.heuristics import PointwiseParams, TransposeParams

PACKED_ELEMENTS = 4  # a contiguous dim this small is read with the next (``_read_along``)


@dataclass(frozen=True, slots=True)
class TilePlan:
    shape: tuple[int, ...]  # the loop: the largest output's shape
    inner: int  # the loop dim the outputs are contiguous in
    across: int  # the loop dim the staged inputs are contiguous in
    staged: tuple[tuple[TensorView, tuple[int | None, ...]], ...]
    outputs: tuple[tuple[TensorView, tuple[int | None, ...]], ...]  # stored along inner
    across_outputs: tuple[tuple[TensorView, tuple[int | None, ...]], ...]  # stored as read
    tile: int  # the tile's edge
    params: TransposeParams
    fastest: tuple[int, ...] = ()  # loop dims the tiles walk first (``_read_along``)

    @property
    def tiled(self) -> tuple[tuple[TensorView, tuple[int | None, ...]], ...]:
        """The staged inputs parked in shared memory: none if no output reads them back."""
        return self.staged if self.outputs else ()

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
    bits = 32 if index_type == "int" else 64
    tile, threads, columns, rows = plan.tile, params.threads, params.columns, params.rows
    summary = (
        f"transpose: loop {list(plan.shape)}, {plan.tiles} tiles of {tile}x{tile} over dims "
        f"{plan.across} and {plan.inner}{_walk(plan)}; {_staging(ctx, plan)}; block {threads} "
        f"({columns} x {rows}, {tile // columns} x {tile // rows} elements per thread), "
        f"grid {grid} (grid-stride over tiles); {bits}-bit indexing"
    )
    source = assemble(ctx, name, threads, emitter.lines, index_type, summary)
    return Kernel(name, source, (grid, 1, 1), (threads, 1, 1), 0, ctx.params(), summary)


def _walk(plan: TilePlan) -> str:
    if not plan.fastest:
        return ""
    return f", dim {', '.join(map(str, plan.fastest))} first (packed inside dim {plan.across})"


def _staging(ctx: KernelContext, plan: TilePlan) -> str:
    staged = ", ".join(ctx.name(t) for t, _ in plan.staged)
    as_read = ", ".join(ctx.name(t) for t, _ in plan.across_outputs)
    as_read = f"; {as_read} stored as read, along dim {plan.across}" if as_read else ""
    if not plan.tiled:
        return f"{staged} read along dim {plan.across}, no tile read back{as_read}"
    return (f"{staged} staged through shared memory ({_tile_bytes(plan.tiled, plan.tile)} "
            f"bytes){as_read}")


def _tile_bytes(staged, tile: int) -> int:
    return sum(tile * (tile + 1) * cdtypes.itemsize_of_register(t.dtype) for t, _ in staged)


def _plan(ctx: KernelContext, params: TransposeParams) -> TilePlan | None:
    outputs = sorted(ctx.outputs, key=lambda t: -written(ctx, t))
    reference = outputs[0]
    shape = ctx.buffer_shape(reference)  # the loop: no tiles along an expanded output's dims
    needed = {p for p, size in enumerate(shape) if size > 1}
    mapped = []
    for tensor in outputs:
        positions = covered_positions(ctx, tensor, reference, needed)
        if positions is None:
            return None
        mapped.append((tensor, positions))
    if not needed:
        return None
    inner = _contiguous_position(ctx, reference, mapped[0][1])  # the reference's, in its order
    staged, across, fastest = [], None, ()
    for tensor in ctx.segment.inputs:
        layout = ctx.layouts[tensor.uid]
        positions = loop_positions(ctx, tensor, reference)
        if layout.host_scalar or positions is None or inner not in positions:
            continue  # constant along the outputs' contiguous dim: a warp reads one address
        read_along, ahead = _read_along(ctx, tensor, positions, inner)
        if read_along is None or across not in (None, read_along):
            continue
        across = read_along
        fastest = fastest or ahead
        staged.append((tensor, positions))
    if across is None:
        return None
    as_read = [(tensor, positions) for tensor, positions in mapped
               if _contiguous_position(ctx, tensor, positions) == across
               and _reads_nothing_transposed(ctx, tensor, reference, staged, (inner, across))]
    later = [output for output in mapped if output not in as_read]
    for tile in params.tiles:
        if (shape[inner] % tile == 0 and shape[across] % tile == 0
                and _tile_bytes(staged, tile) <= params.max_tile_bytes):
            return TilePlan(shape, inner, across, tuple(staged), tuple(later), tuple(as_read),
                            tile, params, fastest)
    return None


def _read_along(ctx: KernelContext, tensor: TensorView, positions: tuple[int | None, ...],
                inner: int) -> tuple[int | None, tuple[int, ...]]:
    """The loop dim along which consecutive threads read the input ``tensor`` (its contiguous
    dim's), None where that is the outputs' ``inner`` dim (no transpose) or no loop dim; and
    the loop dims of the dims packed inside it, fastest first.

    A contiguous dim of at most ``PACKED_ELEMENTS`` elements, with the next dim of the
    tensor's stride order packed right after it, does not take the tile (no tile would divide
    it): the next dim does, and the small ones become the tiles' fastest dims, so that the
    blocks reading one stretch of memory run side by side and share its cache lines (nvFuser
    merges such dims into a virtual inner dim). Population member fuzz_469102188 reads a float
    input laid out [2, 8192, 2048] with strides (1, 2, 16384): it was an untiled loop reading
    one element per 64 KiB."""
    shape, strides = ctx.shape(tensor), ctx.layouts[tensor.uid].strides
    order = sorted((d for d, size in enumerate(shape) if size > 1), key=lambda d: strides[d])
    ahead: list[int] = []
    extent = 1
    for number, dim in enumerate(order):
        if strides[dim] != extent or positions[dim] in (None, inner):
            return None, ()
        extent *= shape[dim]
        following = order[number + 1] if number + 1 < len(order) else None
        if (extent <= PACKED_ELEMENTS and following is not None
                and strides[following] == extent
                and positions[following] not in (None, inner)):
            ahead.append(positions[dim])
            continue
        return positions[dim], tuple(ahead)
    return None, ()


def _contiguous_position(ctx: KernelContext, output: TensorView,
                         positions: tuple[int | None, ...]) -> int | None:
    """The loop dim along which ``output``'s buffer is contiguous: its innermost dim in its
    stride order (``KernelContext.output_order``), row-major where it has none."""
    dims = [d for d, size in enumerate(ctx.buffer_shape(output)) if size > 1]
    if not dims:
        return None
    order = ctx.output_order(output)
    return positions[min(dims, key=order.__getitem__) if order else dims[-1]]


def _reads_nothing_transposed(ctx: KernelContext, output: TensorView, reference: TensorView,
                              staged: list[tuple[TensorView, tuple[int | None, ...]]],
                              tile_dims: tuple[int, int]) -> bool:
    """Whether ``output`` reads no input but the staged ones, host scalars and tensors
    broadcast along both ``tile_dims`` (loop dims): computed where the staged inputs are read
    (threads along ``across``), it then reads nothing transposed."""
    staged_uids = {tensor.uid for tensor, _ in staged}
    pending, seen = [output], set()
    while pending:
        tensor = pending.pop()
        if tensor.uid in seen or tensor.uid in staged_uids:
            continue
        seen.add(tensor.uid)
        if ctx.candidate.is_input(tensor):
            if ctx.layouts[tensor.uid].host_scalar:
                continue
            positions = loop_positions(ctx, tensor, reference)
            if positions is None or any(p in tile_dims for p in positions):
                return False
            continue
        expr = ctx.candidate.definition(tensor)
        pending.extend(value for value in expr.inputs if isinstance(value, TensorView))
    return True


def _emit(emitter: Emitter, plan: TilePlan) -> None:
    e, tile = emitter, plan.tile
    for tensor, _ in plan.tiled:
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
        read_points = []
        for column, row in _offsets(e, plan):
            point = _point(corner, plan, {plan.inner: row, plan.across: column})
            read_points.append(point)
            for tensor, positions in plan.staged:
                value = e.value(tensor, _at(point, positions))
                if plan.tiled:
                    e.line(f"tile_{e.ctx.name(tensor)}[{e.text(row)}][{e.text(column)}] = "
                           f"{value};")
        if plan.across_outputs:
            names = ", ".join(e.ctx.name(t) for t, _ in plan.across_outputs)
            e.line(f"// compute and store {names} (contiguous along that dim too) from the "
                   "values read")
        for point in read_points:  # after all the loads: as many in flight as without them
            _compute_and_store(e, plan.across_outputs, point)
        if not plan.tiled:
            return
        e.line("__syncthreads();")
        for tensor, positions in plan.staged:
            e.staged[tensor.uid] = _reader(e, plan, corner, tensor, positions)
        e.line("// compute and store the outputs along their contiguous dim")
        for column, row in _offsets(e, plan):
            point = _point(corner, plan, {plan.inner: column, plan.across: row})
            _compute_and_store(e, plan.outputs, point)
        e.staged.clear()
        e.line("__syncthreads();  // the tile is refilled next")


def _compute_and_store(e: Emitter, outputs, point: tuple[Index, ...]) -> None:
    """Every output of ``outputs`` at the loop's ``point``: all values, then the stores."""
    values = [(t, p, e.value(t, _at(point, p))) for t, p in outputs]
    for tensor, positions, value in values:
        store(e, tensor, _at(point, positions), [value])


def _offsets(e: Emitter, plan: TilePlan) -> list[tuple[Index, Index]]:
    """(column, row) within the tile of each element this thread takes."""
    column = e.space.var("column", 0, plan.params.columns - 1)
    row = e.space.var("row", 0, plan.params.rows - 1)
    return [(add(column, const(c)), add(row, const(r))) for c, r in plan.within()]


def _tile_corner(e: Emitter, plan: TilePlan) -> dict[int, Index]:
    """The loop coordinates of the tile's first element, per loop dim."""
    sizes = [size // plan.tile if dim in (plan.inner, plan.across) else size
             for dim, size in enumerate(plan.shape)]
    walk = [d for d in range(len(sizes)) if d not in plan.fastest] + list(plan.fastest[::-1])
    strides = dict(zip(walk, contiguous_strides(tuple(sizes[d] for d in walk))))
    tile = e.space.var("tile", 0, plan.tiles - 1)
    corner: dict[int, Index] = {}
    for dim, count in enumerate(sizes):
        stride = strides[dim]
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
