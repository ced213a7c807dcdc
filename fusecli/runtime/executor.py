"""The executor protocol, the one registry of executors, and fallback done once around them.

An executor runs one segment of a fusion: ``attempt(segment, env, ctx)`` reads the segment's
inputs from ``env``, writes its outputs there, and returns None; or it returns why it cannot
run that segment (no generator for its scheduler, a kernel that failed to compile, tensors on
the wrong device...) and leaves ``env`` alone. ``run_segment`` is the only place that acts on
a refusal: the ATen executor runs the segment instead and the reason is kept (reports show it
as the segment's fallback), or, under ``strict``, the refusal is an error (exit 3). Segments
whose scheduler runs on ATen by design (expr_eval, matmul, no_op: cuBLAS and cuDNN, as in
nvFuser) are not fallbacks, and ``strict`` lets them be.

Fault injection (``FUSECLI_INJECT_FAULT``) is routed here too: an executor that cannot compute
a faulted op wrongly itself (``injects_faults`` False) is not asked to run a segment naming
one, so every path through the executors computes the faulted ops wrongly, and only those.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from fusecli.codegen import ATEN_SCHEDULERS
from fusecli.errors import PipelineError
from fusecli.runtime.parts import kernel_parts
from fusecli.segment.result import Segment

if TYPE_CHECKING:
    from fusecli.codegen import Kernel
    from fusecli.runtime.context import ExecutionContext

Env = MutableMapping[int, object]


class Executor(Protocol):
    """What runs segments: ``attempt`` runs one, or says why it cannot."""

    name: str
    injects_faults: bool  # computes FUSECLI_INJECT_FAULT's ops wrongly itself

    def attempt(self, segment: Segment, env: Env, ctx: ExecutionContext) -> str | None: ...


@dataclass(frozen=True, slots=True)
class SegmentOutcome:
    """How a segment ran: ``executor`` is the name of the one that ran it; ``fallback`` says
    why the executor asked for did not; ``kernel`` is the generated kernel, if one ran."""

    executor: str
    fallback: str | None = None
    kernel: Kernel | None = None
    launch: object = None  # the kernel's planned warm launch (runtime.launch.Launch), if any
    # a segment run as parts (runtime.parts): each part and how it ran, in order
    parts: tuple[tuple[Segment, SegmentOutcome], ...] = ()


def run_segment(
    executor: Executor,
    segment: Segment,
    env: Env,
    ctx: ExecutionContext,
    *,
    fallback: Executor,
    strict: bool = False,
    declined: str | None = None,
) -> SegmentOutcome:
    """Run ``segment`` on ``executor``; where it declines (or ``declined`` says it cannot be
    asked), on ``fallback``, keeping the reason, unless ``strict`` makes that an error."""
    reason = declined or _faults_elsewhere(executor, segment, ctx)
    if reason is None and executor is not fallback:
        reason = executor.attempt(segment, env, ctx)
        if reason is None:
            return SegmentOutcome(executor.name, None, getattr(executor, "last_kernel", None),
                                  getattr(executor, "last_launch", None))
        parts = kernel_parts(segment) if getattr(executor, "last_splittable", False) else None
        if parts is not None:
            return _run_parts(executor, parts, env, ctx, fallback, strict)
    if reason is not None and strict and segment.scheduler not in ATEN_SCHEDULERS:
        raise PipelineError(
            f"segment {segment.id} ({segment.scheduler}) has no CUDA kernel: {reason}"
        )
    refused = fallback.attempt(segment, env, ctx)
    if refused is not None:  # the fallback runs everything: this is a bug, say so
        raise PipelineError(f"segment {segment.id}: the {fallback.name} executor refused it: "
                            f"{refused}")
    return SegmentOutcome(fallback.name, reason)


def _run_parts(executor: Executor, parts: tuple[Segment, ...], env: Env, ctx: ExecutionContext,
               fallback: Executor, strict: bool) -> SegmentOutcome:
    """A segment without a kernel of its own, run as ``parts`` (``runtime.parts``): on
    ``executor`` where every part ran there, else on the fallback, naming the first part's
    reason."""
    ran = tuple((part, run_segment(executor, part, env, ctx, fallback=fallback, strict=strict))
                for part in parts)
    reasons = [f"part {index} ({part.scheduler}): {outcome.fallback}"
               for index, (part, outcome) in enumerate(ran)
               if outcome.fallback is not None and part.scheduler not in ATEN_SCHEDULERS]
    if reasons:
        return SegmentOutcome(fallback.name, reasons[0], parts=ran)
    return SegmentOutcome(executor.name, None, parts=ran)


def _faults_elsewhere(executor: Executor, segment: Segment, ctx: ExecutionContext) -> str | None:
    if not ctx.faults or executor.injects_faults:
        return None
    faulty = sorted({e.op.value for e in segment.exprs} & ctx.faults)
    return f"fault injection names {', '.join(faulty)}" if faulty else None
