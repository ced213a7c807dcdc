"""runtime/warm_keys.py: the key function written per fusion gives warm_key's key for every
call, the usual ones (its unrolled path) and the odd ones (warm_key itself)."""

from __future__ import annotations

import pytest
import torch

from fusecli.frontend import DataType, FusionDefinition
from fusecli.runtime.faults import ENV_VAR
from fusecli.runtime.warm_keys import key_function, warm_key


def _fusion():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        s = fd.define_scalar(None, dtype=DataType.Double)
        n = fd.define_scalar(None, dtype=DataType.Int)
        fd.add_output(fd.ops.mul(fd.ops.add(x, fd.ops.broadcast_in_dim(w, [4, 8], [1])), s))
        fd.add_output(fd.ops.add(w, n))
    return fd.fusion


X, W = torch.randn(4, 8), torch.randn(8)
CALLS = {
    "usual": [X, W, 0.5, 3],
    "other values": [X, W, -2.0, 7],
    "an int for the double": [X, W, 1, 3],
    "a bool for the int": [X, W, 0.5, True],
    "transposed": [torch.randn(8, 4).t(), W, 0.5, 3],
    "misaligned": [torch.randn(33)[1:].view(4, 8), W, 0.5, 3],
    "negative bit": [X, W._neg_view(), 0.5, 3],
    "complex": [torch.randn(4, 8, dtype=torch.complex64).conj(), W, 0.5, 3],
    "a Parameter": [torch.nn.Parameter(X), W, 0.5, 3],
    "a 0-dim tensor for the double": [X, W, torch.tensor(0.5), 3],
    "a number for a tensor": [1.0, W, 0.5, 3],
    "a string for the int": [X, W, 0.5, "3"],
    "nested": [[X], W, 0.5, 3],
    "too few": [X, W, 0.5],
    "too many": [X, W, 0.5, 3, 4],
    "none": [],
}


@pytest.mark.parametrize("free", [frozenset(), frozenset({2}), frozenset({2, 3})])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_written_key_is_warm_keys_key(name: str, free: frozenset[int]) -> None:
    fusion, flat = _fusion(), CALLS[name]
    written = key_function(fusion, free)
    for settings in (("nvfuser", "auto", None), ("permissive", "cupy", "cuda:0")):
        assert written(flat, *settings) == warm_key(flat, *settings, free)


def test_values_read_anew_leave_the_key_alone_and_others_change_it() -> None:
    fusion = _fusion()
    written = key_function(fusion, frozenset({2}))
    usual = written(CALLS["usual"], "nvfuser", "auto", None)
    assert written([X, W, -1.0, 3], "nvfuser", "auto", None) == usual
    assert written([X, W, 0.5, 4], "nvfuser", "auto", None) != usual
    assert written([X.clone(), W, 0.5, 3], "nvfuser", "auto", None) == usual
    assert written([X.double(), W, 0.5, 3], "nvfuser", "auto", None) != usual


def test_the_key_reads_the_fault_setting_of_each_call(monkeypatch) -> None:
    fusion = _fusion()
    written = key_function(fusion, frozenset())
    before = written(CALLS["usual"], "nvfuser", "auto", None)
    monkeypatch.setenv(ENV_VAR, "wrong_result")
    assert written(CALLS["usual"], "nvfuser", "auto", None) != before


def test_the_function_is_written_once_per_fusion_and_positions() -> None:
    fusion = _fusion()
    assert key_function(fusion, frozenset()) is key_function(fusion, frozenset())
    assert key_function(fusion, frozenset({2})) is not key_function(fusion, frozenset())


class _OnDevice(torch.Tensor):
    """A CPU tensor that answers as a CUDA tensor on device ``index`` would."""

    index = 0

    @property
    def is_cuda(self) -> bool:
        return True

    def get_device(self) -> int:
        return self.index


def _on(index: int) -> torch.Tensor:
    made = torch.Tensor._make_subclass(_OnDevice, X)
    made.index = index
    return made


def test_the_key_holds_a_cuda_tensors_device_index_and_another_tensors_device() -> None:
    fusion = _fusion()
    written = key_function(fusion, frozenset({2}))
    keys = {name: warm_key(call, "nvfuser", "auto", None, frozenset({2}))
            for name, call in {"cuda 0": [_on(0), W, 0.5, 3], "cuda 1": [_on(1), W, 0.5, 3],
                               "cpu": [X, W, 0.5, 3],
                               "meta": [X.to("meta"), W, 0.5, 3]}.items()}
    assert len(set(keys.values())) == 4
    assert keys["cuda 1"][7] == 1 and keys["cpu"][7] == torch.device("cpu")
    assert written([X, W, 0.5, 3], "nvfuser", "auto", None) == keys["cpu"]
