"""The scheduler registry: every scheduler, tried in the rule profile's order.

A scheduler (``verdict.Scheduler``) has ``compile_time(candidate, ctx)`` (the segment's
structure) and ``run_time(candidate, ctx)`` (sizes from the actual inputs), both returning a
Verdict, and the heuristics it picks at concrete sizes. ``check`` is nvFuser's
Schedule::canSchedule: the common checks (except for expr_eval), then compile time, then run
time (which accepts what it cannot size); an acceptance at known sizes carries the heuristics.
``propose`` stops at the first acceptance.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from fusecli.segment.candidate import Candidate
from fusecli.segment.schedulers import (
    expr_eval,
    matmul,
    no_op,
    normalization,
    pointwise,
    reduction,
    resize,
    transpose,
)
from fusecli.segment.schedulers.common import common_checks
from fusecli.segment.verdict import Scheduler, Verdict

if TYPE_CHECKING:
    from fusecli.segment.rules import ScheduleContext

REGISTRY: dict[str, Scheduler] = {
    scheduler.name: scheduler
    for scheduler in (
        no_op.SCHEDULER, expr_eval.SCHEDULER, matmul.SCHEDULER, reduction.SCHEDULER,
        resize.SCHEDULER, transpose.SCHEDULER, pointwise.SCHEDULER, normalization.INNER,
        normalization.OUTER, normalization.INNER_OUTER,
    )
}


def check(name: str, candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    """One scheduler's verdict on ``candidate``, common checks included."""
    if name != "expr_eval":
        reason = common_checks(candidate, ctx, name)
        if reason:
            return Verdict.reject(name, reason, "common")
    scheduler = REGISTRY[name]
    verdict = scheduler.compile_time(candidate, ctx)
    if not verdict.accepted:
        return verdict
    verdict = scheduler.run_time(candidate, ctx)
    if not verdict.accepted or not ctx.runtime.known:
        return verdict  # without inputs (explain-segmentation) there are no sizes to pick for
    return replace(verdict, params=scheduler.params_at(candidate, ctx.runtime))


def propose(candidate: Candidate, ctx: ScheduleContext) -> tuple[str | None, list[Verdict]]:
    """The first scheduler in profile order that accepts, with every verdict up to it."""
    verdicts = []
    for name in ctx.order:
        verdict = check(name, candidate, ctx)
        verdicts.append(verdict)
        if verdict.accepted:
            return name, verdicts
    return None, verdicts
