"""``fusecli bench PATH...``: generated kernels vs eager torch vs torch.compile, on the GPU."""

from __future__ import annotations

import json
from pathlib import Path

import click

from fusecli.cli.main import guarded


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--repeat", type=click.IntRange(min=1), default=30, show_default=True,
              help="Timed repeats per measurement (after warm-up); the median is reported.")
@click.option("--no-compile", is_flag=True, help="Skip the torch.compile baseline.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("--graphs", is_flag=True,
              help="Also capture each fusion's warm run in a CUDA graph and time its replay "
                   "(no host work between segments).")
@guarded
def bench(paths, repeat, no_compile, as_json, graphs) -> int:
    """Time each fusion three ways in one run: fusecli's kernels, eager torch, torch.compile.

    fusecli is timed as fd.execute runs it (the compiled warm run of the input signature).
    Reports time, GB/s by counted bytes, percent of the measured device-to-device copy
    bandwidth, and the speedups; then the host time of a warm fd.execute and of a warm
    segment launch, and a kernel-cache hit.
    Needs a CUDA GPU and CuPy (exit 4 without).

    \b
    Example:
      fusecli bench fusions/ --repeat 50
      fusecli bench tests/nvfuser_corpus --graphs --no-compile
    """
    from fusecli.app.bench import bench_paths, format_table
    from fusecli.report.terminal import terminal

    errors = terminal(stderr=True)
    with errors.status("benchmarking...") as status:
        rows, report = bench_paths(
            list(paths), repeat, not no_compile,
            progress=lambda n: status.update(f"timing {n}"), graphs=graphs,
        )
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        for row in rows:
            if row.note:
                errors.print(f"fusecli: note: {row.name}: {row.note}", highlight=False)
        click.echo(format_table(rows, report))
    for failure in report["errors"]:
        errors.print(f"fusecli: error: {failure['path']}: {failure['name']}: {failure['error']}",
                     highlight=False)
    return 3 if report["errors"] else 0
