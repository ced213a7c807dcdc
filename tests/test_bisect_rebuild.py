"""Rebuilding parts of fusions (fusecli.bisect.rebuild / selection), and delta debugging.

A rebuilt fusion must mean what the original meant: the whole corpus rebuilds to the same ops
and the same reference outputs, and every single expr of it runs alone when fed with the values
the reference recorded for its operands.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fusecli.bisect.ddmin import Budget, ddmin, split
from fusecli.bisect.rebuild import NOT_REPLAYABLE
from fusecli.bisect.segments import probes
from fusecli.bisect.selection import BuildError, Selection, Slicer
from fusecli.bisect.shrink import shrink, sizes_of
from fusecli.ir.optype import OpType
from fusecli.load import discover, load_path
from fusecli.reference import run_reference

FUSIONS = Path(__file__).resolve().parent.parent / "fusions"
CORPUS = discover([FUSIONS])


def _slicer(path: Path) -> Slicer:
    loaded = load_path(path, device="cpu")[0]
    values = run_reference(loaded.fusion, [v.clone() if isinstance(v, torch.Tensor) else v
                                           for v in loaded.inputs],
                           keep_intermediates=True).values
    return Slicer(loaded, values)


def _same(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    return a == b


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_whole_corpus_fusion_rebuilds_to_the_same_ops_and_outputs(path):
    slicer = _slicer(path)
    piece = slicer.build(slicer.everything())
    original = slicer.loaded.fusion
    assert [e.op for e in piece.loaded.fusion.exprs] == [e.op for e in original.exprs]
    assert len(piece.inputs) == len(original.inputs)
    expected = run_reference(original, slicer.loaded.inputs).outputs
    rebuilt = run_reference(piece.loaded.fusion, piece.loaded.inputs).outputs
    assert len(rebuilt) == len(expected)
    assert all(_same(a, b) for a, b in zip(rebuilt, expected))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_every_expr_runs_alone_on_recorded_values(path):
    slicer = _slicer(path)
    for expr in slicer.units:
        piece = slicer.build(Selection(frozenset([expr.uid])))
        assert piece.ops == [expr.op.value]
        outputs = run_reference(piece.loaded.fusion, piece.loaded.inputs).outputs
        for output, value in zip(piece.outputs, outputs):
            recorded = slicer.values[output.value.uid]
            if isinstance(recorded, torch.Tensor) and recorded.dtype.is_floating_point:
                torch.testing.assert_close(value, recorded, equal_nan=True, rtol=0, atol=0)


def test_removed_producers_become_inputs_and_unread_results_outputs():
    slicer = _slicer(FUSIONS / "rms_norm.py")
    rsqrt = next(e for e in slicer.units if e.op is OpType.rsqrt)
    piece = slicer.build(Selection(frozenset([rsqrt.uid])))
    (value,) = piece.inputs
    assert value is rsqrt.inputs[0]  # an intermediate, fed with its recorded value
    assert torch.equal(piece.loaded.inputs[0], slicer.values[value.uid])
    assert [o.value for o in piece.outputs] == [rsqrt.output]
    # the original inputs nothing kept reads are not declared at all
    assert all(v not in piece.inputs for v in slicer.fusion.inputs)


def test_live_drops_exprs_no_output_needs():
    slicer = _slicer(FUSIONS / "rms_norm.py")
    everything = slicer.everything()
    first_output = slicer.fusion.outputs[1].value  # rstd: needs only the first half
    live = slicer.live(Selection(everything.exprs, outputs=(first_output.uid,)))
    assert 0 < len(live.exprs) < len(everything.exprs)
    assert slicer.build(live).ops[-1] == "rsqrt"


def test_a_selection_without_outputs_does_not_build():
    slicer = _slicer(FUSIONS / "softmax.yaml")
    with pytest.raises(BuildError):
        slicer.build(Selection(frozenset()))


def test_shrinking_substitutes_sizes_in_inputs_and_shape_arguments():
    slicer = _slicer(FUSIONS / "rms_norm.py")
    piece = slicer.build(slicer.everything())
    assert sizes_of(piece) == [512, 64, 2]
    small = slicer.build(Selection(slicer.everything().exprs, extents=((512, 8), (64, 4))))
    assert [tuple(v.shape) for v in small.loaded.inputs] == [(2, 4, 8), (8,)]
    outputs = run_reference(small.loaded.fusion, small.loaded.inputs).outputs
    assert [tuple(o.shape) for o in outputs] == [(2, 4, 8), (2, 4, 1)]


def test_shrink_tries_one_then_halves_while_the_failure_persists():
    asked = []

    def fails(selection, label):
        asked.append(label)
        return dict(selection.extents)[512] >= 64

    result = shrink(Selection(frozenset()), [512], fails)
    assert dict(result.extents) == {512: 64}
    assert asked == ["size 512 -> 1", "size 512 -> 256", "size 512 -> 128", "size 512 -> 64",
                     "size 512 -> 32"]


def test_every_op_but_the_lowering_only_ones_can_be_replayed():
    assert NOT_REPLAYABLE == {OpType.mma, OpType.shape, OpType.at}


# -- ddmin -------------------------------------------------------------------------------------


def _counting(culprits: set[int]):
    calls = []

    def test(batch):
        calls.extend(batch)
        return [culprits <= set(candidate) for candidate in batch]

    return test, calls


@pytest.mark.parametrize("culprit", [0, 77, 199])
def test_ddmin_finds_one_culprit_among_200_in_few_questions(culprit):
    test, calls = _counting({culprit})
    assert ddmin(list(range(200)), test) == [culprit]
    assert len(calls) <= 2 * 8 + 2


def test_ddmin_finds_a_pair_and_is_one_minimal():
    test, _ = _counting({3, 150})
    assert ddmin(list(range(200)), test) == [3, 150]


def test_ddmin_result_does_not_depend_on_the_batch_width():
    for width in (1, 3, 8):
        test, _ = _counting({5, 6, 120})
        assert ddmin(list(range(128)), test, width=width) == [5, 6, 120]


def test_ddmin_asks_complements_first_in_waves_for_a_spread_failure():
    """A failure that needs 6 ops spread over 40 (as most segmenter asserts do): 8 questions
    at once take 25 waves (subsets first, one list at a time, took 49)."""
    waves = 0
    needed = {2, 9, 17, 23, 31, 38}

    def test(batch):
        nonlocal waves
        waves += 1
        return [needed <= set(candidate) for candidate in batch]

    assert ddmin(list(range(40)), test, width=8) == sorted(needed)
    assert waves <= 30


def test_ddmin_stops_at_the_budget_with_the_smallest_failing_list():
    calls = 0

    def test(batch):
        nonlocal calls
        calls += len(batch)
        if calls > 3:
            raise Budget()
        return [10 in candidate for candidate in batch]

    result = ddmin(list(range(64)), test)
    assert 10 in result and len(result) < 64


def test_split_and_probes():
    assert split([1, 2, 3, 4, 5], 2) == [[1, 2, 3], [4, 5]]
    assert split([1, 2], 4) == [[1], [2]]
    assert probes(0, 9, 1) == [4]
    assert probes(0, 9, 3) == [2, 4, 6]
    assert probes(3, 5, 4) == [4]
