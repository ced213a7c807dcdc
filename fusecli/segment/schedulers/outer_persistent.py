"""outer_persistent: persistent kernels for reductions over outer dimensions
(batch norm style).

Rules: see `normalization.py`.
"""

from __future__ import annotations

from fusecli.segment.candidate import Candidate
from fusecli.segment.rules import ScheduleContext, Verdict
from fusecli.segment.schedulers.normalization import can_schedule_persistent

NAME = "outer_persistent"


def can_schedule(candidate: Candidate, ctx: ScheduleContext) -> Verdict:
    too_large = "not enough registers for persistence"
    return can_schedule_persistent(NAME, candidate, ctx, too_large)
