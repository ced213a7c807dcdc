"""fusecli.compare: tolerances by dtype and reduction size, and one output diffed against eager."""

from __future__ import annotations

import json
import math

import pytest
import torch

from fusecli.compare import Closer, OutputDiff, Tolerance, compare_tensors, tolerance_for

FLOAT32 = tolerance_for(torch.float32)
BFLOAT16 = tolerance_for(torch.bfloat16)


def _json_roundtrip(diff: OutputDiff) -> dict:
    # allow_nan=False: the JSON contract forbids NaN and Infinity literals.
    return json.loads(json.dumps(diff.to_json(), allow_nan=False))


# --- tolerance_for -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "rtol", "atol"),
    [
        (torch.float64, 1e-7, 1e-7),
        (torch.float32, 1.3e-6, 1e-5),
        (torch.float16, 1e-3, 1e-5),
        (torch.bfloat16, 1.6e-2, 1e-5),
        (torch.complex64, 1.3e-6, 1e-5),
        (torch.complex128, 1e-7, 1e-7),
        (torch.float8_e4m3fn, 0.125, 2**-6),
    ],
)
def test_base_tolerance_by_dtype(dtype: torch.dtype, rtol: float, atol: float) -> None:
    tolerance = tolerance_for(dtype)
    assert (tolerance.rtol, tolerance.atol) == (rtol, atol)
    assert not tolerance.exact


@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.int64, torch.uint8])
def test_integers_and_bool_are_exact_at_any_reduction_size(dtype: torch.dtype) -> None:
    for reduction_size in (1, 7, 1 << 20):
        tolerance = tolerance_for(dtype, reduction_size)
        assert tolerance.exact
        assert "exactly" in tolerance.source


def test_tolerance_grows_with_reduction_size() -> None:
    sizes = [1, 2, 16, 1024, 1 << 20]
    tolerances = [tolerance_for(torch.float32, size) for size in sizes]
    for smaller, larger in zip(tolerances, tolerances[1:]):
        assert larger.atol > smaller.atol
        assert larger.rtol > smaller.rtol
    # atol grows with sqrt(n), rtol with 1 + log2(n).
    assert tolerance_for(torch.float32, 4096).atol == pytest.approx(1e-5 * 64)
    assert tolerance_for(torch.float32, 4096).rtol == pytest.approx(1.3e-6 * 13)
    assert "reduction of 4096 elements" in tolerance_for(torch.float32, 4096).source
    # An empty reduction rounds nothing.
    assert tolerance_for(torch.float32, 0) == tolerance_for(torch.float32, 1)


def test_reduction_tolerance_accepts_what_an_elementwise_one_rejects() -> None:
    expected = torch.full((8,), 3.0)
    actual = expected + 2e-4  # accumulated rounding of a 4096-element sum, say
    elementwise = compare_tensors(actual, expected, tolerance=tolerance_for(torch.float32))
    reduction = compare_tensors(actual, expected, tolerance=tolerance_for(torch.float32, 4096))
    assert not elementwise.ok and elementwise.mismatch_count == 8
    assert reduction.ok and reduction.mismatch_count == 0


def test_user_overrides_replace_one_bound_each_and_are_recorded() -> None:
    only_rtol = tolerance_for(torch.bfloat16, 64, rtol=0.5)
    assert only_rtol.rtol == 0.5
    assert only_rtol.atol == pytest.approx(1e-5 * 8)
    assert "rtol set by the user" in only_rtol.source
    assert "atol" not in only_rtol.source.split("; ")[-1]
    both = tolerance_for(torch.float32, rtol=0.0, atol=0.0)
    assert both.exact


def test_tolerance_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="reduction_size"):
        tolerance_for(torch.float32, -1)
    with pytest.raises(ValueError, match="rtol"):
        tolerance_for(torch.float32, rtol=-1.0)
    with pytest.raises(ValueError, match="qint8"):
        tolerance_for(torch.qint8)


def test_tolerance_is_a_frozen_value() -> None:
    tolerance = Tolerance(rtol=1.0, atol=2.0, source="test")
    with pytest.raises(AttributeError):
        tolerance.rtol = 3.0  # type: ignore[misc]


# --- compare_tensors: values ---------------------------------------------------------------------


def test_identical_tensors_match_exactly() -> None:
    values = torch.randn(16, 32, generator=torch.Generator().manual_seed(0))
    diff = compare_tensors(values, values.clone(), tolerance=FLOAT32)
    assert diff.ok and diff.compared
    assert diff.max_abs_err == 0.0 and diff.max_rel_err == 0.0
    assert diff.mismatch_count == 0 and diff.numel == 512
    assert diff.worst_index is None and diff.worst_actual is None
    assert diff.closer_to_float64 is None
    assert diff.summary() == "exact match, 512 elements"


def test_small_perturbation_within_tolerance_is_ok() -> None:
    expected = torch.randn(64, 64, generator=torch.Generator().manual_seed(1))
    actual = expected * (1 + 4e-7)
    diff = compare_tensors(actual, expected, tolerance=FLOAT32)
    assert diff.ok
    assert diff.mismatch_count == 0
    assert 0.0 < diff.max_abs_err < 1e-5
    assert diff.worst_index is not None  # the largest difference, though within tolerance
    assert "0/4096 outside" in diff.summary()


def test_large_perturbation_reports_worst_element_and_count() -> None:
    expected = torch.randn(64, 64, generator=torch.Generator().manual_seed(2))
    actual = expected.clone()
    actual[3, 7] += 0.5
    actual[10, 2] += 0.25
    actual[20, 20] += 1e-3
    diff = compare_tensors(actual, expected, tolerance=FLOAT32)
    assert not diff.ok
    assert diff.mismatch_count == 3
    assert diff.worst_index == (3, 7)
    assert diff.worst_actual == actual[3, 7].item()
    assert diff.worst_expected == expected[3, 7].item()
    exact_err = abs(actual[3, 7].double() - expected[3, 7].double()).item()
    assert diff.max_abs_err == exact_err
    assert diff.max_rel_err >= exact_err / max(abs(expected[3, 7].item()), 1e-5) * (1 - 1e-12)
    assert "at (3, 7)" in diff.summary() and "3/4096 outside" in diff.summary()


def test_summary_line_format() -> None:
    expected = torch.full((2, 6), 0.5625, dtype=torch.bfloat16)
    actual = expected.clone()
    actual[1, 5] = 0.5
    diff = compare_tensors(actual, expected, tolerance=BFLOAT16)
    assert diff.summary() == (
        "max abs 6.2e-02 at (1, 5): 0.5 vs 0.5625; 1/12 outside rtol=1.6e-02 atol=1e-05"
    )


def test_worst_index_is_the_worst_failing_element_not_the_largest_difference() -> None:
    expected = torch.tensor([1000.0, 0.01])
    actual = torch.tensor([1000.5, 0.02])  # 0.5 is within rtol=1e-3 of 1000; 0.01 is not
    diff = compare_tensors(actual, expected, tolerance=tolerance_for(torch.float32, rtol=1e-3))
    assert diff.mismatch_count == 1
    assert diff.worst_index == (1,)
    assert diff.max_abs_err == pytest.approx(0.5)


def test_relative_error_has_a_floor_for_zero_expected() -> None:
    diff = compare_tensors(torch.tensor([1e-3]), torch.tensor([0.0]), tolerance=FLOAT32)
    assert math.isfinite(diff.max_rel_err)
    assert diff.max_rel_err == pytest.approx(1e-3 / 1e-5, rel=1e-4)


def test_nan_in_the_same_positions_is_equal() -> None:
    expected = torch.tensor([1.0, math.nan, 3.0])
    diff = compare_tensors(expected.clone(), expected, tolerance=FLOAT32)
    assert diff.ok
    assert diff.nan_mismatch == 0 and diff.mismatch_count == 0
    assert diff.max_abs_err == 0.0


def test_nan_in_one_side_only_is_a_mismatch_with_json_safe_errors() -> None:
    expected = torch.tensor([1.0, 2.0, 3.0])
    actual = torch.tensor([1.0, math.nan, 3.0])
    diff = compare_tensors(actual, expected, tolerance=FLOAT32)
    assert not diff.ok
    assert diff.nan_mismatch == 1 and diff.mismatch_count == 1
    assert diff.worst_index == (1,)
    assert math.isinf(diff.max_abs_err)
    record = _json_roundtrip(diff)
    assert record["max_abs_err"] is None and record["max_rel_err"] is None
    assert record["errors_nonfinite"] is True
    assert record["worst_actual"] == "nan"
    assert "NaN differs at 1" in diff.summary()


def test_infinities_of_the_same_sign_are_equal() -> None:
    expected = torch.tensor([math.inf, -math.inf, 1.0])
    diff = compare_tensors(expected.clone(), expected, tolerance=FLOAT32)
    assert diff.ok and diff.inf_mismatch == 0 and diff.max_abs_err == 0.0


@pytest.mark.parametrize("actual_value", [-math.inf, 1.0e30])
def test_infinity_not_matched_is_a_mismatch(actual_value: float) -> None:
    expected = torch.tensor([math.inf, 2.0])
    actual = torch.tensor([actual_value, 2.0])
    diff = compare_tensors(actual, expected, tolerance=FLOAT32)
    assert not diff.ok
    assert diff.inf_mismatch == 1 and diff.nan_mismatch == 0 and diff.mismatch_count == 1
    assert diff.worst_index == (0,)


def test_nan_against_infinity_counts_as_nan_mismatch_only() -> None:
    diff = compare_tensors(torch.tensor([math.nan]), torch.tensor([math.inf]), tolerance=FLOAT32)
    assert (diff.nan_mismatch, diff.inf_mismatch, diff.mismatch_count) == (1, 0, 1)


def test_integers_compare_exactly_whatever_the_tolerance() -> None:
    expected = torch.arange(10, dtype=torch.int64)
    loose = tolerance_for(torch.float32, rtol=1.0, atol=1.0)
    assert compare_tensors(expected.clone(), expected, tolerance=loose).ok
    actual = expected.clone()
    actual[4] += 1
    diff = compare_tensors(actual, expected, tolerance=loose)
    assert not diff.ok
    assert diff.mismatch_count == 1 and diff.worst_index == (4,)
    assert diff.worst_actual == 5 and diff.worst_expected == 4
    assert diff.max_abs_err == 1.0


def test_large_int64_values_beyond_float64_precision_still_differ() -> None:
    expected = torch.tensor([2**53], dtype=torch.int64)
    actual = torch.tensor([2**53 + 1], dtype=torch.int64)
    diff = compare_tensors(actual, expected, tolerance=tolerance_for(torch.int64))
    assert not diff.ok and diff.mismatch_count == 1 and diff.worst_index == (0,)


def test_bool_compare() -> None:
    expected = torch.tensor([True, False, True])
    diff = compare_tensors(
        torch.tensor([True, True, True]), expected, tolerance=tolerance_for(torch.bool)
    )
    assert not diff.ok and diff.mismatch_count == 1 and diff.worst_index == (1,)
    assert diff.worst_actual is True and diff.worst_expected is False
    assert "1/3 differ (exact compare)" in diff.summary()


def test_complex_compares_the_magnitude_of_the_difference() -> None:
    expected = torch.tensor([1 + 1j, 2 - 1j], dtype=torch.complex64)
    actual = expected + torch.tensor([0.0, 3e-3 + 4e-3j], dtype=torch.complex64)
    diff = compare_tensors(actual, expected, tolerance=tolerance_for(torch.complex64))
    assert not diff.ok and diff.mismatch_count == 1 and diff.worst_index == (1,)
    assert diff.max_abs_err == pytest.approx(5e-3, rel=1e-5)
    assert isinstance(diff.worst_actual, complex)
    assert _json_roundtrip(diff)["worst_expected"] == [2.0, -1.0]
    loose = tolerance_for(torch.complex64, atol=1e-2)
    assert compare_tensors(actual, expected, tolerance=loose).ok


def test_half_precision_inputs_are_upcast_for_statistics() -> None:
    expected = torch.tensor([1.0], dtype=torch.bfloat16)
    actual = torch.tensor([1.0078125], dtype=torch.bfloat16)  # one bfloat16 ulp above 1
    diff = compare_tensors(actual, expected, tolerance=BFLOAT16)
    assert diff.ok  # one ulp is within rtol=1.6e-2
    assert diff.max_abs_err == 2**-7
    assert diff.to_json()["dtype"] == "bfloat16"


def test_empty_tensors() -> None:
    empty = torch.empty(0, 3)
    diff = compare_tensors(empty, empty.clone(), tolerance=FLOAT32)
    assert diff.ok and diff.numel == 0 and diff.mismatch_count == 0
    assert diff.worst_index is None and diff.max_abs_err == 0.0
    assert diff.summary() == "empty, shape (0, 3)"


def test_zero_dim_tensors() -> None:
    diff = compare_tensors(torch.tensor(1.0), torch.tensor(1.5), tolerance=FLOAT32)
    assert not diff.ok
    assert diff.actual_shape == ()
    assert diff.worst_index == ()
    assert (diff.worst_actual, diff.worst_expected) == (1.0, 1.5)
    assert _json_roundtrip(diff)["worst_index"] == []


# --- compare_tensors: metadata -------------------------------------------------------------------


def test_dtype_mismatch_fails_but_values_are_still_compared() -> None:
    expected = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)
    same_values = compare_tensors(expected.float(), expected, tolerance=BFLOAT16)
    assert not same_values.ok and not same_values.dtype_ok and same_values.shape_ok
    assert same_values.compared and same_values.max_abs_err == 0.0
    assert same_values.mismatch_count == 0

    diff = compare_tensors(torch.tensor([1.0, 2.5]), expected, tolerance=BFLOAT16)
    assert not diff.ok and diff.mismatch_count == 1 and diff.max_abs_err == 0.5
    record = _json_roundtrip(diff)
    assert (record["dtype"], record["expected_dtype"]) == ("float32", "bfloat16")
    assert "dtype float32 vs expected bfloat16" in diff.summary()


def test_shape_mismatch_compares_no_values() -> None:
    diff = compare_tensors(torch.zeros(2, 3), torch.zeros(3, 2), tolerance=FLOAT32)
    assert not diff.ok and not diff.shape_ok and diff.dtype_ok
    assert not diff.compared
    assert diff.mismatch_count == 0 and diff.worst_index is None
    record = _json_roundtrip(diff)
    assert record["max_abs_err"] is None and record["errors_nonfinite"] is False
    assert record["shape"] == [2, 3] and record["expected_shape"] == [3, 2]
    assert diff.summary() == "shape (2, 3) vs expected (3, 2)"


def test_strides_checked_only_when_asked() -> None:
    expected = torch.randn(6, 4)
    actual = torch.randn(4, 6).t().copy_(expected)  # same values, column-major
    assert compare_tensors(actual, expected, tolerance=FLOAT32).ok
    diff = compare_tensors(actual, expected, tolerance=FLOAT32, check_strides=True)
    assert not diff.ok and not diff.strides_ok and diff.mismatch_count == 0
    assert (diff.actual_strides, diff.expected_strides) == ((1, 6), (4, 1))
    assert "strides (1, 6) vs expected (4, 1)" in diff.summary()
    explicit = compare_tensors(
        actual, expected, tolerance=FLOAT32, check_strides=True, expected_strides=(1, 6)
    )
    assert explicit.ok


def test_strides_of_size_one_dimensions_are_ignored() -> None:
    actual = torch.randn(1, 5)
    expected = torch.as_strided(actual.clone(), (1, 5), (99, 1))
    assert compare_tensors(actual, expected, tolerance=FLOAT32, check_strides=True).ok


def test_to_json_has_the_contract_fields() -> None:
    diff = compare_tensors(torch.ones(2), torch.ones(2), tolerance=FLOAT32)
    record = _json_roundtrip(diff)
    for key in (
        "ok",
        "dtype",
        "shape",
        "max_abs_err",
        "max_rel_err",
        "mismatch_count",
        "worst_index",
    ):
        assert key in record
    assert record["ok"] is True and record["dtype"] == "float32" and record["shape"] == [2]


def test_non_tensor_input_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="actual must be a torch.Tensor"):
        compare_tensors([1.0], torch.ones(1), tolerance=FLOAT32)  # type: ignore[arg-type]


def test_diff_is_a_frozen_value() -> None:
    diff = compare_tensors(torch.ones(1), torch.ones(1), tolerance=FLOAT32)
    with pytest.raises(AttributeError):
        diff.ok = False  # type: ignore[misc]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_device_tensors_are_moved_to_cpu() -> None:
    expected = torch.randn(8, 8)
    actual = expected.cuda()
    actual[2, 3] += 1.0
    diff = compare_tensors(actual, expected, tolerance=FLOAT32)
    assert diff.worst_index == (2, 3) and diff.mismatch_count == 1


# --- the float64 tie-break -----------------------------------------------------------------------


def _row_sums() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Float64 row sums; float32 of them (the executor, accumulating in float32); the same rounded
    through bfloat16 (eager torch rounding an intermediate to bfloat16)."""
    values = torch.randn(32, 256, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    exact = values.sum(dim=1)
    float32_sum = exact.float()
    bfloat16_rounded = exact.to(torch.bfloat16).float()
    return exact, float32_sum, bfloat16_rounded


def test_float64_reference_sides_with_an_accurate_executor() -> None:
    exact, executor, eager = _row_sums()
    tolerance = tolerance_for(torch.float32, 256)
    without = compare_tensors(executor, eager, tolerance=tolerance)
    assert not without.ok and without.mismatch_count > 0
    assert without.closer_to_float64 is None

    diff = compare_tensors(executor, eager, float64_reference=exact, tolerance=tolerance)
    assert diff.closer_to_float64 is Closer.EXECUTOR
    assert diff.closer_to_float64 == "executor" and str(diff.closer_to_float64) == "executor"
    assert diff.ok
    assert diff.mismatch_count == without.mismatch_count  # the statistics still show the diff
    assert any("counted as a match" in note for note in diff.notes)
    assert _json_roundtrip(diff)["closer_to_float64"] == "executor"
    assert "eager torch is inaccurate" in diff.summary()


def test_float64_reference_sides_with_eager_torch() -> None:
    exact, accurate, rounded = _row_sums()
    tolerance = tolerance_for(torch.float32, 256)
    diff = compare_tensors(rounded, accurate, float64_reference=exact, tolerance=tolerance)
    assert diff.closer_to_float64 is Closer.REFERENCE
    assert not diff.ok


def test_float64_reference_tie_stays_a_mismatch() -> None:
    exact = torch.linspace(1.0, 2.0, 16, dtype=torch.float64)
    actual = (exact + 1e-2).float()
    expected = (exact - 1e-2).float()
    diff = compare_tensors(actual, expected, float64_reference=exact, tolerance=FLOAT32)
    assert diff.closer_to_float64 is Closer.TIE
    assert not diff.ok


def test_float64_reference_sides_with_executor_when_eager_overflows() -> None:
    exact = torch.tensor([1.0, 70000.0], dtype=torch.float64)
    executor = exact.float()
    eager = torch.tensor([1.0, math.inf])  # float16 overflowed in eager torch
    diff = compare_tensors(executor, eager, float64_reference=exact, tolerance=FLOAT32)
    assert diff.inf_mismatch == 1
    assert diff.closer_to_float64 is Closer.EXECUTOR and diff.ok


def test_float64_reference_is_unused_when_values_match() -> None:
    values = torch.ones(4)
    diff = compare_tensors(
        values, values.clone(), float64_reference=values.double() + 1, tolerance=FLOAT32
    )
    assert diff.ok and diff.closer_to_float64 is None


def test_float64_reference_does_not_excuse_a_dtype_mismatch() -> None:
    exact, executor, eager = _row_sums()
    diff = compare_tensors(
        executor.double(),
        eager,
        float64_reference=exact,
        tolerance=tolerance_for(torch.float32, 256),
    )
    assert diff.closer_to_float64 is Closer.EXECUTOR
    assert not diff.ok and not diff.dtype_ok


def test_float64_reference_of_another_shape_is_ignored_with_a_note() -> None:
    diff = compare_tensors(
        torch.ones(3), torch.zeros(3), float64_reference=torch.ones(4).double(), tolerance=FLOAT32
    )
    assert diff.closer_to_float64 is None and not diff.ok
    assert any("float64 reference has shape (4)" in note for note in diff.notes)
