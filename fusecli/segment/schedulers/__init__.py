"""The scheduler registry: one module per scheduler, tried in the rule profile's order.

Each module has ``NAME``, ``compile_time(candidate, ctx)`` (the segment's structure) and
``run_time(candidate, ctx)`` (sizes from the actual inputs), both returning a Verdict.
``check`` is nvFuser's Schedule::canSchedule: the common checks (except for expr_eval), then
compile time, then run time (which accepts what it cannot size); ``propose`` stops at the
first acceptance.
"""

from __future__ import annotations

from types import ModuleType

from fusecli.segment.candidate import Candidate
from fusecli.segment.rules import ScheduleContext, Verdict
from fusecli.segment.schedulers import (
    expr_eval,
    inner_outer_persistent,
    inner_persistent,
    matmul,
    no_op,
    outer_persistent,
    pointwise,
    reduction,
    resize,
    transpose,
)
from fusecli.segment.schedulers.common import common_checks

REGISTRY: dict[str, ModuleType] = {
    module.NAME: module
    for module in (
        no_op, expr_eval, matmul, reduction, resize, transpose, pointwise, inner_persistent,
        outer_persistent, inner_outer_persistent,
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
    return scheduler.run_time(candidate, ctx)


def propose(candidate: Candidate, ctx: ScheduleContext) -> tuple[str | None, list[Verdict]]:
    """The first scheduler in profile order that accepts, with every verdict up to it."""
    verdicts = []
    for name in ctx.order:
        verdict = check(name, candidate, ctx)
        verdicts.append(verdict)
        if verdict.accepted:
            return name, verdicts
    return None, verdicts
