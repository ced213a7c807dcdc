"""Normalization backward (inner_outer_persistent): row reductions, per-element outputs and
sums over the rows, in one kernel.

The loop is the inner reduction's input (``heuristics.inner_outer``): its leading dims are
rows, its trailing dims a row's elements, held in registers as the inner-persistent kernel
holds them (``reduction._Body``: the same slots, loads, passes and block reductions). As
nvFuser's inner-outer schedule, the grid is at most a block per multiprocessor and each block
loops over its rows; a thread owns the same columns (elements of a row) in every row, so it
adds its rows' values of each outer reduction (a sum over the rows: a norm's grad weight and
grad bias) into registers. After the last row each row group writes its partials to a
workspace [partials x columns]. The blocks form about sqrt(grid) groups; the last block of a
group to arrive (an arrival counter per group, as ``outer_reduction`` combines a split) sums
its group's partials per column in a fixed order into a second workspace, and the last group
to finish sums the groups' in order, computes the per-column outputs (their casts) and sets
the counters back to zero. Results are the same on every run.
"""

from __future__ import annotations

import math
from dataclasses import replace

from fusecli.codegen import cdtypes
from fusecli.codegen.context import KernelContext
from fusecli.codegen.emitter import Emitter
from fusecli.codegen.indexing import Index, IndexSpace, const, contiguous_strides, scale
from fusecli.codegen.kernel import Kernel, UnsupportedError
from fusecli.codegen.pointwise import loop_positions
from fusecli.codegen.reduction import _Body as _RowBody
from fusecli.codegen.reduction_ops import Accumulator, accumulators, declare_scratch, finish
from fusecli.codegen.source import assemble, index_type_for, store
from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import OpKind
from fusecli.segment.heuristics import ReductionParams

Placed = tuple[TensorView, tuple[int | None, ...], bool]
_COMBINE = {"sum": "{a} + {b}", "prod": "{a} * {b}", "max": "maximum_({a}, {b})",
            "min": "minimum_({a}, {b})"}


def build_inner_outer(ctx: KernelContext, name: str, plan: ReductionParams) -> Kernel:
    if not plan.inner:
        raise UnsupportedError(f"segment {ctx.segment.id} has no reduction of a row's "
                               "trailing elements")
    if not plan.persistent:
        raise UnsupportedError(
            f"rows of {plan.row_size} elements are too long to keep in registers "
            f"({plan.slots * plan.vectorize} per thread): no inner_outer kernel")
    reference, inner, outer = _split(ctx, plan)
    found = accumulators(ctx)
    inner_found = [a for a in found if a.expr.uid in inner]
    outer_found = [a for a in found if a.expr.uid in outer]
    for a in outer_found:
        if a.kind not in _COMBINE:
            raise UnsupportedError(f"{a.expr.op.value} over the rows has no inner_outer kernel")
    outer_values = {out.uid for a in outer_found for out in a.expr.outputs}
    for a in found:
        if _depends_on(ctx, a.expr.inputs[0], outer_values):
            raise UnsupportedError(f"{ctx.name(a.expr.outputs[0])} reads a sum over the rows")
    outputs, columns = _classify(ctx, plan, reference, outer_values)
    cdtypes.require((*ctx.segment.inputs, *ctx.outputs))
    grid = max(1, min(-(-plan.rows // plan.rows_per_block), plan.max_blocks))
    partials = grid * plan.rows_per_block
    emitter = Emitter(ctx, IndexSpace(), plan.vectorize)
    body = _Body(emitter, ctx, plan, reference, inner_found, outer_found, partials)
    body.emit(outputs, columns)
    index_type = index_type_for(ctx, plan.rows + partials * (plan.row_size + 1))
    summary = _summary(plan, grid, partials, index_type, emitter, len(outer_found))
    source = assemble(ctx, name, plan.block, emitter.lines, index_type, summary)
    return Kernel(name, source, (grid, 1, 1), (plan.block, 1, 1), 0, ctx.params(), summary)


def _split(ctx: KernelContext, plan: ReductionParams) -> tuple[TensorView, set[int], set[int]]:
    """The loop's tensor, and the uids of the inner reductions (over a row's elements) and
    of the outer ones (over the rows, keeping a row's elements)."""
    exprs = ctx.candidate.reduction_exprs
    reference = next(e.inputs[0] for e in exprs
                     if tuple(sorted(e.attr("dims"))) == plan.reduced_dims
                     and ctx.shape(e.inputs[0]) == (*plan.row_shape, *plan.reduced_shape))
    shape = ctx.shape(reference)
    rows = {p for p in plan.row_dims if shape[p] > 1}
    elements = {p for p in plan.reduced_dims if shape[p] > 1}
    if not rows or not elements:
        raise UnsupportedError("a single row or a single column: no inner_outer kernel")
    inner, outer = set(), set()
    for expr in exprs:
        positions = loop_positions(ctx, expr.inputs[0], reference)
        if positions is None:
            raise UnsupportedError(f"{ctx.name(expr.outputs[0])} is not a reduction of "
                                   f"{ctx.name(reference)}'s loop")
        dims = set(expr.attr("dims"))
        reduced = {p for d, p in enumerate(positions) if p is not None and d in dims}
        kept = {p for d, p in enumerate(positions) if p is not None and d not in dims}
        if (reduced, kept) == (elements, rows):
            inner.add(expr.uid)
        elif (reduced, kept) == (rows, elements):
            outer.add(expr.uid)
        else:
            raise UnsupportedError(f"{ctx.name(expr.outputs[0])} reduces neither a row of "
                                   f"{ctx.name(reference)} nor its rows")
    return reference, inner, outer


def _classify(ctx: KernelContext, plan: ReductionParams, reference: TensorView,
              outer_values: set[int]) -> tuple[list[Placed], list[Placed]]:
    """The per-element and per-row outputs (whole loop or not), and the per-column ones."""
    shape = ctx.shape(reference)
    rows = {p for p in plan.row_dims if shape[p] > 1}
    elements = {p for p in plan.reduced_dims if shape[p] > 1}
    outputs, columns = [], []
    for tensor in ctx.outputs:
        positions = loop_positions(ctx, tensor, reference, by_size=True)
        mapped = {p for p in positions or () if p is not None}
        late = _depends_on(ctx, tensor, outer_values)
        if positions is not None and mapped == elements:
            columns.append((tensor, positions, False))
        elif positions is not None and mapped in (rows | elements, rows) and not late:
            outputs.append((tensor, positions, mapped != rows))
        else:
            raise UnsupportedError(f"output {ctx.name(tensor)} is neither per element, per row "
                                   f"nor per column of {ctx.name(reference)}")
    return outputs, columns


def _depends_on(ctx: KernelContext, tensor: TensorView, uids: set[int]) -> bool:
    """Whether ``tensor`` is one of ``uids`` or computed from one in the segment."""
    pending, seen = [tensor], set()
    while pending:
        value = pending.pop()
        if value.uid in uids:
            return True
        if value.uid in seen or ctx.candidate.is_input(value):
            continue
        seen.add(value.uid)
        expr: Expr | None = ctx.candidate.definition(value)
        if expr is not None and expr.op.kind is not OpKind.CREATE:
            pending.extend(expr.tensor_inputs())
    return False


class _Body(_RowBody):
    """The inner-persistent kernel's row loop, with the outer partials added per row."""

    def __init__(self, emitter: Emitter, ctx: KernelContext, plan: ReductionParams,
                 reference: TensorView, inner: list[Accumulator], outer: list[Accumulator],
                 partials: int) -> None:
        super().__init__(emitter, ctx, plan, reference)
        self.inner, self.outer, self.partials = inner, outer, partials

    def emit(self, outputs: list[Placed], columns: list[Placed]) -> None:
        e, plan = self.emitter, self.plan
        declare_scratch(e, self.inner, plan.threads)
        header = self._row_loop()
        slots = self._slots()
        self._preload(slots, row_dependent=False)
        e.line("// partials of the sums over the rows: this thread's columns, every row it takes")
        for a in self.outer:
            for slot in range(plan.slots):
                for lane in range(plan.vectorize):
                    e.line(f"{a.ctype} {self._partial(a, slot, lane).name} = {a.identity};")
        with e.block(header):
            self._rows()
            self._preload(slots, row_dependent=True)
            passes: dict[int, list[Accumulator]] = {}
            for a in self.inner:
                passes.setdefault(a.pass_number, []).append(a)
            for number, batch in enumerate(passes[n] for n in sorted(passes)):
                self._pass(batch, slots, number)
            self._accumulate_outer(slots)
            self._full_outputs([o for o in outputs if o[2]], slots)
            self._row_outputs([o for o in outputs if not o[2]])
        self._combine_grid(slots, columns)

    def _partial(self, a: Accumulator, slot: int, lane: int) -> Accumulator:
        return replace(a, name=f"{a.name}_{slot}_{lane}")

    def _accumulate_outer(self, slots) -> None:
        e, plan = self.emitter, self.plan
        e.line(f"// {', '.join(a.describe(self.ctx) for a in self.outer)}: this row's values")
        row_valid = "row_valid" if plan.rows_per_block > 1 else None
        for slot, (position, valid) in enumerate(slots):
            condition = " && ".join(c for c in (row_valid, valid) if c)
            for lane in range(plan.vectorize):
                e.lane = lane
                index = self.loop_index(position)
                for a in self.outer:
                    source = a.expr.inputs[0]
                    value = e.value(source, self.at(index, loop_positions(
                        self.ctx, source, self.reference)))
                    update = self._partial(a, slot, lane).update(e, value)
                    e.line(f"if ({condition}) {update}" if condition else update)
        e.lane = 0

    def _combine_grid(self, slots, columns: list[Placed]) -> None:
        """Each row group's partials to the workspace; then two levels: the last block of
        each group of blocks sums its group's partials per column, the last group to finish
        sums the groups' (one block summing every partial of a wide row was most of the
        kernel's time)."""
        e, plan, ctx = self.emitter, self.plan, self.ctx
        size, count = plan.row_size, self.partials
        grid = count // plan.rows_per_block
        per_group = math.isqrt(grid - 1) + 1 if grid > 1 else 1  # blocks per group
        groups = -(-grid // per_group)
        offsets, total = [], 0
        for a in self.outer:
            item = cdtypes.itemsize_of_register(a.dtype)
            offsets.append((total, total + -(-count * size * item // 16) * 16))
            total = offsets[-1][1] + -(-groups * size * item // 16) * 16
        work = ctx.workspace_param("partials", "unsigned char* __restrict__", max(total, 16),
                                   False)
        counter = ctx.workspace_param("arrivals", "unsigned int* __restrict__",
                                      4 * (groups + 1), True)
        for a, (offset, group_offset) in zip(self.outer, offsets):
            for prefix, at in (("part", offset), ("group", group_offset)):
                e.line(f"volatile {a.ctype}* const {prefix}_{a.name} = "
                       f"reinterpret_cast<volatile {a.ctype}*>({work.name} + {at});")
        row_group = (f"(index_t)blockIdx.x * {plan.rows_per_block} + threadIdx.x / {plan.threads}"
                     if plan.rows_per_block > 1 else "(index_t)blockIdx.x")
        e.line(f"const index_t partial = {row_group};  // this row group's row of partials")
        for slot, (position, valid) in enumerate(slots):
            for lane in range(plan.vectorize):
                column = scale(position, plan.vectorize).text()
                at = f"partial * {size} + {column}{f' + {lane}' if lane else ''}"
                for a in self.outer:
                    write = f"part_{a.name}[{at}] = {self._partial(a, slot, lane).name};"
                    e.line(f"if ({valid}) {write}" if valid else write)
        e.line("__threadfence();  // the partials are visible before the count says so")
        e.line("__shared__ bool last_in_group, last_group;")
        e.line(f"const unsigned int group = blockIdx.x / {per_group};")
        e.line(f"const unsigned int first = group * {per_group};")
        e.line(f"const unsigned int members = gridDim.x - first < {per_group}u ? "
               f"gridDim.x - first : {per_group}u;")
        e.line("__syncthreads();")
        with e.block("if (threadIdx.x == 0)"):
            e.line(f"last_in_group = atomicAdd(&{counter.name}[1 + group], 1u) == members - 1;")
        e.line("__syncthreads();")
        with e.block("if (last_in_group)"):
            e.line("__threadfence();  // every block of the group has written its partials")
            def store_group_sums() -> None:
                for a in self.outer:
                    e.line(f"group_{a.name}[group * {size} + column] = {a.name};")

            self._over_columns(f"first * {plan.rows_per_block}",
                               f"(first + members) * {plan.rows_per_block}", "part",
                               store_group_sums)
            e.line("__threadfence();  // the group's sums are visible before the count says so")
            e.line("__syncthreads();")
            with e.block("if (threadIdx.x == 0)"):
                e.line(f"{counter.name}[1 + group] = 0;  // for the next launch")
                e.line(f"last_group = atomicAdd(&{counter.name}[0], 1u) == {groups - 1};")
            e.line("__syncthreads();")
            with e.block("if (last_group)"):
                e.line("__threadfence();  // every group has written its sums")
                self._over_columns("0", str(groups), "group", lambda: self._epilogue(columns))
                with e.block("if (threadIdx.x == 0)"):
                    e.line(f"{counter.name}[0] = 0;  // for the next launch")

    def _lanes(self) -> int:
        """Columns a thread sums at once in the combine: one 16-byte load of each sum's
        partials per row, where it loaded one column of one sum at a time."""
        sizes = {cdtypes.itemsize_of_register(a.dtype) for a in self.outer}
        lanes = 16 // max(sizes)
        return lanes if len(sizes) == 1 and self.plan.row_size % lanes == 0 else 1

    def _over_columns(self, begin: str, end: str, prefix: str, each) -> None:
        """For each column of this thread's: every sum over the rows ``begin`` to ``end`` of
        the workspace ``prefix`` there, in order, as ``{a.name}``; then ``each()``, with
        ``column`` that column. A thread takes ``_lanes()`` neighbouring columns at a time,
        several rows' loads of each sum issued before their adds."""
        e, size, lanes = self.emitter, self.plan.row_size, self._lanes()
        batch = max(2, 8 // len(self.outer))
        header = (f"for (index_t column0 = threadIdx.x * {lanes}; column0 < {size}; "
                  f"column0 += {self.plan.block * lanes})")
        with e.block(header):
            for a in self.outer:
                starts = ", ".join(f"{a.name}_{c} = {a.identity}" for c in range(lanes))
                e.line(f"{a.ctype} {starts};")
            e.line(f"index_t p = {begin};")
            for step in (batch, 1):
                loop = (f"for (; p + {step} <= {end}; p += {step})" if step > 1 else
                        f"for (; p < {end}; ++p)")
                with e.block(loop):
                    for row in range(step):
                        for a in self.outer:
                            e.line(f"const Vec<{a.ctype}, {lanes}> {a.name}_v{row} = "
                                   f"load_cg<{a.ctype}, {lanes}>({prefix}_{a.name} + "
                                   f"(p + {row}) * {size} + column0);")
                    for row in range(step):
                        for a in self.outer:
                            for c in range(lanes):
                                total = _COMBINE[a.kind].format(a=f"{a.name}_{c}",
                                                                b=f"{a.name}_v{row}.v[{c}]")
                                e.line(f"{a.name}_{c} = {total};")
            for c in range(lanes):  # each column in a scope of its own
                with e.block(f"if (column0 + {c} < {size})"):
                    e.line(f"const index_t column = column0 + {c};")
                    for a in self.outer:
                        e.line(f"{a.ctype} {a.name} = {a.name}_{c};")
                    each()

    def _epilogue(self, columns: list[Placed]) -> None:
        """Column ``column``'s outputs, from each sum over the rows combined."""
        e, plan = self.emitter, self.plan
        space = e.space
        column = space.var("column", 0, plan.row_size - 1)
        point: list[Index] = [const(0)] * len(self.ctx.shape(self.reference))
        for dim, size, stride in zip(plan.reduced_dims, plan.reduced_shape,
                                     contiguous_strides(plan.reduced_shape)):
            if size > 1:
                position = space.remainder(space.divide(column, stride), size)
                text = position.text()
                point[dim] = (position if text.isidentifier() else
                              space.var(e.bind("index_t", f"c{dim}", text), 0, size - 1))
        for a in self.outer:
            source = a.expr.inputs[0]
            positions = loop_positions(self.ctx, source, self.reference)
            reduced = set(a.expr.attr("dims"))
            finish(e, a, tuple(e.text(const(0) if p is None else point[p])
                               for d, p in enumerate(positions) if d not in reduced))
        for tensor, positions, _ in columns:
            index = self.at(tuple(point), positions)
            store(e, tensor, index, [e.value(tensor, index)])


def _summary(plan: ReductionParams, grid: int, partials: int, index_type: str,
             emitter: Emitter, sums: int) -> str:
    vectors = ", ".join(sorted(emitter.vector_accesses)) or "none"
    bits = 32 if index_type == "int" else 64
    return (
        f"inner-outer persistent: {plan.rows} rows of {plan.row_size} "
        f"({list(plan.row_shape)} x {list(plan.reduced_shape)}); {plan.threads} threads per "
        f"row, {plan.rows_per_block} rows per block, {plan.slots} slots of {plan.vectorize} "
        f"elements per thread; block {plan.block}, grid {grid} (each block loops over its "
        f"rows); {sums} sums over the rows kept per thread, {partials} partials per column "
        f"combined in a workspace in two levels; {bits}-bit indexing; 16-byte accesses: "
        f"{vectors}"
    )
