"""Inner reductions and normalizations (reduction, inner_persistent): one kernel per segment.

The loop is the first reduction's input: its leading dimensions are rows, its trailing (reduced)
dimensions the row's elements. A row belongs to T threads (several rows per block when T is
below a warp); each thread takes V consecutive elements (16 bytes) per slot. The segment's
reductions run in passes: a pass accumulates, in registers, every reduction whose input is
ready, then combines across the row's threads (``block_reduce``). var_mean takes one: each
thread sums its elements, divides by its count and adds the squared deviations from that mean
(exact, where Welford's update is not), and one ``block_welford`` combines the threads' (count,
mean, m2) by Chan's rule. Persistent kernels unroll the slots at function scope, so each element
is loaded once and reused by every pass and by the outputs; they issue every per-element load up
front (the inputs the same for every row, a norm's weight, once before the row loop; the row's
own at its top) so that none waits behind a reduction, and, a row per block, ask L2 for a row
ahead (``PREFETCH_BYTES``). Rows too long for registers loop over their slots in each pass
instead, reading the row again.
"""

from __future__ import annotations

import math

from fusecli.codegen import cdtypes
from fusecli.codegen.context import KernelContext
from fusecli.codegen.emitter import Emitter
from fusecli.codegen.indexing import LANE, Index, IndexSpace, add, const, contiguous_strides, scale
from fusecli.codegen.kernel import Kernel, UnsupportedError
from fusecli.codegen.outer_reduction import build_outer_reduction
from fusecli.codegen.pointwise import loop_positions
from fusecli.codegen.reduction_ops import Accumulator, accumulators, combine_pass, declare_scratch
from fusecli.codegen.source import assemble, index_type_for, store
from fusecli.codegen.split_reduction import build_split_reduction, refuse_starved
from fusecli.ir.nodes import TensorView
from fusecli.segment.heuristics import ReductionParams

# As a block starts its row it asks L2 (one sm_90 bulk prefetch per input) for a row further
# on: blocks start in row order, so that row's block finds it there. The distance is the
# resident blocks (MULTIPROCESSORS * 2048 / block) but at most PREFETCH_BYTES of rows, past
# which L2 loses them first. Measured on an H200, kernel time as % of copy bandwidth: RMSNorm
# 16384 x 8192 bf16 88% without, 95-97% with 256-512 rows ahead; LayerNorm 72% -> 89-92%;
# softmax 8192 x 8192 f32 90% -> 93-95% at 256 rows (75% at 512). 0: no prefetch.
PREFETCH_BYTES = 8 << 20
MULTIPROCESSORS = 132  # H100 and H200 (SXM); elsewhere the distance is off, the values right
FULL_OCCUPANCY_THREADS = 2048  # resident threads per multiprocessor (sm_80 to sm_90)


def build_reduction(ctx: KernelContext, name: str, plan: ReductionParams) -> Kernel:
    reference = ctx.candidate.reduction_exprs[0].inputs[0]
    _check_rows(ctx, reference, plan)
    outputs = _classify_outputs(ctx, reference, plan)
    if not plan.inner:  # the reduced dims lead: columns per thread, rows split over blocks
        kernel = build_outer_reduction(ctx, name, plan, reference, outputs)
        if kernel is not None:
            return kernel
    split = build_split_reduction(ctx, name, plan, reference, outputs)  # few, long rows
    if split is not None:
        return split
    refuse_starved(ctx, plan)
    grid = max(1, min(-(-plan.rows // plan.rows_per_block), plan.max_blocks))
    index_type = index_type_for(ctx, plan.rows + grid * plan.rows_per_block)
    emitter = Emitter(ctx, IndexSpace(), plan.vectorize)
    kernel_body = _Body(emitter, ctx, plan, reference)
    kernel_body.emit(outputs)
    summary = _summary(ctx, plan, grid, index_type, emitter, kernel_body.ahead)
    source = assemble(ctx, name, plan.block, emitter.lines, index_type, summary)
    return Kernel(name, source, (grid, 1, 1), (plan.block, 1, 1), 0, ctx.params(), summary)


def _check_rows(ctx: KernelContext, reference: TensorView, plan: ReductionParams) -> None:
    """Every reduction of the segment must reduce the reference's ``reduced_dims``."""
    dims = plan.reduced_dims
    row_length = math.prod(ctx.shape(reference)[d] for d in dims)
    for expr in ctx.candidate.reduction_exprs:
        source = ctx.shape(expr.inputs[0])
        if math.prod(source[d] for d in expr.attr("dims")) != row_length:
            # e.g. a reduction over a broadcast (size-1) dim that maps to the reduced loop
            raise UnsupportedError(
                f"{ctx.name(expr.tensor_outputs()[0])} reduces a row of another length than "
                f"{ctx.name(reference)}'s in segment {ctx.segment.id}"
            )
        positions = loop_positions(ctx, expr.inputs[0], reference)
        reduced = set(expr.attr("dims"))
        if positions is None or any(
            p is not None and (p in dims) != (d in reduced) for d, p in enumerate(positions)
        ):
            raise UnsupportedError(
                f"the reductions of segment {ctx.segment.id} do not share one row structure"
            )
    if plan.inner:
        cdtypes.require((*ctx.segment.inputs, *ctx.outputs))


def _classify_outputs(ctx: KernelContext, reference: TensorView, plan: ReductionParams,
                      ) -> list[tuple[TensorView, tuple[int | None, ...], bool]]:
    """(output, loop position per dim, whether it has the whole loop or only the row)."""
    shape = ctx.shape(reference)
    row_dims = {p for p in plan.row_dims if shape[p] > 1}
    all_dims = {p for p, size in enumerate(shape) if size > 1}
    found = []
    for tensor in ctx.outputs:
        positions = loop_positions(ctx, tensor, reference, by_size=True)
        mapped = {p for p in positions or () if p is not None}
        if positions is not None and mapped == all_dims:
            found.append((tensor, positions, True))
        elif positions is not None and mapped == row_dims:
            found.append((tensor, positions, False))
        else:
            raise UnsupportedError(
                f"output {ctx.name(tensor)} is neither a row nor a whole-loop value of "
                f"{ctx.name(reference)}"
            )
    return found


class _Body:
    """The statements of one reduction kernel."""

    def __init__(self, emitter: Emitter, ctx: KernelContext, plan: ReductionParams,
                 reference: TensorView) -> None:
        self.emitter = emitter
        self.ctx = ctx
        self.plan = plan
        self.reference = reference
        self.row_point: tuple[Index, ...] = ()  # per loop dim: the row's index, or 0
        self.guarded = plan.persistent and plan.vectors % plan.threads != 0
        self.ahead = 0  # rows ahead that the kernel prefetches into L2

    def emit(self, outputs: list[tuple[TensorView, tuple[int | None, ...], bool]]) -> None:
        e, plan = self.emitter, self.plan
        declare_scratch(e, accumulators(self.ctx), plan.threads)
        header = self._row_loop()
        slots = self._slots() if plan.persistent else []
        if plan.persistent:
            self._preload(slots, row_dependent=False)
        with e.block(header):
            self._rows()
            if plan.persistent:
                self._prefetch_ahead()
                self._preload(slots, row_dependent=True)
            for number, batch in enumerate(accumulators(self.ctx, True)):
                self._pass(batch, slots, number)
            self._full_outputs([o for o in outputs if o[2]], slots)
            self._row_outputs([o for o in outputs if not o[2]])

    def _row_loop(self) -> str:
        """Names the thread's place in its row; returns the header of the block's row loop."""
        plan, rows = self.plan, self.plan.rows_per_block
        self.emitter.line(f"const int thread = threadIdx.x % {plan.threads};  // its place in "
                          "the row" if plan.threads > 1 else
                          "const int thread = 0;  // a thread per row: it walks the row alone")
        first = f"(index_t)blockIdx.x * {rows}" if rows > 1 else "(index_t)blockIdx.x"
        step = f"(index_t)gridDim.x * {rows}" if rows > 1 else "(index_t)gridDim.x"
        return f"for (index_t row_base = {first}; row_base < {plan.rows}; row_base += {step})"

    def _rows(self) -> None:
        e, plan = self.emitter, self.plan
        if plan.rows_per_block > 1:
            e.line(f"const index_t row_unclamped = row_base + threadIdx.x / {plan.threads};")
            e.line(f"const bool row_valid = row_unclamped < {plan.rows};")
            e.line(f"const index_t row = row_valid ? row_unclamped : {plan.rows - 1};"
                   "  // clamped: every thread takes part in its row's reductions")
        else:
            e.line("const index_t row = row_base;")
        row = e.space.var("row", 0, plan.rows - 1)
        point = [const(0)] * (len(plan.row_dims) + len(plan.reduced_dims))
        for dim, size, stride in zip(plan.row_dims, plan.row_shape,
                                     contiguous_strides(plan.row_shape)):
            if size > 1:
                position = e.space.remainder(e.space.divide(row, stride), size)
                name = e.bind("index_t", f"r{dim}", position.text())
                point[dim] = e.space.var(name, 0, size - 1)
        self.row_point = tuple(point)

    def _preload(self, slots: list[tuple[Index, str | None]], row_dependent: bool) -> None:
        """Issue every vector load of the inputs read per element, ahead of the reductions:
        the ones the same for every row (a norm's weight) once, before the row loop; the
        row's own at the top of the row. All are in flight together, none waits behind a
        reduction."""
        e, plan = self.emitter, self.plan
        found = []
        for tensor in self.ctx.segment.inputs:
            positions = loop_positions(self.ctx, tensor, self.reference)
            if self.ctx.layouts[tensor.uid].host_scalar or positions is None:
                continue
            mapped = {p for p in positions if p is not None}
            if not mapped & set(plan.reduced_dims):
                continue  # read once per row, not per element
            if bool(mapped & set(plan.row_dims)) == row_dependent:
                found.append((tensor, positions))
        if not found:
            return
        if not row_dependent:
            self.row_point = tuple(const(0) for _ in self.ctx.shape(self.reference))
        what = "this row's inputs" if row_dependent else "inputs the same for every row"
        e.line(f"// loads of {what}, issued together")
        for position, _ in slots:
            index = self.loop_index(position)
            for tensor, positions in found:
                e.preload(tensor, self.at(index, positions))

    def _prefetch_ahead(self) -> None:
        """Ask L2 for a row ahead (``self.ahead``) of each input that is whole rows in memory
        (sm_90: one bulk prefetch per row and input, issued by one thread)."""
        e, plan, ctx = self.emitter, self.plan, self.ctx
        if not PREFETCH_BYTES or plan.rows_per_block != 1:
            return
        shape = ctx.shape(self.reference)
        found = []
        for tensor in ctx.segment.inputs:
            layout = ctx.layouts[tensor.uid]
            row_bytes = plan.row_size * cdtypes.itemsize(tensor.dtype)
            if (not layout.host_scalar and ctx.shape(tensor) == shape
                    and layout.strides == contiguous_strides(shape)
                    and loop_positions(ctx, tensor, self.reference) == tuple(range(len(shape)))
                    and layout.alignment == 16 and row_bytes % 16 == 0):
                found.append((ctx.input_param(tensor).name, row_bytes))
        if not found:
            return
        resident = MULTIPROCESSORS * max(1, FULL_OCCUPANCY_THREADS // plan.block)
        ahead = min(resident, PREFETCH_BYTES // sum(size for _, size in found))
        if ahead < 1 or plan.rows <= ahead:
            return
        self.ahead = ahead
        for name, row_bytes in found:
            e.line(f"if (threadIdx.x == 0 && row + {ahead} < {plan.rows}) "
                   f"prefetch_l2(&{name}[(row + {ahead}) * {plan.row_size}], {row_bytes}u);"
                   f"  // for the block {ahead} rows on")

    def _slots(self) -> list[tuple[Index, str | None]]:
        """Per unrolled slot: the vector's position in the row, and its validity flag."""
        e, plan = self.emitter, self.plan
        thread = e.space.var("thread", 0, plan.threads - 1)
        slots = []
        for slot in range(plan.slots):
            position = add(thread, const(slot * plan.threads))
            if self.guarded and (slot + 1) * plan.threads > plan.vectors:
                text = position.text()
                e.line(f"const bool slot{slot}_valid = {text} < {plan.vectors};")
                name = e.bind("index_t", f"slot{slot}",
                              f"slot{slot}_valid ? {text} : {plan.vectors - 1}")
                slots.append((e.space.var(name, 0, plan.vectors - 1), f"slot{slot}_valid"))
            else:
                slots.append((position, None))
        return slots

    def loop_index(self, vector: Index) -> tuple[Index, ...]:
        """The loop index of lane LANE of the vector at ``vector`` in this thread's row."""
        space, plan = self.emitter.space, self.plan
        element = add(scale(vector, plan.vectorize), space.var(LANE, 0, plan.vectorize - 1))
        point = list(self.row_point)
        for dim, size, stride in zip(plan.reduced_dims, plan.reduced_shape,
                                     contiguous_strides(plan.reduced_shape)):
            point[dim] = space.remainder(space.divide(element, stride), size)
        return tuple(point)

    def at(self, index: tuple[Index, ...], positions: tuple[int | None, ...]) -> tuple[Index, ...]:
        return tuple(const(0) if p is None else index[p] for p in positions)

    def _over_row(self, slots: list[tuple[Index, str | None]], body) -> None:
        """``body(loop index, validity or None)`` for every lane of every vector of the row."""
        e, plan = self.emitter, self.plan
        if plan.persistent:
            for position, valid in slots:
                for lane in range(plan.vectorize):
                    e.lane = lane
                    body(self.loop_index(position), valid)
            e.lane = 0
            return
        header = (f"for (index_t vector = thread; vector < {plan.vectors}; "
                  f"vector += {plan.threads})")
        with e.block(header):
            position = e.space.var("vector", 0, plan.vectors - 1)
            for lane in range(plan.vectorize):
                e.lane = lane
                body(self.loop_index(position), None)
            e.lane = 0

    def _pass(self, batch: list[Accumulator], slots, number: int) -> None:
        """Accumulate ``batch``, then combine it across the row; a var op whose mean and m2
        share the pass: the thread's mean, its m2 around that, one ``block_welford``."""
        e, ctx, threads, count = self.emitter, self.ctx, self.plan.threads, ""
        means = {a.expr.uid: a for a in batch if a.kind == "mean"}
        paired = {a.expr.uid: a for a in batch if a.kind == "m2" and a.expr.uid in means}
        first = [a for a in batch if not (a.kind == "m2" and a.expr.uid in paired)]
        e.line(f"// pass {number + 1}: " + ", ".join(
            f"count, mean and squared deviations of {ctx.name(a.expr.inputs[0])}"
            if a.kind == "mean" and a.expr.uid in paired else a.describe(ctx) for a in first))
        for accumulator in batch:
            e.line(f"{accumulator.ctype} {accumulator.name} = {accumulator.identity};")
        self._over_row(slots, self._accumulate(first, {}))
        if paired:
            count, exact = self._thread_count(slots)
            count = e.bind("int", "thread_count", count, "the elements this thread holds")
            for mean in (means[uid] for uid in paired):
                divided = f"{mean.name} / ({mean.ctype}){count}"
                if not exact:  # a thread of a guarded tail may hold nothing
                    divided = f"{count} > 0 ? {divided} : {mean.identity}"
                e.line(f"{mean.name} = {divided};  // this thread's mean")
            self._over_row(slots, self._accumulate(list(paired.values()), means))
        combine_pass(e, threads, first, {a.expr.uid: self._row_texts(a) for a in first},
                     paired, count)

    def _accumulate(self, batch: list[Accumulator], means: dict[int, Accumulator]):
        """``_over_row``'s body adding to ``batch``; m2s deviate from ``means`` (if there)."""
        e = self.emitter

        def accumulate(index: tuple[Index, ...], valid: str | None) -> None:
            for accumulator in batch:
                source = accumulator.expr.inputs[0]
                value = e.value(source, self.at(index, loop_positions(
                    self.ctx, source, self.reference)))
                mean = means.get(accumulator.expr.uid)
                update = accumulator.update(e, value, mean.name if mean else None)
                e.line(f"if ({valid}) {update}" if valid else update)

        return accumulate

    def _thread_count(self, slots: list[tuple[Index, str | None]]) -> tuple[str, bool]:
        """How many of the row's elements this thread takes (C), and whether that is never 0."""
        plan = self.plan
        if not plan.persistent:
            return (f"thread < {plan.vectors} ? (({plan.vectors - 1} - thread) / {plan.threads}"
                    f" + 1) * {plan.vectorize} : 0"), False
        fixed = sum(plan.vectorize for _, valid in slots if valid is None)
        guarded = [f"({valid} ? {plan.vectorize} : 0)" for _, valid in slots if valid]
        return " + ".join([str(fixed)] * bool(fixed) + guarded), fixed > 0

    def _row_texts(self, accumulator: Accumulator) -> tuple[str, ...]:
        """How the reduction's output is indexed in this row (its reduced dims dropped)."""
        source = accumulator.expr.inputs[0]
        positions = loop_positions(self.ctx, source, self.reference)
        reduced = set(accumulator.expr.attr("dims"))
        kept = [p for d, p in enumerate(positions) if d not in reduced]
        return tuple(self.emitter.text(const(0) if p is None else self.row_point[p])
                     for p in kept)

    def _full_outputs(self, outputs, slots) -> None:
        if not outputs:
            return
        e, plan = self.emitter, self.plan
        row_valid = "row_valid" if plan.rows_per_block > 1 else None
        if plan.persistent:
            for position, valid in slots:
                condition = " && ".join(c for c in (row_valid, valid) if c)
                self._store_vector(outputs, position, condition)
            return
        header = (f"for (index_t vector = thread; vector < {plan.vectors}; "
                  f"vector += {plan.threads})")
        with e.block(header):
            position = e.space.var("vector", 0, plan.vectors - 1)
            self._store_vector(outputs, position, row_valid or "")

    def _store_vector(self, outputs, position: Index, condition: str) -> None:
        e, plan = self.emitter, self.plan
        values: dict[int, list[str]] = {tensor.uid: [] for tensor, _, _ in outputs}
        for lane in range(plan.vectorize):
            e.lane = lane
            index = self.loop_index(position)
            for tensor, positions, _ in outputs:
                values[tensor.uid].append(e.value(tensor, self.at(index, positions)))
        e.lane = 0
        index = self.loop_index(position)
        if condition:
            with e.block(f"if ({condition})"):
                for tensor, positions, _ in outputs:
                    store(e, tensor, self.at(index, positions), values[tensor.uid])
        else:
            for tensor, positions, _ in outputs:
                store(e, tensor, self.at(index, positions), values[tensor.uid])

    def _row_outputs(self, outputs) -> None:
        if not outputs:
            return
        e = self.emitter
        valid = " && row_valid" if self.plan.rows_per_block > 1 else ""
        with e.block(f"if (thread == 0{valid})"):
            for tensor, positions, _ in outputs:
                index = self.at(self.row_point, positions)
                store(e, tensor, index, [e.value(tensor, index)])


def _summary(ctx: KernelContext, plan: ReductionParams, grid: int, index_type: str,
             emitter: Emitter, ahead: int) -> str:
    kind = "persistent" if plan.persistent else "looping"
    vectors = ", ".join(sorted(emitter.vector_accesses)) or "none"
    prefetch = f"; L2 prefetch {ahead} rows ahead" if ahead else ""
    bits = 32 if index_type == "int" else 64
    if not plan.inner:
        return (
            f"outer reduction: {plan.rows} rows (dims {list(plan.row_dims)}) of "
            f"{plan.row_size} (dims {list(plan.reduced_dims)}), a thread per row walking it; "
            f"block {plan.block}, grid {grid} (grid-stride over rows); {bits}-bit indexing"
        )
    return (
        f"inner reduction ({kind}): {plan.rows} rows of {plan.row_size} "
        f"({list(plan.row_shape)} x {list(plan.reduced_shape)}); {plan.threads} threads per "
        f"row, {plan.rows_per_block} rows per block, {plan.slots} slots of {plan.vectorize} "
        f"elements per thread; block {plan.block}, grid {grid} (grid-stride over rows); "
        f"{bits}-bit indexing; 16-byte accesses: {vectors}{prefetch}"
    )
