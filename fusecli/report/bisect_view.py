"""Views of what ``fusecli bisect`` found: rich panels, a progress line, JSON; and corpus
failure clusters for ``fusecli run``."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from fusecli.bisect.results import (
    BisectReport,
    GitReport,
    Minimized,
    Progress,
    SegmentFinding,
    Step,
)


def progress_text(progress: Progress) -> str:
    """One line: phase, questions asked, the current interval or size, elapsed time."""
    detail = f": {progress.detail}" if progress.detail else ""
    return (f"bisect {progress.phase}{detail}  [{progress.queries} queries, "
            f"{progress.elapsed:.1f}s]")


class ProgressLines:
    """Progress for a status line, and, where stderr is no terminal (CI logs, ``2> file``),
    as plain lines: none in the first ``after`` seconds (a bad file's error stays the one
    line on stderr), then one per phase change and at most one every ``every`` seconds.
    ``FUSECLI_PROGRESS_AFTER`` sets ``after``."""

    def __init__(self, is_terminal: bool, every: float = 15.0, after: float | None = None) -> None:
        self.is_terminal, self.every = is_terminal, every
        if after is None:
            try:
                after = float(os.environ.get("FUSECLI_PROGRESS_AFTER", "5"))
            except ValueError:
                after = 5.0
        self.after = after
        self.phase: str | None = None
        self.last = -every

    def __call__(self, progress: Progress) -> str:
        text = progress_text(progress)
        if not self.is_terminal and progress.elapsed >= self.after and (
            progress.phase != self.phase or progress.elapsed - self.last >= self.every
        ):
            self.phase, self.last = progress.phase, progress.elapsed
            print(text, file=sys.stderr, flush=True)
        return text


# -- fusion bisect -------------------------------------------------------------------------------


def _summary(report: BisectReport) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    if report.original is not None:
        table.add_row("original", report.original.summary())
    if report.target is not None:
        table.add_row("failure", report.target.describe())
    if report.flaky:
        table.add_row("flaky", Text(report.flaky, style="yellow"))
    table.add_row("queries", f"{report.queries} ({report.runs} runs), {report.seconds:.1f}s")
    if report.output_dir is not None:
        table.add_row("output", str(report.output_dir))
    return table


def _steps_table(steps: list[Step], title: str) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for column in ("#", "question", "answer"):
        table.add_column(column)
    for number, step in enumerate(steps, start=1):
        answer = Text("fails", style="red") if step.failing else Text("passes", style="green")
        table.add_row(str(number), step.label, answer)
    return table


def _segment_panel(finding: SegmentFinding) -> Panel:
    decisions = Table(title="scheduler decisions", title_justify="left", show_edge=False,
                      pad_edge=False)
    for column in ("scheduler", "verdict", "reason"):
        decisions.add_column(column)
    for verdict in finding.decisions:
        mark = Text("accepted", style="green") if verdict.accepted else Text("rejected")
        decisions.add_row(verdict.scheduler, mark, verdict.reason)
    alone = {True: Text("fails alone", style="red"), False: Text("passes alone", style="yellow"),
             None: Text("not checked alone")}[finding.fails_alone]
    parts: list[Any] = [
        Text.assemble(("first diverging segment: ", "bold"),
                      f"{finding.index} of {finding.count} ({finding.scheduler}): ",
                      ", ".join(finding.ops)),
        Text(f"{finding.queries} queries, {finding.seconds:.1f}s", style="dim"),
    ]
    if finding.steps:
        parts.append(_steps_table(finding.steps, "bisection"))
    parts.append(decisions)
    if finding.kernel_source:
        title = f"kernel: {finding.kernel_file}" if finding.kernel_file else "kernel"
        parts += [Text(title, style="bold"), _head(finding.kernel_source, "cuda")]
    parts.append(Text(finding.kernel_note, style="dim"))
    if finding.repro is not None:
        parts.append(Text.assemble(("repro: ", "bold"), str(finding.repro), "  ", alone))
    return Panel(Group(*parts), title="segment bisection", title_align="left")


def _head(text: str, lexer: str, lines: int = 30) -> Syntax | Group:
    """The first ``lines`` lines of ``text``, and how many more there are."""
    rows = text.rstrip().splitlines()
    shown = Syntax("\n".join(rows[:lines]), lexer)
    if len(rows) <= lines:
        return shown
    return Group(shown, Text(f"... {len(rows) - lines} more lines", style="dim"))


def _minimized_panel(result: Minimized) -> Panel:
    verified = (Text("fails alone in a fresh interpreter", style="red") if result.verified
                else Text(f"does NOT fail alone: {result.verification}", style="bold yellow"))
    parts = [
        Text.assemble(("ops: ", "bold"), f"{result.ops_before} -> {len(result.ops)}: ",
                      ", ".join(result.ops)),
        Text.assemble(("inputs: ", "bold"), f"{result.inputs_before} -> {len(result.inputs)}: ",
                      ", ".join(result.inputs)),
        Text.assemble(("outputs: ", "bold"), f"{result.outputs_before} -> {result.outputs}"),
        Text.assemble(("repro: ", "bold"), f"{result.repro_py}, {result.repro_yaml}  ",
                      verified),
        Text(f"{result.queries} queries, {result.seconds:.1f}s", style="dim"),
    ]
    return Panel(Group(*parts), title="minimization", title_align="left")


def _replays(replays: dict[str, str]) -> Table:
    table = Table(title="replay", title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("step")
    table.add_column("command", overflow="fold")
    for name, command in replays.items():
        table.add_row(name, command)
    return table


def render_bisect(report: BisectReport, console: Console) -> None:
    if not report.reproduced:
        console.print(Text(f"the failure did not reproduce: {report.path}", style="bold yellow"))
        if report.original is not None:
            console.print(f"  original: {report.original.summary()}")
    else:
        console.print(Panel(_summary(report), title=f"bisect {report.name}  {report.path}",
                            title_align="left"))
        if report.segments is not None:
            console.print(_segment_panel(report.segments))
        if report.minimized is not None:
            console.print(_minimized_panel(report.minimized))
        if report.replays:
            console.print(_replays(report.replays))
    for note in report.notes:
        console.print(Text(f"note: {note}", style="dim"))


def _step_json(step: Step) -> dict[str, Any]:
    return {"phase": step.phase, "question": step.label, "failing": step.failing,
            "verdict": step.verdict, "size": step.size}


def bisect_record(report: BisectReport) -> dict[str, Any]:
    record: dict[str, Any] = {
        "ok": report.exit_code == 0, "path": report.path, "name": report.name,
        "reproduced": report.reproduced,
        "original": None if report.original is None else {
            "status": report.original.status, "error_type": report.original.error_type,
            "message": report.original.message, "signature": report.original.signature,
            "location": report.original.location, "detail": report.original.detail,
            "group": report.original.group,
        },
        "engine": report.engine,
        "report_md": None if report.report_md is None else str(report.report_md),
        "engine_segments": None if report.engine_segments is None else [
            {"group": i, "scheduler": s, "exprs": list(o)}
            for i, s, o in report.engine_segments.segments
        ],
        "failure_kind": None if report.target is None else report.target.kind,
        "flaky": report.flaky, "queries": report.queries, "runs": report.runs,
        "seconds": round(report.seconds, 3),
        "output_dir": None if report.output_dir is None else str(report.output_dir),
        "segments": None, "minimized": None, "replay": dict(report.replays),
        "notes": list(report.notes),
    }
    if report.segments is not None:
        finding = report.segments
        record["segments"] = {
            "index": finding.index, "count": finding.count, "scheduler": finding.scheduler,
            "exprs": finding.ops,
            "decisions": [{"scheduler": v.scheduler, "accepted": v.accepted, "reason": v.reason}
                          for v in finding.decisions],
            "ir": finding.ir, "kernel_source": finding.kernel_source,
            "kernel_file": None if finding.kernel_file is None else str(finding.kernel_file),
            "kernel_note": finding.kernel_note,
            "repro": None if finding.repro is None else str(finding.repro),
            "fails_alone": finding.fails_alone, "queries": finding.queries,
            "seconds": round(finding.seconds, 3), "steps": [_step_json(s) for s in finding.steps],
        }
    if report.minimized is not None:
        result = report.minimized
        record["minimized"] = {
            "ops_before": result.ops_before, "exprs": result.ops,
            "inputs_before": result.inputs_before, "inputs": result.inputs,
            "outputs_before": result.outputs_before, "outputs": result.outputs,
            "repro_py": str(result.repro_py), "repro_yaml": str(result.repro_yaml),
            "verified": result.verified, "verification": result.verification,
            "queries": result.queries, "seconds": round(result.seconds, 3),
            "steps": [_step_json(s) for s in result.steps],
        }
    return record


def bisect_json(report: BisectReport) -> str:
    return json.dumps(bisect_record(report), indent=2, allow_nan=False)


# -- git bisect --------------------------------------------------------------------------------


def render_git(report: GitReport, console: Console) -> None:
    table = Table(title=f"git bisect {report.good.hash[:10]}..{report.bad.hash[:10]} in "
                  f"{report.repo}", title_justify="left", show_edge=False, pad_edge=False)
    for column in ("commit", "subject", "outcome", "why"):
        table.add_column(column, overflow="fold")
    styles = {"good": "green", "bad": "red", "skip": "yellow"}
    for step in report.steps:
        table.add_row(step.commit.hash[:10], step.commit.subject,
                      Text(step.outcome, style=styles.get(step.outcome, "")), step.reason)
    console.print(table)
    console.print(f"oracle: {report.command}")
    if report.first_bad is not None:
        console.print(Text.assemble(("first bad commit: ", "bold red"), report.first_bad.hash,
                                    f"  {report.first_bad.subject}"))
    elif report.candidates:
        console.print(Text("the first bad commit is one of:", style="bold yellow"))
        for commit in report.candidates:
            console.print(f"  {commit.hash}  {commit.subject}")
    elif not report.reproduced:
        console.print(Text("the failure did not reproduce at BAD", style="bold yellow"))
    console.print(f"{len(report.steps)} commits tested in {report.seconds:.1f}s; "
                  f"the checkout stays on {report.restored}, untouched (bisect ran in a worktree "
                  "of its own)")
    if report.replays:
        console.print(_replays(report.replays))
    for note in report.notes:
        console.print(Text(f"note: {note}", style="dim"))


def _commit(commit: Any) -> dict[str, str] | None:
    return None if commit is None else {"hash": commit.hash, "subject": commit.subject}


def git_record(report: GitReport) -> dict[str, Any]:
    return {
        "ok": report.exit_code == 0, "repo": report.repo, "good": _commit(report.good),
        "bad": _commit(report.bad), "command": report.command, "reproduced": report.reproduced,
        "first_bad_commit": _commit(report.first_bad),
        "candidates": [_commit(c) for c in report.candidates],
        "steps": [
            {"commit": _commit(s.commit), "outcome": s.outcome, "exit_status": s.exit_code,
             "reason": s.reason, "seconds": s.seconds}
            for s in report.steps
        ],
        "restored": report.restored, "seconds": round(report.seconds, 3),
        "replay": dict(report.replays), "notes": list(report.notes),
    }


def git_json(report: GitReport) -> str:
    return json.dumps(git_record(report), indent=2, allow_nan=False)
