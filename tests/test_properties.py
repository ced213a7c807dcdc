"""Properties over random fusions: the ATen executor agrees with the reference interpreter."""

from __future__ import annotations

import torch
from hypothesis import HealthCheck, given, settings

from fusecli.reference import run_reference
from fusecli.runtime import execute_fusion
from tests.random_fusions import random_fusion


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_fusion(max_steps=16))
def test_aten_executor_matches_reference(case):
    fd, inputs = case
    got = execute_fusion(fd.fusion, [t.clone() for t in inputs])
    want = run_reference(fd.fusion, [t.clone() for t in inputs]).outputs
    for actual, expected in zip(got, want, strict=True):
        assert actual.dtype == expected.dtype
        assert actual.shape == expected.shape
        assert torch.allclose(actual.double(), expected.double(), equal_nan=True,
                              rtol=1e-2, atol=1e-2)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_fusion(max_steps=8))
def test_float64_reference_keeps_shapes_and_is_close(case):
    fd, inputs = case
    plain = run_reference(fd.fusion, [t.clone() for t in inputs]).outputs
    precise = run_reference(fd.fusion, [t.clone() for t in inputs], float64=True).outputs
    for low, high in zip(plain, precise, strict=True):
        assert low.shape == high.shape
        if low.dtype.is_floating_point:
            assert high.dtype == torch.float64
