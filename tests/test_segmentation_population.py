"""The CPU side of scripts/segmentation-population.py and gpu-segmentation-population: the
population drawn by seed, its fixed split, and the agreement table against recorded logs
(here a real golden log stands in for one nvFuser would record)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from fusecli.load import load_path
from fusecli.segment.segmenter import segment_fusion

ROOT = Path(__file__).resolve().parent.parent
GOLDENS = ROOT / "tests" / "golden" / "nvfuser"


@pytest.fixture(scope="module")
def population():
    path = ROOT / "scripts" / "segmentation-population.py"
    spec = importlib.util.spec_from_file_location("segmentation_population", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_same_seed_draws_the_same_fusion(population):
    assert population.draw(7).text == population.draw(7).text
    assert population.draw(7).text != population.draw(8).text


def test_seeds_divisible_by_three_are_held_out(population):
    assert [population.split_of(seed) for seed in range(6)] == [
        "held_out", "fit", "fit", "held_out", "fit", "fit"
    ]


def test_the_population_covers_every_motif_and_fusecli_segments_it(population, tmp_path):
    members = population.generate(tmp_path, count=60)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [m["split"] for m in manifest] == [population.split_of(m.seed) for m in members]
    assert set(population.MOTIFS) <= {motif for m in members for motif in m.motifs}
    for member in members[:25]:
        text = (tmp_path / f"{member.name}.py").read_text()
        assert "from nvfuser_direct import FusionDefinition, DataType" in text
        (loaded,) = load_path(tmp_path / f"{member.name}.py", device="cpu")
        assert loaded.name == member.name
        assert segment_fusion(loaded.fusion, loaded.inputs).ok, member.name


def _fake_recording(tmp_path: Path, pairs: list[tuple[str, int, str]]) -> tuple[Path, Path]:
    """A population of corpus fusions, named as seeds, with real nvFuser logs as if recorded:
    (corpus file, seed, the golden log to pretend nvFuser printed)."""
    fusions, logs = tmp_path / "fusions", tmp_path / "logs"
    fusions.mkdir()
    logs.mkdir()
    manifest = []
    for source, seed, golden in pairs:
        name = f"pop_{seed}"
        text = (ROOT / source).read_text(encoding="utf-8")
        (fusions / f"{name}.py").write_text(f"# fusecli: {name}\n{text}", encoding="utf-8")
        shutil.copy(GOLDENS / f"{golden}.log", logs / f"{name}.log")
        manifest.append({"seed": seed, "name": name, "split": "held_out" if seed % 3 == 0
                         else "fit", "motifs": []})
    (fusions / "manifest.json").write_text(json.dumps(manifest))
    (logs / "outcomes.json").write_text(json.dumps({m["name"]: "ok" for m in manifest}))
    return fusions, logs


def test_the_table_counts_agreement_per_split(population, tmp_path):
    fusions, logs = _fake_recording(tmp_path, [
        ("tests/nvfuser_corpus/x_pad_then_sum.py", 1, "x_pad_then_sum"),  # fit, agrees
        ("fusions/matmul_reshape_permute.py", 3, "matmul_reshape_permute"),  # held out
        ("tests/nvfuser_corpus/x_pad_then_sum.py", 6, "matmul_reshape_permute"),  # differs
    ])
    loaded_name = load_path(fusions / "pop_1.py", device="cpu")[0].name
    if loaded_name != "pop_1":
        pytest.skip(f"the corpus file names its fusion {loaded_name}")
    results = {r.name: r for r in population.compare(fusions, logs)}
    assert results["pop_1"].status == "agree"
    assert results["pop_3"].status == "agree"
    assert results["pop_6"].status == "differ"
    table = population.table(list(results.values())).splitlines()
    assert table[1].split()[:3] == ["fit", "1", "1"] and "1/1" in table[1]
    assert table[2].split()[:3] == ["held_out", "2", "2"] and "1/2" in table[2]
    assert any(line.strip().startswith("pop_6 (held_out): nvFuser") for line in table)


def test_a_fusion_nvfuser_failed_on_is_not_counted(population, tmp_path):
    fusions, logs = _fake_recording(tmp_path, [
        ("tests/nvfuser_corpus/x_pad_then_sum.py", 2, "x_pad_then_sum"),
    ])
    (logs / "outcomes.json").write_text(json.dumps({"pop_2": "RuntimeError: bfs.h:261"}))
    (result,) = population.compare(fusions, logs)
    assert result.status == "nvfuser_failed"
    assert population.table([result]).splitlines()[1].split()[:3] == ["fit", "1", "0"]
