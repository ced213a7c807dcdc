"""A slice's length when its input's size comes from the inputs: bound with the inputs, wrapped
and clamped as torch slices, so that kernels know it before the slice runs."""

from __future__ import annotations

import pytest
import torch

from fusecli.frontend import FusionDefinition
from fusecli.ir.nodes import evaluate_extent
from fusecli.reference import run_reference
from fusecli.runtime.bind import bind_inputs


@pytest.mark.parametrize("start, end", [(0, 5), (2, 9), (0, 100), (7, 7), (8, 12), (3, 3)])
def test_bound_lengths_are_torchs(start, end):
    x = torch.randn(3, 7)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=[True, True])
        out = fd.ops.slice(t, start_indices=[0, start], end_indices=[3, end])
        fd.add_output(out)
    fusion = fd.fusion
    extents = bind_inputs(fusion, [x]).extents
    sliced = fusion.outputs[0].value
    bound = [evaluate_extent(d.logical_extent, extents) for d in sliced.logical]
    assert bound == list(x[:, start:end].shape)
    assert list(run_reference(fusion, [x]).outputs[0].shape) == bound

