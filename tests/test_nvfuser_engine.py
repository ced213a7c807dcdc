"""Real nvFuser as an engine, without a GPU: its recorded logs parsed, compared with fusecli's
segmentation, and the CLI's options when nvfuser_direct is not importable (exit 4).

The runner is injected: it returns the log nvFuser printed for that corpus fusion on the H200
(``tests/golden/nvfuser/``), so everything after the execution is what a GPU run goes through.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fusecli.app.engines import compare_with_fusecli, run_nvfuser
from fusecli.app.explain import ExplainOptions, explain_path
from fusecli.app.pipeline import RunOptions, run_file
from fusecli.cli.main import cli, register
from fusecli.engines.compare import EngineSegment, compare_engines
from fusecli.engines.nvfuser import NvfuserRun, unavailable_message, wants_nvfuser
from fusecli.engines.nvfuser_log import NVFUSER_SCHEDULERS, parse_log
from fusecli.load import load_path
from fusecli.reference import run_reference
from fusecli.report.engines_view import explain_json
from fusecli.runtime.bind import flatten_inputs
from fusecli.segment.rules import Switches
from fusecli.segment.segmenter import segment_fusion

register()
ROOT = Path(__file__).resolve().parent.parent
GOLDENS = ROOT / "tests" / "golden" / "nvfuser"
REFERENCE_LOGS = Path("/work/shared/reference/nvfuser-logs")
LOGS = sorted(GOLDENS.glob("*.log")) + sorted(REFERENCE_LOGS.glob("*.log"))
OUTCOMES = json.loads((GOLDENS / "outcomes.json").read_text(encoding="utf-8"))
SEED = ROOT / "fusions" / "matmul_reshape_permute.py"
HAS_NVFUSER = importlib.util.find_spec("nvfuser_direct") is not None
without_nvfuser = pytest.mark.skipif(HAS_NVFUSER, reason="nvfuser_direct is importable here")


def corpus_path(name: str) -> Path:
    from test_nvfuser_goldens import source_of

    return source_of(name)


def recorded_runner(loaded) -> NvfuserRun:
    """What nvFuser printed for this fusion on the H200, and its outputs as the reference
    computes them (nvFuser's matched it for every corpus fusion but the random one)."""
    log = (GOLDENS / f"{loaded.name}.log").read_text(encoding="utf-8")
    if OUTCOMES[loaded.name] != "ok":
        return NvfuserRun(log, None, OUTCOMES[loaded.name])
    outputs = run_reference(loaded.fusion, flatten_inputs(loaded.inputs)).outputs
    return NvfuserRun(log, list(outputs))


# -- the parser, on every real log ---------------------------------------------------------------


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_every_log_parses_into_nvfusers_schedulers(log):
    text = log.read_text(encoding="utf-8")
    parsed = parse_log(text)
    assert bool(parsed.hints) == bool(parsed.text.strip())  # an empty log: nvFuser failed early
    assert all(h.startswith("***Runtime***") for h in parsed.hints)
    groups = text.count("\ngroup id: ")
    assert len(parsed.segments) == groups
    assert parsed.ok == (groups > 0)
    for segment in parsed.segments:
        assert segment.scheduler in NVFUSER_SCHEDULERS
        assert segment.ops and "?" not in segment.ops, segment
        assert segment.outputs
    verdicts = [v for c in parsed.candidates for v in c.verdicts]
    assert {v.scheduler for v in verdicts} <= set(NVFUSER_SCHEDULERS)
    assert all(v.reason for v in verdicts if not v.accepted)
    assert len(parsed.candidates) == text.count("**Segmenter** Considering fusion:") + (
        text.count("Try to schedule fusion un-segmented:")
    )


def test_the_seed_log_has_its_five_groups_and_candidates():
    parsed = parse_log((GOLDENS / "matmul_reshape_permute.log").read_text(encoding="utf-8"))
    assert [(s.scheduler, s.ops) for s in parsed.segments] == [
        ("expr_eval", ("permute",)),
        ("pointwise", ("permute", "reshape")),
        ("expr_eval", ("matmul",)),
        ("expr_eval", ("segment_set",)),
        ("expr_eval", ("reshape", "permute")),
    ]
    assert [s.id for s in parsed.segments] == [0, 3, 1, 2, 4]
    assert parsed.segments[2].inputs == ("T2", "T8") and parsed.segments[2].outputs == ("T5",)
    assert parsed.hints[0] == "***Runtime***: Has segment hints, skip un-segmented scheduling."
    first = parsed.candidates[0]
    assert first.ops == ("permute",) and first.accepted == "expr_eval"
    # a reason printed over several lines is one reason
    matmul = next(v for c in parsed.candidates for v in c.verdicts
                  if v.scheduler == "matmul" and "trivial prologue" in v.reason)
    assert matmul.reason.endswith("reshape( T3_l___bfloat[iS49{16}, iS8{i1}, iS7{i0}] )")


def test_a_log_without_segments_is_nvfusers_failure():
    text = (REFERENCE_LOGS / "matmul_reshape_permute.disable-matmul_expr_eval.log")
    if not text.exists():
        pytest.skip("the shared reference logs are not here")
    parsed = parse_log(text.read_text(encoding="utf-8"))
    assert not parsed.ok and parsed.segments == []
    last = parsed.candidates[-1]
    assert last.accepted is None and {v.scheduler for v in last.verdicts} >= {"matmul"}


# -- comparison ---------------------------------------------------------------------------------


def _compare(name: str, switches: Switches | None = None):
    (loaded,) = load_path(corpus_path(name), device="cpu")
    segmented = segment_fusion(loaded.fusion, loaded.inputs, switches=switches)
    return compare_with_fusecli(segmented, run_nvfuser(loaded, recorded_runner))


def test_comparison_finds_exactly_the_known_divergences():
    from test_nvfuser_goldens import KNOWN_DIVERGENCES, NVFUSER_FAILED

    verdicts = {name: _compare(name) for name in sorted(OUTCOMES)}
    diverging = {n for n, c in verdicts.items() if not c.agree and not c.errors}
    assert diverging == set(KNOWN_DIVERGENCES)
    failed = {n for n, c in verdicts.items() if "nvfuser" in c.errors}
    assert failed == set(NVFUSER_FAILED)
    for name, comparison in verdicts.items():
        if name not in diverging | failed:
            assert comparison.verdict() == "segmentations agree"


def test_first_divergence_names_the_segment_and_each_choice():
    # every recorded fusion agrees now: disabling fusecli's resize scheduler makes rope differ
    rope = _compare("rope", Switches(disabled=frozenset({"resize"})))
    index = rope.first_divergence
    assert index == 0
    row = rope.rows[index]
    assert (row.fusecli.scheduler, row.nvfuser.scheduler) == ("expr_eval", "resize")
    assert rope.verdict().startswith("segmentations differ at segment 0: ")
    assert "fusecli chose expr_eval (reshape, permute, slice, slice)" in rope.verdict()
    assert "nvfuser chose resize (reshape, permute, slice" in rope.verdict()
    # segments only one engine has are rows of their own
    assert [r.nvfuser is None for r in rope.rows] == [False, False, True, True, True, True]


def test_pairing_ignores_order_but_not_schedulers():
    ours = [EngineSegment(0, "pointwise", ("add",)), EngineSegment(1, "reduction", ("sum",))]
    swapped = [EngineSegment(0, "reduction", ("sum",)), EngineSegment(1, "pointwise", ("add",))]
    assert compare_engines(ours, swapped).agree
    other = [EngineSegment(0, "pointwise", ("add",)), EngineSegment(1, "inner_persistent", ())]
    comparison = compare_engines(ours, other)
    assert comparison.first_divergence == 1
    assert "fusecli chose reduction (sum); nvfuser chose inner_persistent" in comparison.verdict()


# -- the engine through the library, with the recorded runner ----------------------------------


def test_explain_with_the_nvfuser_engine_renders_its_log():
    options = ExplainOptions(engine="nvfuser", device="cpu")
    (outcome,) = explain_path(SEED, options, runner=recorded_runner)
    assert outcome.segmented is None and outcome.ok
    record = explain_json(outcome)
    assert record["engine"] == "nvfuser"
    assert [s["scheduler"] for s in record["segments"]] == [
        "expr_eval", "pointwise", "expr_eval", "expr_eval", "expr_eval"
    ]
    assert {"candidate", "scheduler", "accepted", "reason"} <= set(record["log"][0])


def test_explain_compare_engines_json_has_both():
    options = ExplainOptions(compare_engines=True, device="cpu")
    (outcome,) = explain_path(corpus_path("rope"), options, runner=recorded_runner)
    engines = explain_json(outcome)["engines"]
    assert [s["scheduler"] for s in engines["fusecli"]["segments"]] == ["resize", "resize"]
    assert [s["scheduler"] for s in engines["nvfuser"]["segments"]] == ["resize", "resize"]
    assert engines["comparison"]["agree"] is True
    options = ExplainOptions(compare_engines=True, device="cpu", disabled=frozenset({"resize"}))
    (outcome,) = explain_path(corpus_path("rope"), options, runner=recorded_runner)
    engines = explain_json(outcome)["engines"]
    assert engines["comparison"]["agree"] is False
    assert engines["comparison"]["first_divergence"] == 0


def test_run_compare_engines_diffs_both_against_eager_torch():
    options = RunOptions(device="cpu", compare_engines=True, nvfuser_runner=recorded_runner)
    (outcome,) = run_file(SEED, options)
    assert outcome.status == "pass"
    theirs = outcome.engines["nvfuser"]
    assert theirs.check == "real nvFuser vs reference"
    assert [s.executor for s in theirs.segments] == ["nvfuser"] * 5
    assert all(d.ok for d in theirs.outputs) and len(theirs.outputs) == 1
    assert outcome.engines["comparison"].agree


def test_run_with_the_nvfuser_engine_reports_its_failure():
    options = RunOptions(device="cpu", engine="nvfuser", nvfuser_runner=recorded_runner)
    (outcome,) = run_file(corpus_path("sum_expanded_broadcast"), options)
    assert outcome.status == "error" and outcome.exit_code == 3
    assert outcome.error.startswith("nvFuser: RuntimeError:")


# -- the command line without nvFuser ----------------------------------------------------------


@without_nvfuser
@pytest.mark.parametrize("command", ["explain-segmentation", "run"])
@pytest.mark.parametrize("option", [["--engine", "nvfuser"], ["--compare-engines"]])
def test_without_nvfuser_the_engine_options_exit_4_in_one_line(command, option):
    result = CliRunner().invoke(cli, [command, str(SEED), *option])
    assert result.exit_code == 4, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "nvfuser_direct" in lines[0] and "Traceback" not in lines[0]
    assert result.stdout == ""


@pytest.mark.parametrize("command", ["explain-segmentation", "run"])
def test_help_documents_both_options(command):
    result = CliRunner().invoke(cli, [command, "--help"])
    assert "--engine [fusecli|nvfuser]" in result.output and "--compare-engines" in result.output


def test_the_dlopen_flags_are_asked_for_only_with_the_engine():
    assert wants_nvfuser(["run", "x.py", "--engine", "nvfuser"])
    assert wants_nvfuser(["explain-segmentation", "x.py", "--engine=nvfuser"])
    assert wants_nvfuser(["run", "x.py", "--compare-engines"])
    assert not wants_nvfuser(["run", "x.py", "--engine", "fusecli"])


def test_an_undefined_symbol_says_how_to_load_the_wheel():
    error = ImportError("libnvfuser_codegen.so: undefined symbol: _ZN3c1013MessageLoggerC1E")
    message = unavailable_message(error)
    assert "RTLD_GLOBAL" in message and "sys.setdlopenflags" in message


def test_a_random_fusion_under_nvfuser_is_judged_by_dtype_and_shape():
    """nvFuser's Philox numbers are not the reference's: other values are no mismatch."""
    import torch

    from fusecli.app.pipeline import RunOptions, run_loaded

    def other_stream(loaded):
        run = recorded_runner(loaded)
        return NvfuserRun(run.log, [t + 1 if t.is_floating_point() else t for t in run.outputs])

    (loaded,) = load_path(ROOT / "fusions" / "dropout_residual.py", device="cpu")
    options = RunOptions(executor="aten", device="cpu", engine="nvfuser",
                         nvfuser_runner=other_stream)
    outcome = run_loaded(loaded, options)
    assert outcome.status == "pass", outcome.error
    assert any("random ops" in notice for notice in outcome.notices)
    assert not all(d.ok for d in outcome.outputs)  # the values are still shown as they are

    def wrong_shape(loaded):
        run = recorded_runner(loaded)
        return NvfuserRun(run.log, [torch.zeros(1) for _ in run.outputs])

    options = RunOptions(executor="aten", device="cpu", engine="nvfuser",
                         nvfuser_runner=wrong_shape)
    outcome = run_loaded(loaded, options)
    assert outcome.status == "mismatch"
