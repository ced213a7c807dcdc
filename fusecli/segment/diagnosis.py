"""What would have to change for an unschedulable segment to get a scheduler.

Rules keyed by the reasons schedulers gave; each returns advice a fusion developer can act on.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusecli.ir.optype import OpType
from fusecli.segment.candidate import Candidate
from fusecli.segment.rules import Verdict


def advise(candidate: Candidate, verdicts: Sequence[Verdict], profile: str) -> tuple[str, ...]:
    reasons = {v.scheduler: v.reason for v in verdicts}
    evidence = {v.scheduler: v.evidence for v in verdicts}
    ops = {e.op for e in candidate.exprs}
    advice: list[str] = []
    if reasons.get("matmul") == "MmaOp input has unsupported dependency":
        found = evidence.get("matmul") or ()
        where = (
            f" ({found[0]}, feeding the operand {found[1]})" if len(found) == 2 else ""
        )
        advice.append(
            "The matmul scheduler needs each MmaOp operand to be a broadcast of a segment "
            f"input or of a set/permute output, but an operand comes through another op{where}. "
            "nvFuser fixed this with MatmulOp and the expr_eval (ATen) scheduler (PRs #2175, "
            "#2209): rerun with --rules nvfuser to see it segment."
        )
    if "MatmulOp and LinearOp fusion is disabled" in reasons.get("matmul", "") and (
        "disabled by NVFUSER_DISABLE=matmul_expr_eval" in reasons.get("expr_eval", "")
    ):
        advice.append(
            "Matmul ops run only through expr_eval (ATen) or, with --fuse-matmul, the matmul "
            "scheduler: re-enable matmul_expr_eval or pass --fuse-matmul."
        )
    if "expr_eval" not in reasons and ops & {OpType.matmul, OpType.linear}:
        advice.append("expr_eval, which runs MatmulOp/LinearOp through ATen, is disabled.")
    if any(r.startswith("Un-mapped multi-reduction") for r in reasons.values()):
        advice.append(
            "Reductions over different axes cannot share a kernel; a segment_set between "
            "them lets the segmenter split there."
        )
    if any("must be fusion input" in r for r in reasons.values()):
        advice.append(
            "Index and resize ops must read a segment input: a segment_set before them "
            "makes their input one."
        )
    if not advice:
        advice.append(
            "No rule of fusecli knows this combination; split the segment with "
            "fd.ops.segment_set, or compare with --rules and --disable-scheduler."
        )
    return tuple(advice)
