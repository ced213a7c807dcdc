"""A 1% error planted in any one value-computing op of a corpus fusion is caught by ``fusecli
run``'s comparison (``--tolerance analytic``), and the unplanted runs raise no false alarm.

The error is planted in a patched copy of the ATen table entry (scaling that one expr's result by
1.01), not by ``FUSECLI_INJECT_FAULT``, whose corruption is far beyond any tolerance. Where the
fusion itself removes the 1% (softmax's ``exp`` divided by its own sum, an op that feeds only a
comparison, a max whose order scaling preserves), no output can show it: that is measured from
the fusion, by running it with and without the planted error, and the case is skipped with why.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from fusecli.app.judge import UNBOUNDED
from fusecli.app.pipeline import RunOptions, run_loaded
from fusecli.ir.optype import OpKind
from fusecli.load import load_path
from fusecli.runtime.registry import executor_named
from fusecli.runtime.segmented import run_fusion

CORPUS = sorted(
    p for p in (Path(__file__).parent.parent / "fusions").iterdir()
    if p.suffix in (".py", ".yaml")
)
PLANTED = 1.01
# Kinds whose results are values computed from operands (not moved, created or drawn).
COMPUTING = frozenset({
    OpKind.UNARY, OpKind.BINARY, OpKind.TERNARY, OpKind.REDUCTION, OpKind.NORMALIZATION,
    OpKind.SCAN, OpKind.MATMUL, OpKind.ATTENTION,
})


def _planting(target_uid: int, entry):
    def planted(expr, args, ctx):
        results = tuple(entry(expr, args, ctx))
        if expr.uid != target_uid:
            return results
        return tuple(
            (r.to(torch.float64) * PLANTED).to(r.dtype)
            if isinstance(r, torch.Tensor) and r.is_floating_point() else r
            for r in results
        )
    return planted


def _value_exprs(fusion):
    for position, expr in enumerate(fusion.exprs):
        if expr.op.kind not in COMPUTING:
            continue
        if any(_is_float(t) for t in expr.tensor_outputs()):
            yield position, expr


def _is_float(tensor_view) -> bool:
    from fusecli.ir.dtype import to_torch

    try:
        return to_torch(tensor_view.dtype).is_floating_point
    except ValueError:
        return False


def _outputs(loaded):
    from fusecli.load.inputs import clone_exact

    _, run = run_fusion(loaded.fusion, list(clone_exact(list(loaded.inputs))), executor="aten")
    return run.outputs


def _largest_change(clean, planted) -> float:
    """The largest normwise change of an output, in units of its dtype's half ulp: below 1 the
    fusion has removed the planted 1% (rounding to the output can hide what is left)."""
    largest = 0.0
    for before, after in zip(clean, planted, strict=True):
        if not before.is_floating_point():
            largest = max(largest, math.inf * float(torch.ne(before, after).any()))
            continue
        half_ulp = torch.finfo(before.dtype).eps / 2
        before, after = before.to(torch.float64), after.to(torch.float64)
        scale = before.abs().max().item() if before.numel() else 0.0
        if scale and torch.isfinite(torch.tensor(scale)):
            finite = torch.isfinite(before) & torch.isfinite(after)
            change = (after - before).abs()[finite]
            if change.numel():
                largest = max(largest, change.max().item() / scale / half_ulp)
    return largest


def _cases():
    for path in CORPUS:
        for index, loaded in enumerate(load_path(path, device="cpu")):
            for position, expr in _value_exprs(loaded.fusion):
                yield pytest.param(
                    path, index, position, id=f"{path.stem}-{index}-{expr.op.value}-{position}"
                )


OPTIONS = RunOptions(executor="aten", device="cpu")


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_no_false_alarm_without_a_planted_error(path: Path) -> None:
    for loaded in load_path(path, device="cpu"):
        outcome = run_loaded(loaded, OPTIONS)
        assert outcome.status == "pass", [d.summary() for d in outcome.outputs if not d.ok]


@pytest.mark.parametrize(("path", "index", "position"), list(_cases()))
def test_a_planted_one_percent_error_is_caught(path, index, position, monkeypatch) -> None:
    loaded = load_path(path, device="cpu")[index]
    expr = loaded.fusion.exprs[position]
    clean = _outputs(loaded)
    ops = executor_named("aten").ops  # the shared executor's table, which every run uses
    monkeypatch.setitem(ops, expr.op, _planting(expr.uid, ops[expr.op]))
    change = _largest_change(clean, _outputs(loaded))
    if change < 1.0:
        pytest.skip(f"the fusion removes the 1% of {expr.op.value}: outputs change by "
                    f"{change:.2g} half-ulps of their dtype at most")
    outcome = run_loaded(loaded, OPTIONS)
    if outcome.status == "pass" and all(
        d.tolerance.source.startswith(UNBOUNDED) for d in outcome.outputs
        if d.tolerance.rtol > 0
    ):
        # Known gap: a value rounded to bfloat16 inside the fusion and then computed with is
        # beyond the first-order analysis, and still judged by the loose tolerances.
        pytest.xfail(f"1% in {expr.op.value}: every floating output is judged loosely")
    assert outcome.status == "mismatch", (
        f"1% in {expr.op.value} (outputs change by {change:.2g} half-ulps) passed: "
        + "; ".join(f"{d.tolerance.source}: max rel {d.max_rel_err:.2g}" for d in outcome.outputs)
    )
