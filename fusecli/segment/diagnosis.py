"""What would have to change for an unschedulable segment to get a scheduler.

Rules keyed by the reason codes schedulers gave (``reasons.py``); each builds advice a fusion
developer can act on from its verdict's evidence: the tensor, expr or operand at fault.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusecli.ir.nodes import TensorView
from fusecli.ir.optype import OpKind, OpType
from fusecli.segment.candidate import Candidate
from fusecli.segment.lower_precision import half_precision_edges
from fusecli.segment.reasons import Reason
from fusecli.segment.rules import Verdict
from fusecli.segment.schedulers.common import RESIZE_OPS


def advise(candidate: Candidate, verdicts: Sequence[Verdict], profile: str) -> tuple[str, ...]:
    """Advice for a candidate no scheduler took, from each rejection's code and evidence."""
    by_code = {v.code: v for v in verdicts if v.code}
    by_scheduler = {v.scheduler: v for v in verdicts}
    advice: list[str] = []
    for code, rule in ADVICE.items():
        verdict = by_code.get(code.code)
        if verdict is not None:
            text = rule(verdict.facts, candidate, profile)
            if text and text not in advice:
                advice.append(text)
    matmul, expr_eval = by_scheduler.get("matmul"), by_scheduler.get("expr_eval")
    if (
        matmul is not None and matmul.code == Reason.MATMUL_FUSION_DISABLED.code
        and expr_eval is not None and expr_eval.code == Reason.MATMUL_EXPR_EVAL_DISABLED.code
    ):
        advice.append(
            "Matmul ops run only through expr_eval (ATen) or, with --fuse-matmul, the matmul "
            "scheduler: re-enable matmul_expr_eval or pass --fuse-matmul."
        )
    unlowered = [e for e in candidate.exprs if e.op in (OpType.matmul, OpType.linear)]
    if expr_eval is None and unlowered and profile in ("nvfuser-2024", "nvfuser-2023"):
        shapes = " x ".join(
            f"{len(t.logical)}-D" for t in unlowered[0].tensor_inputs()[:2]
        )
        advice.append(
            f"The {profile} profile lowers only 2-D matmuls to broadcast + MmaOp; this "
            f"{unlowered[0].op.value} ({shapes}) stays an op no scheduler of that date takes. "
            "MatmulOp, LinearOp and the expr_eval (ATen) scheduler came with nvFuser #2175 and "
            "#2209 (May 2024): rerun with --rules nvfuser to see it segment."
        )
    elif expr_eval is None and unlowered:
        advice.append("expr_eval, which runs MatmulOp/LinearOp through ATen, is disabled.")
    if not advice:
        advice.append(
            "No rule of fusecli knows this combination; split the segment with "
            "fd.ops.segment_set, or compare with --rules and --disable-scheduler."
        )
    return tuple(advice)


Facts = dict[str, str]


def _mma_dependency(facts: Facts, candidate: Candidate, profile: str) -> str:
    return (
        "The matmul scheduler needs each MmaOp operand to be a broadcast of a segment input or "
        f"of a set/permute output, but the operand {facts['operand']} comes through "
        f"{facts['expr']}. nvFuser fixed this with MatmulOp and the expr_eval (ATen) scheduler "
        "(PRs #2175, #2209): rerun with --rules nvfuser to see it segment."
    )


def _unmapped(facts: Facts, candidate: Candidate, profile: str) -> str:
    return (
        f"{facts['first']} and {facts['second']} reduce different axes and cannot share a "
        f"kernel; an fd.ops.segment_set on {facts['second']}'s input lets the segmenter split "
        "there."
    )


def _must_be_input(facts: Facts, candidate: Candidate, profile: str) -> str:
    if profile == "nvfuser-2023":
        late_2023 = _resize_input_2023(candidate)
        if late_2023:
            return late_2023
    made_by = facts.get("producer", "another op")
    return (
        f"The {facts['op']} reads {facts['tensor']}, made by {made_by} inside this segment; "
        f"index and resize ops must read a segment input: an fd.ops.segment_set on "
        f"{facts['tensor']} makes it one."
    )


def _self_mapping(facts: Facts, candidate: Candidate, profile: str) -> str:
    return (
        f"Two dimensions of {facts['tensor']} are the same loop (a tensor combined with its own "
        "transpose through broadcasts, as a causal mask from one iota): no kernel's loop nest "
        "has them; the segmenter must cut between the broadcasts and their consumer."
    )


def _too_large(facts: Facts, candidate: Candidate, profile: str) -> str:
    return (
        f"The persistent buffers need {facts['bytes_per_row']} bytes per reduction row, more "
        f"than the {facts['available']} bytes on chip: a smaller reduction dimension, or the "
        "reduction scheduler (no persistence), would take it."
    )


def _non_unique_broadcast(facts: Facts, candidate: Candidate, profile: str) -> str:
    return (
        f"A broadcast dimension of {facts['tensor']} meets two different sizes: the resize "
        "scheduler needs one concrete size per broadcast; give each use its own broadcast."
    )


def _resize_between(facts: Facts, candidate: Candidate, profile: str) -> str:
    return (
        f"The output {facts['output']} and the reference {facts['reference']} are separated by "
        f"a {facts['resize']}: the resize scheduler needs one loop nest for all outputs, so "
        "they go to different segments."
    )


# Advice by reason, in the order shown; each rule reads its verdict's evidence.
ADVICE = {
    Reason.MMA_DEPENDENCY: _mma_dependency,
    Reason.UNMAPPED_REDUCTIONS: _unmapped,
    Reason.MUST_BE_FUSION_INPUT: _must_be_input,
    Reason.FIRST_INPUT_MUST_BE_FUSION_INPUT: _must_be_input,
    Reason.SELF_MAPPING: _self_mapping,
    Reason.PERSISTENT_TOO_LARGE: _too_large,
    Reason.OUTER_PERSISTENT_TOO_LARGE: _too_large,
    Reason.NON_UNIQUE_BROADCAST: _non_unique_broadcast,
    Reason.RESIZE_BETWEEN: _resize_between,
}


def _resize_input_2023(candidate: Candidate) -> str | None:
    """Why, in nvFuser of late 2023, a slice or pad of this segment reads no segment input
    although the segmenter cut before it: the two segmenter behaviours the nvfuser-2023
    profile models. None when neither applies."""
    half = half_precision_edges(candidate.graph.fusion)
    for expr in candidate.exprs:
        if expr.op not in RESIZE_OPS:
            continue
        for source in expr.tensor_inputs() if expr.op is OpType.cat else expr.inputs[:1]:
            name = candidate.graph.name(source)
            if candidate.is_input(source) and source.uid in half:
                return (
                    f"{name} reaches this segment as half precision: until #1889 (March 2024) "
                    "nvFuser cast fp32 segment edges that feed Half/BFloat16 outputs down and "
                    f"back up (castInputOutputToLowerPrecision), so the {expr.op.value} reads "
                    "the cast, not a segment input. Rerun with --rules nvfuser to see it "
                    "segment."
                )
            if _forwarded_from_input(candidate, source):
                return (
                    f"{name} comes from a fusion input through unary ops only: the segmenter "
                    "forwarded them, cut before the "
                    f"{expr.op.value}, then pulled them back into its segment without asking "
                    "a scheduler (resolveInputsInGroup, until #1825, February 2024). Rerun "
                    "with --rules nvfuser to see it segment."
                )
    return None


def _forwarded_from_input(candidate: Candidate, value: TensorView) -> bool:
    """Whether ``value`` is made inside the segment from a fusion input by unary ops and casts
    alone: the chains the segmenter forwards."""
    producer = candidate.definition(value)
    if producer is None or not candidate.contains(producer):
        return False
    while producer is not None and candidate.contains(producer):
        if producer.op.kind not in (OpKind.UNARY, OpKind.CAST):
            return False
        value = producer.inputs[0]
        producer = candidate.definition(value)
    return value.uid in candidate.graph.input_uids
