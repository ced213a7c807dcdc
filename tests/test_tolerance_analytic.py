"""The analytic tolerance: its formula, and what it catches that the loose one does not."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from fusecli.app.pipeline import RunOptions, run_loaded
from fusecli.cli.main import cli, register
from fusecli.compare import ErrorBudget, analytic_tolerance, tolerance_for
from fusecli.compare.analytic import ULPS_PER_OP, reduction_growth, unit_roundoff
from fusecli.compare.diff import JUDGED_AGAINST_FLOAT64
from fusecli.ir.optype import OpType
from fusecli.load import load_path
from fusecli.runtime import aten

register()
RMS_NORM = Path(__file__).parent.parent / "fusions" / "rms_norm.py"


def test_unit_roundoff_is_half_an_ulp() -> None:
    assert unit_roundoff(torch.bfloat16) == 2.0**-8
    assert unit_roundoff(torch.float16) == 2.0**-11
    assert unit_roundoff(torch.float32) == 2.0**-24
    assert unit_roundoff(torch.int64) == 0.0


def test_a_bf16_output_of_a_512_reduction_is_bounded_near_half_an_ulp() -> None:
    # RMSNorm: about ten float32 ops, a 512-element sum, one rounding to bfloat16 at the end.
    budget = ErrorBudget(roundings=2.0**-8 + 10 * ULPS_PER_OP * 2.0**-24, reduction_size=512)
    tolerance = analytic_tolerance(torch.bfloat16, budget, scale=4.0)
    assert tolerance.rtol < 0.005  # the loose rtol is 0.16 here
    assert tolerance_for(torch.bfloat16, 512).rtol == pytest.approx(0.16)
    growth = ULPS_PER_OP * 9 * math.sqrt(512) * 2.0**-24
    assert reduction_growth(512) == pytest.approx(growth)
    assert tolerance.atol == pytest.approx(
        (10 * ULPS_PER_OP * 2.0**-24 + growth) * 4.0 + torch.finfo(torch.bfloat16).smallest_normal
    )


def test_exact_dtypes_stay_exact_and_user_values_override() -> None:
    assert analytic_tolerance(torch.int32, ErrorBudget(1.0, 10), 3.0).exact
    tolerance = analytic_tolerance(torch.float32, ErrorBudget(), 1.0, rtol=0.5, atol=0.25)
    assert (tolerance.rtol, tolerance.atol) == (0.5, 0.25)
    assert "set by the user" in tolerance.source


def _plant_rsqrt(monkeypatch, factor: float) -> None:
    entry = aten.ATEN_OPS[OpType.rsqrt]

    def off(expr, args, ctx):
        return tuple(r * factor for r in entry(expr, args, ctx))

    monkeypatch.setitem(aten.ATEN_OPS, OpType.rsqrt, off)


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
    (loaded,) = load_path(RMS_NORM, device="cpu")
    outcome = run_loaded(loaded, RunOptions(executor="aten", device="cpu"))
    assert outcome.status == "pass"
    for diff in outcome.outputs:
        assert "vs float64" in diff.tolerance.source
        assert JUDGED_AGAINST_FLOAT64 in diff.notes


def test_a_cpu_aten_run_says_it_compares_torch_with_torch() -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["run", str(RMS_NORM), "--executor", "aten", "--json"])
    (fusion,) = json.loads(result.stdout)["fusions"]
    assert fusion["check"] == "ATen executor vs reference, both torch"
    rich = runner.invoke(cli, ["run", str(RMS_NORM), "--executor", "aten"])
    assert "ATen executor vs reference, both torch" in rich.stdout


def test_an_executor_that_loses_an_output_does_not_pass() -> None:
    from fusecli.app.pipeline import diff_outputs
    from fusecli.errors import PipelineError

    (loaded,) = load_path(RMS_NORM, device="cpu")
    outcome = run_loaded(loaded, RunOptions(executor="aten", device="cpu"))
    assert len(outcome.outputs) == 2
    one = [torch.zeros(1)]
    with pytest.raises(PipelineError, match="1 outputs from the executor, 2 expected"):
        diff_outputs(loaded.fusion, loaded.inputs, one, one * 2, None, RunOptions())
