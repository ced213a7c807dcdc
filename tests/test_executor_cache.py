"""The executor cache (fusecli.runtime.cache): a fusion is segmented once per input signature."""

from __future__ import annotations

import warnings

import pytest
import torch

import fusecli.runtime.cache as cache
from fusecli.frontend import DataType, FusionDefinition
from fusecli.runtime.segmented import run_fusion


def _fusion():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.exp(t0), dims=[1]))
    return fd.fusion


@pytest.fixture
def segmentations(monkeypatch):
    calls = []
    original = cache.segment_fusion

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(cache, "segment_fusion", counting)
    return calls


def test_a_signature_seen_before_is_not_segmented_again(segmentations) -> None:
    fusion = _fusion()
    x = torch.randn(4, 8)
    for _ in range(5):
        _, run = run_fusion(fusion, [x], executor="aten")
        assert torch.allclose(run.outputs[0], x.exp().sum(1))
    assert len(segmentations) == 1 and cache.cache_size(fusion) == 1
    y = torch.randn(4, 8)  # other values, same signature: bound afresh
    _, run = run_fusion(fusion, [y], executor="aten")
    assert torch.allclose(run.outputs[0], y.exp().sum(1))
    assert len(segmentations) == 1


def test_inputs_refused_once_are_refused_again() -> None:
    fusion = _fusion()
    for _ in range(2):
        with pytest.raises(RuntimeError, match="fusion expects 1 inputs"):
            run_fusion(fusion, [torch.randn(4, 8), torch.randn(4, 8)], executor="aten")


def test_a_warm_call_retains_nothing_of_its_inputs() -> None:
    import gc
    import weakref

    fusion = _fusion()
    x = torch.randn(4, 8)
    for _ in range(3):
        run_fusion(fusion, [x], executor="aten")
    ref = weakref.ref(x)
    del x
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize(
    "other",
    [
        lambda: torch.randn(4, 9),  # a size
        lambda: torch.randn(8, 4).t(),  # strides
        lambda: torch.randn(4, 8, dtype=torch.float64),  # a dtype (a mismatch is still checked)
    ],
)
def test_another_signature_is_another_entry(segmentations, other) -> None:
    fusion = _fusion()
    run_fusion(fusion, [torch.randn(4, 8)], executor="aten")
    try:
        run_fusion(fusion, [other()], executor="aten")
    except RuntimeError:
        pass  # refused when bound: the cache did not hide the check
    assert len(segmentations) == 2


def test_fault_injection_and_the_rule_profile_are_part_of_the_key(segmentations, monkeypatch):
    fusion, x = _fusion(), torch.randn(4, 8)
    run_fusion(fusion, [x], executor="aten")
    run_fusion(fusion, [x], executor="aten", rules="nvfuser-2024")
    monkeypatch.setenv("FUSECLI_INJECT_FAULT", "exp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, run = run_fusion(fusion, [x], executor="aten")
    assert len(segmentations) == 3
    assert not torch.allclose(run.outputs[0], x.exp().sum(1))  # the fault, not a stale entry


def test_the_cache_keeps_at_most_capacity_signatures(segmentations, monkeypatch) -> None:
    monkeypatch.setattr(cache, "CAPACITY", 3)
    fusion = _fusion()
    for width in range(1, 6):
        run_fusion(fusion, [torch.randn(2, width)], executor="aten")
    assert cache.cache_size(fusion) == 3
    run_fusion(fusion, [torch.randn(2, 5)], executor="aten")  # the newest is kept
    assert len(segmentations) == 5
