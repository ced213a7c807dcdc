"""MarkAliasesPrepare (fusecli.segment.mark_aliases) and the alias analysis it runs on.

Each case is one of the situations nvFuser's pass (csrc/preseg_passes/mark_aliases_prepare.cpp)
decides on: where the walk up from an output stops, and when no segment_set is inserted.
"""

from __future__ import annotations

from pathlib import Path

import torch

from fusecli.bisect.segments import segment_selection
from fusecli.bisect.selection import Slicer
from fusecli.frontend import DataType, FusionDefinition
from fusecli.ir.nodes import Fusion
from fusecli.ir.optype import OpType
from fusecli.load import load_path
from fusecli.reference import run_reference
from fusecli.runtime.segmented import execute_segmented
from fusecli.segment.aliases import find_aliases
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.mark_aliases import mark_aliases_prepare
from fusecli.segment.segmenter import segment_fusion

SEED = Path(__file__).resolve().parent.parent / "fusions" / "matmul_reshape_permute.py"


def _seed():
    (loaded,) = load_path(SEED, device="cpu")
    return loaded


def _ops(fusion: Fusion) -> list[str]:
    return [e.op.value for e in fusion.tensor_exprs()]


def _prepared(fd: FusionDefinition, *shapes: tuple[int, ...]) -> Fusion:
    inputs = [torch.randn(shape) for shape in shapes]
    return mark_aliases_prepare(fd.fusion, RuntimeInfo(fd.fusion, inputs))


def _matrix(fd: FusionDefinition):
    return fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)


def test_seed_aliases_the_output_to_the_matmul_but_not_the_reshape_of_a_permute():
    loaded = _seed()
    fusion = loaded.fusion
    permute_1, permute_0, reshape_in, matmul, reshape_out, permute_out = fusion.tensor_exprs()
    analysis = find_aliases(fusion, RuntimeInfo(fusion, loaded.inputs))
    assert analysis.root(permute_1.output) is fusion.inputs[1]
    assert analysis.root(permute_0.output) is fusion.inputs[0]
    # [16, i1, i0] laid out as i0, i1, 16: merging i1 with i0 needs a copy
    assert analysis.root(reshape_in.output) is None
    assert analysis.root(matmul.output) is None
    assert analysis.root(reshape_out.output) is matmul.output
    assert analysis.root(permute_out.output) is matmul.output


def test_seed_gets_one_segment_set_between_the_matmul_and_the_output_reshape():
    loaded = _seed()
    fusion = loaded.fusion
    prepared = mark_aliases_prepare(fusion, RuntimeInfo(fusion, loaded.inputs))
    assert _ops(prepared) == [
        "permute", "permute", "reshape", "matmul", "segment_set", "reshape", "permute"
    ]
    matmul, copy, reshape = prepared.tensor_exprs()[3:6]
    assert copy.inputs == (matmul.output,)
    assert copy.output.domain[-1].is_reduction is False  # the copy drops the reduction
    assert reshape.inputs[0] is copy.output
    assert prepared.outputs == fusion.outputs  # the output itself is untouched


def test_the_2024_profile_predates_the_pass():
    loaded = _seed()
    segmented = segment_fusion(loaded.fusion, loaded.inputs, profile="nvfuser-2024")
    assert OpType.segment_set not in {e.op for e in segmented.fusion.exprs}


def test_an_output_computed_by_a_non_meta_op_needs_no_segment_set():
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.exp(_matrix(fd)))
    assert _prepared(fd, (2, 3)) is fd.fusion


def test_meta_ops_of_a_fusion_input_alone_need_no_segment_set():
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.permute(_matrix(fd), dims=[1, 0]))
    assert _prepared(fd, (2, 3)) is fd.fusion


def test_a_fusion_input_also_used_by_computation_is_copied_for_its_meta_ops():
    with FusionDefinition() as fd:
        t0 = _matrix(fd)
        fd.add_output(fd.ops.permute(t0, dims=[1, 0]))
        fd.add_output(fd.ops.exp(t0))
    prepared = _prepared(fd, (2, 3))
    assert _ops(prepared) == ["segment_set", "permute", "exp"]
    copy, permute, exp = prepared.tensor_exprs()
    assert permute.inputs[0] is copy.output and exp.inputs[0] is fd.fusion.inputs[0]


def test_a_meta_op_feeding_computation_stays_with_its_producer():
    """N -> M1 -> N with M1 -> M2: the cut goes after M1, not before it (no over-segmenting)."""
    with FusionDefinition() as fd:
        t1 = fd.ops.exp(_matrix(fd))
        t2 = fd.ops.permute(t1, dims=[1, 0])
        fd.add_output(fd.ops.tanh(t2))
        fd.add_output(fd.ops.permute(t2, dims=[1, 0]))
    prepared = _prepared(fd, (2, 3))
    assert _ops(prepared) == ["exp", "permute", "tanh", "segment_set", "permute"]
    permute, copy = prepared.tensor_exprs()[1], prepared.tensor_exprs()[3]
    assert copy.inputs == (permute.output,)


def test_dead_code_reading_a_meta_op_does_not_keep_it_with_its_producer():
    """nvFuser walks ``Fusion::allTvs``, the tensors the outputs use: a computation of the
    permute that no output reads (population member fuzz_469102188's unused ``bitwise_or``
    of its expanded output) is no real computation, and the permute is cut off as without it."""
    with FusionDefinition() as fd:
        t2 = fd.ops.permute(fd.ops.exp(_matrix(fd)), dims=[1, 0])
        fd.ops.tanh(t2)  # read by nothing
        fd.add_output(t2)
    prepared = _prepared(fd, (2, 3))
    assert _ops(prepared)[:3] == ["exp", "segment_set", "permute"]


def test_a_copied_fusion_output_is_replaced_by_its_copy():
    with FusionDefinition() as fd:
        t1 = fd.ops.exp(_matrix(fd))
        fd.add_output(t1)
        fd.add_output(fd.ops.permute(t1, dims=[1, 0]))
    prepared = _prepared(fd, (2, 3))
    exp, copy, permute = prepared.tensor_exprs()
    assert prepared.outputs[0].value is copy.output
    assert permute.inputs[0] is copy.output


def test_an_output_laid_out_against_its_meta_op_is_no_alias():
    """permute's output is an alias only in the transposed layout; a row-major stride order
    asks for a copy, so the permute is real work and needs no segment_set."""
    for stride_order, cut in (([0, 1], True), ([1, 0], False)):
        with FusionDefinition() as fd:
            t1 = fd.ops.exp(_matrix(fd))
            fd.add_output(fd.ops.permute(t1, dims=[1, 0]), stride_order=stride_order)
        prepared = _prepared(fd, (2, 3))
        assert ("segment_set" in _ops(prepared)) is cut, stride_order


def test_a_reshape_merging_permuted_dimensions_is_no_alias():
    with FusionDefinition() as fd:
        t1 = fd.ops.exp(_matrix(fd))
        fd.add_output(fd.ops.reshape(fd.ops.permute(t1, dims=[1, 0]), new_shape=[6]))
        fd.add_output(fd.ops.reshape(t1, new_shape=[6]))
    prepared = _prepared(fd, (2, 3))
    # only the reshape of the unpermuted tensor is a view: a segment_set before it alone
    assert _ops(prepared) == ["exp", "permute", "reshape", "segment_set", "reshape"]


def test_keepdim_reductions_are_cut_before_their_broadcast():
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.sum(_matrix(fd), dims=[1], keepdim=True))
    prepared = _prepared(fd, (4, 5))
    assert _ops(prepared) == ["sum", "segment_set", "broadcast"]
    segmented = segment_fusion(prepared, [torch.randn(4, 5)])
    assert [s.scheduler for s in segmented.segments] == ["reduction", "expr_eval"]


def test_segmentation_with_the_pass_keeps_eager_results():
    loaded = _seed()
    segmented = segment_fusion(loaded.fusion, loaded.inputs)
    (actual,) = execute_segmented(segmented, loaded.inputs).outputs
    (expected,) = run_reference(loaded.fusion, loaded.inputs).outputs
    assert torch.equal(actual, expected)


def test_bisect_maps_segments_back_to_the_fusion_given():
    """A segment reading the segment_set is the original exprs, reading the matmul's output;
    the segment of nothing but the copy has no counterpart."""
    loaded = _seed()
    segmented = segment_fusion(loaded.fusion, loaded.inputs)
    copy_only, views = segmented.segments[3:5]
    assert segment_selection(copy_only, loaded.fusion) is None
    selection = segment_selection(views, loaded.fusion)
    originals = {e.uid for e in loaded.fusion.tensor_exprs()[-2:]}
    assert selection.exprs == originals
    assert selection.outputs == (loaded.fusion.outputs[0].value.uid,)
    values = run_reference(loaded.fusion, loaded.inputs, keep_intermediates=True).values
    piece = Slicer(loaded, values).build(selection)
    assert piece.ops == ["reshape", "permute"]
