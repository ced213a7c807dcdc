"""``fusecli explain-segmentation PATH...``: why the segmenter cut the fusion where it did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fusecli.cli.main import (
    EXIT_INTERRUPTED,
    JsonCommand,
    debug_enabled,
    guarded_json,
    note_folder_discovery,
    stdout_closing_early,
    stdout_reserved,
)
from fusecli.cli.options import check_writable, engine_options, timeout_option
from fusecli.segment.rules import PROFILES, SCHEDULER_NAMES

if TYPE_CHECKING:
    from fusecli.app.explain import ExplainOutcome


@click.command("explain-segmentation", cls=JsonCommand)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--rules", type=click.Choice(sorted(PROFILES)), default="nvfuser", show_default=True,
              help="Rule profile: scheduler order and acceptance rules.")
@click.option("--disable-scheduler", "disabled", multiple=True,
              type=click.Choice(SCHEDULER_NAMES), help="Never try this scheduler (repeatable).")
@click.option("--fuse-matmul", is_flag=True,
              help="NVFUSER_ENABLE=fuse_matmul: the matmul scheduler may take MatmulOp/LinearOp.")
@click.option("--disable-matmul-expr-eval", is_flag=True,
              help="NVFUSER_DISABLE=matmul_expr_eval: expr_eval rejects MatmulOp/LinearOp.")
@click.option("--format", "view", type=click.Choice(["tree", "nvfuser"]), default="tree",
              show_default=True, help="tree: a readable rich view; nvfuser: nvFuser's log text.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON document on stdout; its decision log gives each "
              "rejection's reason code and evidence.")
@click.option("--dot", type=click.Path(path_type=Path), default=None, callback=check_writable,
              help="Write a Graphviz drawing of the segments to this file.")
@click.option("--force", is_flag=True, help="Overwrite the --dot file if it exists.")
@click.option("--summary", is_flag=True, help="Tree view: only the segments, not the log.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True, help="Where scripts' CUDA tensors go.")
@timeout_option(600.0, "With several files (each in a worker process of its own): seconds "
                "one file may take; past it, that file is an error (exit 3) and the run goes on.")
@engine_options
@guarded_json
def explain(paths, rules, disabled, fuse_matmul, disable_matmul_expr_eval, view, as_json, dot,
            force, summary, device, timeout, engine, compare_engines) -> int:
    """Show every candidate segment, every scheduler's verdict and reason, and the segments.

    \b
    Examples:
      fusecli explain-segmentation fusions/matmul_reshape_permute.py
      fusecli explain-segmentation fusions/matmul_reshape_permute.py --rules nvfuser-2024
      fusecli explain-segmentation repro.py --format nvfuser --disable-scheduler expr_eval
      fusecli explain-segmentation fusions/ --summary
      fusecli explain-segmentation repro.py --compare-engines     (real nvFuser too)

    Folders are expanded into the repro files they hold, as `fusecli run` does; with several
    files each loads in a worker process of its own, and a file that does not load, exits,
    crashes or hangs is that file's error while the others go on. With --engine nvfuser the views
    show real nvFuser's own segmenter log, read as data (--format nvfuser prints its text as
    it printed it). Exits 0 when segmentation succeeds, 3 when some segment has no scheduler,
    2 for a file that does not load, 4 when --engine nvfuser or --compare-engines is asked
    for and nvfuser_direct does not import here; with several files, the worst.
    """
    from fusecli.app.explain import ExplainOptions, FileFailure, explain_paths
    from fusecli.errors import InputError
    from fusecli.report.engines_view import explain_document, render_outcomes
    from fusecli.report.segmentation_view import dot_graph
    from fusecli.report.terminal import terminal

    if dot is not None and dot.exists() and not force:
        raise InputError(f"{dot} exists; pass --force to overwrite it")
    if dot is not None and engine == "nvfuser" and not compare_engines:
        raise InputError("--dot draws fusecli's segments: use it without --engine nvfuser")
    options = ExplainOptions(
        rules=rules, disabled=frozenset(disabled), fuse_matmul=fuse_matmul,
        matmul_expr_eval=not disable_matmul_expr_eval, device=device, debug=debug_enabled(),
        engine=engine, compare_engines=compare_engines, timeout=timeout,
    )
    errors = terminal(stderr=True)
    note_folder_discovery(paths)
    with stdout_reserved():
        report = explain_paths(list(paths), options)
    for notice in report.notices:
        errors.print(f"fusecli: note: {notice}", style="dim", markup=False, highlight=False)
    with stdout_closing_early():
        if as_json:
            click.echo(json.dumps(explain_document(report), indent=2))
        else:
            console = terminal()
            for entry in report.entries:
                if isinstance(entry, FileFailure):
                    errors.print(f"fusecli: error: {entry.error}", markup=False,
                                 highlight=False, soft_wrap=True)
                elif view == "nvfuser":
                    _print_nvfuser_text(entry)
                else:
                    render_outcomes([entry], console, show_log=not summary)
    if dot is not None:
        dot.write_text("".join(dot_graph(o) for o in report.outcomes))
    if report.interrupted:
        errors.print(f"fusecli: {report.interrupted}: the report covers the "
                     f"{len(report.entries)} file(s) or fusion(s) that finished",
                     style="bold red", markup=False)
        return EXIT_INTERRUPTED
    return report.exit_code


def _print_nvfuser_text(outcome: ExplainOutcome) -> None:
    """``--format nvfuser``: the decision log as nvFuser prints it, and errors on stderr."""
    from fusecli.report.segmentation_view import nvfuser_log
    from fusecli.report.terminal import escape_controls

    if outcome.nvfuser is not None:
        click.echo(outcome.nvfuser.run.log, nl=False)  # nvFuser's own text
        if outcome.nvfuser.run.error:
            click.echo(escape_controls(f"fusecli: error: {outcome.loaded.where}: nvFuser: "
                                       f"{outcome.nvfuser.run.error}"), err=True)
    elif outcome.segmented is None:
        click.echo(escape_controls(f"fusecli: error: {outcome.loaded.where}: {outcome.error}"),
                   err=True)
    else:
        click.echo(nvfuser_log(outcome.segmented), nl=False)
