"""Pad widths and slice bounds given as scalar inputs: kernels specialized on their values.

nvFuser concretizes a fusion on its scalar inputs' values before it schedules it, so a pad
whose widths are inputs compiles a kernel per set of widths. fusecli's kernels are
specialized on sizes already (a plan per scalar values, ``runtime.cache``); a pad width or a
slice bound read from a scalar input is one more such constant. Checked on the CPU emulator,
through ``fd.execute``, against eager torch, calling one definition with different widths.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from test_codegen import EmulatingExecutor, kernels_of, needs_gxx

from fusecli.frontend import DataType, FusionDefinition
from fusecli.frontend.session import Session, capturing
from fusecli.runtime import registry


@pytest.fixture
def emulated(monkeypatch: pytest.MonkeyPatch) -> EmulatingExecutor:
    monkeypatch.delenv("FUSECLI_INJECT_FAULT", raising=False)
    executor = EmulatingExecutor(poison=True)
    monkeypatch.setattr(registry, "_made", {"cupy": executor})
    return executor


def _pad_add_sum() -> FusionDefinition:
    """The corpus's negative_pad_scalar_inputs: pad by widths given as inputs, add, row sum."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        low = fd.define_scalar(None, dtype=DataType.Int)
        high = fd.define_scalar(None, dtype=DataType.Int)
        y = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        padded = fd.ops.add(fd.ops.pad(x, [low, high, low, high], fd.define_scalar(0.0)), y)
        fd.add_output(padded)
        fd.add_output(fd.ops.sum(padded, dims=[1]))
    return fd


def _slice_exp() -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        start = fd.define_scalar(None, dtype=DataType.Int)
        fd.add_output(fd.ops.exp(fd.ops.slice(x, [0, start], [x.size(0), x.size(1)])))
    return fd


def _padded(x: torch.Tensor, low: int, high: int) -> torch.Tensor:
    return F.pad(x, [low, high, low, high])


@needs_gxx
def test_pad_widths_from_scalar_inputs_get_a_kernel() -> None:
    x, y = torch.randn(8, 9), torch.randn(5, 6)
    (_, kernel), = kernels_of(_pad_add_sum().fusion, [x, -1, -2, y])
    assert "T0[" in kernel.source


@needs_gxx
@pytest.mark.parametrize("widths", [[(-1, -2), (1, 2), (-1, -2)], [(0, 3), (2, -1)]])
def test_one_definition_called_with_other_widths_pads_by_each(emulated, widths) -> None:
    fd = _pad_add_sum()
    x = torch.randn(8, 9, dtype=torch.float64).float()
    sources = set()
    with capturing(Session(executor="cupy", listening=False)):
        for low, high in widths:
            y = torch.randn(_padded(x, low, high).shape)
            padded, total = fd.execute([x, low, high, y])
            want = _padded(x.double(), low, high) + y.double()
            torch.testing.assert_close(padded.double(), want)
            torch.testing.assert_close(total.double(), want.sum(1), rtol=1e-5, atol=1e-5)
            assert emulated.last_kernel is not None  # a kernel ran, not ATen
            sources.add(emulated.last_kernel.source)
    assert len(sources) == len(set(widths))


@needs_gxx
def test_a_slice_start_from_a_scalar_input_gets_a_kernel_per_value(emulated) -> None:
    fd = _slice_exp()
    x = torch.randn(6, 20)
    with capturing(Session(executor="cupy", listening=False)):
        for start in (3, 7, 3):
            out, = fd.execute([x, start])
            torch.testing.assert_close(out, torch.exp(x[:, start:]))
            assert emulated.last_kernel is not None


def test_scalars_a_size_depends_on_are_keyed_and_the_rest_are_not() -> None:
    """``value_free_scalars``: pad widths, a slice start and a reshape's extent computed from
    a scalar input decide sizes (a segmentation per value); a scale, a seed and an offset do
    not (read anew each call)."""
    from fusecli.runtime.cache import value_free_scalars

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        rows = fd.define_scalar(None, dtype=DataType.Int)  # 1: reshape rows, through a mul
        scale = fd.define_scalar(None, dtype=DataType.Double)  # 2
        seed = fd.define_scalar(None, dtype=DataType.Int)  # 3
        offset = fd.define_scalar(None, dtype=DataType.Int)  # 4
        start = fd.define_scalar(None, dtype=DataType.Int)  # 5: a slice start
        flat = fd.ops.reshape(x, [fd.ops.mul(rows, fd.define_scalar(2, DataType.Int)), -1])
        noise = fd.ops.rand_like(flat, rng_seed=seed, rng_offset=offset)
        fd.add_output(fd.ops.mul(fd.ops.add(flat, noise), scale))
        fd.add_output(fd.ops.slice(x, [0, start], [x.size(0), x.size(1)]))
    positions = {v.uid: p for p, v in enumerate(fd.fusion.inputs)}
    assert value_free_scalars(fd.fusion) == frozenset(
        {positions[v.uid] for v in fd.fusion.inputs[2:5]})
