"""The analytic tolerance: the error analysis's bounds hold for a correct float32 computation
(eager torch) over ops and conditionings, and catch what the loose tolerance does not."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from fusecli.app.pipeline import RunOptions, run_loaded
from fusecli.cli.main import cli, register
from fusecli.compare.diff import IDENTICAL, JUDGED_AGAINST_FLOAT64, identical_diff
from fusecli.ir.optype import OpType
from fusecli.load import load_path
from fusecli.reference.bounds import unit_roundoff
from fusecli.runtime.registry import executor_named

register()
RMS_NORM = Path(__file__).parent.parent / "fusions" / "rms_norm.py"


def test_unit_roundoff_is_half_an_ulp() -> None:
    assert unit_roundoff(torch.bfloat16) == 2.0**-8
    assert unit_roundoff(torch.float16) == 2.0**-11
    assert unit_roundoff(torch.float32) == 2.0**-24
    assert unit_roundoff(torch.int64) == 0.0


def _bounds(build, inputs):
    from fusecli.frontend import FusionDefinition
    from fusecli.reference import run_reference

    with FusionDefinition() as fd:
        build(fd)
    exact = run_reference(fd.fusion, [i.clone() for i in inputs], float64=True, bounds=True)
    eager = run_reference(fd.fusion, [i.clone() for i in inputs]).outputs
    return exact.outputs, exact.bounds, eager


UNARY = ["exp", "log", "tanh", "sigmoid", "rsqrt", "sqrt", "sin", "cos", "erf", "silu",
         "log1p", "expm1", "reciprocal", "atan", "asinh"]


@pytest.mark.parametrize("name", UNARY)
def test_eager_float32_and_bfloat16_chains_stay_within_their_hard_bound(name) -> None:
    # Independent check of the bound: eager torch, a correct float32 implementation, must lie
    # within it of float64 everywhere, through a product, the op, a bf16 rounding and a sum.
    from fusecli.frontend import DataType

    def build(fd):
        x = fd.define_tensor(shape=[64, 256], dtype=DataType.Float)
        y = fd.define_tensor(shape=[64, 256], dtype=DataType.Float)
        z = getattr(fd.ops, name)(fd.ops.mul(x, y))
        low = fd.ops.cast(z, DataType.BFloat16)
        fd.add_output(z)
        fd.add_output(fd.ops.sum(fd.ops.mul(fd.ops.cast(low, DataType.Float), x), [1]))

    generator = torch.Generator().manual_seed(0)
    x = torch.rand(64, 256, generator=generator) * 2 + 0.05
    y = torch.rand(64, 256, generator=generator) * 2 + 0.05
    exact, bounds, eager = _bounds(build, [x, y])
    # Typical bounds: a few float32 ulps of z; about half a bfloat16 ulp of the sum of the
    # terms' magnitudes (a sum whose terms change sign cancels: its bound is relative to them).
    for index, (value, bound, result) in enumerate(zip(exact, bounds, eager, strict=True)):
        error = (result.to(torch.float64) - value).abs()
        finite = torch.isfinite(value)
        assert bool((error[finite] <= bound.hard[finite]).all()), name
        if index == 0:
            assert float((bound.hard[finite] / value.abs()[finite]).median()) < 1e-5, name
        else:
            terms = (exact[0].abs() * x.to(torch.float64)).sum(1)
            assert float((bound.hard / terms).median()) < 2.0**-7, name


def test_ill_conditioned_log_near_one_gets_the_bound_its_conditioning_gives() -> None:
    # log(x * y) with x * y near 1: the product's rounding is amplified by 1 / |log(x y)|.
    from fusecli.frontend import DataType

    def build(fd):
        x = fd.define_tensor(shape=[4096], dtype=DataType.Float)
        y = fd.define_tensor(shape=[4096], dtype=DataType.Float)
        fd.add_output(fd.ops.log(fd.ops.mul(x, y)))

    x = 1 + torch.linspace(-1e-5, 1e-5, 4096)
    y = torch.ones(4096) + 3e-7
    ((value,), (bound,), (result,)) = _bounds(build, [x, y])
    error = (result.to(torch.float64) - value).abs()
    assert bool((error <= bound.hard).all())
    relative = bound.hard / value.abs().clamp(min=1e-30)
    assert float(relative.max()) > 1e-2  # far beyond K u(float32): the conditioning


def test_a_tie_in_a_selection_still_carries_its_operands_bound() -> None:
    from fusecli.frontend import DataType

    def build(fd):
        x = fd.define_tensor(shape=[8], dtype=DataType.Float)
        e = fd.ops.exp(x)
        fd.add_output(fd.ops.minimum(e, e))

    ((value,), (bound,), _) = _bounds(build, [torch.linspace(-1, 1, 8)])
    assert bool((bound.hard >= 4 * 2.0**-24 * value.abs()).all())


def test_the_variance_of_equal_values_is_bounded_by_the_mean_s_error_squared() -> None:
    from fusecli.frontend import DataType

    def build(fd):
        x = fd.define_tensor(shape=[6, 512], dtype=DataType.Float)
        fd.add_output(fd.ops.var(fd.ops.atan2(x, x), [1], correction=1))

    x = torch.rand(6, 512) + 0.5
    ((value,), (bound,), (result,)) = _bounds(build, [x])
    assert bool(((result.to(torch.float64) - value).abs() <= bound.hard).all())


def test_a_user_tolerance_selects_the_loose_comparison_with_those_values() -> None:
    (loaded,) = load_path(RMS_NORM, device="cpu")
    outcome = run_loaded(loaded, RunOptions(executor="aten", device="cpu", rtol=0.5, atol=0.25))
    assert outcome.status == "pass"
    for diff in outcome.outputs:
        assert (diff.tolerance.rtol, diff.tolerance.atol) == (0.5, 0.25)
        assert "set by the user" in diff.tolerance.source


def _plant_rsqrt(monkeypatch, factor: float) -> None:
    ops = executor_named("aten").ops  # the shared executor's table, which every run uses
    entry = ops[OpType.rsqrt]

    def off(expr, args, ctx):
        return tuple(r * factor for r in entry(expr, args, ctx))

    monkeypatch.setitem(ops, OpType.rsqrt, off)


@pytest.mark.parametrize("factor", [1.05, 1.01, 0.99])
def test_rsqrt_off_by_a_few_percent_fails_analytic_and_passes_loose(monkeypatch, factor) -> None:
    # The example: an rsqrt 5% off passed `fusecli run` on RMSNorm's bf16 output.
    _plant_rsqrt(monkeypatch, factor)
    (loaded,) = load_path(RMS_NORM, device="cpu")
    analytic = run_loaded(loaded, RunOptions(executor="aten", device="cpu"))
    assert analytic.status == "mismatch"
    assert not analytic.outputs[0].ok and analytic.outputs[0].actual_dtype == "bfloat16"
    loose = run_loaded(loaded, RunOptions(executor="aten", device="cpu", tolerance="loose"))
    assert loose.outputs[0].ok  # what the loose bound hides: kept only behind the option


def test_cli_tolerance_option(monkeypatch) -> None:
    _plant_rsqrt(monkeypatch, 1.05)
    monkeypatch.setenv("FUSECLI_IN_PROCESS", "1")  # the planted fault lives in this process
    runner = CliRunner()

    def bf16_output_ok(*extra: str) -> tuple[int, bool]:
        result = runner.invoke(cli, ["run", str(RMS_NORM), "--executor", "aten", "--json", *extra])
        document = json.loads(result.stdout)
        (output,) = [o for o in document["fusions"][0]["outputs"] if o["dtype"] == "bfloat16"]
        return result.exit_code, output["ok"]

    assert bf16_output_ok() == (1, False)
    assert bf16_output_ok("--tolerance", "loose")[1] is True
    bad = runner.invoke(cli, ["run", str(RMS_NORM), "--tolerance", "blanket"])
    assert bad.exit_code == 2
    assert "--tolerance" in runner.invoke(cli, ["run", "--help"]).output
    assert "--tolerance" in runner.invoke(cli, ["bisect", "--help"]).output


def test_an_unplanted_rms_norm_passes_with_its_bound_reported() -> None:
    """The most precise executor there is (the float64 values, rounded once to the output
    dtype) differs from eager torch at rounding flips, and passes within its bounds."""
    from fusecli.app.judge import diff_outputs, float64_reference, identical_outputs
    from fusecli.reference import run_reference

    (loaded,) = load_path(RMS_NORM, device="cpu")
    options = RunOptions(executor="aten", device="cpu")
    expected = run_reference(loaded.fusion, list(loaded.inputs)).outputs
    precise, bounds = float64_reference(loaded.fusion, loaded.inputs, options)
    actual = [value.to(want.dtype) for value, want in zip(precise, expected)]
    # else nothing here would be judged by bounds
    assert any(same is None for same in identical_outputs(actual, expected))
    diffs = diff_outputs(loaded.fusion, loaded.inputs, actual, expected, precise, options, bounds)
    judged = [d for d in diffs if d.tolerance.source != IDENTICAL]
    assert judged and all(d.ok for d in diffs)
    for diff in judged:
        assert "bound of the float64 value" in diff.tolerance.source
        assert JUDGED_AGAINST_FLOAT64 in diff.notes


def test_outputs_that_are_eager_torchs_bit_for_bit_skip_the_float64_reference(monkeypatch):
    """On the CPU the ATen executor and eager torch agree bit for bit: passed in one pass, the
    float64 reference never runs (it is most of the time and memory of a large input)."""
    import fusecli.reference

    original = fusecli.reference.run_reference

    def refuse_float64(*args, **kwargs):
        if kwargs.get("float64"):
            raise AssertionError("the float64 reference ran")
        return original(*args, **kwargs)

    monkeypatch.setattr(fusecli.reference, "run_reference", refuse_float64)
    (loaded,) = load_path(RMS_NORM, device="cpu")
    outcome = run_loaded(loaded, RunOptions(executor="aten", device="cpu"))
    assert outcome.status == "pass", outcome.error
    assert all(d.tolerance.source == IDENTICAL and d.mismatch_count == 0 for d in outcome.outputs)


def test_an_output_that_differs_still_gets_the_float64_reference(monkeypatch):
    import fusecli.reference

    calls = []
    original = fusecli.reference.run_reference

    def counting(*args, **kwargs):
        calls.append(bool(kwargs.get("float64")))
        return original(*args, **kwargs)

    monkeypatch.setattr(fusecli.reference, "run_reference", counting)
    monkeypatch.setenv("FUSECLI_INJECT_FAULT", "rsqrt")
    (loaded,) = load_path(RMS_NORM, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fusecli's loud notice of the injected fault
        outcome = run_loaded(loaded, RunOptions(executor="aten", device="cpu"))
    assert any(calls) and outcome.status == "mismatch"  # a float64 run happened


def test_identical_means_bit_for_bit() -> None:
    x = torch.randn(64)
    assert identical_diff(x, x.clone()) is not None
    assert identical_diff(x, x.nextafter(x + 1)) is None  # one ulp
    assert identical_diff(x, x.double()) is None  # dtype
    nan = torch.tensor([math.nan])
    assert identical_diff(nan, nan.clone()) is None  # NaN: the full comparison decides


def test_a_cpu_aten_run_says_it_compares_torch_with_torch() -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["run", str(RMS_NORM), "--executor", "aten", "--json"])
    (fusion,) = json.loads(result.stdout)["fusions"]
    assert fusion["check"] == "ATen executor vs reference, both torch"
    rich = runner.invoke(cli, ["run", str(RMS_NORM), "--executor", "aten"])
    assert "ATen executor vs reference, both torch" in rich.stdout


def test_an_executor_that_loses_an_output_does_not_pass() -> None:
    from fusecli.app.judge import diff_outputs
    from fusecli.errors import PipelineError

    (loaded,) = load_path(RMS_NORM, device="cpu")
    outcome = run_loaded(loaded, RunOptions(executor="aten", device="cpu"))
    assert len(outcome.outputs) == 2
    one = [torch.zeros(1)]
    with pytest.raises(PipelineError, match="1 outputs from the executor, 2 expected"):
        diff_outputs(loaded.fusion, loaded.inputs, one, one * 2, None, RunOptions())
