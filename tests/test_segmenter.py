"""The segmenter: the seed under both rule profiles, corpus segmentations, invariants."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings

from fusecli.frontend import DataType, FusionDefinition
from fusecli.load import load_path
from fusecli.reference import run_reference
from fusecli.runtime.segmented import execute_segmented
from fusecli.segment.rules import Switches
from fusecli.segment.segmenter import segment_fusion
from tests.random_fusions import random_fusion

FUSIONS = Path(__file__).resolve().parent.parent / "fusions"
SEED = FUSIONS / "matmul_reshape_permute.py"


def _loaded(name: str):
    (loaded,) = load_path(FUSIONS / name, device="cpu")
    return loaded


def _segment(name: str, **options):
    loaded = _loaded(name)
    return segment_fusion(loaded.fusion, loaded.inputs, keep_log=True, **options)


def _schedulers(result) -> list[str]:
    return [s.scheduler for s in result.segments]


# -- the seed -------------------------------------------------------------------------------


def test_seed_segments_under_todays_rules():
    result = _segment("matmul_reshape_permute.py")
    assert result.ok
    assert _schedulers(result) == ["expr_eval", "pointwise", "expr_eval", "expr_eval",
                                   "expr_eval"]
    assert [[e.op.value for e in s.exprs] for s in result.segments[2:]] == [
        ["matmul"], ["segment_set"], ["reshape", "permute"]
    ]
    # MarkAliasesPrepare's segment_set is a hint: the whole fusion is not tried
    assert all(entry.phase != "whole" for entry in result.log)
    with_matmul = next(e for e in result.log if "matmul" in e.candidate.describe())
    reasons = {v.scheduler: v.reason for v in with_matmul.verdicts}
    assert reasons["pointwise"] == "Matmul ops are not supported."
    assert reasons["expr_eval"] == "Fusion must contain only a single expression."
    # no segment spans the segment_set: candidates that would are never asked
    spanning = [e for e in result.log if e.skipped]
    assert spanning and all(not e.verdicts for e in spanning)


def test_seed_fails_under_2024_rules_like_issue_2127():
    result = _segment("matmul_reshape_permute.py", profile="nvfuser-2024")
    assert not result.ok
    failure = result.failure
    assert [e.op.value for e in failure.candidate.exprs] == ["mma"]
    reasons = {v.scheduler: v.reason for v in failure.verdicts}
    # the exact lines of the log in nvFuser issue #2127
    assert reasons == {
        "no_op": "output has a concrete dimension",
        "matmul": "MmaOp input has unsupported dependency",
        "reduction": "No reduction op to schedule",
        "transpose": "no support for mma ops.",
        "pointwise": "cannot find reference tensor",
        "inner_persistent": "needs a reduction op",
        "outer_persistent": "needs a reduction op",
        "inner_outer_persistent": "needs a reduction op",
    }
    assert any("expr_eval" in line for line in failure.advice)


def test_seed_without_matmul_expr_eval_fails_like_nvfuser_2026():
    """NVFUSER_DISABLE=matmul_expr_eval: the golden log's 'Can not find a scheduler'."""
    result = _segment(
        "matmul_reshape_permute.py", switches=Switches(matmul_expr_eval=False)
    )
    assert not result.ok
    reasons = {v.scheduler: v.reason for v in result.failure.verdicts}
    assert reasons["expr_eval"] == (
        "Matmul ATen evaluation was disabled by NVFUSER_DISABLE=matmul_expr_eval"
    )
    assert reasons["matmul"].startswith("MatmulOp and LinearOp fusion is disabled by default")
    assert reasons["pointwise"] == "Matmul ops are not supported."


def test_seed_matmul_scheduler_rejects_the_reshape_prologue_first():
    # as in real nvFuser's log: on sm_90 the operands' prologue is checked before the
    # fuse_matmul option, so the permute + reshape + matmul candidate gets the prologue reason
    result = _segment("matmul_reshape_permute.py")
    reshape_prologue = next(
        e for e in result.log if e.candidate.describe() == "permute, reshape, matmul"
    )
    (matmul,) = [v for v in reshape_prologue.verdicts if v.scheduler == "matmul"]
    assert matmul.code == "non_trivial_prologue"
    assert "must have only trivial prologue ops" in matmul.reason
    assert matmul.reason.endswith("but found T4 = reshape(T3)")
    assert matmul.facts["op"] == "reshape"


def test_disabled_scheduler_is_never_asked():
    result = _segment("gelu_tanh.py", switches=Switches(disabled=frozenset({"pointwise"})))
    asked = {v.scheduler for entry in result.log for v in entry.verdicts}
    assert "pointwise" not in asked


# -- the corpus -----------------------------------------------------------------------------

GOLDEN = {
    "gelu_tanh.py": ["pointwise"],
    "bias_gelu_strided.py": ["pointwise"],
    "rms_norm.py": ["inner_persistent"],
    "layer_norm.yaml": ["inner_persistent"],
    "softmax.yaml": ["inner_persistent"],
    "silu_swiglu_linear.py": ["expr_eval", "expr_eval", "pointwise", "expr_eval"],
    "rope.py": ["resize", "resize"],  # q and k: no one reference covers both

    "integer_ops.py": ["pointwise"],
}


@pytest.mark.parametrize("name,expected", sorted(GOLDEN.items()))
def test_corpus_golden_segmentations(name, expected):
    assert _schedulers(_segment(name)) == expected


def test_each_linear_in_swiglu_is_its_own_expr_eval_segment():
    result = _segment("silu_swiglu_linear.py")
    linear_segments = [s for s in result.segments if any(e.op.value == "linear" for e in s.exprs)]
    assert len(linear_segments) == 3
    assert all(len(s.exprs) == 1 and s.scheduler == "expr_eval" for s in linear_segments)


@pytest.mark.parametrize(
    "path", sorted([*FUSIONS.glob("*.py"), *FUSIONS.glob("*.yaml")]), ids=lambda p: p.name
)
def test_every_corpus_fusion_segments_and_matches_the_reference(path):
    (loaded,) = load_path(path, device="cpu")
    result = segment_fusion(loaded.fusion, loaded.inputs)
    assert result.ok, result.failure
    _check_invariants(result)
    run = execute_segmented(result, _clone(loaded.inputs))
    expected = run_reference(loaded.fusion, _clone(loaded.inputs)).outputs
    for got, want in zip(run.outputs, expected, strict=True):
        assert torch.equal(got, want) or torch.allclose(
            got.double(), want.double(), equal_nan=True
        )


def _clone(inputs):
    from fusecli.load.inputs import clone_exact

    return clone_exact(list(inputs))


# -- invariants -----------------------------------------------------------------------------


def _check_invariants(result) -> None:
    """Every live tensor expr is in a segment (forwarded chains may be in several),
    segments run in an order where every input exists, and every fusion output is produced."""
    fusion = result.fusion
    needed = {o.value.uid for o in fusion.outputs}
    tensor_exprs = []
    for expr in reversed(fusion.exprs):  # live exprs: some output depends on them
        if any(o.uid in needed for o in expr.outputs):
            needed |= {v.uid for v in expr.inputs}
            if expr.tensor_outputs():
                tensor_exprs.append(expr)
    placed: dict[int, int] = {}
    for segment in result.segments:
        for expr in segment.exprs:
            placed[expr.uid] = placed.get(expr.uid, 0) + 1
    for expr in tensor_exprs:
        assert placed.get(expr.uid, 0) >= 1, f"{expr.op.value} is in no segment"
        if placed[expr.uid] > 1:
            # forwarded chains: unary ops and casts of inputs, and fulls (forwardInputs)
            assert expr.op.kind.value in ("unary", "cast", "create"), \
                "only forwarded chains repeat"
    available = {v.uid for v in fusion.inputs}
    for segment in result.segments:
        for value in segment.inputs:
            assert value.uid in available, "a segment reads a value no earlier segment wrote"
        available |= {o.uid for e in segment.exprs for o in e.outputs}
    for output in fusion.outputs:
        assert output.value.uid in available


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_fusion())
def test_segmentation_never_changes_results(case):
    fd, inputs = case
    result = segment_fusion(fd.fusion, inputs)
    assert result.ok
    _check_invariants(result)
    run = execute_segmented(result, _clone(inputs))
    expected = run_reference(fd.fusion, _clone(inputs)).outputs
    for got, want in zip(run.outputs, expected, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert torch.allclose(got.double(), want.double(), equal_nan=True, rtol=1e-2, atol=1e-2)


def test_segment_set_splits_the_fusion():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.ops.exp(t0)
        t2 = fd.ops.segment_set(t1)
        t3 = fd.ops.tanh(t2)
        fd.add_output(t3)
    result = segment_fusion(fd.fusion, [torch.randn(4, 4)], keep_log=True)
    assert len(result.segments) >= 2
    assert result.log[0].phase != "whole"  # hints skip the un-segmented attempt
    first = [e.op.value for e in result.segments[0].exprs]
    assert first[-1] == "segment_set"


def test_values_only_dead_code_reads_are_not_written_by_the_kernel():
    """A permuted intermediate that only a dead reshape reads is no segment output: the
    kernel writes the fusion's outputs and nothing else (found on the performance population,
    where it wrote two 256 MiB intermediates)."""
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True],
                              dtype=DataType.Int)
        t1 = fd.ops.sub(fd.ops.abs(t0), t0)
        t2 = fd.ops.permute(t1, dims=[2, 0, 1])
        fd.ops.reshape(t2, new_shape=[-1, 8])  # dead
        fd.ops.neg(t1)  # dead
        t3 = fd.ops.cast(t2, dtype=DataType.Float)
        fd.add_output(t3)
    inputs = [torch.randint(-5, 5, (2, 4, 8))]
    result = segment_fusion(fd.fusion, inputs)
    outputs = [v for s in result.segments for v in s.outputs]
    assert [v.uid for v in outputs] == [fd.fusion.outputs[0].value.uid]
    run = execute_segmented(result, inputs)
    expected = (inputs[0].abs() - inputs[0]).permute(2, 0, 1).float()
    assert torch.equal(run.outputs[0], expected)


def test_scalar_size_exprs_are_resolved_between_segments():
    with FusionDefinition() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        t1 = fd.ops.linear(t0, fd.define_tensor(shape=[-1, -1], contiguity=[True, True]))
        rows = fd.ops.size(t1, dim=0)
        flat = fd.ops.reshape(t1, new_shape=[rows, -1])
        fd.add_output(fd.ops.exp(flat))
    inputs = [torch.randn(3, 4), torch.randn(5, 4)]
    result = segment_fusion(fd.fusion, inputs)
    run = execute_segmented(result, inputs)
    assert torch.allclose(run.outputs[0], torch.exp(inputs[0] @ inputs[1].T))


def test_sizes_of_tensors_made_inside_a_segment():
    """Found by fusecli bisect: size() of a tensor the same segment computes, read by expand."""
    with FusionDefinition() as fd:
        rows, cols = fd.define_scalar(DataType.Int), fd.define_scalar(DataType.Int)
        a = fd.define_tensor(shape=[-1, 1], contiguity=[None, None], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, 1], contiguity=[None, None], dtype=DataType.Float)
        wide = fd.ops.expand(a, shape=[rows, cols])
        out = fd.ops.expand(b, shape=[fd.ops.size(wide, dim=0), fd.ops.size(wide, dim=1)])
        fd.add_output(out)
    inputs = [4, 8, torch.full((1, 1), 0.5), torch.full((1, 1), -0.5)]
    result = segment_fusion(fd.fusion, inputs)
    _check_invariants(result)
    (got,) = execute_segmented(result, inputs).outputs
    assert torch.equal(got, torch.full((4, 8), -0.5))


@pytest.mark.parametrize(("make", "op"), [("neg", "cast"), ("reshape", "reshape")])
def test_the_mma_dependency_advice_names_the_offending_producer(make: str, op: str) -> None:
    """The diagnosis is built from the verdict's evidence: the expr an MmaOp operand really
    comes through, not a fixed guess."""
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[16, 32], contiguity=[True, True], dtype=DataType.BFloat16)
        b = fd.define_tensor(shape=[32, 8], contiguity=[True, True], dtype=DataType.BFloat16)
        if make == "neg":  # neg computes in float: the operand is the cast back to bfloat16
            a = fd.ops.cast(fd.ops.neg(a), DataType.BFloat16)
        else:
            a = fd.ops.reshape(fd.ops.permute(a, dims=[1, 0]), new_shape=[16, 32])
        fd.add_output(fd.ops.matmul(a, b))
    x = [torch.randn(16, 32, dtype=torch.bfloat16), torch.randn(32, 8, dtype=torch.bfloat16)]
    segmented = segment_fusion(fd.fusion, x, profile="nvfuser-2024")
    assert segmented.failure is not None
    (matmul,) = [v for v in segmented.failure.verdicts if v.scheduler == "matmul"]
    assert matmul.reason == "MmaOp input has unsupported dependency"
    assert matmul.code == "mma_dependency"
    assert f" = {op}(" in matmul.facts["expr"]
    advice = " ".join(segmented.failure.advice)
    assert f"= {op}(" in advice and ("a reshape here" not in advice)


def test_a_batched_matmul_is_refused_explicitly_under_the_2024_profile():
    """Before MatmulOp (May 2024) only 2-D matmuls were lowered to an MmaOp: a batched matmul
    is no segment any scheduler of that date takes, transpose included, and the advice says
    so with the operands' ranks."""
    with FusionDefinition() as fd:
        q = fd.define_tensor(shape=[2, 4, 8, 16], contiguity=[True] * 4,
                             dtype=DataType.BFloat16)
        k = fd.define_tensor(shape=[2, 4, 16, 8], contiguity=[True] * 4,
                             dtype=DataType.BFloat16)
        fd.add_output(fd.ops.matmul(q, k))
    x = [torch.randn(2, 4, 8, 16, dtype=torch.bfloat16),
         torch.randn(2, 4, 16, 8, dtype=torch.bfloat16)]
    segmented = segment_fusion(fd.fusion, x, profile="nvfuser-2024")
    assert segmented.failure is not None
    assert not any(v.accepted for v in segmented.failure.verdicts)
    assert any("4-D x 4-D" in advice for advice in segmented.failure.advice)
    assert segment_fusion(fd.fusion, x).ok
