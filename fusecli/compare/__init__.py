"""Compare executor outputs with the reference: by default against the float64 reference within
a bound from error analysis (``analytic``), or against eager torch with nvFuser-style tolerances
by dtype and reduction size (``tolerance``, ``--tolerance loose``)."""

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
