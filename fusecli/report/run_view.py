"""The rich report of ``fusecli run``: per fusion, its inputs, segments and outputs."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from fusecli.app.corpus import Cluster
from fusecli.app.pipeline import FusionOutcome, RunReport

_STATUS_STYLE = {"pass": "bold green", "mismatch": "bold red", "error": "bold yellow"}


def _shape(values: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(v) for v in values) + ("," if len(values) == 1 else "") + ")"


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}"


def inputs_table(outcome: FusionOutcome) -> Table:
    table = Table(title="inputs", title_justify="left", show_edge=False, pad_edge=False)
    for column in ("#", "kind", "dtype", "shape", "strides / value"):
        table.add_column(column)
    for item in outcome.inputs:
        detail = _shape(item.strides) if item.kind == "tensor" else repr(item.value)
        shape = _shape(item.shape) if item.kind == "tensor" else ""
        table.add_row(str(item.index), item.kind, item.dtype, shape, detail)
    return table


def segments_table(outcome: FusionOutcome) -> Table:
    table = Table(title="segments", title_justify="left", show_edge=False, pad_edge=False)
    for column in ("id", "scheduler", "executor", "exprs"):
        table.add_column(column)
    for segment in outcome.segments:
        executor = segment.executor
        if segment.fallback and segment.executor == "aten":
            executor = f"aten ({segment.fallback})"
        table.add_row(
            str(segment.id), segment.scheduler or "(unsegmented)", executor,
            ", ".join(segment.exprs) or "(no tensor exprs)",
        )
    return table


def outputs_table(outcome: FusionOutcome) -> Table:
    table = Table(title=f"outputs: {outcome.check}", title_justify="left", show_edge=False,
                  pad_edge=False)
    for column in ("#", "dtype", "shape", "max abs", "max rel", "mismatches", "verdict"):
        table.add_column(column)
    for index, diff in enumerate(outcome.outputs):
        verdict = Text("ok", style="green") if diff.ok else Text("MISMATCH", style="bold red")
        if diff.ok and diff.closer_to_float64 is not None:
            verdict = Text("ok (closer to float64 than eager)", style="green")
        table.add_row(
            str(index), diff.actual_dtype, _shape(tuple(diff.actual_shape)),
            _number(diff.max_abs_err), _number(diff.max_rel_err),
            f"{diff.mismatch_count}/{diff.numel}", verdict,
        )
    return table


def fusion_panel(outcome: FusionOutcome, verbose: bool = False) -> Panel:
    parts: list = []
    if outcome.error:
        parts.append(Text(outcome.error, style="yellow"))
    if outcome.inputs and verbose:
        parts.append(inputs_table(outcome))
    if outcome.segments and outcome.status != "error":
        parts.append(segments_table(outcome))
    if outcome.outputs:
        parts.append(outputs_table(outcome))
        for index, diff in enumerate(outcome.outputs):
            if not diff.ok:
                parts.append(Text(f"output {index}: {diff.summary()}", style="red"))
    status = Text(outcome.status.upper(), style=_STATUS_STYLE[outcome.status])
    title = Text.assemble(status, "  ", (outcome.name, "bold"), f"  {outcome.path}")
    subtitle = f"{outcome.seconds * 1000:.1f} ms" if outcome.seconds else None
    return Panel(Group(*parts) if parts else Text(""), title=title, title_align="left",
                 subtitle=subtitle, subtitle_align="right")


def render_run(
    report: RunReport, console: Console, errors: Console, verbose: bool = False
) -> None:
    """Panels for fusions that ran; one ``fusecli: error:`` line on stderr for the others."""
    for outcome in report.fusions:
        if outcome.status == "error" and not outcome.outputs:
            errors.print(f"fusecli: error: {outcome.error}", markup=False, highlight=False,
                         soft_wrap=True)
            continue
        console.print(fusion_panel(outcome, verbose))
    counts = {status: 0 for status in _STATUS_STYLE}
    for outcome in report.fusions:
        counts[outcome.status] += 1
    summary = Text.assemble(
        (f"{counts['pass']} passed", "green"), ", ",
        (f"{counts['mismatch']} mismatched", "red" if counts["mismatch"] else ""), ", ",
        (f"{counts['error']} errors", "yellow" if counts["error"] else ""),
    )
    console.print(summary)


def render_engine_comparisons(report: RunReport, console: Console) -> None:
    """--compare-engines: per fusion, nvFuser's outcome, then both segmentations and the
    verdict (fusecli's outcome is the panel ``render_run`` printed)."""
    from fusecli.report.engines_view import render_comparison

    for outcome in report.fusions:
        if outcome.engines is None:
            continue
        console.rule(f"{outcome.name}: real nvFuser")
        console.print(fusion_panel(outcome.engines["nvfuser"]))
        render_comparison(outcome.engines["comparison"], console)


def render_clusters(clusters: list[Cluster], console: Console, shown: int = 5) -> None:
    """Failures grouped by signature: count, signature, the smallest member to debug first,
    the first few members, and (``--engine nvfuser``) whose bug it is."""
    if not clusters:
        return
    table = Table(title="failures by signature", title_justify="left", show_edge=False,
                  pad_edge=False)
    attributed = any(c.attribution or c.plain for c in clusters)
    columns = ["count", "signature", "smallest", "fusions"] + (["whose"] if attributed else [])
    for column in columns:
        table.add_column(column, overflow="fold")
    for cluster in clusters:
        members = ", ".join(cluster.members[:shown])
        if cluster.count > shown:
            members += f", ... ({cluster.count - shown} more)"
        row = [str(cluster.count), cluster.signature, cluster.smallest or "", members]
        if attributed:
            row.append(_whose(cluster))
        table.add_row(*row)
    console.print(table)


def _whose(cluster: Cluster) -> str:
    if cluster.attribution == "nvfuser":
        if (cluster.plain or "").startswith("wrong result"):  # what the plain script's check saw
            return f"nvFuser (a plain nvfuser_direct script checks its outputs: {cluster.plain})"
        return "nvFuser (a plain nvfuser_direct script fails the same way)"
    if cluster.attribution == "translation":
        return f"fusecli's translation (the plain nvfuser_direct script: {cluster.plain})"
    return cluster.plain or ""


def clusters_record(clusters: list[Cluster]) -> list[dict[str, Any]]:
    records = []
    for cluster in clusters:
        record = {
            "signature": cluster.signature, "count": cluster.count, "files": list(cluster.files),
            "smallest": cluster.smallest, "fusions": list(cluster.members),
        }
        if cluster.attribution is not None or cluster.plain is not None:
            record["attribution"], record["plain"] = cluster.attribution, cluster.plain
        records.append(record)
    return records
