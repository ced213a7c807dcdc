"""Random fusions from every op family (fusecli.bisect.random_fusion), and the bugs they found.

CI runs a few hundred seeds: each fusion segments into a DAG where every live expr lands in
one segment, the segmented ATen run matches the whole-fusion reference within the run's
tolerance, and nothing raises. ``python benchmarks/fuzz.py --n 10000`` runs many more.
Each bug the fuzzer found has a regression test below, named after it.
"""

from __future__ import annotations

import collections
import importlib.util
import json
from pathlib import Path

import pytest
import torch

from fusecli.app.pipeline import RunOptions, run_loaded
from fusecli.bisect.random_fusion import FAMILIES, fuzz_fusion
from fusecli.codegen import emulate
from fusecli.frontend import DataType, FusionDefinition
from fusecli.ir.optype import OpKind, OpType
from fusecli.reference import run_reference
from fusecli.runtime.segmented import execute_segmented
from fusecli.segment.segmenter import segment_fusion

CI_SEEDS = range(400)
CHUNK = 50


def check_segmentation(given, segmented) -> None:
    """Every live tensor expr in exactly one segment (a forwarded input chain may repeat in
    each consumer that takes it), and segments in an order where each reads only values
    that fusion inputs or earlier segments provide: the segment graph is acyclic.

    The exprs are those of the fusion segmented: ``given`` after the pre-segmentation passes,
    which insert copies (segment_set; segment_set + set before an in-place update) and fills
    (``full``, RemoveEmptyPass) and drop empty inputs of a cat (a cat of one is a set), lift
    down-casts above meta ops (ConsecutiveCastPass), and the segmenter makes a var_mean two
    passes (TranslateApplicableWelford); a user of a copy keeps its op and outputs."""
    assert segmented.ok, segmented.failure
    fusion = segmented.fusion
    added = _live_tensor_exprs(fusion) - _live_tensor_exprs(given)
    given_outputs = {o.uid for e in given.exprs for o in e.outputs}
    for expr in fusion.exprs:
        if expr.uid in added and any(o.uid in given_outputs for o in expr.outputs):
            original = next(e for e in given.exprs if e.outputs == expr.outputs)
            assert expr.op in _REWRITES.get(original.op, {original.op}), "a rewrite changed an op"
        elif expr.uid in added:
            assert expr.op in _ADDED, "a rewrite added an op other than a copy or a fill"
    placed = collections.Counter(e.uid for s in segmented.segments for e in s.exprs)
    live = _live_tensor_exprs(fusion)
    assert set(placed) == live, "a live expr is in no segment, or a dead one in some"
    for expr in fusion.exprs:
        if placed[expr.uid] > 1:
            assert expr.op.kind in (OpKind.UNARY, OpKind.CAST), "only forwarded chains repeat"
    available = {v.uid for v in fusion.inputs}
    for segment in segmented.segments:
        for value in segment.inputs:
            assert value.uid in available, f"segment {segment.id} reads a later value"
        available |= {o.uid for e in segment.exprs for o in e.outputs}
    assert all(o.value.uid in available for o in fusion.outputs)


_ADDED = frozenset({
    OpType.segment_set, OpType.set, OpType.full,
    # ConsecutiveCastPass: a down-cast lifted above a meta op, the meta op replayed after it
    OpType.cast, OpType.squeeze, OpType.reshape,
    # TranslateApplicableWelford: a var_mean as sum / N, then sum((x - mean)^2) / (N - c)
    OpType.sum, OpType.div, OpType.broadcast, OpType.sub, OpType.mul,
})
_REWRITES = {OpType.cat: {OpType.cat, OpType.set}}  # RemoveEmptyPass: empty inputs dropped


def _live_tensor_exprs(fusion) -> set[int]:
    producer = {o.uid: e for e in fusion.exprs for o in e.outputs}
    live, stack, seen = set(), [o.value for o in fusion.outputs], set()
    while stack:
        value = stack.pop()
        if value.uid in seen:
            continue
        seen.add(value.uid)
        expr = producer.get(value.uid)
        if expr is not None:
            if expr.tensor_outputs():
                live.add(expr.uid)
            for operand in expr.inputs:
                stack.extend(getattr(operand, "elements", None) or (operand,))
    return live


@pytest.mark.parametrize("start", range(CI_SEEDS.start, CI_SEEDS.stop, CHUNK))
def test_random_fusions_segment_into_a_dag_and_match_the_reference(start):
    failures = []
    for seed in range(start, start + CHUNK):
        loaded = fuzz_fusion(seed).loaded
        check_segmentation(loaded.fusion, segment_fusion(loaded.fusion, loaded.inputs))
        outcome = run_loaded(loaded, RunOptions(executor="aten"))
        if outcome.status != "pass":
            failures.append(f"seed {seed}: {outcome.status}: {outcome.error}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("seed", [1404, 2105, 5960])
def test_seeds_that_failed_in_fd_execute_now_match_the_reference(seed):
    """Found by running seeds 0-30,000 through ``fd.execute`` against the reference: 1404, a
    var_mean of a var_mean's variance (the second's translation read the first's old output);
    2105 and 5960, an expr reading a privatized up-cast twice (``ValueError``)."""
    loaded = fuzz_fusion(seed).loaded
    check_segmentation(loaded.fusion, segment_fusion(loaded.fusion, loaded.inputs))
    outcome = run_loaded(loaded, RunOptions(executor="aten"))
    assert outcome.status == "pass", outcome.error


def test_the_same_seed_gives_the_same_fusion_and_inputs():
    first, again = fuzz_fusion(1234), fuzz_fusion(1234)
    assert repr(first.loaded.fd) == repr(again.loaded.fd)
    assert len(first.loaded.inputs) == len(again.loaded.inputs)
    for a, b in zip(first.loaded.inputs, again.loaded.inputs):
        if isinstance(a, torch.Tensor):
            assert a.stride() == b.stride() and torch.equal(a, b)
        else:
            assert a == b
    assert repr(fuzz_fusion(1235).loaded.fd) != repr(first.loaded.fd)


def test_the_ci_seeds_cover_every_family_layout_and_dtype():
    families, ops, dtypes, ranks = set(), set(), set(), set()
    layouts = collections.Counter()
    for seed in CI_SEEDS:
        made = fuzz_fusion(seed)
        families |= set(made.families)
        ops |= set(made.ops)
        fusion = made.loaded.fusion
        for value, tensor in zip(fusion.inputs, made.loaded.inputs):
            if not isinstance(tensor, torch.Tensor):
                layouts["scalar input"] += 1
                continue
            dtypes.add(tensor.dtype)
            ranks.add(tensor.dim())
            layouts["zero-size"] += tensor.numel() == 0
            layouts["expanded"] += 0 in tensor.stride() and tensor.numel() > 1
            layouts["non-contiguous"] += not tensor.is_contiguous()
            symbolic = [d for d in value.logical if not isinstance(d.extent, int)]
            layouts["symbolic"] += bool(symbolic)
            layouts["size-1 iteration dim"] += any(
                not d.is_broadcast and s == 1 for d, s in zip(value.logical, tensor.shape)
            )
            layouts["broadcast dim"] += any(d.is_broadcast for d in value.logical)
    assert families == set(FAMILIES)
    wanted = {
        "where", "cast", "sum", "prod", "max", "min", "var", "var_mean", "broadcast_in_dim",
        "reshape", "permute", "squeeze", "expand", "slice", "pad", "cat", "matmul", "linear",
        "segment_set", "bitwise_xor", "logical_and", "remainder", "clamp", "lerp", "floor",
    }
    assert wanted <= ops, wanted - ops
    assert {torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool} <= dtypes
    assert {1, 2, 3, 4, 5} <= ranks
    assert all(layouts[k] >= 5 for k in (
        "zero-size", "expanded", "non-contiguous", "symbolic", "size-1 iteration dim",
        "broadcast dim", "scalar input",
    )), layouts


def _fuzz_benchmark():
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "fuzz.py"
    spec = importlib.util.spec_from_file_location("fuzz_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_fuzz_benchmark_passes_clean_seeds_and_writes_a_repro_per_failure(
    tmp_path, monkeypatch, capsys
):
    fuzz = _fuzz_benchmark()
    monkeypatch.delenv("FUSECLI_INJECT_FAULT", raising=False)
    assert fuzz.main(["--n", "20", "--out", str(tmp_path / "clean")]) == 0
    assert "ran 20  pass 20  mismatch 0  error 0  internal 0" in capsys.readouterr().out
    monkeypatch.setenv("FUSECLI_INJECT_FAULT", "add,mul,cast")
    report = tmp_path / "fuzz.json"
    code = fuzz.main(["--n", "20", "--out", str(tmp_path / "bad"), "--minimize", "1",
                      "--json", str(report)])
    assert code == 1
    records = json.loads(report.read_text())["records"]
    assert records and all(r["status"] == "mismatch" for r in records)
    for record in records:
        assert Path(record["repro"]).is_file()
        assert f"fuzz seed {record['seed']}" in Path(record["repro"]).read_text()
    minimized = Path(records[0]["minimized"])
    assert minimized.is_file() and "fusecli bisect: minimized repro" in minimized.read_text()


def test_a_crash_in_one_fuzzed_fusion_is_its_record(monkeypatch):
    import fusecli.runtime.aten as aten

    fuzz = _fuzz_benchmark()
    original = aten.AtenExecutor.run_expr

    def crashing(self, expr, env, ctx):
        if expr.op.value == "cast":
            raise ZeroDivisionError("integer modulo by zero")
        return original(self, expr, env, ctx)

    monkeypatch.setattr(aten.AtenExecutor, "run_expr", crashing)
    records = fuzz.run_chunk(list(range(12)), RunOptions(executor="aten"), 20)
    statuses = collections.Counter(r["status"] for r in records)
    assert statuses["pass"] and statuses["internal"], statuses
    crashed = next(r for r in records if r["status"] == "internal")
    assert "ZeroDivisionError" in crashed["error"] and "Traceback" in crashed["detail"]


@pytest.mark.cuda
def test_random_fusions_on_generated_kernels_match_the_reference():
    """On a GPU: the CuPy executor's kernels over 300 fuzz seeds (zero-size ones included)."""
    from fusecli.runtime.cupy_executor import cupy_available

    if cupy_available() is not None:
        pytest.skip(cupy_available())
    failures, kernels = [], 0
    for seed in range(300):
        loaded = fuzz_fusion(seed, device="cuda").loaded
        outcome = run_loaded(loaded, RunOptions(executor="cupy"))
        kernels += sum(1 for s in outcome.segments if s.executor == "cupy")
        if outcome.status != "pass":
            failures.append(f"seed {seed}: {outcome.status}: {outcome.error}")
    assert not failures, "\n".join(failures)
    assert kernels > 200


@pytest.mark.skipif(not emulate.available(), reason="g++ is not installed")
def test_random_fusions_on_emulated_kernels_match_the_reference():
    """On the CPU: every kernel the generator makes for fuzz seeds 0-99 (124 when this was
    written), run on the emulator, against the reference (a double output computed in float
    at float's tolerance). Seeds 0-2,999 were run so by hand: 3,786 kernels, all within."""
    from test_codegen import check_on_emulator

    kernels = 0
    for seed in range(100):
        loaded = fuzz_fusion(seed).loaded
        if segment_fusion(loaded.fusion, loaded.inputs).ok:
            kernels += check_on_emulator(loaded.fusion, loaded.inputs)
    assert kernels > 80


# -- regressions: one per bug the fuzzer found ---------------------------------------------------


def _segmented_matches_reference(fd, inputs) -> list[torch.Tensor]:
    segmented = segment_fusion(fd.fusion, inputs)
    check_segmentation(fd.fusion, segmented)
    got = execute_segmented(segmented, [t.clone() for t in inputs], executor="aten").outputs
    want = run_reference(fd.fusion, [t.clone() for t in inputs]).outputs
    for actual, expected in zip(got, want, strict=True):
        assert actual.shape == expected.shape and actual.dtype == expected.dtype
        assert torch.allclose(actual, expected, equal_nan=True)
    return got


def test_prod_over_some_dims_of_a_tensor_with_a_zero_size_kept_dim():
    """fuzz seed 388: prod flattened the reduced dims with reshape(..., -1), which torch
    cannot infer when a kept dim is zero-size."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True] * 3, dtype=DataType.Float)
        fd.add_output(fd.ops.prod(t0, dims=[1, 2], keepdim=False))
        fd.add_output(fd.ops.prod(t0, dims=[0], keepdim=True))
    first, second = _segmented_matches_reference(fd, [torch.randn(0, 3, 2)])
    assert first.shape == (0,) and second.shape == (1, 3, 2)
    assert torch.equal(second, torch.ones(1, 3, 2))


def test_cat_of_expanded_broadcasts_keeps_the_expansion():
    """fuzz seed 48: cat's output dropped an expanded broadcast's extent (1 ex 2 became 1),
    so the IR's shape disagreed with what every executor computes."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[1, 1, 2], contiguity=[None, None, True],
                              dtype=DataType.Float)
        t1 = fd.ops.expand(t0, shape=[1, 2, 2])
        t2 = fd.ops.cat([t1, t1], dim=2)
        fd.add_output(fd.ops.expand(t2, shape=[3, 2, 4]))
    (out,) = _segmented_matches_reference(fd, [torch.randn(1, 1, 2)])
    assert out.shape == (3, 2, 4)
    assert [d.expanded for d in t2.val.logical[:2]] == [None, 2]


def test_a_linear_between_two_uses_of_a_forwarded_input_chain_segments_into_a_dag():
    """fuzz seed 1773 (the issue's "linear between two ops that use the same input"): the
    unary chain erf(T1) is forwarded and joined to the pointwise consumer after the linear,
    while the linear (expr_eval) reads it from the chain's own group. Ordering the linear
    after the pointwise copy made the segment graph a cycle ("not a DAG")."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        w = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t3 = fd.ops.erf(t1)
        t4 = fd.ops.mul(t0, t3)
        t6 = fd.ops.linear(t3, w)
        fd.add_output(fd.ops.mul(fd.ops.mul(t6, t4), t6))
    _segmented_matches_reference(fd, [torch.randn(3, 4), torch.randn(3, 4), torch.randn(4, 4)])


def test_an_input_chain_only_dead_code_uses_is_no_segment():
    """fuzz seed 10: a unary chain from an input whose only uses are dead was forwarded and,
    with no live consumer to join, became a segment of its own: dead code that ran."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        chain = fd.ops.neg(fd.ops.cast(t0, dtype=DataType.Double))
        fd.ops.maximum(chain, chain)  # dead: no output reads it
        fd.add_output(fd.ops.add(fd.ops.linear(t1, t1), t1))  # two segments, not one
    segmented = segment_fusion(fd.fusion, [torch.randn(2, 3), torch.randn(3, 3)])
    ops = [e.op.value for s in segmented.segments for e in s.exprs]
    assert sorted(ops) == ["add", "linear"]
    _segmented_matches_reference(fd, [torch.randn(2, 3), torch.randn(3, 3)])
