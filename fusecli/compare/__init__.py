"""Compare executor outputs with the reference: by default element by element against the
float64 reference and eager torch within the bounds of a running error analysis
(``analytic``: ``fusecli.reference.bounds`` computes them, ``diff.bounded_mismatch`` judges), or
against eager torch with nvFuser-style tolerances by dtype and reduction size (``tolerance``,
``--tolerance loose``)."""

from __future__ import annotations

from fusecli.compare.diff import OutputDiff, compare_tensors
from fusecli.compare.float64 import TIE_MARGIN, Closer
from fusecli.compare.tolerance import Tolerance, dtype_name, tolerance_for

__all__ = [
    "TIE_MARGIN",
    "Closer",
    "OutputDiff",
    "Tolerance",
    "compare_tensors",
    "dtype_name",
    "tolerance_for",
]
