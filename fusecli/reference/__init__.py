"""The reference: a fusion evaluated op by op in eager torch, the answer outputs are diffed against.

``run_reference(fusion, inputs)`` returns a ``ReferenceResult``; ``float64=True`` evaluates every
floating-point value in float64 to settle which side of a mismatch is more accurate.
"""

from fusecli.reference.interpreter import (
    ReferenceError,
    ReferenceInputError,
    ReferenceResult,
    run_reference,
)
from fusecli.reference.rules import RULES

__all__ = ["RULES", "ReferenceError", "ReferenceInputError", "ReferenceResult", "run_reference"]
