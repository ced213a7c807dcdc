"""inner_outer_persistent: persistent kernels for inner and outer reductions of one
input together (norm backward).

Rules: see `normalization.py`.
"""

from __future__ import annotations

from fusecli.segment.candidate import Candidate
from fusecli.segment.rules import ScheduleContext, Verdict
from fusecli.segment.schedulers.normalization import (
    compile_time_persistent,
    run_time_persistent,
)

NAME = "inner_outer_persistent"


TOO_LARGE = "not enough registers or shared memory for persistence"


def compile_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    return compile_time_persistent(NAME, candidate, ctx)


def run_time(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    return run_time_persistent(NAME, candidate, ctx, TOO_LARGE)
