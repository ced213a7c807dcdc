"""Compare executor outputs against eager torch (and optionally float64), with nvFuser-style
tolerances by dtype and reduction size."""

from __future__ import annotations

from fusecli.compare.analytic import ErrorBudget, analytic_tolerance
from fusecli.compare.diff import OutputDiff, compare_tensors
from fusecli.compare.float64 import TIE_MARGIN, Closer
from fusecli.compare.tolerance import Tolerance, dtype_name, tolerance_for

__all__ = [
    "TIE_MARGIN",
    "Closer",
    "ErrorBudget",
    "OutputDiff",
    "Tolerance",
    "analytic_tolerance",
    "compare_tensors",
    "dtype_name",
    "tolerance_for",
]
