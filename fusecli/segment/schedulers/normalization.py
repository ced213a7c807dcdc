"""The three persistent schedulers, one definition (normalization_scheduler_utils).

A persistent kernel keeps a whole reduction row on chip, so a tensor read both before and
after a reduction (x in RMSNorm) is read from memory once. ``inner_persistent`` takes
reductions of the innermost dimension (RMSNorm, softmax), ``outer_persistent`` reductions of
outer dimensions (batch norm style), ``inner_outer_persistent`` both at once. Rules, in order:
- "needs a reduction op"; "Scheduling not supported with no input"; the memory-promotion rule;
  a broadcast that meets loops of two extents ("Broadcasting dimension might be broadcasting
  to multiple sizes.", checkOpsAndInputs);
- inner and outer: the first reduction's output covers every output ("Output contains ID
  that's not scheduled by reference tv.");
- the reduction type (inner: the innermost dimension is reduced; outer: it is not; both:
  inner_outer) must be this scheduler's: "scheduler_type doesn't match with reduction type
  `<type>`." (inner_outer words it "schedulerType() ...");
- inner_outer: inner reductions laid out [I..R], outer ones [R..I], and a fusion input read by
  both;
- inner and outer persistent need every reduction over the same axes:
  "Un-mapped multi-reduction: <a> and <b>";
- "no persistent buffer identified" (a plain reduction belongs to the reduction scheduler).
Run time, as on an H200: inner keeps the buffers in registers (half an SM's, or a 16-SM
cluster's for a 2-D reduction; projected to the inputs where that saves room) and refuses a
large reduction over too few rows ("not enough blocks"); outer persists across the grid when
one SM cannot hold 8 x vectorization rows, which needs 4-way vectorization and Welford
reductions; inner_outer keeps one row of its inner reduction in shared memory and registers,
the outer partials in registers (``inner_outer_storage``; older profiles: a register file per
row).
Every run-time verdict carries a note (``hardware.py``): nvFuser asks the GPU for these limits.
Heuristics: the reduction kernel's (``heuristics.reduction``); inner_outer's are the rows of
its inner reduction (``heuristics.inner_outer``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fusecli.ir.optype import OpType
from fusecli.segment import hardware, heuristics
from fusecli.segment.candidate import Candidate
from fusecli.segment.reasons import Reason, Rejection
from fusecli.segment.schedulers import (
    buffer_sizes,
    common,
    coverage,
    inner_outer_storage,
    reshapes,
)
from fusecli.segment.verdict import Check, Scheduler, Verdict

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext


def persistent(name: str, run_time: Check, same_axes: bool = True) -> Scheduler:
    """The persistent scheduler for the reduction type ``name``, with its run-time check;
    ``same_axes``: its reductions must all reduce the same axes."""

    def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
        if common.has_mma(candidate) or not candidate.reduction_exprs:
            return Verdict.reject(name, Reason.NEEDS_REDUCTION)
        reason = (common.reduction_input_reason(candidate, ctx)
                  or common.non_unique_broadcast_reason(candidate))
        if reason:
            return Verdict.reject(name, reason)
        reason = coverage.reference_coverage_reason(candidate, check_inputs=False) \
            if same_axes else None
        if reason:
            return Verdict.reject(name, reason)
        found = common.reduction_type(candidate)
        if found != name:
            wording = Reason.REDUCTION_TYPE if same_axes else Reason.COMBINED_REDUCTION_TYPE
            return Verdict.reject(name, Rejection.of(wording, found=found))
        if not same_axes:
            reason = combined_reduction_reason(candidate)
            if reason:
                return Verdict.reject(name, reason)
        reference = next(e for e in candidate.reduction_exprs
                         if same_axes or common.is_inner_reduction(e))
        if reshapes.interfering_view(candidate, reference):
            return Verdict.reject(name, Reason.NORMALIZATION_VIEW)
        reason = common.unmapped_reduction_reason(candidate) if same_axes else None
        if reason:
            return Verdict.reject(name, reason)
        if not common.persistent_buffers(candidate):
            return Verdict.reject(name, Reason.NO_PERSISTENT_BUFFER)
        return Verdict.accept(name)

    chosen = heuristics.reduction if same_axes else heuristics.inner_outer
    return Scheduler(name, compile_time, run_time, chosen)


def _inner_outer_run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    """The buffers must fit in shared memory and registers as getPersistentBufferStorageParams
    splits them (``inner_outer_storage``); under older profiles, one row in one register
    file."""
    name = "inner_outer_persistent"
    if ctx.profile.inner_outer_storage:
        return _inner_outer_storage(candidate, ctx)
    needed = buffer_sizes.persistent_bytes(candidate, ctx)
    limit = ctx.device.max_persistent_bytes
    if needed is None:
        return Verdict.accept(name)
    gpu = _gpu_note(name, needed, limit, ctx)
    if needed > limit:
        rejection = Rejection.of(Reason.PERSISTENT_TOO_LARGE, bytes_per_row=needed,
                                 available=limit)
        return Verdict.reject(name, rejection, "run time").depending_on_gpu(gpu)
    return Verdict.accept(name).depending_on_gpu(gpu)


def _inner_outer_storage(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    name = "inner_outer_persistent"
    found = inner_outer_storage.storage(candidate, ctx, _vectorization(candidate, ctx))
    if found is None:
        return Verdict.accept(name)
    needed = found.registers + found.shared
    available = found.available_registers + found.available_shared
    gpu = hardware.note(name, needed, available,
                        "bytes of persistent buffers in registers and shared memory",
                        ctx.device.name)
    if not found.fits:
        rejection = Rejection.of(Reason.PERSISTENT_TOO_LARGE, bytes_per_row=needed,
                                 available=available)
        return Verdict.reject(name, rejection, "run time").depending_on_gpu(gpu)
    if found.sms_needed > ctx.device.sm_count // 2:
        rejection = Rejection.of(Reason.OVER_HALF_GPU)
        return Verdict.reject(name, rejection, "run time").depending_on_gpu(gpu)
    return Verdict.accept(name).depending_on_gpu(gpu)


def _gpu_note(name: str, needed: int, available: int, ctx: ScheduleContext) -> str:
    return hardware.note(name, needed, available, "bytes of persistent buffer per row",
                         ctx.device.name)


# Recomputing a buffer with an exp from the inputs pays only above this size per row
# (isProjectBufferToInputs, H100-class bandwidth to flops)
PROJECT_WITH_EXP_BYTES = 6 * 4 * 1024


def _inner_run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    """InnerPersistentKernelScheduler::canScheduleRunTime on sm_90: buffers in registers only
    (no shared memory persistence from Hopper on), half the register file of one SM, or of a
    cluster of SMs for a 2-D reduction; projected to the inputs where that saves room."""
    name = "inner_persistent"
    needed = buffer_sizes.persistent_bytes(candidate, ctx)
    if needed is None:
        return Verdict.accept(name)
    projected = buffer_sizes.projected_bytes(candidate, ctx)
    available = ctx.device.persistent_register_bytes
    if projected is not None and projected < needed and (
        available < needed or not common.recomputes_exp(candidate)
        or needed > PROJECT_WITH_EXP_BYTES
    ):
        needed = projected
    three_d = any(len(common.reduced_positions(e)) > 1 for e in candidate.reduction_exprs)
    if not three_d and available < needed:
        available *= ctx.device.max_cluster_size
    gpu = _gpu_note(name, needed, available, ctx)
    if needed > available:
        rejection = Rejection.of(Reason.REGISTERS_ONLY_TOO_LARGE, bytes_per_row=needed,
                                 available=available)
        return Verdict.reject(name, rejection, "run time").depending_on_gpu(gpu)
    sms = -(-needed // ctx.device.persistent_register_bytes)
    if sms > ctx.device.sm_count // 2:
        rejection = Rejection.of(Reason.OVER_HALF_GPU, sms=sms)
        return Verdict.reject(name, rejection, "run time").depending_on_gpu(gpu)
    few = too_few_blocks(candidate, ctx)
    if few:
        return Verdict.reject(name, few, "run time").depending_on_gpu(gpu)
    return Verdict.accept(name).depending_on_gpu(gpu)


K_MIN_BDIMX = 8  # normalization_scheduler_utils::PreferredLaunchConfig::kMinBdimx
WELFORD_OPS = frozenset({OpType.var_mean, OpType.var, OpType.welford})


def _outer_run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    """OuterPersistentKernelScheduler::canScheduleRunTime: buffers (projected where smaller)
    in the register files of the whole GPU; a row needing more than one SM's registers for
    the minimum of 8 x vectorization rows at once is persisted across the grid, which needs
    4-way vectorization and Welford reductions (grid persistence of plain sums is disabled)."""
    name = "outer_persistent"
    needed = buffer_sizes.persistent_bytes(candidate, ctx)
    if needed is None:
        return Verdict.accept(name)
    projected = buffer_sizes.projected_bytes(candidate, ctx)
    if projected:
        needed = min(needed, projected)
    sm_bytes = ctx.device.register_file_bytes
    if needed > sm_bytes * ctx.device.sm_count:
        rejection = Rejection.of(Reason.OUTER_PERSISTENT_TOO_LARGE, bytes_per_row=needed,
                                 available=sm_bytes * ctx.device.sm_count)
        gpu = _gpu_note(name, needed, sm_bytes * ctx.device.sm_count, ctx)
        return Verdict.reject(name, rejection, "run time").depending_on_gpu(gpu)
    vectorize = _vectorization(candidate, ctx)
    held, required = _outer_sms(candidate, ctx, needed, vectorize)
    gpu = _gpu_note(name, held, sm_bytes, ctx)
    if required > ctx.device.sm_count // 2:
        rejection = Rejection.of(Reason.OVER_HALF_GPU, sms=required)
        return Verdict.reject(name, rejection, "run time").depending_on_gpu(gpu)
    if required > 1:  # cross-grid persistence
        if vectorize < 4:
            rejection = Rejection.of(Reason.NOT_ENOUGH_VECTORIZED, vectorize=vectorize)
            return Verdict.reject(name, rejection, "run time").depending_on_gpu(gpu)
        plain = [e for e in candidate.reduction_exprs if e.op not in WELFORD_OPS]
        if plain:
            rejection = Rejection.of(Reason.NON_WELFORD_GRID, op=plain[0].op.value,
                                     sms=required)
            return Verdict.reject(name, rejection, "run time").depending_on_gpu(gpu)
    return Verdict.accept(name).depending_on_gpu(gpu)


def _outer_sms(candidate: Candidate, ctx: ScheduleContext, needed: int, vectorize: int
               ) -> tuple[int, int]:
    """The decisive numbers of outer persistence: the bytes of 8 x vectorization rows held at
    once, and the SMs whose registers that takes (over one: persisted across the grid)."""
    held = needed * vectorize * K_MIN_BDIMX
    return held, -(-held // ctx.device.register_file_bytes)


def crosses_grid(candidate: Candidate, ctx: ScheduleContext) -> bool:
    """Whether an outer persistent kernel would keep its buffers across the grid
    (ReductionParams::cross_grid_outer_reduction)."""
    needed = buffer_sizes.persistent_bytes(candidate, ctx)
    if needed is None:
        return False
    projected = buffer_sizes.projected_bytes(candidate, ctx)
    if projected:
        needed = min(needed, projected)
    return _outer_sms(candidate, ctx, needed, _vectorization(candidate, ctx))[1] > 1


def _vectorization(candidate: Candidate, ctx: ScheduleContext) -> int:
    """The vectorization of the reduced tensor's innermost iteration dimension: 16 bytes,
    as far as that dimension's size divides."""
    reduction = candidate.reduction_exprs[0]
    source = reduction.tensor_inputs()[0]
    width = max(16 // heuristics.itemsize(source), 1)
    size = ctx.runtime.extent(source.logical[-1].logical_extent) if source.logical else None
    if size is None:
        return 1
    while width > 1 and size % width:
        width //= 2
    return width


def combined_reduction_reason(candidate: Candidate) -> Rejection | None:
    """The inner_outer_persistent scheduler's structure checks (normalization_inner_outer.cpp):
    every inner reduction laid out [I,...,I,R,...,R] and every outer one [R,...,R,I,...,I], a
    broadcast counting as neither; and some fusion input read by both."""
    inner = [e for e in candidate.reduction_exprs if common.is_inner_reduction(e)]
    outer = [e for e in candidate.reduction_exprs if not common.is_inner_reduction(e)]
    if not all(_laid_out(e, reduced_last=True) for e in inner) or not all(
        _laid_out(e, reduced_last=False) for e in outer
    ):
        return Rejection.of(Reason.COMBINED_LAYOUT)
    if not _fusion_inputs_of(candidate, inner) & _fusion_inputs_of(candidate, outer):
        return Rejection.of(Reason.COMBINED_NO_SHARED_INPUT)
    if not _connected_only_through_reduction_producer(candidate, inner, outer):
        return Rejection.of(Reason.COMBINED_SHARED_CONSUMER)
    return None


def _connected_only_through_reduction_producer(candidate: Candidate, inner, outer) -> bool:
    """isConnectedOnlyThroughReductionProducer: the tensors reachable (through producers,
    consumers and siblings, inside the segment) from the inner reductions without crossing an
    outer reduction's output, and those reachable from each outer reduction without crossing
    its producers, must be disjoint. A sum over dim 0 read back by a layer norm's input fails
    it: the outer result reaches the inner reduction through its consumers."""
    outer_outputs = {v.uid for e in outer for v in e.tensor_outputs()}
    claimed = _reachable(candidate, [v for e in inner for v in e.tensor_outputs()],
                         outer_outputs)
    for expr in outer:
        producers = {v.uid for v in expr.tensor_inputs()}
        reached = _reachable(candidate, expr.tensor_outputs(), producers)
        if claimed & reached:
            return False
        claimed |= reached
    return True


def _reachable(candidate: Candidate, start, cutoff: set[int]) -> set[int]:
    """scheduler_utils::getAllTvsFrom over the segment's tensors: every tensor joined to
    ``start`` by producer, consumer or sibling edges without entering ``cutoff``."""
    found: set[int] = set()
    stack = list(start)
    while stack:
        tensor = stack.pop()
        neighbours = []
        for use in candidate.uses_inside(tensor):  # consumers
            neighbours.extend(use.tensor_outputs())
        producer = candidate.definition(tensor)
        if producer is not None and candidate.contains(producer):
            neighbours.extend(producer.tensor_outputs())  # siblings
            neighbours.extend(producer.tensor_inputs())  # producers
        for neighbour in neighbours:
            if neighbour.uid not in found and neighbour.uid not in cutoff:
                found.add(neighbour.uid)
                stack.append(neighbour)
    return found


def _laid_out(expr, reduced_last: bool) -> bool:
    """Whether a reduction's output is iteration axes then reduction axes (or the reverse),
    each run non-empty and nothing else (a broadcast) among them."""
    kinds = ["R" if d.is_reduction else "B" if d.is_broadcast else "I"
             for d in expr.tensor_outputs()[0].domain]
    first, second = ("I", "R") if reduced_last else ("R", "I")
    split = kinds.index(second) if second in kinds else len(kinds)
    head, tail = kinds[:split], kinds[split:]
    return bool(head) and bool(tail) and set(head) == {first} and set(tail) == {second}


def _fusion_inputs_of(candidate: Candidate, exprs) -> set[int]:
    """The complete fusion's inputs that the outputs of ``exprs`` depend on."""
    found, stack, seen = set(), [e.tensor_outputs()[0] for e in exprs], set()
    while stack:
        value = stack.pop()
        if value.uid in seen:
            continue
        seen.add(value.uid)
        if value.uid in candidate.graph.input_uids:
            found.add(value.uid)
        producer = candidate.definition(value)
        if producer is not None:
            stack.extend(producer.tensor_inputs())
    return found


# the device properties nvFuser reads: maxThreadsPerMultiProcessor (2048 on sm_90), warp size
MAX_THREADS_PER_SM = 2048
WARP = 32


def too_few_blocks(candidate: Candidate, ctx: ScheduleContext) -> Rejection | None:
    """A large reduction over few rows: persistence would leave most SMs idle
    (InnerPersistentKernelScheduler::canScheduleRunTime)."""
    reduction = candidate.reduction_exprs[0]
    source = reduction.tensor_inputs()[0]
    out = reduction.tensor_outputs()[0]
    reduced, iterated = 1, 1
    for position, domain in enumerate(out.domain):
        size = ctx.runtime.extent(source.domain[position].logical_extent) \
            if position < len(source.domain) else None
        if size is None:
            return None
        if domain.is_reduction:
            reduced *= size
        else:
            iterated *= size
    fastest = common.is_inner_reduction(reduction)
    sm_count = ctx.device.sm_count
    needed = sm_count // 8 if fastest else (WARP // 8) * sm_count
    if reduced >= MAX_THREADS_PER_SM * 4 and iterated < needed:
        return Rejection.of(Reason.NOT_ENOUGH_BLOCKS, rows=iterated, row_size=reduced,
                            blocks_needed=needed)
    return None


INNER = persistent("inner_persistent", _inner_run_time)
OUTER = persistent("outer_persistent", _outer_run_time)
INNER_OUTER = persistent("inner_outer_persistent", _inner_outer_run_time, same_axes=False)
