"""Rebuilding parts of fusions (fusecli.bisect.rebuild / selection), and delta debugging.

A rebuilt fusion must mean what the original meant: the whole corpus rebuilds to the same ops
and the same reference outputs, and every single expr of it runs alone when fed with the values
the reference recorded for its operands.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fusecli.bisect.ddmin import Budget, ddmin, one_by_one, split
from fusecli.bisect.rebuild import NOT_REPLAYABLE
from fusecli.bisect.segments import probes
from fusecli.bisect.selection import BuildError, Selection, Slicer
from fusecli.bisect.shrink import shrink, sizes_of
from fusecli.ir.optype import OpType
from fusecli.load import discover, load_path
from fusecli.load.convert import to_direct
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


def test_a_slice_to_the_whole_extent_follows_a_shrunk_size():
    """RoPE's slices end at the head dimension's size or at the sequence's: when the sequence
    shrinks, the end that was the whole sequence shrinks with it; the cut at 64 stays."""
    slicer = _slicer(Path(__file__).resolve().parent / "nvfuser_corpus"
                     / "llama_rope_cos_sin_2d.py")
    small = slicer.build(Selection(slicer.everything().exprs, extents=((2048, 4),)))
    slices = [e for e in small.loaded.fusion.exprs if e.op is OpType.slice]
    assert slices
    for expr in slices:
        source, result = expr.inputs[0], expr.outputs[0]
        assert result.logical[2].logical_extent == 4  # the sequence, sliced whole
        assert result.logical[3].logical_extent == 64  # the head dimension's half
        assert source.logical[3].logical_extent == 128
    outputs = run_reference(small.loaded.fusion, small.loaded.inputs).outputs
    assert all(o.shape[2] == 4 for o in outputs)
    # and the repro says so (an end of 2048 on a dimension of 4 would be clamped, and misread)
    from fusecli.load.convert import to_direct

    lines = [line for line in to_direct(small.loaded).splitlines() if "fd.ops.slice" in line]
    assert lines and all("2048" not in line for line in lines), lines


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


def test_the_last_granularity_goes_on_from_where_it_removed():
    """Removing items one at a time, a pass resumes after each removal instead of asking
    about the items before it again: 40 items of which 20 are needed take two passes."""
    needed = list(range(0, 40, 2))
    test, calls = _counting(set(needed))
    assert one_by_one(list(range(40)), test) == needed
    assert len(calls) <= 40 + 20  # a pass of 40 questions, then one of the 20 left
    waves = 0

    def wave(batch):
        nonlocal waves
        waves += 1
        return test(batch)

    assert one_by_one(list(range(40)), wave, width=4) == needed
    assert waves <= 20 + 5  # a wave per removal, then 20 items 4 at a time


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


# -- bypasses: a chain keeps its ends while its links go --------------------------------------


class _PathOracle:
    """Fails a fusion where a ``first`` op's result reaches a ``last`` op, through any chain:
    the shape of nvFuser's scheduler asserts that need a reshape and a cat connected."""

    isolate, jobs = True, 4

    def __init__(self, first: str, last: str) -> None:
        self.first, self.last, self.queries = first, last, 0

    def _fails(self, loaded) -> bool:
        reached: set[int] = set()
        for expr in loaded.fusion.exprs:
            reads = {v.uid for v in expr.inputs}
            if expr.op.value == self.first or reads & reached:
                if expr.op.value == self.last and reads & reached:
                    return True
                reached.update(o.uid for o in expr.outputs)
        return False

    def ask(self, question):
        from fusecli.bisect.check import Verdict
        from fusecli.bisect.oracle import Answer

        self.queries += 1
        failing = self._fails(question.loaded)
        verdict = Verdict("error", "RuntimeError", "assert") if failing else Verdict("pass")
        return Answer(failing, [verdict])

    def ask_many(self, questions):
        return [self.ask(q) for q in questions]


def test_bypasses_remove_the_links_of_a_chain_whose_ends_the_failure_needs():
    from fusecli.bisect.minimize import minimize
    from fusecli.bisect.results import Tracker

    slicer = _slicer(Path(__file__).resolve().parent / "nvfuser_corpus"
                     / "llama_rope_cos_sin_2d.py")
    oracle = _PathOracle("reshape", "cat")
    assert oracle._fails(slicer.loaded)
    result = minimize(slicer, slicer.everything(), oracle, Tracker(), shrink_sizes=False)
    # the reshape, and the cat it reaches; casts, negations and arithmetic between them are
    # bypassed, slices and permutes that change shape stay
    assert result.piece.ops[0] == "reshape" and result.piece.ops[-1] == "cat"
    assert len(result.piece.ops) <= 6, result.piece.ops
    assert oracle._fails(result.piece.loaded)


def test_a_bypassed_chain_rebuilds_with_the_operands_dtype():
    slicer = _slicer(Path(__file__).resolve().parent / "nvfuser_corpus"
                     / "llama_rope_cos_sin_2d.py")
    selection = slicer.everything()
    ops = {e.uid: e.op.value for e in slicer.units}
    casts = [p for p in slicer.bypasses(selection) if ops[p[0]] == "cast"]
    before = slicer.build(selection).ops.count("cast")
    built = 0
    for pair in casts:
        try:
            piece = slicer.build(slicer.bypass(selection, [pair]))
        except BuildError as error:  # a cat of bfloat16 and float: not a fusion, never asked
            assert "different data types" in str(error)
            continue
        built += 1
        assert piece.ops.count("cast") == before - 1
        run_reference(piece.loaded.fusion, piece.loaded.inputs)  # and it runs
    assert built >= len(casts) - 2


MERGEABLE = """\
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T2 = fd.ops.broadcast(T0, is_broadcast_dim=[True, False, False])
    T3 = fd.ops.broadcast(T0, is_broadcast_dim=[True, False, False])
    T4 = fd.ops.exp(T1)
    T5 = fd.ops.add(T2, T3)
    T6 = fd.ops.mul(T5, T4)
    fd.add_output(T6)

fd.execute([torch.randn(3, 4), torch.randn(3, 4)])
"""


def test_merges_join_common_subexpressions_and_inputs_alike(tmp_path):
    path = tmp_path / "twins.py"
    path.write_text(MERGEABLE, encoding="utf-8")
    slicer = _slicer(path)
    selection = slicer.everything()
    ops = {e.outputs[0].uid: e.op.value for e in slicer.units}
    names = {v.uid: f"T{i}" for i, v in enumerate(slicer.fusion.inputs)}
    pairs = slicer.merges(selection)
    described = sorted((ops.get(a, names.get(a)), ops.get(b, names.get(b))) for a, b in pairs)
    # the second broadcast is the first one again; the second input is like the first
    assert ("T1", "T0") in described and ("broadcast", "broadcast") in described
    merged = slicer.merge(selection, pairs)
    piece = slicer.build(merged)
    assert piece.ops.count("broadcast") == 1 and len(piece.inputs) == 1
    run_reference(piece.loaded.fusion, piece.loaded.inputs)  # and it runs
    # a value is only merged into an earlier one (an input, into a value computed before its
    # first reader, not from it): no cycles, whatever subset is applied
    order = [e.uid for e in slicer.fusion.exprs]
    producer = {o.uid: e.uid for e in slicer.fusion.exprs for o in e.outputs}
    for value, replacement in pairs:
        if value not in producer:
            continue
        rank = order.index(producer[value]) if value in producer else -1
        earlier = order.index(producer[replacement]) if replacement in producer else -1
        assert earlier <= rank


def test_a_broadcast_and_its_expand_rebuild_as_one_broadcast_in_dim(tmp_path):
    """The minimized repro writes ``expand(broadcast(x))`` as the one call users write (the
    frontend builds that call as exactly this pair) and counts it as one op; a broadcast that
    another op reads, or that is an output, stays a broadcast of its own."""
    path = tmp_path / "bid.py"
    path.write_text(JOINABLE, encoding="utf-8")
    slicer = _slicer(path)
    piece = slicer.build(slicer.everything())
    assert piece.ops == ["broadcast_in_dim", "broadcast", "expand", "mul", "add"]
    script = to_direct(piece.loaded)
    assert script.count("fd.ops.broadcast_in_dim(") == 1
    assert "broadcast_dims=[1]" in script and script.count("fd.ops.expand(") == 1
    expected = run_reference(slicer.fusion, slicer.loaded.inputs).outputs
    rebuilt = run_reference(piece.loaded.fusion, piece.loaded.inputs).outputs
    assert all(_same(a, b) for a, b in zip(rebuilt, expected))
    assert [e.op for e in piece.loaded.fusion.exprs] == [e.op for e in slicer.fusion.exprs]


JOINABLE = """\
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T2 = fd.ops.broadcast(T0, is_broadcast_dim=[True, False])
    T3 = fd.ops.expand(T2, shape=[3, 4])
    T4 = fd.ops.broadcast(T0, is_broadcast_dim=[True, False])
    T5 = fd.ops.expand(T4, shape=[3, 4])
    T6 = fd.ops.mul(T3, T4)
    T7 = fd.ops.add(T5, T1)
    fd.add_output(T6)
    fd.add_output(T7)

fd.execute([torch.randn(4), torch.randn(3, 4)])
"""


def test_an_expanded_operand_can_stand_for_a_result_of_its_shape(tmp_path):
    """Bypasses prefer an operand of the result's form (``add(expand(b), x)`` -> ``x``), else
    take an expanded one of its shape (``mul(expand(b), broadcast(b))`` -> ``expand(b)``)."""
    path = tmp_path / "bid.py"
    path.write_text(JOINABLE, encoding="utf-8")
    slicer = _slicer(path)
    producer = {e.outputs[0].uid: e for e in slicer.units}
    pairs = {producer_uid: operand for producer_uid, operand in
             ((e, o) for e, o in slicer.bypasses(slicer.everything()))}
    by_op = {e.op: e for e in slicer.units if e.uid in pairs}
    add, mul = by_op[OpType.add], by_op[OpType.mul]
    assert pairs[add.uid] == slicer.fusion.inputs[1].uid
    assert producer[pairs[mul.uid]].op is OpType.expand
    piece = slicer.build(slicer.bypass(slicer.everything(), [(mul.uid, pairs[mul.uid])]))
    assert "mul" not in piece.ops
    run_reference(piece.loaded.fusion, piece.loaded.inputs)  # and it runs


def test_a_reduction_is_rebuilt_as_the_one_call_that_made_it(tmp_path):
    """A sum over a broadcast dimension (squeeze + sum in the IR, as nvFuser's trivial
    reduction) and a sum with keepdim (sum + broadcast) are each written as the one call: a
    squeeze of a size-1 reshape dimension would be another program for nvFuser, which keeps
    that dimension Symbolic."""
    path = tmp_path / "sums.py"
    path.write_text(REDUCTIONS, encoding="utf-8")
    slicer = _slicer(path)
    assert [e.op.value for e in slicer.units] == [
        "reshape", "squeeze", "sum", "sum", "broadcast", "add"]
    piece = slicer.build(slicer.everything())
    assert piece.ops == ["reshape", "sum", "sum", "add"]
    script = to_direct(piece.loaded)
    assert "fd.ops.squeeze" not in script and "fd.ops.broadcast(" not in script
    assert "dims=[0, 1], keepdim=False" in script and "dims=[1], keepdim=True" in script
    expected = run_reference(slicer.fusion, slicer.loaded.inputs).outputs
    rebuilt = run_reference(piece.loaded.fusion, piece.loaded.inputs).outputs
    assert all(_same(a, b) for a, b in zip(rebuilt, expected))
    # a group part of which is removed is replayed op by op
    squeeze = next(e for e in slicer.units if e.op is OpType.squeeze)
    part = slicer.build(Selection(frozenset(e.uid for e in slicer.units if e is not squeeze)))
    assert part.ops.count("sum") == 2 and "squeeze" not in part.ops


REDUCTIONS = """\
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.ops.reshape(T0, new_shape=[1, 4, 3])
    T2 = fd.ops.sum(T1, dims=[0, 1], keepdim=False, dtype=DataType.Null)
    T3 = fd.ops.sum(T0, dims=[1], keepdim=True, dtype=DataType.Null)
    T4 = fd.ops.add(T0, T3)
    fd.add_output(T2)
    fd.add_output(T4)

fd.execute([torch.randn(4, 3)])
"""


JOINED_BY_A_MUL = """\
import torch
from nvfuser import FusionDefinition, DataType

with FusionDefinition() as fd:
    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    T1 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float)
    T2 = fd.ops.broadcast_in_dim(T0, shape=[2, 4, 6], broadcast_dims=[1, 2])
    T3 = fd.ops.slice(T1, start_indices=[0, 0, 0], end_indices=[2, 4, 3])
    T4 = fd.ops.cat([T3, T3], dim=-1)
    T5 = fd.ops.mul(T4, T2)
    fd.add_output(T5)

fd.execute([torch.randn(4, 6), torch.randn(2, 4, 6)])
"""


def test_an_input_is_read_from_a_computed_value_of_its_shape(tmp_path):
    """The slice's input can be read from the broadcast of the other input (an expanded
    broadcast standing for its dimension): one input less, and the two parts joined without
    the mul, which a bypass may then remove. Never a value computed from the input itself."""
    path = tmp_path / "joined.py"
    path.write_text(JOINED_BY_A_MUL, encoding="utf-8")
    slicer = _slicer(path)
    selection = slicer.everything()
    sliced = slicer.fusion.inputs[1]
    ops = {e.outputs[0].uid: e.op.value for e in slicer.units}
    pairs = [p for p in slicer.merges(selection) if p[0] == sliced.uid]
    assert [ops[replacement] for _, replacement in pairs] == ["expand"]  # of the broadcast
    piece = slicer.build(slicer.merge(selection, pairs))
    assert len(piece.inputs) == 1 and piece.ops == ["broadcast_in_dim", "slice", "cat", "mul"]
    (out,) = run_reference(piece.loaded.fusion, piece.loaded.inputs).outputs
    w = piece.loaded.inputs[0]
    half = w[:, :3].expand(2, 4, 3)
    assert torch.equal(out, torch.cat([half, half], dim=-1) * w.expand(2, 4, 6))
