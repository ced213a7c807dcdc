"""Views of real nvFuser's segmentation and of the two engines side by side."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from fusecli.app.explain import ExplainOutcome, ExplainReport, FileFailure
from fusecli.engines.compare import EngineComparison
from fusecli.engines.nvfuser_log import NvfuserSegmentation
from fusecli.report.segmentation_view import error_record, explain_record, render_explain

_OPS_SHOWN = 90


def _ops(ops: tuple[str, ...] | list[str]) -> str:
    text = ", ".join(ops) or "(no tensor ops)"
    return text if len(text) <= _OPS_SHOWN else text[: _OPS_SHOWN - 3] + "..."


# -- nvFuser's segmentation, through the views fusecli's has -------------------------------------


def nvfuser_log_tree(parsed: NvfuserSegmentation) -> Tree:
    tree = Tree(Text.assemble(("decision log", "bold"), "  (engine: real nvFuser)"))
    for hint in parsed.hints:
        tree.add(Text(hint, style="dim"))
    for candidate in parsed.candidates:
        what = "whole fusion" if candidate.phase == "whole" else _ops(candidate.ops)
        node = tree.add(Text.assemble((f"#{candidate.index} ", "bold"), what))
        if not candidate.verdicts:
            node.add(Text("no scheduler verdicts printed", style="dim"))
        for verdict in candidate.verdicts:
            if verdict.accepted:
                node.add(Text(f"{verdict.scheduler}: accepted", style="bold green"))
            else:
                node.add(Text.assemble((f"{verdict.scheduler}: ", "red"), verdict.reason))
    return tree


def nvfuser_segments_table(parsed: NvfuserSegmentation) -> Table:
    table = Table(title="segments (nvFuser's order; id: its group id)", title_justify="left")
    for column in ("id", "scheduler", "exprs", "inputs", "outputs"):
        table.add_column(column)
    for segment in parsed.segments:
        table.add_row(str(segment.id), segment.scheduler, ", ".join(segment.ops),
                      ", ".join(segment.inputs), ", ".join(segment.outputs))
    return table


def render_nvfuser(outcome: ExplainOutcome, console: Console, show_log: bool) -> None:
    parsed = outcome.nvfuser.parsed
    if show_log:
        console.print(nvfuser_log_tree(parsed))
    if parsed.segments:
        console.print(nvfuser_segments_table(parsed))
    if parsed.error:
        console.print(Panel(Text(parsed.error), title="nvFuser failed", border_style="red"))


def nvfuser_record(outcome: ExplainOutcome) -> dict[str, Any]:
    """nvFuser's segmentation in the fields of ``explain-segmentation --json``."""
    parsed = outcome.nvfuser.parsed
    log = [
        {"candidate": c.index, "phase": c.phase, "exprs": list(c.ops),
         "scheduler": v.scheduler, "accepted": v.accepted, "reason": v.reason or None}
        for c in parsed.candidates for v in c.verdicts
    ]
    return {
        "path": str(outcome.loaded.path), "name": outcome.loaded.name, "engine": "nvfuser",
        "ok": parsed.ok, "status": "pass" if parsed.ok else "error", "error": parsed.error,
        "detail": None, "hints": list(parsed.hints),
        "segments": [
            {"id": s.id, "scheduler": s.scheduler, "executor": "nvfuser", "exprs": list(s.ops),
             "inputs": list(s.inputs), "outputs": list(s.outputs)}
            for s in parsed.segments
        ],
        "edges": [{"from": a, "to": b, "value": v} for a, b, v in parsed.edges],
        "outputs": [], "log": log,
    }


# -- the two engines ------------------------------------------------------------------------------


def comparison_table(comparison: EngineComparison) -> Table:
    table = Table(title="segments: fusecli vs real nvFuser", title_justify="left")
    for column in ("#", "fusecli", "fusecli ops", "nvFuser", "nvFuser ops", ""):
        table.add_column(column)
    for index, row in enumerate(comparison.rows):
        mark = Text("same", style="green") if row.agree else Text("DIFFERS", style="bold red")
        ours, theirs = row.fusecli, row.nvfuser
        table.add_row(
            str(index),
            ours.scheduler if ours else "-", _ops(ours.ops) if ours else "",
            theirs.scheduler if theirs else "-", _ops(theirs.ops) if theirs else "", mark,
        )
    return table


def verdict_text(comparison: EngineComparison) -> Text:
    style = "bold green" if comparison.agree else "bold red"
    return Text(comparison.verdict(), style=style)


def render_comparison(comparison: EngineComparison, console: Console) -> None:
    console.print(comparison_table(comparison))
    console.print(verdict_text(comparison))


def comparison_record(comparison: EngineComparison) -> dict[str, Any]:
    def side(segment: Any) -> dict[str, Any] | None:
        return None if segment is None else {
            "position": segment.position, "scheduler": segment.scheduler,
            "exprs": list(segment.ops),
        }

    return {
        "agree": comparison.agree, "verdict": comparison.verdict(),
        "first_divergence": comparison.first_divergence, "errors": dict(comparison.errors),
        "rows": [{"fusecli": side(r.fusecli), "nvfuser": side(r.nvfuser), "agree": r.agree}
                 for r in comparison.rows],
    }


# -- explain-segmentation, any engine ----------------------------------------------------------

def explain_json(outcome: ExplainOutcome) -> dict[str, Any]:
    """fusecli's record; nvFuser's alone with --engine nvfuser; both in ``engines`` when
    compared."""
    if outcome.nvfuser is None:
        return explain_record(outcome)
    if outcome.comparison is None:
        return nvfuser_record(outcome)
    record = explain_record(outcome)
    record["ok"] = outcome.ok
    record["engines"] = {
        "fusecli": explain_record(outcome), "nvfuser": nvfuser_record(outcome),
        "comparison": comparison_record(outcome.comparison),
    }
    return record


def explain_document(report: ExplainReport) -> dict[str, Any]:
    """``explain-segmentation --json``: ``{"ok", "fusions"}`` with a record per fusion and per
    file that gave none, plus ``notices`` and ``interrupted`` when there are."""
    records = [
        error_record(entry.path, entry.name, entry.error, entry.detail)
        if isinstance(entry, FileFailure) else explain_json(entry)
        for entry in report.entries
    ]
    document: dict[str, Any] = {
        "ok": all(r["ok"] for r in records) and report.interrupted is None,
        "fusions": records,
    }
    if report.notices:
        document["notices"] = list(report.notices)
    if report.interrupted is not None:
        document["interrupted"] = report.interrupted
    return document


def render_outcomes(
    outcomes: list[ExplainOutcome], console: Console, show_log: bool
) -> None:
    """fusecli's views; nvFuser's with --engine nvfuser; both then the table when compared."""
    for outcome in outcomes:
        if outcome.nvfuser is None:
            render_explain([outcome], console, show_log=show_log)
            continue
        if outcome.comparison is not None:
            render_explain([outcome], console, show_log=show_log)
            console.print(Text("real nvFuser:", style="bold"))
        else:
            console.rule(f"{outcome.loaded.name}  {outcome.loaded.path}  (real nvFuser)")
        render_nvfuser(outcome, console, show_log=show_log)
        if outcome.comparison is not None:
            render_comparison(outcome.comparison, console)
