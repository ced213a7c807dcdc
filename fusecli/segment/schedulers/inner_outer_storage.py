"""Where the inner_outer_persistent scheduler keeps its buffers, and whether they fit
(``inner_outer_utils::getPersistentBufferStorageParams``,
csrc/scheduler/normalization_inner_outer_utils.cpp, and the run-time check of
csrc/scheduler/normalization_inner_outer.cpp).

A normalization backward (LayerNorm's dx, dw, db) reduces each row for dx and each column
for dw and db. The persistent buffers hold one row of the *inner* reduction; the outer
reductions keep their partial results, one value per column, in registers. So:

- the row is the first inner (fastest-dimension) reduction's; the outer reductions' lengths
  (the number of rows) never enter;
- the buffers are projected to the segment's inputs where a tensor is broadcast along the
  inner reduction's iteration dimensions (``getOuterBroadcastTvs``: the weight of a LayerNorm
  backward), or where the projection is smaller;
- every buffer starts in shared memory (rounded up as ``roundUpSharedMemory`` does for every
  block size from 128 to 512 threads, aligned to 128 bytes), the outer partial buffers in
  registers; where shared memory overflows, buffers move to registers one by one while the
  registers (56K 32-bit registers, ``register_file_size_bit_56k``) hold them;
- "not enough registers or shared memory for persistence" when no split fits, and "requires
  over half GPU persistence." when the registers used need more than half the SMs at half a
  register file each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fusecli.ir.nodes import Expr, TensorView
from fusecli.ir.optype import OpKind, OpType
from fusecli.segment.candidate import Candidate
from fusecli.segment.heuristics import itemsize
from fusecli.segment.schedulers import buffer_sizes, common

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

REGISTERS_56K = 56 * 1024 * 4  # bytes: what the buffers may take of the register file
HALF_REGISTER_FILE = 128 * 1024  # bytes: scheduler_utils::register_file_size_bit
SMEM_ALIGNMENT = 128  # kSharedMemoryAlignmentBytes (base.h); also the static shared memory
THREADS_MIN, THREADS_MAX, WARP = 128, 512, 32  # InnerOuterPersistentKernelScheduler's range


@dataclass(frozen=True, slots=True)
class Storage:
    """The split getPersistentBufferStorageParams found, in bytes, or why none fits."""

    registers: int  # outer partials and the buffers moved to registers
    shared: int  # the buffers left in shared memory (rounded)
    available_registers: int
    available_shared: int
    fits: bool
    sms_needed: int  # SMs the register buffers take at half a register file each


def storage(candidate: Candidate, ctx: ScheduleContext, vectorize: int) -> Storage | None:
    """The storage the candidate's buffers need, or None where a size is unknown."""
    inner = next((e for e in candidate.reduction_exprs if common.is_inner_reduction(e)), None)
    if inner is None:
        return None
    row = common.reduced_elements(inner, ctx)
    partials = [_iteration_bytes(e, ctx) for e in candidate.reduction_exprs
                if not common.is_inner_reduction(e)]
    buffers = _buffers(candidate, inner)
    if row is None or any(p is None for p in partials):
        return None
    sizes = [row * itemsize(t) for t in buffers]
    rounded = [_aligned(_round_up_shared(size, itemsize(t), vectorize))
               for size, t in zip(sizes, buffers)]
    widest = max(itemsize(e.tensor_outputs()[0]) for e in candidate.reduction_exprs)
    welford = 3 if any(e.op.kind is OpKind.NORMALIZATION for e in candidate.exprs) else 1
    if welford == 3:
        widest = max(widest, 8)
    overhead = _aligned(THREADS_MAX * widest * welford) + SMEM_ALIGNMENT
    available = ctx.device.shared_memory_bytes - overhead
    registers, shared = sum(partials), sum(rounded)
    fits = registers <= REGISTERS_56K and shared <= available
    if not fits and registers <= REGISTERS_56K:
        for index in _register_order(candidate, inner, buffers):
            size, smem = sizes[index], rounded[index]
            registers, shared = registers + size, shared - smem
            if registers <= REGISTERS_56K and shared <= available:
                fits = True
                break
            if registers > REGISTERS_56K:
                break
    return Storage(registers, shared, REGISTERS_56K, available, fits,
                   -(-registers // HALF_REGISTER_FILE))


def _buffers(candidate: Candidate, inner: Expr) -> list[TensorView]:
    """The persistent buffers, or the segment inputs they are computed from where nvFuser
    projects them (isProjectBufferToInputs, always with an outer broadcast tensor)."""
    buffers = common.persistent_buffers(candidate)
    projected = buffer_sizes.projected_sources(candidate)
    if projected is None:
        return buffers
    if _outer_broadcasts(candidate, inner):
        return projected
    smaller = sum(map(itemsize, projected)) < sum(map(itemsize, buffers))
    return projected if smaller else buffers


def _outer_broadcasts(candidate: Candidate, inner: Expr) -> list[TensorView]:
    """Broadcasts whose flags are the inner reduction's iteration dimensions
    (getOuterBroadcastTvs)."""
    mask = tuple(not d.is_reduction for d in inner.tensor_outputs()[0].domain)
    return [e.tensor_outputs()[0] for e in candidate.exprs
            if e.op is OpType.broadcast and tuple(e.attr("is_broadcast_dim")) == mask]


def _register_order(candidate: Candidate, inner: Expr, buffers: list[TensorView]) -> list[int]:
    """The order buffers move from shared memory to registers (sortProjectableBufferInputs):
    those no outer broadcast tensor is computed from first, each part in its own order."""
    feeding: set[int] = set()
    for tensor in _outer_broadcasts(candidate, inner):
        feeding |= _computed_from(candidate, tensor)
    return sorted(range(len(buffers)), key=lambda index: buffers[index].uid in feeding)


def _computed_from(candidate: Candidate, tensor: TensorView) -> set[int]:
    """Uids of the tensors ``tensor`` is computed from in the segment, itself included."""
    found: set[int] = set()
    stack = [tensor]
    while stack:
        value = stack.pop()
        if value.uid in found:
            continue
        found.add(value.uid)
        producer = candidate.definition(value)
        if producer is not None and candidate.contains(producer):
            stack.extend(producer.tensor_inputs())
    return found


def _iteration_bytes(expr: Expr, ctx: ScheduleContext) -> int | None:
    """partialOuterReductionBufferSizeBit's term: the outer reduction's iteration extent."""
    out = expr.tensor_outputs()[0]
    size = 1
    for domain in out.domain:
        if domain.is_reduction or domain.is_broadcast:
            continue
        extent = ctx.runtime.extent(domain.extent)
        if extent is None:
            return None
        size *= extent
    return size * itemsize(out)


def _round_up_shared(size: int, element: int, vectorize: int) -> int:
    """roundUpSharedMemory: the largest buffer any block size in the range would allocate."""
    after_vectorize = size // element // vectorize
    return max(-(-after_vectorize // threads) * vectorize * threads * element
               for threads in range(THREADS_MIN, THREADS_MAX + 1, WARP))


def _aligned(size: int) -> int:
    return -(-size // SMEM_ALIGNMENT) * SMEM_ALIGNMENT
