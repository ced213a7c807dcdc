"""Segment bisection: which segment, run on the executor under test, makes the fusion fail?

The fusion is segmented as ``fusecli run`` segments it. Question k runs segments 0..k-1 (in run
order) on the executor under test and the rest on the reference interpreter. With k = 0 nothing
runs under test, so it passes; with k = n everything does: that is the original question,
known to fail. A binary search over k finds the first segment that diverges in about log2(n)
questions (with ``jobs`` > 1, several points of the interval are asked at once). That segment is
reported with the segmenter's verdicts for it, its IR and a repro of it alone, checked to fail
alone in a fresh process.

This is the "send some dispatches to the reference" search IREE users ask for, and the fuel
bisection of PyTorch's CompilerBisector, at segment granularity.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from fusecli.bisect.oracle import Oracle
from fusecli.bisect.questions import Question, shell_line
from fusecli.bisect.repro import executor_name, write_repro
from fusecli.bisect.results import SchedulerVerdict, SegmentFinding, Step, Tracker
from fusecli.bisect.selection import BuildError, Selection, Slicer
from fusecli.codegen import Kernel, generate
from fusecli.ir.nodes import Fusion
from fusecli.ir.optype import OpType
from fusecli.ir.printer import print_fusion
from fusecli.segment.candidate import RuntimeInfo
from fusecli.segment.result import Segment, SegmentedFusion
from fusecli.segment.segmenter import segment_fusion


class SegmentationFailed(Exception):
    """The fusion could not be cut into segments to bisect: only op-level minimization can
    localize the failure."""


def probes(low: int, high: int, width: int) -> list[int]:
    """Up to ``width`` points strictly inside (low, high), evenly spread."""
    if width <= 1:
        return [(low + high) // 2]
    points = {low + (high - low) * (i + 1) // (width + 1) for i in range(width)}
    return sorted(p for p in points if low < p < high)


def bisect_segments(
    base: Question,
    segmented: SegmentedFusion,
    oracle: Oracle,
    tracker: Tracker,
) -> tuple[int, list[Step], tuple[int, int]]:
    """The index of the first diverging segment, the steps, and (last good k, first bad k)."""
    low, high = 0, len(segmented.segments)
    steps: list[Step] = []
    executor = executor_name(oracle.options.executor)
    while high - low > 1:
        tracker.update("segments", f"segments [{low}, {high}) of {len(segmented.segments)}")
        points = probes(low, high, oracle.jobs if oracle.isolate else 1)
        questions = [
            replace(base, segments=k, label=_label(k, executor)) for k in points
        ]
        answers = oracle.ask_many(questions)
        for k, question, answer in zip(points, questions, answers):
            steps.append(Step("segments", question.label, answer.failing,
                              answer.verdict.summary(), k))
        failing = [k for k, answer in zip(points, answers) if answer.failing]
        if failing:
            high = failing[0]
        passing = [k for k, answer in zip(points, answers) if not answer.failing and k < high]
        low = max([low, *passing])
    return high - 1, steps, (low, high)


def _label(k: int, executor: str) -> str:
    head = f"segment 0 on {executor}" if k == 1 else f"segments 0..{k - 1} on {executor}"
    return f"{head}, the rest on the reference"


def segment_selection(segment: Segment, given: Fusion) -> Selection | None:
    """``segment`` as a selection of the exprs of ``given``, the fusion before the segmenter's
    rewrites; None when it has no counterpart there.

    MarkAliasesPrepare inserts segment_sets and has their users read the copy: such a user is
    the expr of ``given`` with the same op and outputs, a copy stands for what it copies, and a
    segment of nothing but copies has no counterpart (nor has the 2024 matmul lowering).
    """
    producer = {out.uid: expr for expr in given.exprs for out in expr.outputs}
    copied: dict[int, int] = {}  # uid of an inserted copy -> uid of the value copied
    exprs: set[int] = set()
    for expr in segment.exprs:
        original = producer.get(expr.outputs[0].uid)
        if original is not None and original.op is expr.op:
            exprs.add(original.uid)
        elif expr.op is OpType.segment_set and original is None:
            copied[expr.output.uid] = expr.inputs[0].uid
        else:
            return None
    if not exprs:
        return None
    return Selection(
        exprs=frozenset(exprs),
        outputs=tuple(dict.fromkeys(copied.get(v.uid, v.uid) for v in segment.outputs)),
    )


def decisions_for(segmented: SegmentedFusion, segment: Segment) -> list[SchedulerVerdict]:
    """The segmenter's verdicts for exactly this segment's exprs (the last time it asked)."""
    wanted = frozenset(e.uid for e in segment.exprs)
    entries = [
        entry for entry in segmented.log or []
        if frozenset(e.uid for e in entry.candidate.exprs) == wanted
    ]
    if not entries:
        return [SchedulerVerdict(segment.scheduler, True, "")]
    return [SchedulerVerdict(v.scheduler, v.accepted, v.reason) for v in entries[-1].verdicts]


def kernel_for(
    segmented: SegmentedFusion, segment: Segment, inputs: list[Any],
    values: dict[int, object],
) -> tuple[str | None, str]:
    """The CUDA source the cupy executor generates for ``segment``, or why there is none."""
    tensors = [values.get(value.uid) for value in segment.inputs]
    try:
        kernel = generate(segment, RuntimeInfo(segmented.fusion, inputs), tensors)
    except Exception as error:  # the generator is under test too: report, do not fail
        return None, f"the kernel generator failed: {type(error).__name__}: {error}"
    if isinstance(kernel, Kernel):
        return kernel.source, f"the cupy executor's kernel for this segment ({kernel.name})"
    return None, f"no generated kernel: {getattr(kernel, 'reason', kernel)}"


def find_segment(
    loaded: Any,
    base: Question,
    replay: Question,
    slicer: Slicer | None,
    oracle: Oracle,
    tracker: Tracker,
    out_dir: Path,
    header: list[str],
) -> tuple[SegmentFinding, dict[str, str], Selection | None]:
    """Bisect the segments of ``loaded`` asking ``base`` questions; the finding, commands that
    replay the last good and first bad step (``replay``: the file's question), and the
    culprit's selection (for minimization to start from) when the culprit fails alone."""
    started, asked = time.perf_counter(), oracle.queries
    rules = oracle.options.rules
    try:
        segmented = segment_fusion(loaded.fusion, loaded.inputs, profile=rules, keep_log=True)
    except Exception as error:  # the segmenter is under test too
        raise SegmentationFailed(
            f"segmentation itself raised {type(error).__name__}: {error}"
        ) from error
    if segmented.failure is not None:
        raise SegmentationFailed("no scheduler accepts one of the segments")
    index, steps, (last_good, first_bad) = bisect_segments(base, segmented, oracle, tracker)
    segment = segmented.segments[index]
    executor = executor_name(oracle.options.executor)
    source, note = kernel_for(segmented, segment, loaded.inputs,
                              slicer.values if slicer is not None else {})
    finding = SegmentFinding(
        index=index, count=len(segmented.segments), scheduler=segment.scheduler,
        ops=[e.op.value for e in segment.exprs], decisions=decisions_for(segmented, segment),
        ir="", kernel_source=source, kernel_note=f"ran on {executor}; {note}", steps=steps,
    )
    if source is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        finding.kernel_file = out_dir / f"segment_{index}.cu"
        finding.kernel_file.write_text(source, encoding="utf-8")
    replays = {}
    for name, k in (("last good", last_good), ("first bad", first_bad)):
        command = oracle.command(replace(replay, segments=k))
        replays[f"segments: {name} (first {k} on the executor)"] = shell_line(command)
    selection = None
    alone = segment_selection(segment, loaded.fusion) if slicer is not None else None
    if alone is not None:
        tracker.update("segments", f"checking segment {index} alone")
        try:
            piece = slicer.build(alone, name=f"{loaded.name}_segment{index}")
        except BuildError as error:
            finding.kernel_note += f"; no standalone repro: {error}"
        else:
            finding.ir = print_fusion(piece.loaded.fusion)
            (out_dir / f"segment_{index}_ir.txt").write_text(finding.ir, encoding="utf-8")
            finding.repro, _ = write_repro(
                piece.loaded, out_dir, f"segment_{index}", [*header, f"segment {index} alone"],
                yaml=False,
            )
            answer = oracle.ask(Question(path=finding.repro))
            finding.fails_alone = answer.failing
            if answer.failing:
                selection = piece.selection
    finding.queries = oracle.queries - asked
    finding.seconds = time.perf_counter() - started
    return finding, replays, selection
