"""Golden logs: the seed's decision log in nvFuser's segmenter_logging format, both profiles.

Regenerate after an intended change with
    fusecli explain-segmentation fusions/matmul_reshape_permute.py --format nvfuser \
        [--rules nvfuser-2024] > tests/golden/matmul_reshape_permute.<rules>.log
and review the diff: every changed line is a changed decision or reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fusecli.app.explain import ExplainOptions, explain_path
from fusecli.report.segmentation_view import nvfuser_log

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fusions" / "matmul_reshape_permute.py"


@pytest.mark.parametrize("rules", ["nvfuser", "nvfuser-2024"])
def test_seed_log_matches_golden(rules):
    (outcome,) = explain_path(SEED, ExplainOptions(rules=rules, device="cpu"))
    golden = (ROOT / "tests" / "golden" / f"matmul_reshape_permute.{rules}.log").read_text()
    assert nvfuser_log(outcome.segmented) == golden


def test_golden_2024_log_ends_in_nvfusers_error():
    text = (ROOT / "tests" / "golden" / "matmul_reshape_permute.nvfuser-2024.log").read_text()
    assert text.rstrip().endswith("Can not find a scheduler to schedule fusion segment")
    mma_block = text[text.rindex("**Segmenter** Considering fusion:"):]
    assert "   = mma(" in mma_block
    assert "Scheduler _matmul_ ***rejected*** because : MmaOp input has unsupported dependency" \
        in mma_block
