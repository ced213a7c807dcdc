"""Outer reductions: the reduced dims lead, the kept dims are the contiguous columns.

nvFuser's outer-reduction schedule. A thread owns ``V`` consecutive columns (a 16-byte vector of
the widest type moved per element) and accumulates, in registers, a strided range of the
reduced rows, issuing ``U`` rows' loads before it adds any. A block is ``BX`` column vectors
(threadIdx.x) by ``BY`` row groups (threadIdx.y); the row groups combine through shared memory
in a fixed tree. Where the columns alone give too few blocks to fill the GPU, the rows are
split across ``GY`` blocks (gridDim.y) too: each writes its partial to a workspace, and the
tile's last block to arrive (an atomic counter per column tile, which it sets back to zero)
sums them in a fixed order and computes the epilogue. Results are the same on every run.
var, var_mean and welford accumulate Welford's (mean, m2) and combine partials by Chan's rule.
"""

from __future__ import annotations

from dataclasses import replace

from fusecli.codegen import cdtypes
from fusecli.codegen.context import KernelContext
from fusecli.codegen.emitter import Emitter
from fusecli.codegen.indexing import LANE, Index, IndexSpace, add, const, contiguous_strides, scale
from fusecli.codegen.kernel import Kernel
from fusecli.codegen.pointwise import loop_positions
from fusecli.codegen.reduction_ops import Accumulator, accumulators, finish
from fusecli.codegen.source import assemble, index_type_for, store
from fusecli.ir.dtype import DataType
from fusecli.ir.nodes import TensorView
from fusecli.ir.optype import OpKind, OpType
from fusecli.segment.heuristics import (
    OuterTiling,
    ReductionParams,
    outer_tiling,
    vector_width,
    widest_vector,
)

Outputs = list[tuple[TensorView, tuple[int | None, ...], bool]]


def build_outer_reduction(ctx: KernelContext, name: str, plan: ReductionParams,
                          reference: TensorView, outputs: Outputs) -> Kernel | None:
    """The kernel, or None where this schedule does not apply (the thread-per-column kernel
    runs): a reduced dim after the innermost kept one, a reduction of a reduced value,
    or a whole-loop output computed from a reduction (a normalization)."""
    shape = ctx.shape(reference)
    reduced = [d for d in plan.reduced_dims if shape[d] > 1]
    kept = [d for d in plan.row_dims if shape[d] > 1]
    found = accumulators(ctx)
    if (plan.inner or (kept and any(r > kept[-1] for r in reduced))
            or any(a.pass_number != (1 if a.kind == "m2" else 0) for a in found)
            or any(full and _after_reduction(ctx, t) for t, _, full in outputs)):
        return None
    cdtypes.require((*ctx.segment.inputs, *ctx.outputs))
    moved = [t for t in (*ctx.segment.inputs, *ctx.outputs)
             if ctx.numel(t) == ctx.numel(reference)] or list(ctx.segment.inputs)
    lanes = vector_width(widest_vector(moved), shape[kept[-1]] if kept else 1)
    shared = sum(lanes * _bytes(a) for a in found) + 8 * any(a.kind == "m2" for a in found)
    tiling = outer_tiling(plan.row_size, plan.rows, lanes, shared, plan.groups,
                          plan.unroll, plan.waves)
    emitter = Emitter(ctx, IndexSpace(), lanes)
    body = _Body(emitter, ctx, plan, reference, tiling, found)
    body.emit(outputs)
    t = tiling
    index_type = index_type_for(ctx, plan.row_size + t.splits * plan.rows
                                + (t.unroll + 1) * t.groups + t.tiles * t.columns * lanes)
    summary = _summary(ctx, plan, t, index_type, emitter)
    source = assemble(ctx, name, t.columns * t.groups, emitter.lines, index_type, summary)
    return Kernel(name, source, (t.tiles, t.splits, 1), (t.columns, t.groups, 1), 0,
                  ctx.params(), summary)


class _Body:
    """The statements of one outer-reduction kernel."""

    def __init__(self, emitter: Emitter, ctx: KernelContext, plan: ReductionParams,
                 reference: TensorView, tiling: OuterTiling, found: list[Accumulator]) -> None:
        self.e, self.ctx, self.plan, self.t = emitter, ctx, plan, tiling
        self.reference = reference
        self.simple = [a for a in found if a.kind not in ("mean", "m2")]
        means = {a.expr.uid: a for a in found if a.kind == "mean"}
        self.welford = [(means[a.expr.uid], a) for a in found if a.kind == "m2"]
        self.count_type = self.welford[0][0].ctype if self.welford else "float"
        self.point: tuple[Index, ...] = ()  # the thread's columns; 0 in the reduced dims

    def lanes(self, accumulator: Accumulator) -> list[Accumulator]:
        return [replace(accumulator, name=f"{accumulator.name}_{lane}")
                for lane in range(self.t.vectorize)]

    def components(self) -> list[Accumulator]:
        """Every value combined across threads and blocks: the simple accumulators, and each
        Welford's mean and m2."""
        return [*self.simple, *(a for pair in self.welford for a in pair)]

    def emit(self, outputs: Outputs) -> None:
        e, t = self.e, self.t
        if t.groups > 1:
            size = t.groups * t.vectorize * t.columns
            for a in self.components():
                e.line(f"__shared__ {a.ctype} shared_{a.name}[{size}];")
            if self.welford:
                e.line(f"__shared__ {self.count_type} shared_count[{t.groups * t.columns}];")
        e.line(f"const index_t column = (index_t)blockIdx.x * {t.columns} + threadIdx.x;"
               "  // of column vectors")
        e.line(f"const bool column_valid = column < {self.plan.rows // t.vectorize};")
        self._columns()
        self._reset()
        self._walk([(o[0], o[1]) for o in outputs if o[2]])
        self._combine_block()
        row_outputs = [(o[0], o[1]) for o in outputs if not o[2]]
        if t.splits == 1:
            with e.block("if (threadIdx.y == 0 && column_valid)"):
                self._epilogue(row_outputs)
            return
        self._combine_grid(row_outputs)

    def _columns(self) -> None:
        e, plan, t = self.e, self.plan, self.t
        space = e.space
        column = space.var("column", 0, plan.rows // t.vectorize - 1)
        point = [const(0)] * len(self.ctx.shape(self.reference))
        kept = [d for d, size in zip(plan.row_dims, plan.row_shape) if size > 1]
        for dim, size, stride in zip(plan.row_dims, plan.row_shape,
                                     contiguous_strides(plan.row_shape)):
            if size == 1:
                continue
            if dim == kept[-1]:
                vectors = size // t.vectorize
                point[dim] = self._named(f"c{dim}", space.remainder(column, vectors), vectors)
                if t.vectorize > 1:
                    point[dim] = add(scale(point[dim], t.vectorize),
                                     space.var(LANE, 0, t.vectorize - 1))
            else:
                position = space.remainder(space.divide(scale(column, t.vectorize), stride), size)
                point[dim] = self._named(f"c{dim}", position, size)
        self.point = tuple(point)

    def _named(self, base: str, position: Index, size: int) -> Index:
        """``position`` (in [0, size)) as a variable, bound to a name unless it is one."""
        text = position.text()
        if text.isidentifier():
            return position
        return self.e.space.var(self.e.bind("index_t", base, text), 0, size - 1)

    def _reset(self, declare: bool = True) -> None:
        e = self.e
        for a in self.components():
            for lane in self.lanes(a):
                e.line(f"{lane.ctype + ' ' if declare else ''}{lane.name} = {lane.identity};")
        if self.welford:
            e.line(f"{self.count_type + ' ' if declare else ''}count = 0;  // rows accumulated")

    def _walk(self, full: list[tuple[TensorView, tuple[int | None, ...]]]) -> None:
        """Accumulate this thread's rows of its split: U at a time, then the rest."""
        e, t, rows = self.e, self.t, self.plan.row_size
        if t.splits > 1:
            e.line(f"const index_t row_first = (index_t)blockIdx.y * {t.chunk};")
            e.line(f"const index_t row_end = row_first + {t.chunk} < {rows} ? "
                   f"row_first + {t.chunk} : {rows};")
            first, end = "row_first + threadIdx.y", "row_end"
        else:
            first, end = "threadIdx.y", str(rows)
        with e.block("if (column_valid)"):
            e.line(f"index_t row = {first};")
            if t.unroll > 1:
                header = (f"for (; row + {(t.unroll - 1) * t.groups} < {end}; "
                          f"row += {t.unroll * t.groups})")
                with e.block(header):
                    self._rows(t.unroll, full)
            with e.block(f"for (; row < {end}; row += {t.groups})"):
                self._rows(1, full)

    def _rows(self, count: int, full) -> None:
        e, plan, t = self.e, self.plan, self.t
        points = []
        for number in range(count):
            row = e.space.var("row", 0, plan.row_size - 1)
            if number:
                row = self._named(f"row{number}", add(row, const(number * t.groups)),
                                  plan.row_size)
            point = list(self.point)
            for dim, size, stride in zip(plan.reduced_dims, plan.reduced_shape,
                                         contiguous_strides(plan.reduced_shape)):
                if size > 1:
                    position = e.space.remainder(e.space.divide(row, stride), size)
                    point[dim] = self._named(f"r{dim}", position, size)
            points.append(tuple(point))
        values: list[dict[tuple[int, int], str]] = []
        for point in points:  # every load of the U rows before any is added
            found: dict[tuple[int, int], str] = {}
            stored: dict[int, list[str]] = {tensor.uid: [] for tensor, _ in full}
            for lane in range(t.vectorize):
                e.lane = lane
                for a in (*self.simple, *(mean for mean, _ in self.welford)):
                    found[(a.expr.uid, lane)] = e.value(a.expr.inputs[0],
                                                        self._at(point, a.expr.inputs[0]))
                for tensor, positions in full:
                    stored[tensor.uid].append(e.value(tensor, _at(point, positions)))
            e.lane = 0
            for tensor, positions in full:
                store(e, tensor, _at(point, positions), stored[tensor.uid])
            values.append(found)
        for found in values:
            for a in self.simple:
                for lane, accumulator in enumerate(self.lanes(a)):
                    e.line(accumulator.update(e, found[(a.expr.uid, lane)]))
            if not self.welford:
                continue
            e.line("count += 1;")
            inverse = e.bind(self.count_type, "inverse", "1 / count")
            for mean, m2 in self.welford:  # Welford's update
                for lane, (m, s) in enumerate(zip(self.lanes(mean), self.lanes(m2))):
                    x = found[(mean.expr.uid, lane)]
                    delta = e.bind(mean.ctype, "delta", f"{x} - {m.name}")
                    e.line(f"{m.name} += {delta} * {inverse};")
                    e.line(f"{s.name} += {delta} * ({x} - {m.name});")

    def _at(self, point: tuple[Index, ...], tensor: TensorView) -> tuple[Index, ...]:
        return _at(point, loop_positions(self.ctx, tensor, self.reference))

    def _merge(self, into, other, counts: tuple[str, str]) -> None:
        """``into(a, lane)`` (an lvalue per component and lane) combined with ``other(a, lane)``;
        Welford's by Chan's rule, ``counts`` their rows (C expressions): na and nb after."""
        e = self.e
        for a in self.simple:
            for lane in range(self.t.vectorize):
                target = into(a, lane)
                e.line(f"{target} = {_combine(a.kind, target, other(a, lane))};")
        if not self.welford:
            return
        ctype = self.count_type
        e.line(f"const {ctype} na = {counts[0]}, nb = {counts[1]};")
        e.line(f"const {ctype} weight = na + nb > 0 ? nb / (na + nb) : 0;")
        for mean, m2 in self.welford:
            for lane in range(self.t.vectorize):
                delta = e.bind(mean.ctype, "delta", f"{other(mean, lane)} - {into(mean, lane)}")
                e.line(f"{into(m2, lane)} += {other(m2, lane)} + {delta} * {delta} * na * weight;")
                e.line(f"{into(mean, lane)} += {delta} * weight;")

    def _combine_block(self) -> None:
        """Row group 0 ends with the block's values, combined over the row groups in a tree."""
        e, t = self.e, self.t
        if t.groups == 1:
            return
        def shared(group: str):
            return lambda a, lane: (f"shared_{a.name}[{group} * {t.vectorize * t.columns} + "
                                    f"{f'{lane * t.columns} + ' if lane else ''}threadIdx.x]")

        count = f"shared_count[threadIdx.y * {t.columns} + threadIdx.x]"
        for a in self.components():
            for lane, accumulator in enumerate(self.lanes(a)):
                e.line(f"{shared('threadIdx.y')(a, lane)} = {accumulator.name};")
        if self.welford:
            e.line(f"{count} = count;")
        e.line("__syncthreads();")
        with e.block(f"for (int offset = {t.groups // 2}; offset > 0; offset /= 2)"):
            with e.block("if (threadIdx.y < offset)"):
                there = f"shared_count[(threadIdx.y + offset) * {t.columns} + threadIdx.x]"
                self._merge(shared("threadIdx.y"), shared("(threadIdx.y + offset)"),
                            (count, there))
                if self.welford:
                    e.line(f"{count} = na + nb;")
            e.line("__syncthreads();")
        with e.block("if (threadIdx.y == 0)"):
            for a in self.components():
                for lane, accumulator in enumerate(self.lanes(a)):
                    e.line(f"{accumulator.name} = {shared('0')(a, lane)};")
            if self.welford:
                e.line("count = shared_count[threadIdx.x];")

    def _combine_grid(self, row_outputs) -> None:
        """Each block's partials to the workspace; the tile's last block sums them."""
        e, t, columns = self.e, self.t, self.plan.rows
        column = Index((("column", 1),))
        offsets, total = [], 0
        for a in self.components():
            offsets.append(total)
            total += -(-t.splits * columns * _bytes(a) // 16) * 16
        work = self.ctx.workspace_param("partials", "unsigned char* __restrict__", total, False)
        for a, offset in zip(self.components(), offsets):
            e.line(f"{a.ctype}* const part_{a.name} = reinterpret_cast<{a.ctype}*>"
                   f"({work.name} + {offset});")
        counters = self.ctx.workspace_param("arrivals", "unsigned int* __restrict__",
                                            4 * t.tiles, True)

        def part(split: str):
            return lambda a, lane: (f"((volatile {a.ctype}*)part_{a.name})[(index_t){split} * "
                                    f"{columns} + {scale(column, t.vectorize).text()}"
                                    f"{f' + {lane}' if lane else ''}]")

        with e.block("if (threadIdx.y == 0 && column_valid)"):
            for a in self.components():
                for lane, accumulator in enumerate(self.lanes(a)):
                    e.line(f"{part('blockIdx.y')(a, lane)} = {accumulator.name};")
            e.line("__threadfence();  // the partials are visible before the count says so")
        e.line("__shared__ bool last_block;")
        e.line("__syncthreads();")
        with e.block("if (threadIdx.x == 0 && threadIdx.y == 0)"):
            e.line(f"last_block = atomicAdd(&{counters.name}[blockIdx.x], 1u) == "
                   f"{t.splits - 1};")
        e.line("__syncthreads();")
        with e.block("if (last_block)"):
            e.line("__threadfence();  // every split of this tile has written its partial")
            self._reset(declare=False)
            header = (f"for (index_t split = threadIdx.y; column_valid && split < {t.splits}; "
                      f"split += {t.groups})")
            with e.block(header):
                last = self.plan.row_size - (t.splits - 1) * t.chunk
                self._merge(lambda a, lane: self.lanes(a)[lane].name, part("split"),
                            ("count", f"split == {t.splits - 1} ? {last} : {t.chunk}"))
                if self.welford:
                    e.line("count = na + nb;")
            self._combine_block()
            with e.block("if (threadIdx.y == 0 && column_valid)"):
                self._epilogue(row_outputs)
            with e.block("if (threadIdx.x == 0 && threadIdx.y == 0)"):
                e.line(f"{counters.name}[blockIdx.x] = 0;  // for the next launch")

    def _epilogue(self, outputs) -> None:
        """The reduced values named, and the row outputs computed from them and stored."""
        e, t = self.e, self.t
        values: dict[int, list[str]] = {tensor.uid: [] for tensor, _ in outputs}
        for lane in range(t.vectorize):
            e.lane = lane
            for a in self.simple:
                finish(e, self.lanes(a)[lane], self._row_texts(a))
            for mean, m2 in self.welford:
                self._finish_welford(mean, self.lanes(mean)[lane].name,
                                     self.lanes(m2)[lane].name)
            for tensor, positions in outputs:
                values[tensor.uid].append(e.value(tensor, _at(self.point, positions)))
        e.lane = 0
        for tensor, positions in outputs:
            store(e, tensor, _at(self.point, positions), values[tensor.uid])

    def _finish_welford(self, mean: Accumulator, mean_name: str, m2_name: str) -> None:
        """As ``reduction_ops.finish`` names a var op's outputs, from a mean and an m2."""
        e, expr, row = self.e, mean.expr, self._row_texts(mean)
        count, ctype = self.plan.row_size, mean.ctype
        if expr.op is OpType.welford:
            for out, name in zip(expr.outputs, (mean_name, m2_name,
                                                cdtypes.literal(count, DataType.Int))):
                e.reduced[out.uid] = (name, row)
            return
        if expr.op is OpType.var_mean:
            e.reduced[expr.outputs[-1].uid] = (mean_name, row)
        divisor = max(0, count - int(expr.attr("correction")))
        numerator = f"({ctype})0" if count == 1 else m2_name
        variance = e.result(expr.outputs[0], f"{numerator} / ({ctype}){divisor}", "variance")
        e.reduced[expr.outputs[0].uid] = (variance, row)

    def _row_texts(self, accumulator: Accumulator) -> tuple[str, ...]:
        source = accumulator.expr.inputs[0]
        positions = loop_positions(self.ctx, source, self.reference)
        reduced = set(accumulator.expr.attr("dims"))
        return tuple(self.e.text(const(0) if p is None else self.point[p])
                     for d, p in enumerate(positions) if d not in reduced)


def _at(point: tuple[Index, ...], positions) -> tuple[Index, ...]:
    return tuple(const(0) if p is None else point[p] for p in positions)


def _combine(kind: str, a: str, b: str) -> str:
    if kind in ("max", "min"):
        return f"{'maximum_' if kind == 'max' else 'minimum_'}({a}, {b})"
    return f"{a} {'*' if kind == 'prod' else '+'} {b}"


def _bytes(accumulator: Accumulator) -> int:
    return cdtypes.itemsize_of_register(accumulator.dtype)


def _after_reduction(ctx: KernelContext, tensor: TensorView) -> bool:
    """Whether ``tensor`` is computed from a reduction of the segment."""
    pending, seen = [tensor], set()
    while pending:
        value = pending.pop()
        expr = None if ctx.candidate.is_input(value) else ctx.candidate.definition(value)
        if expr is None or value.uid in seen:
            continue
        seen.add(value.uid)
        if expr.op.kind in (OpKind.REDUCTION, OpKind.NORMALIZATION):
            return True
        pending.extend(expr.tensor_inputs())
    return False


def _summary(ctx: KernelContext, plan: ReductionParams, t: OuterTiling, index_type: str,
             emitter: Emitter) -> str:
    vectors = ", ".join(sorted(emitter.vector_accesses)) or "none"
    split = (f"rows split over {t.splits} blocks of {t.chunk}, partials combined in a "
             "workspace by each tile's last block" if t.splits > 1 else "no grid split")
    return (
        f"outer reduction: {plan.rows} columns (dims {list(plan.row_dims)}) of {plan.row_size} "
        f"rows (dims {list(plan.reduced_dims)}); {t.vectorize} columns per thread, block "
        f"{t.columns} x {t.groups} row groups, loads of {t.unroll} rows in flight; "
        f"grid {t.tiles} x {t.splits}: {split}; {32 if index_type == 'int' else 64}-bit indexing; "
        f"16-byte accesses: {vectors}"
    )
