"""The scheduler registry: one module per scheduler, tried in the rule profile's order.

Each module has ``NAME`` and ``can_schedule(candidate, ctx) -> Verdict``. ``propose`` runs
nvFuser's common checks before each scheduler except expr_eval, as Schedule::canSchedule does,
and stops at the first acceptance.
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
            return Verdict.reject(name, reason)
    return REGISTRY[name].can_schedule(candidate, ctx)


def propose(candidate: Candidate, ctx: ScheduleContext) -> tuple[str | None, list[Verdict]]:
    """The first scheduler in profile order that accepts, with every verdict up to it."""
    verdicts = []
    for name in ctx.order:
        verdict = check(name, candidate, ctx)
        verdicts.append(verdict)
        if verdict.accepted:
            return name, verdicts
    return None, verdicts
