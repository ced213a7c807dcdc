"""outer_persistent: persistent kernels for reductions over outer dimensions
(batch norm style).

Rules: see `normalization.py`.
"""

from __future__ import annotations

from fusecli.segment.candidate import Candidate
from fusecli.segment.rules import ScheduleContext, Verdict
from fusecli.segment.schedulers.normalization import (
    compile_time_persistent,
    run_time_persistent,
)

NAME = "outer_persistent"


TOO_LARGE = "not enough registers for persistence"


def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    return compile_time_persistent(NAME, candidate, ctx)


def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    return run_time_persistent(NAME, candidate, ctx, TOO_LARGE)
