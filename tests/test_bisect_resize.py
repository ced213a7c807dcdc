"""Resizes of slices written as one pad while minimizing (``fusecli.bisect.resize``): the same
shape for the readers, one op where there were two or three, the values eager torch's."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from test_bisect_fold import ROPE
from test_bisect_rebuild import _PathOracle, _slicer

from fusecli.bisect import resize
from fusecli.ir.optype import OpType
from fusecli.load.convert import to_direct
from fusecli.reference import run_reference


def test_a_cat_of_slices_of_one_value_becomes_one_pad_of_it(tmp_path: Path):
    slicer = _loaded(tmp_path, ROPE)
    everything = slicer.everything()
    cat = next(e for e in slicer.units if e.op is OpType.cat)
    permute = next(e for e in slicer.units if e.op is OpType.permute)
    (candidate,) = resize.collapsible(slicer, everything)
    # cat([x[..., :64], x[..., :64]]) has x's shape: the pad cuts half and pads it back
    assert candidate[0] == cat.uid and candidate[1][:2] == (-64, 64)
    assert [source for _, _, source in candidate[2]] == [permute.outputs[0].uid]
    piece = slicer.build(resize.as_pad(everything, [candidate]))
    before = slicer.build(everything).ops
    assert len(piece.ops) == len(before) - 1
    assert "pad" in piece.ops and "cat" not in piece.ops and "slice" not in piece.ops
    assert "fd.ops.pad(T9, [-64, 64, 0, 0, 0, 0, 0, 0])" in to_direct(piece.loaded)
    expected = run_reference(slicer.fusion, slicer.loaded.inputs).outputs
    rebuilt = run_reference(piece.loaded.fusion, piece.loaded.inputs).outputs
    assert [o.shape for o in rebuilt] == [o.shape for o in expected]
    x = slicer.values[permute.outputs[0].uid]
    pad = next(e for e in piece.loaded.fusion.exprs if e.op is OpType.pad)
    values = run_reference(piece.loaded.fusion, piece.loaded.inputs,
                           keep_intermediates=True).values
    assert torch.equal(values[pad.outputs[0].uid], F.pad(x, (-64, 64)))


SLICED = """\
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.slice(T0, start_indices=[0, 2], end_indices=[4, 6])
    T2 = fd.ops.pad(T1, [1, 3])
{rest}
fd.execute([torch.randn(4, 8)])
"""
PADDED_SLICE = SLICED.format(rest="    fd.add_output(fd.ops.exp(T2))\n")
SHARED_SLICE = SLICED.format(rest="    fd.add_output(T2)\n    fd.add_output(fd.ops.neg(T1))\n")


def _loaded(tmp_path: Path, text: str):
    path = tmp_path / "repro.py"
    path.write_text(text, encoding="utf-8")
    return _slicer(path)


def test_a_pad_of_a_slice_is_one_pad_of_the_same_shape(tmp_path: Path):
    slicer = _loaded(tmp_path, PADDED_SLICE)
    (candidate,) = resize.collapsible(slicer, slicer.everything())
    assert candidate[1] == (-1, 1, 0, 0)  # x[:, 2:6] padded by (1, 3): x padded by (-1, 1)
    piece = slicer.build(resize.as_pad(slicer.everything(), [candidate]))
    assert piece.ops == ["pad", "exp"]
    (out,) = run_reference(piece.loaded.fusion, piece.loaded.inputs).outputs
    x = slicer.loaded.inputs[0]
    assert out.shape == (4, 8) and torch.equal(out, torch.exp(F.pad(x, (-1, 1))))


def test_a_slice_something_else_reads_stays(tmp_path: Path):
    slicer = _loaded(tmp_path, SHARED_SLICE)
    assert resize.collapsible(slicer, slicer.everything()) == []


class _ResizeOracle(_PathOracle):
    """Fails where a reshape reaches a resize, whichever resize op it is."""

    def _fails(self, loaded) -> bool:
        return any(_PathOracle("reshape", op)._fails(loaded) for op in ("cat", "pad"))


def test_minimizing_writes_the_resize_as_one_pad():
    from fusecli.bisect.minimize import minimize
    from fusecli.bisect.results import Tracker

    slicer = _slicer(Path(__file__).resolve().parent / "nvfuser_corpus"
                     / "llama_rope_cos_sin_2d.py")
    oracle = _ResizeOracle("reshape", "cat")
    result = minimize(slicer, slicer.everything(), oracle, Tracker(), shrink_sizes=False)
    # the reshape, the permute that moves its heads (the pad's operand has its shape), one pad
    # where the rotate-half sliced twice and concatenated
    assert result.piece.ops == ["reshape", "permute", "pad"], result.piece.ops
    assert oracle._fails(result.piece.loaded)
    run_reference(result.piece.loaded.fusion, result.piece.loaded.inputs)


def test_minimizing_with_smaller_sizes_writes_the_permute_as_a_reshape():
    """With sizes shrunk, llama_rope's sequence dim becomes 1, and the permute that moved the
    heads across it moves only size-1 dims at the shrunk sizes: a reshape, collapsed into the
    first. Judged at the recorded sizes it stayed a permute (real nvFuser's bfs.h failure
    took a second bisect of minimized.py, whose recorded sizes were the shrunk ones)."""
    from fusecli.bisect.minimize import minimize
    from fusecli.bisect.results import Tracker

    slicer = _slicer(Path(__file__).resolve().parent / "nvfuser_corpus"
                     / "llama_rope_cos_sin_2d.py")
    oracle = _ResizeOracle("reshape", "cat")
    result = minimize(slicer, slicer.everything(), oracle, Tracker(), shrink_sizes=True)
    assert result.piece.ops == ["reshape", "pad"], result.piece.ops
    assert oracle._fails(result.piece.loaded)
    run_reference(result.piece.loaded.fusion, result.piece.loaded.inputs)
