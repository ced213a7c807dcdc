"""Split-row reductions: few, long rows, each row split over many blocks.

A sum over every dim has one row; batch norm's NCHW sums (N, H and W reduced around the kept C)
have C. Where rows are too few to fill the GPU (fewer than ``MAX_ROWS``) and long (at least
``MIN_ROW`` elements), a block per row (or a thread per row) would walk a whole row alone.
Here each row's elements, in their logical order, are cut into ``S`` contiguous ranges, a
block each: the grid is rows (gridDim.x) by splits (gridDim.y). A block's ``T`` threads
(threadIdx.y) stride over its range a vector of ``V`` elements at a time, ``U`` vectors' loads
issued before any is added; a vector's elements are consecutive in the innermost reduced dim,
so an input whose innermost reduced dim is contiguous and aligned (a whole tensor, the H x W
runs of NCHW) is read 16 bytes at a time, any other element by element.

The combine is the outer reduction's (``outer_reduction._Body``): a split row is an outer
reduction of one column per tile whose reduced rows are the row's elements and whose row groups
are the block's threads. The threads combine in shared memory in a fixed tree, each block
writes its partial to a workspace, and the row's last block to arrive (an atomic counter per
row, which it sets back to zero) combines the partials in split order and computes the
epilogue: results are the same on every run. var, var_mean and welford accumulate Welford's
(mean, m2) per thread and combine by Chan's rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusecli.codegen import cdtypes, outer_reduction
from fusecli.codegen.context import KernelContext
from fusecli.codegen.emitter import Emitter
from fusecli.codegen.indexing import LANE, Index, IndexSpace, add, const, contiguous_strides, scale
from fusecli.codegen.kernel import Kernel, UnsupportedError
from fusecli.codegen.reduction_ops import Accumulator, accumulators
from fusecli.codegen.source import assemble, index_type_for, store
from fusecli.ir.nodes import TensorView
from fusecli.segment.heuristics import (
    FULL_OCCUPANCY_THREADS,
    MAX_SPLITS,
    MULTIPROCESSORS,
    OuterTiling,
    ReductionParams,
    vector_width,
    widest_vector,
)

Outputs = list[tuple[TensorView, tuple[int | None, ...], bool]]

MAX_ROWS = 2 * MULTIPROCESSORS  # fewer rows than this leave the GPU idle with a block per row
MIN_ROW = 16 * 1024  # elements: a shorter row is not worth a second phase
BLOCK = 256
UNROLL = 4  # vectors whose loads a thread issues before adding any
# As many blocks as the GPU holds at once (8 of 256 threads on each of 132 multiprocessors), as
# long as every thread has at least one unrolled step of its split to read.
TARGET_BLOCKS = MULTIPROCESSORS * (FULL_OCCUPANCY_THREADS // BLOCK)


@dataclass(frozen=True, slots=True)
class SplitTiling:
    vectorize: int  # V: consecutive elements per load
    threads: int  # T: threads per block, striding over the block's range
    unroll: int  # U
    splits: int  # S: blocks per row (gridDim.y)
    chunk: int  # vectors per split (the last split takes the rest)


def split_tiling(rows: int, row_size: int, lanes: int) -> SplitTiling | None:
    """How ``rows`` rows of ``row_size`` elements split, ``lanes`` per vector; None where the
    rows are many or short enough for a block per row."""
    if rows >= MAX_ROWS or row_size < MIN_ROW:
        return None
    vectors = row_size // lanes
    step = BLOCK * UNROLL
    splits = min(-(-TARGET_BLOCKS // rows), vectors // step, MAX_SPLITS)
    if splits < 2:
        return None
    share = -(-vectors // splits)
    chunk = -(-share // step) * step  # a whole number of unrolled steps
    splits = -(-vectors // chunk)
    return SplitTiling(lanes, BLOCK, UNROLL, splits, chunk) if splits > 1 else None


# A thread per row (the reduced dims around a kept one), fewer rows than a warp per
# multiprocessor, long rows: each thread would walk its whole row, strided, the rest of the GPU
# idle. On an H200 a batch norm forward over NCHW [16, 64, 64, 64] (64 rows of 65,536) took
# 13.8 ms so; on ATen, 200 us per fd.execute (nvFuser's grid-persistent kernel: 52 us).
STARVED_THREADS = 132 * 32
STARVED_ROW = 4096


def refuse_starved(ctx: KernelContext, plan: ReductionParams) -> None:
    """UnsupportedError where the thread-per-row kernel would leave the GPU idle."""
    if plan.threads == 1 and plan.rows < STARVED_THREADS and plan.row_size >= STARVED_ROW:
        raise UnsupportedError(
            f"segment {ctx.segment.id}: a thread per row for {plan.rows} rows of "
            f"{plan.row_size} elements would leave the GPU idle (no kernel splits such rows "
            "and keeps them for a normalization yet)")


def build_split_reduction(ctx: KernelContext, name: str, plan: ReductionParams,
                          reference: TensorView, outputs: Outputs) -> Kernel | None:
    """The kernel, or None where this schedule does not apply: many or short rows, a
    reduction of a reduced value, or a whole-loop output computed from a reduction (a
    normalization)."""
    found = accumulators(ctx)
    if (any(a.pass_number != (1 if a.kind == "m2" else 0) for a in found)
            or any(full and outer_reduction._after_reduction(ctx, t) for t, _, full in outputs)):
        return None
    shape = ctx.shape(reference)
    reduced = [d for d in plan.reduced_dims if shape[d] > 1]
    moved = [t for t in (*ctx.segment.inputs, *ctx.outputs)
             if ctx.numel(t) == ctx.numel(reference)] or list(ctx.segment.inputs)
    lanes = vector_width(widest_vector(moved), shape[reduced[-1]] if reduced else 1)
    split = split_tiling(plan.rows, plan.row_size, lanes)
    if split is None:
        return None
    cdtypes.require((*ctx.segment.inputs, *ctx.outputs))
    emitter = Emitter(ctx, IndexSpace(), lanes)
    _Body(emitter, ctx, plan, reference, split, found).emit(outputs)
    vectors = plan.row_size // lanes
    index_type = index_type_for(ctx, vectors + (split.unroll + 1) * split.threads
                                + split.splits * plan.rows)
    summary = _summary(plan, split, index_type, emitter)
    source = assemble(ctx, name, split.threads, emitter.lines, index_type, summary)
    return Kernel(name, source, (plan.rows, split.splits, 1), (1, split.threads, 1), 0,
                  ctx.params(), summary)


class _Body(outer_reduction._Body):
    """The outer reduction's statements, but the walk over a range of the row's elements."""

    def __init__(self, emitter: Emitter, ctx: KernelContext, plan: ReductionParams,
                 reference: TensorView, split: SplitTiling, found: list[Accumulator]) -> None:
        # The outer reduction's tiling of this grid: a tile per row, one column wide, one lane
        # per accumulator; its row groups are the threads, its rows the row's elements (its
        # chunk counts them, for Chan's rule).
        tiling = OuterTiling(1, 1, split.threads, split.unroll, plan.rows, split.splits,
                             split.chunk * split.vectorize)
        super().__init__(emitter, ctx, plan, reference, tiling, found)
        self.split = split

    def emit(self, outputs: Outputs) -> None:
        e, t = self.e, self.t
        for a in self.components():
            e.line(f"__shared__ {a.ctype} shared_{a.name}[{t.groups}];")
        if self.welford:
            e.line(f"__shared__ {self.count_type} shared_count[{t.groups}];")
        e.line("const index_t column = blockIdx.x;  // the row")
        e.line("const bool column_valid = true;")
        self._columns()
        self._reset()
        self._walk([(o[0], o[1]) for o in outputs if o[2]])
        self._combine_block()
        self._combine_grid([(o[0], o[1]) for o in outputs if not o[2]])

    def _walk(self, full: list[tuple[TensorView, tuple[int | None, ...]]]) -> None:
        """Accumulate this thread's vectors of the block's range: U at a time, then the rest."""
        e, s = self.e, self.split
        vectors = self.plan.row_size // s.vectorize
        e.line(f"const index_t first = (index_t)blockIdx.y * {s.chunk};  // of the row's vectors")
        e.line(f"const index_t end = first + {s.chunk} < {vectors} ? first + {s.chunk} : "
               f"{vectors};")
        e.line("index_t vector = first + threadIdx.y;")
        if s.unroll > 1:
            header = (f"for (; vector + {(s.unroll - 1) * s.threads} < end; "
                      f"vector += {s.unroll * s.threads})")
            with e.block(header):
                self._vectors(s.unroll, full)
        with e.block(f"for (; vector < end; vector += {s.threads})"):
            self._vectors(1, full)

    def _vectors(self, count: int, full) -> None:
        e, s = self.e, self.split
        points = [self._point(number) for number in range(count)]
        values: list[dict[tuple[int, int], str]] = []
        for point in points:  # every load of the U vectors before any is added
            found: dict[tuple[int, int], str] = {}
            stored: dict[int, list[str]] = {tensor.uid: [] for tensor, _ in full}
            for lane in range(s.vectorize):
                e.lane = lane
                for a in (*self.simple, *(mean for mean, _ in self.welford)):
                    found[(a.expr.uid, lane)] = e.value(a.expr.inputs[0],
                                                        self._at(point, a.expr.inputs[0]))
                for tensor, positions in full:
                    stored[tensor.uid].append(e.value(tensor, outer_reduction._at(point,
                                                                                  positions)))
            e.lane = 0
            for tensor, positions in full:
                store(e, tensor, outer_reduction._at(point, positions), stored[tensor.uid])
            values.append(found)
        for found in values:
            for lane in range(s.vectorize):
                for a in self.simple:
                    e.line(self.lanes(a)[0].update(e, found[(a.expr.uid, lane)]))
                if not self.welford:
                    continue
                e.line("count += 1;")
                inverse = e.bind(self.count_type, "inverse", "1 / count")
                for mean, m2 in self.welford:  # Welford's update
                    m, m2_name = self.lanes(mean)[0].name, self.lanes(m2)[0].name
                    x = found[(mean.expr.uid, lane)]
                    delta = e.bind(mean.ctype, "delta", f"{x} - {m}")
                    e.line(f"{m} += {delta} * {inverse};")
                    e.line(f"{m2_name} += {delta} * ({x} - {m});")

    def _point(self, number: int) -> tuple[Index, ...]:
        """The loop index of lane LANE of the thread's vector ``number`` of this step."""
        e, s, plan = self.e, self.split, self.plan
        vectors = plan.row_size // s.vectorize
        position = e.space.var("vector", 0, vectors - 1)
        if number:
            position = self._named(f"vector{number}", add(position, const(number * s.threads)),
                                   vectors)
        shape = self.ctx.shape(self.reference)
        dims = [d for d in plan.reduced_dims if shape[d] > 1]
        sizes = [shape[d] for d in dims]
        sizes[-1] //= s.vectorize  # in vectors
        point = list(self.point)
        for dim, size, stride in zip(dims, sizes, contiguous_strides(tuple(sizes))):
            index = e.space.remainder(e.space.divide(position, stride), size)
            point[dim] = self._named(f"r{dim}", index, size)
        if s.vectorize > 1:
            point[dims[-1]] = add(scale(point[dims[-1]], s.vectorize),
                                  e.space.var(LANE, 0, s.vectorize - 1))
        return tuple(point)


def _summary(plan: ReductionParams, s: SplitTiling, index_type: str, emitter: Emitter) -> str:
    vectors = ", ".join(sorted(emitter.vector_accesses)) or "none"
    return (
        f"split-row reduction: {plan.rows} rows (dims {list(plan.row_dims)}) of "
        f"{plan.row_size} (dims {list(plan.reduced_dims)}), each split over {s.splits} blocks "
        f"of {s.chunk * s.vectorize} elements; block {s.threads} threads, {s.vectorize} "
        f"elements per load, loads of {s.unroll} vectors in flight; grid {plan.rows} x "
        f"{s.splits}: partials combined in a workspace by each row's last block; "
        f"{32 if index_type == 'int' else 64}-bit indexing; 16-byte accesses: {vectors}"
    )
