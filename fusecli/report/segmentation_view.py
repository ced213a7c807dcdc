"""Views of a segmentation: nvFuser's segmenter_logging text, a rich tree, JSON and Graphviz."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from fusecli.app.explain import ExplainOutcome
from fusecli.ir.printer import Namer, print_exprs, print_fusion, tensor_str
from fusecli.segment.result import LogEntry, SegmentedFusion
from fusecli.textsafe import one_line

NOT_FOUND = "Can not find a scheduler to schedule fusion segment"


# -- nvFuser's text ----------------------------------------------------------------------------


def _verdict_lines(entry: LogEntry) -> list[str]:
    lines = []
    for verdict in entry.verdicts:
        if verdict.accepted:
            lines.append(f"***Accepted*** as: {verdict.scheduler}")
        else:
            lines.append(
                f"Scheduler _{verdict.scheduler}_ ***rejected*** because : {verdict.reason}"
            )
    return lines


def _memory(segmented: SegmentedFusion, entry: LogEntry) -> set[int]:
    """Values printed as global (``_g``): the candidate's inputs and outputs."""
    candidate = entry.candidate
    return {v.uid for v in (*candidate.inputs, *candidate.outputs)}


def nvfuser_log(segmented: SegmentedFusion) -> str:
    """The decision log as NVFUSER_DUMP=segmenter_logging,segmented_fusion prints it."""
    namer = Namer(segmented.fusion)
    out: list[str] = []
    entries = list(segmented.log or [])
    if entries and entries[0].phase == "whole":
        whole = entries.pop(0)
        out.append("***Runtime***: Try to schedule fusion un-segmented:")
        out.extend(_verdict_lines(whole))
        if whole.accepted:
            out.append("")
            return "\n".join(out) + "\n" + segments_dump(segmented, namer)
    else:
        out.append("***Runtime***: Has segment hints, skip un-segmented scheduling.")
        out.append("")
    out += ["", "***Runtime***: Try to schedule fusion segmented:", ""]
    out.append("Segment the fusion (Original Fusion Un-modified): ")
    out.append(print_fusion(segmented.fusion, math=True, namer=namer).rstrip("\n"))
    out.append("")
    for entry in entries:
        out.append("**Segmenter** Considering fusion:")
        out.append(print_exprs(entry.candidate.exprs, namer, _memory(segmented, entry)).rstrip())
        out.append("")
        out.extend(_verdict_lines(entry))
        out.append("")
    if segmented.failure is not None:
        out.append(f"RuntimeError: {NOT_FOUND}")
        return "\n".join(out) + "\n"
    return "\n".join(out) + "\n" + segments_dump(segmented, namer)


def segments_dump(segmented: SegmentedFusion, namer: Namer) -> str:
    """The segmented fusion in the spirit of SegmentedFusion::print."""
    lines = ["Segmented_Fusion Dump: -- fusion segments:", "Segmented_Fusion{ ", "groups: "]
    for segment in segmented.segments:
        memory = {v.uid for v in (*segment.inputs, *segment.outputs)}
        lines.append(f"  g{{({segment.scheduler})")
        lines.append(f"  group id: {segment.id}")
        lines.append("  inputs:")
        lines += [f"    {tensor_str(v, namer, 'g')}" for v in segment.inputs]
        lines.append("  outputs:")
        lines += [f"    {tensor_str(v, namer, 'g')}" for v in segment.outputs]
        lines.append("")
        lines.append("  " + print_exprs(segment.exprs, namer, memory).rstrip().replace(
            "\n", "\n  "))
        lines.append("  }")
    lines.append("edges: ")
    for source, target, value in segmented.edges():
        lines.append(f"  e{{ g{source} -> g{target}({namer.tensor_name(value)}) }}")
    lines.append("} //Segmented_Fusion")
    return "\n".join(lines) + "\n"


# -- rich ------------------------------------------------------------------------------------

# Every phase the segmenter logs a decision in (segment/segmenter.py's try_schedule calls); a
# phase added there without a label here is shown by its own name rather than failing the view.
_PHASE = {
    "whole": "whole fusion", "initial": "initial group", "pre_merge": "up/down-cast merge",
    "combine": "combined reductions", "merge": "merge",
    "final_merge": "final merge", "forward": "forwarded input", "finalize": "final segment",
}


def _candidate_label(entry: LogEntry, namer: Namer) -> Text:
    ops = ", ".join(e.op.value for e in entry.candidate.exprs)
    if len(ops) > 90:
        ops = ops[:87] + "..."
    outputs = ", ".join(namer.tensor_name(v) for v in entry.candidate.outputs)
    phase = _PHASE.get(entry.phase, entry.phase)
    label = Text.assemble((f"#{entry.index} {phase}", "bold"), f": {ops}")
    if outputs:
        label.append(f"  -> {outputs}", style="dim")
    return label


def log_tree(outcome: ExplainOutcome) -> Tree:
    segmented = outcome.segmented
    namer = Namer(segmented.fusion)
    tree = Tree(Text.assemble(("decision log", "bold"), f"  (rules: {segmented.profile})"))
    for entry in segmented.log or []:
        node = tree.add(_candidate_label(entry, namer))
        if entry.skipped:
            node.add(Text(f"not considered: {entry.skipped}", style="dim"))
        for verdict in entry.verdicts:
            if verdict.accepted:
                line = node.add(Text(f"{verdict.scheduler}: accepted", style="bold green"))
            else:
                stage = f"  ({verdict.stage})" if verdict.stage == "run time" else ""
                line = node.add(Text.assemble((f"{verdict.scheduler}: ", "red"),
                                              verdict.reason, (stage, "dim")))
            if verdict.hardware:
                line.add(Text(verdict.hardware, style="yellow"))
    return tree


def segments_table(segmented: SegmentedFusion) -> Table:
    namer = Namer(segmented.fusion)
    table = Table(title="segments (run order)", title_justify="left")
    for column in ("id", "scheduler", "exprs", "inputs", "outputs"):
        table.add_column(column)
    for segment in segmented.segments:
        table.add_row(
            str(segment.id), segment.scheduler,
            ", ".join(e.op.value for e in segment.exprs),
            ", ".join(namer.tensor_name(v) for v in segment.inputs),
            ", ".join(namer.tensor_name(v) for v in segment.outputs),
        )
    return table


def diagnosis_panel(segmented: SegmentedFusion) -> Panel:
    failure = segmented.failure
    namer = Namer(segmented.fusion)
    memory = {v.uid for v in (*failure.candidate.inputs, *failure.candidate.outputs)}
    reasons = Table(show_header=False, box=None, pad_edge=False)
    reasons.add_column(style="red")
    reasons.add_column()
    for verdict in failure.verdicts:
        reasons.add_row(verdict.scheduler, verdict.reason)
    parts = [
        Text(f"{NOT_FOUND}: no scheduler accepts this segment", style="bold red"),
        Text(print_exprs(failure.candidate.exprs, namer, memory).rstrip()),
        Text("every scheduler's reason:", style="bold"),
        reasons,
        Text("what would have to change:", style="bold"),
        *[Text(f"- {line}") for line in failure.advice],
    ]
    return Panel(Group(*parts), title="segmentation failed", border_style="red")


def render_explain(outcomes: list[ExplainOutcome], console: Console, show_log: bool) -> None:
    for outcome in outcomes:
        segmented = outcome.segmented
        console.rule(f"{outcome.loaded.name}  {outcome.loaded.path}")
        if segmented is None:
            console.print(Panel(Text(outcome.error or ""), title="the segmenter failed",
                                border_style="red"))
            continue
        if show_log:
            console.print(log_tree(outcome))
        if segmented.failure is not None:
            console.print(diagnosis_panel(segmented))
        else:
            console.print(segments_table(segmented))
            edges = segmented.edges()
            if edges:
                namer = Namer(segmented.fusion)
                flow = ", ".join(
                    f"{s} -> {t} ({namer.tensor_name(v)})" for s, t, v in edges
                )
                console.print(Text(f"data flow: {flow}", style="dim"))
            for segment in segmented.segments:
                for gpu_note in segment.gpu_notes:
                    console.print(Text(f"segment {segment.id}: {gpu_note}", style="yellow"))


# -- JSON and Graphviz -------------------------------------------------------------------------


def error_record(path: object, name: str, error: str | None, detail: str | None) -> dict[str, Any]:
    """The record of a fusion the segmenter crashed on, or of a file that gave no fusion."""
    return {
        "path": str(path), "name": name, "ok": False, "status": "error", "error": error,
        "detail": detail, "segments": [], "edges": [], "outputs": [], "log": [],
        "diagnosis": None,
    }


def explain_record(outcome: ExplainOutcome) -> dict[str, Any]:
    segmented = outcome.segmented
    if segmented is None:
        loaded = outcome.loaded
        return error_record(loaded.path, loaded.name, outcome.error, outcome.detail)
    namer = Namer(segmented.fusion)
    log = []
    for entry in segmented.log or []:
        exprs = [e.op.value for e in entry.candidate.exprs]
        for verdict in entry.verdicts:
            log.append({
                "candidate": entry.index, "phase": entry.phase, "exprs": exprs,
                "scheduler": verdict.scheduler, "accepted": verdict.accepted,
                "reason": verdict.reason or None, "stage": verdict.stage or None,
                "code": verdict.code or None, "evidence": verdict.facts,
                "depends_on_gpu": verdict.hardware or None,
            })
    failure = segmented.failure
    return {
        "path": str(outcome.loaded.path),
        "name": outcome.loaded.name,
        "ok": segmented.ok,
        "status": "pass" if segmented.ok else "error",
        "error": None if segmented.ok else NOT_FOUND,
        "detail": None,
        "rules": segmented.profile,
        "segments": [
            {
                "id": s.id, "scheduler": s.scheduler, "executor": "aten",
                "exprs": [e.op.value for e in s.exprs],
                "inputs": [namer.tensor_name(v) for v in s.inputs],
                "outputs": [namer.tensor_name(v) for v in s.outputs],
                "depends_on_gpu": list(s.gpu_notes),
            }
            for s in segmented.segments
        ],
        "edges": [
            {"from": s, "to": t, "value": namer.tensor_name(v)} for s, t, v in segmented.edges()
        ],
        "outputs": [],
        "log": log,
        "diagnosis": None if failure is None else {
            "exprs": [e.op.value for e in failure.candidate.exprs],
            "reasons": {v.scheduler: v.reason for v in failure.verdicts},
            "advice": list(failure.advice),
        },
    }


def dot_graph(outcome: ExplainOutcome) -> str:
    """Graphviz: one cluster per segment, an edge per value crossing segments."""
    segmented = outcome.segmented
    lines = ["digraph segmented_fusion {", "  rankdir=TB;", "  node [shape=box, fontsize=10];"]
    if segmented is None:
        label = json.dumps(f"{one_line(outcome.loaded.name)}: segmenter failed", ensure_ascii=False)
        return "\n".join([*lines, f"  failed [label={label}];", "}"]) + "\n"
    namer = Namer(segmented.fusion)
    for segment in segmented.segments:
        lines.append(f"  subgraph cluster_{segment.id} {{")
        lines.append(f'    label="segment {segment.id}: {segment.scheduler}";')
        for expr in segment.exprs:
            outs = ", ".join(namer.tensor_name(o) for o in expr.tensor_outputs())
            lines.append(f'    s{segment.id}_e{expr.uid} [label="{expr.op.value}\\n{outs}"];')
        for first, second in zip(segment.exprs, segment.exprs[1:]):
            lines.append(f"    s{segment.id}_e{first.uid} -> s{segment.id}_e{second.uid} "
                         "[style=invis];")
        lines.append("  }")
    for source, target, value in segmented.edges():
        first = segmented.segments[source].exprs[-1].uid
        last = segmented.segments[target].exprs[0].uid
        lines.append(
            f'  s{source}_e{first} -> s{target}_e{last} [label="{namer.tensor_name(value)}"];'
        )
    lines.append("}")
    return "\n".join(lines) + "\n"
