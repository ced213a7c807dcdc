"""The harvest of nvFuser's test fusions (tests/conformance/harvest_plugin.py): how a harvested
fusion is named, which fusions count as the same, and that harvesting never fails a test."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

from fusecli.frontend import DataType
from fusecli.frontend.direct import DirectFusionDefinition
from fusecli.load import load_path

_PATH = Path(__file__).resolve().parent / "conformance" / "harvest_plugin.py"
_spec = importlib.util.spec_from_file_location("harvest_plugin", _PATH)
harvest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(harvest)

TEST = "python/direct/test_repro.py::test_issue1246[nvfuser_direct_test=lru_cache]"


def test_a_name_is_file_test_and_ordinal_as_a_file_name():
    assert harvest.harvest_name(TEST, 2) == "repro__test_issue1246_nvfuser_direct_test_lru_cache__2"
    assert harvest.harvest_name("python/test_python_frontend.py::TestX::test_y", 0,
                                "legacy_") == "legacy_python_frontend__TestX__test_y__0"


def test_names_too_long_are_cut_and_stay_distinct():
    first = harvest.harvest_name(f"test_ops.py::test_op[{'a' * 300}]", 0)
    second = harvest.harvest_name(f"test_ops.py::test_op[{'a' * 299}b]", 0)
    assert len(first) <= harvest.NAME_LENGTH + len("__0") and first != second


def test_the_key_is_definition_and_input_layout_not_scalar_values():
    contiguous, transposed = torch.ones(4, 8), torch.ones(8, 4).t()
    key = harvest.fusion_key("def f(fd): ...", [contiguous, 1.0])
    assert key == harvest.fusion_key("def f(fd): ...", [torch.zeros(4, 8), 2.5])
    assert key != harvest.fusion_key("def f(fd): ...", [transposed, 1.0])
    assert key != harvest.fusion_key("def f(fd): ...", [contiguous.half(), 1.0])
    assert key != harvest.fusion_key("def g(fd): ...", [contiguous, 1.0])


def test_the_execute_line_is_added_once():
    script = "inputs = [\n]\n"
    assert harvest.with_execute_line(script) == "inputs = [\n]\nfd.execute(inputs)\n"
    assert harvest.with_execute_line(script + "fd.execute(inputs)\n").count("fd.execute") == 1


@pytest.fixture
def probe(tmp_path):
    """A fresh subclass of fusecli's nvfuser_direct definition, its execute wrapped by a
    harvester into ``tmp_path / "out"`` (the frontend's own class stays as it is)."""
    (tmp_path / "seen").mkdir()
    (tmp_path / "out").mkdir()
    harvester = harvest.Harvester(tmp_path / "out", tmp_path / "seen", tmp_path / "log.jsonl")
    probe = type("Probe", (DirectFusionDefinition,), {"harvester": harvester})
    harvester.wrap(probe)
    harvester.start_test(TEST)
    return probe


def _events(harvester) -> list[str]:
    return [json.loads(line)["event"] for line in harvester.log.read_text().splitlines()]


def _sum_fusion(probe: type) -> DirectFusionDefinition:
    with probe() as fd:
        t0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.sum(fd.ops.relu(t0), dims=[1]))
    return fd


def test_each_distinct_fusion_is_written_once_and_loads_in_fusecli(probe):
    fd = _sum_fusion(probe)
    fd.execute([torch.randn(4, 8)])
    _sum_fusion(probe).execute([torch.randn(4, 8)])  # the same fusion again: a duplicate
    fd.execute([torch.randn(2, 8)])  # another shape: another fusion
    out = probe.harvester.out
    stem = "repro__test_issue1246_nvfuser_direct_test_lru_cache"
    assert sorted(path.name for path in out.iterdir()) == [f"{stem}__0.py", f"{stem}__2.py"]
    assert _events(probe.harvester) == ["harvested", "duplicate", "harvested"]
    (loaded,) = load_path(out / f"{stem}__2.py", device="cpu")
    assert tuple(loaded.inputs[0].shape) == (2, 8)


def test_a_harvesting_error_is_logged_and_the_test_goes_on(probe, monkeypatch):
    def broken(self, inputs=None):
        raise RuntimeError("no repro today")

    monkeypatch.setattr(probe, "repro_script_for", broken)
    (output,) = _sum_fusion(probe).execute([torch.ones(2, 3)])
    assert output.tolist() == [3.0, 3.0]
    assert _events(probe.harvester) == ["error"]
    assert list(probe.harvester.out.iterdir()) == []


def test_a_harvest_folder_compares_as_one_part_without_a_manifest(tmp_path, monkeypatch):
    """scripts/segmentation-population.py compare on a harvest: every file, part ``harvest``; a
    file fusecli cannot segment is its own status, not an error of the comparison."""
    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location(
        "segmentation_population", root / "scripts" / "segmentation-population.py")
    population = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, population)  # dataclasses look their module up
    spec.loader.exec_module(population)
    fusions, logs = tmp_path / "fusions", tmp_path / "logs"
    fusions.mkdir()
    logs.mkdir()
    corpus = root / "tests" / "nvfuser_corpus" / "x_pad_then_sum.py"
    golden = (root / "tests" / "golden" / "nvfuser" / "x_pad_then_sum.log").read_text()
    (fusions / "pad__test_sum__0.py").write_text(corpus.read_text())
    (fusions / "pad__test_broken__0.py").write_text("this is no fusion\n")
    for name in ("pad__test_sum__0", "pad__test_broken__0"):
        (logs / f"{name}.log").write_text(golden)
    results = {r.name: r for r in population.compare(fusions, logs)}
    assert {name: r.split for name, r in results.items()} == {
        "pad__test_sum__0": "harvest", "pad__test_broken__0": "harvest"}
    assert results["pad__test_broken__0"].status == "fusecli_failed"
    table = population.table(list(results.values())).splitlines()
    assert [line.split()[0] for line in table[1:3]] == ["harvest", "all"]
    assert table[1].split()[1:3] == ["2", "1"]
