"""``fusecli explain-segmentation PATH``: why the segmenter cut the fusion where it did."""

from __future__ import annotations

import json
from pathlib import Path

import click

from fusecli.cli.main import debug_enabled, guarded, stdout_closing_early
from fusecli.cli.options import check_writable, engine_options
from fusecli.segment.rules import PROFILES, SCHEDULER_NAMES


@click.command("explain-segmentation")
@click.argument("path", type=click.Path(path_type=Path))
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
@engine_options
@guarded
def explain(path, rules, disabled, fuse_matmul, disable_matmul_expr_eval, view, as_json, dot,
            force, summary, device, engine, compare_engines) -> int:
    """Show every candidate segment, every scheduler's verdict and reason, and the segments.

    \b
    Examples:
      fusecli explain-segmentation fusions/matmul_reshape_permute.py
      fusecli explain-segmentation fusions/matmul_reshape_permute.py --rules nvfuser-2024
      fusecli explain-segmentation repro.py --format nvfuser --disable-scheduler expr_eval
      fusecli explain-segmentation repro.py --compare-engines     (real nvFuser too)

    With --engine nvfuser the views show real nvFuser's own segmenter log, read as data
    (--format nvfuser prints its text as it printed it). Exits 0 when segmentation succeeds,
    3 when some segment has no scheduler, 4 when --engine nvfuser or --compare-engines is
    asked for and nvfuser_direct does not import here.
    """
    from rich.console import Console

    from fusecli.app.explain import ExplainOptions, explain_path
    from fusecli.errors import InputError
    from fusecli.report.engines_view import explain_json, render_outcomes
    from fusecli.report.segmentation_view import dot_graph, nvfuser_log

    if dot is not None and dot.exists() and not force:
        raise InputError(f"{dot} exists; pass --force to overwrite it")
    if dot is not None and engine == "nvfuser" and not compare_engines:
        raise InputError("--dot draws fusecli's segments: use it without --engine nvfuser")
    options = ExplainOptions(
        rules=rules, disabled=frozenset(disabled), fuse_matmul=fuse_matmul,
        matmul_expr_eval=not disable_matmul_expr_eval, device=device, debug=debug_enabled(),
        engine=engine, compare_engines=compare_engines,
    )
    outcomes = explain_path(path, options)
    if not outcomes:
        raise InputError("defines no fusion with inputs to segment", where=str(path))
    with stdout_closing_early():
        if as_json:
            records = [explain_json(o) for o in outcomes]
            document = {"ok": all(r["ok"] for r in records), "fusions": records}
            click.echo(json.dumps(document, indent=2))
        elif view == "nvfuser":
            for outcome in outcomes:
                if outcome.nvfuser is not None:
                    click.echo(outcome.nvfuser.run.log, nl=False)  # nvFuser's own text
                    if outcome.nvfuser.run.error:
                        click.echo(f"fusecli: error: {outcome.loaded.where}: nvFuser: "
                                   f"{outcome.nvfuser.run.error}", err=True)
                elif outcome.segmented is None:
                    click.echo(f"fusecli: error: {outcome.loaded.where}: {outcome.error}",
                               err=True)
                else:
                    click.echo(nvfuser_log(outcome.segmented), nl=False)
        else:
            render_outcomes(outcomes, Console(), show_log=not summary)
    if dot is not None:
        dot.write_text("".join(dot_graph(o) for o in outcomes))
    return 0 if all(o.ok for o in outcomes) else 3

