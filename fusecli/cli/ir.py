"""``fusecli ir PATH``: print each fusion's IR in nvFuser's format."""

from __future__ import annotations

from pathlib import Path

import click

from fusecli.cli.main import guarded


@click.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--repro", is_flag=True, help="Print the definition as an nvFuser repro instead.")
@guarded
def ir(path, repro) -> int:
    """Print the fusion IR of every fusion in PATH, as nvFuser's fd.fusion_ir() does."""
    from fusecli.load import load_path

    for loaded in load_path(path):
        click.echo(f"# {loaded.name}")
        if repro:
            click.echo(loaded.fd.repro_script_for(loaded.inputs))
        else:
            click.echo(loaded.fd.fusion_ir())
    return 0
