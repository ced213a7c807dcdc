"""Segments without a kernel of their own run as parts (``runtime.parts``): a kernel per level
of reductions, then a pointwise kernel for the rest. Kernels emulated on the CPU (the CuPy
executor's flow, ``EmulatingExecutor``), outputs against eager torch in float64; the same
fusions on a GPU through ``fd.execute`` are in tests/test_reductions_cuda.py."""

from __future__ import annotations

import pytest
import torch
from test_codegen import EmulatingExecutor, _clone
from test_outer_reduction import fusion_of, run_segments

from fusecli.bisect.random_fusion import fuzz_fusion
from fusecli.codegen import Unsupported, emulate, generate
from fusecli.compare import compare_tensors, tolerance_for
from fusecli.ir.dtype import DataType
from fusecli.reference import run_reference
from fusecli.runtime.bind import bind_inputs
from fusecli.runtime.context import ExecutionContext
from fusecli.runtime.parts import kernel_parts
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.segmenter import segment_fusion

pytestmark = pytest.mark.skipif(not emulate.available(), reason="g++ is not installed")


def run_parts(inputs, body):
    """The outputs, and per segment its outcome, every segment run by the emulating executor."""
    outputs, outcomes, segmented, _ = run_segments(inputs, body)
    return outputs, outcomes, segmented


def close(actual: torch.Tensor, expected: torch.Tensor, rtol: float = 1e-5) -> None:
    torch.testing.assert_close(actual.double(), expected.to(actual.dtype).double(), rtol=rtol,
                               atol=rtol * max(1.0, expected.abs().max().item()))


def slice_sum_and_scale(fd, x):
    """A row statistic of the first 96 columns, and the whole input scaled: an output off the
    reduction's loop (no single kernel)."""
    part = fd.ops.cast(fd.ops.slice(x, [0, 0], [64, 96]), DataType.Float)
    total = fd.ops.sum(fd.ops.mul(part, part), dims=[1])
    rstd = fd.ops.rsqrt(fd.ops.add(fd.ops.div(total, 96.0), 1e-5))
    scaled = fd.ops.cast(fd.ops.mul(fd.ops.cast(x, DataType.Float), 0.5), DataType.BFloat16)
    return rstd, scaled


def test_an_output_off_the_reduction_loop_runs_as_two_kernels() -> None:
    x = torch.randn(64, 160).to(torch.bfloat16)
    (rstd, scaled), outcomes, segmented = run_parts([x], slice_sum_and_scale)
    (outcome,) = outcomes
    assert outcome.executor == "cupy" and outcome.fallback is None
    assert [part.scheduler for part, _ in outcome.parts] == ["reduction", "pointwise"]
    assert all(ran.executor == "cupy" for _, ran in outcome.parts)
    expected = x.double()[:, :96]
    close(rstd, torch.rsqrt((expected * expected).sum(1) / 96 + 1e-5))
    assert torch.equal(scaled, (x.float() * 0.5).to(torch.bfloat16))
    # the segment as a whole has no kernel: that is why it ran in parts
    (segment,) = segmented.segments
    whole = generate(segment, RuntimeInfo(segmented.fusion, [x]), [x])
    assert isinstance(whole, Unsupported) and whole.splittable


BATCH_NORM_SHAPE = [8, 64, 64, 64]  # 64 channels of 32,768: one inner_persistent segment


def batch_norm(fd, x, weight, bias):
    """NCHW statistics over N, H and W (few, long, strided rows) and the normalized output."""
    xf = fd.ops.cast(x, DataType.Float)
    var, mean = fd.ops.var_mean(xf, dims=[0, 2, 3], correction=0)
    rstd = fd.ops.rsqrt(fd.ops.add(var, 1e-5))
    shape = BATCH_NORM_SHAPE

    def per_channel(t):
        return fd.ops.broadcast_in_dim(t, shape, [1])

    y = fd.ops.mul(fd.ops.sub(xf, per_channel(mean)), per_channel(rstd))
    y = fd.ops.add(fd.ops.mul(y, per_channel(fd.ops.cast(weight, DataType.Float))),
                   per_channel(fd.ops.cast(bias, DataType.Float)))
    return fd.ops.cast(y, DataType.BFloat16), mean, rstd


def test_a_batch_norm_of_few_long_rows_computes_its_input_cast_again() -> None:
    """The statistics take the split-row reduction kernel; the normalization pass reads x
    itself and casts it again, not a float copy the first kernel would have written."""
    x = torch.randn(BATCH_NORM_SHAPE).to(torch.bfloat16)
    weight, bias = (torch.randn(64).to(torch.bfloat16) for _ in range(2))
    (y, mean, rstd), outcomes, _ = run_parts([x, weight, bias], batch_norm)
    (outcome,) = outcomes
    assert outcome.executor == "cupy"
    (stats, _), (rest, _) = outcome.parts
    assert stats.scheduler == "reduction" and rest.scheduler == "pointwise"
    assert len(stats.outputs) == 2  # mean and rstd; the float cast of x is not written
    assert {e.op.value for e in rest.exprs} >= {"cast", "sub"}
    expected = x.double()
    m = expected.mean((0, 2, 3))
    r = torch.rsqrt(expected.var((0, 2, 3), correction=0) + 1e-5)
    close(mean, m)
    close(rstd, r, 1e-4)
    per = (lambda t: t.double().view(1, -1, 1, 1))  # noqa: E731
    want = ((expected - per(m)) * per(r) * per(weight) + per(bias))
    close(y, want, 1e-2)


def test_reductions_in_a_chain_take_a_part_each() -> None:
    """A row sum reshaped and summed again: two levels of reductions, two reduction parts."""
    x, w = torch.randn(128, 256), torch.randn(8, 16)

    def body(fd, x, w):
        total = fd.ops.sum(x, dims=[1])
        grid = fd.ops.reshape(total, [8, 16])
        return grid, fd.ops.sum(fd.ops.mul(grid, w), dims=[1])

    (grid, result), outcomes, _ = run_parts([x, w], body)
    expected = x.double().sum(1).view(8, 16)
    close(grid, expected)
    close(result, (expected * w.double()).sum(1))
    assert all(o.executor == "cupy" for o in outcomes)


def test_a_reshape_of_a_reductions_rows_is_a_view_not_a_kernel() -> None:
    """A row sum reshaped as an output: the reshape is the last part, on ATen (expr_eval: a
    view of what the reduction part wrote), not a pointwise kernel copying it."""
    x, w = torch.randn(128, 256), torch.randn(8, 16)

    def body(fd, x, w):
        grid = fd.ops.reshape(fd.ops.sum(x, dims=[1]), [8, 16])
        return grid, fd.ops.sum(fd.ops.mul(grid, w), dims=[1])

    (grid, result), outcomes, _ = run_parts([x, w], body)
    close(grid, x.double().sum(1).view(8, 16))
    close(result, (x.double().sum(1).view(8, 16) * w.double()).sum(1))
    parted = [o for o in outcomes if o.parts]
    assert parted and all(o.fallback is None for o in outcomes)
    schedulers = [(part.scheduler, ran.executor) for part, ran in parted[0].parts]
    assert schedulers == [("reduction", "cupy"), ("expr_eval", "aten")], schedulers


def test_a_random_op_is_never_computed_twice() -> None:
    """Values the pointwise part reads from a reduction part through a random op are written
    by that part and read, not drawn again."""
    x = torch.randn(16, 2048)

    def body(fd, x):
        noisy = fd.ops.add(x, fd.ops.rand_like(x))
        return fd.ops.sum(noisy, dims=[0]), fd.ops.mul(noisy, 2.0)

    (segment,) = segment_fusion(fusion_of([x], body), [x]).segments
    stats, rest = kernel_parts(segment)
    assert [e.op.value for e in rest.exprs] == ["mul"]  # reads the noisy values written
    noisy = next(e for e in stats.exprs if e.op.value == "add").output
    assert noisy.uid in {v.uid for v in stats.outputs} & {v.uid for v in rest.inputs}


def test_a_segment_without_reductions_is_not_cut() -> None:
    x = torch.randn(8, 16)
    segmented = segment_fusion(fusion_of([x], lambda fd, x: [fd.ops.exp(x)]), [x])
    assert kernel_parts(segmented.segments[0]) is None


def test_parts_are_made_once_per_segment() -> None:
    x = torch.randn(64, 160).to(torch.bfloat16)
    segment = segment_fusion(fusion_of([x], slice_sum_and_scale), [x]).segments[0]
    assert kernel_parts(segment) is kernel_parts(segment)


def emulated_run(seed: int):
    """Random fusion ``seed`` (``fuzz_fusion``) run segment by segment on the emulating
    executor: each segment's outcome, and per output (its value, what it should be)."""
    loaded = fuzz_fusion(seed).loaded
    segmented = segment_fusion(loaded.fd.fusion, loaded.inputs)
    if not segmented.ok:
        return [], []
    fusion, inputs = segmented.fusion, loaded.inputs
    expected = run_reference(fusion, _clone(inputs), keep_intermediates=True).values
    env = {v.uid: x for v, x in zip(fusion.inputs, inputs)}
    env.update({u: v for u, v in expected.items() if not isinstance(v, torch.Tensor)})
    ctx = ExecutionContext.for_fusion(fusion, device="cpu", faults=frozenset(),
                                      extents=bind_inputs(fusion, inputs).extents)
    executor = EmulatingExecutor(poison=True)
    outcomes = [executor.run_segment(segment, env, ctx) for segment in segmented.segments]
    return outcomes, [(env[o.value.uid], expected[o.value.uid]) for o in fusion.outputs
                      if isinstance(expected.get(o.value.uid), torch.Tensor)]


def assert_outputs_match(outputs) -> None:
    for actual, want in outputs:
        diff = compare_tensors(actual, want, tolerance=tolerance_for(want.dtype, 4096))
        assert diff.ok, diff.summary()


def test_a_value_another_segment_reads_is_written_though_the_rest_computes_it_again() -> None:
    """Random fusion 391: sign(x) feeds the reduction part's min, the pointwise part's
    permute, and the next segment's cat. The pointwise part computes sign again, but sign(x)
    is still written for the cat (it was private to both parts, and the cat found it
    missing)."""
    outcomes, outputs = emulated_run(391)
    assert outcomes[0].parts  # the case: the first segment runs as parts
    assert_outputs_match(outputs)


def test_random_fusions_run_as_parts_match_the_reference() -> None:
    """Of random fusions 0-399 (``fuzz_fusion``, every op family), those with a segment run
    as parts (12 when this was written: 9, 102, 158, ...; the count moves as generators take
    more segments whole): every output matches eager torch."""
    found = [seed for seed in range(400) if cut(seed)]
    assert len(found) >= 6
    for seed in found:  # only those are emulated: compiling every kernel would take minutes
        outcomes, outputs = emulated_run(seed)
        assert any(outcome.parts for outcome in outcomes), seed
        assert_outputs_match(outputs)


def cut(seed: int) -> bool:
    """Whether random fusion ``seed`` has a segment the generator refuses whole and that has
    parts (no kernel compiled to say so)."""
    loaded = fuzz_fusion(seed).loaded
    segmented = segment_fusion(loaded.fd.fusion, loaded.inputs)
    if not segmented.ok:
        return False
    fusion, inputs = segmented.fusion, loaded.inputs
    known = run_reference(fusion, _clone(inputs), keep_intermediates=True).values
    known.update({v.uid: x for v, x in zip(fusion.inputs, inputs)})
    sizes = RuntimeInfo(fusion, inputs)
    for segment in segmented.segments:
        kernel = generate(segment, sizes, [known[v.uid] for v in segment.inputs])
        if getattr(kernel, "splittable", False) and kernel_parts(segment) is not None:
            return True
    return False


def test_codegen_shows_the_parts_kernels_and_why_the_segment_has_none() -> None:
    """``fusecli codegen`` (``check_fusion``) prints what the runtime runs: a kernel per part,
    the first saying why the segment as a whole has none."""
    from fusecli.app.codegen_check import check_fusion

    x = torch.randn(64, 160).to(torch.bfloat16)
    first, second = check_fusion(fusion_of([x], slice_sum_and_scale), [x], compile=False)
    assert [(c.label, c.scheduler, c.status) for c in (first, second)] == [
        ("0 part 1/2", "reduction", "generated"), ("0 part 2/2", "pointwise", "generated")]
    assert "neither a row nor a whole-loop value" in first.whole and second.whole is None


def _leaves(outcome):
    """The outcomes of a parted segment's parts, parts of parts included."""
    for _, part in outcome.parts:
        yield from _leaves(part) if part.parts else [part]


@pytest.mark.parametrize(("seed", "why"), [
    (190, "a cat the reduction reads reshaped, written for another segment"),
    (1508, "a var and a min of one level over rows of different lengths"),
])
def test_a_refused_reduction_part_is_cut_again(seed: int, why: str) -> None:
    """A reduction part the generator refuses is cut once more: a lone reduction whose
    ancestors write a value off its loop gets a pointwise part computing those first; one
    level's reductions over rows of different lengths get a part each. Every part runs a
    kernel (each ran on ATen before), and every output matches."""
    outcomes, outputs = emulated_run(seed)
    parted = [outcome for outcome in outcomes if outcome.parts]
    assert parted, why
    assert all(leaf.executor != "aten" for outcome in parted for leaf in _leaves(outcome)), [
        leaf.fallback for outcome in parted for leaf in _leaves(outcome)]
    assert_outputs_match(outputs)
