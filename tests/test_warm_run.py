"""The warm path of fd.execute (fusecli.runtime.warm): a replay computes what a full run does."""

from __future__ import annotations

import gc
import re
import warnings
import weakref
from pathlib import Path

import pytest
import torch

from fusecli.frontend import DataType, FusionDefinition
from fusecli.ir.nodes import flatten_inputs
from fusecli.load import discover, load_path
from fusecli.runtime.segmented import execute, run_fusion

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted(discover([ROOT / "fusions", ROOT / "tests" / "nvfuser_corpus",
                          ROOT / "tests" / "repros_2023"]))


def _runs(fusion) -> dict:
    return fusion.memo.get("warm", {})


def _rms_norm() -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16)
        eps = fd.define_scalar(dtype=DataType.Double)
        xf = fd.ops.cast(x, DataType.Float)
        mean = fd.ops.sum(fd.ops.mul(xf, xf), dims=[1], keepdim=True)
        mean = fd.ops.div(mean, fd.ops.size(x, 1))
        y = fd.ops.mul(xf, fd.ops.rsqrt(fd.ops.add(mean, eps)))
        y = fd.ops.mul(y, fd.ops.cast(fd.ops.broadcast_in_dim(w, fd.ops.shape(x), [1]),
                                      DataType.Float))
        fd.add_output(fd.ops.cast(y, DataType.BFloat16))
        fd.add_output(mean)
    return fd


def _eager_rms(x, w, eps):
    xf = x.float()
    mean = (xf * xf).sum(1, keepdim=True) / x.shape[1]
    return (xf * torch.rsqrt(mean + eps) * w.float()).bfloat16(), mean


def test_a_warm_call_computes_its_own_inputs() -> None:
    fd = _rms_norm()
    for _ in range(4):  # the first call runs in full; the others replay it
        x, w = torch.randn(6, 40).bfloat16(), torch.randn(40).bfloat16()
        out, mean = fd.execute([x, w, 1e-5])
        want, want_mean = _eager_rms(x, w, 1e-5)
        torch.testing.assert_close(out.float(), want.float(), atol=2e-2, rtol=2e-2)
        torch.testing.assert_close(mean, want_mean)
    (run,) = _runs(fd.fusion).values()
    assert run is not None and "def run(flat)" in run.source


def test_a_rewritten_fusion_replays_its_own_scalars() -> None:
    """var_mean becomes sum / size(x) when the whole fusion is no one kernel (welford.py): the
    replay computes the scalars of the fusion segmented, not of the one defined (a replay that
    raised made every call a full run, ten times the host time)."""
    with FusionDefinition() as fd:
        x = fd.ops.cast(fd.define_tensor(shape=[-1, -1], contiguity=[True, True],
                                         dtype=DataType.Half), DataType.Float)
        fd.add_output(fd.ops.sum(x, dims=[0]))
        var, mean = fd.ops.var_mean(x, dims=[1], correction=1)
        fd.add_output(var)
        fd.add_output(mean)
    x = torch.randn(64, 128).half()
    first = fd.execute([x])
    (run,) = _runs(fd.fusion).values()
    for got, want in zip(run([x]), first, strict=True):
        assert torch.equal(got, want)
    torch.testing.assert_close(first[1], x.double().var(1).float(), rtol=1e-4, atol=1e-4)


def test_an_expanded_output_returned_as_its_own_view_is_returned_directly() -> None:
    """The full run lays an expanded output out again (narrowed, made dense, expanded): where
    that is the same view of the same memory, the replay returns the value itself instead of
    collecting the outputs again (most of a warm call's host time for small fusions)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        fd.add_output(fd.ops.expand(fd.ops.neg(x), shape=[64, 128]))
    first = fd.execute([torch.randn(64, 1)])[0]
    (run,) = _runs(fd.fusion).values()
    assert run.source.rstrip().splitlines()[-1].lstrip().startswith("return [v")
    x = torch.randn(64, 1)
    (again,) = fd.execute([x])
    assert again.stride() == first.stride() == (1, 0)
    assert torch.equal(again, (-x).expand(64, 128))


def test_a_random_ops_seed_and_offsets_are_bound_per_call_not_keyed() -> None:
    """Unseeded random ops read a new seed and offsets every call (inputs of the seeded
    variant): one compiled run serves every call, drawing anew each time, and its draw is the
    full run's for the same seed and offsets (they were keyed by value: every call ran in
    full and compiled a run it never used again)."""
    from fusecli.frontend.generator import seeded_variant

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        keep = fd.ops.lt(fd.ops.rand_like(x), fd.define_scalar(0.9, dtype=DataType.Double))
        fd.add_output(fd.ops.where(keep, x, fd.define_scalar(0.0, dtype=DataType.Double)))
    x = torch.rand(32, 48) + 1
    masks = {tuple((fd.execute([x])[0] == 0).flatten().tolist()) for _ in range(5)}
    assert len(masks) == 5
    variant = seeded_variant(fd.fusion)
    (run,) = _runs(variant.fusion).values()
    inputs = variant.inputs([x])
    _, full = run_fusion(variant.fusion, inputs, executor="aten")
    assert torch.equal(run(list(flatten_inputs(inputs)))[0], full.outputs[0])


def test_each_call_returns_new_tensors_and_leaves_earlier_ones_alone() -> None:
    fd = _rms_norm()
    x, w = torch.randn(6, 40).bfloat16(), torch.randn(40).bfloat16()
    first = fd.execute([x, w, 1e-5])
    kept = [t.clone() for t in first]
    second = fd.execute([x * 2, w, 1e-5])
    assert all(a is not b for a, b in zip(first, second))
    assert all(torch.equal(a, b) for a, b in zip(first, kept))


@pytest.mark.parametrize("change", [
    lambda x, w, eps: ([x[:, :39], w[:39], eps], "size"),
    lambda x, w, eps: ([x.t().contiguous().t(), w, eps], "strides"),
    lambda x, w, eps: ([torch.randn(6, 41).bfloat16()[:, 1:], w, eps], "alignment"),
])
def test_another_signature_is_another_compiled_run(change) -> None:
    fd = _rms_norm()
    x, w = torch.randn(6, 40).bfloat16(), torch.randn(40).bfloat16()
    fd.execute([x, w, 1e-5])
    inputs, _ = change(x, w, 1e-5)
    try:
        out, _ = fd.execute(inputs)
    except RuntimeError:  # refused by the full run's checks (contiguity): not hidden
        assert len(_runs(fd.fusion)) == 1
        return
    torch.testing.assert_close(out.float(), _eager_rms(*inputs)[0].float(), atol=2e-2,
                               rtol=2e-2)
    assert len(_runs(fd.fusion)) == 2


def test_a_scalar_no_size_depends_on_is_read_anew_by_the_same_run() -> None:
    """The norm's epsilon feeds no size: another value is the same segmentation and the same
    compiled run, which reads this call's value (the run before this was keyed by it: every
    new value ran in full)."""
    fd = _rms_norm()
    x, w = torch.randn(6, 40).bfloat16(), torch.randn(40).bfloat16()
    for eps in (1e-5, 10.0, 0.5):
        out, mean = fd.execute([x, w, eps])
        want, _ = _eager_rms(x, w, eps)
        torch.testing.assert_close(out.float(), want.float(), atol=2e-2, rtol=2e-2)
    assert len(_runs(fd.fusion)) == 1 and len(fd.fusion.memo["plans"]) == 1


def test_a_scalar_read_anew_is_converted_or_refused_as_binding_does() -> None:
    """The replay takes a value of the scalar's own Python type as it is and binds any other
    as a full run does: an int or a 0-dim tensor given for a Double is its float, a bool given
    for an Int its int, and a string is refused naming the input."""
    from fusecli.errors import InputError

    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Double)
        scale, shift = fd.define_scalar(dtype=DataType.Double), fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.add(fd.ops.mul(x, scale), shift))
    x = torch.randn(8, dtype=torch.float64)
    for scale, shift in ((2.5, 3), (3, True), (torch.tensor(0.25), 7), (-1.0, -2), (3, True)):
        (out,) = fd.execute([x, scale, shift])  # keyed by type: each type its own run
        torch.testing.assert_close(out, x * float(scale) + int(shift), rtol=0, atol=0)
    sources = [run.source for run in _runs(fd.fusion).values() if run is not None]
    assert any("type(v" in source for source in sources), sources
    with pytest.raises(InputError, match="2.0"):
        fd.execute([x, "2.0", 1])


def test_thunder_style_dropout_keeps_one_run_across_philox_offsets() -> None:
    """A dropout seeded by scalar inputs (Thunder passes a new Philox offset every call): one
    segmentation and one compiled run serve every offset, and each call draws what a full
    run of its own seed and offset draws."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        seed, offset = fd.define_scalar(None, DataType.Int), fd.define_scalar(None, DataType.Int)
        drawn = fd.ops.uniform(fd.define_scalar(0.0), fd.define_scalar(1.0), shape=[16, 24],
                               rng_seed=seed, rng_offset=offset, dtype=DataType.Float)
        keep = fd.ops.lt(drawn, fd.define_scalar(0.9, dtype=DataType.Double))
        fd.add_output(fd.ops.where(keep, x, fd.define_scalar(0.0, dtype=DataType.Double)))
    x = torch.rand(16, 24) + 1
    masks = set()
    for step in range(4):
        inputs = [x, 2024, 4 * step]
        (out,) = fd.execute(inputs)
        _, full = run_fusion(fd.fusion, inputs, executor="aten")
        assert torch.equal(out, full.outputs[0])
        masks.add(tuple((out == 0).flatten().tolist()))
    assert len(masks) == 4
    assert len(_runs(fd.fusion)) == 1 and len(fd.fusion.memo["plans"]) == 1


def test_injected_faults_are_never_replayed(monkeypatch) -> None:
    fd = _rms_norm()
    x, w = torch.randn(6, 40).bfloat16(), torch.randn(40).bfloat16()
    good = fd.execute([x, w, 1e-5])[0]
    monkeypatch.setenv("FUSECLI_INJECT_FAULT", "rsqrt")
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fault's own notice
            bad = fd.execute([x, w, 1e-5])[0]
        assert not torch.equal(bad, good)
    assert None in _runs(fd.fusion).values()  # that signature runs in full each call
    monkeypatch.delenv("FUSECLI_INJECT_FAULT")
    assert torch.equal(fd.execute([x, w, 1e-5])[0], good)


def test_a_compiled_run_that_raises_is_dropped_once_the_full_run_succeeds() -> None:
    """A replay that fails where the full run does not (a defect of the replay) costs one
    call, not every call: the signature runs in full from then on."""
    fd = _rms_norm()
    x, w = torch.randn(6, 40).bfloat16(), torch.randn(40).bfloat16()
    good = fd.execute([x, w, 1e-5])
    (key,) = _runs(fd.fusion)
    calls = []

    def broken(flat):
        calls.append(flat)
        raise UnboundLocalError("a defect of the replay")

    _runs(fd.fusion)[key] = broken
    for _ in range(3):
        got = fd.execute([x, w, 1e-5])
        assert all(torch.equal(a, b) for a, b in zip(got, good, strict=True))
    assert len(calls) == 1 and _runs(fd.fusion)[key] is None


def test_aliased_outputs_are_written_on_every_call() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.add(x, fd.define_scalar(1.0)), x)
        fd.add_output(fd.ops.mul(x, x))
    x = torch.zeros(8)
    for call in range(1, 4):
        (square,) = fd.execute([x])
        assert torch.equal(x, torch.full((8,), float(call)))
        assert torch.equal(square, torch.full((8,), float((call - 1) ** 2)))


def test_an_input_returned_as_an_output_is_the_input_every_call() -> None:
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(x)
        fd.add_output(fd.ops.neg(x))
    x = torch.randn(5)
    for _ in range(3):
        same, negated = fd.execute([x])
        assert same is x  # nvFuser hands the input itself out (test_returning_aliased_outputs)
        assert torch.equal(negated, -x)


def _aliased_and_returned() -> FusionDefinition:
    with FusionDefinition() as fd:  # outputs collected as the full run collects them
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16)
        fd.define_scalar(dtype=DataType.Double)
        fd.add_output(fd.ops.cast(fd.ops.add(x, x), DataType.BFloat16), x)
        fd.add_output(w)
    return fd


@pytest.mark.parametrize("make", [_rms_norm, _aliased_and_returned])
def test_a_warm_call_retains_nothing(make) -> None:
    fd = make()
    x, w = torch.randn(6, 40).bfloat16(), torch.randn(40).bfloat16()
    for _ in range(3):
        outputs = fd.execute([x, w, 1e-5])
    assert any(run is not None for run in _runs(fd.fusion).values())
    refs = [weakref.ref(t) for t in (x, w, *outputs)]
    del x, w, outputs
    gc.collect()
    assert all(ref() is None for ref in refs)


def _input_memory(tensor: torch.Tensor, inputs: list) -> int | None:
    """Which input's memory ``tensor`` is in (its index), or None."""
    pointer = tensor.untyped_storage().data_ptr()
    return next((n for n, x in enumerate(flatten_inputs(inputs)) if isinstance(x, torch.Tensor)
                 and x.untyped_storage().data_ptr() == pointer), None)


def test_outputs_laid_out_again_are_made_by_the_plan_not_collected() -> None:
    """An output the full run re-lays out (a cast of an expanded input: its expanded dimension
    stays stride 0) or hands out twice is made by the replay itself, its layout decided once:
    the same strides, a new tensor each call, the same tensor twice where the run gave one."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[64, 1], contiguity=[None, None], dtype=DataType.Int32)
        y = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        half = fd.ops.cast(x, DataType.Half)
        fd.add_output(half)
        fd.add_output(half)
        fd.add_output(fd.ops.permute(y, dims=[1, 0]))
    x, y = torch.arange(1, dtype=torch.int32).reshape(1, 1).expand(64, 1), torch.randn(3, 5)
    _, full = run_fusion(fd.fusion, [x, y])
    earlier = None
    for _ in range(3):
        a, b, t = fd.execute([x, y])
        assert a.stride() == full.outputs[0].stride() == (0, 1) and a.dtype is torch.half
        assert a is b and torch.equal(a, x.half())
        assert torch.equal(t, y.t()) and _input_memory(t, [x, y]) == 1  # a view, as nvFuser's
        assert earlier is None or a.untyped_storage().data_ptr() != earlier
        earlier = a.untyped_storage().data_ptr()
    (run,) = _runs(fd.fusion).values()
    from fusecli.runtime.outputs import collect_outputs

    assert collect_outputs not in run.__call__.__globals__.values()
    assert "= Z" in run.source


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_the_replay_of_every_corpus_fusion_equals_its_full_run(path: Path) -> None:
    """Each corpus fusion (fusions/, the nvFuser-shape corpus, the 2023 repros): the second
    call of a signature replays the first; its outputs equal a full run's bit for bit."""
    for loaded in load_path(path, device="cpu", evaluate=False):
        fusion, inputs = loaded.fusion, loaded.inputs
        try:
            _, full = run_fusion(fusion, inputs, executor="aten")
        except RuntimeError:
            continue  # a fusion no scheduler takes (the point of some repros)
        execute(fusion, inputs, executor="aten")
        # the compiled run itself: fd.execute falls back to a full run where a replay raises
        (run,) = _runs(fusion).values()
        assert run is not None
        replayed = run(list(flatten_inputs(inputs)))
        assert len(replayed) == len(full.outputs)
        for got, want in zip(replayed, full.outputs):
            if isinstance(want, torch.Tensor):
                assert got.dtype == want.dtype and got.shape == want.shape
                assert got.stride() == want.stride()
                assert _input_memory(got, inputs) == _input_memory(want, inputs)
                assert torch.equal(got, want) or torch.equal(got, want.to(got.dtype)) or (
                    got.is_floating_point() and ((got == want) | (got.isnan() & want.isnan())).all()
                )
            else:
                assert got == want


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_on_the_gpu_the_replay_launches_what_the_full_run_launches(path: Path) -> None:
    """On generated kernels: the replay (planned launches, new pointers) equals the full run,
    and a call with other values of the signature computes those values."""
    from fusecli.runtime.cupy_executor import cupy_available

    if cupy_available() is not None:
        pytest.skip(cupy_available())
    for loaded in load_path(path, device="cuda", evaluate=False):
        fusion = loaded.fusion
        inputs = [x.cuda() if isinstance(x, torch.Tensor) and x.ndim else x
                  for x in loaded.inputs]
        try:
            _, full = run_fusion(fusion, inputs, executor="cupy")
        except RuntimeError:
            continue
        execute(fusion, inputs, executor="cupy")
        replayed = execute(fusion, inputs, executor="cupy")
        # the third call launches into the buffers the second made ahead, where it made them
        again = execute(fusion, inputs, executor="cupy")
        torch.cuda.synchronize()
        assert any(run is not None for run in fusion.memo["warm"].values())
        for got, more, want in zip(replayed, again, full.outputs, strict=True):
            if isinstance(want, torch.Tensor):
                assert got.shape == want.shape and got.dtype == want.dtype
                for value in (got, more):  # the second call's outputs left as they were
                    assert torch.equal(value, want) or (value.is_floating_point() and (
                        (value == want) | (value.isnan() & want.isnan())).all())


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_on_the_gpu_a_workspace_kernel_of_a_scalar_input_replays_once_for_all_values() -> None:
    """An outer reduction split over blocks (a zeroed workspace of partials and counters) of
    a tensor times a scalar input: one compiled run serves both values of the scalar (no size
    depends on it: ``cache.value_free_scalars``), binding each call's value, and each call
    computes its own inputs' values, through one ``Launch.plain`` call given the scalar."""
    from fusecli.runtime.cupy_executor import cupy_available

    if cupy_available() is not None:
        pytest.skip(cupy_available())
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Double)
        fd.add_output(fd.ops.sum(fd.ops.mul(x, s), dims=[0]))
    for value in (1.5, 1.5, -2.0, -2.0):
        x = torch.randn(16384, 512, device="cuda")
        (got,) = execute(fd.fusion, [x, value], executor="cupy")
        torch.testing.assert_close(got, (x.double() * value).sum(0).float(),
                                   rtol=1e-4, atol=1e-3)
    sources = [run.source for run in fd.fusion.memo["warm"].values() if run is not None]
    assert len(sources) == 1, sources
    assert re.search(r"\bBIND\(1, ", sources[0]), sources[0]
    # one plain call, given the scalar's local (runtime.warm_kernels), not the launch's own
    assert re.search(r"= P\d+\(", sources[0]) and not re.search(r"\bL\d+\(", sources[0])


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_on_the_gpu_numbers_of_scalars_read_anew_pass_to_plain_launches() -> None:
    """A scale that is the product of two scalar inputs, and a fill of that plus one: each
    call's numbers, computed by the replay and given to the kernels' plain launches (no launch
    through its own call on the environment)."""
    from fusecli.runtime.cupy_executor import cupy_available

    if cupy_available() is not None:
        pytest.skip(cupy_available())
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)
        a, b = fd.define_scalar(dtype=DataType.Double), fd.define_scalar(dtype=DataType.Double)
        scale = fd.ops.mul(a, b)
        fd.add_output(fd.ops.cast(fd.ops.mul(fd.ops.cast(x, DataType.Float), scale),
                                  DataType.BFloat16))
        fd.add_output(fd.ops.full(shape=[4096], fill_value=fd.ops.add(scale, 1.0),
                                  dtype=DataType.Float))
    x = torch.randn(256, 4096, device="cuda").bfloat16()
    for first, second in [(0.5, 3.0), (0.5, 3.0), (-2.0, 0.25), (4.0, 4.0)]:
        scaled, filled = execute(fd.fusion, [x, first, second], executor="cupy")
        want = (x.float() * (first * second)).bfloat16()
        assert torch.equal(scaled, want) or torch.allclose(scaled.float(), want.float(),
                                                           rtol=1e-2, atol=1e-2)
        assert torch.equal(filled, torch.full((4096,), first * second + 1.0, device="cuda"))
    (source,) = [run.source for run in fd.fusion.memo["warm"].values() if run is not None]
    assert len(re.findall(r"= P\d+\(", source)) == 2 and not re.search(r"\bL\d+\(", source), source


@pytest.mark.parametrize("shape, strides, logical", [
    ((8192, 1), (), (8192, 4096)), ((4, 1, 3), (), (4, 5, 3)), ((3, 0), (), ()),
    ((2, 3), (1, 2), ()), ((2, 1), (1, 2), (2, 7)), ((1, 1), (), (1, 1)), ((), (), ()),
])
def test_a_planned_launch_allocates_an_expanded_output_in_one_call(shape, strides, logical):
    """``Launch.plain`` makes each output with one ``torch.empty_strided`` call: the shape,
    strides and storage of the buffer ``empty_output`` makes, expanded to the logical
    shape."""
    from fusecli.runtime.launch import allocated_layout, empty_output

    buffer = empty_output(shape, strides, torch.float32, torch.device("cpu"))
    expected = buffer.expand(logical) if logical else buffer
    size, made_strides = allocated_layout(shape, strides, logical)
    made = torch.empty_strided(size, made_strides)
    assert made.shape == expected.shape and made.stride() == expected.stride()
    assert made.untyped_storage().nbytes() == expected.untyped_storage().nbytes()


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_on_the_gpu_an_expanded_output_replays_as_one_allocation_with_its_strides() -> None:
    """A kernel whose outputs are expanded (written once per row, stride 0 along the expanded
    dim): each replay returns them with the full run's shape and strides and its own values."""
    from fusecli.runtime.cupy_executor import cupy_available

    if cupy_available() is not None:
        pytest.skip(cupy_available())
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, -1], contiguity=[True, None], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        fd.add_output(fd.ops.neg(x))
        fd.add_output(fd.ops.mul(fd.ops.expand(y, shape=[4096, 512]), fd.ops.exp(x)))
    for _ in range(4):
        x = torch.randn(4096, 1, device="cuda").expand(4096, 512)
        y = torch.randn(4096, 1, device="cuda")
        neg, product = execute(fd.fusion, [x, y], executor="cupy")
        for got, want in ((neg, -x), (product, y * x.exp())):
            assert got.shape == want.shape and got.stride() == (1, 0)
            torch.testing.assert_close(got, want)
    assert any(run is not None for run in fd.fusion.memo["warm"].values())


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("numel", [1 << 12, 1 << 24], ids=["short", "long"])
def test_on_the_gpu_a_long_last_kernel_makes_the_next_calls_outputs_ahead(numel) -> None:
    """A run whose last launch moves enough bytes makes the next call's outputs after it
    (``runtime.spares``); each call still returns new tensors of its own values."""
    from fusecli.runtime.cupy_executor import cupy_available

    if cupy_available() is not None:
        pytest.skip(cupy_available())
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        y = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        fd.add_output(fd.ops.add(x, y))
        fd.add_output(fd.ops.mul(x, y))
    outputs = []
    for _ in range(4):
        x, y = torch.randn(numel, device="cuda"), torch.randn(numel, device="cuda")
        outputs.append((execute(fd.fusion, [x, y], executor="cupy"), x + y, x * y))
    torch.cuda.synchronize()
    (run,) = _runs(fd.fusion).values()
    assert bool(re.search(r"\bQ\d+\(\)", run.source)) == (numel == 1 << 24), run.source
    pointers = set()
    for (added, multiplied), want_added, want_multiplied in outputs:
        assert torch.equal(added, want_added) and torch.equal(multiplied, want_multiplied)
        pointers |= {added.data_ptr(), multiplied.data_ptr()}
    assert len(pointers) == 8
