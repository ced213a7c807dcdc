"""Settle a mismatch with a float64 reference: which side, executor or eager torch, is wrong?

Over the mismatching elements, the mean distance of each side to the float64 reference decides.
If the executor is clearly nearer, eager torch is the inaccurate one (a bfloat16 eager op rounding
where the fused kernel accumulates in float32) and the output counts as a match.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import torch

from fusecli.compare.elements import Kind, element_errors, pair_kind
from fusecli.compare.format import format_float, format_shape
from fusecli.compare.tolerance import dtype_name

# Mean distances to the float64 reference within this relative margin of each other are a tie:
# two correct implementations differ in rounding by about that much.
TIE_MARGIN = 0.1


class Closer(str, enum.Enum):
    """Which side of a mismatch is nearer the float64 reference; equal to its string value."""

    EXECUTOR = "executor"  # eager torch is the inaccurate one: the output counts as a match
    REFERENCE = "reference"  # eager torch is nearer: a genuine mismatch
    TIE = "tie"  # both equally far: undecided, still a mismatch

    def __str__(self) -> str:
        return self.value


CLOSER_SUMMARY: dict[Closer, str] = {
    Closer.EXECUTOR: "float64 reference sides with the executor: eager torch is inaccurate",
    Closer.REFERENCE: "float64 reference sides with eager torch",
    Closer.TIE: "float64 reference: executor and eager torch equally far",
}


def _mean_distance(distance: torch.Tensor) -> float:
    # Infinite entries (a NaN or an infinity where the reference has a number) make it infinite.
    return float(distance.mean().item())


@dataclass(frozen=True, slots=True)
class Verdict:
    closer: Closer | None
    note: str | None


def float64_verdict(
    actual: torch.Tensor,
    expected: torch.Tensor,
    reference: torch.Tensor,
    mismatch: torch.Tensor,
) -> Verdict:
    if reference.shape != actual.shape:
        return Verdict(
            None,
            f"float64 reference has shape {format_shape(tuple(reference.shape))}: not used",
        )
    actual_kind = pair_kind(actual.dtype, reference.dtype)
    expected_kind = pair_kind(expected.dtype, reference.dtype)
    if Kind.PACKED in (actual_kind, expected_kind) or None in (actual_kind, expected_kind):
        return Verdict(None, f"float64 reference of dtype {dtype_name(reference.dtype)}: not used")

    actual_distance = _mean_distance(
        element_errors(actual, reference, actual_kind).abs_err[mismatch]
    )
    eager_distance = _mean_distance(
        element_errors(expected, reference, expected_kind).abs_err[mismatch]
    )
    distances = (
        f"mean distance {format_float(actual_distance)} (executor) vs "
        f"{format_float(eager_distance)} (eager) over the {int(mismatch.sum())} mismatching "
        "elements"
    )
    if math.isclose(actual_distance, eager_distance, rel_tol=TIE_MARGIN):
        return Verdict(
            Closer.TIE,
            f"executor and eager torch are equally far from the float64 reference ({distances})",
        )
    if actual_distance < eager_distance:
        return Verdict(
            Closer.EXECUTOR,
            f"eager torch is further from the float64 reference than the executor ({distances}): "
            "counted as a match",
        )
    return Verdict(
        Closer.REFERENCE,
        f"the executor is further from the float64 reference than eager torch ({distances})",
    )
