"""``benchmarks/sweep.py``: the variant grids, their kernels, and the summary, on the CPU.

Segments come from small fusions run on meta tensors with ATen (as the dry run does); the timer
is injected, so the summary is checked against fabricated times. The timing itself runs on the
GPU machine.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from fusecli.codegen import Kernel, generate, nvrtc
from fusecli.frontend import DataType, FusionDefinition
from fusecli.segment.schedulers import REGISTRY

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import sweep  # noqa: E402


def _pointwise(fd: FusionDefinition) -> None:
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    fd.add_output(fd.ops.add(fd.ops.relu(x), fd.define_scalar(1.0, dtype=DataType.Double)))


def _row_sum(fd: FusionDefinition) -> None:
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    fd.add_output(fd.ops.sum(x, dims=[1], keepdim=False))


def _column_sum(fd: FusionDefinition) -> None:
    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
    fd.add_output(fd.ops.sum(x, dims=[0], keepdim=False))


def _case(define, shape: tuple[int, ...], scheduler: str) -> sweep.SegmentCase:
    with FusionDefinition() as fd:
        define(fd)
    inputs = [torch.empty(shape, device="meta")]
    cases = list(sweep.segment_cases("small", fd.fusion, inputs, executor="aten"))
    assert [case.segment.scheduler for case in cases] == [scheduler]
    return cases[0]


CASES = {
    "pointwise": (_pointwise, (64, 256), "pointwise"),
    "reduction": (_row_sum, (64, 1024), "reduction"),
    "outer reduction": (_column_sum, (4096, 1024), "reduction"),
}


def _default_and_grid(case: sweep.SegmentCase):
    default = REGISTRY[case.segment.scheduler].heuristics(case.segment.candidate, case.sizes)
    return default, sweep.variant_grid(default, case.segment.scheduler)


@pytest.mark.parametrize("name", CASES)
def test_the_grid_starts_with_the_default_and_names_each_variant_once(name: str) -> None:
    default, grid = _default_and_grid(_case(*CASES[name]))
    labels = [sweep.label(params) for params in grid]
    assert len(grid) > 4 and grid[0] == default
    assert len(set(labels)) == len(labels)
    assert any("threads=" in label for label in labels[1:])


@pytest.mark.parametrize("name", CASES)
def test_every_variant_generates_a_kernel_of_its_own_launch(name: str) -> None:
    case = _case(*CASES[name])
    _, grid = _default_and_grid(case)
    blocks = set()
    for params in grid:
        kernel = generate(replace(case.segment, params=params), case.sizes, case.tensors)
        assert isinstance(kernel, Kernel), (sweep.label(params), kernel)
        assert 'extern "C" __global__' in kernel.source and kernel.name in kernel.source
        blocks.add(kernel.block)
    assert len(blocks) > 1  # the variants do change the launch


def _fabricated(case: sweep.SegmentCase, kernels: list[Kernel]) -> list[float | str]:
    """Times from each kernel's params: 512 threads and unroll 4 fastest, 128 threads fails."""
    times: list[float | str] = []
    for kernel in kernels:
        params = dict(re.findall(r"(\w+)=(\w+)", kernel.params))
        if params["threads"] == "128":
            times.append("outputs differ from the default kernel's")
        else:
            times.append(1.0 - 0.1 * (params["threads"] == "512") - 0.05 * (params["unroll"] == "4")
                         - 0.01 * (params["vectorize"] == "4"))
    return times


def test_the_sweep_times_each_variant_with_the_timer_it_is_given() -> None:
    case = _case(*CASES["pointwise"])
    found = sweep.sweep_segment(case, _fabricated)
    assert found is not None and found.scheduler == "pointwise"
    assert found.default in found.times and found.size_class == "2^14 elements, 4-byte"
    assert set(found.times) | set(found.failed) == set(found.params)
    assert all("threads=128" in label for label in found.failed)
    assert found.best == "threads=512 unroll=4 vectorize=4"
    choice, = sweep.summarize([found])
    assert choice["best"] == found.best and choice["wins"] == 1
    assert choice["gain"] == pytest.approx(found.times[found.default] / 0.84, abs=1e-3)


def _segment(number: int, default: str, times: dict[str, float]) -> sweep.SegmentSweep:
    return sweep.SegmentSweep("member", number, "pointwise", "2^25 elements, 2-byte", default,
                              {name: {} for name in times}, {}, times)


def test_the_summary_picks_the_best_geometric_mean_among_variants_timed_everywhere() -> None:
    segments = [
        _segment(0, "a", {"a": 1.0, "b": 0.8, "c": 0.9, "only here": 0.1}),
        _segment(1, "a", {"a": 2.0, "b": 2.2, "c": 1.9}),
        _segment(2, "c", {"a": 1.0, "b": 0.7, "c": 1.0}),
    ]
    choice, = sweep.summarize(segments)
    assert choice["best"] == "b"  # "only here" is faster but timed in one segment only
    ratio = (0.8 * 1.1 * 0.7) ** (1 / 3)
    assert choice["gain"] == pytest.approx(1 / ratio, abs=1e-3)
    assert choice["wins"] == 2 and choice["segments"] == 3 and choice["default"] == "a"


def test_the_summary_keeps_size_classes_apart_and_skips_untimed_segments() -> None:
    small = _segment(0, "a", {"a": 1.0, "b": 2.0})
    large = sweep.SegmentSweep("member", 1, "pointwise", "2^26 elements, 2-byte", "a", {}, {},
                               {"a": 1.0, "b": 0.5})
    untimed = _segment(2, "a", {"a": math.nan, "b": math.nan})
    choices = sweep.summarize([small, large, untimed])
    assert [(c["size_class"], c["best"]) for c in choices] == [
        ("2^25 elements, 2-byte", "a"), ("2^26 elements, 2-byte", "b")]
    assert choices[0]["gain"] == 1.0 and choices[0]["wins"] == 0


@pytest.mark.skipif(not nvrtc.available(), reason="needs NVRTC (CuPy's binding)")
def test_the_dry_run_compiles_every_variant_and_writes_the_measurements(tmp_path, capsys) -> None:
    out = tmp_path / "sweep.json"
    code = sweep.main(["--population", "1", "--min-elements", "4096", "--dry-run",
                       "--out", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    rows = report["measurements"]
    assert rows and all(row["ms"] is None and row["failed"] is None for row in rows)
    assert sum(row["default"] for row in rows) == 1 and report["summary"] == []
    assert "0 failed; 0 fusions failed" in capsys.readouterr().out


def test_an_outer_reductions_variants_change_its_tiling() -> None:
    """The outer reduction's own kernel (outer_reduction.py) takes the swept row groups,
    unroll and waves: its block, grid or source differ by variant, and a variant that changes
    none of them is the default's kernel (the sweep times it once)."""
    case = _case(*CASES["outer reduction"])
    default, grid = _default_and_grid(case)
    assert {"groups", "unroll", "waves"} <= set(sweep.knobs(default))
    launches = {}
    for params in grid:
        if params.rows_per_block != default.rows_per_block:
            continue  # the thread-per-row kernel's knob: it runs only where tiling declines
        kernel = generate(replace(case.segment, params=params), case.sizes, case.tensors)
        launches.setdefault((kernel.grid, kernel.block, kernel.source), []).append(params)
    blocks = {block for _, block, _ in launches}
    assert {(32, 4, 1), (32, 8, 1), (32, 16, 1)} <= blocks
    assert len({grid_ for grid_, _, _ in launches}) > 2 and len(launches) > 6


def test_an_out_file_read_back_summarizes_as_the_sweep_did(tmp_path) -> None:
    """``--from``: the measurements of an ``--out`` file are the sweeps they were, failures
    and untimed variants included, so the summary (and a table written from it) is the
    same as the run's own."""
    found = sweep.sweep_segment(_case(*CASES["pointwise"]), _fabricated)
    others = [_segment(1, "a", {"a": 1.0, "b": 0.8}), _segment(2, "a", {"a": 2.0, "b": 1.5})]
    args = argparse.Namespace(population=3, seed=5, iters=7, schedulers=None, commit="abc")
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(sweep.report(args, "NVIDIA H200", [found, *others], ["x"])))
    settings, device, again, problems = sweep.recorded(path)
    assert (settings, device, problems) == (vars(args), "NVIDIA H200", ["x"])
    assert [(s.default, s.times, s.failed, s.kernel_of) for s in again] == [
        (s.default, s.times, s.failed, s.kernel_of) for s in [found, *others]]
    assert sweep.summarize(again) == sweep.summarize([found, *others])


def test_the_committed_table_is_what_its_measurements_choose(tmp_path, capsys) -> None:
    """fusecli/segment/tuning.json's choices are those ``--from`` its measurements beside it
    makes (a table edited by hand, or measured elsewhere, fails)."""
    committed = Path(sweep.__file__).resolve().parent.parent / "fusecli" / "segment"
    table = json.loads((committed / "tuning.json").read_text())
    path = tmp_path / "tuning.json"
    assert sweep.main(["--from", str(committed / "tuning.measurements.json"),
                       "--write-table", str(path)]) in (0, 1)
    written = json.loads(path.read_text())
    assert [(c["scheduler"], c["size_class"], c["knobs"]) for c in written["choices"]] == [
        (c["scheduler"], c["size_class"], c["knobs"]) for c in table["choices"]]


def test_add_keeps_the_classes_a_sweep_at_other_sizes_did_not_measure(tmp_path, capsys) -> None:
    """``--write-table --add``: a sweep at smaller sizes (``--min-elements``) adds its size
    classes to the table and replaces the ones it measured again; the classes it did not
    measure stay, measurements and all, and ``--from`` the merged measurements chooses the same
    table (the same member name at two sizes stays two sweeps)."""
    def recorded_file(name: str, segments: list[sweep.SegmentSweep]) -> Path:
        args = argparse.Namespace(population=2, seed=1, iters=5, schedulers=None, commit="abc",
                                  min_elements=4096, dry_run=False)
        path = tmp_path / name
        path.write_text(json.dumps(sweep.report(args, "NVIDIA H100", segments, [])))
        return path

    def at(size_class: str, number: int, times: dict[str, float]) -> sweep.SegmentSweep:
        return sweep.SegmentSweep("003 fuzz_7", number, "pointwise", size_class, "a",
                                  {name: {"threads": len(name)} for name in times}, {}, times)

    large = recorded_file("large.json", [at("2^25 elements, 2-byte", 0, {"a": 1.0, "bb": 0.5}),
                                         at("2^26 elements, 2-byte", 1, {"a": 1.0, "bb": 0.6})])
    small = recorded_file("small.json", [at("2^23 elements, 2-byte", 0, {"a": 1.0, "ccc": 0.7}),
                                         at("2^26 elements, 2-byte", 1, {"a": 0.5, "bb": 1.0})])
    table = tmp_path / "tuning.json"
    assert sweep.main(["--from", str(large), "--write-table", str(table)]) == 0
    assert sweep.main(["--from", str(small), "--write-table", str(table), "--add"]) == 0
    document = json.loads(table.read_text())
    choices = {c["size_class"]: c["best"] for c in document["choices"]}
    assert choices == {"2^23 elements, 2-byte": "ccc", "2^25 elements, 2-byte": "bb"}
    assert [k["size_class"] for k in document["defaults_kept"]] == ["2^26 elements, 2-byte"]
    again = tmp_path / "again.json"
    assert sweep.main(["--from", str(tmp_path / "tuning.measurements.json"),
                       "--write-table", str(again)]) == 0
    assert json.loads(again.read_text())["choices"] == document["choices"]
    capsys.readouterr()


@pytest.mark.skipif(not nvrtc.available(), reason="needs NVRTC (CuPy's binding)")
def test_files_sweeps_the_segments_of_chosen_fusions_but_writes_no_table(tmp_path, capsys):
    """``--files``: a slow fusion's own segments and their variants (why it is slow); a table
    still comes from the population only."""
    root = Path(sweep.__file__).resolve().parent.parent / "fusions"
    out = tmp_path / "files.json"
    assert sweep.main(["--files", str(root / "rms_norm.py"), "--dry-run",
                       "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["measurements"]
    assert {row["member"] for row in rows} == {"rms_norm"}
    assert {row["scheduler"] for row in rows} == {"inner_persistent"} and len(rows) > 10
    with pytest.raises(SystemExit):
        sweep.main(["--files", str(root / "rms_norm.py"), "--write-table",
                    str(tmp_path / "t.json")])
    capsys.readouterr()
