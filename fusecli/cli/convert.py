"""``fusecli convert``: a Python repro to YAML and back, or to today's nvFuser spelling."""

from __future__ import annotations

from pathlib import Path

import click

from fusecli.cli.main import guarded
from fusecli.cli.options import check_writable


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
@guarded
def convert(source, output, target, force) -> int:
    """Convert a fusion between a Python repro (.py) and fusecli's YAML format (.yaml), or
    write it as a repro today's nvFuser (nvfuser_direct) runs, from a script in an older
    spelling (define_vector, symbolic_sizes=, positional keepdim...).

    \b
    Examples:
      fusecli convert fusions/rms_norm.py -o rms_norm.yaml
      fusecli convert rms_norm.yaml --to python
      fusecli convert old_issue_repro.py --to direct -o repro_direct.py
    """
    from fusecli.load.convert import convert_file

    text = convert_file(source, output, to=target, force=force)
    if output is None:
        click.echo(text, nl=False)
    else:
        click.echo(f"wrote {output}", err=True)
    return 0
