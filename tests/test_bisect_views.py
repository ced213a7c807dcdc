"""Collapsing chains of views while minimizing (``fusecli.bisect.views``): a permute that
moves only size-1 dimensions is written as a reshape, and a reshape that only reshapes read
goes, its reader reshaping its operand; the values stay eager torch's."""

from __future__ import annotations

from pathlib import Path

import torch
from test_bisect_fold import ROPE
from test_bisect_rebuild import _slicer

from fusecli.bisect import views
from fusecli.ir.optype import OpType
from fusecli.load.convert import to_direct
from fusecli.reference import run_reference


def test_a_reshape_and_a_permute_of_size_1_dimensions_become_one_reshape(tmp_path: Path):
    path = tmp_path / "rope.py"
    path.write_text(ROPE, encoding="utf-8")
    slicer = _slicer(path)
    everything = slicer.everything()
    permute = next(e for e in slicer.units if e.op is OpType.permute)
    reshape = next(e for e in slicer.units if e.op is OpType.reshape)
    assert views.reshapeable(slicer, everything) == [permute.uid]  # [1,1,8,128] -> [1,8,1,128]
    # a permute is read by a slice: nothing to collapse until it is written as a reshape
    assert views.collapsible(slicer, everything) == []
    reshaped = views.as_reshape(everything, [permute.uid])
    assert views.collapsible(slicer, reshaped) == [(reshape.uid, reshape.inputs[0].uid)]
    collapsed = slicer.bypass(reshaped, views.collapsible(slicer, reshaped))
    piece = slicer.build(collapsed)
    assert piece.ops.count("reshape") == 1 and "permute" not in piece.ops
    assert len(piece.ops) == len(slicer.build(everything).ops) - 1
    script = to_direct(piece.loaded)
    assert "fd.ops.reshape(T0, new_shape=[1, 8, 1, 128])" in script
    expected = run_reference(slicer.fusion, slicer.loaded.inputs).outputs
    rebuilt = run_reference(piece.loaded.fusion, piece.loaded.inputs).outputs
    assert all(torch.equal(a, b) for a, b in zip(rebuilt, expected))


def test_a_permute_that_moves_data_is_no_reshape(tmp_path: Path):
    path = tmp_path / "t.py"
    path.write_text(TRANSPOSE, encoding="utf-8")
    slicer = _slicer(path)
    assert views.reshapeable(slicer, slicer.everything()) == []
    reshape = next(e for e in slicer.units if e.op is OpType.reshape)
    # a reshape read by a permute that moves data stays
    assert all(uid != reshape.uid for uid, _ in views.collapsible(slicer, slicer.everything()))


TRANSPOSE = """\
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.reshape(T0, new_shape=[2, 3, 4])
    T2 = fd.ops.permute(T1, dims=[0, 2, 1])
    T3 = fd.ops.exp(T2)
    fd.add_output(T3)

fd.execute([torch.randn(6, 4)])
"""
