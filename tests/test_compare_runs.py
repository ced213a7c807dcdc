"""benchmarks/compare_runs.py: two vs_nvfuser.py runs compared, binned by MiB per output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(path: Path, rows: list[tuple[str, float, float, int, int]]) -> Path:
    path.write_text(json.dumps({"rows": [
        {"fusion": name, "gbps": {"fusecli": ours, "nvfuser": theirs}, "moved": moved << 20,
         "outputs": outputs} for name, ours, theirs, moved, outputs in rows]}))
    return path


def test_the_runs_geometric_means_and_the_bins_ratio(tmp_path) -> None:
    a = _run(tmp_path / "a.json", [("small", 90, 100, 8, 1), ("big", 120, 100, 128, 2),
                                   ("only_a", 1, 100, 8, 1)])
    b = _run(tmp_path / "b.json", [("small", 90, 100, 8, 1), ("big", 60, 100, 128, 2)])
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare_runs.py"),
                           str(a), str(b), "--bins", "24,40"],
                          capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert lines[0].endswith(f"{(0.9 * 1.2) ** 0.5:.3f}x over 2, 0 below 0.8x")
    assert lines[1].endswith(f"{(0.9 * 0.6) ** 0.5:.3f}x over 2, 1 below 0.8x")
    assert "0-24 MiB per output: 1 fusions, A/B 1.000" in lines
    assert "40-inf MiB per output: 1 fusions, A/B 2.000" in lines
    assert lines[lines.index("largest differences (A/B):") + 1].split()[0] == "big"


def test_a_file_that_is_not_a_run_is_one_line_and_exit_2(tmp_path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare_runs.py"),
                           str(bad), str(bad)], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
