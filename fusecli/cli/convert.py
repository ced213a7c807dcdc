"""``fusecli convert``: a Python repro to YAML and back, or to today's nvFuser spelling."""

from __future__ import annotations

import os
from pathlib import Path

import click

from fusecli.cli.main import debug_enabled, guarded, stdout_closing_early
from fusecli.cli.options import check_writable, timeout_option


@click.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              callback=check_writable,
              help="Write here instead of stdout (never overwrites without --force).")
@click.option("--to", "target", type=click.Choice(["yaml", "python", "direct"]), default=None,
              help="Output format: yaml, python (nvFuser's repro format, import nvfuser), or "
                   "direct (a repro today's nvFuser runs, import nvfuser_direct); default: the "
                   "other one of yaml and python, or from -o's suffix.")
@click.option("--force", is_flag=True, help="Overwrite OUTPUT if it exists.")
@timeout_option(600.0, "Seconds a script may take to load (it runs in a worker process of its "
                "own); past it, exit 3.")
@guarded
def convert(source, output, target, force, timeout) -> int:
    """Convert a fusion between a Python repro (.py) and fusecli's YAML format (.yaml), or
    write it as a repro today's nvFuser (nvfuser_direct) runs, from a script in an older
    spelling (define_vector, symbolic_sizes=, positional keepdim...).

    \b
    Examples:
      fusecli convert fusions/rms_norm.py -o rms_norm.yaml
      fusecli convert rms_norm.yaml --to python
      fusecli convert old_issue_repro.py --to direct -o repro_direct.py
    """
    from fusecli.app.worker import WorkerProcesses
    from fusecli.load import runs_code
    from fusecli.load.convert import convert_file

    if runs_code(source) and not debug_enabled() and os.environ.get("FUSECLI_IN_PROCESS") != "1":
        # loading runs the script: it may exit, fork, ignore signals or hang, as in `run`
        text = WorkerProcesses().convert_file(source, output, target, force, timeout)
    else:
        text = convert_file(source, output, to=target, force=force)
    if output is None:
        with stdout_closing_early():
            click.echo(text, nl=False)
    else:
        click.echo(f"wrote {output}", err=True)
    return 0
