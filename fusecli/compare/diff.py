"""Compare one output tensor of an executor against eager torch, and optionally a float64 reference.

Statistics are computed on the CPU in float64 (complex128 for complex values), whatever the device
and dtype of the inputs. Equality follows ``torch.allclose``: an element matches when
``|actual - expected| <= atol + rtol * |expected|``; NaN matches NaN and an infinity matches the
same infinity. Integers and booleans compare exactly. A NaN or infinity where the other side has
something else is an unbounded error: it counts as a mismatch and makes ``max_abs_err`` infinite.
A mismatch is settled by a float64 reference when one is given (``fusecli.compare.float64``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from fusecli.compare.elements import (
    COMPUTE_DTYPE,
    Kind,
    PythonScalar,
    element_errors,
    element_value,
    pair_kind,
    unravel,
)
from fusecli.compare.float64 import CLOSER_SUMMARY, Closer, Verdict, float64_verdict
from fusecli.compare.format import format_float, format_shape, format_value, json_number
from fusecli.compare.tolerance import Tolerance, dtype_name

JUDGED_AGAINST_FLOAT64 = (
    "judged against the float64 reference (analytic bound); errors shown against eager torch"
)


def _relative_floor(tolerance: Tolerance, expected_dtype: torch.dtype) -> float:
    """The smallest denominator of a relative error, so that an expected 0 does not explode."""
    if tolerance.atol > 0:
        return tolerance.atol
    if expected_dtype.is_floating_point or expected_dtype.is_complex:
        return torch.finfo(expected_dtype).eps
    return 1.0


@dataclass(frozen=True, slots=True)
class OutputDiff:
    """The outcome of comparing one output; ``ok`` says whether it counts as a match."""

    ok: bool
    dtype_ok: bool
    shape_ok: bool
    strides_ok: bool  # True unless strides were checked and differ
    actual_dtype: str  # torch short names: "bfloat16", "float32"
    expected_dtype: str
    actual_shape: tuple[int, ...]
    expected_shape: tuple[int, ...]
    compared: bool  # False when no elementwise comparison was possible (shapes differ)
    max_abs_err: float  # float64; 0.0 when exact, inf for a NaN/inf mismatch, nan if not compared
    max_rel_err: float  # |actual - expected| / max(|expected|, floor), floor atol (or eps)
    mismatch_count: int  # elements outside atol + rtol * |expected|, NaN and inf ones included
    numel: int
    worst_index: tuple[int, ...] | None  # a mismatching element with the largest error
    worst_actual: PythonScalar | None
    worst_expected: PythonScalar | None
    nan_mismatch: int  # positions where exactly one side is NaN
    inf_mismatch: int  # positions without NaN where an infinity on either side is not matched
    closer_to_float64: Closer | None  # None without a float64 reference or when values match
    tolerance: Tolerance
    actual_strides: tuple[int, ...] | None = None  # only when strides were checked
    expected_strides: tuple[int, ...] | None = None
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line for a human, e.g. ``max abs 3.2e-02 at (1, 5): 0.51 vs 0.54; 12/4096 ...``."""
        parts: list[str] = []
        if not self.shape_ok:
            parts.append(
                f"shape {format_shape(self.actual_shape)} vs expected "
                f"{format_shape(self.expected_shape)}"
            )
        if not self.dtype_ok:
            parts.append(f"dtype {self.actual_dtype} vs expected {self.expected_dtype}")
        if not self.strides_ok and self.actual_strides is not None:
            expected_strides = (
                "?" if self.expected_strides is None else format_shape(self.expected_strides)
            )
            parts.append(
                f"strides {format_shape(self.actual_strides)} vs expected {expected_strides}"
            )
        if self.compared:
            parts.extend(self._value_summary())
        if self.closer_to_float64 is not None:
            parts.append(CLOSER_SUMMARY[self.closer_to_float64])
        return "; ".join(parts)

    def _value_summary(self) -> list[str]:
        if self.numel == 0:
            return [f"empty, shape {format_shape(self.actual_shape)}"]
        if self.worst_index is None:
            return [f"exact match, {self.numel} elements"]
        worst = (
            f"{format_shape(self.worst_index)}: {format_value(self.worst_actual)} vs "
            f"{format_value(self.worst_expected)}"
        )
        parts = [f"max abs {format_float(self.max_abs_err)} at {worst}"]
        if self.tolerance.exact:
            parts.append(f"{self.mismatch_count}/{self.numel} differ (exact compare)")
        else:
            rtol, atol = self.tolerance.rtol, self.tolerance.atol
            parts.append(
                f"{self.mismatch_count}/{self.numel} outside "
                f"rtol={format_float(rtol)} atol={format_float(atol)}"
            )
        if self.nan_mismatch:
            parts.append(f"NaN differs at {self.nan_mismatch}")
        if self.inf_mismatch:
            parts.append(f"inf differs at {self.inf_mismatch}")
        return parts

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict: non-finite max errors become None with ``errors_nonfinite`` set."""
        errors_finite = math.isfinite(self.max_abs_err) and math.isfinite(self.max_rel_err)
        return {
            "ok": self.ok,
            "dtype": self.actual_dtype,
            "expected_dtype": self.expected_dtype,
            "shape": list(self.actual_shape),
            "expected_shape": list(self.expected_shape),
            "dtype_ok": self.dtype_ok,
            "shape_ok": self.shape_ok,
            "strides_ok": self.strides_ok,
            "compared": self.compared,
            "max_abs_err": self.max_abs_err if math.isfinite(self.max_abs_err) else None,
            "max_rel_err": self.max_rel_err if math.isfinite(self.max_rel_err) else None,
            "errors_nonfinite": self.compared and not errors_finite,
            "mismatch_count": self.mismatch_count,
            "numel": self.numel,
            "worst_index": None if self.worst_index is None else list(self.worst_index),
            "worst_actual": json_number(self.worst_actual),
            "worst_expected": json_number(self.worst_expected),
            "nan_mismatch": self.nan_mismatch,
            "inf_mismatch": self.inf_mismatch,
            "closer_to_float64": (
                None if self.closer_to_float64 is None else self.closer_to_float64.value
            ),
            "rtol": self.tolerance.rtol,
            "atol": self.tolerance.atol,
            "tolerance_source": self.tolerance.source,
            "notes": list(self.notes),
        }


def _on_device(tensor: torch.Tensor, role: str, device: torch.device) -> torch.Tensor:
    """``tensor`` where the comparison runs: the device of eager torch's output (a GPU's memory
    and speed for a GPU run; nothing copied to the host but the few values reported)."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{role} must be a torch.Tensor, got {type(tensor).__name__}")
    return tensor.detach().to(device).resolve_conj().resolve_neg()


def _strides_ok(
    actual: torch.Tensor, expected_strides: tuple[int, ...] | None, shape_ok: bool
) -> bool:
    if expected_strides is None:  # strides not checked
        return True
    if not shape_ok or len(expected_strides) != actual.dim():
        return False
    # The stride of a dimension of size 0 or 1 never changes which memory is read.
    return all(
        size <= 1 or stride == wanted
        for size, stride, wanted in zip(actual.shape, actual.stride(), expected_strides)
    )


SLACK = 1 + 2.0**-4  # the error analysis is first order: room for its second-order terms


def flip_allowance(numel: int) -> int:
    """How many elements may differ from eager torch beyond the float32 bound: a rounding to a
    narrower dtype that the two sides make from float32 values a few ulp apart lands in
    different bins now and then (rarely: with probability about the distance over the bin)."""
    return 2 + numel // 64


def bounded_mismatch(
    actual: torch.Tensor,
    against_eager,
    against_exact,
    bounds: tuple[torch.Tensor, torch.Tensor],
) -> tuple[torch.Tensor, str | None]:
    """The elements that fail the error analysis's bounds, and a note when the systematic test
    is what fails.

    An element fails when it is farther from the float64 value than its ``hard`` bound (every
    rounding counted). And the output fails as a whole when more elements than
    ``flip_allowance`` are farther from eager torch than twice their ``tight`` bound (each side's
    float32 roundings): a correct executor rounds where eager torch does, so beyond that it
    differs from it only at rare flips, while a systematic error shifts nearly every element.
    An element where both sides give the same NaN or infinity matches.
    """
    hard, tight = (b.to(device=actual.device, dtype=torch.float64) for b in bounds)
    tiny = torch.finfo(actual.dtype).smallest_normal if actual.is_floating_point() else 0.0
    same_special = ~against_eager.differs & ~torch.isfinite(actual.to(torch.float64))
    beyond_hard = (against_exact.abs_err > SLACK * hard + tiny) | against_exact.nan_mismatch
    beyond_hard = (beyond_hard | against_exact.inf_mismatch) & ~same_special
    deviates = against_eager.abs_err > 2 * SLACK * tight + tiny
    count, allowed = int(deviates.sum()), flip_allowance(actual.numel())
    if count <= allowed:
        return beyond_hard, None
    note = (
        f"{count} of {actual.numel()} elements differ from eager torch by more than float32 "
        f"rounding allows (rounding flips explain at most {allowed}): a systematic error"
    )
    return beyond_hard | deviates, note


IDENTICAL = "bit for bit eager torch's: no tolerance needed"


def identical_diff(actual: object, expected: object) -> OutputDiff | None:
    """The diff of an output that is eager torch's bit for bit, or None.

    The usual case on the CPU, where the executor and the reference both run torch: it is
    settled in one pass over memory, without per-element errors and without the float64
    reference (an executor that rounds exactly as eager torch does is within any bound eager
    torch is). Any difference, NaNs included (NaN is unequal to itself), returns None: the full
    comparison decides.
    """
    if not (isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor)):
        return None
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return None
    if actual.device != expected.device:
        return None
    try:
        if not torch.equal(actual, expected):
            return None
    except (RuntimeError, TypeError):  # dtypes torch.equal does not support (packed floats)
        return None
    return OutputDiff(
        ok=True, compared=True, max_abs_err=0.0, max_rel_err=0.0, mismatch_count=0,
        worst_index=None, worst_actual=None, worst_expected=None, nan_mismatch=0,
        inf_mismatch=0, closer_to_float64=None, notes=(), dtype_ok=True, shape_ok=True,
        strides_ok=True, actual_dtype=dtype_name(actual.dtype),
        expected_dtype=dtype_name(expected.dtype), actual_shape=tuple(actual.shape),
        expected_shape=tuple(expected.shape), numel=actual.numel(),
        tolerance=Tolerance(0.0, 0.0, IDENTICAL), actual_strides=None, expected_strides=None,
    )


def compare_tensors(
    actual: torch.Tensor,
    expected: torch.Tensor,
    *,
    float64_reference: torch.Tensor | None = None,
    tolerance: Tolerance,
    check_strides: bool = False,
    expected_strides: tuple[int, ...] | list[int] | None = None,
    against_float64: bool = False,
    bounds: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> OutputDiff:
    """Compare an executor's output ``actual`` against eager torch's ``expected``.

    ``float64_reference``, the same computation in float64, settles value mismatches: see
    ``Closer``. With ``check_strides``, the strides of ``actual`` must equal ``expected_strides``
    (by default those of ``expected``) in every dimension of size above 1.

    With ``against_float64`` (the analytic tolerance), floating-point values are judged against
    ``float64_reference`` itself within ``tolerance``; the reported errors (``max_abs_err``...)
    stay against eager torch, dtype, shape and strides still come from ``expected``, and integer
    or boolean outputs still compare exactly with eager torch. With ``bounds`` (the per-element
    ``hard`` and ``tight`` bounds of the error analysis, ``fusecli.reference.bounds``) instead
    of ``tolerance``'s two numbers: ``bounded_mismatch``.
    """
    actual_strides = wanted_strides = None
    if check_strides:
        actual_strides = tuple(actual.stride())
        if expected_strides is None:
            expected_strides = expected.stride()
        wanted_strides = tuple(expected_strides)
    device = expected.device if isinstance(expected, torch.Tensor) else torch.device("cpu")
    actual = _on_device(actual, "actual", device)
    expected = _on_device(expected, "expected", device)

    shape_ok = actual.shape == expected.shape
    dtype_ok = actual.dtype == expected.dtype
    strides_ok = _strides_ok(actual, wanted_strides, shape_ok)
    notes: list[str] = []
    kind = pair_kind(actual.dtype, expected.dtype) if shape_ok else None
    if not shape_ok:
        notes.append("shapes differ: values not compared")
    elif kind is None:
        notes.append(
            f"{dtype_name(actual.dtype)} and {dtype_name(expected.dtype)} cannot be compared "
            "elementwise: values not compared"
        )
    elif not dtype_ok:
        notes.append(f"dtypes differ: values compared as {dtype_name(COMPUTE_DTYPE[kind])}")

    fields: dict[str, Any] = {
        "dtype_ok": dtype_ok,
        "shape_ok": shape_ok,
        "strides_ok": strides_ok,
        "actual_dtype": dtype_name(actual.dtype),
        "expected_dtype": dtype_name(expected.dtype),
        "actual_shape": tuple(actual.shape),
        "expected_shape": tuple(expected.shape),
        "numel": actual.numel(),
        "tolerance": tolerance,
        "actual_strides": actual_strides,
        "expected_strides": wanted_strides,
    }
    if kind is None:
        return OutputDiff(
            ok=False,
            compared=False,
            max_abs_err=math.nan,
            max_rel_err=math.nan,
            mismatch_count=0,
            worst_index=None,
            worst_actual=None,
            worst_expected=None,
            nan_mismatch=0,
            inf_mismatch=0,
            closer_to_float64=None,
            notes=tuple(notes),
            **fields,
        )

    errors = judged = element_errors(actual, expected, kind)
    judged_kind = kind
    if against_float64 and float64_reference is not None and kind in (Kind.REAL, Kind.COMPLEX):
        reference = _on_device(float64_reference, "float64_reference", device)
        if reference.shape == expected.shape:
            judged_kind = pair_kind(actual.dtype, reference.dtype)
            judged = element_errors(actual, reference, judged_kind)
            float64_reference = None  # the judge itself: no tie-break
            notes.append(JUDGED_AGAINST_FLOAT64)
    if bounds is not None and judged is not errors and judged_kind is Kind.REAL:
        mismatch, note = bounded_mismatch(actual, errors, judged, bounds)
        if note:
            notes.append(note)
    elif judged_kind is Kind.EXACT or judged_kind is Kind.PACKED or tolerance.exact:
        mismatch = judged.differs
    else:
        allowed = tolerance.atol + tolerance.rtol * judged.expected_magnitude
        mismatch = (judged.abs_err > allowed) | judged.nan_mismatch | judged.inf_mismatch
    mismatch_count = int(mismatch.sum())

    max_abs_err = max_rel_err = 0.0
    worst_index = worst_actual = worst_expected = None
    if actual.numel() > 0 and (mismatch_count or bool(errors.differs.any())):
        floor = _relative_floor(tolerance, expected.dtype)
        rel_err = errors.abs_err / errors.expected_magnitude.clamp(min=floor)
        max_abs_err = float(errors.abs_err.max())
        max_rel_err = float(rel_err.max())
        # Point at the worst element that fails; when none fails, at the largest difference.
        candidates = mismatch if mismatch_count else errors.differs
        score = torch.where(candidates, errors.abs_err.nan_to_num(nan=math.inf), -1.0)
        worst_index = unravel(int(score.reshape(-1).argmax()), tuple(actual.shape))
        worst_actual = element_value(actual, worst_index)
        worst_expected = element_value(expected, worst_index)

    verdict = Verdict(None, None)
    if float64_reference is not None and mismatch_count:
        reference = _on_device(float64_reference, "float64_reference", device)
        verdict = float64_verdict(actual, expected, reference, mismatch)
    if verdict.note is not None:
        notes.append(verdict.note)

    values_ok = mismatch_count == 0 or verdict.closer is Closer.EXECUTOR
    return OutputDiff(
        ok=dtype_ok and shape_ok and strides_ok and values_ok,
        compared=True,
        max_abs_err=max_abs_err,
        max_rel_err=max_rel_err,
        mismatch_count=mismatch_count,
        worst_index=worst_index,
        worst_actual=worst_actual,
        worst_expected=worst_expected,
        nan_mismatch=int(errors.nan_mismatch.sum()),
        inf_mismatch=int(errors.inf_mismatch.sum()),
        closer_to_float64=verdict.closer,
        notes=tuple(notes),
        **fields,
    )
