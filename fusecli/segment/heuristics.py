"""Heuristic parameters: what a scheduler decides for a segment at its run-time sizes.

As nvFuser's ``HeuristicParams`` (csrc/scheduler/{pointwise,reduction,normalization}_heuristic.h)
these are plain data, computed by the scheduler that accepted the segment from the concrete
sizes, and read by the CUDA generator of that scheduler: vector widths, block shapes, rows per
block, the reduction's structure. They depend on sizes and dtypes only; how a kernel indexes
its inputs (strides, alignment, which input is staged through shared memory) is read from the
actual tensors when the kernel is generated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol

from fusecli.ir import dtype as dt
from fusecli.ir.nodes import Extent, TensorView
from fusecli.ir.optype import OpKind
from fusecli.segment.candidate import Candidate

VECTOR_BYTES = 16  # the widest access: one 16-byte load or store per thread and lane group
MAX_VECTORIZE = 16  # 128 bits of a 1-byte type, as nvFuser (vectorize_helper: 128 / max dtype bits)
POINTWISE_THREADS = 256
# Past 2**22 vector groups (a 64 MiB bf16 tensor) a thread takes 2 groups per step (4 where it
# draws random numbers: a Philox call per 4 elements is compute to hide), 128 to a block.
# Measured on an H200, kernel alone: SiLU*mul bf16 65536x4096 403 us (256 threads, 1 group)
# -> 386 us; dropout+residual bf16 16384x8192 238 us -> 220 us (scripts/gpu-check's table).
UNROLL_FROM_GROUPS = 1 << 22
UNROLLED_THREADS = 128
MAX_BLOCKS = 1 << 20
ROWS_BLOCK = 128  # threads per block when several rows share one
MAX_PERSISTENT_ELEMENTS = 64  # per thread; longer rows loop
MAX_ROW_THREADS = 1024
# Vectors per thread where the row allows. Measured on an H200 (16384 x 8192 bf16 LayerNorm,
# L2 prefetch on): 1 (1024-thread blocks) reached 76% of copy bandwidth, 2 reached 90%.
SLOTS_WANTED = 2

Shape = tuple[int, ...]
SizesKey = tuple[Shape | None, ...]  # every tensor's shape in the segment


class Sizes(Protocol):
    """Concrete extents: ``RuntimeInfo`` satisfies it, as does the runtime's environment."""

    def extent(self, extent: Extent) -> int | None: ...


class _Described:
    """``name(field=value, ...)``: the line ``fusecli codegen`` shows for a segment."""

    def describe(self, scheduler: str) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self) if f.repr)
        return f"{scheduler}({shown})"


@dataclass(frozen=True, slots=True)
class PointwiseParams(_Described):
    """One grid-stride loop per output shape, ``vectorize`` lanes per thread."""

    vectorize: int  # lanes of the largest output's loop
    max_vectorize: int  # 16 bytes of the widest type moved: other loops divide it down
    threads: int = POINTWISE_THREADS
    max_blocks: int = MAX_BLOCKS
    unroll: int = 1  # groups of lanes per thread per loop step, their loads issued together
    sized_for: SizesKey = field(default=(), repr=False, compare=False)

    def vector_width(self, inner: int) -> int:
        """The lanes of a loop whose innermost extent is ``inner``."""
        return vector_width(self.max_vectorize, inner)


@dataclass(frozen=True, slots=True)
class TransposeParams(_Described):
    """Tiles staged through shared memory: the first edge of ``tiles`` that divides both
    transposed dims and fits ``max_tile_bytes``; a ``columns`` x ``rows`` thread block."""

    pointwise: PointwiseParams  # the kernel when no tile fits
    tiles: tuple[int, ...] = (64, 32)
    columns: int = 32  # a warp along a tile row: each thread takes tile / columns columns
    rows: int = 8  # thread rows: each thread takes tile / rows rows of a tile
    max_tile_bytes: int = 32 * 1024  # static shared memory for one block's staged tiles

    @property
    def sized_for(self) -> SizesKey:
        return self.pointwise.sized_for

    @property
    def threads(self) -> int:
        return self.columns * self.rows


@dataclass(frozen=True, slots=True)
class ReductionParams(_Described):
    """Rows of the reference (the first reduction's input): its kept dims are rows, its
    ``reduced_dims`` a row's elements; ``threads`` per row, ``vectorize`` lanes per slot."""

    vectorize: int
    threads: int
    rows_per_block: int
    slots: int  # vectors per thread
    persistent: bool  # the row stays in registers across the reductions
    inner: bool  # the reduced dims trail: a row is contiguous, and threads share it
    reduced_dims: tuple[int, ...]
    rows: int
    row_size: int
    row_dims: tuple[int, ...] = field(default=(), repr=False)  # the reference's kept dims
    row_shape: Shape = field(default=(), repr=False)
    reduced_shape: Shape = field(default=(), repr=False)
    max_blocks: int = MAX_BLOCKS
    # an outer reduction's tiling (``outer_tiling``), swept by ``variants``; 0: its default
    groups: int = field(default=0, repr=False)
    unroll: int = field(default=0, repr=False)
    waves: int = field(default=0, repr=False)
    sized_for: SizesKey = field(default=(), repr=False, compare=False)

    @property
    def block(self) -> int:
        return self.threads * self.rows_per_block

    @property
    def vectors(self) -> int:
        """Vectors of ``vectorize`` elements in a row."""
        return self.row_size // self.vectorize


HeuristicParams = PointwiseParams | TransposeParams | ReductionParams


def shape_of(tensor: TensorView, sizes: Sizes) -> Shape | None:
    found = [sizes.extent(d.logical_extent) for d in tensor.logical]
    return None if any(s is None for s in found) else tuple(int(s) for s in found)


def segment_shapes(candidate: Candidate, sizes: Sizes) -> tuple[Shape, ...] | None:
    """The shapes of the segment's inputs and outputs, the sizes heuristics depend on."""
    shapes = [shape_of(t, sizes) for t in (*candidate.inputs, *candidate.outputs)]
    return None if any(s is None for s in shapes) else tuple(shapes)


def sizes_key(candidate: Candidate, sizes: Sizes) -> SizesKey:
    """The shape of every tensor of the segment: with the dtypes, all its heuristics read."""
    return tuple(shape_of(t, sizes) for t in candidate.tensors)


def numel(shape: Shape) -> int:
    total = 1
    for size in shape:
        total *= size
    return total


def itemsize(tensor: TensorView) -> int:
    return max(1, dt.info(tensor.dtype).bits // 8)


def widest_vector(tensors: Sequence[TensorView]) -> int:
    """Lanes of one 16-byte access of the widest type of ``tensors``."""
    widest = max((itemsize(t) for t in tensors), default=1)
    return max(1, min(MAX_VECTORIZE, VECTOR_BYTES // widest))


def vector_width(lanes: int, inner: int) -> int:
    """``lanes`` halved until it divides the innermost extent."""
    while lanes > 1 and inner % lanes:
        lanes //= 2
    return lanes


def pointwise(candidate: Candidate, sizes: Sizes) -> PointwiseParams | None:
    shapes = segment_shapes(candidate, sizes)
    if shapes is None or not candidate.outputs:
        return None
    outputs = shapes[len(candidate.inputs):]
    largest = max(outputs, key=numel)  # the first of the largest, as the generator sorts
    reference = candidate.outputs[outputs.index(largest)]
    most = widest_vector(along_inner(candidate, shapes, reference, largest))
    lanes = vector_width(most, largest[-1] if largest else 1)
    threads, unroll = POINTWISE_THREADS, 1
    if numel(largest) // lanes >= UNROLL_FROM_GROUPS:
        random = any(e.op.kind is OpKind.RANDOM for e in candidate.exprs)
        threads, unroll = UNROLLED_THREADS, 4 if random else 2
    return PointwiseParams(lanes, most, threads, unroll=unroll,
                           sized_for=sizes_key(candidate, sizes))


def along_inner(candidate: Candidate, shapes: Sequence[Shape], reference: TensorView,
                reference_shape: Shape) -> list[TensorView]:
    """The inputs and outputs whose lanes a vector access moves: all but those smaller than
    ``reference`` with no dim along its innermost dim of more than one element (a batch
    norm's per-channel weight: read once per warp, a float one no longer halves a bf16 loop's
    lanes). nvFuser vectorizes the tensors that have the reference's inner dim likewise."""
    tensors = (*candidate.inputs, *candidate.outputs)
    positions = [p for p, d in enumerate(reference.domain) if not d.is_reduction]
    wide = [p for p, size in zip(positions, reference_shape) if size > 1]
    if not wide:
        return list(tensors)
    inner = candidate.dims.class_of(reference, wide[-1])
    found = []
    for tensor, shape in zip(tensors, shapes):
        own = [p for p, d in enumerate(tensor.domain) if not d.is_reduction]
        if numel(shape) >= numel(reference_shape) or any(
                size > 1 and candidate.dims.class_of(tensor, p) == inner
                for p, size in zip(own, shape)):
            found.append(tensor)
    return found  # the reference among them


def transpose(candidate: Candidate, sizes: Sizes) -> TransposeParams | None:
    params = pointwise(candidate, sizes)
    return None if params is None else TransposeParams(params)


def per_element(candidate: Candidate, shapes: Sequence[Shape], row_shape: Shape,
                reduced_shape: Shape) -> list[TensorView]:
    """The inputs and outputs moved per element of a row: not those of a row's own (a norm's
    mean and inverse deviation, [rows], [rows, 1] or expanded from that, read or written
    once per row, whatever their dtype), nor those smaller than a row."""
    tensors = (*candidate.inputs, *candidate.outputs)
    per_row = _squeezed(row_shape)
    own = per_row if per_row != _squeezed(reduced_shape) else None  # [n] x [n]: can't tell
    found = []
    for tensor, shape in zip(tensors, shapes):
        stored = tuple(1 if d.is_broadcast else size for d, size in zip(tensor.logical, shape))
        if numel(stored) >= numel(reduced_shape) and _squeezed(stored) != own:
            found.append(tensor)
    return found


def _squeezed(shape: Shape) -> Shape:
    return tuple(size for size in shape if size != 1)


def reduction(candidate: Candidate, sizes: Sizes, first: int = 0) -> ReductionParams | None:
    """The row structure and block shape of a reduction or normalization kernel: the rows of
    the ``first`` reduction's input."""
    reductions = candidate.reduction_exprs[first:]
    shapes = segment_shapes(candidate, sizes)
    shape = shape_of(reductions[0].inputs[0], sizes) if reductions else None
    if shapes is None or shape is None:
        return None
    dims = tuple(sorted(reductions[0].attr("dims")))
    row_dims = tuple(p for p in range(len(shape)) if p not in dims)
    row_shape = tuple(shape[p] for p in row_dims)
    reduced_shape = tuple(shape[p] for p in dims)
    rows, row_size = numel(row_shape), numel(reduced_shape)
    structure = dict(reduced_dims=dims, rows=rows, row_size=row_size, row_dims=row_dims,
                     row_shape=row_shape, reduced_shape=reduced_shape,
                     sized_for=sizes_key(candidate, sizes))
    if dims != tuple(range(len(row_dims), len(shape))):
        # An outer reduction: a thread per row, walking it; neighbouring threads take
        # neighbouring rows, which is coalesced when a kept dim is innermost in memory.
        return ReductionParams(1, 1, ROWS_BLOCK, row_size, False, False, **structure)
    moved = per_element(candidate, shapes, row_shape, reduced_shape)
    lanes = vector_width(widest_vector(moved), reduced_shape[-1] if reduced_shape else 1)
    return ReductionParams(**_row_block(row_size, lanes, SLOTS_WANTED), inner=True, **structure)


def _row_block(row_size: int, lanes: int, slots_wanted: int) -> dict[str, Any]:
    """The block shape of rows of ``row_size`` elements, ``lanes`` an access, aiming at
    ``slots_wanted`` vectors a thread: a power of two of threads a row (several rows share a
    block below a warp), the slots that leaves, and whether a row fits in registers."""
    vectors = row_size // lanes
    threads = min(MAX_ROW_THREADS, _next_power_of_two(-(-vectors // slots_wanted)))
    slots = -(-vectors // threads)
    return dict(vectorize=lanes, threads=threads,
                rows_per_block=max(1, ROWS_BLOCK // threads) if threads <= 32 else 1,
                slots=slots, persistent=slots * lanes <= MAX_PERSISTENT_ELEMENTS)


def inner_outer(candidate: Candidate, sizes: Sizes) -> ReductionParams | None:
    """inner_outer_persistent (codegen/inner_outer.py): the rows of the first inner reduction
    (its reduced dims trail), as many blocks as keep ``INNER_OUTER_THREADS`` threads resident
    on each multiprocessor (one block of 512 alone left each SM a single row's loads in
    flight), each looping over its rows and keeping partial sums of its columns for the
    outer reductions; a row group's partials go to a workspace, at most ``MAX_PARTIALS`` of
    them, combined in two levels."""
    for number, expr in enumerate(candidate.reduction_exprs):
        rank = len(expr.inputs[0].logical)
        dims = tuple(sorted(expr.attr("dims")))
        if dims and dims == tuple(range(rank - len(dims), rank)):
            params = reduction(candidate, sizes, number)
            if params is None or not params.inner:
                return params
            # INNER_OUTER_ELEMENTS a thread, INNER_OUTER_LANES at a time: measured on an H100
            # (benchmarks/sweep.py at 465399d), bf16 rows of 8192 took 112 us with 1,024
            # threads of 2 slots of 4 lanes, 123 us of 1 slot of 8, 149 us with 512 threads
            # of 2 slots of 8 (16 elements a thread: two blocks resident where the grid
            # counted on more; [8192, 4096] so took 140 us in the population, nvFuser 87)
            lanes = min(params.vectorize, INNER_OUTER_LANES)  # powers of two: it divides too
            block = _row_block(params.row_size, lanes, max(1, INNER_OUTER_ELEMENTS // lanes))
            if block["threads"] > 32:  # rows sharing a block keep reduction()'s shape
                params = replace(params, **block)
            return replace(params, max_blocks=inner_outer_blocks(params))
    return reduction(candidate, sizes)


def inner_outer_blocks(params: ReductionParams) -> int:
    """inner_outer's grid for ``params``' block shape: ``INNER_OUTER_THREADS`` resident on each
    multiprocessor, at most ``MAX_PARTIALS`` row groups, each taking several rows (a block's
    partials cost a row's worth of writes)."""
    per_sm = max(1, INNER_OUTER_THREADS // params.block)
    enough = max(MULTIPROCESSORS, params.rows // (MIN_ROWS_PER_PARTIAL * params.rows_per_block))
    return max(1, min(MULTIPROCESSORS * per_sm, MAX_PARTIALS // params.rows_per_block, enough))


MAX_PARTIALS = 1024
INNER_OUTER_ELEMENTS = 8  # a row's elements per thread
INNER_OUTER_LANES = 4  # at most, per access: 2 slots of 4 beat 1 slot of 8 bf16 (above)
INNER_OUTER_THREADS = 1024  # resident threads per multiprocessor the inner_outer grid aims at
MIN_ROWS_PER_PARTIAL = 16  # rows a row group takes, at least, beyond a block per multiprocessor


def _next_power_of_two(value: int) -> int:
    power = 1
    while power < value:
        power *= 2
    return power


# -- outer reductions (codegen/outer_reduction.py) -----------------------------------------------
# A block is BX column vectors (a warp's 32 reads one 512-byte stretch of a row of floats) by BY
# row groups, 256 threads; each thread has UNROLL rows' loads in flight. The rows are split over
# gridDim.y where the column tiles alone would not fill the GPU WAVES times over, as long as each
# thread keeps MIN_ROWS_PER_THREAD rows per split: a large sum over dim 0 is split, a small one
# is not (no workspace, no second phase).

MULTIPROCESSORS = 132  # H100 and H200 (SXM)
FULL_OCCUPANCY_THREADS = 2048  # resident threads per multiprocessor (sm_80 to sm_90)
OUTER_BLOCK = 256
MAX_COLUMN_THREADS = 32
UNROLL = 4
WAVES = 4
MIN_ROWS_PER_THREAD = 16
MAX_SPLITS = 65535  # gridDim.y
SHARED_BYTES = 48 * 1024  # static shared memory of a block


@dataclass(frozen=True, slots=True)
class OuterTiling:
    vectorize: int  # V: columns per thread
    columns: int  # BX: column vectors per block (threadIdx.x)
    groups: int  # BY: row groups per block (threadIdx.y), a power of two
    unroll: int  # U: rows loaded before any is added
    tiles: int  # GX: column tiles (gridDim.x)
    splits: int  # GY: blocks sharing a tile's rows (gridDim.y); 1: no workspace
    chunk: int  # rows per split (a multiple of BY * U when split)


def outer_tiling(rows: int, columns: int, lanes: int, shared_per_thread: int,
                 groups: int = 0, unroll: int = 0, waves: int = 0) -> OuterTiling:
    """The block and grid of an outer reduction of ``rows`` reduced rows by ``columns``
    columns, ``lanes`` per thread; ``shared_per_thread``: the bytes each thread puts in shared
    memory to combine the row groups (fewer groups where they would not fit). ``groups`` (BY),
    ``unroll`` (U) and ``waves`` replace OUTER_BLOCK // BX, UNROLL and WAVES where given (a
    variant the sweep times, or the table's choice)."""
    vectors = columns // lanes
    bx = min(MAX_COLUMN_THREADS, _next_power_of_two(vectors))
    by = min(groups or max(1, OUTER_BLOCK // bx), _next_power_of_two(rows))
    while by > 1 and bx * by * shared_per_thread > SHARED_BYTES:
        by //= 2
    unroll = min(unroll or UNROLL, _power_at_most(max(1, rows // by)))
    tiles = -(-vectors // bx)
    resident = MULTIPROCESSORS * max(1, FULL_OCCUPANCY_THREADS // (bx * by))
    splits = max(1, min(-(-(waves or WAVES) * resident // tiles),
                        rows // (by * MIN_ROWS_PER_THREAD),
                        MAX_SPLITS))
    chunk = rows
    if splits > 1:
        step, share = by * unroll, -(-rows // splits)
        chunk = -(-share // step) * step
        splits = -(-rows // chunk)
        chunk = chunk if splits > 1 else rows
    return OuterTiling(lanes, bx, by, unroll, tiles, splits, chunk)


def _power_at_most(value: int) -> int:
    power = 1
    while power * 2 <= value:
        power *= 2
    return power
