# ruff: noqa: E501
"""Folding views of inputs into inputs (``fusecli.bisect.fold``): which ops fold, what a folded
input is fed with (the view of the original input, as eager torch makes it), how the minimized
repro declares it, and ``fusecli bisect --engine nvfuser`` end to end under the stand-in: a
failure that needs an input's strides but not the views of it loses the views; one that needs
the permute keeps it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import torch
from test_bisect_rebuild import _slicer
from test_engine_bisect import _env, _plain

from fusecli.bisect.selection import Selection, Slicer
from fusecli.engines.signature import error_signature
from fusecli.load import load_path
from fusecli.load.convert import to_direct
from fusecli.reference import run_reference

VIEWS = """\
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, is_cpu=False)
    T1 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)
    T2 = fd.ops.reshape(T0, new_shape=[2, 2, 6])
    T3 = fd.ops.permute(T2, dims=[0, 2, 1])
    T4 = fd.ops.permute(T0, dims=[1, 0])
    T5 = fd.ops.reshape(T4, new_shape=[24])
    T6 = fd.ops.broadcast(T1, is_broadcast_dim=[True, False])
    T7 = fd.ops.expand(T6, shape=[4, 6])
    T8 = fd.ops.exp(T0)
    T9 = fd.ops.permute(T8, dims=[1, 0])
    T10 = fd.ops.neg(T3)
    T11 = fd.ops.neg(T5)
    T12 = fd.ops.add(T7, T0)
    fd.add_output(T10)
    fd.add_output(T11)
    fd.add_output(T12)
    fd.add_output(T9)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [torch.randn(4, 6, device='cuda:0'), torch.randn(6, device='cuda:0')]
fd.execute(inputs)
"""

# llama_rope_cos_sin_2d as bisect left it at 10 ops, its first input a view of a wider buffer
ROPE = """\
import torch
from nvfuser import FusionDefinition, DataType

def nvfuser_fusion_id0(fd : FusionDefinition) -> None :
    T0 = fd.define_tensor(shape=[1, 1, 1024], contiguity=[None, None, False], dtype=DataType.BFloat16, is_cpu=False)
    T1 = fd.define_tensor(shape=[1, 128], contiguity=[None, True], dtype=DataType.BFloat16, is_cpu=False)
    T2 = fd.define_tensor(shape=[1, 2, 1, 128], contiguity=[None, None, True, True], dtype=DataType.Float, is_cpu=False, stride_order=[3, 1, 2, 0])
    T8 = fd.ops.reshape(T0, new_shape=[1, 1, 8, 128])
    T9 = fd.ops.permute(T8, dims=[0, 2, 1, 3])
    T10 = fd.ops.broadcast(T1, is_broadcast_dim=[True, True, False, False])
    T16 = fd.ops.expand(T10, shape=[1, 2, 1, 128])
    T17 = fd.ops.mul(T2, T16)
    T18 = fd.ops.broadcast(T1, is_broadcast_dim=[True, True, False, False])
    T24 = fd.ops.expand(T18, shape=[1, 8, 1, 128])
    T40 = fd.ops.slice(T9, start_indices=[0, 0, 0, 0], end_indices=[1, 8, 1, 64], strides=[1, 1, 1, 1], manual_normalization=0)
    T41 = fd.ops.cat([T40, T40], dim=3, manual_padding=0)
    T42 = fd.ops.mul(T41, T24)
    fd.add_output(T17)
    fd.add_output(T42)

with FusionDefinition() as fd:
    nvfuser_fusion_id0(fd)

inputs = [
    torch.randn(2048, device='cuda:0').to(torch.bfloat16).as_strided((1, 1, 1024), (2048, 2048, 2)),
    torch.randn(1, 128, device='cuda:0').to(torch.bfloat16),
    torch.randn(1, 2, 1, 128, device='cuda:0').as_strided((1, 2, 1, 128), (256, 128, 256, 1)),
]
fd.execute(inputs)
"""


def _views(tmp_path: Path) -> Slicer:
    path = tmp_path / "views.py"
    path.write_text(VIEWS, encoding="utf-8")
    return _slicer(path)


def _expr(slicer: Slicer, name: str):
    """The expr whose result the repro calls ``name`` (T3 is the fourth value defined...)."""
    number = int(name[1:]) - 2  # T0 and T1 are the inputs
    return slicer.units[number]


def test_the_candidates_are_the_ops_that_only_view_an_input(tmp_path):
    slicer = _views(tmp_path)
    ops = {e.uid: e.op.value for e in slicer.units}
    assert [ops[_expr(slicer, n).uid] for n in ("T2", "T5", "T9")] == ["reshape", "reshape",
                                                                      "permute"]
    candidates = slicer.folds(slicer.everything())
    expected = ("T2", "T3", "T4", "T6", "T7")  # a chain folds link by link, or whole
    assert candidates == [_expr(slicer, n).uid for n in expected]
    # T5: a reshape of a transposed input has no strides on the input's storage; T9 views a
    # value the fusion computes
    folded = slicer.fold(slicer.everything(), [_expr(slicer, "T4").uid])
    assert _expr(slicer, "T5").uid not in slicer.folds(folded)  # folded or not, no view


def test_a_chain_folds_whole_and_leaves_no_new_output(tmp_path):
    slicer = _views(tmp_path)
    permute = _expr(slicer, "T3")
    folded = slicer.fold(slicer.everything(), [permute.uid])
    assert _expr(slicer, "T2").uid not in folded.exprs  # the reshape only it read goes too
    piece = slicer.build(folded)
    assert piece.ops.count("reshape") == 1 and piece.ops.count("permute") == 2  # T5; T4, T9
    assert len(piece.outputs) == 4  # T2 did not become an output


def test_a_folded_input_is_the_view_of_the_original_input(tmp_path):
    slicer = _views(tmp_path)
    everything = slicer.everything()
    folded = slicer.fold(everything, slicer.folds(everything))
    piece = slicer.build(folded)
    x, y = slicer.loaded.inputs
    fed = dict(zip((v.uid for v in piece.inputs), piece.loaded.inputs))
    permuted = fed[_expr(slicer, "T3").outputs[0].uid]
    expanded = fed[_expr(slicer, "T7").outputs[0].uid]
    transposed = fed[_expr(slicer, "T4").outputs[0].uid]
    for got, eager in ((permuted, x.view(2, 2, 6).permute(0, 2, 1)),
                       (expanded, y[None].expand(4, 6)), (transposed, x.permute(1, 0))):
        assert torch.equal(got, eager) and got.stride() == eager.stride()
    assert expanded.stride() == (0, 1)
    # declared as the view is: a stride order for a permute, nvFuser's expanded broadcast
    declared = dict(zip((v.uid for v in piece.inputs), piece.loaded.fusion.inputs))
    permuted_input = declared[_expr(slicer, "T3").outputs[0].uid]
    assert list(permuted_input.stride_order) == [2, 0, 1]
    expanded_input = declared[_expr(slicer, "T7").outputs[0].uid]
    assert expanded_input.logical[0].is_broadcast and expanded_input.logical[0].expanded
    expected = run_reference(slicer.fusion, slicer.loaded.inputs).outputs
    assert piece.ops == ["reshape", "exp", "permute", "neg", "neg", "add"]
    rebuilt = run_reference(piece.loaded.fusion, piece.loaded.inputs).outputs
    by_value = dict(zip((o.value.uid for o in piece.outputs), rebuilt))
    for output, value in zip(slicer.fusion.outputs, expected):
        assert torch.equal(by_value[output.value.uid], value)


def test_the_repro_declares_folded_inputs_as_nvfuser_reads_them_back(tmp_path):
    """minimized.py's spelling (nvfuser_direct): read back, the same inputs, the same
    layouts, the same results."""
    slicer = _views(tmp_path)
    everything = slicer.everything()
    piece = slicer.build(slicer.fold(everything, slicer.folds(everything)))
    text = to_direct(piece.loaded)
    assert "stride_order=[2, 0, 1]" in text
    assert "shape=[-1, 6], contiguity=[None, True]" in text  # expanded: -1 and None
    script = tmp_path / "minimized.py"
    script.write_text(text, encoding="utf-8")
    again = load_path(script, device="cpu")[0]
    declared = [_declared(v) for v in piece.loaded.fusion.inputs]
    assert declared == [_declared(v) for v in again.fusion.inputs]
    for before, after in zip(piece.loaded.inputs, again.inputs):
        assert torch.equal(before, after) and before.stride() == after.stride()
    first = run_reference(piece.loaded.fusion, piece.loaded.inputs).outputs
    second = run_reference(again.fusion, again.inputs).outputs
    assert all(torch.equal(a, b) for a, b in zip(first, second))


def test_a_shrunk_folded_input_keeps_its_layout(tmp_path):
    slicer = _views(tmp_path)
    part = Selection(frozenset(_expr(slicer, n).uid for n in ("T2", "T3", "T6", "T7", "T10",
                                                              "T12")))
    folded = slicer.fold(part, slicer.folds(part))
    assert slicer.build(folded).ops == ["neg", "add"]
    small = slicer.build(replace(folded, extents=((6, 3),)))
    fed = dict(zip((v.uid for v in small.inputs), small.loaded.inputs))
    expanded = fed[_expr(slicer, "T7").outputs[0].uid]
    assert tuple(expanded.shape) == (4, 3) and expanded.stride() == (0, 1)
    permuted = fed[_expr(slicer, "T3").outputs[0].uid]
    assert tuple(permuted.shape) == (2, 3, 2) and permuted.stride() == (6, 1, 3)
    run_reference(small.loaded.fusion, small.loaded.inputs)


def _declared(tensor) -> tuple:
    """An input's declaration: per dim its kind, static size and expanded-ness; contiguity;
    stride order."""
    dims = tuple((d.iter_type, d.extent if isinstance(d.extent, int) else None,
                  d.expanded is not None) for d in tensor.logical)
    return dims, tuple(tensor.contiguity), tuple(tensor.stride_order)


def _bisect(tmp_path: Path, faults: str) -> dict:
    repro = tmp_path / "rope.py"
    repro.write_text(ROPE, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "fusecli", "bisect", str(repro), "--engine", "nvfuser", "-o",
         str(tmp_path / "out"), "-j", "2", "--json", "--mode", "minimize", "--no-shrink"],
        capture_output=True, text=True, env=_env(faults), timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_failure_that_needs_an_inputs_strides_loses_the_views_of_it(tmp_path):
    """The assert needs the slice and cat to read a view of a gapped buffer. Removing the
    reshape or the permute alone feeds a dense input (a removed op's result is laid out
    dense): only folding both, the input keeping the buffer's strides, still fails."""
    faults = "strided:slice+cat"
    report = _bisect(tmp_path, faults)
    minimized = report["minimized"]
    assert minimized["exprs"] == ["slice", "cat"], minimized["exprs"]
    assert minimized["verified"]
    folds = [s for s in minimized["steps"] if s["phase"] == "fold"]
    assert folds[0]["question"] == "all 2 views folded into inputs" and folds[0]["failing"]
    script = Path(minimized["repro_py"])
    text = script.read_text(encoding="utf-8")
    assert ("shape=[1, 8, 1, 128], contiguity=[None, None, True, False], dtype=DataType.BFloat16,"
            " is_cpu=False, stride_order=[3, 1, 2, 0]") in text
    assert ".as_strided((1, 8, 1, 128), (2048, 256, 2048, 2))" in text
    plain = _plain(script, faults)
    assert plain.returncode == 1
    original = error_signature(report["original"]["detail"] or report["original"]["message"])
    assert error_signature(plain.stderr).key == original.key
    assert _plain(script, "").returncode == 0


def test_a_failure_that_needs_the_permute_keeps_it_and_folds_the_reshape(tmp_path):
    """The permute must read a view of the gapped buffer: folding both views passes, folding
    the reshape alone (the permute then reads the buffer's view as an input) still fails."""
    faults = "strided:permute+slice+cat"
    minimized = _bisect(tmp_path, faults)["minimized"]
    assert minimized["exprs"] == ["permute", "slice", "cat"], minimized["exprs"]
    assert minimized["verified"]
    folds = [s for s in minimized["steps"] if s["phase"] == "fold"]
    assert not folds[0]["failing"]  # all views folded: no permute, no failure
    assert any(s["failing"] and s["question"] == "1 of 2 views folded into inputs"
               for s in folds), folds
    script = Path(minimized["repro_py"])
    assert "shape=[1, 1, 8, 128], contiguity=[None, None, True, False]" in script.read_text(
        encoding="utf-8")
    assert _plain(script, faults).returncode == 1
    assert _plain(script, "").returncode == 0
